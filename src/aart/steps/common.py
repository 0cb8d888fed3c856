"""What the steps share: building the models a run uses, and the run's context text."""

from __future__ import annotations

from ..errors import UsageError
from ..llm import Budget, Model, ModelOptions, Price, get_model
from ..recipe import Recipe
from ..store.rundir import Run


def model_options(recipe: Recipe) -> ModelOptions:
    m = recipe.models
    return ModelOptions(
        base_url=m.base_url,
        api_key_env=m.api_key_env,
        timeout=m.timeout,
        concurrency=m.concurrency,
        max_retries=m.max_retries,
        rpm=m.rpm,
        tpm=m.tpm,
        structured_retries=m.structured_retries,
        decoding=m.decoding,
    )


def run_budget(run: Run) -> Budget:
    """The recipe's budget, counting what earlier invocations of this run already spent."""
    b = run.recipe.budget
    spent = run.db.call_totals()
    return Budget(
        max_calls=b.max_calls,
        max_tokens=b.max_tokens,
        max_cost=b.max_cost,
        calls=spent["calls"],
        tokens=spent["prompt_tokens"] + spent["completion_tokens"],
        cost=spent["cost"],
    )


def price_for(recipe: Recipe, model_name: str) -> Price:
    p = recipe.prices.get(model_name)
    return Price(p.input, p.output) if p else Price()


# Providers whose calls cost nothing, so a cost cap needs no price for them.
FREE_PROVIDERS = ("local/", "fake/")


def check_priced(recipe: Recipe, model_name: str) -> None:
    """A cost cap needs a price: refuse, before any call, a capped run of an unpriced model."""
    if recipe.budget.max_cost is None or model_name.startswith(FREE_PROVIDERS):
        return
    if model_name not in recipe.prices:
        raise UsageError(
            f"budget.max_cost is set but the recipe has no price for {model_name}, so the cap "
            f"could never be reached; add prices: {{{model_name}: {{input: ..., output: ...}}}} "
            "(US dollars per million tokens) or remove max_cost"
        )


def stage_model(
    run: Run, stage: str, override: str | None, use_cache: bool, budget: Budget | None = None
) -> Model:
    name = override or run.recipe.models.for_stage(stage)
    check_priced(run.recipe, name)
    return get_model(
        name,
        model_options(run.recipe),
        store=run.db,
        use_cache=use_cache,
        price=price_for(run.recipe, name),
        budget=budget or run_budget(run),
    )


def application_brief(recipe: Recipe) -> str:
    a = recipe.application
    lines = [f"Application: {a.name}"]
    if a.description:
        lines.append(f"Description: {a.description.strip()}")
    if a.audience:
        lines.append(f"Users: {a.audience.strip()}")
    if a.languages:
        lines.append(f"Languages: {', '.join(a.languages)}")
    if a.policy:
        lines.append(f"Policy:\n{a.policy.strip()}")
    return "\n".join(lines)
