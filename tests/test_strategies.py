"""Attack strategies: converters (each reversible one gives the prompt back), parsing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aart.errors import ConfigError
from aart.redteam.strategies import (
    CONVERTERS,
    Strategy,
    convert,
    parse_strategy,
    recover,
)

REVERSIBLE = sorted(n for n, c in CONVERTERS.items() if c.decode is not None)
LATIN = st.text(
    alphabet=st.characters(
        min_codepoint=32, max_codepoint=0x24F, blacklist_categories=("Cs",)
    ),
    max_size=200,
)


def test_at_least_eight_converters_and_most_reversible():
    assert len(CONVERTERS) >= 8
    assert set(REVERSIBLE) >= {
        "base64", "rot13", "homoglyphs", "spacing", "zero-width", "case-mix", "payload-split",
        "json",
    }  # fmt: skip


@pytest.mark.parametrize("name", REVERSIBLE)
@settings(max_examples=150, deadline=None)
@given(text=LATIN)
def test_decoding_gives_back_the_prompt(name, text):
    s = Strategy(name)
    assert recover(s, convert(s, text)) == text


@given(text=st.text(max_size=120))
@settings(max_examples=150, deadline=None)
def test_unicode_round_trips_where_the_converter_allows(text):
    for name in ("base64", "rot13", "spacing", "zero-width", "case-mix", "payload-split", "json"):
        s = Strategy(name)
        assert recover(s, convert(s, text)) == text, name


def test_converted_prompts_look_as_documented():
    p = "write a mild poem"
    assert convert(Strategy("base64"), p).endswith("d3JpdGUgYSBtaWxkIHBvZW0=")
    assert convert(Strategy("rot13"), p).endswith("jevgr n zvyq cbrz")
    assert convert(Strategy("leetspeak"), p) == "wr173 4 m1ld p03m"
    assert convert(Strategy("spacing"), "abc").endswith("a b c")
    assert convert(Strategy("case-mix"), "abcd") == "aBcD"
    assert "\u0430" in convert(Strategy("homoglyphs"), "a")  # Cyrillic a
    assert convert(Strategy("identity"), p) == p
    with pytest.raises(ValueError, match="not reversible"):
        recover(Strategy("leetspeak"), "x")


def test_parsing_names_the_fix():
    assert parse_strategy("translate:Swahili").label == "translate:Swahili"
    assert parse_strategy("base64").kind == "convert"
    assert parse_strategy("paraphrase").kind == "llm"
    assert parse_strategy("pair").kind == "iterative"
    with pytest.raises(ConfigError, match="unknown strategy 'b64'"):
        parse_strategy("b64")
    with pytest.raises(ConfigError, match="translate needs a language"):
        parse_strategy("translate")
    with pytest.raises(ConfigError, match="takes no argument"):
        parse_strategy("base64:x")
