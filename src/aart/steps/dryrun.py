"""The dry run: calls, tokens, cost and time of a whole run, checked against the budget,
without calling any model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..llm import Usage, estimate_tokens
from ..llm.factory import FREE_PROVIDERS, check_priced
from ..llm.providers.base import check_model_name
from ..recipe import Recipe, Value, load_recipe
from ..recipe.filters import apply_filter
from ..recipe.languages import LANGUAGE_AXIS
from .common import recipe_prices
from .define import NAMES_PER_CALL, given_name, languages_to_name
from .prompting import completion_estimate, render_messages
from .scope import build_blueprint
from .verify import verify_estimate

#: output tokens per second of one request, when the recipe gives none: the embedded model's,
#: measured on a 2-core machine (bench/bench_embedded.py); a fake model answers at once
KNOWN_SPEEDS = {"local": 20.0, "fake": float("inf")}
#: the embedded models by name: (prompt tokens read, tokens written) per second. Reading the
#: prompt is most of a call's time when the answer is short (an injection case's generation
#: prompt is about 1,000 tokens): the 1.5B's calls of the e-mail assistant's small size took
#: 12-73 s (about 30 s each) for 1,030 tokens read and 80-180 written, on one thread of a
#: shared 2-core machine; the 0.5B reads and writes about three times faster
LOCAL_SPEEDS = {
    "local/default": (150.0, 20.0),
    "local/qwen2.5-coder-1.5b": (50.0, 7.0),
}


def dry_run(
    recipe: str | Path, *, model: str | None = None, size: str | None = None, batch: bool = False
) -> dict[str, Any]:
    """Estimate calls, tokens, cost and time of a whole run without calling any model, and
    check them against the budget: enumerated dimensions are stood in for by placeholders of
    the requested counts. ``cost`` is None for a model without a price; ``seconds`` is None
    when the model's speed is unknown (``models.tokens_per_second`` gives it). With
    ``batch``, Step 3 is priced at the batch price and its time is the server's to decide."""
    loaded = load_recipe(recipe, size)
    r = loaded.recipe
    define_model = model or r.models.for_role("define")
    gen_model = model or r.models.for_role("generate")
    verify_model = model or r.models.for_role("verify")
    for name in {define_model, gen_model, verify_model}:
        check_model_name(name)
    define_calls = define_tokens = define_completion = 0
    values: dict[str, list[str]] = {}
    to_name = languages_to_name(r)
    for name, dim in r.dimensions.items():
        if dim.values is not None:
            vals = [v.value for v in dim.values]
            unnamed = {
                lang: sum(1 for v in dim.values if not given_name(v, lang)) for lang in to_name
            }
        else:
            spec = dim.enumerate
            assert spec is not None
            cats = spec.categories or 1
            define_calls += cats + (1 if spec.categories else 0)
            define_tokens += (cats + 1) * (300 + 8 * spec.count)
            define_completion += (cats + 1) * 8 * spec.count
            vals = [f"{name} {i}" for i in range(1, spec.count * cats + 1)]
            unnamed = {lang: len(vals) for lang in to_name}
        if name != LANGUAGE_AXIS:
            # Step 1 asks for each value's name in every other language the recipe lists
            for n in unnamed.values():
                calls = -(-n // NAMES_PER_CALL)
                define_calls += calls
                define_tokens += calls * 300 + 10 * n
                define_completion += 6 * n
        f = r.scope.filters.get(name)
        if f is not None and dim.enumerate is not None:
            # Values Step 1 has not enumerated yet cannot be matched by keep/drop lists or
            # regexes; only the cap on their number is known.
            f = f.model_copy(update={"keep": [], "drop": [], "keep_regex": [], "drop_regex": []})
        if f is not None:
            vals = [v.value for v in apply_filter([Value(value=x) for x in vals], f, r.scope.seed)]
        values[name] = vals
    if r.scope.restrict and any(d.enumerate is not None for d in r.dimensions.values()):
        # Step 1's values are not known yet, so neither what scope.restrict names: the plan
        # counts cells and calls, which a restriction does not change
        r = r.model_copy(update={"scope": r.scope.model_copy(update={"restrict": {}})})
    blueprint = build_blueprint(r, values)
    prompt = sum(estimate_tokens(render_messages(r, a)) for a in blueprint)
    completion = sum(completion_estimate(r, a.queries) for a in blueprint)
    # LLM verification: one verifier call per generation call's answer
    verify_calls = verify_prompt = verify_completion = 0
    for a in blueprint:
        calls, p, c = verify_estimate(r, a.queries)
        verify_calls, verify_prompt, verify_completion = (
            verify_calls + calls,
            verify_prompt + p,
            verify_completion + c,
        )
    total_calls = define_calls + len(blueprint) + verify_calls
    total_tokens = define_tokens + prompt + completion + verify_prompt + verify_completion
    cost = _priced(r, define_model, define_tokens - define_completion, define_completion)
    gen_cost = _priced(r, gen_model, prompt, completion, batch)
    if verify_calls:
        v_cost = _priced(r, verify_model, verify_prompt, verify_completion, batch)
        gen_cost = None if gen_cost is None or v_cost is None else gen_cost + v_cost
    seconds = (
        None
        if batch
        else _seconds(
            r, gen_model, define_completion + completion, define_tokens - define_completion + prompt
        )
    )
    if seconds is not None and verify_calls:
        v_seconds = _seconds(r, verify_model, verify_completion, verify_prompt)
        seconds = None if v_seconds is None else seconds + v_seconds
    b = r.budget
    used = [gen_model] + [define_model] * bool(define_calls) + [verify_model] * bool(verify_calls)
    for name in used:  # the run refuses a capped, unpriced model before any call: so does this
        check_priced(name, b.max_cost, r.prices)
    over = []
    if b.max_calls is not None and total_calls > b.max_calls:
        over.append(f"~{total_calls} calls > max_calls {b.max_calls}")
    if b.max_tokens is not None and total_tokens > b.max_tokens:
        over.append(f"~{total_tokens:,} tokens > max_tokens {b.max_tokens:,}")
    total_cost = None if cost is None or gen_cost is None else cost + gen_cost
    if b.max_cost is not None and total_cost is not None and total_cost > b.max_cost:
        over.append(f"~${total_cost:.4f} > max_cost ${b.max_cost}")
    return {
        "recipe": str(loaded.path),
        "size": size,
        "define_model": define_model,
        "model": gen_model,
        "define_calls": define_calls,
        "define_tokens": define_tokens,
        "attempts": len(blueprint),
        "expected_prompts": sum(a.queries for a in blueprint),
        "generate_calls": len(blueprint),
        "generate_prompt_tokens": prompt,
        "generate_completion_tokens": completion,
        "verify_model": verify_model,
        "verify_calls": verify_calls,
        "verify_tokens": verify_prompt + verify_completion,
        "total_calls": total_calls,
        "total_tokens": total_tokens,
        "cost": total_cost,
        "seconds": seconds,
        "budget": b.model_dump(),
        "over_budget": over,
        "batch": batch,
    }


def _priced(
    r: Recipe, name: str, prompt: int, completion: int, batch: bool = False
) -> float | None:
    if name.startswith(FREE_PROVIDERS):
        return 0.0
    if name not in r.prices:
        return None
    price = recipe_prices(r)[name]
    return (price.batch() if batch else price).cost(Usage(prompt, completion))


def _seconds(r: Recipe, name: str, completion: int, prompt: int = 0) -> float | None:
    provider = name.partition("/")[0]
    if provider == "local" and not r.models.tokens_per_second:
        # the embedded model reads the prompt on the same cores: its time counts
        read, write = LOCAL_SPEEDS.get(name, LOCAL_SPEEDS["local/default"])
        return prompt / read + completion / write
    speed = r.models.tokens_per_second or KNOWN_SPEEDS.get(provider)
    if speed is None:
        return None
    # the embedded model runs one request at a time; an endpoint serves `concurrency`
    parallel = 1 if provider == "local" else (r.models.concurrency or 8)
    return completion / speed / parallel
