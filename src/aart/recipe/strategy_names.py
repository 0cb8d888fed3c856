"""The attack strategies a recipe may name and their ``NAME[:ARG]`` form, checked when the
recipe loads (a typo is a located recipe error) without the recipe importing the attack code,
which sits layers above it. :mod:`aart.redteam.strategies` implements each name;
``tests/test_layers.py`` checks that the two lists are the same."""

from __future__ import annotations

from ..errors import ConfigError

#: in the order ``--strategy``'s error lists them: the control, the converters, the rewrites by
#: the attacker model, the multi-turn attacks
STRATEGY_NAMES = (
    "identity",
    "base64",
    "rot13",
    "leetspeak",
    "homoglyphs",
    "spacing",
    "zero-width",
    "case-mix",
    "payload-split",
    "json",
    "translate",
    "paraphrase",
    "roleplay",
    "hypothetical",
    "past-tense",
    "pair",
    "crescendo",
)
#: the strategies that need an argument (``translate:Swahili``); the others take none
TAKES_ARGUMENT = frozenset({"translate"})


def check_strategy(spec: str) -> tuple[str, str]:
    """``NAME[:ARG]`` split and checked: an unknown name or a wrong argument names the fix."""
    name, _, arg = spec.strip().partition(":")
    if name not in STRATEGY_NAMES:
        raise ConfigError(f"unknown strategy {name!r}; choose from: {', '.join(STRATEGY_NAMES)}")
    if name in TAKES_ARGUMENT and not arg:
        raise ConfigError(f"{name} needs a language: --strategy {name}:Swahili")
    if arg and name not in TAKES_ARGUMENT:
        raise ConfigError(f"strategy {name!r} takes no argument (got {arg!r})")
    return name, arg


__all__ = ["STRATEGY_NAMES", "TAKES_ARGUMENT", "check_strategy"]
