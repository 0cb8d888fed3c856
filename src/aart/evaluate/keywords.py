"""Keyword coverage in one pass: an Aho-Corasick automaton over every value (with aliases and
simple inflections) of every axis, matched on word boundaries in lowercased text."""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping, Sequence

import ahocorasick

from ..recipe import Value

# Lowercase, and turn everything that is not a letter or digit into a space, so that word
# boundaries become spaces and "how-to" matches "how to".
_KEEP = set(string.ascii_lowercase + string.digits)
_TABLE = {i: (chr(i).lower() if chr(i).lower() in _KEEP else " ") for i in range(128)}
_TABLE.update({ord(c): " " for c in "\u00a0\u2018\u2019\u201c\u201d\u2013\u2014\u2026"})


def normalize_for_match(text: str) -> str:
    return " " + text.translate(_TABLE).lower() + " "


def inflections(phrase: str) -> set[str]:
    """The phrase with its last word as written, plural/singular and -ing forms."""
    words = normalize_for_match(phrase).split()
    if not words:
        return set()
    head, last = words[:-1], words[-1]
    forms = {last, last + "s", last + "es", last + "ing"}
    if last.endswith("y") and len(last) > 2:
        forms.add(last[:-1] + "ies")
    if last.endswith("e"):
        forms.add(last[:-1] + "ing")
    if last.endswith("ies") and len(last) > 4:
        forms.add(last[:-3] + "y")
    if last.endswith("es") and len(last) > 3:
        forms.add(last[:-2])
    if last.endswith("s") and len(last) > 2:
        forms.add(last[:-1])
    return {" ".join([*head, f]) for f in forms}


class KeywordMatcher:
    """Find which values of which axes a text mentions."""

    def __init__(self, values: Mapping[str, Sequence[Value]]) -> None:
        self.axes = list(values)
        self.values = {axis: [v.value for v in vals] for axis, vals in values.items()}
        self._auto = ahocorasick.Automaton()
        table: dict[str, set[tuple[int, int]]] = {}
        for ai, (_axis, vals) in enumerate(values.items()):
            for vi, v in enumerate(vals):
                for phrase in [v.value, *v.aliases]:
                    for form in inflections(phrase):
                        table.setdefault(f" {form} ", set()).add((ai, vi))
        for pattern, targets in table.items():
            self._auto.add_word(pattern, tuple(sorted(targets)))
        self.patterns = len(table)
        if table:
            self._auto.make_automaton()

    def match(self, text: str) -> set[tuple[int, int]]:
        """(axis index, value index) pairs mentioned in ``text``."""
        if not self.patterns:
            return set()
        found: set[tuple[int, int]] = set()
        for _, targets in self._auto.iter(normalize_for_match(text)):
            found.update(targets)
        return found

    def mentions(self, text: str, axis: str, value: str) -> bool:
        ai = self.axes.index(axis)
        try:
            vi = self.values[axis].index(value)
        except ValueError:
            return False
        return (ai, vi) in self.match(text)

    def count(self, texts: Iterable[str]) -> tuple[int, list[list[int]], list[int]]:
        """(number of texts, per axis per value the number of texts mentioning it,
        per axis the number of texts mentioning any value)."""
        counts = [[0] * len(self.values[a]) for a in self.axes]
        any_hit = [0] * len(self.axes)
        n = 0
        for text in texts:
            n += 1
            hits = self.match(text)
            axes_hit = set()
            for ai, vi in hits:
                counts[ai][vi] += 1
                axes_hit.add(ai)
            for ai in axes_hit:
                any_hit[ai] += 1
        return n, counts, any_hit
