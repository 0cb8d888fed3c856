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

