"""Datasets worth reading: no empty run exits 0, a hopeless first round stops before the
top-ups, prompts that restate their cell or copy each other are rejected and topped up."""

import json
import random
import subprocess
import sys
import textwrap

from conftest import MINI_RECIPE, write_recipe

import aart
from aart.errors import INCOMPLETE_EXIT_CODE
from aart.llm import register_script
from aart.llm.providers.fake import cell_contexts

EXPLICIT_REGIONS = (
    "    enumerate:\n      instruction: List world regions.\n      count: 4",
    "    values: [north, south]",
)


def explicit(text=MINI_RECIPE):
    return text.replace(*EXPLICIT_REGIONS)


def off_cell_answer(msgs, schema):
    """Schema-valid, but the prompts ignore the `Query N:` lines."""
    n = schema["properties"]["queries"]["minItems"]
    fmts = schema["properties"]["queries"]["items"]["properties"]["format"]["enum"]
    return {
        "queries": [
            {"topic": "t", "format": fmts[0], "prompt": f"tell me a nice thing {random.random()}"}
            for _ in range(n)
        ]
    }


def test_a_hopeless_first_round_stops_before_the_top_ups(tmp_path):
    get = register_script("ignores-cells", [off_cell_answer])
    text = explicit().replace("default: fake/test", "default: ignores-cells/x")
    result = aart.run(write_recipe(tmp_path, text), out=tmp_path / "run")
    s = result.stats
    assert s.prompts == 0 and s.requested == 18
    assert s.topup_jobs == 0 and len(get().calls) == 6  # the first round's six attempts only
    assert s.first_round_fill == 0.0
    assert s.stopped.startswith("stopped before the top-ups")
    assert "concepts not found 18" in s.stopped and "stronger model" in s.stopped
    assert "verify: llm" in s.stopped and "cell_template" in s.stopped
    written = json.loads((tmp_path / "run" / "generate.json").read_text())
    assert written["stopped"] == s.stopped and written["fill"] == 0.0


def test_the_early_stop_can_be_turned_off(tmp_path):
    get = register_script("ignores-cells-2", [off_cell_answer])
    text = explicit().replace("default: fake/test", "default: ignores-cells-2/x") + (
        "  min_first_round_fill: 0\n"
    )
    s = aart.run(write_recipe(tmp_path, text), out=tmp_path / "run").stats
    assert not s.stopped and s.topup_jobs > 0 and len(get().calls) > 6


def test_a_first_round_above_the_threshold_is_topped_up(tmp_path):
    """Half the cells filled: the top-ups go on and fill the rest."""
    calls = {"n": 0}

    def half(msgs, schema):
        calls["n"] += 1
        if calls["n"] % 2:
            return off_cell_answer(msgs, schema)
        fmts = schema["properties"]["queries"]["items"]["properties"]["format"]["enum"]
        return {
            "queries": [
                {"topic": "t", "format": fmts[0], "prompt": f"please write {c} {random.random()}"}
                for c in cell_contexts(msgs[-1].content)
            ]
        }

    register_script("half", [half])
    text = explicit().replace("default: fake/test", "default: half/x\n  concurrency: 1")
    s = aart.run(write_recipe(tmp_path, text), out=tmp_path / "run").stats
    assert not s.stopped and s.first_round_fill == 0.5 and s.topup_jobs > 0


# The CLI in a process of its own, with a scripted provider registered there first.
CLI = """
import random, sys
from aart.llm import register_script
{answers}
register_script("scripted", [{answer}])
register_script("verifier", [{verifier}])
from aart.cli.main import main
sys.argv = ["aart", *sys.argv[1:]]
main()
"""

OFF_CELL = textwrap.dedent(
    """
    def off(msgs, schema):
        n = schema["properties"]["queries"]["minItems"]
        f = schema["properties"]["queries"]["items"]["properties"]["format"]["enum"][0]
        return {"queries": [{"topic": "t", "format": f, "prompt": f"a nice thing {random.random()}"}
                            for _ in range(n)]}
    def says_no(msgs, schema):
        n = schema["properties"]["checks"]["minItems"]
        return {"checks": [{"regions": False} for _ in range(n)]}
    """
)


def cli(tmp_path, answer, *args, verifier="says_no"):
    script = tmp_path / "cli.py"
    script.write_text(CLI.format(answers=OFF_CELL, answer=answer, verifier=verifier))
    return subprocess.run(
        [sys.executable, str(script), *map(str, args)], capture_output=True, text=True, timeout=120
    )


def test_an_empty_dataset_exits_with_its_own_code_and_says_so_first(tmp_path):
    recipe = write_recipe(tmp_path, explicit().replace("default: fake/test", "default: scripted/x"))
    r = cli(tmp_path, "off", "run", recipe, "--out", tmp_path / "run")
    assert r.returncode == INCOMPLETE_EXIT_CODE == 5, r.stderr
    # the summary's first line, after the blueprint's plan
    first = [ln for ln in r.stdout.splitlines() if ln and not ln.startswith(("blueprint", " "))][0]
    assert first.startswith("INCOMPLETE: 0 of 18 cells filled (0%, --min-fill 90%)")
    assert "stopped before the top-ups" in r.stdout and "Traceback" not in r.stderr
    # `aart generate` on the same run says and exits the same
    r = cli(tmp_path, "off", "generate", tmp_path / "run")
    assert r.returncode == 5 and r.stdout.startswith("INCOMPLETE: 0 of 18")


def test_a_verifier_that_says_no_never_exits_0(tmp_path):
    text = (
        explicit()
        .replace("default: fake/test", "default: fake/test\n  verify: verifier/x")
        .replace("    values: [north, south]", "    values: [north, south]\n    verify: llm")
    )
    r = cli(tmp_path, "off", "run", write_recipe(tmp_path, text), "--out", tmp_path / "run")
    assert r.returncode == 5 and "\nINCOMPLETE: 0 of 18" in r.stdout, r.stderr
    assert r.stdout.index("INCOMPLETE") < r.stdout.index("aart run finished")


def test_min_fill_sets_the_bar(tmp_path):
    """A faithful run exits 0; an incomplete one exits 0 when --min-fill allows it."""
    ok = write_recipe(tmp_path, explicit(), "ok.yaml")
    r = cli(tmp_path, "off", "run", ok, "--out", tmp_path / "ok")
    assert r.returncode == 0 and "INCOMPLETE" not in r.stdout, r.stdout + r.stderr
    bad = write_recipe(tmp_path, explicit().replace("default: fake/test", "default: scripted/x"))
    r = cli(tmp_path, "off", "run", bad, "--out", tmp_path / "bad", "--min-fill", "0")
    assert r.returncode == 0 and "stopped before the top-ups" in r.stdout
