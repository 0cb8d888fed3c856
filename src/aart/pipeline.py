"""The public Python API: ``define``, ``scope``, ``generate``, ``run``, ``dry_run`` and
``attack``, sync facades over the async steps, mirroring the CLI commands of the same names."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from .errors import BudgetError, EndpointDown
from .llm import Model, ModelOptions, Price, estimate_tokens
from .llm.factory import ModelFactory
from .recipe import Value, load_recipe
from .recipe.loader import LoadedRecipe
from .redteam.findings import Findings
from .steps.baseline import BaselineStats, load_pool, run_baseline
from .steps.common import recipe_budget, recipe_prices, run_models
from .steps.define import define_report, define_run
from .steps.generate import GenerateStats, generate_run
from .steps.prompting import completion_estimate, render_messages
from .steps.scope import Plan, apply_filter, build_blueprint, scope_run
from .steps.topup import topup_run
from .store.db import RunDB
from .store.rundir import Run

Progress = Callable[[str, int], Callable[[], None]]
T = TypeVar("T")


def default_out(recipe: str | Path, size: str | None) -> Path:
    name = Path(str(recipe)).stem
    return Path("runs") / (f"{name}-{size}" if size else name)


async def _closing(models: ModelFactory, coro: Awaitable[T]) -> T:
    try:
        return await coro
    finally:
        await models.aclose()


def _define(
    run: Run, model: str | None, no_cache: bool, base_url: str | None, force: bool = False
) -> dict[str, int]:
    models = run_models(run, use_cache=not no_cache, base_url=base_url)
    m = models.model(model or run.recipe.models.for_stage("define"))
    return asyncio.run(_closing(models, define_run(run, m, force=force)))


def define(
    recipe: str | Path,
    out: str | Path | None = None,
    *,
    model: str | None = None,
    size: str | None = None,
    no_cache: bool = False,
    force: bool = False,
    base_url: str | None = None,
) -> dict[str, int]:
    """Step 1: enumerate each dimension's values into ``OUT/dimensions/*.yaml``. ``base_url``
    overrides the recipe's endpoint (and, being the user's choice, receives OPENAI_API_KEY)."""
    with Run.create_or_resume(out or default_out(recipe, size), recipe, size) as run:
        return _define(run, model, no_cache, base_url, force)


def scope(run_dir: str | Path, *, model: str | None = None, force: bool = False) -> Plan:
    """Step 2: filter the value lists and write ``blueprint.jsonl``; returns the plan."""
    with Run.open(run_dir) as run:
        return scope_run(run, model or run.recipe.models.for_stage("generate"), force=force)


def generate(
    run_dir: str | Path,
    *,
    model: str | None = None,
    no_cache: bool = False,
    progress: Progress | None = None,
    base_url: str | None = None,
) -> GenerateStats:
    """Step 3: generate the dataset for the blueprint (resuming finished attempts)."""
    with Run.open(run_dir) as run:
        return _generate(run, model, no_cache, progress, base_url)


def _generate(
    run: Run,
    model: str | None,
    no_cache: bool,
    progress: Progress | None,
    base_url: str | None = None,
) -> GenerateStats:
    models = run_models(run, use_cache=not no_cache, base_url=base_url)
    m = models.model(model or run.recipe.models.for_stage("generate"))
    verifier: Model | None = None
    if any(d.verify == "llm" for d in run.recipe.dimensions.values()):
        verifier = models.model(run.recipe.models.verify or model or run.recipe.models.default)
    tick = progress("generate", len(run.read_blueprint())) if progress else None
    return asyncio.run(_closing(models, generate_run(run, m, tick, verifier)))


@dataclass
class RunResult:
    root: Path
    stats: GenerateStats
    plan: Plan
    dimensions: dict[str, int]
    usage: dict[str, Any]
    seconds: float
    outputs: dict[str, str] = field(default_factory=dict)
    #: Step 1 per enumerated dimension: values, requested, short, rejected candidates
    define_report: dict[str, Any] = field(default_factory=dict)

    @property
    def tokens_per_prompt(self) -> float:
        """Tokens spent per prompt in the dataset (to compare with the baselines)."""
        tokens = self.usage["prompt_tokens"] + self.usage["completion_tokens"]
        return tokens / self.stats.prompts if self.stats.prompts else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_dir": str(self.root),
            "dimensions": self.dimensions,
            "define": {
                name: {k: r[k] for k in ("values", "requested", "short", "refusals")}
                | {"rejected": len(r["rejected"])}
                for name, r in self.define_report.items()
            },
            "tokens_per_prompt": round(self.tokens_per_prompt, 1),
            "generate": self.stats.as_dict(),
            "usage": self.usage,
            "wall_seconds": round(self.seconds, 2),
            "outputs": self.outputs,
        }


def run(
    recipe: str | Path,
    *,
    out: str | Path | None = None,
    model: str | None = None,
    size: str | None = None,
    no_cache: bool = False,
    progress: Progress | None = None,
    on_plan: Callable[[Plan], None] | None = None,
    base_url: str | None = None,
) -> RunResult:
    """Define, scope and generate in one go. Re-running with the same ``out`` resumes."""
    start = time.perf_counter()
    root = Path(out or default_out(recipe, size))
    _check_planned_budget(recipe, model, size)
    with Run.create_or_resume(root, recipe, size) as r:
        dims = _define(r, model, no_cache, base_url)
        plan = scope_run(r, model or r.recipe.models.for_stage("generate"))
        if on_plan:
            on_plan(plan)
        stats = _generate(r, model, no_cache, progress, base_url)
        usage = r.db.call_totals()
        outputs = {
            name: str(root / name)
            for name in (
                "dataset.jsonl",
                "dataset.csv",
                "dataset.parquet",
                "dataset.aart.csv",
                "duplicates.jsonl",
                "blueprint.jsonl",
            )
        }
        result = RunResult(
            root, stats, plan, dims, usage, time.perf_counter() - start, outputs, define_report(r)
        )
        (root / "summary.json").write_text(json.dumps(result.as_dict(), indent=2))
        return result


def _check_planned_budget(recipe: str | Path, model: str | None, size: str | None) -> None:
    """Refuse, before Step 1 spends anything (or the run directory exists), a run whose
    estimate exceeds the budget, or whose cost cap has no price to count against."""
    r = load_recipe(recipe, size).recipe
    factory = ModelFactory(prices=recipe_prices(r), budget=recipe_budget(r))
    for stage in ("define", "generate"):
        factory.check_priced(model or r.models.for_stage(stage))
    b = r.budget
    if b.max_calls is None and b.max_tokens is None:
        return
    est = dry_run(recipe, model=model, size=size)
    over = []
    if b.max_calls is not None and est["total_calls"] > b.max_calls:
        over.append(f"~{est['total_calls']} calls > max_calls {b.max_calls}")
    if b.max_tokens is not None and est["total_tokens"] > b.max_tokens:
        over.append(f"~{est['total_tokens']:,} tokens > max_tokens {b.max_tokens:,}")
    if over:
        raise BudgetError(
            "the run is over budget before any call: "
            + "; ".join(over)
            + ". Use a smaller --size, lower the counts, or raise the budget (see --dry-run)."
        )


def dry_run(
    recipe: str | Path, *, model: str | None = None, size: str | None = None
) -> dict[str, Any]:
    """Estimate calls, tokens and cost of a whole run without calling any model: enumerated
    dimensions are stood in for by placeholders of the requested counts."""
    loaded: LoadedRecipe = load_recipe(recipe, size)
    r = loaded.recipe
    define_calls = define_tokens = 0
    values: dict[str, list[str]] = {}
    for name, dim in r.dimensions.items():
        if dim.values is not None:
            vals = [v.value for v in dim.values]
        else:
            spec = dim.enumerate
            assert spec is not None
            cats = spec.categories or 1
            define_calls += cats + (1 if spec.categories else 0)
            define_tokens += (cats + 1) * (300 + 8 * spec.count)
            vals = [f"{name} {i}" for i in range(1, spec.count * cats + 1)]
        f = r.scope.filters.get(name)
        if f is not None and dim.enumerate is not None:
            # Values Step 1 has not enumerated yet cannot be matched by keep/drop lists or
            # regexes; only the cap on their number is known.
            f = f.model_copy(update={"keep": [], "drop": [], "keep_regex": [], "drop_regex": []})
        if f is not None:
            vals = [v.value for v in apply_filter([Value(value=x) for x in vals], f, r.scope.seed)]
        values[name] = vals
    blueprint = build_blueprint(r, values)
    gen_model = model or r.models.for_stage("generate")
    prompt = sum(estimate_tokens(render_messages(r, a)) for a in blueprint)
    completion = sum(completion_estimate(r, a["queries"]) for a in blueprint)
    return {
        "recipe": str(loaded.path),
        "size": size,
        "model": gen_model,
        "define_calls": define_calls,
        "define_tokens": define_tokens,
        "attempts": len(blueprint),
        "expected_prompts": sum(a["queries"] for a in blueprint),
        "generate_calls": len(blueprint),
        "generate_prompt_tokens": prompt,
        "generate_completion_tokens": completion,
        "total_calls": define_calls + len(blueprint),
        "total_tokens": define_tokens + prompt + completion,
    }


def attack(
    dataset: str | Path,
    *,
    target: str,
    out: str | Path,
    judge: str = "refusal",
    classifier: str | None = None,
    recipe: str | Path | None = None,
    system_prompt: str | None = None,
    base_url: str | None = None,
    max_tokens: int = 400,
    limit: int | None = None,
    concurrency: int | None = None,
    no_cache: bool = False,
    baseline: str | Path | None = None,
    progress: Progress | None = None,
    min_judged: float = 0.9,
    prices: dict[str, Price] | None = None,
    max_cost: float | None = None,
) -> Findings:
    """Attack ``target`` with every prompt of ``dataset``, judge the responses, write
    OUT/report.html, report.md, attack.json and failures.jsonl; returns the findings.
    ``findings.inconclusive`` is true when fewer than ``min_judged`` of the prompts got a
    verdict (target errors and unjudged answers), or when an endpoint failed every call and
    the attack stopped (``findings.stopped`` says why): its rate then proves nothing."""
    from .redteam import Attack, AttackConfig, compare_runs, write_regression_dataset
    from .report.attack import write_attack_report

    ds = Path(dataset)
    if recipe is None and (ds.parent / "recipe.yaml").exists():
        recipe = ds.parent / "recipe.yaml"  # a dataset inside a run directory knows its recipe
    app_name = policy = ""
    sp = ""
    budget = None
    all_prices: dict[str, Price] = {}
    if recipe is not None:
        rec = load_recipe(recipe).recipe
        app = rec.application
        app_name, policy, sp = app.name, app.policy, app.system_prompt
        budget = rec.budget
        all_prices = recipe_prices(rec)
    all_prices.update(prices or {})
    config = AttackConfig(
        target=target,
        judge=judge,
        classifier=classifier,
        system_prompt=system_prompt if system_prompt is not None else sp,
        app_name=app_name,
        policy=policy,
        max_tokens=max_tokens,
        limit=limit,
        use_cache=not no_cache,
        options=ModelOptions(base_url=base_url, concurrency=concurrency),
        prices=all_prices,
        max_calls=budget.max_calls if budget else None,
        max_tokens_total=budget.max_tokens if budget else None,
        max_cost=max_cost if max_cost is not None else budget.max_cost if budget else None,
    )
    a = Attack(ds, out, config)
    try:
        tick = progress("attack", len(a.records)) if progress else None
        try:
            findings = asyncio.run(a.run(tick))
        except EndpointDown as e:
            # The target or a judge fails every call: report what was done, inconclusive.
            findings = a.findings()
            findings.stopped = str(e)
    finally:
        a.close()
    outdir = Path(out)
    findings.min_judged = min_judged
    if baseline is not None:
        findings.comparison = compare_runs(findings, Path(baseline))
    write_regression_dataset(findings, outdir / "failures.jsonl")
    write_attack_report(findings, outdir)
    return findings


def baseline(
    method: Literal["zero-shot", "few-shot"],
    *,
    model: str,
    out: str | Path,
    n: int = 160,
    pool: str | Path | None = None,
    shots: int = 5,
    temperature: float = 0.7,
    seed: int = 0,
    no_cache: bool = False,
    base_url: str | None = None,
) -> BaselineStats:
    """A Perez et al. baseline dataset (zero-shot, or stochastic few-shot from ``pool``) in
    ``OUT/dataset.jsonl``, to compare with AART on the same model and token budget.
    Re-running with the same ``out`` spends nothing twice (the responses are cached)."""
    examples = load_pool(pool) if pool else None
    db = RunDB(Path(out) / "run.db")
    models = ModelFactory(options=ModelOptions(base_url=base_url), store=db, use_cache=not no_cache)
    try:
        m = models.model(model)
        return asyncio.run(
            _closing(
                models,
                run_baseline(
                    m,
                    method,
                    n,
                    Path(out),
                    pool=examples,
                    shots=shots,
                    temperature=temperature,
                    seed=seed,
                ),
            )
        )
    finally:
        db.close()


def topup(
    run_dir: str | Path,
    *,
    min_count: int = 1,
    min_share: float = 0.0,
    attempts_per_value: int = 1,
    axes: list[str] | None = None,
) -> dict[str, Any]:
    """Find under-covered values in the run's dataset and append attempts for them to its
    blueprint (running it twice adds nothing twice); ``generate`` then fills only those."""
    with Run.open(run_dir) as run:
        return topup_run(
            run,
            min_count=min_count,
            min_share=min_share,
            attempts_per_value=attempts_per_value,
            axes=axes,
        )


__all__ = [
    "RunResult",
    "attack",
    "baseline",
    "define",
    "dry_run",
    "generate",
    "run",
    "scope",
    "topup",
]
