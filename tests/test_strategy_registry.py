"""One Strategy interface, one registry: a new kind of strategy is one class, registered
once; the attack, its dry run and the spec's checks find it by name."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import write_attack_dataset

import aart
from aart.errors import ConfigError
from aart.pipeline import attack_dry_run
from aart.redteam.strategies import (
    KINDS,
    AttackContext,
    Calls,
    Strategy,
    StrategyKind,
    kind_of,
    names,
    parse_strategy,
    registry,
)


class Reverse(StrategyKind):
    """The prompt sent backwards (a mild, deterministic transformation)."""

    kind = "convert"
    needs_attacker = False
    peers = {"reverse": "a test strategy"}

    async def run(
        self, ctx: AttackContext, job: str, prompt: str, strategy: Strategy
    ) -> dict[str, Any]:
        return await ctx.once(job, prompt, prompt[::-1])

    def calls(self, strategy: Strategy, max_rounds: int, max_turns: int) -> Calls:
        return Calls(sends=1, asks=0, judged=1, messages=1)


class Again(Reverse):
    peers = {"pair": "a name taken"}


@pytest.fixture
def reverse(monkeypatch):
    monkeypatch.setattr(registry, "KINDS", list(KINDS))
    monkeypatch.setattr(registry, "_BY_NAME", dict(registry._BY_NAME))
    registry.register(Reverse())


def test_every_name_has_one_kind_in_the_order_earlier_versions_listed():
    assert names()[:2] == ["identity", "base64"] and names()[-2:] == ["pair", "crescendo"]
    assert {type(kind_of(n)).__name__ for n in names()} == {
        "Convert", "Rewrite", "Pair", "Crescendo",
    }  # fmt: skip
    assert not parse_strategy("rot13").runner.needs_attacker
    assert parse_strategy("crescendo").runner.needs_attacker
    with pytest.raises(ValueError, match="registered already"):
        registry.register(Again())


def test_a_registered_strategy_runs_in_the_attack_and_the_dry_run(tmp_path, reverse):
    ds = write_attack_dataset(tmp_path / "d.jsonl")
    est = attack_dry_run(ds, target="fake/app", strategies=["reverse"])
    assert {r["strategy"]: r["target_calls"] for r in est} == {"identity": 4, "reverse": 4}
    f = aart.attack(ds, target="fake/app", out=tmp_path / "att", strategies=["reverse"])
    assert {c["value"] for c in f.by_value["strategy"]} == {"identity", "reverse"}
    with pytest.raises(ConfigError, match="takes no argument"):
        parse_strategy("reverse:x")
