"""Keyword coverage in one pass: an Aho-Corasick automaton over every value (with aliases and
the inflections that belong to it) of every axis, matched on Unicode word boundaries in NFC,
casefolded text."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import ahocorasick

from ..recipe import Value
from ..textsim import fold

# Everything that is not a letter or digit, in any script, is a word boundary: "how-to"
# matches "how to", and «phishing», ¿phishing? and "phishing。" all hold the word phishing.
_NON_WORD = re.compile(r"[\W_]+")
_SIBILANT = ("ss", "x", "z", "ch", "sh")


# ASCII text (most prompts) takes a translate table: same result, a third of the time.
_ASCII = {i: (chr(i).lower() if chr(i).isalnum() else " ") for i in range(128)}


def normalize_for_match(text: str) -> str:
    """:func:`~aart.textsim.fold`ed, every run of non-word characters one space, padded with
    spaces."""
    if text.isascii():
        return " " + " ".join(text.translate(_ASCII).split()) + " "
    return " " + _NON_WORD.sub(" ", fold(text)).strip() + " "


def inflections(phrase: str) -> set[str]:
    """The phrase with its last word as written and in the forms that belong to it: a regular
    plural (poem -> poems, box -> boxes, policy -> policies), the singular of a clear plural
    (policies -> policy, boxes -> box, memos -> memo, manuals -> manual) and the -ing form of a
    verb-like word (email -> emailing). Short words get no forms ("us" must not match
    "using"), and short or ambiguous words ending in s keep it ("news" is not "new", "arms" is
    not "arm", "bus" is not "bu")."""
    words = normalize_for_match(phrase).split()
    if not words:
        return set()
    head, last = words[:-1], words[-1]
    forms = {last}
    if len(last) >= 3 and last.isalpha():
        if last.endswith(_SIBILANT):
            forms.add(last + "es")
        elif last.endswith("y") and last[-2] not in "aeiou":
            forms.add(last[:-1] + "ies")
        elif not last.endswith("s"):
            forms.add(last + "s")
        if last.endswith("ies") and len(last) > 4:
            forms.add(last[:-3] + "y")
        elif last.endswith("es") and last[:-2].endswith((*_SIBILANT, "s")) and len(last) > 4:
            forms.add(last[:-2])
        elif last.endswith(("as", "os")) or (
            len(last) >= 5 and last.endswith("s") and last[-2] not in "siuw"
        ):
            forms.add(last[:-1])  # memos -> memo, manuals -> manual; not news, arms, bus
        if len(last) >= 4 and not last.endswith(("ing", "s")):
            forms.add((last[:-1] if last.endswith("e") else last) + "ing")
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
