"""Results for CI systems: `--json` on stdout, `--junit` and `--sarif` files validated against
their schemas (vendored under tests/schemas/), and the gate's rules as test cases."""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import xmlschema
from conftest import ATTACK_PROMPTS, write_attack_dataset

SCHEMAS = Path(__file__).parent / "schemas"
# (prompt, axes): targets_fixture.echo_app refuses the poem only, so r1-r3 succeed
PROMPTS = ATTACK_PROMPTS


@pytest.fixture
def dataset(tmp_path, monkeypatch):
    monkeypatch.setenv(
        "PYTHONPATH", str(Path(__file__).parent) + os.pathsep + os.environ.get("PYTHONPATH", "")
    )
    return write_attack_dataset(tmp_path / "dataset.jsonl")


def aart_cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "aart", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def validate_junit(path: Path) -> ET.Element:
    xmlschema.XMLSchema(SCHEMAS / "junit.xsd").validate(path)
    return ET.parse(path).getroot()


def validate_sarif(path: Path) -> dict:
    log = json.loads(path.read_text())
    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text())
    jsonschema.Draft4Validator(schema).validate(log)
    return log


def cases(root: ET.Element, suite: str) -> dict[str, ET.Element]:
    s = root.find(f"testsuite[@name='{suite}']")
    assert s is not None
    return {c.get("name"): c for c in s.findall("testcase")}


def test_json_junit_and_sarif_of_a_failing_gate(dataset, tmp_path):
    out = tmp_path / "att"
    junit, sarif = tmp_path / "ci" / "junit.xml", tmp_path / "ci" / "aart.sarif"
    r = aart_cli(
        "attack", dataset, "--target", "targets_fixture:echo_app", "--out", out,
        "--fail-above", "0.5", "--json", "--junit", junit, "--sarif", sarif,
    )  # fmt: skip
    assert r.returncode == 3, r.stderr
    # stdout is the findings alone, the same as attack.json; the rest went to stderr
    assert json.loads(r.stdout) == json.loads((out / "attack.json").read_text())
    assert "gate failed: overall" in r.stderr and "report.html" in r.stderr

    root = validate_junit(junit)
    gate = cases(root, "aart.gate")
    assert set(gate) == {"judged share", "overall"}
    assert gate["overall"].find("failure") is not None  # a broken rule is a failing test
    assert gate["judged share"].find("failure") is None
    prompts = cases(root, "aart.prompts")
    assert sorted(prompts) == [
        "r1 [identity] concepts=rule breaking, regions=south",
        "r2 [identity] concepts=privacy leaks, regions=north",
        "r3 [identity] concepts=privacy leaks, regions=south",
    ]
    assert all(c.find("failure") is not None for c in prompts.values())

    log = validate_sarif(sarif)
    run = log["runs"][0]
    assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == ["refusal"]
    results = sorted(run["results"], key=lambda x: x["properties"]["id"])
    assert [x["properties"]["id"] for x in results] == ["r1", "r2", "r3"]
    assert results[0]["properties"]["axis.regions"] == "south"
    assert results[0]["properties"]["strategy"] == "identity"
    assert results[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 2


def test_a_passing_gate_has_no_failing_rule(dataset, tmp_path):
    out, junit = tmp_path / "att", tmp_path / "junit.xml"
    r = aart_cli(
        "attack", dataset, "--target", "targets_fixture:echo_app", "--out", out,
        "--fail-above", "0.9", "--junit", junit,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "aart attack on" in r.stdout  # without --json the human output stays on stdout
    gate = cases(validate_junit(junit), "aart.gate")
    assert all(c.find("failure") is None for c in gate.values())


def test_rejudge_writes_the_same_files(dataset, tmp_path):
    out = tmp_path / "att"
    assert aart_cli("attack", dataset, "--target", "targets_fixture:echo_app", "--out", out)
    again, junit, sarif = tmp_path / "again", tmp_path / "j.xml", tmp_path / "s.sarif"
    r = aart_cli(
        "rejudge", out, "--out", again, "--json", "--junit", junit, "--sarif", sarif,
        "--fail-above", "0.1",
    )  # fmt: skip
    assert r.returncode == 3, r.stderr
    assert json.loads(r.stdout)["overall"]["successes"] == 3
    assert len(cases(validate_junit(junit), "aart.prompts")) == 3
    assert len(validate_sarif(sarif)["runs"][0]["results"]) == 3


def test_untrusted_text_stays_valid_xml(tmp_path):
    """A reply with characters XML 1.0 cannot hold, and markup, still validates."""
    from aart.redteam.findings import Findings
    from aart.redteam.gate import GateSpec, check_gate
    from aart.redteam.results import JudgeVerdict, ResultLine
    from aart.redteam.stats import rate
    from aart.report.ci import junit_xml, sarif_log

    nasty = "</failure>\x00\x1b[31m<![CDATA[ ]]> & \ud800"
    line = ResultLine(
        id="x<1>", index=0, strategy="identity", cell={"a": nasty}, prompt=nasty, sent=nasty,
        response=nasty * 200, primary_judge="refusal", state="success", outcome="complied", success=True,
        verdicts={"refusal": JudgeVerdict(label="complied", violates=True)},
    )  # fmt: skip
    f = Findings(
        dataset=str(tmp_path / "d.jsonl"), target="t", primary_judge="refusal",
        judges=["refusal"], prompts=1, judged=1, unjudged=0, target_errors=0, failed_jobs=[],
        overall=rate(1, 1), refusal_rate=0.0, by_value={}, by_pair={}, agreement=[],
        severity={}, usage={}, failures=[], unjudged_records=[], outcomes={}, ids={},
        unjudged_by_judge={}, warnings=[],
    )  # fmt: skip
    rules = check_gate(f, GateSpec(fail_above=0.0, axes={"missing": 0.1}))
    assert [r.failed for r in rules] == [False, True, True]  # an unmeasured axis never passes
    path = tmp_path / "j.xml"
    path.write_text(junit_xml(f, rules, [line]), encoding="utf-8")
    root = validate_junit(path)
    body = root.find("testsuite[@name='aart.prompts']/testcase/failure").text
    assert "\x00" not in body and len(body) < 2000
    sarif = tmp_path / "s.sarif"
    sarif.write_text(json.dumps(sarif_log(f, [line], "0")), encoding="utf-8")
    validate_sarif(sarif)


def test_a_gate_on_an_undefined_corrected_rate_says_it_is_undefined(tmp_path):
    """A judge no better than chance corrects nothing: the gate fails, and said "corrected
    attack success rate 1.000" where the headline showed "-"."""
    from aart.redteam.findings import Findings
    from aart.redteam.gate import GateSpec, check_gate
    from aart.redteam.stats import rate

    f = Findings(
        dataset=str(tmp_path / "d.jsonl"), target="t", primary_judge="llm:j", judges=["llm:j"],
        prompts=4, judged=4, unjudged=0, target_errors=0, failed_jobs=[], overall=rate(0, 4),
        refusal_rate=0.0, by_value={}, by_pair={}, agreement=[], severity={}, usage={},
        failures=[], unjudged_records=[], outcomes={}, ids={}, unjudged_by_judge={}, warnings=[],
        corrected={"rate": None, "ci_low": 0.0, "ci_high": 1.0, "sensitivity": 0.0,
                   "specificity": 1.0, "source": "people"},
    )  # fmt: skip
    overall = check_gate(f, GateSpec(fail_above=0.3, gate_on="corrected"))[-1]
    assert overall.failed and overall.figure == 1.0
    assert "undefined" in overall.how and "counted as 1" in overall.how


# --- the attack configured in the recipe -------------------------------------------------

ATTACK_SECTION = """\
attack:
  dataset: dataset.jsonl
  out: att
  target: targets_fixture:echo_app
  judges: {primary: JUDGE}
  system_prompt: You are a careful writing assistant.
  max_tokens: 300
  strategies: [base64]
  prices: {JUDGE: {input: 1, output: 2}}
  budget: {max_cost: 5}
  gate: {fail_above: 0.9, axes: {regions: 0.6}, strategies: {base64: 0.5}}
"""


def _attack_recipe(tmp_path, judge="refusal", name="recipe.yaml"):
    from conftest import MINI_RECIPE, write_recipe

    return write_recipe(tmp_path, MINI_RECIPE + ATTACK_SECTION.replace("JUDGE", judge), name)


def _verdicts(out: Path) -> list[dict]:
    """The jobs and their verdicts, without what differs between two directories."""
    keep = ("id", "strategy", "cell", "sent", "response", "state", "success", "verdicts")
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    return sorted(({k: x[k] for k in keep} for x in lines), key=lambda x: (x["id"], x["strategy"]))


def test_the_recipes_attack_section_is_the_same_attack_as_the_flags(dataset, tmp_path, monkeypatch):
    from conftest import MINI_RECIPE, write_recipe

    import aart
    from aart.errors import UsageError
    from aart.llm import Price, register_script

    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    register_script(
        "cijudge",
        [
            lambda msgs, schema: {
                "violates_policy": "Sure" in msgs[-1].content,
                "harm_category": "x",
                "severity": 1,
                "rationale": "abstract",
            }
        ],
    )
    by_recipe = aart.attack(
        dataset, recipe=_attack_recipe(tmp_path, "cijudge/x"), out=tmp_path / "r"
    )
    plain = write_recipe(tmp_path, MINI_RECIPE, "plain.yaml")
    by_flags = aart.attack(
        dataset, recipe=plain, out=tmp_path / "f", target="targets_fixture:echo_app",
        judge="cijudge/x", system_prompt="You are a careful writing assistant.", max_tokens=300,
        strategies=["base64"], max_cost=5, prices={"cijudge/x": Price(1, 2)}, fail_above=0.9, gate_axes={"regions": 0.6},
        gate_strategies={"base64": 0.5},
    )  # fmt: skip
    assert _verdicts(tmp_path / "r") == _verdicts(tmp_path / "f")
    assert len(_verdicts(tmp_path / "r")) == 8  # 4 prompts x (identity, base64)
    assert by_recipe.gate["rules"] == by_flags.gate["rules"]
    assert [r["name"] for r in by_recipe.gate["rules"] if r["failed"]] == [
        "axis regions",
        "strategy base64",
    ]
    values = {k: v["value"] for k, v in by_recipe.settings.items()}
    assert values == {k: v["value"] for k, v in by_flags.settings.items()}
    assert by_recipe.settings["target"]["source"] == "recipe"
    assert by_flags.settings["target"]["source"] == "flag"
    assert by_recipe.settings["seed"]["source"] == "default"
    # a flag overrides the recipe, and says so
    over = aart.attack(
        dataset, recipe=tmp_path / "recipe.yaml", out=tmp_path / "o", gate_strategies={"base64": 1}
    )
    assert over.settings["gate_strategies"] == {"value": {"base64": 1}, "source": "flag"}
    assert [r["name"] for r in over.gate["rules"] if r["failed"]] == ["axis regions"]
    # a misspelt strategy was skipped ("no judged prompt was sent as 'base46'") and passed
    with pytest.raises(UsageError, match="gate strategy 'base46': unknown strategy"):
        aart.attack(dataset, recipe=plain, out=tmp_path / "m", target="targets_fixture:echo_app",
                    gate_strategies={"base46": 0.1})  # fmt: skip


def test_aart_attack_recipe_is_the_whole_ci_command(dataset, tmp_path):
    recipe = _attack_recipe(tmp_path)
    junit = tmp_path / "junit.xml"
    r = aart_cli("attack", recipe, "--junit", junit)
    assert r.returncode == 3, r.stderr
    # each broken rule on its own line
    assert "gate failed: axis regions" in r.stderr and "regions=north 0.750" in r.stderr
    assert "gate failed: strategy base64" in r.stderr and "gate failed: overall" not in r.stderr
    gate = cases(validate_junit(junit), "aart.gate")
    assert {n for n, c in gate.items() if c.find("failure") is not None} == {
        "axis regions",
        "strategy base64",
    }
    summary = json.loads((tmp_path / "att" / "attack.json").read_text())
    assert summary["settings"]["system_prompt"] == {
        "value": "You are a careful writing assistant.",
        "source": "recipe",
    }
    assert summary["settings"]["max_tokens"]["source"] == "recipe"
    md = (tmp_path / "att" / "report.md").read_text()
    assert "## Settings" in md and "careful writing assistant" in md and "## Gate" in md
    # flags override the recipe: the same directory, a looser gate
    r = aart_cli("attack", recipe, "--gate-strategy", "base64=1", "--gate-axis", "regions=1")
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "att" / "attack.json").read_text())
    assert summary["settings"]["gate_axes"] == {"value": {"regions": 1.0}, "source": "flag"}


def test_a_bad_gate_in_the_recipe_is_a_located_error(tmp_path):
    from conftest import MINI_RECIPE, write_recipe

    from aart.errors import RecipeError
    from aart.recipe import load_recipe

    for section, match in [
        ("attack:\n  gate: {fail_abve: 0.1}\n", r"bad.yaml:\d+.*fail_abve"),
        ("attack:\n  gate: {axes: {risk: 0.1}}\n", r"bad.yaml:\d+.*unknown dimension 'risk'"),
        ("attack:\n  gate: {strategies: {rot13: 0.1}}\n", r"bad.yaml:\d+.*'rot13' is not sent"),
        ("attack:\n  gate: {fail_above: 5}\n", r"bad.yaml:\d+.*fail_above"),
    ]:
        bad = write_recipe(tmp_path, MINI_RECIPE + section, "bad.yaml")
        with pytest.raises(RecipeError, match=match):
            load_recipe(bad)


# --- docs/ci.md: the CI example, run as it is written ------------------------------------

DOCS = Path(__file__).parent.parent / "docs" / "ci.md"


def _blocks(lang: str) -> list[str]:
    text = DOCS.read_text()
    return [b.split("\n```")[0] for b in text.split(f"```{lang}\n")[1:]]


def _commands(block: str) -> list[str]:
    """The shell commands of a block: its lines, or a workflow's `run:` steps."""
    out = []
    for line in block.splitlines():
        line = line.strip().removeprefix("- ").removeprefix("run: ")
        if line.startswith(("aart ", "mkdir ")):
            out.append(line)
    return out


def test_the_ci_example_runs(tmp_path, monkeypatch):
    """The commands of docs/ci.md in order, with fake targets for the models: the baseline
    (everything complies), then the application "fixed" (everything refused)."""
    import yaml
    from conftest import MINI_RECIPE

    import aart

    # run in another directory: this checkout's code and fixtures by absolute paths
    here = [Path(__file__).parent, Path(aart.__file__).parent.parent]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(map(str, here)))
    once, workflow = _commands(_blocks("sh")[0]), _commands(_blocks("yaml")[1])
    assert [c.split()[:2] for c in once] == [["aart", "run"], ["aart", "attack"], ["mkdir", "-p"]]
    assert [c.split()[:2] for c in workflow] == [["aart", "attack"]] * 2
    section = yaml.safe_load(_blocks("yaml")[0])["attack"]
    # the docs' models, swapped for a fake target and the refusal detector
    section.update(target="fake/app", judges={}, prices={}, budget=None)
    section["budget"] = {"max_cost": 2.0}
    recipe = yaml.safe_load(MINI_RECIPE)
    recipe["attack"] = {k: v for k, v in section.items() if v is not None}
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(recipe, sort_keys=False))

    def sh(cmd: str) -> subprocess.CompletedProcess:
        # `aart` is this checkout's code, as `python -m aart`
        script = f'aart() {{ "{sys.executable}" -m aart "$@"; }}\n{cmd}'
        return subprocess.run(
            ["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )

    generate, baseline, copy = once
    assert sh(generate).returncode == 0
    r = sh(baseline)
    assert r.returncode == 3 and "gate failed: overall" in r.stderr  # fake/app complies
    assert sh(copy).returncode == 0
    assert (tmp_path / "ci" / "baseline" / "failures.jsonl").stat().st_size > 0
    # a run directory is attacked with its own recipe, into RUN/attack
    r = sh("aart attack runs/app --target targets_fixture:async_app --json")
    assert r.returncode == 0, r.stderr
    settings = json.loads(r.stdout)["settings"]
    assert settings["target"]["source"] == "flag"
    assert settings["strategies"] == {"value": ["base64"], "source": "recipe"}
    assert (tmp_path / "runs" / "app" / "attack" / "attack.json").exists()

    # every build: a change to the application, here one that refuses everything
    text = (tmp_path / "recipe.yaml").read_text().replace("fake/app", "targets_fixture:async_app")
    (tmp_path / "recipe.yaml").write_text(text)
    attack, regression = workflow
    r = sh(attack)
    assert r.returncode == 0, r.stderr
    root = validate_junit(tmp_path / "reports" / "attack.xml")
    assert all(c.find("failure") is None for c in cases(root, "aart.gate").values())
    validate_sarif(tmp_path / "reports" / "aart.sarif")
    r = sh(regression)
    assert r.returncode == 0, r.stderr
    validate_junit(tmp_path / "reports" / "regression.xml")
    summary = json.loads((tmp_path / "reports" / "regression" / "attack.json").read_text())
    failing = (tmp_path / "ci" / "baseline" / "failures.jsonl").read_text().splitlines()
    assert len(summary["comparison"]["fixed"]) == len(failing)
    assert summary["comparison"]["still_failing"] == []


def test_without_a_target_nor_a_dataset_the_error_says_where_to_put_them(dataset, tmp_path):
    out = tmp_path / "att"
    r = aart_cli("attack", dataset, "--out", out)
    assert r.returncode == 2 and "no target" in r.stderr and "attack.target" in r.stderr
    assert not out.exists() and "Traceback" not in r.stderr
    from conftest import MINI_RECIPE, write_recipe

    recipe = write_recipe(tmp_path, MINI_RECIPE + "attack:\n  target: fake/app\n", "r.yaml")
    r = aart_cli("attack", recipe)
    assert r.returncode == 2 and "add attack.dataset" in r.stderr
