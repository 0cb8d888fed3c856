"""What one attack is: :class:`AttackSpec`, every setting resolved once from the flags (or
Python arguments), the recipe's ``attack:`` section and the defaults, with the source of each.
The settings are declared once, as :class:`AttackArgs` (what ``aart.attack``, ``aart
rejudge`` and the CLI pass), instead of once per layer; the spec is what the attack directory
keeps (its ``attack_spec`` meta) for resume and rejudge."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, TypedDict

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import ConfigError, UsageError
from ..llm import Budget, ModelOptions, Price
from ..llm.transport.batch import BatchSettings
from ..llm.transport.ray import RaySettings
from .gate import GATE_ON, GateSpec
from .settings import DEFAULTS, from_recipe, resolve
from .strategies import parse_strategy


class AttackArgs(TypedDict, total=False):
    """Every setting an attack takes (None: not given, so the recipe's applies, else the
    default). ``aart.attack(dataset, out=..., **AttackArgs)``."""

    target: str | None
    judge: str | None
    classifier: str | None
    #: the recipe whose attack section, policy and prices apply (default: the dataset's run's)
    recipe: str | Path | None
    system_prompt: str | None
    base_url: str | None
    max_tokens: int | None
    limit: int | None
    sample: int | None
    seed: int | None
    concurrency: int | None
    no_cache: bool
    prices: dict[str, Price] | None
    max_cost: float | None
    text_column: str
    axis_columns: dict[str, str] | None
    annotation_columns: dict[str, str] | None
    replay: str | Path | None
    strategies: list[str] | None
    attacker: str | None
    max_rounds: int | None
    max_turns: int | None
    context_as: str | None
    max_steps: int | None
    tools: str | Path | None
    batch: BatchSettings | None
    ray: RaySettings | None
    fail_above: float | None
    gate_on: str | None
    min_judged: float | None
    gate_axes: dict[str, float] | None
    gate_strategies: dict[str, float] | None


#: what `aart rejudge` may change: the judges, gates and money, never which prompts
REJUDGE_ARGS = frozenset(
    {"judge", "classifier", "recipe", "base_url", "min_judged", "prices", "max_cost",
     "no_cache", "fail_above", "gate_on", "gate_axes", "gate_strategies"}
)  # fmt: skip
#: what a re-judge takes from the earlier attack: how it read and chose its prompts
INPUT_FIELDS = (
    "dataset", "target", "limit", "sample", "seed", "text_column", "axis_columns",
    "annotation_columns", "strategies",
)  # fmt: skip


class AttackSpec(BaseModel):
    """One attack's settings, resolved (:meth:`resolve`). ``sources`` says, per setting of
    ``settings.DEFAULTS``, whether a flag, the recipe or the default gave it."""

    model_config = ConfigDict(arbitrary_types_allowed=True, validate_assignment=False)

    dataset: str = ""
    target: str
    judge: str = "refusal"
    classifier: str | None = None
    system_prompt: str = ""
    app_name: str = ""
    policy: str = ""
    base_url: str | None = None
    concurrency: int | None = None
    max_tokens: int = 400
    limit: int | None = None
    #: N prompts spread over the cells (``sampling.stratified_order``), seeded
    sample: int | None = None
    seed: int = 0
    use_cache: bool = True
    #: US dollars per million tokens, by model name (the recipe's prices and --price)
    prices: dict[str, Price] = {}
    # the budget, counted over the whole attack run (all invocations)
    max_calls: int | None = None
    max_tokens_total: int | None = None
    max_cost: float | None = None
    #: how the user set each cap, for the message that it is spent (max_cost: "--max-cost")
    budget_names: dict[str, str] = {}
    #: how to read a table that is not aart's own (as `aart evaluate` reads it)
    text_column: str = "prompt"
    axis_columns: dict[str, str] = {}
    annotation_columns: dict[str, str] = {}
    #: an earlier attack's directory: judge its saved responses again, calling no target
    replay: str | None = None
    #: strategies besides the unconverted control (``identity``), as NAME[:ARG]
    strategies: list[str] = []
    #: the model that rewrites prompts (LLM converters, pair, crescendo)
    attacker: str | None = None
    max_rounds: int = 3
    max_turns: int = 4
    #: injection cases: the context as a tool result or a document in the prompt, the model
    #: calls per case, and a tools file (YAML/JSON) for lines that carry no tools
    context_as: str = "tool"
    max_steps: int = 4
    tools: str | None = None
    #: the recipe the settings came from (for the values never attacked)
    recipe: str | None = None
    fail_above: float | None = None
    gate_on: str = "raw"
    min_judged: float = 0.9
    gate_axes: dict[str, float] = {}
    gate_strategies: dict[str, float] = {}
    sources: dict[str, str] = {}
    # how the calls travel: chosen per invocation, never persisted (a resumed attack may
    # run them otherwise)
    batch: BatchSettings | None = Field(None, exclude=True)
    ray: RaySettings | None = Field(None, exclude=True)

    @field_validator("strategies")
    @classmethod
    def _known(cls, specs: list[str]) -> list[str]:
        # a ConfigError naming the fix (a recipe's strategies were checked, located, when it
        # was loaded)
        from .strategies import parse_strategy

        for spec in specs:
            parse_strategy(spec)
        return specs

    # -- resolution ----------------------------------------------------------------------------
    @classmethod
    def resolve(cls, dataset: str | Path, **args: Any) -> AttackSpec:
        """Each of ``settings.DEFAULTS`` from ``args`` (None: not given), else the recipe's
        ``attack:`` section (the dataset's run recipe by default), else the default; the
        recipe's policy and prices (attack.prices added, ``prices`` last)."""
        unknown = set(args) - set(AttackArgs.__annotations__)
        if unknown:
            raise TypeError(f"unknown attack settings {sorted(unknown)}")
        from ..store.rundir import recipe_at

        flags = {k: v for k, v in args.items() if k in DEFAULTS}
        recipe = args.get("recipe")
        replay = args.get("replay")
        ds = Path(dataset)
        if recipe is None and (ds.parent / "recipe.yaml").exists():
            recipe = ds.parent / "recipe.yaml"  # a dataset inside a run directory knows its recipe
        app_name = policy = ""
        budget = None
        prices: dict[str, Price] = {}
        from_rec = None
        if recipe is not None:
            rec = recipe_at(recipe).recipe
            app_name, policy = rec.application.name, rec.application.policy
            budget = rec.attack.budget if rec.attack.budget is not None else rec.budget
            # the recipe's prices, attack.prices over them
            for name, p in [*rec.prices.items(), *rec.attack.prices.items()]:
                prices[name] = Price(p.input, p.output, p.batch_input, p.batch_output)
            from_rec = from_recipe(rec)
            if replay is not None:  # a replay takes the earlier attack's strategies, exactly
                from_rec["strategies"] = None
        prices.update(args.get("prices") or {})
        r = resolve(flags, from_rec)
        if r["context_as"] not in ("tool", "document"):
            raise UsageError(f"context_as {r['context_as']!r}: choose tool or document")
        if not 1 <= int(r["max_steps"]) <= 16:
            raise UsageError(f"max_steps {r['max_steps']}: give 1 to 16")
        if r["gate_on"] not in GATE_ON:
            raise UsageError(f"gate_on {r['gate_on']!r}: choose one of {', '.join(GATE_ON)}")
        if r["target"] is None:
            raise UsageError(
                "no target: give --target (provider/model, a target .yaml or module:function), "
                "or attack.target in the recipe"
            )
        for name in r["gate_strategies"]:
            try:  # a misspelt name was skipped as "no prompt sent so", and the gate passed
                parse_strategy(name)
            except ConfigError as e:
                raise UsageError(
                    f"gate strategy {name!r}: {e} (fix --gate-strategy or attack.gate.strategies)"
                ) from None
        values = dict(r.values)
        values.update(
            strategies=list(values["strategies"]),
            gate_axes=dict(values["gate_axes"]),
            gate_strategies=dict(values["gate_strategies"]),
            tools=str(values["tools"]) if values["tools"] is not None else None,
        )
        return cls(
            **values,
            dataset=str(dataset),
            app_name=app_name,
            policy=policy,
            concurrency=args.get("concurrency"),
            limit=args.get("limit"),
            use_cache=not args.get("no_cache", False),
            prices=prices,
            max_calls=budget.max_calls if budget else None,
            max_tokens_total=budget.max_tokens if budget else None,
            budget_names={"max_cost": "--max-cost"} if r.sources["max_cost"] == "flag" else {},
            text_column=args.get("text_column") or "prompt",
            axis_columns=args.get("axis_columns") or {},
            annotation_columns=args.get("annotation_columns") or {},
            replay=str(replay) if replay is not None else None,
            recipe=str(recipe) if recipe is not None else None,
            sources=dict(r.sources),
            batch=args.get("batch"),
            ray=args.get("ray"),
        )

    def input_args(self) -> dict[str, Any]:
        """How this attack read and chose its prompts, as :class:`AttackArgs` (a re-judge
        reads the same prompts again)."""
        return {k: getattr(self, k) for k in INPUT_FIELDS if k != "dataset"}

    # -- what the run is built from ------------------------------------------------------------
    @property
    def options(self) -> ModelOptions:
        return ModelOptions(base_url=self.base_url, concurrency=self.concurrency)

    def budget(self, spent: dict[str, Any] | None = None) -> Budget:
        """The caps, counting what earlier invocations of this attack spent."""
        b = Budget.resuming(
            spent,
            max_calls=self.max_calls,
            max_tokens=self.max_tokens_total,
            max_cost=self.max_cost,
        )
        b.names = dict(self.budget_names)
        return b

    def gate(self) -> GateSpec:
        return GateSpec(
            fail_above=self.fail_above,
            gate_on=self.gate_on,
            axes=dict(self.gate_axes),
            strategies=dict(self.gate_strategies),
            min_judged=self.min_judged,
        )

    def report(self) -> dict[str, dict[str, Any]]:
        """Setting -> {value, source}, for attack.json and the reports."""
        return {
            k: {"value": getattr(self, k), "source": self.sources.get(k, "default")}
            for k in DEFAULTS
        }

    # -- what a resumed attack must share ------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """What the verdicts of an attack directory depend on, besides the prompts: a re-run
        with other settings is refused, one over a changed dataset reuses what it can. (The
        ``attack_settings`` meta: its keys are those of earlier versions.)"""
        out: dict[str, Any] = {
            "target": self.target,
            "judge": self.judge,
            "classifier": self.classifier,
            "system_prompt": self.system_prompt,
            "policy": self.policy,
            "max_tokens": self.max_tokens,
        }
        if self.replay:
            out["replay"] = self.replay
        if self.attacker:  # only when used, so attacks of earlier versions still resume
            out.update(attacker=self.attacker, max_rounds=self.max_rounds, max_turns=self.max_turns)
        if (self.context_as, self.max_steps, self.tools) != ("tool", 4, None):  # the same
            out.update(context_as=self.context_as, max_steps=self.max_steps, tools=self.tools)
        return out

    def signature(self, dataset_hash: str) -> str:
        """The signature attack directories of earlier versions kept (dataset included)."""
        parts: list[Any] = [
            dataset_hash,
            self.target,
            self.judge,
            self.classifier,
            self.system_prompt,
            self.policy,
            self.max_tokens,
            self.limit,
        ]
        if self.text_column != "prompt" or self.axis_columns:  # kept out when unused, so
            parts += [self.text_column, self.axis_columns]  # earlier attacks still resume
        if self.replay:
            parts.append(["replay", self.replay])
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]

    def dataset_meta(self, target_name: str) -> dict[str, Any]:
        """The ``attack_dataset`` meta, as earlier versions wrote it (and read it to re-judge)."""
        return {
            "dataset": str(Path(self.dataset).resolve()),
            "target": self.target,
            "target_name": target_name,
            "limit": self.limit,
            "sample": self.sample,
            "seed": self.seed,
            "text_column": self.text_column,
            "axis_columns": self.axis_columns,
            "annotation_columns": self.annotation_columns,
            "strategies": self.strategies,
        }

    @classmethod
    def from_dataset_meta(cls, saved: dict[str, Any]) -> AttackSpec:
        """The input settings of an attack directory written before ``attack_spec`` existed:
        enough to re-judge it."""
        return cls(
            dataset=saved["dataset"],
            target=saved["target"],
            limit=saved.get("limit"),
            sample=saved.get("sample"),
            seed=saved.get("seed") or 0,
            text_column=saved.get("text_column") or "prompt",
            axis_columns=saved.get("axis_columns") or {},
            annotation_columns=saved.get("annotation_columns") or {},
            strategies=saved.get("strategies") or [],
        )


#: the name earlier versions gave the attack's settings (``aart.redteam.AttackConfig``)
AttackConfig = AttackSpec
