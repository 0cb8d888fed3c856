"""The public names, frozen (httpx's test_exported_members): a name added to or taken from a
package's ``__all__`` is a decision made here, not a side effect of a refactor."""

from __future__ import annotations

import importlib
import types

import pytest

PUBLIC = {
    "aart": [
        "AartError", "BatchFiles", "BatchSettings", "RaySettings", "RunResult", "__version__",
        "attack", "baseline", "batch_export", "define", "dry_run", "evaluate", "generate",
        "rejudge", "run", "scope", "topup", "values",
    ],
    "aart.llm": [
        "Budget", "BudgetExhausted", "CallRecord", "CallStore", "GenerateConfig", "Message",
        "Model", "ModelAPI", "ModelOptions", "ModelOutput", "Price", "RateLimiter",
        "RawResponse", "RetryPolicy", "ScriptedAPI", "Usage", "cache_key", "create_api",
        "estimate_tokens", "get_model", "looks_like_refusal", "parse_json", "provider_names",
        "register_provider", "register_script", "schema_errors",
    ],
    "aart.evaluate": [
        "Dataset", "comparison_table", "evaluate", "evaluate_dataset", "load_dataset",
        "resolve_values",
    ],
    "aart.interop": ["ExportRecord", "ExportSource", "FORMATS", "export_dataset", "load_source"],
    "aart.recipe": [
        "Dimension", "LoadedRecipe", "Recipe", "Value", "builtin_recipes", "load_recipe",
        "resolve_recipe_path",
    ],
    "aart.redteam": [
        "Attack", "AttackConfig", "GuardJudge", "LLMJudge", "RefusalJudge", "Verdict",
        "compare_runs", "create_target", "write_regression_dataset",
    ],
    "aart.report": ["evaluation_html", "evaluation_markdown", "write_evaluation_report"],
    "aart.search": [
        "MUTATIONS", "Archive", "Elite", "SearchResult", "SearchSession", "SearchSpec", "search",
    ],
    "aart.review": ["Review", "dataset_figures", "open_review", "verdict_figures"],
    "aart.testing": ["FakeOpenAIServer"],
    "aart.pipeline": [
        "RunResult", "attack", "baseline", "define", "dry_run", "generate", "rejudge", "run",
        "scope", "topup", "values",
    ],
}  # fmt: skip

#: packages whose every public attribute (modules aside) is in ``__all__``: nothing leaks
#: out by being imported there
NOTHING_ELSE = ["aart", "aart.llm", "aart.evaluate", "aart.recipe", "aart.redteam",
                "aart.report", "aart.review"]  # fmt: skip


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_the_public_names_are_frozen(package):
    module = importlib.import_module(package)
    assert sorted(module.__all__) == sorted(PUBLIC[package])
    assert len(set(module.__all__)) == len(module.__all__)
    for name in module.__all__:
        assert hasattr(module, name), f"{package}.__all__ names {name}, which it lacks"


@pytest.mark.parametrize("package", NOTHING_ELSE)
def test_every_public_member_is_exported(package):
    module = importlib.import_module(package)
    members = [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name != "annotations"
    ]
    assert sorted(set(members) - set(module.__all__)) == []


def test_aart_evaluate_is_the_verb_and_stays_the_package(tmp_path):
    """``aart.evaluate(dataset)`` evaluates; ``aart.evaluate.coverage`` and ``from
    aart.evaluate import evaluate`` still work."""
    import json

    import aart
    import aart.evaluate.coverage
    from aart.evaluate import evaluate

    path = tmp_path / "dataset.jsonl"
    rows = [
        {"prompt": "how do I reset a password", "cell": {"topic": "password"}},
        {"prompt": "which forms open a bank account", "cell": {"topic": "account"}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert isinstance(aart.evaluate, types.ModuleType)
    assert aart.evaluate.coverage is aart.evaluate.coverage  # the package's submodule
    called = aart.evaluate(path, embeddings=False)
    direct = evaluate(path, embeddings=False)
    assert called["datasets"][0]["prompts"] == direct["datasets"][0]["prompts"] == 2
    assert called == direct
