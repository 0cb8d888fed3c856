"""Where each attack setting comes from: a flag (or the Python argument), else the recipe's
``attack:`` section (and ``application.system_prompt``, ``prices``, ``budget``), else the
default. :func:`resolve` is the one place that decides it; the reports say the source of
each setting (attack.json's ``settings``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .gate import GateSpec

#: every setting the recipe's attack section can give, with its default
DEFAULTS: dict[str, Any] = {
    "target": None,
    "judge": "refusal",
    "classifier": None,
    "system_prompt": "",
    "base_url": None,
    "max_tokens": 400,
    "sample": None,
    "seed": 0,
    "strategies": [],
    "attacker": None,
    "max_rounds": 3,
    "max_turns": 4,
    #: injection cases: how the context reaches a chat model, its model calls per case, and
    #: the application's tools when the dataset's lines carry none (a YAML/JSON file)
    "context_as": "tool",
    "max_steps": 4,
    "tools": None,
    "max_cost": None,
    "fail_above": None,
    "gate_on": "raw",
    "min_judged": 0.9,
    "gate_axes": {},
    "gate_strategies": {},
}


@dataclass
class Resolved:
    values: dict[str, Any]
    #: setting -> "flag", "recipe" or "default"
    sources: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def gate(self) -> GateSpec:
        v = self.values
        return GateSpec(
            fail_above=v["fail_above"],
            gate_on=v["gate_on"],
            axes=dict(v["gate_axes"]),
            strategies=dict(v["gate_strategies"]),
            min_judged=v["min_judged"],
        )

    def report(self) -> dict[str, dict[str, Any]]:
        """Setting -> {value, source}, for attack.json and the reports."""
        return {k: {"value": self.values[k], "source": self.sources[k]} for k in DEFAULTS}


def from_recipe(rec: Any) -> dict[str, Any]:
    """The recipe's value of each setting, None where it says nothing."""
    a = rec.attack
    g = a.gate
    budget = a.budget if a.budget is not None else rec.budget
    return {
        "target": a.target,
        "judge": a.judges.primary,
        "classifier": a.judges.classifier,
        # attack.system_prompt, else the application's
        "system_prompt": a.system_prompt
        if a.system_prompt is not None
        else (rec.application.system_prompt or None),
        "base_url": a.base_url,
        "max_tokens": a.max_tokens,
        "sample": a.sample,
        "seed": a.seed,
        "strategies": list(a.strategies) or None,
        "attacker": a.attacker,
        "max_rounds": a.max_rounds,
        "max_turns": a.max_turns,
        "max_cost": budget.max_cost,
        "fail_above": g.fail_above,
        "gate_on": g.gate_on,
        "min_judged": g.min_judged,
        "gate_axes": dict(g.axes) or None,
        "gate_strategies": dict(g.strategies) or None,
    }


def resolve(flags: Mapping[str, Any], recipe: Mapping[str, Any] | None) -> Resolved:
    """Each setting from the flags (None: not given), else the recipe, else the default."""
    out = Resolved({})
    for key, default in DEFAULTS.items():
        if flags.get(key) is not None:
            out.values[key], out.sources[key] = flags[key], "flag"
        elif recipe is not None and recipe.get(key) is not None:
            out.values[key], out.sources[key] = recipe[key], "recipe"
        else:
            out.values[key], out.sources[key] = default, "default"
    return out
