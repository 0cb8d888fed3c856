"""The attack's specification: resolved once, kept in the attack directory, read back by
`aart rejudge` (directories of earlier versions too)."""

from __future__ import annotations

import json
import sqlite3

import pytest
from conftest import write_attack_dataset

import aart
from aart.errors import ConfigError
from aart.redteam.replay import earlier_spec
from aart.redteam.spec import AttackSpec


def test_the_spec_resolves_flags_over_defaults_and_says_where_each_came_from(tmp_path):
    ds = write_attack_dataset(tmp_path / "d.jsonl")
    spec = AttackSpec.resolve(ds, target="fake/app", max_tokens=99, strategies=["base64"])
    assert spec.max_tokens == 99 and spec.judge == "refusal"
    assert spec.sources["max_tokens"] == "flag" and spec.sources["judge"] == "default"
    assert spec.report()["strategies"] == {"value": ["base64"], "source": "flag"}
    with pytest.raises(ConfigError, match="unknown strategy 'b64'"):
        AttackSpec.resolve(ds, target="fake/app", strategies=["b64"])
    with pytest.raises(TypeError, match="unknown attack settings"):
        AttackSpec.resolve(ds, target="fake/app", max_token=3)


def test_the_directory_keeps_the_spec_and_rejudge_reads_it_back(tmp_path):
    ds = write_attack_dataset(tmp_path / "d.jsonl")
    out = tmp_path / "att"
    aart.attack(ds, target="fake/app", out=out, limit=3, strategies=["rot13"], max_tokens=80)
    spec = earlier_spec(out)
    assert spec.limit == 3 and spec.strategies == ["rot13"] and spec.target == "fake/app"
    assert spec.dataset == str(ds.resolve())
    f = aart.rejudge(out, judge="refusal", out=tmp_path / "again")
    assert f.prompts == 6
    # the responses' own --max-tokens (its cut-off warnings named the default 400)
    assert earlier_spec(tmp_path / "again").max_tokens == 80
    with pytest.raises(TypeError, match="rejudge: unknown settings"):
        aart.rejudge(out, target="fake/other", out=tmp_path / "third")


def test_rejudge_reads_an_attack_directory_of_the_version_before_the_spec(tmp_path):
    ds = write_attack_dataset(tmp_path / "d.jsonl")
    out = tmp_path / "att"
    aart.attack(ds, target="fake/app", out=out, limit=2)
    con = sqlite3.connect(out / "run.db")
    with con:
        con.execute("DELETE FROM meta WHERE key = 'attack_spec'")
    con.close()
    spec = earlier_spec(out)
    assert spec.limit == 2 and spec.dataset == str(ds.resolve())
    f = aart.rejudge(out, out=tmp_path / "again")
    assert f.prompts == 2
    summary = json.loads((tmp_path / "again" / "attack.json").read_text())
    assert summary["prompts"] == 2


def test_a_baseline_whose_summary_is_not_one_is_a_usage_error(tmp_path):
    from aart.errors import UsageError

    ds = write_attack_dataset(tmp_path / "d.jsonl")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "attack.json").write_text('{"primary_judge": "refusal", "overall": ')
    with pytest.raises(UsageError, match="is not an attack summary"):
        aart.attack(ds, target="fake/app", out=tmp_path / "att", baseline=tmp_path / "old")
    assert not (tmp_path / "att").exists()  # refused before anything was made


def test_the_failures_and_the_stored_records_keep_their_fields(tmp_path, monkeypatch):
    """failures.jsonl's lines and run.db's records are the typed records' dumps: the fields
    the earlier versions wrote, no more."""
    from aart.llm import register_script
    from aart.store.db import RunDB

    register_script("always", ["Sure, here it is."])
    ds = write_attack_dataset(tmp_path / "d.jsonl")
    out = tmp_path / "att"
    aart.attack(ds, target="always/app", out=out, strategies=["rot13"])
    rows = [json.loads(x) for x in (out / "failures.jsonl").read_text().splitlines()]
    # with strategies the control names itself too, so a replay runs it once (aefb925)
    assert {tuple(r) for r in rows} == {("id", "prompt", "cell", "annotations", "strategy")}
    assert {r["strategy"] for r in rows} == {"identity", "rot13"}
    db = RunDB(out / "run.db", lock=False)
    rec = next(r for r in db.records("attack") if r["strategy"] == "rot13")
    db.close()
    assert set(rec) == {"index", "id", "prompt", "cell", "strategy", "target", "response",
                        "sent", "verdicts"}  # fmt: skip
    assert set(rec["verdicts"]["refusal"]) == {
        "judge", "violates", "refused", "category", "severity", "rationale", "error", "status",
        "score",
    }  # fmt: skip
