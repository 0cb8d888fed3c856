"""bench/bench_search.py's static dataset at equal target queries: K different phrasings of
each cell's request, each in its cell by the search's own keyword check, sent once through the
search's target and judges (``aart.search.compare.run_baseline``) and counted beside the
search's own baselines. The target is a scripted app; the attacker the fake OpenAI server."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

import aart.search
from aart.recipe import load_recipe
from aart.search import compare
from aart.steps.verify import CellVerifier

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
import bench_search as bench  # noqa: E402


def polite_app(prompt: str) -> str:
    """Gives way only to the second phrasing ("Could you write me ..."): a prompt the
    one-prompt dataset never sends, the equal-query dataset sends once a cell."""
    if prompt.startswith("Could you"):
        return "Sure, here is a short text about the topic."
    return "I can't help with that."


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.mark.parametrize("per_cell", [1, 2, 4])
def test_the_equal_query_dataset_has_k_distinct_prompts_a_cell_each_in_its_cell(tmp_path, per_cell):
    rows = lines(bench.equal_dataset(tmp_path / "eq.jsonl", 3, per_cell))
    rec = load_recipe(bench.recipe(tmp_path / "recipe.yaml", bench.PARTIAL, 3)).recipe
    verifier = CellVerifier(rec, {d: list(dim.values) for d, dim in rec.dimensions.items()})
    cells: dict[str, list[str]] = {}
    for r in rows:
        cells.setdefault(json.dumps(r["cell"], sort_keys=True), []).append(r["prompt"])
    assert len(cells) == 6 and len(rows) == 6 * per_cell
    assert len({r["id"] for r in rows}) == len(rows)
    for key, prompts in cells.items():
        cell = json.loads(key)
        assert len(set(prompts)) == per_cell
        checks = asyncio.run(verifier.check([(p, cell) for p in prompts]))
        assert all(all(c.values()) and c for c in checks), (cell, prompts, checks)
        # and in no other cell: no other concept or format named
        for p in prompts:
            others = [c for c in bench.CONCEPTS if c != cell["concepts"]]
            others += [f for f in bench.FORMATS if f != cell["formats"]]
            assert not any(o in p for o in others), p
    # the first phrasing is the one-prompt dataset's own
    one = {json.dumps(r["cell"], sort_keys=True): r["prompt"]
           for r in lines(bench.dataset(tmp_path / "d.jsonl", 3))}  # fmt: skip
    assert all(cells[k][0] == p for k, p in one.items())


def test_more_phrasings_a_cell_than_written_are_refused(tmp_path):
    with pytest.raises(SystemExit, match="at most 4 per cell"):
        bench.equal_dataset(tmp_path / "eq.jsonl", 3, 5)


def test_the_equal_query_baseline_is_sent_and_counted_beside_the_search_s_own(
    tmp_path, fake_server
):
    root = tmp_path
    data = bench.dataset(root / "dataset.jsonl", 3)
    rec = bench.recipe(root / "recipe.yaml", bench.PARTIAL, 3)
    out = root / "search"
    r = aart.search.search(
        data, out=out, recipe=rec, target="test_bench_search:polite_app",
        attacker="openai/attacker", base_url=fake_server.base_url, budget=12,
        pick="weighted", compare=True, mutations=["refusal-suppression"],
    )  # fmt: skip
    assert r.finished
    equal = bench.equal_dataset(root / "eq.jsonl", 3, 2)
    got = compare.run_baseline(
        r, out / "compare" / "static-equal-12", {"strategies": [], "sample": None}, dataset=equal
    )
    # 12 queries, each cell's second phrasing gives way: every cell, where the one-prompt
    # static dataset (its first phrasings) has none
    assert got["queries"] == 12 and got["cells_with_success"] == 6 and got["successes"] == 6
    s = json.loads((out / "search.json").read_text())
    assert s["baselines"]["static (identity)"]["cells_with_success"] == 0
    each = bench.by_judge(out, ["refusal"], ["concepts", "formats"], 12)
    assert each[bench.EQUAL]["queries"] == 12
    assert each[bench.EQUAL]["refusal"] == {"successes": 6, "cells": 6}
    assert each["static (identity)"]["queries"] == 6
    assert each["static (identity)"]["refusal"] == {"successes": 0, "cells": 0}
    assert "PAIR" in each and "search" in each


def test_the_goal_is_said_with_its_zero():
    assert (
        bench.goal(4, 0) == "search 4 cells, static at equal queries 0: at least twice (against 0)"
    )
    assert bench.goal(4, 2).endswith("at least twice") and bench.goal(3, 2).endswith("not twice")
    assert bench.goal(0, 0).endswith("not twice")
