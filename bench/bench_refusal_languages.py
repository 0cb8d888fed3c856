"""The built-in refusal judge per language, on aart's own hand-labelled set
(bench/data/refusal_languages.jsonl: mild travel-assistant replies in English, Spanish, French
and German, the languages of the built-in travel-assistant recipe; 12 refusals and 12
compliant replies per language, written and labelled by us, not a public set: no public,
labelled multilingual set of refusal/compliance replies was found on GitHub). Also the
generated-prompt detector (prompt_is_refusal) on first-person user prompts, which must not
be taken for a generator refusing.

    PYTHONPATH=src python bench/bench_refusal_languages.py [--json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from aart.refusal import prompt_is_refusal, reply_status

DATA = Path(__file__).parent / "data" / "refusal_languages.jsonl"
#: written after the non-English patterns were tuned on DATA, and measured once: a
#: bank-assistant set with other phrasings (8 refusals, 8 compliant replies per language)
HELD_OUT = Path(__file__).parent / "data" / "refusal_languages_heldout.jsonl"


def load(path: Path = DATA) -> list[dict[str, str]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def figures(cases: list[dict[str, str]] | None = None) -> dict[str, dict[str, float | int]]:
    """Per language: replies, accuracy, refusal recall (refusals judged refusals), false
    refusals (compliant replies judged refusals: an attack success missed), and the
    generated-prompt detector's errors."""
    out: dict[str, dict[str, float | int]] = {}
    for c in cases if cases is not None else load():
        f = out.setdefault(
            c["lang"],
            {
                "replies": 0,
                "correct": 0,
                "refusals": 0,
                "caught": 0,
                "compliant": 0,
                "false_refusals": 0,
                "prompts": 0,
                "prompt_errors": 0,
            },
        )
        if c.get("kind") == "prompt":
            f["prompts"] += 1
            f["prompt_errors"] += prompt_is_refusal(c["text"]) != (c["label"] == "refusal")
            continue
        judged = reply_status(c["text"]) == "refusal"
        truth = c["label"] == "refusal"
        f["replies"] += 1
        f["correct"] += judged == truth
        if truth:
            f["refusals"] += 1
            f["caught"] += judged
        else:
            f["compliant"] += 1
            f["false_refusals"] += judged
    for f in out.values():
        f["accuracy"] = f["correct"] / f["replies"] if f["replies"] else 0.0
        f["refusal_recall"] = f["caught"] / f["refusals"] if f["refusals"] else 0.0
        f["false_refusal_rate"] = f["false_refusals"] / f["compliant"] if f["compliant"] else 0.0
    return out


def main() -> None:
    sets = {"tuning set": load(DATA), "held-out set": load(HELD_OUT)}
    if "--json" in sys.argv:
        print(json.dumps({k: figures(v) for k, v in sets.items()}, indent=2))
        return
    for title, cases in sets.items():
        print(f"{title}:")
        print("lang  replies  accuracy  refusal recall  false refusals  prompt errors")
        for lang, f in figures(cases).items():
            print(
                f"{lang:4}  {f['replies']:7}  {f['accuracy']:8.1%}  {f['refusal_recall']:14.1%}  "
                f"{f['false_refusals']:3}/{f['compliant']:<10}  {f['prompt_errors']}/{f['prompts']}"
            )
    if "-v" in sys.argv:
        for c in [*sets["tuning set"], *sets["held-out set"]]:
            if c.get("kind") == "prompt":
                bad = prompt_is_refusal(c["text"]) != (c["label"] == "refusal")
            else:
                bad = (reply_status(c["text"]) == "refusal") != (c["label"] == "refusal")
            if bad:
                print("MISS", c["lang"], c["label"], reply_status(c["text"]), c["text"][:90])


if __name__ == "__main__":
    main()
