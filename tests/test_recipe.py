import pytest
from conftest import MINI_RECIPE, write_recipe

from aart.errors import RecipeError
from aart.recipe import builtin_recipes, load_recipe
from aart.recipe.template import render


def line_of(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def err(tmp_path, text):
    with pytest.raises(RecipeError) as e:
        load_recipe(write_recipe(tmp_path, text))
    return e.value


def test_mini_recipe_loads(mini_recipe):
    loaded = load_recipe(mini_recipe)
    assert loaded.recipe.dimensions["concepts"].values[0].value == "rule breaking"
    assert len(loaded.hash) == 16


def test_unknown_key_has_file_line_and_fix(tmp_path):
    text = MINI_RECIPE.replace("  attempts_per_value: 2", "  attempts_per_valu: 2")
    e = err(tmp_path, text)
    assert e.file.endswith("recipe.yaml") and e.column == 3
    assert e.line == line_of(text, "attempts_per_valu")
    assert "unknown key 'attempts_per_valu'" in str(e) and "fix:" in str(e)
    assert "did you mean 'attempts_per_value'?" in str(e)
    # a key like no known one: no guess
    e = err(tmp_path, MINI_RECIPE.replace("  attempts_per_value: 2", "  zzqx: 2"))
    assert "did you mean" not in str(e) and "remove this key" in str(e)


def test_a_value_listed_twice_is_a_located_error(tmp_path):
    """`europe` twice made two identical cells and counted it twice, without a word."""
    text = MINI_RECIPE.replace(
        "values: [email, poem, how-to, story]", "values: [email, poem, Email]"
    )
    e = err(tmp_path, text)
    assert e.line == line_of(text, "values: [email, poem, Email]")
    assert "value 'Email' is listed twice; list each once" in str(e)


def test_a_misspelt_required_key_is_reported_as_the_misspelling_first(tmp_path):
    # pydantic lists "missing 'dimensions'" before "unknown 'dimensons'"; the fix is the spelling
    text = MINI_RECIPE.replace("dimensions:", "dimensons:", 1)
    e = err(tmp_path, text)
    assert "unknown key 'dimensons'" in str(e) and "did you mean 'dimensions'?" in str(e)
    assert e.line == line_of(text, "dimensons:")
    assert "(and 1 more problem)" in str(e)


def test_a_value_out_of_its_bounds_or_of_another_type_says_the_fix(tmp_path):
    e = err(tmp_path, MINI_RECIPE.replace("queries_per_attempt: 3", "queries_per_attempt: 0"))
    assert "fix: use a number at least 1" in str(e)
    e = err(tmp_path, MINI_RECIPE.replace("queries_per_attempt: 3", "queries_per_attempt: [1]"))
    assert "fix: write a whole number" in str(e)


def test_wrong_type_points_at_value(tmp_path):
    e = err(tmp_path, MINI_RECIPE.replace("queries_per_attempt: 3", "queries_per_attempt: many"))
    assert e.line == line_of(MINI_RECIPE, "queries_per_attempt") and "whole number" in str(e)


def test_missing_required_key(tmp_path):
    e = err(tmp_path, MINI_RECIPE.replace("name: mini\n", ""))
    assert "missing required key 'name'" in str(e)


def test_unknown_dimension_in_scope(tmp_path):
    e = err(tmp_path, MINI_RECIPE.replace("primary: concepts", "primary: concept"))
    assert e.line == line_of(MINI_RECIPE, "primary:") and "unknown dimension 'concept'" in str(e)


def test_empty_values_refused(tmp_path):
    e = err(tmp_path, MINI_RECIPE.replace("values: [email, poem, how-to, story]", "values: []"))
    assert "empty" in str(e) and e.line == line_of(MINI_RECIPE, "values: [email")


def test_yaml_syntax_error_located(tmp_path):
    e = err(tmp_path, MINI_RECIPE.replace("  name: Test assistant", "  name: [unclosed"))
    assert e.line is not None and "not valid YAML" in str(e)


def test_a_key_given_twice_is_located_not_silently_replaced(tmp_path):
    # a section appended at the end that the recipe already has replaced the first one whole:
    # "generate.template: missing required key 'template'", pointing at the template's line
    text = MINI_RECIPE + "generate:\n  max_topups: 2\n"
    e = err(tmp_path, text)
    assert "'generate' is given twice" in str(e), str(e)
    assert e.line == len(MINI_RECIPE.splitlines()) + 1 and e.column == 1
    assert f"line {line_of(MINI_RECIPE, 'generate:')}" in str(e) and "fix:" in str(e)
    # nested keys too
    e = err(tmp_path, MINI_RECIPE.replace("  min_words: 2\n", "  min_words: 2\n  min_words: 3\n"))
    assert (
        "'min_words' is given twice" in str(e) and e.line == line_of(MINI_RECIPE, "min_words") + 1
    )


def test_template_unknown_dimension(tmp_path):
    e = err(tmp_path, MINI_RECIPE.replace("values.regions", "values.region"))
    assert "unknown dimension 'region'" in str(e)
    assert e.line == line_of(MINI_RECIPE, "as {{ values.formats")


def test_template_unknown_application_field(tmp_path):
    """`application.nme` failed only in Step 3, without file or line."""
    text = MINI_RECIPE.replace("{{ n }}", "{{ n }} for {{ application.nme }}")
    e = err(tmp_path, text)
    assert "`application.nme` is not a field of application" in str(e)
    assert "did you mean `application.name`?" in str(e)
    assert e.file.endswith("recipe.yaml") and e.line == line_of(text, "application.nme")


def test_template_unknown_name(tmp_path):
    e = err(tmp_path, MINI_RECIPE.replace("{{ n }}", "{{ count }}"))
    assert "unknown name(s): count" in str(e)


def test_template_sandbox_refuses_python_internals():
    with pytest.raises(RecipeError, match="unsafe"):
        render("{{ values.__class__.__mro__[1].__subclasses__() }}", {"values": {}})
    with pytest.raises(RecipeError, match="unsafe"):
        render("{{ application.update({'x': 1}) }}", {"application": {}})


def test_sizes_override(tmp_path):
    text = MINI_RECIPE + "sizes:\n  tiny:\n    scope: {queries_per_attempt: 1}\n"
    path = write_recipe(tmp_path, text)
    assert load_recipe(path, "tiny").recipe.scope.queries_per_attempt == 1
    assert load_recipe(path).recipe.scope.queries_per_attempt == 3
    with pytest.raises(RecipeError, match="no size 'huge'"):
        load_recipe(path, "huge")


def test_a_size_removes_a_base_key_with_null(tmp_path):
    # a size that changes the mix must be able to drop the base's per-value settings, which
    # another mix rejects (before: "primary only applies to mix per-value")
    text = MINI_RECIPE + (
        "sizes:\n  mixed:\n    scope:\n      mix: balanced\n      primary: null\n"
        "      attempts_per_value: null\n      sample: null\n      attempts: 2\n"
    )
    scope = load_recipe(write_recipe(tmp_path, text), "mixed").recipe.scope
    assert (scope.mix, scope.primary, scope.attempts) == ("balanced", None, 2)
    assert "attempts_per_value" not in scope.model_fields_set


def test_unknown_recipe_name_lists_builtins():
    with pytest.raises(RecipeError, match="aart-demo"):
        load_recipe("no-such-recipe")


@pytest.mark.parametrize("name", sorted(builtin_recipes()))
def test_builtin_recipes_load_with_every_size(name):
    loaded = load_recipe(name)
    for size in loaded.recipe.sizes:
        load_recipe(name, size)


def test_a_non_utf8_recipe_is_a_located_error(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_bytes(b"name: x\ndescription: caf\xe9\n")
    with pytest.raises(RecipeError, match=r"bad.yaml:2:17: not UTF-8 text \(byte 0xe9\)"):
        load_recipe(path)


@pytest.mark.parametrize(
    "expr",
    ["'x' * 10**10", "10**10 * 'x'", "[1] * 10**9", "10 ** 100000", "'ab' * 150000"],
)
def test_a_template_that_builds_too_much_is_refused_at_load(tmp_path, expr):
    text = MINI_RECIPE.replace(
        "    Write {{ n }} test queries", "    {{ " + expr + " }}\n    Write {{ n }} test queries"
    )
    with pytest.raises(RecipeError, match=r"recipe.yaml:\d+:\d+: .*(builds more|too high)"):
        load_recipe(write_recipe(tmp_path, text))


def test_a_template_of_ordinary_size_still_renders(tmp_path):
    text = MINI_RECIPE.replace(
        "    Write {{ n }} test queries",
        "    {{ '-' * 40 }} {{ 2 ** 8 }}\n    Write {{ n }} test queries",
    )
    loaded = load_recipe(write_recipe(tmp_path, text))
    assert loaded.recipe.generate.template.startswith("{{ '-' * 40 }}")


# -- issue 20 item 5: the data mix is `scope.mix`; "strategy" is for attacks only -------------
@pytest.fixture
def fresh_notes(monkeypatch):
    from aart.recipe import loader

    monkeypatch.setattr(loader, "_noted", set())


def test_the_old_scope_strategy_key_loads_as_mix_with_one_located_note(
    tmp_path, capsys, fresh_notes
):
    text = MINI_RECIPE.replace("  mix: per-value", "  strategy: per-value")
    path = write_recipe(tmp_path, text)
    old = load_recipe(path)
    assert old.recipe.scope.mix == "per-value"
    note = capsys.readouterr().err
    line = line_of(text, "strategy: per-value")
    assert note == (
        f"{path}:{line}:3: note: scope.strategy is now scope.mix (the old name still works); "
        "rename it to `mix:`\n"
    )
    load_recipe(path)  # once per process: the run loads its frozen copy too
    assert capsys.readouterr().err == ""
    # the same recipe as with the new name: a run started before the rename resumes
    assert old.hash == load_recipe(write_recipe(tmp_path, MINI_RECIPE, "new.yaml")).hash


def test_the_hash_of_a_recipe_did_not_change_with_the_rename():
    """recipe_hash is in every run's summary and decides resume: the value before the rename."""
    assert load_recipe("aart-demo").hash == "95c08eb4dcc0a6f1"


def test_the_old_key_in_a_size_is_renamed_too(tmp_path, fresh_notes, capsys):
    text = MINI_RECIPE + "sizes:\n  wide:\n    scope:\n      strategy: balanced\n"
    text = text.replace("  primary: concepts\n  attempts_per_value: 2\n", "")
    text = text.replace("  sample: {formats: 2, regions: 2}\n", "")
    text = text.replace("  mix: per-value\n", "  mix: pairwise\n")
    loaded = load_recipe(write_recipe(tmp_path, text), size="wide")
    assert loaded.recipe.scope.mix == "balanced"
    assert "scope.strategy is now scope.mix" in capsys.readouterr().err


def test_both_the_old_and_the_new_key_is_a_located_error(tmp_path, fresh_notes):
    text = MINI_RECIPE.replace("  mix: per-value", "  mix: per-value\n  strategy: balanced")
    e = err(tmp_path, text)
    assert e.line == line_of(text, "strategy: balanced")
    assert "`strategy` is the old name of `mix`" in str(e) and "keep only `mix:`" in str(e)


SIZED = (
    MINI_RECIPE
    + """sizes:
  small:
    scope:
      queries_per_attempt: 1
"""
)


def test_a_mistake_under_a_size_is_found_without_the_size_and_located_where_it_is(tmp_path):
    text = SIZED.replace("      queries_per_attempt: 1", "      queries_per_attemt: 1")
    line = line_of(text, "queries_per_attemt")
    # found when the recipe is loaded without --size (before: only once someone ran the size)
    e = err(tmp_path, text)
    assert e.line == line and "unknown key 'queries_per_attemt'" in str(e)
    # and with the size, at its own line (before: the top-level scope: line)
    with pytest.raises(RecipeError) as e2:
        load_recipe(write_recipe(tmp_path, text), size="small")
    assert e2.value.line == line and "did you mean 'queries_per_attempt'?" in str(e2.value)
    # a value the size sets out of bounds: at the size's line too
    text = SIZED.replace("      queries_per_attempt: 1", "      queries_per_attempt: 0")
    with pytest.raises(RecipeError) as e3:
        load_recipe(write_recipe(tmp_path, text), size="small")
    assert e3.value.line == line_of(text, "      queries_per_attempt: 0")
    assert (
        load_recipe(write_recipe(tmp_path, SIZED), size="small").recipe.scope.queries_per_attempt
        == 1
    )
