"""`aart search` on a plain dataset with an attacker whose rewrites are unusable (a small model
that leaves the cell or sends the prompt back): the deterministic frames of a request
(refusal suppression, prefix, override, role play, fiction, obfuscation) need no attacker
call, stack, carry a neighbour's frames over to this cell's own request, and stand in for an
unusable rewrite, recorded in the lineage. The target gives way only to an "override" frame,
which the dataset's prompts never carry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from search_resume import check_resume_after_sigkill
from search_targets import OVERRIDES, PROMPTS, candidates, write_dataset

import aart.search
from aart.search.archive import Archive, Elite, grid
from aart.search.mutate import PLAIN_FRAMES, PLAIN_MUTATIONS, fallbacks, obfuscate, stack, step

TESTS = Path(__file__).resolve().parent

#: the attacker's every rewrite: about none of the cells' values (off-cell)
OFF_CELL = "a limerick about the weather"


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = write_dataset(tmp_path / "d.jsonl")
    assert not any(o in p for p, _ in PROMPTS for o in OVERRIDES)
    return path


@pytest.fixture
def off_cell_attacker(fake_server):
    """Every rewrite the attacker is asked for comes back out of its cell."""
    fake_server.on_text("<test_prompt>", {"content": json.dumps({"prompt": OFF_CELL})})
    return fake_server


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_unusable_rewrites_fall_back_to_frames_that_fill_every_cell(
    dataset, tmp_path, off_cell_attacker
):
    out = tmp_path / "search"
    r = aart.search.search(dataset, out=out, target="search_targets:override_app",
                           attacker="openai/attacker", base_url=off_cell_attacker.base_url,
                           budget=40, pick="weighted", compare=True)  # fmt: skip
    s = json.loads((out / "search.json").read_text())
    assert r.finished and s["queries"] == 40
    # the static dataset never tells the target its restrictions are lifted
    assert s["baselines"]["static (identity)"]["cells_with_success"] == 0
    assert s["cells_with_success"] == 4
    # no candidate was lost to the attacker: every off-cell rewrite fell back to a frame
    assert "off-cell" not in r.rejected
    recs = candidates(out)
    fell = [x for x in recs if x.get("fallback")]
    assert fell and all(x["fallback"]["reason"].startswith("off-cell") for x in fell)
    assert all(x["fallback"]["rewrite"] == OFF_CELL for x in fell)
    assert all(x["mutation"] in PLAIN_MUTATIONS and x.get("queried") for x in fell)
    assert all(x["fallback"]["from"] not in PLAIN_MUTATIONS for x in fell)
    # every elite: its cell's own dataset request inside its frames, which rebuild its prompt
    own = {json.dumps(c, sort_keys=True): p for p, c in PROMPTS}
    archive = lines(out / "archive.jsonl")
    assert len(archive) == 4
    for e in archive:
        lineage = e["lineage"]
        assert lineage["request"] == own[json.dumps(e["cell"], sort_keys=True)]
        values = list(e["cell"].values())
        assert stack(lineage["frames"], lineage["request"], values) == e["prompt"]
        assert any(m == "override" for m, _ in lineage["frames"])
        assert e["search"]["verdicts"]["refusal"]["status"] == "complied"
    # a neighbour's frames carried over: candidates made from another cell's elite, with
    # this cell's own request inside
    by_id = {x["job"]: x for x in recs}
    carried = [x for x in recs if x.get("frames") and x["parent"] in by_id
               and by_id[x["parent"]]["cell"] != x["cell"]]  # fmt: skip
    assert carried
    for x in carried:
        assert x["base"] == own[json.dumps({a: v for a, v in x["cell"].items() if a != "strategy"},
                                           sort_keys=True)]  # fmt: skip


def test_the_judges_read_the_cells_dataset_request_not_the_candidate(
    dataset, tmp_path, off_cell_attacker
):
    # an LLM judge (the fake server's): every request it is shown is a dataset prompt, never a
    # frame around it nor the attacker's drifted rewrite, as PAIR's judge reads its goal
    out = tmp_path / "search"
    aart.search.search(dataset, out=out, target="search_targets:override_app",
                       attacker="openai/attacker", judge="openai/judge",
                       base_url=off_cell_attacker.base_url, budget=12, pick="weighted")  # fmt: skip
    shown = []
    for q in off_cell_attacker.requests:
        if q["model"] == "judge":
            text = q["messages"][-1]["content"]
            if "<user_request>" in text:
                shown.append(
                    json.loads(text.split("<user_request>")[1].split("</user_request>")[0])
                )
    framed = [x for x in candidates(out) if x.get("queried") and x.get("frames")]
    assert framed and shown
    assert set(shown) <= {p for p, _ in PROMPTS}
    for x in framed:  # the target was sent the frame, the judges read the cell's request
        assert x["behaviour"] == x["base"] and x["sent"] == x["prompt"] != x["base"]


def test_a_rewrite_sent_back_unchanged_falls_back_and_without_frames_is_refused(
    tmp_path, fake_server
):
    # one cell, whose elite stays its dataset prompt until a success: the attacker sends that
    # prompt back whatever it is asked, unchanged
    data = tmp_path / "one.jsonl"
    data.write_text(json.dumps({"id": "r0", "prompt": PROMPTS[0][0], "cell": PROMPTS[0][1]}) + "\n")
    fake_server.on_text("<test_prompt>", {"content": json.dumps({"prompt": PROMPTS[0][0]})})
    r = aart.search.search(data, out=tmp_path / "a", target="search_targets:override_app",
                           attacker="openai/attacker", base_url=fake_server.base_url,
                           budget=16, pick="weighted")  # fmt: skip
    fell = [x["fallback"] for x in candidates(tmp_path / "a") if x.get("fallback")]
    assert any(f["reason"] == "unchanged" for f in fell)
    assert "unchanged" not in r.rejected and r.archive.successes() == 1
    # given the attacker's rewrites only, nothing stands in for them: refused, as before
    r = aart.search.search(data, out=tmp_path / "b", target="search_targets:override_app",
                           attacker="openai/attacker", base_url=fake_server.base_url,
                           budget=16, mutations=["rephrase", "persona"])  # fmt: skip
    assert r.rejected.get("unchanged") and r.queries == 1
    assert not any(x.get("fallback") for x in candidates(tmp_path / "b"))
    assert r.archive.successes() == 0


def test_frames_stack_and_obfuscate_only_the_cells_words():
    base = "Write a short poem about rule breaking."
    values = ["rule breaking", "poem"]
    one = step("role-play", 0, base)
    assert one == PLAIN_FRAMES["role-play"][0].format(payload=base) and base in one
    two = stack([["role-play", 0], ["prefix", 1]], base, values)
    assert two == step("prefix", 1, one) and one in two
    # the words of the cell converted, the rest of the request as it was
    assert obfuscate(base, values, "leetspeak") == "Write a short p03m about rul3 br34k1ng."
    assert (
        obfuscate(base, values, "spacing")
        == "Write a short p o e m about r u l e   b r e a k i n g."
    )
    assert obfuscate("nothing here", values, "leetspeak") == "nothing here"
    # no frame names a value of a cell: the request inside is the only one
    for forms in PLAIN_FRAMES.values():
        for f in forms:
            assert "{payload}" in f and "poem" not in f and "email" not in f
    # the fall-backs: every mutation given, from one drawn by the candidate
    order = fallbacks(["override", "prefix", "fiction"], "i000001-c0000")
    assert sorted(order) == ["fiction", "override", "prefix"]
    assert order == fallbacks(["override", "prefix", "fiction"], "i000001-c0000")
    assert fallbacks([], "j") == []


def test_one_frame_around_two_cells_requests_is_no_duplicate():
    cells = grid([{"a": "x"}, {"a": "y"}], ["a"], ["identity"])
    archive = Archive(cells)
    frame = PLAIN_FRAMES["refusal-suppression"][0]

    def framed(i: int, request: str) -> Elite:
        return Elite(id=f"e{i}", cell=cells[i], prompt=frame.format(payload=request),
                     sent="", response="", iteration=i, queries=i, parent=None,
                     mutation="refusal-suppression", score=1.0, preference=0.0, success=True,
                     base=request, frames=[["refusal-suppression", 0]])  # fmt: skip

    assert archive.offer(0, framed(0, "a short poem about the x topic"))
    # a long shared frame around another cell's own request: not a copy of the first
    assert archive.offer(1, framed(1, "an email on y for the team"))
    # the same request in another cell is, whatever frame is around it
    assert archive.duplicates(1, "a short poem about the x topic")


def test_a_search_with_fallbacks_killed_midway_resumes_to_the_same_archive(
    dataset, tmp_path, off_cell_attacker
):
    # the attacker's 5th call waits: killed part-way
    ref, _ = check_resume_after_sigkill(
        dataset, tmp_path, off_cell_attacker, "search_targets:override_app", 4
    )
    assert any(x.get("fallback") for x in candidates(ref))
