"""What the steps share: building the models a run uses, and the run's context text."""

from __future__ import annotations

from typing import Any

from ..llm import Budget, ModelOptions, Price
from ..llm.endpoints import DEFAULT_KEY_ENV
from ..llm.factory import ModelFactory
from ..llm.providers.base import create_api
from ..llm.transport.base import Execution
from ..recipe import Recipe
from ..store.rundir import Run


def model_options(recipe: Recipe, base_url: str | None = None) -> ModelOptions:
    """The recipe's endpoint settings. A recipe is a shared document, so its base_url and
    api_key_env are untrusted; a ``base_url`` given by the user (a CLI flag) overrides its own
    and receives OPENAI_API_KEY."""
    m = recipe.models
    return ModelOptions(
        base_url=base_url or m.base_url,
        api_key_env=m.api_key_env or DEFAULT_KEY_ENV,
        timeout=m.timeout,
        idle_timeout=m.idle_timeout,
        stream=m.stream,
        adaptive=m.adaptive,
        concurrency=m.concurrency,
        max_retries=m.max_retries,
        rpm=m.rpm,
        tpm=m.tpm,
        structured_retries=m.structured_retries,
        decoding=m.decoding,
        untrusted=True,
        key_named=m.api_key_env is not None,
        bound=((base_url, DEFAULT_KEY_ENV),) if base_url else (),
    )


def preflight(recipe: Recipe, model: str | None, base_url: str | None = None) -> None:
    """Build (and drop) every model a run will use, so a missing key, an unknown provider or
    a secret bound to no host fails before the run directory is created."""
    roles = ["define", "generate"]
    if any(d.verify == "llm" for d in recipe.dimensions.values()):
        roles.append("verify")
    for role in roles:
        create_api(model or recipe.models.for_role(role), model_options(recipe, base_url))


def recipe_prices(recipe: Recipe) -> dict[str, Price]:
    return {
        name: Price(p.input, p.output, p.batch_input, p.batch_output)
        for name, p in recipe.prices.items()
    }


def recipe_budget(recipe: Recipe, spent: dict[str, Any] | None = None) -> Budget:
    """The recipe's budget, counting what earlier invocations already spent (``spent`` as
    :meth:`RunDB.call_totals` gives it)."""
    b = recipe.budget
    return Budget.resuming(
        spent, max_calls=b.max_calls, max_tokens=b.max_tokens, max_cost=b.max_cost
    )


def run_models(
    run: Run,
    *,
    use_cache: bool = True,
    base_url: str | None = None,
    execution: Execution | None = None,
) -> ModelFactory:
    """The factory every step of a run builds its models with (``execution``: how their calls
    travel; close the factory to stop what it started)."""
    return ModelFactory(
        options=model_options(run.recipe, base_url),
        store=run.db,
        use_cache=use_cache,
        prices=recipe_prices(run.recipe),
        budget=recipe_budget(run.recipe, run.db.call_totals()),
        execution=execution or Execution(),
    )


def price_for(recipe: Recipe, model_name: str) -> Price:
    return recipe_prices(recipe).get(model_name, Price())


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
