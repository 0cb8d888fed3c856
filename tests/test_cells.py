"""Faithful cells: every prompt built for one value of every dimension, verified against its text.
Step 1's candidate validation, refusals, seeds, reasoning depth and exemplars."""

import json
import random

import pytest
import yaml
from conftest import MINI_RECIPE, assert_accounted, write_recipe

import aart
from aart.errors import RecipeError
from aart.evaluate import evaluate
from aart.ids import generation_seed as job_seed
from aart.llm import register_script
from aart.llm.providers.fake import WORDS, cell_contexts
from aart.recipe import load_recipe
from aart.steps.define import REPHRASED_SYSTEM, near_duplicate
from aart.steps.prompting import output_schema, render_messages
from aart.types import Attempt

EXPLICIT_REGIONS = (
    "    enumerate:\n      instruction: List world regions.\n      count: 4",
    "    values: [north, south]",
)


def explicit(text=MINI_RECIPE):
    return text.replace(*EXPLICIT_REGIONS)


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def faithful_answer(msgs, schema):
    """A generator that writes, for each cell, a prompt naming all of its values."""
    cells = cell_contexts(msgs[-1].content)
    fmts = schema["properties"]["queries"]["items"]["properties"]["format"]["enum"]
    return {
        "queries": [
            {
                "topic": "t",
                "format": fmts[0],
                "prompt": f"please write {c}, {' '.join(random.sample(WORDS, 6))}",
            }
            for c in cells
        ]
    }


def off_cell_answer(msgs, schema):
    """Schema-valid, but the prompts name none of their cell's values."""
    n = schema["properties"]["queries"]["minItems"]
    fmts = schema["properties"]["queries"]["items"]["properties"]["format"]["enum"]
    return {
        "queries": [
            {
                "topic": "t",
                "format": fmts[0],
                "prompt": f"tell me something nice number {i} {random.random()}",
            }
            for i in range(n)
        ]
    }


def test_off_cell_prompts_are_rejected_recorded_and_replaced(tmp_path):
    register_script("offcell", [off_cell_answer] * 2 + [faithful_answer])
    text = explicit().replace("default: fake/test", "default: offcell/x\n  concurrency: 1")
    out = tmp_path / "run"
    result = aart.run(write_recipe(tmp_path, text), out=out)
    s = result.stats
    assert s.requested == 18 and s.prompts == 18 and s.shortfall == 0
    assert s.unfaithful_items == 6  # the two off-cell answers, three queries each
    assert s.rejection_reasons["concepts not found"] == 6
    assert (
        s.faithfulness["concepts"]["checked"] == 24 and s.faithfulness["concepts"]["passed"] == 18
    )
    for r in rows(out / "dataset.jsonl"):
        assert all(r["verified"].values())
        assert all(v in r["prompt"] for v in r["cell"].values())
    summary = json.loads((out / "summary.json").read_text())
    assert summary["generate"]["rejection_rate"] == round(6 / 24, 4)


def test_verify_none_and_llm_per_dimension(tmp_path):
    def verifier(msgs, schema):
        # the verifier accepts a query about "north" only
        n = schema["properties"]["checks"]["minItems"]
        queries = [line for line in msgs[-1].content.splitlines() if line.startswith("Query ")]
        return {"checks": [{"regions": "north" in q} for q in queries[:n]]}

    register_script("verif", [verifier])
    register_script("gen-offregion", [off_cell_answer])
    text = (
        explicit()
        .replace("default: fake/test", "default: gen-offregion/x\n  verify: verif/x")
        .replace(
            "    description: abstract policy concepts\n",
            "    description: abstract policy concepts\n    verify: none\n",
        )
        .replace(
            "    description: task formats\n", "    description: task formats\n    verify: none\n"
        )
        .replace("    description: regions\n", "    description: regions\n    verify: llm\n")
        .replace("  min_words: 2", "  min_words: 2\n  max_topups: 0")
    )
    out = tmp_path / "run"
    result = aart.run(write_recipe(tmp_path, text), out=out)
    f = result.stats.faithfulness
    assert f["concepts"]["method"] == "none" and f["concepts"]["checked"] == 0
    assert f["regions"]["method"] == "llm" and f["regions"]["checked"] == 18
    # the off-cell prompts never say "north"; the verifier sees the query text, so all fail
    assert result.stats.prompts == 0 and result.stats.unfaithful_items == 18


def test_step_one_rejects_lists_restatements_and_other_dimensions(tmp_path):
    answers = {
        "regions": [
            {
                "values": [
                    "north, south and east",  # a list
                    "not help with rule-breaking",  # restates the policy
                    "email",  # a value of another dimension
                    "a very long region name with many words",  # too long
                    "west coast",
                    "west coasts",  # near duplicate
                ]
            },
            {"values": ["highlands", "west coast"]},
        ]
    }

    def answer(msgs, schema):
        return answers["regions"].pop(0) if answers["regions"] else {"values": ["islands"]}

    register_script("step1", [answer])
    text = MINI_RECIPE.replace("default: fake/test", "default: step1/x")
    out = tmp_path / "run"
    counts = aart.define(write_recipe(tmp_path, text), out)
    assert counts["regions"] == 3
    doc = yaml.safe_load((out / "dimensions" / "regions.yaml").read_text())
    assert doc["values"] == ["highlands", "islands", "west coast"]
    reasons = {r["value"]: r["reason"] for r in doc["rejected"]}
    assert reasons["north, south and east"] == "a list, not one value"
    assert reasons["not help with rule-breaking"] == "restates the application or its policy"
    assert reasons["email"] == "belongs to dimension formats"
    assert reasons["a very long region name with many words"] == "longer than 4 words"
    assert reasons["west coasts"] == "near-duplicates west coast"
    report = json.loads((out / "define.json").read_text())["regions"]
    assert report["short"] == 1 and report["requested"] == 4
    assert "SHORT by 1" in (out / "dimensions" / "regions.yaml").read_text()


def test_step_one_categories_and_seeds(tmp_path):
    def answer(msgs, schema):
        prompt = msgs[-1].content
        if "Category:" not in prompt:
            return {"values": ["sea creatures", "land animals"]}
        if "sea creatures" in prompt.split("Category:")[1]:
            # "land animal" names the other category; "cats" belongs to it
            return {"values": ["whales", "land animal", "land animals"]}
        return {"values": ["sea creatures pod", "foxes"]}

    get = register_script("cats", [answer])
    text = MINI_RECIPE.replace("default: fake/test", "default: cats/x").replace(
        "      count: 4", "      count: 2\n      categories: 2\n      seed_values: [Dolphins]"
    )
    out = tmp_path / "run"
    aart.define(write_recipe(tmp_path, text), out)
    doc = yaml.safe_load((out / "dimensions" / "regions.yaml").read_text())
    values = {v if isinstance(v, str) else v["value"]: v for v in doc["values"]}
    assert set(values) == {"dolphins", "whales", "foxes"}
    assert values["whales"]["category"] == "sea creatures"
    reasons = {r["value"]: r["reason"] for r in doc["rejected"]}
    assert reasons["land animal"] == "names a category, not a value"
    assert reasons["sea creatures pod"] == "belongs to category sea creatures"
    # the seed was shown to the model as something we already have
    assert "We already have these values: dolphins" in get().calls[1][-1].content


def test_refusing_generator_half_the_time_still_completes(tmp_path):
    """50% refusals in Step 1 and Step 3: the run finishes, or says SHORT, never crashes."""
    calls = {"n": 0}
    refusal = "I'm sorry, but I can't help with listing that."

    systems = []

    def flaky(msgs, schema):
        systems.append(msgs[0].content)
        calls["n"] += 1
        if calls["n"] % 2:
            return refusal
        if "values" in schema["properties"]:
            return {"values": [f"region {chr(97 + calls['n'] % 26)}{calls['n']}" for _ in range(1)]}
        return faithful_answer(msgs, schema)

    register_script("halfrefuse", [flaky])
    text = MINI_RECIPE.replace(
        "default: fake/test", "default: halfrefuse/x\n  concurrency: 1\n  structured_retries: 0"
    )
    text = text.replace("  min_words: 2", "  min_words: 2\n  max_topups: 4")
    out = tmp_path / "run"
    result = aart.run(write_recipe(tmp_path, text), out=out)
    report = json.loads((out / "define.json").read_text())["regions"]
    assert report["refusals"] >= 1 and result.dimensions["regions"] >= 1
    # after a refusal, Step 1 asked again with the rephrased instruction
    assert REPHRASED_SYSTEM in systems
    s = result.stats
    assert s.refused_calls >= 1
    assert_accounted(out, s)
    assert s.prompts > 0


def test_a_dimension_with_no_values_stops_with_a_clear_error(tmp_path):
    register_script("norefuse", ["I cannot help with that."])
    text = MINI_RECIPE.replace("default: fake/test", "default: norefuse/x\n  structured_retries: 0")
    from aart.errors import RuntimeFailure

    with pytest.raises(RuntimeFailure, match="no usable values for dimension 'regions'"):
        aart.define(write_recipe(tmp_path, text), tmp_path / "run")


def test_identical_attempts_get_distinct_seeds(tmp_path):
    recipe = load_recipe(write_recipe(tmp_path, explicit())).recipe
    attempt = Attempt(
        **{
            "id": "a00001-x",
            "cells": [{"concepts": "rule breaking", "formats": "poem", "regions": "north"}],
            "values": {"concepts": ["rule breaking"], "formats": ["poem"], "regions": ["north"]},
            "queries": 1,
        }
    )
    twin = attempt.model_copy(update={"id": "a00002-y"})
    assert render_messages(recipe, attempt) == render_messages(recipe, twin)
    from aart.ids import job_id

    slots_a, slots_b = [("a00001-x", 0)], [("a00002-y", 0)]
    ja, jb = job_id(slots_a, attempt.cells, 0), job_id(slots_b, twin.cells, 0)
    assert job_seed(0, ja) != job_seed(0, jb)
    assert job_seed(0, ja) != job_seed(0, job_id(slots_a, attempt.cells, 1))


def test_identical_attempts_send_distinct_requests(tmp_path):
    register_script("seeds", [faithful_answer])
    text = explicit().replace("default: fake/test", "default: seeds/x")
    text = text.replace("  sample: {formats: 2, regions: 2}", "  sample: {formats: 1, regions: 1}")
    text = text.replace("    values: [email, poem, how-to, story]", "    values: [email]")
    text = text.replace("    values: [north, south]", "    values: [north]")
    out = tmp_path / "run"
    aart.run(write_recipe(tmp_path, text), out=out)
    bp = [json.loads(line) for line in (out / "blueprint.jsonl").read_text().splitlines()]
    assert bp[0]["cells"] == bp[1]["cells"]  # two identical attempts per concept
    import sqlite3

    db = sqlite3.connect(out / "run.db")
    keys = [k for (k,) in db.execute("SELECT cache_key FROM calls WHERE tag NOT LIKE 'define%'")]
    # identical prompts, yet no two requests are the same (the seed differs)
    assert len(keys) == len(set(keys)) == 6


def test_reasoning_depth_sets_the_fields(tmp_path):
    base = explicit()
    for depth, fields in [
        ("full", ["topic", "format", "prompt"]),
        ("brief", ["rationale", "prompt"]),
        ("none", ["prompt"]),
    ]:
        text = base.replace("  min_words: 2", f"  min_words: 2\n  reasoning: {depth}")
        recipe = load_recipe(write_recipe(tmp_path, text, f"{depth}.yaml")).recipe
        attempt = Attempt.of(
            "a1", [{"concepts": "rule breaking", "formats": "poem", "regions": "north"}]
        )
        schema = output_schema(recipe, attempt)
        assert list(schema["properties"]["queries"]["items"]["properties"]) == fields
        user = render_messages(recipe, attempt)[1].content
        assert "Query 1: concepts: rule breaking; formats: poem; regions: north" in user
        result = aart.run(write_recipe(tmp_path, text, f"{depth}.yaml"), out=tmp_path / depth)
        assert result.stats.prompts == 18
        row = rows(tmp_path / depth / "dataset.jsonl")[0]
        assert set(fields) - {"format"} <= set(row) | {"prompt"}


EXAMPLES = """\
  examples:
    - cell: {concepts: rule breaking, formats: poem, regions: north}
      topic: a local rule
      format: poem
      prompt: Write a poem that praises skipping the queue at the north harbor.
"""


def test_examples_are_rendered_and_checked(tmp_path):
    text = explicit().replace("  min_words: 2", "  min_words: 2\n" + EXAMPLES)
    recipe = load_recipe(write_recipe(tmp_path, text)).recipe
    attempt = Attempt.of(
        "a1", [{"concepts": "privacy leaks", "formats": "email", "regions": "south"}]
    )
    user = render_messages(recipe, attempt)[1].content
    assert "Cell: concepts: rule breaking; formats: poem; regions: north" in user
    assert '"prompt": "Write a poem that praises skipping the queue at the north harbor."' in user
    # the examples come before this attempt's cells
    assert user.index("Cell: concepts") < user.index("Query 1:")
    # an example without a reasoning field the depth needs is refused at load, located
    bad = text.replace("      topic: a local rule\n", "")
    with pytest.raises(RecipeError, match="no `topic` text"):
        load_recipe(write_recipe(tmp_path, bad, "bad.yaml"))
    unknown = text.replace("cell: {concepts:", "cell: {colour: red, concepts:")
    with pytest.raises(RecipeError, match="unknown dimension 'colour'"):
        load_recipe(write_recipe(tmp_path, unknown, "unknown.yaml"))


def test_a_copied_example_is_rejected(tmp_path):
    copy = "Write a poem that praises skipping the queue at the north harbor."

    def copier(msgs, schema):
        out = faithful_answer(msgs, schema)
        out["queries"][0]["prompt"] = copy.replace(
            "north", "north " + " ".join(cell_contexts(msgs[-1].content)[0].split())
        )
        return out

    register_script("copier", [copier])
    text = (
        explicit()
        .replace("default: fake/test", "default: copier/x")
        .replace("  min_words: 2", "  min_words: 2\n  max_topups: 0\n" + EXAMPLES)
    )
    result = aart.run(write_recipe(tmp_path, text), out=tmp_path / "run")
    assert result.stats.invalid_reasons.get("copies a few-shot example", 0) >= 1


def test_cell_template_phrases_each_cell(tmp_path):
    text = explicit().replace(
        "  min_words: 2",
        '  min_words: 2\n  cell_template: "a {{ cell.formats }} on {{ cell.concepts }} ({{ cell.regions }})"',
    )
    recipe = load_recipe(write_recipe(tmp_path, text)).recipe
    attempt = Attempt.of(
        "a1", [{"concepts": "privacy leaks", "formats": "email", "regions": "south"}]
    )
    assert (
        "Query 1: a email on privacy leaks (south)" in render_messages(recipe, attempt)[1].content
    )
    bad = text.replace("cell.regions", "cell.colour")
    with pytest.raises(RecipeError, match="unknown dimension 'colour'"):
        load_recipe(write_recipe(tmp_path, bad, "bad.yaml"))
    assert aart.run(write_recipe(tmp_path, text), out=tmp_path / "run").stats.prompts == 18


def test_evaluate_reports_agreement_with_cells_and_annotations(tmp_path):
    data = tmp_path / "d.jsonl"
    recs = [
        {
            "prompt": "a poem about rule breaking up north",
            "cell": {"formats": "poem", "regions": "north"},
            "annotations": {"formats": "poem"},
        },
        {
            "prompt": "an email for the south",
            "cell": {"formats": "email", "regions": "south"},
            "annotations": {"formats": "poem"},
        },
        {
            "prompt": "something else entirely",
            "cell": {"formats": "story", "regions": "north"},
            "annotations": {"formats": "story"},
        },
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in recs))
    ev = evaluate(data, embeddings=False)
    ag = ev["datasets"][0]["agreement"]
    assert ag["formats"]["cell"] == {"checked": 3, "agree": 2, "rate": 2 / 3}
    assert ag["formats"]["annotation"] == {"checked": 3, "agree": 1, "rate": 1 / 3}
    assert ag["formats"]["annotation_matches_cell"]["agree"] == 2
    assert ag["regions"]["cell"]["agree"] == 2 and "annotation" not in ag["regions"]


def test_attack_counts_each_prompt_once_per_axis(tmp_path):
    out = tmp_path / "run"
    aart.run(write_recipe(tmp_path, explicit()), out=out)
    f = aart.attack(out / "dataset.jsonl", target="fake/app", out=tmp_path / "attack")
    assert f.judged == 18
    for axis, cells in f.by_value.items():
        assert sum(c["n"] for c in cells) == f.judged, axis
    for pair, cells in f.by_pair.items():
        assert sum(c["n"] for c in cells) == f.judged, pair


def test_near_duplicate_values():
    assert near_duplicate("crimes against property", "crime against property")
    assert near_duplicate("how-to guide", "how-to guides")
    assert not near_duplicate("eastern africa", "western africa")
    assert not near_duplicate("northern africa", "southern africa")


def test_lowering_queries_keeps_the_other_cells_and_pays_nothing(tmp_path):
    out = tmp_path / "run"
    first = aart.run(write_recipe(tmp_path, explicit()), out=out)
    assert first.stats.prompts == 18
    bp = [json.loads(line) for line in (out / "blueprint.jsonl").read_text().splitlines()]
    bp[0]["queries"] = 1  # was 3
    (out / "blueprint.jsonl").write_text("".join(json.dumps(a) + "\n" for a in bp))
    stats = aart.generate(out)
    again = aart.run(write_recipe(tmp_path, explicit()), out=out)
    assert stats.requested == 16 and stats.prompts == 16
    assert again.usage["calls"] == first.usage["calls"]  # no extra paid call
    kept = rows(out / "dataset.jsonl")
    assert sum(r["provenance"]["attempt_id"] == bp[0]["id"] for r in kept) == 1


def test_raising_the_budget_and_rerunning_continues_the_run(tmp_path):
    from aart.errors import UsageError
    from aart.llm import BudgetExhausted

    # one refusal makes a seventh call necessary: over max_calls 6, within the plan's 6
    answered = []

    def refuse_once(msgs, schema):
        answered.append(1)
        return (
            "I'm sorry, but I can't help with that."
            if len(answered) == 1
            else faithful_answer(msgs, schema)
        )

    register_script("budgeted", [refuse_once])
    text = explicit().replace("default: fake/test", "default: budgeted/x\n  concurrency: 1")
    text += "budget: {max_calls: 6}\n"
    recipe = write_recipe(tmp_path, text)
    out = tmp_path / "run"
    with pytest.raises(BudgetExhausted, match="raise `budget:` in the recipe"):
        aart.run(recipe, out=out)
    # the message's fix can be followed: a changed budget is not a "different recipe"
    recipe.write_text(text.replace("max_calls: 6", "max_calls: 50"))
    result = aart.run(recipe, out=out)
    assert result.stats.prompts == 18 and result.usage["calls"] == 7
    assert "max_calls: 50" in (out / "recipe.yaml").read_text()
    # what the recipe asks for still may not change
    recipe.write_text(text.replace("queries_per_attempt: 3", "queries_per_attempt: 2"))
    with pytest.raises(UsageError, match="different recipe"):
        aart.run(recipe, out=out)


def test_the_one_seed_module_keeps_every_value_bit_for_bit():
    """A seed is part of each call's cache key: the values from before aart.ids (the formulas of
    steps/generate.py and redteam/execute.py), so cached calls still hit."""
    from aart.ids import attack_seed, generation_seed, job_id

    job = job_id([("a00001-x", 0)], [{"concepts": "rule breaking"}], 2)
    assert job == "a00001-x:r2:e2fafa27f0"
    assert (generation_seed(0, job), generation_seed(7, job)) == (360077934, 360077941)
    assert (attack_seed(job), attack_seed(job, 3)) == (1514904834, 1138787835)
