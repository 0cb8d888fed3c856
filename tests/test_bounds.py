"""A shared recipe or target file cannot exhaust memory, time or the stack (issue 18, items
16 and 17): YAML aliases and nesting, template execution and filter regexes are bounded, and
each refusal is a one-line located error. No test depends on timing: each asserts the error,
and the per-test timeout turns a regression (a hang) into a failure."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import MINI_RECIPE, write_recipe

from aart.errors import RecipeError, UsageError
from aart.recipe import load_recipe
from aart.recipe import template as template_module
from aart.recipe.filters import apply_filter
from aart.recipe.models import Filter, Value
from aart.redteam.targets import create_target

pytestmark = pytest.mark.timeout(120)

#: nine levels of nine aliases each: 9**9 (387 million) values once expanded, in 400 bytes
ALIAS_BOMB = "bomb0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"bomb{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 10)
)


def aart(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aart", *args], capture_output=True, text=True, timeout=100
    )


def test_a_recipe_of_nested_aliases_is_refused_at_the_alias(tmp_path):
    recipe = write_recipe(tmp_path, MINI_RECIPE + ALIAS_BOMB)
    with pytest.raises(RecipeError, match=r"recipe.yaml:\d+:\d+: its aliases expand it to more"):
        load_recipe(recipe)
    r = aart("run", str(recipe), "--dry-run")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "expand it to more than 200,000 values" in r.stderr and "fix:" in r.stderr


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path):
    recipe = write_recipe(tmp_path, MINI_RECIPE + "loop: &me [1, *me]\n")
    with pytest.raises(RecipeError, match=r"recipe.yaml:\d+:\d+: an alias refers to"):
        load_recipe(recipe)


def test_ordinary_aliases_still_load(tmp_path):
    text = MINI_RECIPE.replace(
        "    values: [email, poem, how-to, story]", "    values: &formats [email, poem]"
    )
    text += "sizes:\n  small: {scope: {attempts_per_value: 1}}\n  same: &same {}\n  again: *same\n"
    loaded = load_recipe(write_recipe(tmp_path, text))
    assert [v.value for v in loaded.recipe.dimensions["formats"].values] == ["email", "poem"]


@pytest.mark.parametrize("nesting", ["flow", "block"])
def test_a_deeply_nested_recipe_is_a_one_line_located_error(tmp_path, nesting):
    if nesting == "flow":
        deep = "extra: " + "[" * 50_000 + "]" * 50_000 + "\n"
    else:
        deep = "extra:\n" + "".join("  " * i + "k:\n" for i in range(1, 400))
    recipe = write_recipe(tmp_path, MINI_RECIPE + deep)
    with pytest.raises(RecipeError, match=r"recipe.yaml:\d+:\d+: nested more than 64 levels"):
        load_recipe(recipe)
    r = aart("run", str(recipe), "--dry-run")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "RecursionError" not in r.stderr
    assert r.stderr.startswith("error: ") and "nested more than 64 levels deep" in r.stderr


def test_a_target_file_is_bounded_like_a_recipe(tmp_path):
    target = tmp_path / "target.yaml"
    target.write_text("url: http://127.0.0.1:9/chat\n" + ALIAS_BOMB)
    with pytest.raises(UsageError, match=r"target.yaml:\d+:\d+: its aliases expand it"):
        create_target(str(target))
    target.write_text("url: http://127.0.0.1:9/chat\nbody: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(UsageError, match=r"target.yaml:\d+:\d+: nested more than 64"):
        create_target(str(target))


def with_template_line(tmp_path, line: str):
    text = MINI_RECIPE.replace(
        "    Write {{ n }} test queries", "    " + line + "\n    Write {{ n }} test queries"
    )
    return write_recipe(tmp_path, text)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        # loops: 10**10 iterations of an empty body
        (
            "{% for a in 'x' * 100000 %}{% for b in 'x' * 100000 %}{% endfor %}{% endfor %}",
            "runs more than",
        ),
        ("{{ 'x' | center(300000000) }}", "builds more than"),
        ("{{ 'x'.ljust(300000000) }}", "builds more than"),
        ("{{ '%300000000s' | format('x') }}", "builds more than"),
        ("{{ '%300000000s' % 'x' }}", "builds more than"),
        ("{{ '{:>300000000}'.format('x') }}", "builds more than"),
        ("{{ ('x\\n' * 100000) | indent(100000) }}", "builds more than"),
        ("{{ ('x' * 100000) | join('y' * 100000) }}", "builds more than"),
        ("{{ ('x' * 100000) | replace('x', 'y' * 100000) }}", "builds more than"),
        ("{{ (['x' * 100000] * 100000) | join }}", "builds more than"),
        # doubling a string forty times: ~ builds no more than * does
        ("{% set s = 'ab' %}{{ s ~ s ~ s ~ s ~ ('x' * 199999) }}", "builds more than"),
        ("{% for c in 'x' * 100000 %}{{ 'y' * 1000 }}{% endfor %}", "renders more than"),
        ("{% macro f(k) %}{{ f(k) }}{% endmacro %}{{ f(1) }}", "calls itself too deeply"),
        # lists of lists of the same list: 2**40 items once compared
        (
            "{% set x = [1] %}{% set y = [1] %}"
            + "{% set x = [x, x] %}{% set y = [y, y] %}" * 40
            + "{{ x == y }}",
            "builds more than",
        ),
    ],
)
def test_a_template_that_runs_or_builds_too_much_is_refused_at_load(tmp_path, line, reason):
    with pytest.raises(RecipeError, match=r"recipe.yaml:\d+:\d+: generate.template: .*" + reason):
        load_recipe(with_template_line(tmp_path, line))


def test_a_memory_error_in_the_load_time_check_is_not_swallowed(tmp_path, monkeypatch):
    def exhausted(value):
        raise MemoryError

    monkeypatch.setitem(template_module._ENV.filters, "upper", exhausted)
    with pytest.raises(RecipeError, match=r"recipe.yaml:\d+:\d+: .*more memory than there is"):
        load_recipe(with_template_line(tmp_path, "{{ n | upper }}"))


def test_ordinary_templates_render_as_before():
    out = template_module.render(
        "{% for c in cells %}{{ c.risk | upper }} {{ '%s-%d' | format('a', 3) }} "
        "{{ '{:>4}'.format('x') }} {{ c.risk ~ '!' }}{% endfor %} {{ values | tojson }}",
        {"cells": [{"risk": "r"}, {"risk": "s"}], "values": {"a": ["b"]}},
    )
    assert out == 'R a-3    x r!S a-3    x s! {"a": ["b"]}'


@pytest.mark.parametrize(
    "body",
    [
        '{message: "{{ prompt | center(300000000) }}"}',
        '{message: "{% for a in prompt * 100000 %}{% for b in prompt * 100000 %}'
        '{% endfor %}{% endfor %}"}',
        '{message: "{{ prompt | json | indent(300000000) }}"}',
    ],
)
def test_the_http_targets_body_template_is_bounded(tmp_path, body):
    target = tmp_path / "target.yaml"
    target.write_text(f"url: http://127.0.0.1:9/chat\nbody: {body}\n")
    with pytest.raises(UsageError, match=r"target.yaml: body: .*(runs|builds) more than"):
        create_target(str(target))


def test_a_backtracking_filter_regex_does_not_hang():
    values = [Value(value="a" * 40 + "b"), Value(value="aaaa")]
    kept = apply_filter(values, Filter(drop_regex=["^(a+)+$"]), seed=0)
    assert [v.value for v in kept] == ["a" * 40 + "b"]


def test_a_regex_re2_cannot_compile_is_a_located_recipe_error(tmp_path):
    text = MINI_RECIPE.replace(
        "  queries_per_attempt: 3",
        '  queries_per_attempt: 3\n  filters:\n    formats: {drop_regex: ["(e)\\\\1"]}',
    )
    recipe = write_recipe(tmp_path, text)
    with pytest.raises(RecipeError, match=r"recipe.yaml:\d+:\d+: .*RE2 syntax"):
        load_recipe(recipe)
    r = aart("run", str(recipe), "--dry-run")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "re2.cc" not in r.stderr


def test_a_template_cannot_name_the_filters_that_count_its_loops(tmp_path):
    line = "{% for a in ('x' * 100000) | _aart_loop(-1000000) %}{% endfor %}"
    with pytest.raises(RecipeError, match=r"recipe.yaml:\d+: generate.template: No filter named"):
        load_recipe(with_template_line(tmp_path, line))


@pytest.mark.parametrize(
    ("body", "message"),
    [('{m: "{{ prompt "}', "body: unexpected end of template"), ('{m: "{{ promt }}"}', "promt")],
)
def test_a_bad_body_template_is_a_usage_error_at_load(tmp_path, body, message):
    target = tmp_path / "target.yaml"
    target.write_text(f"url: http://127.0.0.1:9/chat\nbody: {body}\n")
    with pytest.raises(UsageError, match=message):
        create_target(str(target))
