"""A recipe's languages: the codes and names live with the text primitives
(:mod:`aart.text.languages`); this module adds what needs the recipe's values."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..text.languages import LANGUAGE_AXIS, NAMES, base, check_code, name
from .models import Value

__all__ = ["LANGUAGE_AXIS", "NAMES", "base", "check_code", "name", "values_in"]


def values_in(values: Mapping[str, Sequence[Value]], language: str) -> dict[str, list[Value]]:
    """The values of every axis but the language axis as a prompt in ``language`` names
    them, in the same order: the value's name in that language when it has one (with the
    value and its aliases too when the language is English, which values and aliases are
    written in), else the value as written. So a restated English prompt in a Spanish cell
    does not mention "robo", and no English word stands for it."""
    out: dict[str, list[Value]] = {}
    english = base(language) == "en"
    for axis, vals in values.items():
        if axis == LANGUAGE_AXIS:
            continue
        native = []
        for v in vals:
            name = v.names.get(language) or v.names.get(base(language))
            if english:
                native.append(Value(value=v.value, aliases=[*v.aliases, *filter(None, [name])]))
            else:
                native.append(Value(value=name or v.value))
        out[axis] = native
    return out
