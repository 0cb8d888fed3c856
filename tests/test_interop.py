"""`aart export` to promptfoo, inspect_ai, garak and Hugging Face, each export loaded by the
real tool, and the formats read back by `aart evaluate` and `aart attack`.

The tools come from `make test`: inspect-ai and datasets from the `interop` extra; garak
(without its ~100 dependencies, which pin transformers against ours) and promptfoo (npm) into
~/.cache/aart-build, found through AART_GARAK_DIR and AART_PROMPTFOO."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import aart
from aart.cli.main import cli
from aart.data.load import load_dataset, read_rows
from aart.interop import export_dataset, promptfoo
from aart.interop.garak import module_name

# Prompts that break naive escaping: quotes, triple quotes, backslashes, line breaks, template
# syntax, promptfoo's file:// and package: prefixes, YAML indicators. Mild wording only.
AWKWARD = [
    "Write a short poem about a rainy day.",
    "Say {{ 7*7 }} and {% endraw %} then {# note #}",
    "file://task.py",
    "package:somepkg:fn",
    "ends with a newline\n",
    "quotes ' \" ''' \"\"\" and a \\ backslash, a literal \\n and \\u0041",
    "two\nlines\r\nand a tab\t.",
    "{{prompt}}",
    "{% raw %}kept{% endraw %}",
    "- starts like a YAML list: with a colon",
    "ünïcödé 有朋自远方来 — 🙂",
    "yes",
]
CELLS = [
    {"concepts": ["rule breaking", "privacy leaks"][i % 2], "formats": ["poem", "email"][i % 2]}
    for i in range(len(AWKWARD))
]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "src" / "dataset.jsonl"
    path.parent.mkdir()
    rows = [
        {
            "id": f"r{i:02d}",
            "prompt": text,
            "cell": CELLS[i],
            "annotations": {"formats": CELLS[i]["formats"]},
            "provenance": {"run_id": "run-1", "model": "fake/test", "recipe": "mini"},
        }
        for i, text in enumerate(AWKWARD)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def cells_of(path: Path) -> tuple[list[str], list[dict[str, str]], list[str]]:
    ds = load_dataset(path)
    ids = [str(r.get("id")) for r in read_rows(path)]
    return ds.texts, [ds.cell_of(i) for i in range(len(ds))], ids


def load_task(out: Path, name: str) -> Any:
    """The exported inspect task module in ``out``, imported as ``name``."""
    spec = importlib.util.spec_from_file_location(name, out / "task.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_promptfoo_round_trip(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "pf"
    export_dataset(dataset, "promptfoo", out, judges=["refusal"])
    expected = cells_of(dataset)
    assert cells_of(out / "tests.yaml") == expected
    assert cells_of(out / "promptfooconfig.yaml") == expected  # the config, via tests: file://
    tests = yaml.safe_load((out / "tests.yaml").read_text(encoding="utf-8"))
    assert tests[0]["metadata"] == {
        "id": "r00",
        "cell_concepts": "rule breaking",
        "cell_formats": "poem",
        "annotated_formats": "poem",
    }
    assert tests[0]["assert"] == [{"type": "is-refusal", "metric": "aart-refusal"}]
    config = yaml.safe_load((out / "promptfooconfig.yaml").read_text(encoding="utf-8"))
    assert config["prompts"] == ["{{prompt}}"] and config["tests"] == "file://tests.yaml"


@pytest.mark.parametrize("text", AWKWARD)
def test_promptfoo_escape_is_reversible(text: str) -> None:
    value = promptfoo.escape(text)
    assert promptfoo.unescape(value) == text
    # promptfoo acts on these; an escaped value starts with none of them
    assert not value.startswith(("file://", "package:")) and not value.endswith("\n")


def test_policy_judge_is_an_llm_rubric(tmp_path: Path, mini_recipe: Path) -> None:
    run = tmp_path / "run"
    aart.run(mini_recipe, out=run)
    out = tmp_path / "pf"
    export_dataset(run, "promptfoo", out)  # default judges: refusal and the recipe's policy
    tests = yaml.safe_load((out / "tests.yaml").read_text(encoding="utf-8"))
    kinds = [a["type"] for a in tests[0]["assert"]]
    assert kinds == ["is-refusal", "llm-rubric"]
    assert "does not help with rule-breaking" in tests[0]["assert"][1]["value"]


def promptfoo_bin() -> str:
    found = os.environ.get("AART_PROMPTFOO") or str(
        Path.home() / ".cache/aart-build/promptfoo-0.121.20/node_modules/.bin/promptfoo"
    )
    if not Path(found).exists() or not shutil.which("node"):
        pytest.skip(f"promptfoo is not installed at {found} (make test installs it with npm)")
    return found


def run_promptfoo(binary: str, folder: Path, tmp_path: Path, *extra: str) -> list[dict]:
    """`promptfoo eval` of FOLDER's config, offline: its results, one per test."""
    env = {
        **os.environ,
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_CONFIG_DIR": str(tmp_path / "pf-home"),
    }
    results = tmp_path / f"results-{folder.name}.json"
    cmd = [binary, "eval", "-c", "promptfooconfig.yaml", "--no-cache", "--no-table"]
    proc = subprocess.run(
        [*cmd, "-o", str(results), *extra],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert results.exists(), proc.stdout + proc.stderr
    return json.loads(results.read_text(encoding="utf-8"))["results"]["results"]


def test_promptfoo_eval_sends_the_exact_prompts(dataset: Path, tmp_path: Path) -> None:
    """promptfoo itself runs the export with its echo provider (offline): every reply is the
    prompt as aart wrote it, so nothing was templated, loaded from a file or trimmed."""
    binary = promptfoo_bin()
    out = tmp_path / "pf"
    export_dataset(dataset, "promptfoo", out, judges=["refusal"], provider="echo")
    got = run_promptfoo(binary, out, tmp_path)
    by_id = {r["testCase"]["metadata"]["id"]: r for r in got}
    assert len(by_id) == len(AWKWARD)
    for i, text in enumerate(AWKWARD):
        r = by_id[f"r{i:02d}"]
        assert r["response"]["output"] == text
        assert r["testCase"]["metadata"]["cell_concepts"] == CELLS[i]["concepts"]
        # the echo is no refusal: the refusal assertion fails, as an attack success would
        assert r["success"] is False


def test_promptfoo_runs_both_judges(tmp_path: Path, mini_recipe: Path) -> None:
    """The refusal and policy assertions are ones promptfoo runs (echo as the grader too)."""
    binary = promptfoo_bin()
    run = tmp_path / "run"
    aart.run(mini_recipe, out=run)
    out = tmp_path / "pf"
    export_dataset(run, "promptfoo", out)
    got = run_promptfoo(binary, out, tmp_path, "--grader", "echo")
    assert len(got) == len(read_rows(run / "dataset.jsonl"))
    for r in got:
        parts = r["gradingResult"]["componentResults"]
        assert [c["assertion"]["type"] for c in parts] == ["is-refusal", "llm-rubric"]
        # both judged (no grader error): the refusal fails on the echo, the rubric is scored
        assert set(r["gradingResult"]["namedScores"]) == {"aart-refusal", "aart-policy"}
        assert parts[0]["pass"] is False


def test_inspect_task_loads_the_dataset(dataset: Path, tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai", reason="the interop extra (make test) installs inspect-ai")
    out = tmp_path / "inspect"
    export_dataset(dataset, "inspect", out, judges=["refusal"])
    source = (out / "task.py").read_text(encoding="utf-8")
    for text in AWKWARD[1:]:
        assert text not in source  # no prompt is code
    module = load_task(out, "aart_export_task")
    task = module.aart_redteam()
    from inspect_ai import Task

    assert isinstance(task, Task)
    samples = list(task.dataset)
    assert [s.input for s in samples] == AWKWARD
    assert [s.id for s in samples] == [f"r{i:02d}" for i in range(len(AWKWARD))]
    assert [s.metadata["cell"] for s in samples] == CELLS


def test_inspect_sample_ids_are_distinct_when_the_datasets_are_not(tmp_path: Path) -> None:
    # two records with one id exported silently, and inspect_ai then refused the dataset
    # ("The dataset contains duplicate sample ids")
    pytest.importorskip("inspect_ai", reason="the interop extra (make test) installs inspect-ai")
    rows = [
        {"id": "d1", "prompt": "first", "strategy": "identity"},
        {"id": "d1", "prompt": "first", "strategy": "base64"},
        {"id": "d2", "prompt": "second"},
        {"id": "d2", "prompt": "second again"},
    ]
    data = tmp_path / "dup.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "inspect"
    export_dataset(data, "inspect", out, judges=["refusal"])
    module = load_task(out, "aart_export_task_dup")
    samples = list(module.aart_redteam().dataset)
    assert [s.id for s in samples] == ["d1:identity", "d1:base64", "d2", "d2#2"]
    # the record's own id, where the sample's differs
    assert [s.metadata.get("aart_id") for s in samples] == ["d1", "d1", None, "d2"]


def test_inspect_eval_runs_the_task_offline(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """inspect_ai evaluates the exported task with its mockllm provider replying with the
    prompt it got (offline): every sample reaches the model as aart wrote it."""
    pytest.importorskip("inspect_ai", reason="the interop extra (make test) installs inspect-ai")
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    out = tmp_path / "inspect"
    export_dataset(dataset, "inspect", out, judges=["refusal"])
    module = load_task(out, "aart_export_task3")

    def echo(input, tools, tool_choice, config):  # type: ignore[no-untyped-def]
        reply = ModelOutput.from_content(model="mockllm/model", content=input[-1].text)
        # usage given, so mockllm does not count tokens (that would fetch an encoding)
        reply.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return reply

    model = get_model("mockllm/model", custom_outputs=echo)
    (log,) = inspect_eval(
        module.aart_redteam(), model=model, log_dir=str(tmp_path / "logs"), display="none"
    )
    assert log.status == "success", log.error
    assert log.samples is not None
    by_id = {s.id: s for s in log.samples}
    for i, text in enumerate(AWKWARD):
        sample = by_id[f"r{i:02d}"]
        assert sample.input == text and sample.output.completion == text
        assert sample.metadata["cell"] == CELLS[i]


def test_inspect_policy_scorer(tmp_path: Path, mini_recipe: Path) -> None:
    pytest.importorskip("inspect_ai", reason="the interop extra (make test) installs inspect-ai")
    run = tmp_path / "run"
    aart.run(mini_recipe, out=run)
    out = tmp_path / "inspect"
    export_dataset(run, "inspect", out)
    rubric = json.loads((out / "judge.json").read_text())["rubric"]
    # plain text: promptfoo's {% raw %} escaping reached inspect's grader prompt as is
    assert "rule-breaking" in rubric and "{%" not in rubric and rubric.startswith("The response")
    module = load_task(out, "aart_export_task2")
    task = module.aart_redteam()
    assert task.scorer  # model_graded_qa with the policy's rubric
    assert len(list(task.dataset)) == len(read_rows(run / "dataset.jsonl"))


def test_hf_folder_round_trip_and_datasets_load(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "hf"
    export_dataset(dataset, "hf", out, license="cc-by-4.0")
    expected = cells_of(dataset)
    assert cells_of(out) == expected
    card = (out / "README.md").read_text(encoding="utf-8")
    front = yaml.safe_load(card.split("---", 2)[1])
    assert front["license"] == "cc-by-4.0"
    assert front["aart"]["axes"] == {
        "concepts": ["privacy leaks", "rule breaking"],
        "formats": ["email", "poem"],
    }
    assert front["aart"]["provenance"]["run_id"] == ["run-1"]
    datasets = pytest.importorskip(
        "datasets", reason="the interop extra (make test) installs datasets"
    )
    loaded = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "hf-cache"))
    train = loaded["train"]
    assert train["prompt"] == AWKWARD
    assert train["cell_concepts"] == [c["concepts"] for c in CELLS]
    # a re-export of other rows into the same folder loads the new rows (datasets' cache
    # keyed the folder by its name and data file paths: it gave the earlier rows back)
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "x", "prompt": "only this"}) + "\n")
    export_dataset(other, "hf", out)
    assert [p.name for p in (out / "data").iterdir()] == [
        Path(yaml.safe_load((out / "README.md").read_text().split("---", 2)[1])["configs"][0]
             ["data_files"][0]["path"]).name
    ]  # fmt: skip
    again = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "hf-cache"))
    assert again["train"]["prompt"] == ["only this"]
    assert cells_of(out) == (["only this"], [{}], ["x"])  # and aart reads the new file


def test_hf_card_of_a_run_has_recipe_axes_and_coverage(tmp_path: Path, mini_recipe: Path) -> None:
    run = tmp_path / "run"
    aart.run(mini_recipe, out=run)
    from aart.evaluate import evaluate

    ev = evaluate(run / "dataset.jsonl", run=str(run), embeddings=False)
    (run / "evaluation.json").write_text(json.dumps(ev.as_dict(), default=str))
    out = tmp_path / "hf"
    export_dataset(run, "hf", out)
    card = (out / "README.md").read_text(encoding="utf-8")
    front = yaml.safe_load(card.split("---", 2)[1])
    assert front["pretty_name"] == "mini"
    assert front["aart"]["axes"]["formats"] == ["email", "poem", "how-to", "story"]
    assert set(front["aart"]["coverage"]) == {"concepts", "formats", "regions"}
    assert "## Coverage" in card and "a tiny recipe for tests" in card
    assert cells_of(out) == cells_of(run / "dataset.jsonl")


def test_hf_card_text_is_literal_markdown() -> None:
    from aart.interop.hf import _text

    shown = _text("a [link](javascript:x) <b>|</b> *em* it's\n# heading")
    assert (
        shown == "a \\[link\\]\\(javascript:x\\) &lt;b&gt;\\|&lt;/b&gt; \\*em\\* it's \\# heading"
    )


def garak_dirs() -> Path:
    found = Path(os.environ.get("AART_GARAK_DIR") or Path.home() / ".cache/aart-build/garak-0.17.1")
    if not (found / "garak" / "probes" / "base.py").exists():
        pytest.skip(f"garak is not installed at {found} (make test installs it)")
    return found


def test_garak_module_holds_prompts_as_data(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "garak"
    export_dataset(dataset, "garak", out)
    (module,) = out.glob("aart_*.py")
    assert module.stem == module_name("src")  # the dataset's name: its folder
    source = module.read_text(encoding="utf-8")
    tree = ast.parse(source)
    # the command it documents selects the (inactive) probe by class: by module, garak
    # selected nothing ("all plugins in 'probes.aart_demo' are marked inactive")
    assert f"--probes {module.stem}.AartDataset" in (ast.get_docstring(tree) or "")
    # one string constant holds the data; no prompt appears as code anywhere else
    data_call = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "loads"
    ]
    assert len(data_call) == 1
    literal = data_call[0].args[0]
    assert isinstance(literal, ast.Constant) and literal.value.isascii()
    records = json.loads(literal.value)["records"]
    assert [r["prompt"] for r in records] == AWKWARD
    assert json.loads((out / "prompts.json").read_text(encoding="utf-8")) == AWKWARD


def test_garak_loads_the_probe(dataset: Path, tmp_path: Path) -> None:
    """garak's own plugin loader instantiates the probe from a copy of garak's package (garak
    loads probes only from garak/probes/) and runs it against garak's test generator."""
    installed = garak_dirs()
    out = tmp_path / "garak"
    export_dataset(dataset, "garak", out)
    copy = tmp_path / "garak-copy"
    shutil.copytree(installed / "garak", copy / "garak")
    name = module_name("src")
    shutil.copy(out / f"{name}.py", copy / "garak" / "probes" / f"{name}.py")
    script = (
        "import json, sys\n"
        "from garak import _config, _plugins\n"
        "_config.load_base_config()\n"
        f"probe = _plugins.load_plugin('probes.{name}.AartDataset')\n"
        "_config.transient.reportfile = open('report.jsonl', 'w', encoding='utf-8')\n"
        "_config.transient.run_id = 'aart-test'\n"
        "generator = _plugins.load_plugin('generators.test.Repeat')\n"
        "attempts = probe.probe(generator)\n"
        "detector = _plugins.load_plugin('detectors.' + probe.primary_detector)\n"
        "print(json.dumps({'prompts': list(probe.prompts), 'detector': probe.primary_detector,"
        " 'records': probe.aart_records,"
        " 'sent': [a.prompt.turns[-1].content.text for a in attempts],"
        " 'replies': [a.outputs[0].text for a in attempts],"
        " 'hits': [detector.detect(a) for a in attempts]}))\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(copy), str(installed)]),
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
    }
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["prompts"] == AWKWARD
    assert got["detector"] == "mitigation.MitigationBypass"
    assert [r["cell"] for r in got["records"]] == CELLS
    # garak sent every prompt as written; its Repeat generator echoes it, which is no refusal,
    # so the detector scores each a hit (what an attack success is)
    assert sorted(got["sent"]) == sorted(AWKWARD)
    assert sorted(got["replies"]) == sorted(AWKWARD)
    assert all(h and set(h) == {1.0} for h in got["hits"])  # one score per generation


def test_cli_export_then_evaluate_and_attack_read_it_back(dataset: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    runner = CliRunner()
    for fmt, path in (("promptfoo", "pf"), ("hf", "hf")):
        res = runner.invoke(cli, ["export", str(dataset), str(tmp_path / path), "--to", fmt])
        assert res.exit_code == 0, res.output
        assert "wrote" in res.output
    for source in (tmp_path / "pf" / "tests.yaml", tmp_path / "hf"):
        res = runner.invoke(cli, ["evaluate", str(source), "--no-embeddings"])
        assert res.exit_code == 0, res.output
        assert f"{len(AWKWARD)}" in res.output
    from aart.redteam.attack import AttackConfig, attack_records

    for source in (tmp_path / "pf" / "tests.yaml", tmp_path / "hf"):
        records = attack_records(source, AttackConfig(target="fake/x"))
        assert [r["prompt"] for r in records] == AWKWARD
        assert [r["id"] for r in records] == [f"r{i:02d}" for i in range(len(AWKWARD))]
        assert [r["cell"] for r in records] == CELLS


def test_exports_chain(dataset: Path, tmp_path: Path) -> None:
    """An HF folder or a promptfoo tests file exports again with the same prompts and cells."""
    export_dataset(dataset, "hf", tmp_path / "hf")
    export_dataset(tmp_path / "hf", "promptfoo", tmp_path / "pf", judges=[])
    export_dataset(tmp_path / "pf" / "tests.yaml", "hf", tmp_path / "hf2")
    assert cells_of(tmp_path / "hf2") == cells_of(dataset)


def test_bad_inputs_are_one_line_errors(tmp_path: Path) -> None:
    from aart.errors import UsageError

    bad = tmp_path / "tests.yaml"
    bad.write_text("- vars: [unclosed\n")
    with pytest.raises(UsageError, match=r"tests.yaml:2: not valid YAML"):
        load_dataset(bad)
    folder = tmp_path / "empty"
    folder.mkdir()
    with pytest.raises(UsageError, match="not a Hugging Face dataset folder"):
        load_dataset(folder)
    with pytest.raises(UsageError, match="is a file; export writes a folder"):
        export_dataset(bad, "hf", bad)


def test_cli_attack_takes_a_promptfoo_tests_file_and_config(dataset: Path, tmp_path: Path) -> None:
    # before: `aart attack out/pf/tests.yaml` (docs/interop.md) read the .yaml as a recipe and
    # failed with "tests.yaml:1: a recipe is a YAML mapping"
    from click.testing import CliRunner

    from aart.cli.attack_cmd import attack_input

    runner = CliRunner()
    res = runner.invoke(cli, ["export", str(dataset), str(tmp_path / "pf"), "--to", "promptfoo"])
    assert res.exit_code == 0, res.output
    for name in ("tests.yaml", "promptfooconfig.yaml"):
        given = str(tmp_path / "pf" / name)
        assert attack_input(given, None, None) == (given, None, None)
        res = runner.invoke(
            cli, ["attack", given, "--target", "fake/x", "--judge", "refusal", "--dry-run"]
        )
        assert res.exit_code == 0, res.output
        assert f"{len(AWKWARD)}" in res.output


def test_export_reads_another_tables_prompt_column(tmp_path: Path) -> None:
    # its error said "choose one with --text-column", an option export did not have
    from click.testing import CliRunner

    from aart.cli.main import cli

    table = tmp_path / "t.jsonl"
    table.write_text(json.dumps({"id": "a", "input": "Write a short note.", "kind": "note"}) + "\n")
    runner = CliRunner()
    r = runner.invoke(cli, ["export", str(table), "--to", "inspect", str(tmp_path / "x")])
    assert r.exit_code != 0 and "choose one with --text-column" in str(r.exception)
    r = runner.invoke(
        cli,
        ["export", str(table), "--to", "inspect", str(tmp_path / "y"), "--text-column", "input",
         "--annotation", "kind=kind"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    (line,) = read_rows(tmp_path / "y" / "dataset.jsonl")
    assert line["input"] == "Write a short note."
