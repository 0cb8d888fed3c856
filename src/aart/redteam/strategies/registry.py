"""The one registry of strategies: every name, the kind that runs it, and the parsing of
NAME[:ARG]. A new strategy is one StrategyKind class, registered here."""

from __future__ import annotations

from ...errors import ConfigError
from .base import Strategy, StrategyKind
from .convert import Convert
from .crescendo import Crescendo
from .pair import Pair
from .rewrite import Rewrite

KINDS: list[StrategyKind] = [Convert(), Rewrite(), Pair(), Crescendo()]
_BY_NAME: dict[str, StrategyKind] = {name: k for k in KINDS for name in k.peers}


def register(kind: StrategyKind) -> None:
    """Add a kind of strategy (its names must be new)."""
    taken = set(kind.peers) & set(_BY_NAME)
    if taken:
        raise ValueError(f"strategies {sorted(taken)} are registered already")
    KINDS.append(kind)
    _BY_NAME.update(dict.fromkeys(kind.peers, kind))


def names() -> list[str]:
    return list(_BY_NAME)


def kind_of(name: str) -> StrategyKind:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ConfigError(f"unknown strategy {name!r}; choose from: {', '.join(names())}") from None


def parse_strategy(spec: str) -> Strategy:
    """``NAME[:ARG]``, checked: an unknown name or a missing argument names the fix."""
    name, _, arg = spec.strip().partition(":")
    kind_of(name).check(name, arg)
    return Strategy(name, arg)


def needs_attacker(strategies: list[Strategy]) -> bool:
    return any(s.runner.needs_attacker for s in strategies)
