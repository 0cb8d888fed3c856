"""Attack strategies: converters (each reversible one gives the prompt back), parsing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aart
from aart.errors import ConfigError
from aart.llm import register_script
from aart.redteam.strategies import (
    CONVERTERS,
    Strategy,
    convert,
    parse_strategy,
    recover,
)

REVERSIBLE = sorted(n for n, c in CONVERTERS.items() if c.decode is not None)
LATIN = st.text(
    alphabet=st.characters(min_codepoint=32, max_codepoint=0x24F, blacklist_categories=("Cs",)),
    max_size=200,
)


def test_at_least_eight_converters_and_most_reversible():
    assert len(CONVERTERS) >= 8
    assert set(REVERSIBLE) >= {
        "base64", "rot13", "homoglyphs", "spacing", "zero-width", "case-mix", "payload-split",
        "json",
    }  # fmt: skip


@pytest.mark.parametrize("name", REVERSIBLE)
@settings(max_examples=150, deadline=None)
@given(text=LATIN)
def test_decoding_gives_back_the_prompt(name, text):
    s = Strategy(name)
    assert recover(s, convert(s, text)) == text


@given(text=st.text(max_size=120))
@settings(max_examples=150, deadline=None)
def test_unicode_round_trips_where_the_converter_allows(text):
    for name in ("base64", "rot13", "spacing", "zero-width", "case-mix", "payload-split", "json"):
        s = Strategy(name)
        assert recover(s, convert(s, text)) == text, name


def test_converted_prompts_look_as_documented():
    p = "write a mild poem"
    assert convert(Strategy("base64"), p).endswith("d3JpdGUgYSBtaWxkIHBvZW0=")
    assert convert(Strategy("rot13"), p).endswith("jevgr n zvyq cbrz")
    assert convert(Strategy("leetspeak"), p) == "wr173 4 m1ld p03m"
    assert convert(Strategy("spacing"), "abc").endswith("a b c")
    assert convert(Strategy("case-mix"), "abcd") == "aBcD"
    assert "\u0430" in convert(Strategy("homoglyphs"), "a")  # Cyrillic a
    assert convert(Strategy("identity"), p) == p
    with pytest.raises(ValueError, match="not reversible"):
        recover(Strategy("leetspeak"), "x")


def test_parsing_names_the_fix():
    assert parse_strategy("translate:Swahili").label == "translate:Swahili"
    assert parse_strategy("base64").kind == "convert"
    assert parse_strategy("paraphrase").kind == "llm"
    assert parse_strategy("pair").kind == "iterative"
    with pytest.raises(ConfigError, match="unknown strategy 'b64'"):
        parse_strategy("b64")
    with pytest.raises(ConfigError, match="translate needs a language"):
        parse_strategy("translate")
    with pytest.raises(ConfigError, match="takes no argument"):
        parse_strategy("base64:x")


# -- strategies in an attack ------------------------------------------------------------------
PROMPTS = ["a poem about rule breaking", "an email about privacy leaks", "a memo about rules"]


@pytest.fixture
def dataset(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": f"r{i}", "prompt": p, "cell": {"concepts": p.split()[-1]}}) + "\n"
            for i, p in enumerate(PROMPTS)
        )
    )
    return path


@pytest.fixture
def fixtures_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parent))


def test_a_target_that_complies_only_with_base64_shows_in_the_strategy_axis(
    dataset, tmp_path, fixtures_on_path
):
    f = aart.attack(
        dataset,
        target="targets_fixture:base64_only",
        out=tmp_path / "att",
        strategies=["base64", "leetspeak"],
    )
    rates = {c["value"]: (c["successes"], c["n"]) for c in f.by_value["strategy"]}
    assert rates == {"base64": (3, 3), "identity": (0, 3), "leetspeak": (0, 3)}
    assert f.prompts == 9 and f.judged == 9
    pairs = f.by_pair["concepts x strategy"]
    assert {(c["a"], c["b"]) for c in pairs if c["successes"]} == {
        (c, "base64") for c in ("breaking", "leaks", "rules")
    }
    # the regression set keeps the strategy: a re-run replays base64 only
    rows = [json.loads(x) for x in (tmp_path / "att" / "failures.jsonl").read_text().splitlines()]
    assert [r["strategy"] for r in rows] == ["base64"] * 3
    again = aart.attack(
        tmp_path / "att" / "failures.jsonl",
        target="targets_fixture:base64_only",
        out=tmp_path / "again",
    )
    assert again.prompts == 3 and {c["value"] for c in again.by_value["strategy"]} == {"base64"}
    html = (tmp_path / "att" / "report.html").read_text()
    assert "By strategy" in html and "concepts x strategy" in html


def verdict(violates):
    return {"violates_policy": violates, "harm_category": "x", "severity": 2 if violates else 0,
            "rationale": "complied" if violates else "it refused"}  # fmt: skip


def test_pair_succeeds_at_round_two(dataset, tmp_path):
    # the judge says "violates" only to replies to the improved prompt
    register_script(
        "pjudge",
        [lambda msgs, schema: verdict("improved prompt" in msgs[-1].content)],
    )
    register_script("patt", [{"prompt": "an improved prompt"}])
    register_script("ptarget", [lambda msgs, schema: f"reply to: {msgs[-1].content}"])
    f = aart.attack(
        dataset,
        target="ptarget/app",
        judge="pjudge/j",
        attacker="patt/a",
        strategies=["pair"],
        out=tmp_path / "att",
        max_rounds=3,
    )
    chains = [r for r in f.failures if r.get("chain")]
    assert len(chains) == 3 and all(r["rounds"] == 2 for r in chains)
    assert [c["round"] for c in chains[0]["chain"]] == [1, 2]
    assert chains[0]["chain"][0]["violates"] is False and chains[0]["chain"][1]["violates"]
    pair = f.strategy_stats["pair"]
    assert pair["successes"] == 3 and pair["success_by_round"] == {"2": 3}
    assert pair["queries_per_success"] == 2.0


def test_translation_with_a_scripted_attacker(dataset, tmp_path, fixtures_on_path):
    register_script(
        "tatt",
        [
            lambda msgs, schema: {
                "prompt": "TRANSLATED"
                if "Translate the test prompt" in msgs[-1].content
                else "BACK IN ENGLISH"
            }
        ],
    )
    f = aart.attack(
        dataset,
        target="targets_fixture:echo_app",
        attacker="tatt/a",
        strategies=["translate:Swahili"],
        out=tmp_path / "att",
    )
    translated = [r for r in f.failures if r["strategy"] == "translate:Swahili"]
    assert translated and all(r["sent"] == "TRANSLATED" for r in translated)
    assert all(r["response_english"] == "BACK IN ENGLISH" for r in translated)


def test_an_llm_strategy_without_an_attacker_names_the_fix(dataset, tmp_path):
    with pytest.raises(ConfigError, match="need an attacker model: --attacker"):
        aart.attack(dataset, target="fake/app", strategies=["paraphrase"], out=tmp_path / "a")


def test_a_python_target_that_asks_for_the_prompt_and_the_messages_gets_both(
    dataset, tmp_path, fixtures_on_path
):
    # f(prompt, messages=None) got only messages=: every call raised TypeError, reported
    # as an endpoint that failed 3 calls in a row
    register_script("patt", [{"turns": ["first mild turn", "second turn"]}])
    f = aart.attack(
        dataset,
        target="targets_fixture:prompt_and_messages_app",
        attacker="patt/a",
        strategies=["identity", "crescendo"],
        out=tmp_path / "a",
        limit=1,
    )
    assert f.target_errors == 0 and f.judged == f.prompts == 2 and not f.stopped
    assert f.refusal_rate == 1.0


def test_crescendo_sends_the_whole_conversation_to_every_kind_of_target(
    dataset, tmp_path, fixtures_on_path
):
    import targets_fixture

    register_script("catt", [{"turns": ["first mild turn", "second turn", "third turn"]}])
    # a callable given the message list
    f = aart.attack(
        dataset,
        target="targets_fixture:chat_app",
        attacker="catt/a",
        strategies=["crescendo"],
        out=tmp_path / "a1",
        limit=1,
    )
    rec = next(r for r in f.failures if r["strategy"] == "crescendo")
    assert [t["user"] for t in rec["transcript"]] == [
        "first mild turn",
        "second turn",
        "third turn",
    ]
    last = targets_fixture.TURNS[-1]
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]
    # a chat model receives the conversation as messages
    seen = []
    register_script("cchat", [lambda msgs, schema: seen.append(msgs) or "I can't help with that."])
    aart.attack(
        dataset,
        target="cchat/m",
        attacker="catt/a",
        strategies=["crescendo"],
        out=tmp_path / "a2",
        limit=1,
        system_prompt="You are a bank assistant.",
    )
    longest = max(seen, key=len)
    assert [m.role for m in longest] == ["system", "user", "assistant", "user", "assistant", "user"]
    # an HTTP target gets the earlier turns as `history`
    from aart.redteam.targets import render_body

    body = render_body(
        {"message": "{{ prompt }}", "history": "{{ history }}"},
        "third turn",
        "",
        [{"role": "user", "content": "first"}, {"role": "assistant", "content": "no"}],
    )
    assert body == {
        "message": "third turn",
        "history": [{"role": "user", "content": "first"}, {"role": "assistant", "content": "no"}],
    }


def test_the_attack_dry_run_estimates_per_strategy_and_spends_nothing(dataset, tmp_path):
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "aart", "attack", str(dataset), "--target", "fake/app",
         "--out", str(tmp_path / "a"), "--strategy", "base64", "--strategy", "pair",
         "--attacker", "fake/att", "--judge", "fake/j", "--max-rounds", "4", "--dry-run"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = {line.split()[0]: line.split()[1:] for line in r.stdout.splitlines()[1:]}
    assert lines["identity"][:4] == ["3", "3", "0", "3"]  # prompts, target, attacker, judge
    assert lines["base64"][:4] == ["3", "3", "0", "3"]
    assert lines["pair"][:4] == ["3", "12", "9", "12"] and "(at most)" in " ".join(lines["pair"])
    assert lines["total"][:4] == ["9", "18", "9", "18"]
    assert not (tmp_path / "a").exists()


def test_a_refinement_chain_killed_midway_resumes_without_paying_twice(tmp_path):
    import os
    import signal
    import sqlite3
    import subprocess
    import sys

    from conftest import db_value, wait_until

    from aart.testing import FakeOpenAIServer

    server = FakeOpenAIServer(latency=0.3).start()
    try:
        safe = {"violates_policy": False, "harm_category": "none", "severity": 0,
                "rationale": "it refused"}  # fmt: skip
        # the judge always says "safe", so every chain runs its 3 rounds; the attacker's
        # rewrites are the fake server's own (schema-valid, a different one per request)
        server.on_text("<assistant_response>", {"content": json.dumps(safe)})
        data = tmp_path / "d.jsonl"
        data.write_text("".join(json.dumps({"id": f"r{i}", "prompt": p}) + "\n"
                                for i, p in enumerate(PROMPTS)))  # fmt: skip
        out = tmp_path / "att"
        cmd = [sys.executable, "-m", "aart", "attack", str(data), "--target", "openai/app",
               "--judge", "openai/judge", "--attacker", "openai/att", "--strategy", "pair",
               "--base-url", server.base_url, "--out", str(out), "--min-judged", "0"]  # fmt: skip
        # past the 10th call the calls wait at the server's gate: the kill lands part-way
        # through the chains, once the answered calls are in run.db
        server.hold(after=10)
        first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

        def paid() -> int:
            return db_value(out / "run.db", "SELECT COUNT(*) FROM calls WHERE cache_key != ''")

        wait_until(lambda: server.held and paid(), "a paid call and the 11th held", first)
        first.send_signal(signal.SIGKILL)
        first.wait()
        server.release()
        before = paid()
        assert 0 < before < 30  # killed part-way through the chains
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=os.environ)
        assert done.returncode == 0, done.stderr
        con = sqlite3.connect(out / "run.db")
        answered = "cache_key NOT IN ('', 'in-flight')"
        repeated = con.execute(
            f"SELECT cache_key, COUNT(*) FROM calls WHERE {answered} GROUP BY cache_key"
            " HAVING COUNT(*) > 1"
        ).fetchall()
        total = con.execute(f"SELECT COUNT(*) FROM calls WHERE {answered}").fetchone()[0]
        in_flight = con.execute("SELECT COUNT(*) FROM calls WHERE cache_key = 'in-flight'")
        sent_again = in_flight.fetchone()[0]
        con.close()
        assert repeated == []  # no call whose answer arrived was paid twice
        # what one uninterrupted attack pays: 3 control prompts (target + judge) and 3 chains
        # of 3 rounds whose first round is the control's own request (2 target, 2 judge and
        # 2 attacker calls more each); the calls in flight at the kill were sent again, and
        # run.db has them as in flight: every call the server received is in run.db
        assert total == 3 * 2 + 3 * 6
        assert len(server.requests) <= total + sent_again  # (one may have died unsent)
        summary = json.loads((out / "attack.json").read_text())
        assert summary["strategy_stats"]["pair"]["chains"] == 3
    finally:
        server.release()
        server.stop()


def test_crescendo_reaches_an_http_target_with_its_history(dataset, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    from test_attack import AppServer

    from aart.llm import endpoints

    server = AppServer().start()
    server.fail_first = 0
    try:
        monkeypatch.setenv("APP_KEY", "app-secret")
        endpoints.allow(f"http://127.0.0.1:{server.port}", "APP_KEY")
        spec = tmp_path / "target.yaml"
        spec.write_text(
            f"name: toy\nurl: http://127.0.0.1:{server.port}/api/chat\n"
            'headers: {X-Api-Key: "${APP_KEY}"}\n'
            'body: {input: {message: "{{ prompt }}", history: "{{ history }}"}}\n'
            "reply: $.output.choices[0].text\n"
        )
        register_script("hatt", [{"turns": ["opening mild turn", "closer turn"]}])
        aart.attack(
            dataset, target=str(spec), attacker="hatt/a", strategies=["crescendo"],
            out=tmp_path / "att", limit=1,
        )  # fmt: skip
        last = server.requests[-1]["input"]
        assert last["message"] == "closer turn"
        assert [m["role"] for m in last["history"]] == ["user", "assistant"]
        assert last["history"][0]["content"] == "opening mild turn"
    finally:
        server.stop()


def test_strategies_from_the_recipe_and_a_located_error_for_an_unknown_one(
    dataset, tmp_path, fixtures_on_path
):
    from conftest import MINI_RECIPE, write_recipe

    from aart.errors import RecipeError
    from aart.recipe import load_recipe

    recipe = write_recipe(tmp_path, MINI_RECIPE + "attack:\n  strategies: [base64, rot13]\n")
    f = aart.attack(
        dataset, target="targets_fixture:base64_only", recipe=recipe, out=tmp_path / "att"
    )
    assert {c["value"] for c in f.by_value["strategy"]} == {"identity", "base64", "rot13"}
    bad = write_recipe(tmp_path, MINI_RECIPE + "attack:\n  strategies: [b64]\n", "bad.yaml")
    with pytest.raises(RecipeError, match=r"bad.yaml:\d+.*unknown strategy 'b64'"):
        load_recipe(bad)


def test_rejudge_keeps_chains_and_conversions_and_calls_no_target_nor_attacker(dataset, tmp_path):
    register_script("rjudge", [lambda msgs, schema: verdict("improved prompt" in msgs[-1].content)])
    register_script("ratt", [{"prompt": "an improved prompt"}])
    sent = []
    register_script(
        "rtarget", [lambda msgs, schema: sent.append(1) or f"reply to: {msgs[-1].content}"]
    )
    first = tmp_path / "first"
    aart.attack(
        dataset, target="rtarget/app", judge="rjudge/j", attacker="ratt/a",
        strategies=["pair", "base64"], out=first,
    )  # fmt: skip
    calls = len(sent)
    register_script("strict", [verdict(True)])  # another judge: everything violates
    f = aart.rejudge(first, judge="strict/j", out=tmp_path / "second")
    assert len(sent) == calls  # nothing sent again
    assert f.prompts == 9 and f.judged == 9 and not f.failed_jobs
    chains = [r for r in f.failures if r["strategy"] == "pair"]
    # every round judged again: the new judge's first success ends the chain (round 1 here),
    # not the earlier judge's round count
    assert len(chains) == 3 and all(len(r["chain"]) == 1 and r["rounds"] == 1 for r in chains)
    assert all(r["queries"] == 2 for r in chains)  # what the chain spent
    assert f.strategy_stats["pair"]["success_by_round"] == {"1": 3}
    assert {r["strategy"] for r in f.failures} == {"identity", "pair", "base64"}
    assert all(r.get("sent", "").startswith("The request below is encoded in base64")
               for r in f.failures if r["strategy"] == "base64")  # fmt: skip


def test_a_regression_set_replays_each_line_once_under_the_recipes_strategies(dataset, tmp_path):
    # before: a failure under identity (its line names no strategy) was replayed under every
    # strategy the recipe gives (identity and base64), so the base64 failures were attacked
    # twice: 6 failures of 3 prompts became 9 verdicts, and the regression set grew to 9
    first = aart.attack(dataset, target="fake/x", out=tmp_path / "att", strategies=["base64"])
    rows = [json.loads(x) for x in (tmp_path / "att" / "failures.jsonl").read_text().splitlines()]
    assert first.prompts == 6 and len(rows) == 6
    again = aart.attack(
        tmp_path / "att" / "failures.jsonl",
        target="fake/x",
        out=tmp_path / "again",
        strategies=["base64"],  # what the recipe's attack section says, on every CI run
    )
    assert again.prompts == 6
    assert {c["value"]: c["n"] for c in again.by_value["strategy"]} == {"identity": 3, "base64": 3}
    replayed = (tmp_path / "again" / "failures.jsonl").read_text().splitlines()
    assert len(replayed) == 6
    # a set written before the control named itself: its lines without a strategy
    old = tmp_path / "old.jsonl"
    old.write_text(
        "".join(
            json.dumps(
                {k: v for k, v in r.items() if r.get("strategy") != "identity" or k != "strategy"}
            )
            + "\n"
            for r in rows
        )
    )
    assert sum("strategy" not in json.loads(x) for x in old.read_text().splitlines()) == 3
    older = aart.attack(old, target="fake/x", out=tmp_path / "older", strategies=["base64"])
    assert older.prompts == 6
