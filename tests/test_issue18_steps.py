"""Issue 18, wrong answers in the steps and the pipeline: each item's regression test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MINI_RECIPE, write_recipe

import aart
from aart.llm import register_script
from aart.store.rundir import Run


def cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "aart", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# the recipe names a model that must never be called, and prices the one given by --model
NEVER = MINI_RECIPE.replace("default: fake/test", "default: never/x") + (
    "prices:\n  fake/test: {input: 1.0, output: 2.0}\n"
)


# -- item 2: define --model M is the model of every later stage ----------------------------
def test_define_with_a_model_keeps_it_for_scope_and_generate(tmp_path):
    register_script("never", [AssertionError("the recipe's model was used")])
    recipe, out = write_recipe(tmp_path, NEVER), tmp_path / "run"
    aart.define(recipe, out, model="fake/test")
    plan = aart.scope(out)
    assert plan.model == "fake/test" and plan.cost > 0  # priced on M, not the recipe's
    stats = aart.generate(out)
    assert stats.model == "fake/test"
    assert {r["provenance"]["model"] for r in rows_of(out / "dataset.jsonl")} == {"fake/test"}


def test_define_with_a_model_on_the_command_line_keeps_it(tmp_path):
    recipe, out = write_recipe(tmp_path, NEVER), tmp_path / "run"
    r = cli("define", recipe, "--out", out, "--model", "fake/test")
    assert r.returncode == 0, r.stderr
    r = cli("scope", out)
    assert r.returncode == 0, r.stderr
    assert "on fake/test" in r.stdout and "$0.0000" not in r.stdout
    r = cli("generate", out)
    assert r.returncode == 0, r.stderr
    assert "generate on fake/test" in r.stderr
    assert {r["provenance"]["model"] for r in rows_of(out / "dataset.jsonl")} == {"fake/test"}


# -- item 7: after topup + generate, summary.json and generate.json are current -------------
def test_generate_after_a_topup_rewrites_the_summary_and_names_its_model(tmp_path):
    from aart.evaluate.data import load_dataset

    recipe, out = write_recipe(tmp_path, MINI_RECIPE), tmp_path / "run"
    first = aart.run(recipe, out=out)
    aart.topup(out, min_count=99)  # gaps everywhere: new attempts to generate
    stats = aart.generate(out)
    assert stats.prompts > first.stats.prompts
    summary = json.loads((out / "summary.json").read_text())
    assert summary["generate"]["prompts"] == stats.prompts
    with Run.open(out, lock=False) as run:
        totals = run.db.call_totals()
    tokens = totals["prompt_tokens"] + totals["completion_tokens"]
    assert summary["tokens_per_prompt"] == round(tokens / stats.prompts, 1)
    assert load_dataset(out / "dataset.jsonl").tokens_per_prompt == summary["tokens_per_prompt"]
    assert json.loads((out / "generate.json").read_text())["model"] == "fake/test"


# -- item 6: an edited dimension file rebuilds the cells it affects -------------------------
def _edit_values(path: Path, change) -> None:
    import yaml

    text = path.read_text()
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    doc = yaml.safe_load(text)
    doc["values"] = change(doc["values"])
    path.write_text(header + yaml.safe_dump(doc, sort_keys=False))


def _planned(lines: list[str]) -> dict[str, tuple[int, int]]:
    import re

    out = {}
    for line in lines:
        m = re.match(r"\s*(\w+): (\d+) of (\d+) values planned", line)
        if m:
            out[m[1]] = (int(m[2]), int(m[3]))
    return out


def test_scope_after_a_dimension_edit_rebuilds_the_cells_it_affects(tmp_path):
    recipe, out = write_recipe(tmp_path, MINI_RECIPE), tmp_path / "run"
    aart.run(recipe, out=out)
    before = rows_of(out / "blueprint.jsonl")
    # rename a primary value, add one, and take a value of another axis out
    _edit_values(
        out / "dimensions" / "concepts.yaml",
        lambda vs: [("data exposure" if v == "privacy leaks" else v) for v in vs] + ["scams"],
    )
    _edit_values(out / "dimensions" / "formats.yaml", lambda vs: [v for v in vs if v != "poem"])
    plan = aart.scope(out)
    lines = plan.summary_lines()
    assert _planned(lines) == {"concepts": (4, 4), "formats": (3, 3), "regions": (4, 4)}
    assert any(line.startswith("note: the dimensions changed") for line in lines), lines
    bp = rows_of(out / "blueprint.jsonl")
    used = {axis: {c[axis] for a in bp for c in a["cells"]} for axis in ("concepts", "formats")}
    assert used["concepts"] == {"rule breaking", "unsafe advice", "data exposure", "scams"}
    assert "poem" not in used["formats"]
    # the attempts of the values that stayed are where they were, cells untouched by the edit
    # unchanged: their prompts are kept
    kept = {a["id"]: a["cells"] for a in before}
    same = [
        c
        for a in bp
        if a["id"] in kept
        for c, old in zip(a["cells"], kept[a["id"]], strict=False)
        if c == old
    ]
    assert same
    old_ids = {r["id"] for r in rows_of(out / "dataset.jsonl")}
    stats = aart.generate(out)
    assert stats.prompts == stats.requested == sum(a["queries"] for a in bp)
    rebuilt = sum(1 for a in bp if kept.get(a["id"]) != a["cells"])
    assert rebuilt < len(bp)
    # only the attempts with rebuilt cells are asked for (a top-up may add one)
    assert rebuilt <= stats.spent_now["calls"] < len(bp)
    rows = rows_of(out / "dataset.jsonl")
    assert old_ids & {r["id"] for r in rows}  # the prompts of untouched cells are kept
    assert "poem" not in {r["cell"]["formats"] for r in rows}


def test_scope_never_counts_more_values_planned_than_the_file_holds(tmp_path):
    recipe, out = write_recipe(tmp_path, MINI_RECIPE), tmp_path / "run"
    aart.define(recipe, out)
    aart.scope(out)
    _edit_values(out / "dimensions" / "concepts.yaml", lambda vs: vs[:2])
    r = cli("scope", out)
    assert r.returncode == 0, r.stderr
    for axis, (planned, total) in _planned(r.stdout.splitlines()).items():
        assert planned <= total, (axis, r.stdout)
    assert "the dimensions changed since the blueprint was built" in r.stdout


# -- item 25: `python -m aart.testing.fake_server` runs without a RuntimeWarning ------------
def test_the_fake_server_runs_as_a_module_without_a_warning():
    r = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-m", "aart.testing.fake_server", "-h"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "RuntimeWarning" not in r.stderr and "--port" in r.stdout


# -- item 3: an unpriced paid model costs "unpriced", never $0.0000 -------------------------
def test_an_unpriced_paid_model_is_unpriced_in_run_and_scope(tmp_path, fake_server):
    recipe, out = write_recipe(tmp_path, MINI_RECIPE), tmp_path / "run"
    model = ["--model", "openai/gen", "--base-url", fake_server.base_url]
    r = cli("run", recipe, "--out", out, *model)
    assert r.returncode == 0, r.stderr
    assert "$0.0000" not in r.stdout and "unpriced (no price for openai/gen" in r.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["usage"]["cost"] is None and summary["usage"]["unpriced"] == ["openai/gen"]
    r = cli("scope", out)
    assert r.returncode == 0, r.stderr
    assert "$0.0000" not in r.stdout and "cost unpriced on openai/gen" in r.stdout


def test_an_unpriced_target_is_unpriced_in_the_attack_and_its_reports(tmp_path, fake_server):
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"a question {i}"}) + "\n" for i in range(3)))
    out = tmp_path / "att"
    r = cli(
        "attack", data, "--target", "openai/app", "--base-url", fake_server.base_url, "--out", out
    )
    assert r.returncode == 0, r.stderr
    assert "$0.0000" not in r.stdout and "unpriced" in r.stdout
    assert json.loads((out / "attack.json").read_text())["usage"]["cost"] is None
    for report in ("report.md", "report.html"):
        text = (out / report).read_text()
        assert "$0.0000" not in text and "unpriced" in text, report


def test_calls_to_a_python_target_are_not_paid_calls(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"a question {i}"}) + "\n" for i in range(3)))
    out = tmp_path / "att"
    r = cli(
        "attack",
        data,
        "--target",
        "targets_fixture:async_app",
        "--out",
        out,
        cwd=Path(__file__).parent,
    )
    assert r.returncode == 0, r.stderr
    assert "0 paid calls and 3 calls to the target" in r.stdout
    assert "0 paid calls and 3 calls to the target" in (out / "report.md").read_text()
    # an attack of a free model costs $0 (nothing unpriced)
    f = aart.attack(data, target="fake/app", out=tmp_path / "free")
    assert f.usage["cost"] == 0.0
