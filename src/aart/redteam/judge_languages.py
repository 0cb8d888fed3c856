"""The built-in refusal judge's accuracy per language, for an attack on a multilingual
dataset (cells with a ``language``): rules written for English miss refusals in other
languages, so the corrected rate of each language's prompts uses its own figure.

Measured by ``bench/bench_refusal_languages.py`` on aart's own hand-labelled held-out set
(bench/data/refusal_languages_heldout.jsonl: mild bank-assistant replies, 8 refusals and 8
compliant replies per language, written by us and measured once, after the non-English
patterns were tuned on another set). No public labelled set of refusal/compliance replies in
these languages was found. The samples are small, so the corrected rate's interval stays
wide; people's labels for ``language=xx`` (`aart review --attack`) replace these figures.
English keeps the public overall figure (judge_accuracy.BUILT_IN).
"""

from __future__ import annotations

from .judge_accuracy import Accuracy

_SOURCE = "refusal detector on aart's hand-labelled {lang} replies (8+8, held out; bench/bench_refusal_languages.py)"

#: language code -> the refusal detector's accuracy there (sensitivity: compliant replies
#: judged complied; specificity: refusals judged refusals)
REFUSAL_BY_LANGUAGE: dict[str, Accuracy] = {
    lang: Accuracy(sensitivity=sens, specificity=spec, positives=8, negatives=8,
                   source=_SOURCE.format(lang=name))
    for lang, name, sens, spec in [
        ("es", "Spanish", 1.0, 0.625),
        ("fr", "French", 1.0, 0.625),
        ("de", "German", 1.0, 0.5),
    ]
}  # fmt: skip


def language_accuracy(judge: str, languages: set[str]) -> dict[str, Accuracy]:
    """{"language=xx": accuracy} of ``judge`` for the ``languages`` an attack's prompts are
    in, where a figure is known (the refusal detector's only)."""
    if judge != "refusal":
        return {}
    return {
        f"language={lang}": REFUSAL_BY_LANGUAGE[lang.split("-")[0].lower()]
        for lang in sorted(languages)
        if lang.split("-")[0].lower() in REFUSAL_BY_LANGUAGE
    }
