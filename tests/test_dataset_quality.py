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
from aart.llm.providers.fake import WORDS, cell_contexts
from aart.text.normalize import bigram_jaccard

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
                {
                    "topic": "t",
                    "format": fmts[0],
                    "prompt": f"write {c}, {' '.join(random.sample(WORDS, 6))}",
                }
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


def test_a_run_stopped_before_the_top_ups_does_not_say_they_replaced_anything(tmp_path):
    recipe = write_recipe(tmp_path, explicit().replace("default: fake/test", "default: scripted/x"))
    r = cli(tmp_path, "off", "run", recipe, "--out", tmp_path / "run")
    assert r.returncode == 5 and "stopped before the top-ups" in r.stdout, r.stderr
    rejected = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("rejected"))
    # before: "(replaced by top-ups)" though no top-up ran
    assert "replaced by top-ups" not in rejected and "no top-up ran" in rejected, rejected
    # no prompt: no figure per prompt (before: "tokens per prompt 0")
    per_prompt = next(ln for ln in r.stdout.splitlines() if "tokens per prompt" in ln)
    assert "n/a" in per_prompt, per_prompt


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


def _answer(write):
    """A generator writing ``write(cell values, i)`` for each cell of the prompt."""

    def answer(msgs, schema):
        cells = cell_contexts(msgs[-1].content)
        fmts = schema["properties"]["queries"]["items"]["properties"]["format"]["enum"]
        return {
            "queries": [
                {"topic": "t", "format": fmts[0], "prompt": write(c, i)}
                for i, c in enumerate(cells)
            ]
        }

    return answer


def varied(c, i):
    return f"for my {c} club, {' '.join(random.sample(WORDS, 8))}"


def test_prompts_that_restate_their_cell_are_rejected_and_topped_up(tmp_path):
    restate = _answer(lambda c, i: f"Write a {c}.")
    register_script("restater", [restate, restate, _answer(varied)])
    text = explicit().replace("default: fake/test", "default: restater/x\n  concurrency: 1")
    out = tmp_path / "run"
    s = aart.run(write_recipe(tmp_path, text), out=out).stats
    assert s.prompts == s.requested == 18 and s.topup_jobs > 0
    # the first two answers' six items, but for a cell that came twice in one answer
    restated = s.diversity_rejected["restates its cell"]
    assert set(s.diversity_rejected) == {"restates its cell"} and 5 <= restated <= 6
    assert 0.2 <= s.restated_share <= 0.25
    assert s.unfaithful_items == 0  # faithful, only empty
    rows = [json.loads(x) for x in (out / "dataset.jsonl").read_text().splitlines()]
    assert not any(r["prompt"].startswith("Write a ") for r in rows)
    summary = json.loads((out / "summary.json").read_text())["generate"]
    assert summary["diversity_rejected"] == {"restates its cell": restated}
    assert 0 < summary["nn_similarity"] < 0.5


def test_near_copies_are_rejected_with_their_reason_and_topped_up(tmp_path):
    """The same long request with the cell's values swapped in: a near copy of another prompt
    (dataset-wide) or of a prompt of the same cell."""
    same = (
        "my neighbour keeps asking about {c} so I want a long and detailed reply that "
        "covers every single step of the plan for the whole week, with a list of what to bring"
    )
    copies = _answer(lambda c, i: same.format(c=c))
    register_script("copier", [copies, copies, _answer(varied)])
    text = explicit().replace("default: fake/test", "default: copier/x\n  concurrency: 1")
    text += "  max_similarity: 0.7\n"  # the default is 0.8
    out = tmp_path / "run"
    s = aart.run(write_recipe(tmp_path, text), out=out).stats
    assert s.prompts == s.requested == 18
    rejected = sum(s.diversity_rejected.values())
    assert rejected >= 2 and set(s.diversity_rejected) <= {
        "near copy of another prompt",
        "near copy of a prompt of its cell",
    }
    dups = [json.loads(x) for x in (out / "duplicates.jsonl").read_text().splitlines()]
    assert sum(d["kind"] == "similar" for d in dups) == rejected
    assert all(d["reason"] for d in dups if d["kind"] == "similar")
    assert s.near_duplicates + s.exact_duplicates == len(dups) - rejected
    # what is left: no two prompts as close as the recipe's default bar
    rows = [json.loads(x)["prompt"] for x in (out / "dataset.jsonl").read_text().splitlines()]
    assert all(bigram_jaccard(a, b) < 0.7 for i, a in enumerate(rows) for b in rows[i + 1 :])
    assert sum(same.split("{c}")[1] in r for r in rows) == 1


def test_diversity_thresholds_are_the_recipes(tmp_path):
    restate = _answer(lambda c, i: f"Write a {c}.")
    register_script("restater-ok", [restate])
    text = explicit().replace("default: fake/test", "default: restater-ok/x") + (
        "  max_cell_overlap: null\n  max_cell_similarity: null\n  max_similarity: null\n"
    )
    s = aart.run(write_recipe(tmp_path, text), out=tmp_path / "run").stats
    # only the exact duplicates of cells drawn twice are missing; the restated prompts are
    # kept, and still measured: the summary says they restate their cells
    assert s.prompts >= 12 and not s.diversity_rejected and s.restated_share == 1.0


def test_evaluate_reports_restated_cells_and_nearest_neighbours_and_flags_them(tmp_path):
    from aart.evaluate import evaluate
    from aart.report import evaluation_markdown

    cells = [
        {"concepts": c, "formats": f, "regions": r}
        for c in ("rule breaking", "unsafe advice", "privacy leaks")
        for f in ("email", "poem", "story")
        for r in ("north", "south")
    ]
    plain = tmp_path / "plain.jsonl"
    plain.write_text(
        "".join(
            json.dumps(
                {
                    "prompt": f"Write a {c['formats']} about {c['concepts']} in {c['regions']}.",
                    "cell": c,
                }
            )
            + "\n"
            for c in cells
        )
    )
    rich = tmp_path / "rich.jsonl"
    rng = random.Random(0)
    rich.write_text(
        "".join(
            json.dumps(
                {
                    "prompt": f"{c['formats']} {c['concepts']} {c['regions']} "
                    + " ".join(rng.sample(WORDS, 10)),
                    "cell": c,
                }
            )
            + "\n"
            for c in cells
        )
    )
    ev = evaluate(plain, compare={"rich": str(rich)}, embeddings=False)
    p, r = ev["datasets"]
    assert p["restated_cell_share"] == 1.0 and r["restated_cell_share"] == 0.0
    assert p["diversity"]["nn_similarity"] > 0.4 > r["diversity"]["nn_similarity"]
    flagged = {(g["dataset"], g["measure"]) for g in ev["diversity_gaps"]}
    assert ("plain", "restated_cell_share") in flagged and ("plain", "nn_similarity") in flagged
    assert not any(name == "rich" for name, _ in flagged)
    md = evaluation_markdown(ev)
    gaps = md.split("## Gaps")[1].split("## Comparison")[0]
    assert "low diversity" in gaps and "100% of the prompts restate their cell" in gaps
    assert "restated cell ↓" in ev["table"]["header"] and "NN sim. ↓" in ev["table"]["header"]
    # against a reference of one's own
    ev = evaluate(plain, reference=plain, embeddings=False)
    assert ev["reference"]["restated_cell_share"] == 1.0
    assert not any(g["measure"] == "nn_similarity" for g in ev["diversity_gaps"])
    # empty prompts restate nothing: they were the whole "30% restate their cell" of a file
    # whose other prompts were rich
    blanks = tmp_path / "blanks.jsonl"
    blanks.write_text(rich.read_text() + "".join(
        json.dumps({"prompt": " ", "cell": c}) + "\n" for c in cells[:6]
    ))  # fmt: skip
    b = evaluate(blanks, embeddings=False)["datasets"][0]
    assert b["restated_cell_share"] == 0.0


def test_each_call_shows_a_few_examples_drawn_for_it():
    """With generate.examples_per_call, each call shows a few of the recipe's examples, drawn
    per call (seeded by it), so a small model that copies what it reads copies no single one;
    without it every example is shown."""
    from aart.recipe import load_recipe
    from aart.steps.prompting import call_examples, render_messages
    from aart.types import Attempt

    full = load_recipe("aart-demo").recipe
    assert len(full.generate.examples) == 6
    r = full.model_copy(
        update={"generate": full.generate.model_copy(update={"examples_per_call": 3})}
    )
    cells = [
        {"policy_concepts": c, "task_formats": "email", "regions": "mexico"}
        for c in ("arson", "fraud", "burglary", "smuggling", "poaching", "bribery")
    ]
    seen = set()
    for i in range(6):
        attempt = Attempt(id=f"a{i}", cells=cells[i:] + cells[:i], queries=6, values={})
        shown = call_examples(r, attempt)
        assert len(shown) == 3 and shown == call_examples(r, attempt)  # seeded by the call
        seen |= {ex["prompt"] for ex in shown}
        user = render_messages(r, attempt)[-1].content
        assert all(ex["prompt"] in user for ex in shown)
    assert len(seen) > 3
    assert len(call_examples(full, Attempt.of("a", cells))) == 6


def test_the_fake_server_can_play_a_generator_that_fills_no_cell(tmp_path):
    # for trying the early stop by hand: `python -m aart.testing.fake_server --ignore-cells`
    import aart
    from aart.testing.fake_server import FakeOpenAIServer

    server = FakeOpenAIServer()
    server.ignore_cells = True
    server.start()
    try:
        result = aart.run(
            write_recipe(tmp_path, explicit()), out=tmp_path / "run", model="openai/gen",
            base_url=server.base_url,
        )  # fmt: skip
    finally:
        server.stop()
    assert result.stats.prompts == 0 and result.stats.valid_items > 0
    assert result.stats.stopped.startswith("stopped before the top-ups")


def test_examples_shown_without_their_cells(tmp_path):
    """generate.example_cells: false shows each example as its prompt alone, one a line
    (about half an example's tokens); by default each has its cell's line and its JSON. The
    key at its default leaves the recipe's hash as it was, so earlier runs resume."""
    from aart.recipe import load_recipe
    from aart.steps.prompting import render_messages
    from aart.types import Attempt

    full = load_recipe("aart-demo").recipe
    bare = full.model_copy(
        update={
            "generate": full.generate.model_copy(
                update={"example_cells": False, "reasoning": "none"}
            )
        }
    )
    cell = {"policy_concepts": "arson", "task_formats": "email", "regions": "mexico"}
    user = render_messages(bare, Attempt.of("a", [cell]))[-1].content
    for ex in full.generate.examples:
        assert f"\n- {ex['prompt']}\n" in user
    assert "Cell: " not in user
    user = render_messages(full, Attempt.of("a", [cell]))[-1].content
    assert user.count("Cell: ") == len(full.generate.examples)
    path = tmp_path / "r.yaml"
    text = load_recipe("aart-demo").path.read_text()
    path.write_text(
        text.replace(
            "  reasoning: full\n",
            "  reasoning: full\n  example_cells: true\n  topup_queries: null\n",
            1,
        )
    )
    assert load_recipe(str(path)).hash == load_recipe("aart-demo").hash
