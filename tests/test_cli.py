"""The command line as a user meets it: help, version, exit codes, no tracebacks."""

import json
import subprocess
import sys

import pytest
from conftest import MINI_RECIPE, write_recipe

from aart import __version__

COMMANDS = [
    "run",
    "define",
    "scope",
    "generate",
    "recipes",
    "init",
    "attack",
    "rejudge",
    "endpoints",
    "evaluate",
    "topup",
    "baseline",
]


def aart(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "aart", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_version():
    r = aart("--version")
    assert r.returncode == 0 and __version__ in r.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_help_on_every_command(command):
    r = aart(command, "--help")
    assert r.returncode == 0 and "Usage:" in r.stdout


def test_bad_recipe_is_a_usage_error_without_traceback(tmp_path):
    path = write_recipe(tmp_path, MINI_RECIPE.replace("mix: per-value", "mix: per-valu"))
    r = aart("run", path, "--out", tmp_path / "run")
    assert r.returncode == 2
    assert "recipe.yaml:" in r.stderr and "Traceback" not in r.stderr


def test_unknown_provider_is_a_usage_error(mini_recipe, tmp_path):
    r = aart("run", mini_recipe, "--model", "nope/x", "--out", tmp_path / "run")
    assert r.returncode == 2 and "unknown provider 'nope'" in r.stderr


def test_missing_api_key_names_the_fix(mini_recipe, tmp_path):
    r = aart("run", mini_recipe, "--model", "openai/gpt-4o-mini", "--out", tmp_path / "run")
    assert r.returncode == 2 and "OPENAI_API_KEY" in r.stderr and "Traceback" not in r.stderr


def test_unreachable_endpoint_is_a_runtime_failure(tmp_path):
    text = MINI_RECIPE.replace(
        "default: fake/test",
        "default: openai/x\n  base_url: http://127.0.0.1:9/v1\n  max_retries: 1",
    )
    r = aart("run", write_recipe(tmp_path, text), "--out", tmp_path / "run")
    assert r.returncode == 1 and "cannot reach" in r.stderr and "Traceback" not in r.stderr


def test_run_steps_and_summary(mini_recipe, tmp_path):
    out = tmp_path / "run"
    r = aart("define", mini_recipe, "--out", out)
    assert r.returncode == 0 and "regions" in r.stdout
    r = aart("scope", out)
    assert r.returncode == 0 and "attempts: 6" in r.stdout and "cells: 18" in r.stdout
    r = aart("generate", out)
    assert r.returncode == 0 and "18 of 18" in r.stdout
    r = aart("run", mini_recipe, "--out", out)
    assert r.returncode == 0 and "prompts" in r.stdout and "dataset.aart.csv" in r.stdout


def test_dry_run_spends_nothing(mini_recipe, tmp_path):
    r = aart("run", mini_recipe, "--dry-run", "--json", cwd=tmp_path)
    est = json.loads(r.stdout)
    assert est["attempts"] == 6 and est["define_calls"] == 1 and est["total_tokens"] > 0
    assert not (tmp_path / "runs").exists()
    # --json alone started the whole run, --json ignored
    r = aart("run", mini_recipe, "--json", cwd=tmp_path)
    assert r.returncode == 2 and "--json goes with --dry-run" in r.stderr
    assert not (tmp_path / "runs").exists()


def test_the_dry_run_says_when_the_run_would_be_refused(mini_recipe, tmp_path):
    out = tmp_path / "run"
    assert aart("run", mini_recipe, "--out", out).returncode == 0
    other = write_recipe(tmp_path, MINI_RECIPE.replace("name: mini", "name: other"), "other.yaml")
    r = aart("run", other, "--out", out, "--dry-run")
    assert r.returncode == 2 and "already holds a run of a different recipe" in r.stderr
    assert aart("run", mini_recipe, "--out", out, "--dry-run").returncode == 0  # its own


def test_set_aside_old_moves_a_run_of_another_recipe_and_resumes_its_own(mini_recipe, tmp_path):
    # `make demo` after an upgrade changed the demo recipe: it refused, "already holds a run
    # of a different recipe"; with --set-aside-old the old run is kept whole beside it
    out = tmp_path / "run"
    assert aart("run", mini_recipe, "--out", out).returncode == 0
    first = (out / "dataset.jsonl").read_text()
    r = aart("run", mini_recipe, "--out", out, "--set-aside-old")
    assert r.returncode == 0 and "moved to" not in r.stdout  # its own run resumes
    assert not (tmp_path / "run.old-1").exists()
    other = write_recipe(tmp_path, MINI_RECIPE.replace("name: mini", "name: other"), "other.yaml")
    assert aart("run", other, "--out", out).returncode == 2  # refused without the flag
    r = aart("run", other, "--out", out, "--set-aside-old", "--dry-run")
    assert r.returncode == 0 and "would move it aside" in r.stdout
    assert not (tmp_path / "run.old-1").exists()  # a dry run moves nothing
    r = aart("run", other, "--out", out, "--set-aside-old")
    assert r.returncode == 0 and f"moved to {tmp_path / 'run.old-1'}" in r.stdout, r.stdout
    assert (tmp_path / "run.old-1" / "dataset.jsonl").read_text() == first
    assert "name: other" in (out / "recipe.yaml").read_text()
    r = aart("run", mini_recipe, "--out", out, "--set-aside-old")
    assert r.returncode == 0 and (tmp_path / "run.old-2").exists()


def test_batch_with_ray_is_refused_before_any_step(mini_recipe, tmp_path):
    out = tmp_path / "run"
    r = aart("run", mini_recipe, "--out", out, "--batch", "--executor", "ray")
    assert r.returncode == 2 and "do not go together" in r.stderr
    assert not out.exists()  # Steps 1 and 2 ran first and left their files


def test_recipes_and_init(tmp_path):
    r = aart("recipes")
    assert "aart-demo" in r.stdout
    r = aart("init", "aart-demo", cwd=tmp_path)
    assert r.returncode == 0 and (tmp_path / "aart-demo.yaml").exists()
    r = aart("init", "aart-demo", cwd=tmp_path)
    assert r.returncode == 2 and "exists" in r.stderr


def test_the_values_table_lines_up_with_short_values(monkeypatch):
    # language codes ("en") are shorter than the header's "value": the rows were not padded
    from click.testing import CliRunner

    from aart import pipeline
    from aart.cli.main import cli

    row = {"status": "ok", "planned": 12, "generated": 3, "mentioned": 4, "attacked_unit": None}
    monkeypatch.setattr(pipeline, "values", lambda *a, **k: {"language": [{**row, "value": "en"}]})
    out = CliRunner().invoke(cli, ["values", "."]).output.splitlines()
    header, line = out[1], out[2]
    assert header.index("status") == line.index("ok") and header.index("planned") < line.index("12")


def test_the_run_summary_says_why_items_were_invalid_and_no_similarity_of_nothing():
    # "valid items 4/8 (50.0%)" gave no reason (generate.json had it), and with nothing
    # faithful it printed "mean nearest-neighbour similarity 0.00"
    from aart.cli.common import generation_lines
    from aart.steps.generate import GenerateStats

    s = GenerateStats(requested=8, items=8, valid_items=4, invalid_items=4, model="fake/x")
    s.invalid_reasons = {"exact duplicate within the answer": 4}
    lines = dict(generation_lines(s))
    assert lines["valid items"].endswith("invalid exact duplicate within the answer 4")
    assert "n/a (no faithful item)" in lines["too alike"] and "0.00" not in lines["too alike"]
