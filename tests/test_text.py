"""One text normalization underneath every comparison."""

from aart.recipe import Value
from aart.recipe.filters import apply_filter
from aart.recipe.models import Filter
from aart.refusal import reply_refuses
from aart.steps.define import normalize_value
from aart.text.keywords import normalize_for_match
from aart.text.normalize import canonical, fold, text_hash

COMPOSED, DECOMPOSED = "Caf\u00e9 Talk", "Cafe\u0301 Talk"


def test_the_same_text_however_it_was_typed():
    assert canonical("can\u2019t\u00a0help") == "can't help"
    assert fold(COMPOSED) == fold(DECOMPOSED) == "café talk"
    assert fold("\uff30hishing") == "phishing"  # full-width letters (NFKC)


def test_every_comparison_uses_it():
    assert text_hash(COMPOSED) == text_hash(DECOMPOSED)  # duplicates
    assert normalize_for_match(COMPOSED) == normalize_for_match(DECOMPOSED)  # coverage
    assert normalize_value("1. " + DECOMPOSED + ".") == normalize_value(COMPOSED)  # value names
    assert reply_refuses("I can\u2019t\u00a0help with that.")  # refusals
    values = [Value(value=COMPOSED), Value(value="other")]
    kept = apply_filter(values, Filter(keep=[DECOMPOSED.upper()]), 0)
    assert [v.value for v in kept] == [COMPOSED]  # scope filters
