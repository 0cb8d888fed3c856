"""Step 2, problem scoping: filter the value lists and write the blueprint (the data mix)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import BudgetError, UsageError
from ..llm import Usage, estimate_tokens
from ..llm.factory import FREE_PROVIDERS
from ..recipe import Recipe, Value
from ..recipe.filters import apply_filter as apply_filter  # its old place: kept importable
from ..recipe.filters import unmatched
from ..store.rundir import Run
from ..types import Attempt, Cell
from . import mix
from .common import price_for
from .prompting import completion_estimate, render_messages


def scoped_values(run: Run) -> dict[str, list[Value]]:
    """The dimension files after the recipe's filters (:meth:`Run.scoped_values`, kept here
    for the callers of this name)."""
    return run.scoped_values()


def attempt_id(index: int, cells: list[dict[str, str]]) -> str:
    digest = hashlib.sha1(json.dumps(cells, sort_keys=True).encode()).hexdigest()
    return f"a{index:05d}-{digest[:8]}"


def make_attempt(index: int, cells: list[Cell], **extra: Any) -> Attempt:
    """One blueprint line: its cells (one per query), the values they use, and the count."""
    return Attempt.of(attempt_id(index, cells), cells, **extra)


def build_blueprint(recipe: Recipe, values: dict[str, list[str]]) -> list[Attempt]:
    s = recipe.scope
    for axis, vals in values.items():
        if not vals:
            raise UsageError(
                f"scope.filters.{axis} leaves no values of {axis!r}; loosen its keep/drop/"
                "regex (keep and drop match whole values, in any case)"
            )
    for axis, k in s.sample.items():
        if k > len(values[axis]):
            raise UsageError(
                f"scope.sample.{axis} asks for {k} values per attempt but {axis!r} has only "
                f"{len(values[axis])}; lower it or add values"
            )
    q = s.queries_per_attempt
    if s.mix == "per-value":
        assert s.primary is not None
        check_restrict(recipe, values)
        attempts = mix.per_value(
            values, s.primary, s.attempts_per_value, s.sample, s.weights, s.seed, q, s.restrict
        )
    elif s.mix == "balanced":
        attempts = mix.balanced(values, s.attempts, q, s.weights, s.seed)
    else:
        attempts = mix.pairwise(values, s.axes or list(values), q, s.weights, s.seed)
    return [make_attempt(i, cells) for i, cells in enumerate(attempts, start=1)]


def check_restrict(recipe: Recipe, values: dict[str, list[str]]) -> None:
    """scope.restrict names values the run has (after Step 1 and the filters), and leaves
    each restricted axis enough values for scope.sample: a restriction that named nothing
    would restrict nothing without a word."""
    s = recipe.scope
    assert s.primary is not None
    for pv, axes in s.restrict.items():
        if pv not in values[s.primary]:
            raise UsageError(
                f"scope.restrict names {pv!r}, not a value of {s.primary!r} (after the scope's "
                f"filters; values match exactly): {few_values(values[s.primary], 6)}; correct or "
                "remove it"
            )
        for axis, only in axes.items():
            missing = [v for v in only if v not in values[axis]]
            if missing:
                raise UsageError(
                    f"scope.restrict.{pv}.{axis} names {', '.join(map(repr, missing))}, not "
                    f"among the values of {axis!r} (after the scope's filters): "
                    f"{few_values(values[axis], 6)}; correct or remove them"
                )
            k = s.sample.get(axis, 1)
            if len(set(only)) < k:
                raise UsageError(
                    f"scope.restrict.{pv}.{axis} leaves {len(set(only))} value(s) but "
                    f"scope.sample.{axis} asks for {k} per attempt; list more or lower it"
                )


def few_values(values: list[str], show: int = 3) -> str:
    """The first few values, quoted, and how many more: for messages."""
    shown = ", ".join(repr(v) for v in values[:show])
    return shown + (f" (+{len(values) - show})" if len(values) > show else "")


@dataclass
class Plan:
    """What a blueprint will cost: shown before anything is spent."""

    attempts: int
    expected_prompts: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    #: None: the model is paid and the recipe has no price for it
    cost: float | None
    model: str
    uses: dict[str, Counter[str]] = field(default_factory=dict)
    #: per dimension: values in its file, values the scope filters took out, and the kept
    #: values the mix never planned
    available: dict[str, int] = field(default_factory=dict)
    filtered_out: dict[str, list[str]] = field(default_factory=dict)
    unplanned: dict[str, list[str]] = field(default_factory=dict)
    #: per dimension: values the blueprint uses that its file no longer holds (a hand edit)
    not_in_file: dict[str, list[str]] = field(default_factory=dict)
    #: what the reader should know (a blueprint rebuilt after an edit of the dimensions)
    notes: list[str] = field(default_factory=list)

    def summary_lines(self) -> list[str]:
        lines = [
            f"attempts: {self.attempts}   cells: {self.expected_prompts} (one prompt each)",
            f"estimated: {self.calls} calls, {self.prompt_tokens + self.completion_tokens:,} tokens "
            f"({self.prompt_tokens:,} in, {self.completion_tokens:,} out), "
            + (f"${self.cost:.4f}" if self.cost is not None else "cost unpriced")
            + f" on {self.model}",
        ]
        for axis, c in self.uses.items():
            counts = sorted(c.values())
            total = self.available.get(axis, len(c))
            extra = self.not_in_file.get(axis, [])
            line = f"  {axis}: {len(c) - len(extra)} of {total} values planned"
            if counts:
                line += f", queries per value min {counts[0]} max {counts[-1]}"
            if self.filtered_out.get(axis):
                line += f"; {len(self.filtered_out[axis])} filtered out"
            if self.unplanned.get(axis):
                shown = ", ".join(self.unplanned[axis][:5])
                more = len(self.unplanned[axis]) - 5
                line += f"; never planned: {shown}" + (f" (+{more})" if more > 0 else "")
            if extra:
                line += f"; {len(extra)} not in its dimension file: {', '.join(extra[:5])}"
            lines.append(line)
        return lines + [f"note: {n}" for n in self.notes]


def estimate(run: Run, blueprint: list[Attempt], model_name: str) -> Plan:
    recipe = run.recipe
    prompt_tokens = completion = 0
    for a in blueprint:
        prompt_tokens += estimate_tokens(render_messages(recipe, a))
        completion += completion_estimate(recipe, a.queries)
    uses: dict[str, Counter[str]] = {axis: Counter() for axis in recipe.dimensions}
    for a in blueprint:
        for cell in a.cells:
            for axis, v in cell.items():
                uses.setdefault(axis, Counter())[v] += 1
    cost: float | None = price_for(recipe, model_name).cost(Usage(prompt_tokens, completion))
    if model_name not in recipe.prices and not model_name.startswith(FREE_PROVIDERS):
        cost = None  # not $0: nothing says what it costs
    return Plan(
        len(blueprint),
        sum(a.queries for a in blueprint),
        len(blueprint),
        prompt_tokens,
        completion,
        cost,
        model_name,
        uses,
    )


def check_budget(run: Run, plan: Plan) -> None:
    b = run.recipe.budget
    over = []
    if b.max_calls is not None and plan.calls > b.max_calls:
        over.append(f"{plan.calls} calls > max_calls {b.max_calls}")
    if b.max_tokens is not None and plan.prompt_tokens + plan.completion_tokens > b.max_tokens:
        over.append(
            f"~{plan.prompt_tokens + plan.completion_tokens:,} tokens > max_tokens {b.max_tokens:,}"
        )
    if b.max_cost is not None and plan.cost is not None and plan.cost > b.max_cost:
        over.append(f"~${plan.cost:.2f} > max_cost ${b.max_cost}")
    if over:
        raise BudgetError(
            "the blueprint is over budget before any call: "
            + "; ".join(over)
            + ". Lower scope.attempts_per_value / queries_per_attempt, filter values, or raise budget."
        )


def scope_run(run: Run, model_name: str, *, force: bool = False) -> Plan:
    """Write ``blueprint.jsonl`` (kept if it exists, unless ``force``) and return its plan."""
    from .rescope import BUILT_FROM, built_from, rescope

    path = run.path("blueprint.jsonl")
    values = {k: [v.value for v in vs] for k, vs in scoped_values(run).items()}
    notes = []
    if path.exists() and not force:
        if run.recipe.scope.mix == "per-value":
            check_restrict(run.recipe, values)  # build_blueprint checks it on the other path
        blueprint = run.read_blueprint()
        # the dimension files (or filters) edited since: rebuild the cells the edit affects
        blueprint, done = rescope(
            run.recipe, blueprint, values, built_from(run.db.get_meta(BUILT_FROM))
        )
        if done.changed:
            _write_blueprint(run, blueprint)
            notes.append(done.note(str(run.root)))
    else:
        blueprint = build_blueprint(run.recipe, values)
        _write_blueprint(run, blueprint)
    if built_from(run.db.get_meta(BUILT_FROM)) != values:
        run.db.set_meta(BUILT_FROM, json.dumps(values, ensure_ascii=False))
    plan = estimate(run, blueprint, model_name)
    plan.notes = notes
    filter_notes: list[str] = []
    for name in run.recipe.dimensions:
        file_values = run.read_dimension(name)
        every = [v.value for v in file_values]
        scoped = set(values[name])
        plan.available[name] = len(every)
        plan.filtered_out[name] = [v for v in every if v not in scoped]
        plan.unplanned[name] = [v for v in every if v in scoped and not plan.uses[name][v]]
        plan.not_in_file[name] = sorted(set(plan.uses[name]) - set(every))
        f = run.recipe.scope.filters.get(name)
        for key, entry in unmatched(file_values, f) if f is not None else ():
            filter_notes.append(
                f"scope.filters.{name}.{key}: {entry!r} is no value of {name} "
                f"(dimensions/{name}.yaml); it {'keeps' if key == 'keep' else 'drops'} nothing"
            )
    plan.notes += weight_notes(run.recipe.scope.weights, values) + filter_notes
    check_budget(run, plan)
    return plan


def weight_notes(
    weights: Mapping[str, Mapping[str, float]], values: Mapping[str, Sequence[str]]
) -> list[str]:
    """A note per weight that names no value of its axis (a weight matches a value exactly):
    the mix gives that value's cells weight 1, so the misspelt weight does nothing."""
    out = []
    for axis, by_value in weights.items():
        known = list(values.get(axis, []))
        folded = {v.casefold(): v for v in known}
        for v in by_value:
            if v in known:
                continue
            hint = (
                f"did you mean {folded[v.casefold()]!r} (weights match exactly)?"
                if v.casefold() in folded
                else "it weighs nothing; use one of the values in "
                f"dimensions/{axis}.yaml (after the scope's filters)"
            )
            out.append(f"scope.weights.{axis}: {v!r} is no value of {axis}: {hint}")
    return out


def _write_blueprint(run: Run, blueprint: list[Attempt]) -> None:
    path = run.path("blueprint.jsonl")
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(a.to_line(), ensure_ascii=False) + "\n" for a in blueprint))
    tmp.replace(path)
