"""Keyword coverage in one pass: an Aho-Corasick automaton (polars', in Rust) over every value
(with aliases and the inflections that belong to it) of every axis, matched on Unicode word
boundaries in NFKC, casefolded text. Where one value's phrase stands inside another's of the
same axis ("africa" in "eastern africa"), only the longest match counts."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Protocol

import numpy as np
import polars as pl

from .language import languages_of
from .languages import LANGUAGE_AXIS, NAMES, base
from .normalize import fold


class Keyword(Protocol):
    """What the matcher needs of a value (a recipe's :class:`~aart.recipe.Value` is one): its
    text and its aliases. A protocol, so text matching needs nothing from the recipe."""

    @property
    def value(self) -> str: ...

    @property
    def aliases(self) -> Sequence[str]: ...

    @property
    def names(self) -> Mapping[str, str]: ...  # the value's name per language code


# Everything that is not a letter or digit, in any script, is a word boundary: "how-to"
# matches "how to", and «phishing», ¿phishing? and "phishing。" all hold the word phishing.
_NON_WORD = re.compile(r"[\W_]+")
_SIBILANT = ("ss", "x", "z", "ch", "sh")


# ASCII text (most prompts) takes a translate table: same result, a third of the time.
_ASCII = {i: (chr(i).lower() if chr(i).isalnum() else " ") for i in range(128)}


def normalize_for_match(text: str) -> str:
    """:func:`~aart.text.normalize.fold`ed, every run of non-word characters one space, padded with
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


# Texts are matched this many at a time: big enough that polars' streaming engine keeps both
# cores busy, small enough that a batch's matches stay some tens of megabytes.
BATCH = 262_144

# ASCII text (most prompts) is normalized in polars; the rest (NFKC, casefolding) in Python.
# Every ASCII character that is not a letter or digit becomes a space (a literal multi-pattern
# replace, three times faster than a regex), then runs of spaces become one.
_SEPARATORS = [c for c in map(chr, range(128)) if not c.isalnum() and c != " "]
_FAST_NORMALIZED = (
    pl.lit(" ")
    + pl.col("text")
    .str.to_lowercase()
    .str.replace_many(_SEPARATORS, [" "] * len(_SEPARATORS))
    .str.replace_all(" {2,}", " ")
    .str.strip_chars(" ")
    + pl.lit(" ")
)


Texts = Sequence[str] | pl.Series


def as_column(texts: Texts) -> pl.Series:
    """Texts as a polars column (made once per chunk and shared by every measure)."""
    s = texts if isinstance(texts, pl.Series) else pl.Series(texts, dtype=pl.String)
    return s.fill_null("")


def _text_frame(texts: Texts) -> pl.LazyFrame:
    """Row number and text, with :func:`normalize_for_match` already applied (column ``pre``)
    where the text is not ASCII."""
    s = as_column(texts).rename("text")
    pre = pl.repeat(None, len(s), dtype=pl.String, eager=True).rename("pre")
    other = (s.str.len_bytes() != s.str.len_chars()).arg_true()
    if other.len():
        pre = pre.scatter(other, [normalize_for_match(t) for t in s.gather(other).to_list()])
    return pl.LazyFrame([s, pre]).with_row_index("row")


class KeywordMatcher:
    """Find which values of which axes a text mentions. Matching runs over whole batches of
    texts in polars' Aho-Corasick (Rust) on its streaming engine: no Python loop per text or
    per match."""

    def __init__(self, values: Mapping[str, Sequence[Keyword]]) -> None:
        self.axes = list(values)
        self.values = {axis: [v.value for v in vals] for axis, vals in values.items()}
        # value number across all axes, and the axis of each
        self._axis_of = np.array(
            [ai for ai, vals in enumerate(values.values()) for _ in vals], dtype=np.int64
        )
        first = np.cumsum([0, *(len(vals) for vals in values.values())])
        #: the index of the language axis of a multilingual run, if any: its values are
        #: language codes ("es" is also a Spanish word), so a text mentions the language it
        #: is written in, as :func:`~aart.text.language.written_in` reads it
        self._language = language_axis_index(values)
        table: dict[str, set[int]] = {}
        for ai, vals in enumerate(values.values()):
            for vi, v in enumerate(vals):
                if ai == self._language:
                    continue  # told by the prompt's language, not by a word in it
                # a value's names in the recipe's languages are aliases: "robo" is burglary
                for phrase in [v.value, *v.aliases, *v.names.values()]:
                    for form in inflections(phrase):
                        table.setdefault(f" {form} ", set()).add(int(first[ai]) + vi)
        self._first = first
        self._patterns = sorted(table)
        self._nested = _nested_patterns(self._patterns, table, self._axis_of)
        self._enum = pl.Enum(self._patterns)
        self._targets = pl.LazyFrame(
            [(pid, code) for pid, p in enumerate(self._patterns) for code in sorted(table[p])],
            schema={"pid": pl.UInt32, "code": pl.Int64},
            orient="row",
        )
        self.patterns = len(table)

    def _keys(self, texts: Texts) -> np.ndarray:
        """row * values + value number, once for every value a text mentions."""
        keys = self._pattern_keys(texts)
        if self._language is None or not len(texts):
            return keys
        return np.union1d(keys, self._language_keys(texts))

    def _language_keys(self, texts: Texts) -> np.ndarray:
        """The language axis: each text mentions the languages it reads as most
        (:func:`~aart.text.language.languages_of`, what Step 3's verification and the
        per-language coverage read through ``written_in``; a tie mentions both)."""
        assert self._language is not None
        first = int(self._first[self._language])
        codes = {base(v): first + i for i, v in enumerate(self.values[self.axes[self._language]])}
        out = []
        for row, text in enumerate(as_column(texts).to_list()):
            # scored once per text, not once per language of the axis
            for lang in languages_of(text):
                if (code := codes.get(lang)) is not None:
                    out.append(row * len(self._axis_of) + code)
        return np.array(out, dtype=np.int64)

    def _pattern_keys(self, texts: Texts) -> np.ndarray:
        if not self.patterns or not len(texts):
            return np.zeros(0, dtype=np.int64)
        # 32-bit keys when they fit (a batch): half the memory traffic of the unique below
        key = pl.UInt32 if len(texts) * len(self._axis_of) < 2**32 else pl.Int64
        # Patterns are padded with spaces, so overlapping matches must all be reported:
        # " new york " and " york city " share the space between them.
        hits = (
            pl.coalesce("pre", _FAST_NORMALIZED)
            .str.extract_many(self._patterns, overlapping=True)
            .alias("hit")
        )
        found = (
            _text_frame(texts)
            .select("row", hits)
            .explode("hit")
            .drop_nulls("hit")
            .select(
                "row", pl.col("hit").cast(self._enum).to_physical().cast(pl.UInt32).alias("pid")
            )
        )
        if self._nested is not None:
            found = self._longest(found)
        query = found.join(self._targets, on="pid").select(
            (pl.col("row").cast(key) * len(self._axis_of) + pl.col("code").cast(key)).alias("key")
        )
        # a text naming a value in two forms counts once (faster here than inside the query)
        return query.collect(engine="streaming")["key"].unique().to_numpy()

    def _longest(self, found: pl.LazyFrame) -> pl.LazyFrame:
        """Only the longest match counts: an occurrence of " africa " inside an occurrence of
        " eastern africa " is not a mention of africa. A pattern is kept for a text when it
        occurs more often than inside the longer patterns of its axis found there."""
        assert self._nested is not None
        hits = found.group_by("row", "pid").len("n")
        inside = (
            hits.join(self._nested, left_on="pid", right_on="outer")
            .group_by("row", "inner")
            .agg((pl.col("n") * pl.col("times")).sum().alias("inside"))
        )
        return (
            hits.join(inside, left_on=["row", "pid"], right_on=["row", "inner"], how="left")
            .filter(pl.col("n") > pl.col("inside").fill_null(0))
            .select("row", "pid")
        )

    def pairs(self, texts: Texts) -> list[tuple[int, int, int]]:
        """(text index, axis index, value index) for every value a text mentions, once each."""
        keys = self._keys(texts)
        rows, codes = np.divmod(keys, len(self._axis_of))
        axes = self._axis_of[codes]
        return sorted(
            zip(rows.tolist(), axes.tolist(), (codes - self._first[axes]).tolist(), strict=True)
        )

    def mentions(self, texts: Texts, wanted: Sequence[int | None]) -> np.ndarray:
        """Per text, whether it mentions value number ``wanted[i]`` (counted across all axes,
        in order); False where there is none."""
        rows = np.array([i for i, w in enumerate(wanted) if w is not None], dtype=np.int64)
        codes = np.array([w for w in wanted if w is not None], dtype=np.int64)
        hit = np.isin(rows * len(self._axis_of) + codes, self._keys(texts))
        out = np.zeros(len(wanted), dtype=bool)
        out[rows] = hit
        return out

    def match(self, text: str) -> set[tuple[int, int]]:
        """(axis index, value index) pairs mentioned in ``text``."""
        return {(ai, vi) for _, ai, vi in self.pairs([text])}

    def count(
        self, texts: Iterable[str] | Iterable[pl.Series]
    ) -> tuple[int, list[list[int]], list[int]]:
        """(number of texts, per axis per value the number of texts mentioning it,
        per axis the number of texts mentioning any value). ``texts`` is strings, or batches
        of them as polars Series (columns read from a file never become Python strings)."""
        n_values, n_axes = len(self._axis_of), len(self.axes)
        per_value = np.zeros(n_values, dtype=np.int64)
        per_axis = np.zeros(n_axes, dtype=np.int64)
        n = 0
        for batch in batched(texts, BATCH):
            n += len(batch)
            keys = self._keys(batch)
            rows, codes = np.divmod(keys, max(n_values, 1))
            per_value += np.bincount(codes, minlength=n_values)
            row_axis = pl.Series(rows * n_axes + self._axis_of[codes].astype(rows.dtype))
            per_axis += np.bincount(row_axis.unique().to_numpy() % max(n_axes, 1), minlength=n_axes)
        counts = [per_value[self._first[a] : self._first[a + 1]].tolist() for a in range(n_axes)]
        return n, counts, per_axis.tolist()


def language_axis_index(values: Mapping[str, Sequence[Keyword]]) -> int | None:
    """Where the language axis of a multilingual run stands among ``values``' axes: the axis
    named ``language`` whose values are all language codes (None when there is none)."""
    for ai, (axis, vals) in enumerate(values.items()):
        if axis == LANGUAGE_AXIS and vals and all(base(v.value) in NAMES for v in vals):
            return ai
    return None


def _nested_patterns(
    patterns: list[str], table: Mapping[str, set[int]], axis_of: np.ndarray
) -> pl.LazyFrame | None:
    """(outer, inner, times): pattern ``inner`` stands ``times`` times, on word boundaries,
    inside the longer pattern ``outer`` of the same axes; None when no pattern does. Found
    through each pattern's word runs, so the cost is linear in the number of patterns."""
    pid = {p: i for i, p in enumerate(patterns)}
    rows: list[tuple[int, int, int]] = []
    for outer in patterns:
        words = outer.split()
        axes = {int(axis_of[c]) for c in table[outer]}
        runs: dict[str, int] = {}
        for i in range(len(words)):
            for j in range(i + 1, len(words) + 1):
                if j - i < len(words):
                    run = f" {' '.join(words[i:j])} "
                    runs[run] = runs.get(run, 0) + 1
        for run, times in runs.items():
            if run in pid and {int(axis_of[c]) for c in table[run]} <= axes:
                rows.append((pid[outer], pid[run], times))
    if not rows:
        return None
    return pl.LazyFrame(
        rows, schema={"outer": pl.UInt32, "inner": pl.UInt32, "times": pl.UInt32}, orient="row"
    )


def batched(items: Iterable[str] | Iterable[pl.Series], size: int) -> Iterator[Texts]:
    batch: list[str] = []
    for item in items:
        if isinstance(item, pl.Series):
            yield item
            continue
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
