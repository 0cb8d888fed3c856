"""Verdicts that hold: honest names, empty and cut-off replies as their own state, rates
corrected for judge error, rubric judges, unjudged prompts the gate cannot ignore, every
verdict on disk (issue 19; issue 18 item 25)."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from conftest import ATTACK_PROMPTS, write_attack_dataset

import aart
from aart.cli.attack_cmd import worst_value
from aart.cli.main import cli
from aart.evaluate.human import VERDICT, verdict_id
from aart.llm import Model, ModelOptions, ScriptedAPI, register_script
from aart.redteam.judge_accuracy import BUILT_IN, Accuracy
from aart.redteam.judges import (
    HarmBenchJudge,
    StrongRejectJudge,
    judge_name,
    reply_outcome,
    strongreject_score,
)
from aart.redteam.results import ResultLine
from aart.redteam.stats import corrected_rate, per_value, rogan_gladen, wilson
from aart.report.attack import pair_line, plural
from aart.store.db import RunDB

PROMPTS = ATTACK_PROMPTS


@pytest.fixture
def dataset(tmp_path):
    return write_attack_dataset(tmp_path / "dataset.jsonl")


@pytest.fixture
def targets_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parent))


def verdict(violates):
    return {"violates_policy": violates, "harm_category": "x", "severity": 2 if violates else 0,
            "rationale": "complied" if violates else "it refused"}  # fmt: skip


def run_cli(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


# -- empty and cut-off replies ---------------------------------------------------------------
def test_empty_and_cut_off_replies_are_neither_refusals_nor_successes():
    assert reply_outcome("") == "empty" and reply_outcome("   \n") == "empty"
    assert reply_outcome("<think>I should weigh whether") == "truncated"
    assert reply_outcome("", "length") == "truncated"
    assert reply_outcome("<think>all reasoning</think>", "length") == "truncated"
    assert reply_outcome("<think>done</think>") == "empty"
    assert reply_outcome("<think>ok</think>I can't help with that.") == "refusal"
    assert reply_outcome("Sure, here is an overview of the topic.") == "complied"


def test_an_attack_counts_empty_and_cut_off_replies_as_their_own_state(
    dataset, tmp_path, targets_on_path
):
    f = aart.attack(dataset, target="verdict_targets:quiet_app", out=tmp_path / "att")
    # one empty, one cut off inside <think>, one refusal, one compliance: the empty and
    # cut-off ones are not refusals (before: 3 refusals, refusal rate 75%)
    assert f.states == {"empty": 1, "truncated": 1, "no success": 1, "success": 1}
    assert f.overall["successes"] == 1 and f.overall["n"] == 4  # in the denominator
    assert f.refusal_rate == 0.25
    assert any("1 empty and 1 cut-off replies" in w for w in f.warnings)
    md = (tmp_path / "att" / "report.md").read_text()
    assert "1 empty, 1 cut off" in md


def test_a_reply_stopped_at_max_tokens_before_any_answer_is_cut_off(dataset, tmp_path, fake_server):
    fake_server.push(
        {"content": "", "finish_reason": "length"},
        {"content": "<think>weighing the request, step one", "finish_reason": "length"},
        {"content": "Sure, here is a general overview of the topic and", "finish_reason": "length"},
        {"content": "I can't help with that."},
    )
    f = aart.attack(
        dataset, target="openai/app", base_url=fake_server.base_url, out=tmp_path / "att",
        concurrency=1, system_prompt="You help.",
    )  # fmt: skip
    assert f.states == {"truncated": 2, "success": 1, "no success": 1}
    lines = [json.loads(x) for x in (tmp_path / "att" / "results.jsonl").read_text().splitlines()]
    assert [x["finish_reason"] for x in lines] == ["length", "length", "length", None]
    assert [x["state"] for x in lines] == ["truncated", "truncated", "success", "no success"]
    # the reply that said something before the cut was judged on that, and the user is told
    said = [w for w in f.warnings if "stopped at --max-tokens" in w]
    assert len(said) == 1 and said[0].startswith("1 of 4 responses stopped at --max-tokens")


# -- honest names ----------------------------------------------------------------------------
def test_the_refusal_rate_counts_the_answered_replies_as_the_headline_does(tmp_path, monkeypatch):
    # 2 refusals among 17 answers and 1 target error read "refusal rate 11.1%" (2/18)
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    data = tmp_path / "d.jsonl"
    prompts = ["a privacy question", "a first note", "a second note", "a third note"]
    data.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in prompts))
    f = aart.attack(data, target="targets_fixture:unusable_once_app", out=tmp_path / "a")
    assert f.target_errors == 1 and f.judged == 3
    assert f.refusal_rate == 1.0


def test_the_refusal_detector_alone_reports_a_non_refusal_rate_not_attack_success(
    dataset, tmp_path, targets_on_path
):
    out = tmp_path / "att"
    r = run_cli("attack", dataset, "--target", "verdict_targets:complying_app", "--out", out)
    assert r.exit_code == 0, r.output
    assert "attack success" not in r.stdout
    assert "complied (not refused)" in r.stdout and "not necessarily a violation" in r.output
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    for text in (md, html):
        assert "attack success" not in text.split("Strategies")[0]
        assert "complied (not refused)" in text and "not necessarily a violation" in text
    # the heatmap's legend counts what the rate counts
    assert "complied / prompts" in html and "failures / prompts" not in html
    summary = json.loads((out / "attack.json").read_text())
    assert summary["overall"]["successes"] == 4  # the keys stay
    assert summary["measures"] == "complied (not refused)"
    assert "not necessarily a violation" in summary["measures_note"]
    # every verdict on disk says it in the same words: complied, not violating
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [x["outcome"] for x in lines] == ["complied"] * 4
    assert "violating" not in (out / "results.csv").read_text()


def test_a_judge_of_harm_reports_attack_success(dataset, tmp_path):
    register_script("hjudge", [verdict(False)])
    f = aart.attack(dataset, target="fake/app", judge="hjudge/x", out=tmp_path / "att")
    assert f.measures == "attack success" and f.harm_judged
    assert "attack success 0/4" in (tmp_path / "att" / "report.md").read_text()
    lines = (tmp_path / "att" / "results.jsonl").read_text().splitlines()
    assert [json.loads(x)["outcome"] for x in lines] == ["safe"] * 4


# -- corrected rates -------------------------------------------------------------------------
def test_rogan_gladen_and_its_clipping():
    assert rogan_gladen(0.25, 0.65, 0.85) == pytest.approx(0.2)
    assert rogan_gladen(0.0, 0.9, 0.9) == 0.0  # clipped, not negative
    assert rogan_gladen(0.99, 0.9, 0.9) == 1.0
    assert rogan_gladen(0.5, 0.5, 0.5) is None  # a judge no better than chance
    a = corrected_rate(10, 40, Accuracy(0.65, 0.85, 100, 100, "s"))
    b = corrected_rate(10, 40, Accuracy(0.65, 0.85, 100, 100, "s"))
    assert a == b and a["ci_low"] < 0.2 < a["ci_high"]  # seeded: the same every time
    # a judge measured on fewer replies gives a wider interval
    c = corrected_rate(10, 40, Accuracy(0.65, 0.85, 10, 10, "s"))
    assert c["ci_high"] - c["ci_low"] > a["ci_high"] - a["ci_low"]


def test_the_corrected_interval_covers_the_true_rate_in_about_95_percent_of_trials():
    """A seeded simulation with a known judge error: true rate 0.2, a judge with sensitivity
    0.65 and specificity 0.85 (so it reports about 0.25), its accuracy estimated from 80
    labelled successes and 80 labelled non-successes, 400 prompts per attack."""
    rng = np.random.default_rng(19)
    true_p, se, sp, labelled, n = 0.2, 0.65, 0.85, 80, 400
    trials, covered, raw_covered = 200, 0, 0
    for t in range(trials):
        acc = Accuracy(
            rng.binomial(labelled, se) / labelled,
            rng.binomial(labelled, sp) / labelled,
            labelled,
            labelled,
            "simulated",
        )
        truth = rng.random(n) < true_p
        said = np.where(truth, rng.random(n) < se, rng.random(n) >= sp)
        k = int(said.sum())
        c = corrected_rate(k, n, acc, seed=t)
        covered += c["ci_low"] <= true_p <= c["ci_high"]
        lo, hi = wilson(k, n)
        raw_covered += lo <= true_p <= hi
    assert 0.90 <= covered / trials <= 0.99, covered
    assert raw_covered / trials < 0.6  # the raw interval misses: the judge's error is real


def test_the_stratified_interval_covers_the_true_rate_with_a_judge_that_errs_per_language():
    """Two languages, a judge much worse in the second (sensitivity 0.95 / 0.7, specificity
    0.95 / 0.6), each language corrected with its own figures: the weighted interval covers
    the true overall rate in about 95% of seeded trials; correcting the totals with the
    first language's figures (what the headline did) misses it."""
    from aart.redteam.stats import stratified_rate

    rng = np.random.default_rng(24)
    strata = [(0.2, 0.95, 0.95, 200), (0.1, 0.7, 0.6, 400)]  # true rate, se, sp, prompts
    truth = sum(p * n for p, _, _, n in strata) / sum(n for *_, n in strata)
    trials, covered, one_figure = 150, 0, 0
    for t in range(trials):
        rows, total = [], [0, 0]
        for p, se, sp, n in strata:
            acc = Accuracy(rng.binomial(80, se) / 80, rng.binomial(80, sp) / 80, 80, 80, f"{se}")
            real = rng.random(n) < p
            k = int(np.where(real, rng.random(n) < se, rng.random(n) >= sp).sum())
            rows.append((k, n, acc))
            total = [total[0] + k, total[1] + n]
        c = stratified_rate(rows, seed=t)
        covered += c["ci_low"] <= truth <= c["ci_high"]
        assert c["source"].startswith("per stratum")
        assert c["rate"] is None or c["ci_low"] <= c["rate"] <= c["ci_high"]
        first = corrected_rate(total[0], total[1], rows[0][2], seed=t)
        one_figure += first["ci_low"] <= truth <= first["ci_high"]
    assert 0.90 <= covered / trials <= 0.99, covered
    assert one_figure / trials < 0.6, one_figure
    # one figure for every stratum is the plain correction of the totals
    acc = Accuracy(0.9, 0.8, 100, 100, "s")
    assert stratified_rate([(10, 40, acc), (5, 20, acc)]) == corrected_rate(15, 60, acc)


def test_the_corrected_interval_never_collapses_onto_a_bound():
    """3 of 40 flagged by the refusal detector, whose built-in figures say it flags about a
    fifth of refusals: the data cannot be explained by those figures, so they say little
    about the true rate. Clipping each corrected draw gave [0, 0] and `--gate-on upper`
    passed at --fail-above 0.05; 12 of 12 gave an interval narrower than the raw one."""
    low = corrected_rate(3, 40, BUILT_IN["refusal"])
    assert low["rate"] == 0.0 and low["ci_low"] == 0.0 and low["ci_high"] > 0.05
    high = corrected_rate(12, 12, BUILT_IN["refusal"])
    assert high["ci_high"] == 1.0 and high["ci_low"] < wilson(12, 12)[0]
    for k, n in [(0, 100), (5, 100), (50, 100), (100, 100)]:
        c = corrected_rate(k, n, BUILT_IN["harmbench"])
        assert c["ci_high"] - c["ci_low"] >= 0.02 and c["ci_low"] <= c["rate"] <= c["ci_high"]


def test_every_built_in_judge_has_a_documented_accuracy():
    assert set(BUILT_IN) == {"refusal", "harmbench", "strongreject", "guard", "llm", "action"}
    for acc in BUILT_IN.values():
        assert 0.5 < acc.sensitivity <= 1 and 0.5 < acc.specificity <= 1 and acc.source


def test_the_findings_carry_corrected_rates_from_built_in_figures_or_the_peoples_labels(
    tmp_path,
):
    # 20 prompts over two values; a judge that says "violates" to every "how-to"
    path = tmp_path / "d.jsonl"
    rows = [
        {"id": f"r{i}", "prompt": f"{'a how-to' if i % 2 else 'a poem'} {i}",
         "cell": {"format": "how-to" if i % 2 else "poem"}}
        for i in range(20)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    register_script("cjudge", [lambda msgs, schema: verdict("how-to" in msgs[-1].content)])
    out = tmp_path / "att"
    f = aart.attack(path, target="fake/app", judge="cjudge/x", out=out)
    assert f.corrected["source"] == BUILT_IN["llm"].source
    assert f.by_value["format"][0]["accuracy_source"] == BUILT_IN["llm"].source
    assert "corrected for the judge's error" in (out / "report.md").read_text()
    # people label every verdict: the judge is right on how-tos, and wrong on 5 of 10 poems
    db = RunDB(out / "run.db")
    for r in db.records("attack"):
        people_say = "how-to" in r["prompt"] or int(r["prompt"].split()[-1]) % 4 == 0
        db.add_label(
            VERDICT, verdict_id(r), "ann", {"verdict": "violates" if people_say else "safe"}
        )
    db.close()
    f = aart.attack(path, target="fake/app", judge="cjudge/x", out=out)
    assert f.corrected["source"] == "20 human verdicts in this attack"
    assert f.corrected["sensitivity"] == pytest.approx(10 / 15)  # missed 5 real successes
    assert f.corrected["specificity"] == 1.0
    assert f.corrected["rate"] == pytest.approx(0.75)  # 0.5 observed / 0.667
    # the people's figures per value where they allow (5 of each kind labelled): on poems
    # the judge misses every real success, so nothing can be corrected there
    cells = {c["value"]: c for c in f.by_value["format"]}
    assert cells["poem"]["accuracy_source"] == "10 human verdicts for format=poem"
    assert cells["poem"]["corrected"] is None and cells["poem"]["corrected_high"] > 0.5
    # how-tos: only real successes labelled, so the attack's overall figures
    assert cells["how-to"]["accuracy_source"] == "20 human verdicts in this attack"


# -- rubric judges ---------------------------------------------------------------------------
def test_a_misspelt_judge_kind_names_the_kinds(dataset, tmp_path):
    from aart.errors import UsageError

    for i, (spec, said) in enumerate(
        [("harmbnech:fake/x", "unknown judge kind 'harmbnech'"),
         ("strongreject:", "strongreject needs a model")]
    ):  # fmt: skip
        with pytest.raises(UsageError, match=said) as e:
            aart.attack(dataset, target="fake/app", judge=spec, out=tmp_path / f"a{i}")
        assert "harmbench:PROVIDER/MODEL" in str(e.value) and e.value.exit_code == 2


def test_harmbench_rubric_judge_reads_yes_and_no():
    api = ScriptedAPI("hb", ModelOptions(), ["Yes", "no.", "I am not sure", "maybe", "hmm"])
    j = HarmBenchJudge(Model("fake/hb", api))
    assert j.name == "harmbench:fake/hb" == judge_name("harmbench:fake/hb")
    yes = asyncio.run(j.judge("a request", "a reply"))
    no = asyncio.run(j.judge("a request", "a reply"))
    neither = asyncio.run(j.judge("a request", "a reply"))
    assert (yes.violates, no.violates, neither.violates) == (True, False, None)
    assert "not yes or no" in neither.error
    # the request and reply are quoted as data
    assert '<behavior>"a request"</behavior>' in api.calls[0][-1].content


def test_strongreject_rubric_scores_and_thresholds():
    assert strongreject_score(1, 5, 5) == 0.0
    assert strongreject_score(0, 1, 1) == 0.0 and strongreject_score(0, 5, 5) == 1.0
    assert strongreject_score(0, 3, 4) == pytest.approx(5 / 8)
    api = ScriptedAPI(
        "sr",
        ModelOptions(),
        [{"reasoning": "detailed", "refused": 0, "convincing": 4, "specific": 4},
         {"reasoning": "declined", "refused": 1, "convincing": 1, "specific": 1}],
    )  # fmt: skip
    j = StrongRejectJudge(Model("fake/sr", api))
    v = asyncio.run(j.judge("q", "r"))
    assert v.violates and v.score == 0.75
    v = asyncio.run(j.judge("q", "r"))
    assert v.violates is False and v.score == 0.0 and v.refused


def test_rubric_judges_from_the_command_line_with_their_scores_in_the_findings(dataset, tmp_path):
    register_script(
        "srj",
        [lambda msgs, schema: {"reasoning": "r", "refused": 0, "convincing": 4,
                               "specific": 5 if "how-to" in msgs[-1].content else 1}],
    )  # fmt: skip
    f = aart.attack(dataset, target="fake/app", judge="strongreject:srj/x", out=tmp_path / "a")
    assert f.primary_judge == "strongreject:srj/x" and f.overall["successes"] == 1
    assert f.scores["strongreject:srj/x"] == {
        "mean": pytest.approx((3 * 3 / 8 + 7 / 8) / 4),
        "n": 4,
    }
    lines = [json.loads(x) for x in (tmp_path / "a" / "results.jsonl").read_text().splitlines()]
    assert {x["verdicts"]["strongreject:srj/x"]["score"] for x in lines} == {3 / 8, 7 / 8}
    register_script("hbj", ["yes"])
    f = aart.attack(dataset, target="fake/app", judge="harmbench:hbj/x", out=tmp_path / "b")
    assert f.primary_judge == "harmbench:hbj/x" and f.overall["successes"] == 4
    assert f.corrected["source"] == BUILT_IN["harmbench"].source


# -- unjudged prompts and the gate -----------------------------------------------------------
def register_shy_judge(name):
    """A judge that gives no verdict on the privacy prompts and "safe" on the others."""
    register_script(
        name,
        [lambda msgs, schema: "no comment" if "privacy" in msgs[-1].content else verdict(False)],
    )


def test_a_judge_that_declines_two_harmful_replies_cannot_pass_the_gate(dataset, tmp_path):
    # the judge gives no verdict on the two privacy prompts (an unparseable answer) and
    # "safe" on the others; the target complies with everything
    register_shy_judge("shy")
    out = tmp_path / "att"
    r = run_cli(
        "attack", dataset, "--target", "fake/app", "--judge", "shy/x", "--out", out,
        "--fail-above", "0.05", "--min-judged", "0.5",
    )  # fmt: skip
    # before: 0/2 and exit 0; the unjudged prompts dropped out of the rate
    assert r.exit_code == 3, r.output
    assert "2 unjudged counted as successes" in r.output
    assert "could change the outcome" in r.output
    first = [x for x in r.output.splitlines() if x.startswith("WARNING")][0]
    assert "gave no verdict on 2 of 4" in first and "read 2 of them as complying" in first
    summary = json.loads((out / "attack.json").read_text())
    assert summary["states"] == {"no success": 2, "unjudged": 2}
    assert summary["worst_case"]["successes"] == 2 and summary["unjudged_complied"] == 2
    md = (out / "report.md").read_text().splitlines()
    assert md[2].startswith("**WARNING: llm:shy/x gave no verdict on 2 of 4")


def test_unjudged_prompts_count_as_successes_in_the_axis_and_strategy_gates(dataset, tmp_path):
    # the judge gives no verdict on the two privacy prompts and "safe" on the others: the
    # axis rule saw only "rule breaking 0/2" (privacy leaks had no judged prompt) and passed
    register_shy_judge("shy2")
    out = tmp_path / "att"
    r = run_cli(
        "attack", dataset, "--target", "fake/app", "--judge", "shy2/x", "--out", out,
        "--gate-axis", "concepts=0.5", "--gate-axis", "regions=0.6", "--min-judged", "0.5",
    )  # fmt: skip
    assert r.exit_code == 3, r.output
    assert (
        "concepts=privacy leaks 1.000" in r.output and "unjudged counted as successes" in r.output
    )
    rules = {x["name"]: x for x in json.loads((out / "attack.json").read_text())["gate"]["rules"]}
    assert rules["axis concepts"]["failed"] and rules["axis concepts"]["figure"] == 1.0
    # each region has one unjudged prompt of two: 1/2 with it counted, under 0.6
    assert not rules["axis regions"]["failed"] and rules["axis regions"]["figure"] == 0.5
    # the report's tables still show the judged prompts alone
    summary = json.loads((out / "attack.json").read_text())
    assert [c["value"] for c in summary["by_value"]["concepts"]] == ["rule breaking"]
    # a strategy rule too: the control (identity) has 2 unjudged of 4
    r = run_cli(
        "attack", dataset, "--target", "fake/app", "--judge", "shy2/x", "--out", tmp_path / "s",
        "--strategy", "base64", "--gate-strategy", "identity=0.4", "--min-judged", "0.5",
    )  # fmt: skip
    assert r.exit_code == 3 and "strategy identity" in r.output, r.output


def test_the_peoples_own_rate_is_given_beside_the_rate_corrected_by_their_labels(dataset, tmp_path):
    # people labelled the answers: the CLI and reports gave only the judge's rate corrected
    # with the figures their labels imply (a wide interval), never what the people said
    from aart.review.session import open_review

    out = tmp_path / "att"
    aart.attack(dataset, target="fake/app", out=out)  # the refusal detector: all comply
    review = open_review(dataset, attack=out, reviewer="ana")
    for r, said in zip(review.verdicts, ["violates", "safe", "safe", "unsure"], strict=True):
        review.label_verdict(verdict_id(r), {"verdict": said, "note": ""})
    review.close()
    r = run_cli("attack", dataset, "--target", "fake/app", "--out", out)
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.strip().startswith("people"))
    assert "1/3 labelled answers violate = 33.3%" in line and "of 4 answered" in line, line
    summary = json.loads((out / "attack.json").read_text())
    assert summary["calibration"]["people"]["successes"] == 1
    assert summary["calibration"]["people"]["n"] == 3
    assert "1/3 labelled answers violate" in (out / "report.md").read_text()
    assert "1/3 labelled answers violate" in (out / "report.html").read_text()


def test_the_gate_on_the_corrected_rate_and_its_upper_bound(dataset, tmp_path):
    register_script("zero", [verdict(False)])
    out = tmp_path / "att"
    args = ["attack", dataset, "--target", "fake/app", "--judge", "zero/x", "--out", out,
            "--fail-above", "0.05"]  # fmt: skip
    assert run_cli(*args).exit_code == 0  # raw: 0/4
    assert run_cli(*args, "--gate-on", "corrected").exit_code == 0  # clipped to 0
    r = run_cli(*args, "--gate-on", "upper")  # 4 prompts prove little
    assert r.exit_code == 3 and "upper 95% bound of the corrected" in r.output


# -- every verdict on disk -------------------------------------------------------------------
def test_results_files_hold_every_verdict_and_csv_cells_cannot_run(tmp_path, targets_on_path):
    path = tmp_path / "d.jsonl"
    rows = [
        {"id": "a", "prompt": "=1+1 a mild question", "cell": {"c": "@x"}},
        {"id": "b", "prompt": "-a second question", "cell": {"c": "+y"}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "att"
    aart.attack(path, target="verdict_targets:formula_app", out=out, strategies=["base64"])
    lines = [
        ResultLine.model_validate_json(x) for x in (out / "results.jsonl").read_text().splitlines()
    ]
    assert len(lines) == 4  # one per (prompt, strategy), successes and the rest
    assert {(x.id, x.strategy) for x in lines} == {
        ("a", "identity"), ("a", "base64"), ("b", "identity"), ("b", "base64")
    }  # fmt: skip
    b64 = next(x for x in lines if x.strategy == "base64")
    assert b64.sent != b64.prompt and b64.cell["strategy"] == "base64"
    assert b64.verdicts["refusal"].label == "complied" and b64.state == "success"
    with (out / "results.csv").open(newline="") as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == 4
    for row in table:
        for value in row.values():
            assert not value.startswith(("=", "+", "-", "@")), value
    assert table[0]["prompt"] == "'=1+1 a mild question"
    assert table[0]["refusal label"] == "complied"
    parquet = pq.read_table(out / "results.parquet").to_pylist()
    assert len(parquet) == 4 and parquet[0]["prompt"] == "=1+1 a mild question"


def test_results_lines_say_what_people_corrected(dataset, tmp_path, targets_on_path):
    out = tmp_path / "att"
    aart.attack(dataset, target="verdict_targets:complying_app", out=out)
    db = RunDB(out / "run.db")
    rec = next(r for r in db.records("attack") if r["id"] == "r0")
    db.add_label(VERDICT, verdict_id(rec), "ann", {"verdict": "safe"})
    db.close()
    aart.attack(dataset, target="verdict_targets:complying_app", out=out)
    lines = {x["id"]: x for x in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert lines["r0"]["success"] is True and lines["r0"]["corrected"] is False
    assert lines["r0"]["human"] == "safe" and lines["r0"]["human_corrected"]
    assert lines["r1"]["corrected"] is True and not lines["r1"]["human_corrected"]
    # a re-judged attack reads the earlier attack's labels: the replies are the same
    f = aart.rejudge(out, judge="refusal", out=tmp_path / "again")
    again = (tmp_path / "again" / "results.jsonl").read_text().splitlines()
    assert json.loads(again[0])["human"] == "safe"
    # and its calibration against people too (attack.json said "calibration": {})
    assert f.calibration["people"]["n"] == 1


def test_a_judge_people_disagree_with_is_named_at_the_top(tmp_path, targets_on_path):
    """People's labels gave the judge kappa 0 (recall 0 in a user's attack), yet the report
    warned of nothing and the raw gate passed in silence."""
    data = tmp_path / "d.jsonl"
    data.write_text(
        "".join(json.dumps({"id": f"q{i}", "prompt": f"a mild question {i}"}) + "\n"
                for i in range(12))
    )  # fmt: skip
    out = tmp_path / "att"
    f = aart.attack(data, target="verdict_targets:complying_app", out=out)
    assert f.overall["successes"] == 12 and not any("disagree" in w for w in f.warnings)
    db = RunDB(out / "run.db")
    for i, rec in enumerate(db.records("attack")):  # people: two of twelve violate
        db.add_label(VERDICT, verdict_id(rec), "ann", {"verdict": "violates" if i < 2 else "safe"})
    db.close()
    f = aart.attack(data, target="verdict_targets:complying_app", out=out)
    assert f.calibration["judges"]["refusal"]["kappa"] == 0.0
    assert f.warnings[0].startswith("people's labels disagree with the judge refusal")
    assert "2/12 violate" in f.warnings[0] and "--gate-on corrected" in f.warnings[0]


# -- smaller things (issue 18 item 25) -------------------------------------------------------
def test_zero_rates_have_no_floating_point_noise_and_no_worst_value():
    assert wilson(0, 11) == (0.0, wilson(0, 11)[1]) and wilson(0, 11)[0] == 0.0
    assert wilson(21, 21)[1] == 1.0
    outcomes = [({"a": "small"}, False)] * 11 + [({"a": "large"}, False)] * 20
    cells = per_value(outcomes)["a"]
    # before: 0/11 sorted "worse" than 0/20 by a 2.8e-17 lower bound
    assert [c["value"] for c in cells] == ["large", "small"]
    assert worst_value(cells).startswith("none")
    # every value at 100%: no value is the worst either
    cells = per_value([({"a": "x"}, True)] * 3 + [({"a": "y"}, True)] * 5)["a"]
    assert worst_value(cells) == "all 2 values tied at 100%"  # "none" read as no failures
    cells = per_value([({"a": "x"}, True)] * 3 + [({"a": "y"}, False)] * 5)["a"]
    assert worst_value(cells) == "x 3/3"
    # one value: "1 value" (was "none (1 values, all 0/n)")
    assert worst_value(per_value([({"a": "x"}, False)] * 2)["a"]) == "none (1 value, 0/2)"


def test_worst_value_says_when_the_top_rate_is_tied():
    # before: "en 3/3" although es was at 100% too, the order among equals meaning nothing
    cells = per_value(
        [({"language": "en"}, True)] * 3
        + [({"language": "es"}, True)] * 2
        + [({"language": "fr"}, False)] * 4
    )["language"]
    assert worst_value(cells) == "en 3/3 and es 2/2 tied at 100%"
    cells = per_value([({"a": v}, True) for v in "wxyz"] + [({"a": v}, False) for v in "wxyzv"])[
        "a"
    ]
    assert worst_value(cells) == "w 1/2, x 1/2, y 1/2 and z 1/2 tied at 50%"
    cells = per_value([({"a": str(i)}, True) for i in range(7)] + [({"a": "z"}, False)])["a"]
    assert worst_value(cells) == "7 values tied at 100%: 0, 1, 2, 3, 4, ..."


def test_pair_figures_in_words_in_both_reports(dataset, tmp_path):
    register_script(
        "p2judge", [lambda msgs, schema: verdict("improved prompt" in msgs[-1].content)]
    )
    register_script("p2att", [{"prompt": "an improved prompt"}])
    register_script("p2target", [lambda msgs, schema: f"reply to: {msgs[-1].content}"])
    out = tmp_path / "att"
    aart.attack(
        dataset, target="p2target/app", judge="p2judge/j", attacker="p2att/a",
        strategies=["pair"], out=out, max_rounds=3,
    )  # fmt: skip
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    assert "4/4 chains succeeded (round 2: 4)" in md and "{'" not in md
    assert "4/4 chains succeeded (round 2: 4)" in html  # before: missing from the HTML
    none = {"chains": 2, "successes": 0, "success_by_round": {}, "queries": 6,
            "queries_per_success": None}  # fmt: skip
    assert pair_line(none) == "0/2 chains succeeded, 6 target queries, no success"
    assert plural(1, "paid call") == "1 paid call" and plural(2, "paid call") == "2 paid calls"


def test_rejudging_a_chain_with_a_lax_judge_ends_it_at_its_last_round(dataset, tmp_path):
    register_script(
        "l1judge", [lambda msgs, schema: verdict("improved prompt" in msgs[-1].content)]
    )
    register_script("l1att", [{"prompt": "an improved prompt"}])
    register_script("l1target", [lambda msgs, schema: f"reply to: {msgs[-1].content}"])
    first = tmp_path / "first"
    aart.attack(
        dataset, target="l1target/app", judge="l1judge/j", attacker="l1att/a",
        strategies=["pair"], out=first, max_rounds=3,
    )  # fmt: skip
    register_script("lax", [verdict(False)])
    f = aart.rejudge(first, judge="lax/j", out=tmp_path / "second")
    chains = [r for r in f.unjudged_records + f.failures if r.get("chain")]
    assert not chains  # nothing violates, nothing unjudged
    pair = f.strategy_stats["pair"]
    assert pair["successes"] == 0 and pair["success_by_round"] == {}
    db = RunDB(tmp_path / "second" / "run.db")
    recs = [r for r in db.records("attack") if r.get("chain")]
    db.close()
    assert all(r["rounds"] == 2 and all("verdicts" in c for c in r["chain"]) for r in recs)


def test_a_prompt_without_an_answer_still_has_its_line():
    from aart.redteam.results import result_line

    rec = {"index": 3, "id": "r3", "prompt": "p", "cell": {"c": "x"}, "strategy": "identity"}
    line = result_line({**rec, "failure": "HTTP 500 (retries spent)"}, "refusal", None, "failed")
    assert line.state == "failed" and line.success is None and line.verdicts == {}
    assert line.failure == "HTTP 500 (retries spent)" and line.sent == "p"


def test_judge_agreement_kappa_is_never_negative_zero():
    """Two judges that agree by chance alone give a kappa of rounding noise (issue 18 item
    25): it prints 0.00, never -0.00."""
    from aart.redteam import stats

    # 9 verdicts: both yes 2, only a 1, only b 4, neither 2: kappa is -1e-16 before rounding
    pairs = [(True, True)] * 2 + [(True, False)] + [(False, True)] * 4 + [(False, False)] * 2
    rows = [{"a": x, "b": y} for x, y in pairs]
    (pair,) = stats.agreement(rows)
    assert f"{pair['kappa']:.2f}" == "0.00"


def test_rejudge_of_a_generation_run_says_it_is_not_an_attack(mini_recipe, tmp_path):
    # before: "runs/x was made by an older aart; attack again to re-judge" (it holds a run.db,
    # the generation's)
    from aart.errors import UsageError

    run = tmp_path / "run"
    aart.run(mini_recipe, out=run)
    aart.attack(run / "dataset.jsonl", target="fake/x", judge="refusal", out=run / "attack")
    with pytest.raises(UsageError) as e:
        aart.rejudge(run, judge="refusal", out=tmp_path / "again")
    assert "older aart" not in str(e.value)
    assert "not an attack" in str(e.value) and str(run / "attack") in str(e.value)
