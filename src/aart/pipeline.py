"""The public Python API: ``define``, ``scope``, ``generate``, ``run``, ``dry_run`` and
``attack``, sync facades over the async steps, mirroring the CLI commands of the same names."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from .errors import BudgetError, EndpointDown, UsageError
from .llm import BudgetExhausted, Model, ModelOptions, Price
from .llm.batch import BatchSettings
from .llm.factory import ModelFactory
from .llm.providers.base import provider_names
from .llm.ray_executor import RaySettings
from .recipe import load_recipe
from .redteam.attack import AttackConfig
from .redteam.findings import Findings
from .runner import Exported
from .steps.baseline import BaselineStats, load_pool, run_baseline
from .steps.common import preflight, recipe_budget, recipe_prices, run_models
from .steps.define import define_report, define_run
from .steps.dryrun import dry_run
from .steps.generate import GenerateStats, generate_run
from .steps.scope import Plan, scope_run
from .steps.topup import topup_run
from .store.db import RunDB
from .store.lock import OutputLock, RunInUse
from .store.rundir import Run

Progress = Callable[[str, int], Callable[[], None]]
#: notes for the user (a change of model, ...): the CLI prints them, a Python user can too
log = logging.getLogger("aart")
T = TypeVar("T")


def default_out(recipe: str | Path, size: str | None) -> Path:
    name = Path(str(recipe)).stem
    return Path("runs") / (f"{name}-{size}" if size else name)


async def _closing(models: ModelFactory, coro: Awaitable[T]) -> T:
    try:
        return await coro
    finally:
        await models.aclose()


def _stage_model(run: Run, models: ModelFactory, stage: str, override: str | None) -> Model:
    """The model of ``stage``, remembered for the later steps once it could be built; a
    change is stated."""
    name = run.model_for(stage, override)
    model = models.model(name)
    before = run.models_used().get(stage)
    if before and before != name:
        log.warning("%s: %s now, where this run used %s before", stage, name, before)
    run.remember_model(stage, name)
    return model


def _define(
    run: Run, model: str | None, no_cache: bool, base_url: str | None, force: bool = False
) -> dict[str, int]:
    models = run_models(run, use_cache=not no_cache, base_url=base_url)
    m = _stage_model(run, models, "define", model)
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
    preflight(load_recipe(recipe, size).recipe, model, base_url)
    with Run.create_or_resume(out or default_out(recipe, size), recipe, size) as run:
        return _define(run, model, no_cache, base_url, force)


def scope(run_dir: str | Path, *, model: str | None = None, force: bool = False) -> Plan:
    """Step 2: filter the value lists and write ``blueprint.jsonl``; returns the plan."""
    with Run.open(run_dir) as run:
        return scope_run(run, run.model_for("generate", model), force=force)


def generate(
    run_dir: str | Path,
    *,
    model: str | None = None,
    no_cache: bool = False,
    progress: Progress | None = None,
    base_url: str | None = None,
    mix_models: bool = False,
    batch: BatchSettings | None = None,
    ray: RaySettings | None = None,
) -> GenerateStats:
    """Step 3: generate the dataset for the blueprint (resuming finished attempts), with the
    model the run was made with unless ``model`` says otherwise; adding prompts of another
    model to a dataset needs ``mix_models``. With ``batch``, the calls go through the
    server's batch API (or are exported for ``vllm run-batch``: then :class:`Exported` is
    raised with the files written). With ``ray``, the calls run on a Ray cluster's workers."""
    with Run.open(run_dir, lock="shared") as run:  # other `aart generate` workers may join
        before = run.db.call_totals()
        stats = _generate(run, model, no_cache, progress, base_url, mix_models, batch, ray)
        after = run.db.call_totals()
        stats.spent_now = {k: after[k] - before[k] for k in after}
        return stats


def _generate(
    run: Run,
    model: str | None,
    no_cache: bool,
    progress: Progress | None,
    base_url: str | None = None,
    mix_models: bool = False,
    batch: BatchSettings | None = None,
    ray: RaySettings | None = None,
) -> GenerateStats:
    name = run.model_for("generate", model)
    before = run.models_used().get("generate")
    if before and before != name and run.db.job_counts("generate").get("done") and not mix_models:
        raise UsageError(
            f"{run.root}'s dataset so far was generated by {before}; generating the rest with "
            f"{name} would mix two models in one dataset. Leave out --model (or give --model "
            f"{before}) to keep {before}, or pass --mix-models to mix them on purpose"
        )
    models = run_models(run, use_cache=not no_cache, base_url=base_url)
    if batch is not None and ray is not None:
        raise UsageError("--batch and --executor ray do not go together: choose one")
    if batch is not None:
        models.batch = batch.queue(run.db, models.budget)
    if ray is not None:
        models.remote = ray.start()
    try:
        return _generate_with(run, models, name, model, progress)
    finally:
        if models.remote is not None:
            models.remote.shutdown()


def _generate_with(
    run: Run, models: ModelFactory, name: str, model: str | None, progress: Progress | None
) -> GenerateStats:
    m = _stage_model(run, models, "generate", model)
    verifier: Model | None = None
    if any(d.verify == "llm" for d in run.recipe.dimensions.values()):
        verifier = _stage_model(run, models, "verify", model)
    if models.batch is not None and m.batch is None:
        raise UsageError(
            f"--batch needs an OpenAI-compatible model (openai/..., on a server with "
            f"/v1/files and /v1/batches, or vllm run-batch); {name} is not one"
        )
    tick = progress(f"generate on {name}", len(run.read_blueprint())) if progress else None
    stats = asyncio.run(_closing(models, generate_run(run, m, tick, verifier, models.batch)))
    stats.model = name
    return stats


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
    #: what this invocation spent (``usage`` is the run's total over every invocation)
    spent_now: dict[str, Any] = field(default_factory=dict)

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
            "spent_this_invocation": self.spent_now,
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
    mix_models: bool = False,
    batch: BatchSettings | None = None,
    ray: RaySettings | None = None,
) -> RunResult:
    """Define, scope and generate in one go. Re-running with the same ``out`` resumes. With
    ``batch``, Step 3 goes through the server's batch API (Steps 1 and 2 are a few calls,
    made online). With ``ray``, Step 3's calls run on a Ray cluster's workers."""
    start = time.perf_counter()
    root = Path(out or default_out(recipe, size))
    _check_planned_budget(recipe, model, size, batch is not None)
    preflight(load_recipe(recipe, size).recipe, model, base_url)  # before creating anything
    r, joined = _start_or_join(root, recipe, size)
    with r:
        before = r.db.call_totals()
        if joined:  # another `aart run` made Steps 1 and 2: this one is a worker of Step 3
            dims = {name: len(r.read_dimension(name)) for name in r.recipe.dimensions}
        else:
            dims = _define(r, model, no_cache, base_url)
        plan = scope_run(r, r.model_for("generate", model))  # joined: reads the blueprint
        if on_plan:
            on_plan(plan)
        if r.db.lock is not None:
            r.db.lock.share()  # Step 3 takes jobs by lease: other workers may join
        stats = _generate(r, model, no_cache, progress, base_url, mix_models, batch, ray)
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
            root,
            stats,
            plan,
            dims,
            usage,
            time.perf_counter() - start,
            outputs,
            define_report(r),
            spent_now={k: usage[k] - before[k] for k in usage},
        )
        with OutputLock(root):
            (root / "summary.json").write_text(json.dumps(result.as_dict(), indent=2))
        return result


def _start_or_join(root: Path, recipe: str | Path, size: str | None) -> tuple[Run, bool]:
    """The run in ``root``, this process alone for Steps 1 and 2 (False); or, when another
    `aart run` of the same recipe is working there, the same run shared once that one is past
    Step 2 (True), so the two split Step 3's jobs."""

    def waiting(holder: str) -> None:
        log.info("%s is in use (%s): waiting to join its Step 3", root, holder)

    for _ in range(3):
        try:
            return Run.create_or_resume(root, recipe, size), False
        except RunInUse:
            joined = Run.join(root, recipe, size, waiting)
            if joined is not None:
                return joined, True
    raise RunInUse(f"{root} is in use by other aart processes; re-run this command later")


def _check_planned_budget(
    recipe: str | Path, model: str | None, size: str | None, batch: bool = False
) -> None:
    """Refuse, before Step 1 spends anything (or the run directory exists), a run whose
    estimate exceeds the budget, or whose cost cap has no price to count against."""
    r = load_recipe(recipe, size).recipe
    factory = ModelFactory(prices=recipe_prices(r), budget=recipe_budget(r))
    for stage in ("define", "generate"):
        factory.check_priced(model or r.models.for_stage(stage))
    if r.budget.max_calls is None and r.budget.max_tokens is None:
        return
    est = dry_run(recipe, model=model, size=size, batch=batch)
    if est["over_budget"]:
        raise BudgetError(
            "the run is over budget before any call: "
            + "; ".join(est["over_budget"])
            + ". Use a smaller --size, lower the counts, or raise the budget (see --dry-run)."
        )


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
    text_column: str = "prompt",
    axis_columns: dict[str, str] | None = None,
    annotation_columns: dict[str, str] | None = None,
    replay: str | Path | None = None,
    strategies: list[str] | None = None,
    attacker: str | None = None,
    max_rounds: int | None = None,
    max_turns: int | None = None,
    batch: BatchSettings | None = None,
    ray: RaySettings | None = None,
) -> Findings:
    """Attack ``target`` with every prompt of ``dataset`` (under every strategy), judge the
    responses, write OUT/report.html, report.md, attack.json and failures.jsonl; returns the
    findings. Settings come from :func:`attack_config`; ``findings.inconclusive`` is true when
    too few prompts got a verdict or an endpoint failed every call."""
    return _run_attack(
        dataset,
        attack_config(
            dataset,
            target=target,
            judge=judge,
            classifier=classifier,
            recipe=recipe,
            system_prompt=system_prompt,
            base_url=base_url,
            max_tokens=max_tokens,
            limit=limit,
            concurrency=concurrency,
            no_cache=no_cache,
            prices=prices,
            max_cost=max_cost,
            text_column=text_column,
            axis_columns=axis_columns,
            annotation_columns=annotation_columns,
            replay=replay,
            strategies=strategies,
            attacker=attacker,
            max_rounds=max_rounds,
            max_turns=max_turns,
            batch=batch,
            ray=ray,
        ),
        out=out,
        baseline=baseline,
        progress=progress,
        min_judged=min_judged,
    )


def attack_config(
    dataset: str | Path,
    *,
    target: str,
    judge: str = "refusal",
    classifier: str | None = None,
    recipe: str | Path | None = None,
    system_prompt: str | None = None,
    base_url: str | None = None,
    max_tokens: int = 400,
    limit: int | None = None,
    concurrency: int | None = None,
    no_cache: bool = False,
    prices: dict[str, Price] | None = None,
    max_cost: float | None = None,
    text_column: str = "prompt",
    axis_columns: dict[str, str] | None = None,
    annotation_columns: dict[str, str] | None = None,
    replay: str | Path | None = None,
    strategies: list[str] | None = None,
    attacker: str | None = None,
    max_rounds: int | None = None,
    max_turns: int | None = None,
    batch: BatchSettings | None = None,
    ray: RaySettings | None = None,
) -> AttackConfig:
    """The attack's settings: the recipe's policy, system prompt, prices, budget and
    strategies (the dataset's run recipe by default), overridden by the arguments."""
    from .redteam import AttackConfig

    ds = Path(dataset)
    if recipe is None and (ds.parent / "recipe.yaml").exists():
        recipe = ds.parent / "recipe.yaml"  # a dataset inside a run directory knows its recipe
    app_name = policy = ""
    sp = ""
    budget = None
    all_prices: dict[str, Price] = {}
    section = None
    if recipe is not None:
        rec = load_recipe(recipe).recipe
        app = rec.application
        app_name, policy, sp = app.name, app.policy, app.system_prompt
        budget = rec.budget
        all_prices = recipe_prices(rec)
        section = rec.attack
    all_prices.update(prices or {})
    return AttackConfig(
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
        budget_names={"max_cost": "--max-cost"} if max_cost is not None else {},
        text_column=text_column,
        axis_columns=axis_columns or {},
        annotation_columns=annotation_columns or {},
        replay=str(replay) if replay is not None else None,
        # the CLI's strategies, else the recipe's attack section (a replay: the earlier
        # attack's, exactly)
        strategies=list(
            strategies or ([] if replay is not None or not section else section.strategies)
        ),
        attacker=attacker or (section.attacker if section else None),
        max_rounds=max_rounds or (section.max_rounds if section else 3),
        max_turns=max_turns or (section.max_turns if section else 4),
        recipe=str(recipe) if recipe is not None else None,
        batch=batch,
        ray=ray,
    )


def _run_attack(
    dataset: str | Path,
    config: AttackConfig,
    *,
    out: str | Path,
    baseline: str | Path | None,
    progress: Progress | None,
    min_judged: float,
) -> Findings:
    """Attack with ``config``, judge the responses, write OUT/report.html, report.md,
    attack.json and failures.jsonl; returns the findings. ``findings.inconclusive`` is true
    when fewer than ``min_judged`` of the prompts got a verdict (target errors and unjudged
    answers), or when an endpoint failed every call and the attack stopped
    (``findings.stopped`` says why): its rate then proves nothing."""
    from .redteam import Attack, compare_runs, write_regression_dataset
    from .redteam.attack import read_baseline
    from .report.attack import write_attack_report

    ds = Path(dataset)
    if baseline is not None:  # refused before any call when judged another way
        judge = config.judge
        read_baseline(Path(baseline), "refusal" if judge == "refusal" else f"llm:{judge}")
    a = Attack(ds, out, config)
    try:
        tick = progress(f"attack on {a.target_name}", len(a.records)) if progress else None
        spent: BudgetExhausted | None = None
        try:
            findings = asyncio.run(a.run(tick))
        except EndpointDown as e:
            # The target or a judge fails every call: report what was done, inconclusive.
            findings = a.findings()
            findings.stopped = str(e)
        except BudgetExhausted as e:  # the partial reports are written, then it is raised
            findings = a.findings()
            findings.stopped = str(e)
            spent = e
    finally:
        a.close()
    outdir = Path(out)
    findings.min_judged = min_judged
    findings.untested = _untested(findings, ds, config.recipe)
    if _is_chat_model(config.target) and not config.system_prompt and config.replay is None:
        findings.warnings.insert(
            0,
            f"no system prompt was sent to {config.target}: it answered as itself, not as the "
            "application; give --system-prompt, or a recipe with application.system_prompt",
        )
    if baseline is not None:
        findings.comparison = compare_runs(findings, Path(baseline))
    with OutputLock(outdir):  # cooperating workers write the reports one at a time
        write_regression_dataset(findings, outdir / "failures.jsonl")
        write_attack_report(findings, outdir)
    if spent is not None:
        raise BudgetExhausted(f"{spent}; the partial reports are in {outdir}") from None
    return findings


def attack_dry_run(dataset: str | Path, **kwargs: Any) -> list[dict[str, Any]]:
    """Calls and tokens per strategy of the attack :func:`attack` would run with the same
    arguments; nothing is called and nothing is written."""
    from .redteam.attack import attack_records
    from .redteam.execute import estimate

    config = attack_config(dataset, **kwargs)
    judges = (config.judge != "refusal") + bool(config.classifier)
    return estimate(
        attack_records(Path(dataset), config),
        judges=judges,
        max_tokens=config.max_tokens,
        max_rounds=config.max_rounds,
        max_turns=config.max_turns,
        system_prompt=config.system_prompt,
    )


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


@dataclass
class BatchFiles:
    """Where Step 3 stands after `aart batch export` or `import`."""

    #: the dataset's figures, once no request waits any more
    stats: GenerateStats | None = None
    #: files written for `vllm run-batch`: (path, model, requests)
    exported: list[tuple[Path, str, int]] = field(default_factory=list)
    #: requests exported earlier whose answers are not imported yet
    waiting: int = 0
    #: (answers stored, exported requests the file left unanswered: exported again)
    imported: tuple[int, int] | None = None


def batch_export(
    run_dir: str | Path,
    *,
    out: str | Path | None = None,
    model: str | None = None,
    import_from: str | Path | None = None,
) -> BatchFiles:
    """Step 3 through files: run the jobs as far as the answers known so far take them (after
    storing those of ``import_from``, a `vllm run-batch` output file), and write the requests
    they need next to ``out`` (default RUN/batches/requests-N.jsonl) in the OpenAI batch
    format. When nothing more is needed, the dataset is written as by :func:`generate`."""
    root = Path(run_dir)
    if import_from is not None and not Path(import_from).is_file():
        raise UsageError(f"{import_from} does not exist: give the output file of vllm run-batch")
    if out is None:
        n = len(list((root / "batches").glob("requests-*.jsonl"))) + 1
        out = root / "batches" / f"requests-{n}.jsonl"
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    settings = BatchSettings(
        export_to=Path(out), import_from=Path(import_from) if import_from else None
    )
    result = BatchFiles()
    with Run.open(run_dir, lock="shared") as run:
        try:
            result.stats = _generate(run, model, False, None, None, False, settings)
        except Exported as e:
            result.exported, result.waiting = e.files, e.waiting
    if settings.made is not None:
        result.imported = settings.made.imported
    return result


def values(run_dir: str | Path, *, attack: str | Path | None = None) -> dict[str, Any]:
    """Per dimension and value: planned, generated, mentioned and attacked (with ``attack``,
    an attack's --out), and the status of a value that did not get there: filtered out,
    never planned, planned but missing."""
    from .steps.values_view import value_view

    with Run.open(run_dir, lock=False) as run:
        return value_view(run, attack)


def _untested(findings: Findings, ds: Path, recipe: str | Path | None) -> dict[str, list[str]]:
    """Per axis, the values of the run's dimension files (for a dataset inside a run) or the
    recipe's explicit values that no attacked prompt had."""
    values: dict[str, list[str]] = {}
    if (ds.parent / "run.db").exists() and (ds.parent / "recipe.yaml").exists():
        with Run.open(ds.parent, lock=False) as r:
            for name in r.recipe.dimensions:
                if r.dimension_path(name).exists():
                    values[name] = [v.value for v in r.read_dimension(name)]
    elif recipe is not None:
        rec = load_recipe(recipe).recipe
        values = {n: [v.value for v in d.values] for n, d in rec.dimensions.items() if d.values}
    out = {}
    for axis, vals in values.items():
        seen = {c["value"] for c in findings.by_value.get(axis, [])}
        missing = [v for v in vals if v not in seen]
        if missing:
            out[axis] = missing
    return out


def _is_chat_model(target: str) -> bool:
    """A provider/model target (not an HTTP target file or a Python callable)."""
    if target.endswith((".yaml", ".yml")) or "/" not in target:
        return False
    return target.partition("/")[0] in provider_names()


def rejudge(
    previous: str | Path,
    *,
    out: str | Path,
    judge: str = "refusal",
    classifier: str | None = None,
    recipe: str | Path | None = None,
    base_url: str | None = None,
    progress: Progress | None = None,
    min_judged: float = 0.9,
    prices: dict[str, Price] | None = None,
    max_cost: float | None = None,
    no_cache: bool = False,
) -> Findings:
    """Judge the responses an earlier attack saved in ``previous`` again, with other judges,
    into ``out``: no call reaches the target. Same outputs as :func:`attack`."""
    from .redteam.attack import attack_dataset

    saved = attack_dataset(Path(previous))
    return attack(
        saved["dataset"],
        target=saved["target"],
        out=out,
        judge=judge,
        classifier=classifier,
        recipe=recipe,
        base_url=base_url,
        limit=saved["limit"],
        no_cache=no_cache,
        progress=progress,
        min_judged=min_judged,
        prices=prices,
        max_cost=max_cost,
        text_column=saved["text_column"],
        axis_columns=saved["axis_columns"],
        annotation_columns=saved["annotation_columns"],
        strategies=saved.get("strategies") or [],
        replay=previous,
    )


__all__ = [
    "RunResult",
    "attack",
    "baseline",
    "define",
    "dry_run",
    "generate",
    "rejudge",
    "run",
    "scope",
    "topup",
    "values",
]
