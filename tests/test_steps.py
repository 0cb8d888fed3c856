"""The three steps driven by the fake and scripted providers."""

import csv
import json

import pytest
from conftest import MINI_RECIPE, assert_accounted, write_recipe

import aart
from aart.errors import BudgetError, UsageError
from aart.llm import register_script
from aart.llm.providers.fake import cell_contexts
from aart.recipe import load_recipe
from aart.steps.define import normalize_value
from aart.steps.generate import AART_COLUMNS
from aart.store.rundir import Run


def test_normalize_value():
    assert normalize_value("  1. Eastern  Africa. ") == "eastern africa"
    assert normalize_value("- How-To Guide") == "how-to guide"


def test_define_explicit_and_enumerated(mini_recipe, tmp_path):
    out = tmp_path / "run"
    counts = aart.define(mini_recipe, out)
    assert counts == {"concepts": 3, "formats": 4, "regions": 4}
    with Run.open(out) as run:
        assert [v.value for v in run.read_dimension("formats")] == [
            "email",
            "poem",
            "how-to",
            "story",
        ]
        regions = [v.value for v in run.read_dimension("regions")]
    assert regions == sorted(regions) and all(r == r.lower() for r in regions)


def test_a_typo_in_an_edited_dimension_file_is_located_with_its_fix(mini_recipe, tmp_path):
    """A hand edit's `alias:` printed pydantic's "1 validation error for Value ... Extra
    inputs are not permitted" and a link, with no line and no hint."""
    out = tmp_path / "run"
    aart.define(mini_recipe, out)
    path = out / "dimensions" / "formats.yaml"
    text = path.read_text()
    assert "- email\n" in text
    path.write_text(text.replace("- email\n", "- {value: email, alias: [e-mail]}\n"))
    line = path.read_text().splitlines().index("- {value: email, alias: [e-mail]}") + 1
    with Run.open(out) as run, pytest.raises(UsageError) as e:
        run.read_dimension("formats")
    assert f"formats.yaml:{line}: value 1: unknown key 'alias'; did you mean 'aliases'?" in str(
        e.value
    )
    assert "pydantic" not in str(e.value)


def test_define_is_hierarchical_and_deduplicated(tmp_path):
    def answer(msgs, schema):
        prompt = msgs[-1].content
        if "Category:" not in prompt:
            return {"values": ["Alpha Group", "beta group"]}
        if "alpha group" in prompt:
            # a duplicate first, so a "give me more" round is needed
            return (
                {"values": ["three"]}
                if "already have" in prompt
                else {"values": ["One", "one ", "Two"]}
            )
        return {"values": ["Four", "five", "six"]}

    get = register_script("hier", [answer])
    recipe = write_recipe(
        tmp_path,
        MINI_RECIPE.replace("default: fake/test", "default: hier/x").replace(
            "      count: 4", "      count: 3\n      categories: 2"
        ),
    )
    aart.define(recipe, tmp_path / "run")
    with Run.open(tmp_path / "run") as run:
        values = run.read_dimension("regions")
    cats = {v.value: v.category for v in values}
    assert cats["one"] == "alpha group" and cats["three"] == "alpha group"
    assert set(cats) >= {"one", "two", "three", "four", "five", "six"}
    assert [c.role for c in get().calls[0]] == ["system", "user"]


def test_define_rejects_values_that_contain_each_other(tmp_path):
    """ "africa" beside "eastern africa" would be counted in every "eastern africa" prompt."""
    values = ["Eastern Africa", "Africa", "Western Europe", "Europe", "north western europe"]
    register_script("nested", [{"values": values}] * 4)
    text = MINI_RECIPE.replace("default: fake/test", "default: nested/x").replace(
        "      count: 4", "      count: 2"
    )
    aart.define(write_recipe(tmp_path, text), tmp_path / "run")
    with Run.open(tmp_path / "run") as run:
        assert [v.value for v in run.read_dimension("regions")] == [
            "eastern africa",
            "western europe",
        ]
    report = json.loads((tmp_path / "run" / "define.json").read_text())["regions"]
    reasons = {r["value"]: r["reason"] for r in report["rejected"]}
    assert reasons["africa"] == "contained in eastern africa"
    assert reasons["europe"] == "contained in western europe"
    assert reasons["north western europe"] == "contains western europe"
    # the recipe may allow it
    register_script("nested2", [{"values": values}] * 4)
    allowed = text.replace("nested/x", "nested2/x").replace(
        "      count: 2", "      count: 2\n      allow_nested: true"
    )
    aart.define(write_recipe(tmp_path, allowed, "allowed.yaml"), tmp_path / "run2")
    with Run.open(tmp_path / "run2") as run:
        assert [v.value for v in run.read_dimension("regions")] == ["africa", "eastern africa"]


def test_edits_between_steps_are_used(mini_recipe, tmp_path):
    out = tmp_path / "run"
    aart.define(mini_recipe, out)
    dim = out / "dimensions" / "regions.yaml"
    dim.write_text("values: [north pole, south pole]\n")
    aart.scope(out)
    bp = [json.loads(line) for line in (out / "blueprint.jsonl").read_text().splitlines()]
    assert {r for a in bp for r in a["values"]["regions"]} == {"north pole", "south pole"}
    # edit the blueprint: keep one attempt, ask for one query
    bp[0]["queries"] = 1
    (out / "blueprint.jsonl").write_text(json.dumps(bp[0]) + "\n")
    stats = aart.generate(out)
    assert stats.requested == 1 and stats.prompts == 1
    rec = json.loads((out / "dataset.jsonl").read_text().splitlines()[0])
    assert rec["cell"] == bp[0]["cells"][0]
    assert rec["cell"]["regions"] in {"north pole", "south pole"}
    assert rec["annotations"]["formats"] == rec["cell"]["formats"]
    assert rec["provenance"]["attempt_id"] == bp[0]["id"]


def test_scope_filters_and_counts(tmp_path):
    text = MINI_RECIPE.replace(
        "  queries_per_attempt: 3",
        """  queries_per_attempt: 3
  filters:
    formats: {drop: [poem], drop_regex: ["^how"]}""",
    )
    out = tmp_path / "run"
    aart.define(write_recipe(tmp_path, text), out)
    plan = aart.scope(out)
    assert set(plan.uses["formats"]) == {"email", "story"}
    assert plan.attempts == 6 and plan.expected_prompts == 18


def test_scope_filters_ignore_case_and_the_dry_run_ignores_them_for_enumerated_values(tmp_path):
    text = MINI_RECIPE.replace(
        "    values: [rule breaking, unsafe advice, privacy leaks]",
        "    values: [Rule Breaking, Unsafe Advice, Privacy Leaks]",
    ).replace(
        "  queries_per_attempt: 3",
        """  queries_per_attempt: 3
  filters:
    concepts: {keep: [rule breaking, PRIVACY LEAKS]}
    formats: {drop: [Poem]}
    regions: {keep_regex: ["^north"]}""",
    )
    recipe = write_recipe(tmp_path, text)
    est = aart.dry_run(recipe)  # regions are not enumerated yet: no spurious "no values"
    assert est["attempts"] == 4
    out = tmp_path / "run"
    aart.define(recipe, out)
    (out / "dimensions" / "regions.yaml").write_text("values: [north sea, north cape, south]\n")
    plan = aart.scope(out)
    assert set(plan.uses["concepts"]) == {"Rule Breaking", "Privacy Leaks"}
    assert set(plan.uses["formats"]) == {"email", "how-to", "story"}
    assert set(plan.uses["regions"]) == {"north sea", "north cape"}


def test_scope_refuses_counts_the_edited_values_cannot_meet(mini_recipe, tmp_path):
    out = tmp_path / "run"
    aart.define(mini_recipe, out)
    (out / "dimensions" / "formats.yaml").write_text("values: [email]\n")
    with pytest.raises(UsageError, match="asks for 2 values per attempt but 'formats' has only 1"):
        aart.scope(out)


def test_over_budget_blueprint_fails_before_any_call(tmp_path):
    text = MINI_RECIPE + "budget: {max_calls: 3}\n"
    text = text.replace(
        "    enumerate:\n      instruction: List world regions.\n      count: 4",
        "    values: [north, south]",
    )
    recipe = write_recipe(tmp_path, text)
    out = tmp_path / "run"
    with pytest.raises(BudgetError, match="6 calls > max_calls 3"):
        aart.run(recipe, out=out)
    assert not out.exists()  # refused before anything was created or spent
    aart.define(recipe, out)  # explicit values only: no calls
    with pytest.raises(BudgetError, match="6 calls > max_calls 3"):
        aart.scope(out)


def test_run_end_to_end_with_fake(mini_recipe, tmp_path):
    out = tmp_path / "run"
    result = aart.run(mini_recipe, out=out)
    s = result.stats
    assert s.requested == 18 and s.prompts == 18 and s.valid_rate == 1.0
    rows = [json.loads(line) for line in (out / "dataset.jsonl").read_text().splitlines()]
    assert len(rows) == 18 and len({r["id"] for r in rows}) == 18
    p = rows[0]["provenance"]
    assert {
        "run_id",
        "recipe_hash",
        "model",
        "temperature",
        "seed",
        "attempt_id",
        "call_id",
    } <= set(p)
    aart_rows = list(csv.DictReader(open(out / "dataset.aart.csv")))
    assert list(aart_rows[0]) == AART_COLUMNS and aart_rows[0]["crime"] in (
        "rule breaking",
        "unsafe advice",
        "privacy leaks",
    )
    for f in ("dataset.csv", "dataset.parquet", "summary.json", "duplicates.jsonl"):
        assert (out / f).exists()
    calls = result.usage["calls"]
    again = aart.run(mini_recipe, out=out)  # resumes: nothing left to pay for
    assert again.usage["calls"] == calls and again.stats.prompts == 18


WORDS = "amber basalt cedar delta ember fjord garnet harbor indigo juniper kestrel lagoon".split()
# names every value of the test recipe, so it is faithful to any cell
EVERY_VALUE = "a story, email, poem or how-to on rule breaking, unsafe advice or privacy leaks, north or south"


def _item(i, fmt, context):
    words = f"{WORDS[i % 12]} {WORDS[(i * 5 + 1) % 12]} {WORDS[(i * 7 + 3) % 12]}"
    return {
        "topic": f"topic {i}",
        "format": fmt,
        "prompt": f"write a {fmt} on {context}: {words} {i}",
    }


def test_refusals_invalid_items_and_duplicates_are_topped_up(tmp_path):
    counter = {"n": 0}

    prompts_seen = []

    def good(msgs, schema):
        prompts_seen.append(msgs[-1].content)
        cells = cell_contexts(msgs[-1].content)
        fmts = schema["properties"]["queries"]["items"]["properties"]["format"]["enum"]
        counter["n"] += len(cells)
        return {"queries": [_item(counter["n"] * 10 + i, fmts[0], c) for i, c in enumerate(cells)]}

    def mixed(msgs, schema):
        cells = cell_contexts(msgs[-1].content)
        fmts = schema["properties"]["queries"]["items"]["properties"]["format"]["enum"]
        return {
            "queries": [
                _item(1, fmts[0], cells[0]),
                _item(1, fmts[0], cells[0]),  # exact duplicate within the answer
                _item(2, "not-a-format", cells[2]),  # annotation outside the attempt
            ]
        }

    def repeat_first(msgs, schema):
        # the first query repeats one already in the dataset: a duplicate across answers
        out = good(msgs, schema)
        out["queries"][0]["prompt"] = EVERY_VALUE
        return out

    register_script(
        "mixed",
        ["I'm sorry, but I can't help with that."] * 3
        + [repeat_first, mixed, repeat_first]
        + [good] * 20,
    )
    text = (
        MINI_RECIPE.replace("default: fake/test", "default: mixed/x\n  concurrency: 1")
        .replace("attempts_per_value: 2", "attempts_per_value: 1")
        .replace(
            "    enumerate:\n      instruction: List world regions.\n      count: 4",
            "    values: [north, south]",
        )
    )
    text = text.replace(
        "  mix: per-value\n  primary: concepts",
        "  mix: per-value\n  primary: concepts\n  filters: {concepts: {keep: [rule breaking, unsafe advice, privacy leaks]}}",
    )
    result = aart.run(write_recipe(tmp_path, text), out=tmp_path / "run")
    s = result.stats
    assert s.refused_calls == 1
    assert s.invalid_items == 2 and s.exact_duplicates == 1
    assert s.invalid_reasons["exact duplicate within the answer"] == 1
    assert s.requested == 9 and s.prompts == 9 and s.shortfall == 0
    assert s.topup_jobs >= 2
    # the top-up for the duplicated cell was told what already exists for it
    hint = f"(already written for this cell; write something different: {EVERY_VALUE})"
    assert any(hint in p for p in prompts_seen)
    rows = [
        json.loads(line) for line in (tmp_path / "run" / "dataset.jsonl").read_text().splitlines()
    ]
    assert len({r["prompt"] for r in rows}) == 9
    # every cell of the blueprint holds exactly one prompt
    bp = [
        json.loads(line) for line in (tmp_path / "run" / "blueprint.jsonl").read_text().splitlines()
    ]
    assert sorted(json.dumps(r["cell"], sort_keys=True) for r in rows) == sorted(
        json.dumps(c, sort_keys=True) for a in bp for c in a["cells"]
    )


def test_persistent_shortfall_is_reported(tmp_path):
    register_script("refuser", ["I cannot assist with that."])
    text = MINI_RECIPE.replace("default: fake/test", "default: refuser/x").replace(
        "    enumerate:\n      instruction: List world regions.\n      count: 4",
        "    values: [north, south]",
    )
    result = aart.run(write_recipe(tmp_path, text), out=tmp_path / "run")
    assert result.stats.prompts == 0 and result.stats.shortfall == 18
    # every attempt of the first round; the top-ups are not worth their calls
    assert result.stats.refused_calls == 6 and result.stats.topup_jobs == 0
    assert "the model refuses (0 items, 6 answers)" in result.stats.stopped


def test_resume_refuses_a_different_recipe(mini_recipe, tmp_path):
    out = tmp_path / "run"
    aart.define(mini_recipe, out)
    other = write_recipe(
        tmp_path,
        MINI_RECIPE.replace("queries_per_attempt: 3", "queries_per_attempt: 4"),
        "other.yaml",
    )
    with pytest.raises(UsageError, match="different recipe"):
        aart.define(other, out)


@pytest.mark.parametrize("name", ["aart-demo", "hate-harassment", "sexual-content", "bank-chatbot"])
def test_every_builtin_recipe_runs_on_the_fake_model(name, tmp_path):
    result = aart.run(name, out=tmp_path / name, model="fake/test")
    assert result.stats.requested > 0
    assert_accounted(tmp_path / name, result.stats)
    assert result.stats.valid_rate == 1.0


def test_impossible_sample_is_refused_at_load(tmp_path):
    from aart.errors import RecipeError
    from aart.recipe import load_recipe

    text = MINI_RECIPE.replace(
        "sample: {formats: 2, regions: 2}", "sample: {formats: 2, regions: 9}"
    )
    with pytest.raises(RecipeError, match="at most 4"):
        load_recipe(write_recipe(tmp_path, text))


def test_run_over_budget_is_refused_before_step_one(tmp_path):
    text = MINI_RECIPE + "budget: {max_calls: 2}\n"
    register_script("never", [AssertionError("no call may be made")])
    text = text.replace("default: fake/test", "default: never/x")
    with pytest.raises(BudgetError, match="before any call"):
        aart.run(write_recipe(tmp_path, text), out=tmp_path / "run")


def test_a_cost_cap_without_a_price_is_refused_before_any_call(tmp_path):
    from aart.llm.factory import ModelFactory
    from aart.steps.common import recipe_budget, recipe_prices

    register_script("unpriced", [AssertionError("no call may be made")])
    text = explicit_regions(MINI_RECIPE).replace("default: fake/test", "default: unpriced/x")
    text += "budget: {max_cost: 100}\n"
    out = tmp_path / "run"
    with pytest.raises(UsageError, match="no price for unpriced/x"):
        aart.run(write_recipe(tmp_path, text), out=out)
    assert not out.exists()
    # the dry run said "budget max_cost 100 -- within" of the run it refuses
    with pytest.raises(UsageError, match="no price for unpriced/x"):
        aart.dry_run(write_recipe(tmp_path, text))
    priced = text + "prices: {unpriced/x: {input: 1.0, output: 2.0}}\n"
    recipe = load_recipe(write_recipe(tmp_path, priced, "priced.yaml")).recipe
    factory = ModelFactory(prices=recipe_prices(recipe), budget=recipe_budget(recipe))
    factory.check_priced("unpriced/x")  # no error: the cap can now be counted
    with pytest.raises(UsageError, match="no price for other/y"):
        factory.check_priced("other/y")


def explicit_regions(text):
    return text.replace(
        "    enumerate:\n      instruction: List world regions.\n      count: 4",
        "    values: [north, south]",
    )


def test_a_rounds_top_ups_are_packed_into_calls_of_topup_queries_cells(tmp_path):
    """generate.topup_queries: the cells a round left empty are asked for in calls of that
    many cells (the instruction and examples paid fewer times), each allowed max_tokens in
    proportion; by default a top-up call asks for queries_per_attempt cells, as before."""
    from aart.steps.generate import answer_tokens

    def good(msgs, schema):
        cells = cell_contexts(msgs[-1].content)
        fmts = schema["properties"]["queries"]["items"]["properties"]["format"]["enum"]
        n = len(good.seen)
        good.seen.append(len(cells))
        return {"queries": [_item(n * 10 + i, fmts[0], c) for i, c in enumerate(cells)]}

    def refused(msgs, schema):
        fmts = schema["properties"]["queries"]["items"]["properties"]["format"]["enum"]
        no = "I'm sorry, but I can't help with that."
        n = len(cell_contexts(msgs[-1].content))
        return {"queries": [{"topic": "t", "format": fmts[0], "prompt": no}] * n}

    good.seen = []
    base = MINI_RECIPE.replace(
        "    enumerate:\n      instruction: List world regions.\n      count: 4",
        "    values: [north, south]",
    ).replace("  min_words: 2\n", "  min_words: 2\n  min_first_round_fill: 0\n")
    # each first-round call's answer is refused: all 18 cells go to the top-ups
    for packed, calls in ((None, 6), (9, 2)):
        name = f"packs{packed}"
        register_script(name, [refused] * 6 + [good] * 20)
        good.seen = []
        text = base.replace("default: fake/test", f"default: {name}/x\n  concurrency: 1")
        if packed:
            text = text.replace("  min_words: 2\n", f"  min_words: 2\n  topup_queries: {packed}\n")
        result = aart.run(write_recipe(tmp_path, text, f"{name}.yaml"), out=tmp_path / name)
        assert result.stats.prompts == 18 and result.stats.topup_jobs == calls
        assert good.seen == [18 // calls] * calls
    recipe = load_recipe(str(tmp_path / "packs9.yaml")).recipe
    assert answer_tokens(recipe, 3) == answer_tokens(recipe, 2) == recipe.generate.max_tokens
    assert answer_tokens(recipe, 9) == 3 * recipe.generate.max_tokens


RESTRICTED = MINI_RECIPE.replace(
    "  queries_per_attempt: 3",
    """  queries_per_attempt: 3
  restrict:
    privacy leaks: {formats: [email, story]}""",
)


def test_scope_restrict_keeps_a_values_cells_to_its_allowed_values_and_edits_honour_it(tmp_path):
    out = tmp_path / "run"
    aart.define(write_recipe(tmp_path, RESTRICTED), out)
    aart.scope(out)

    def formats_of(concept):
        bp = [json.loads(line) for line in (out / "blueprint.jsonl").read_text().splitlines()]
        return {c["formats"] for a in bp for c in a["cells"] if c["concepts"] == concept}

    assert formats_of("privacy leaks") == {"email", "story"}
    assert len(formats_of("rule breaking") | formats_of("unsafe advice")) > 2
    # a format added takes over cells, never those the restriction keeps from it; one taken
    # out leaves its cells another value
    (out / "dimensions" / "formats.yaml").write_text("values: [email, poem, how-to, story, memo]\n")
    aart.scope(out)
    assert formats_of("privacy leaks") <= {"email", "story"}
    assert "memo" in formats_of("rule breaking") | formats_of("unsafe advice")
    (out / "dimensions" / "formats.yaml").write_text("values: [email, how-to, story, memo]\n")
    aart.scope(out)
    assert formats_of("privacy leaks") <= {"email", "story"}
    assert "poem" not in formats_of("rule breaking") | formats_of("unsafe advice")
    (out / "dimensions" / "formats.yaml").write_text("values: [poem, how-to, story, memo]\n")
    with pytest.raises(UsageError, match=r"scope.restrict.privacy leaks.formats names 'email'"):
        aart.scope(out)  # the restriction names a value the run no longer has: said, not ignored
    (out / "dimensions" / "formats.yaml").write_text("values: [email, poem, how-to, memo]\n")
    with pytest.raises(UsageError, match="names 'story'"):
        aart.scope(out)


def test_scope_restrict_errors_name_the_fix(tmp_path):
    from aart.errors import RecipeError

    text = RESTRICTED.replace("privacy leaks: {formats", "privacy leak: {formats")
    out = tmp_path / "run"
    aart.define(write_recipe(tmp_path, text), out)
    with pytest.raises(UsageError, match="names 'privacy leak', not a value of 'concepts'"):
        aart.scope(out)
    text = RESTRICTED.replace("[email, story]", "[email]")
    aart.define(write_recipe(tmp_path, text), tmp_path / "run2")
    with pytest.raises(UsageError, match="leaves 1 value.* scope.sample.formats asks for 2"):
        aart.scope(tmp_path / "run2")
    with pytest.raises(RecipeError, match="'concepts' is the primary dimension"):
        load_recipe(write_recipe(tmp_path, RESTRICTED.replace("{formats:", "{concepts:")))
    with pytest.raises(RecipeError, match="unknown dimension 'format'"):
        load_recipe(write_recipe(tmp_path, RESTRICTED.replace("{formats:", "{format:")))
    text = RESTRICTED.replace(
        "  mix: per-value\n  primary: concepts\n  attempts_per_value: 2\n", "  mix: balanced\n"
    )
    text = text.replace("  sample: {formats: 2, regions: 2}\n", "")
    with pytest.raises(RecipeError, match="`restrict` applies to the per-value mix only"):
        load_recipe(write_recipe(tmp_path, text))


@pytest.mark.parametrize("mix", ["per-value", "balanced", "pairwise"])
def test_a_filter_that_leaves_no_values_is_an_error_in_the_dry_run_too(tmp_path, mix):
    # before: per-value spun for ever, balanced raised IndexError, pairwise planned 0 prompts
    text = MINI_RECIPE.replace(
        "  queries_per_attempt: 3",
        "  queries_per_attempt: 3\n  filters:\n    formats: {drop: [email, poem, how-to, story]}",
    )
    if mix != "per-value":
        text = text.replace("  mix: per-value\n  primary: concepts\n  attempts_per_value: 2\n", "")
        text = text.replace("  sample: {formats: 2, regions: 2}\n", f"  mix: {mix}\n")
    with pytest.raises(UsageError, match="scope.filters.formats leaves no values of 'formats'"):
        aart.dry_run(write_recipe(tmp_path, text))


def test_a_keep_or_drop_entry_that_names_no_value_is_a_note(tmp_path):
    text = MINI_RECIPE.replace(
        "  queries_per_attempt: 3",
        "  queries_per_attempt: 3\n  filters:\n    formats: {keep: [email, poem, how-too]}",
    )
    out = tmp_path / "run"
    aart.define(write_recipe(tmp_path, text), out)
    plan = aart.scope(out)
    assert set(plan.uses["formats"]) == {"email", "poem"}
    assert any(
        "scope.filters.formats.keep: 'how-too' is no value of formats" in n for n in plan.notes
    )


def test_a_half_written_define_json_does_not_stop_the_next_run(mini_recipe, tmp_path):
    # define.json is now written whole or not at all; one left half-written by an older
    # version (a kill mid-write) was a JSONDecodeError traceback on every later run
    out = tmp_path / "run"
    aart.define(mini_recipe, out)
    whole = (out / "define.json").read_text()
    (out / "define.json").write_text(whole[:40])
    assert aart.run(mini_recipe, out=out).stats.prompts > 0  # its report is lost, not the run


def test_a_runs_recipe_file_is_read_at_the_size_the_run_was_made_at(tmp_path):
    """`aart search` and `aart attack` read RUN/recipe.yaml without its size: the full size's
    verifier model checked a small size's prompts, and the attack listed values it never had."""
    from aart.store.rundir import recipe_at

    text = explicit_regions(MINI_RECIPE) + (
        "sizes:\n  tiny:\n    models: {verify: fake/tinyverifier}\n"
        "    dimensions:\n      regions: {values: [east, west]}\n"
    )
    out = tmp_path / "run"
    aart.run(write_recipe(tmp_path, text), out=out, size="tiny")
    loaded = recipe_at(out / "recipe.yaml").recipe
    assert loaded.models.verify == "fake/tinyverifier"
    assert [v.value for v in loaded.dimensions["regions"].values] == ["east", "west"]
    # a recipe file that is no run's is read as it is
    assert recipe_at(tmp_path / "recipe.yaml").recipe.models.verify is None
