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
    aart.attack(ds, target="fake/app", out=out, limit=3, strategies=["rot13"])
    spec = earlier_spec(out)
    assert spec.limit == 3 and spec.strategies == ["rot13"] and spec.target == "fake/app"
    assert spec.dataset == str(ds.resolve())
    f = aart.rejudge(out, judge="refusal", out=tmp_path / "again")
    assert f.prompts == 6
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
