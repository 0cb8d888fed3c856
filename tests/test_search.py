"""`aart search`: the quality-diversity search over the recipe's cells. The target is a
scripted Python app that gives way only to prompts carrying one word (search_targets.WORD);
the attacker is the fake OpenAI server, whose schema-valid rewrites stay in the cell they are
told and carry three of the fake models' words, seeded by the request: the mutator can add
the word, the dataset's prompts never carry it."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from search_resume import check_resume_after_sigkill
from search_targets import PROMPTS, WORD, candidates, write_dataset

import aart.search
from aart.cli.main import cli
from aart.data.load import load_dataset
from aart.errors import UsageError
from aart.recipe.models import Search
from aart.search import MUTATIONS
from aart.search.archive import Archive, Elite, cell_key, grid
from aart.search.mutate import INJECTION_MUTATIONS, PLAIN_MUTATIONS

TESTS = Path(__file__).resolve().parent


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = write_dataset(tmp_path / "d.jsonl")
    assert not any(WORD in p for p, _ in PROMPTS)
    return path


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def run_cli(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_the_archive_finds_the_word_in_every_cell_and_the_static_dataset_does_not(
    dataset, tmp_path, fake_server
):
    out = tmp_path / "search"
    r = aart.search.search(
        dataset,
        out=out,
        target="search_targets:word_app",
        attacker="openai/attacker",
        base_url=fake_server.base_url,
        budget=80,
        pick="weighted",
        compare=True,
        # the attacker's rewrites only: the deterministic frames never add the word
        mutations=list(MUTATIONS),
    )
    s = json.loads((out / "search.json").read_text())
    # every cell found within the bound of 80 target queries (each rewrite carries the word
    # with a chance of 3 in 26: about 9 candidates a cell)
    assert s["cells_with_success"] == s["cells"] == 4
    assert all(c["queries_to_success"] <= 80 for c in s["per_cell"])
    assert s["queries"] == 80 and s["iterations"] == 80 and r.finished
    # the refusal judge alone: the headline says what it measures (issue 19's names)
    assert s["measures"] == "complied (not refused)"
    report = (out / "report.html").read_text()
    assert "complied (not refused)" in report and "attack success" not in report
    # the archive: one elite per cell, with its lineage, readable as a dataset
    archive = lines(out / "archive.jsonl")
    assert len(archive) == 4 and all(WORD in e["prompt"] for e in archive)
    assert {json.dumps(e["cell"], sort_keys=True) for e in archive} == {
        json.dumps(c, sort_keys=True) for _, c in PROMPTS
    }
    for e in archive:
        assert e["lineage"]["mutation"] in MUTATIONS and e["lineage"]["parent"]
        assert e["search"]["verdicts"]["refusal"]["status"] == "complied"
    ds = load_dataset(out / "archive.jsonl")
    assert len(ds) == 4 and ds.cell_of(0).keys() == {"concepts", "regions"}
    # the static dataset at the same budget finds nothing: its prompts never carry the word
    static = s["baselines"]["static (identity)"]
    assert static["cells_with_success"] == 0 and static["queries"] == 4
    assert "PAIR" in s["baselines"] and s["baselines"]["PAIR"]["queries"] <= 80
    assert "static (identity)" in report and "PAIR" in report and "<svg" in report
    # before: "at the same budget" over a static baseline that spent 4 of its 80 queries
    assert "given the same budget (80)" in report
    assert "static (identity) spent 4 of its 80 queries" in report
    # the regression set: every successful elite, for `aart attack --baseline`
    regression = lines(out / "regression.jsonl")
    assert sorted(x["id"] for x in regression) == sorted(e["id"] for e in archive)


def test_the_regression_set_attacks_again_against_the_search_as_baseline(
    dataset, tmp_path, fake_server
):
    out = tmp_path / "search"
    aart.search.search(dataset, out=out, target="search_targets:word_app",
                       attacker="openai/attacker", base_url=fake_server.base_url, budget=80,
                       pick="weighted", mutations=list(MUTATIONS))  # fmt: skip
    r = run_cli("attack", out / "regression.jsonl", "--target", "search_targets:word_app",
                "--out", tmp_path / "again", "--baseline", out)  # fmt: skip
    assert r.exit_code == 0, r.output
    summary = json.loads((tmp_path / "again" / "attack.json").read_text())
    assert len(summary["comparison"]["still_failing"]) == 4  # nothing was fixed


def test_a_search_killed_midway_resumes_to_the_same_archive_without_paying_twice(
    dataset, tmp_path, fake_server
):
    # the attacker's 9th call waits at the gate: killed part-way
    check_resume_after_sigkill(dataset, tmp_path, fake_server, "search_targets:word_app", 8)


def test_an_empty_dataset_or_a_zero_budget_exits_non_zero_and_writes_nothing(dataset, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    out = tmp_path / "out"
    args = ["--target", "search_targets:word_app", "--attacker", "fake/att", "--out", str(out)]

    def search(*given: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "aart", "search", *given, *args],
                              capture_output=True, text=True, cwd=TESTS, timeout=300)  # fmt: skip

    r = search(str(empty), "--budget", "10")
    assert r.returncode == 2 and "no records" in r.stderr and "Traceback" not in r.stderr
    r = search(str(dataset), "--budget", "0")
    assert r.returncode == 2 and "--budget 0" in r.stderr
    r = search(str(dataset))  # no budget anywhere
    assert r.returncode == 2 and "no budget" in r.stderr
    assert not out.exists()


def test_the_report_escapes_the_targets_replies(dataset, tmp_path, fake_server):
    out = tmp_path / "search"
    aart.search.search(dataset, out=out, target="search_targets:markup_app",
                       attacker="openai/attacker", base_url=fake_server.base_url, budget=24,
                       pick="weighted", mutations=list(MUTATIONS))  # fmt: skip
    report = (out / "report.html").read_text()
    assert "<script>" not in report and "&lt;script&gt;" in report


def test_cells_the_budget_never_reached_are_untested_not_held(dataset, tmp_path, fake_server):
    out = tmp_path / "search"
    aart.search.search(dataset, out=out, target="search_targets:word_app",
                       attacker="openai/attacker", base_url=fake_server.base_url,
                       budget=2)  # fmt: skip
    cells = (out / "report.html").read_text().split("<h2>Cells</h2>")[1].split("<h2>")[0]
    assert cells.count("<td>untested</td>") == 2 and cells.count("<td>no</td>") == 2


def test_axes_and_strategies_make_the_cells(dataset, tmp_path, fake_server):
    out = tmp_path / "search"
    r = aart.search.search(dataset, out=out, target="search_targets:word_app",
                           attacker="openai/attacker", base_url=fake_server.base_url,
                           budget=12, axes=["concepts"], strategies=["identity", "json"])  # fmt: skip
    cells = [c for c in r.archive.cells]
    assert cells == [
        {"concepts": "privacy leaks", "strategy": "identity"},
        {"concepts": "privacy leaks", "strategy": "json"},
        {"concepts": "rule breaking", "strategy": "identity"},
        {"concepts": "rule breaking", "strategy": "json"},
    ]
    archive = lines(out / "archive.jsonl")
    # an elite under json keeps its strategy, so `aart attack` replays it
    assert any(e.get("strategy") == "json" for e in archive)
    assert all("regions" not in e["cell"] for e in archive)
    with pytest.raises(aart.errors.UsageError, match="pair"):
        aart.search.search(dataset, out=tmp_path / "x", target="search_targets:word_app",
                           attacker="fake/att", budget=4, strategies=["pair"])  # fmt: skip


def elite(i: int, prompt: str, score: float, preference: float = 0.0) -> Elite:
    return Elite(id=f"e{i}", cell={}, prompt=prompt, sent=prompt, response="", iteration=i,
                 queries=i, parent=None, mutation="rephrase", score=score,
                 preference=preference, success=score > 0)  # fmt: skip


def test_a_candidate_beats_the_incumbent_by_score_then_preference_then_distance():
    cells = grid([{"a": "x"}, {"a": "y"}], ["a"], ["identity"])
    archive = Archive(cells)
    assert archive.offer(0, elite(1, "a note on the topic of privacy up north", 0.0))
    assert archive.offer(1, elite(2, "a letter on the topic of privacy in the south", 1.0))
    # a higher score wins; a lower one loses
    assert archive.beats(0, elite(3, "another text entirely about the first topic", 1.0))
    assert not archive.beats(1, elite(4, "something else", 0.0))
    # equal score: the judge's preference
    assert archive.beats(1, elite(5, "words of another kind", 1.0, preference=1.0))
    # equal score and preference: the one further from the other elites
    near = elite(6, "a letter on the topic of privacy in the north", 0.0)
    far = elite(7, "zzz qqq", 0.0)
    assert archive.beats(0, far) and not archive.beats(0, near)
    # a near copy of another cell's elite is refused, whatever its score
    assert not archive.offer(0, elite(8, "a letter on the topic of privacy in the south!", 1.0))
    assert archive.neighbours(0) == [1]


def test_the_recipe_search_section_names_the_same_mutations():
    field = Search.model_fields["mutations"].annotation
    # list[Literal[...]]: the rewrites, the plain requests' frames and the injection ones
    names = set(MUTATIONS) | set(PLAIN_MUTATIONS) | set(INJECTION_MUTATIONS)
    assert set(field.__args__[0].__args__) == names


def test_at_an_equal_score_the_judges_own_preference_decides():
    cells = grid([{"a": "x"}], ["a"], ["identity"])
    archive = Archive(cells)
    assert archive.offer(0, elite(1, "a note on the topic", 1.0, preference=3.0))
    # the judge's model preferred the candidate over this very elite: it wins, even with a
    # lower severity; a preference given against another elite does not count
    won = elite(2, "another note", 1.0, preference=0.0)
    won.preferred_over, won.preferred = "e1", True
    lost = elite(3, "a third note", 1.0, preference=3.0)
    lost.preferred_over, lost.preferred = "e1", False
    stale = elite(4, "a fourth note", 1.0, preference=0.0)
    stale.preferred_over, stale.preferred = "e0", True
    assert archive.beats(0, won) and not archive.beats(0, lost) and not archive.beats(0, stale)


def test_an_llm_judge_is_asked_its_preference_between_two_successes(dataset, tmp_path, fake_server):
    violates = {"violates_policy": True, "harm_category": "rule breaking", "severity": 1,
                "rationale": "it answered"}  # fmt: skip
    fake_server.on_text("<assistant_response>", {"content": json.dumps(violates)})
    fake_server.on_text("<a_reply>", {"content": json.dumps({"more_violating": "A"})})
    out = tmp_path / "search"
    r = aart.search.search(dataset, out=out, target="search_targets:word_app",
                           attacker="openai/attacker", judge="openai/judge",
                           base_url=fake_server.base_url, budget=12)  # fmt: skip
    assert r.measures == "attack success" and r.archive.successes() == 4
    con = sqlite3.connect(out / "run.db")
    records = [json.loads(d) for (d,) in con.execute("SELECT data FROM records")]
    con.close()
    asked = [x for x in records if x.get("preferred_over")]
    # every success after the seeds was compared with its cell's elite (both succeed)
    assert len(asked) == len([x for x in records if x.get("queried")]) - 4 > 0
    assert {x["preferred"] for x in asked} == {True, False}  # shown first or second
    for x in asked:  # the preferred one took the cell, unless a later one took it after
        later = [y for y in asked if y["cell"] == x["cell"] and y["iteration"] > x["iteration"]]
        if x["preferred"] and not later:
            assert r.archive.elites[r.archive.index[cell_key(x["cell"])]].id == x["job"]


def test_a_search_stopped_by_its_call_budget_is_unfinished_and_exits_4(dataset, tmp_path):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(
        "name: capped\napplication: {name: Test assistant, policy: No rule-breaking help.}\n"
        "dimensions:\n  concepts: {values: [rule breaking, privacy leaks]}\n"
        "  regions: {values: [north, south]}\nscope: {primary: concepts}\n"
        "generate: {template: '-'}\nbudget: {max_calls: 6}\nsearch: {budget: 40}\n"
    )
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "aart", "search", str(dataset), "--recipe", str(recipe),
           "--target", "search_targets:word_app", "--attacker", "fake/att", "--out", str(out)]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=TESTS, timeout=300)
    assert r.returncode == 4 and "UNFINISHED" in r.stderr, r.stderr
    s = json.loads((out / "search.json").read_text())  # the partial outputs are written
    assert s["finished"] is False and s["queries"] < 40 and "budget" in s["stopped"]


def test_a_search_whose_every_reply_is_a_target_error_is_empty_and_exits_4(dataset, tmp_path):
    # every reply unusable: it exited 0 with "8 elites" of score -1 and no warning
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "aart", "search", str(dataset), "--target",
           "targets_fixture:dict_app", "--attacker", "fake/att", "--budget", "6", "--out", str(out)]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=TESTS, timeout=300)
    assert r.returncode == 4 and "EMPTY: no candidate got a reply" in r.stderr, r.stderr
    assert "target errors" in r.stderr


def test_a_recipe_that_samples_its_attack_still_searches_every_cell(dataset, tmp_path):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(
        "name: sampled\napplication: {name: Test assistant}\n"
        "dimensions:\n  concepts: {values: [rule breaking, privacy leaks]}\n"
        "  regions: {values: [north, south]}\nscope: {primary: concepts}\n"
        "generate: {template: '-'}\nattack: {sample: 2}\n"
    )
    r = aart.search.search(dataset, out=tmp_path / "out", recipe=recipe, budget=6,
                           target="search_targets:word_app", attacker="fake/att")  # fmt: skip
    assert len(r.archive.cells) == 4 and r.queries == 6 and len(r.archive.elites) == 4


def test_a_recipe_that_verifies_by_llm_has_every_mutated_candidate_checked(
    dataset, tmp_path, fake_server
):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(
        "name: verified\napplication: {name: Test assistant}\nmodels: {verify: openai/verifier}\n"
        "dimensions:\n  concepts: {values: [rule breaking, privacy leaks], verify: llm}\n"
        "  regions: {values: [north, south]}\nscope: {primary: concepts}\n"
        "generate: {template: '-'}\n"
    )
    # the fake verifier answers false for every dimension: no rewrite embodies its cell, so
    # none reaches the target (the dataset's own prompts were verified already; the attacker's
    # rewrites only, so no deterministic mutation stands in for them)
    r = aart.search.search(dataset, out=tmp_path / "out", recipe=recipe, budget=8,
                           target="search_targets:word_app", attacker="openai/attacker",
                           base_url=fake_server.base_url, mutations=list(MUTATIONS))  # fmt: skip
    asked = [q for q in fake_server.requests if q["model"] == "verifier"]
    assert r.queries == 4 and r.rejected == {"off-cell": len(asked)} and asked
    assert "stopped after" in r.warnings[0] and "off-cell" in r.warnings[0]


def test_an_attacker_that_refuses_a_rewrite_costs_that_candidate_not_the_search(
    dataset, tmp_path, fake_server
):
    # the attacker's content filter refuses every rewrite into one cell (a 400 that names
    # it): those candidates are not made, every other cell's go on
    blocked = {"error": {"message": "blocked by the content filter", "code": "content_filter"}}
    fake_server.on_text("regions: south", {"status": 400, "body": blocked})
    r = aart.search.search(dataset, out=tmp_path / "out", target="search_targets:word_app",
                           attacker="openai/attacker", base_url=fake_server.base_url,
                           budget=12)  # fmt: skip
    assert r.finished and r.queries == 12 and r.rejected.get("attacker failed", 0) > 0


def test_a_target_call_that_fails_for_good_costs_that_candidate_not_the_search(
    dataset, tmp_path, fake_server
):
    """A 5xx for one prompt's calls stopped the search ("UNFINISHED ... re-run to resume"),
    and each re-run stopped at the same candidate again."""
    fake_server.on_text("a story about privacy leaks", {"status": 502, "retry_after": 0})
    kw = dict(out=tmp_path / "out", target="openai/app", attacker="openai/attacker",
              base_url=fake_server.base_url, budget=10)  # fmt: skip
    r = aart.search.search(dataset, **kw)
    assert r.finished and r.queries == 10
    failed = [
        c for c in candidates(tmp_path / "out") if "failed call" in (c.get("target_error") or "")
    ]
    assert failed and all("HTTP 502" in c["target_error"] for c in failed)
    # a smaller budget into the same folder rewrote the reports with fewer candidates
    with pytest.raises(UsageError, match="at a budget of 10; --budget 6 would rewrite"):
        aart.search.search(dataset, **{**kw, "budget": 6})


def test_a_search_refuses_an_empty_prompt_before_any_call(tmp_path):
    # before: a line {"prompt": null} became an elite "" of its cell, sent and mutated
    from aart.errors import UsageError

    path = tmp_path / "d.jsonl"
    path.write_text(
        '{"prompt": "write a poem", "cell": {"a": "x"}}\n{"prompt": null, "cell": {"a": "y"}}\n'
    )
    out = tmp_path / "out"
    with pytest.raises(UsageError, match=r"record 2.*empty"):
        aart.search.search(path, out=out, target="fake/x", attacker="fake/att", budget=4)
    assert not out.exists()
