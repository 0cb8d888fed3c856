"""The refusal judge (``aart.refusal.reply_status``) on public human-labelled replies, beside
the rules-only judge of the first rewrite (``e85ec57``) and the keyword judge before it
(``0cacdf1``), both loaded from git, from one run.

Prints, per source and per model: precision, recall and F1 of "refusal (incl. partial) vs
complied", how partial refusals are scored, and the attack-success error on unsafe prompts
(the judge's non-refusal rate minus people's, in points). Sources marked "build" were read
while writing the judge; "held-out" ones were not, and their figures are the ones that count.

The public sets are kept out of the repository (some of their replies carry harmful
content). Fetch them once into a folder and pass it as ``--data`` (default
/tmp/refusal-data)::

    git clone https://github.com/sherdencooper/GPTFuzz            # MIT
    git clone https://github.com/openai/safety-rbr-code-and-data  # MIT
    git clone https://github.com/ThuCCSLab/JailbreakEval          # MIT (JAILJUDGE mini)
    mkdir -p /tmp/refusal-data/gptfuzz /tmp/refusal-data/rbr /tmp/refusal-data/jailjudge
    cp GPTFuzz/datasets/responses_labeled/{train,evaluate}.csv /tmp/refusal-data/gptfuzz/
    cp safety-rbr-code-and-data/data/rbr_gold_data/{train,test}.jsonl /tmp/refusal-data/rbr/
    cp JailbreakEval/data/JAILJUDGEmini.csv /tmp/refusal-data/jailjudge/
    git clone https://github.com/maxwellreuter/chatgpt-refusals   # MIT (Reuter & Schulze)
    mkdir -p /tmp/refusal-data/chatgpt_refusals /tmp/refusal-data/pyrit_refusal
    cp chatgpt-refusals/data/{nyp,political_figures,quora_insincere_hand_labeled}.json \
        /tmp/refusal-data/chatgpt_refusals/
    pip download --no-deps pyrit==1.1.0 -d /tmp/dl                # MIT (its scorer evals)
    unzip -j /tmp/dl/pyrit-1.1.0-*.whl '*scorer_evals/refusal_scorer/refusal*.csv' \
        '*scorer_evals/sample/mini_refusal.csv' -d /tmp/refusal-data/pyrit_refusal

    python bench/bench_refusal.py --data /tmp/refusal-data

How each set's human labels map to refusal / partial / complied is in bench/data/README.md.
A missing source is skipped with a note; the project's own set (tests/refusal_cases.py)
always runs.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
import types
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from aart.refusal import reply_status  # noqa: E402

OLD_COMMIT = "0cacdf1"
# the first rewrite (sentence by sentence, rules only), as merged into main
ROUND1_COMMIT = "e85ec57"
# sources whose people only said "gave what was asked" or not
BINARY = ("GPTFuzz train", "GPTFuzz evaluate", "JAILJUDGE mini")
csv.field_size_limit(1 << 24)


@dataclass(frozen=True)
class Reply:
    source: str
    model: str
    unsafe: bool  # the prompt should be refused: counts toward attack success
    # "refusal" | "partial" | "complied", or "success" where people only told a refusal from
    # a reply that gave what was asked (GPTFuzz): partial or complied, undistinguished
    human: str
    text: str


@dataclass(frozen=True)
class Source:
    name: str
    licence: str
    role: str  # "build" | "held-out"
    load: Callable[[Path], list[Reply]]


def _gptfuzz(split: str) -> Callable[[Path], list[Reply]]:
    # label 1: the annotators found the reply jailbroken (it gives what was asked); 0: not
    # (a refusal, a lecture, or a persona that plays along without giving it)
    def load(data: Path) -> list[Reply]:
        path = data / "gptfuzz" / f"{split}.csv"
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        return [
            Reply(
                f"GPTFuzz {split}",
                "Vicuna-7B / ChatGPT / Llama-2-7B-chat",
                True,
                "success" if r["label"].strip() == "1" else "refusal",
                r["Response"],
            )
            for r in rows
        ]

    return load


def _rbr(data: Path) -> list[Reply]:
    # human propositions per completion: fully_complies -> complied; partially_complies
    # (and not fully) -> partial; neither -> refusal (declines, redirects, lectures)
    out = []
    for split in ("train", "test"):
        for line in (data / "rbr" / f"{split}.jsonl").read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            p = row["propositions"]
            human = (
                "complied"
                if p.get("fully_complies")
                else "partial"
                if p.get("partially_complies")
                else "refusal"
            )
            text = row["completion"][-1]["content"]
            out.append(
                Reply(
                    "OpenAI RBR gold",
                    "RBR synthetic",
                    row["response_type"] != "Comply",
                    human,
                    text,
                )
            )
    return out


def _jailjudge(data: Path) -> list[Reply]:
    # label 1: the annotators judged the reply jailbroken (it gives what was asked); 0: not
    path = data / "jailjudge" / "JAILJUDGEmini.csv"
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [
        Reply(
            "JAILJUDGE mini",
            "JAILJUDGE target models",
            True,
            "success" if r["label"].strip() == "1" else "refusal",
            r["answer"],
        )
        for r in rows
    ]


def _chatgpt_refusals(*parts: str) -> Callable[[Path], list[Reply]]:
    # Reuter & Schulze 2023 (maxwellreuter/chatgpt-refusals, data/{nyp,political_figures,
    # quora_insincere_hand_labeled}.json, MIT), gpt-3.5-turbo's replies hand-labelled by
    # tone; the authors' own binary (data_processing.py) is "complied" against everything
    # else, so "rejected" is a refusal and "redirected", "contradicted", "disclaimed" and
    # the rest partials (a refusal incl. partial, against complied); the prompts are not
    # all unsafe (no ASR). Reported in two parts: the political-figures prompts ("write a
    # joke / an article about ...") and the Quora and NYP ones (opinionated questions).
    def load(data: Path) -> list[Reply]:
        out = []
        for part in parts:
            rows = json.loads((data / "chatgpt_refusals" / f"{part}.json").read_text("utf-8"))
            tone = {"complied": "complied", "rejected": "refusal"}
            name = "ChatGPT political" if part == "political_figures" else "ChatGPT Quora+NYP"
            out += [
                Reply(name, "gpt-3.5-turbo", False, tone.get(r["tone"], "partial"), r["response"])
                for r in rows
            ]
        return out

    return load


def _pyrit_refusal(data: Path) -> list[Reply]:
    # PyRIT 1.1.0's refusal-scorer evaluation sets (pyrit/datasets/scorer_evals/
    # refusal_scorer/{refusal,refusal_extra}.csv and scorer_evals/sample/mini_refusal.csv, MIT):
    # human_score 1 is a refusal (PyRIT counts an off-topic reply as one too), 0 is not;
    # the sample file repeats rows of the others, counted once
    out, seen = [], set()
    for name in ("refusal.csv", "refusal_extra.csv", "mini_refusal.csv"):
        lines = (data / "pyrit_refusal" / name).read_text("utf-8").splitlines(keepends=True)
        while lines and lines[0].startswith("#"):
            lines.pop(0)  # the files open with "# dataset_version=..." lines
        for r in csv.DictReader(lines):
            if r["assistant_response"] in seen:
                continue
            seen.add(r["assistant_response"])
            out.append(
                Reply(
                    "PyRIT refusal",
                    "PyRIT scorer evals",
                    False,
                    "refusal" if r["human_score"].strip() == "1" else "complied",
                    r["assistant_response"],
                )
            )
    return out


def _project(_data: Path) -> list[Reply]:
    import refusal_cases as rc

    rows = [("refusal", t) for t in rc.REFUSALS + rc.LONG_REFUSALS]
    rows += [("partial", t) for t in rc.PARTIALS + rc.LONG_PARTIALS]
    rows += [("complied", t) for t in rc.COMPLIED + rc.LONG_COMPLIED]
    return [Reply("project set", "hand-written", True, h, t) for h, t in rows]


SOURCES = [
    Source("project set", "this repository", "build", _project),
    Source("GPTFuzz train", "MIT", "build", _gptfuzz("train")),
    Source("GPTFuzz evaluate", "MIT", "held-out", _gptfuzz("evaluate")),
    Source("OpenAI RBR gold", "MIT", "held-out (other labels)", _rbr),
    Source("JAILJUDGE mini", "MIT (JailbreakEval)", "held-out", _jailjudge),
    Source(
        "ChatGPT Quora+NYP",
        "MIT (Reuter & Schulze 2023)",
        "build",
        _chatgpt_refusals("quora_insincere_hand_labeled", "nyp"),
    ),
    Source(
        "ChatGPT political",
        "MIT (Reuter & Schulze 2023)",
        "held-out",
        _chatgpt_refusals("political_figures"),
    ),
    Source("PyRIT refusal", "MIT (PyRIT 1.1.0)", "held-out", _pyrit_refusal),
]


def _git_show(commit: str, path: str) -> str | None:
    try:
        return subprocess.run(
            ["git", "show", f"{commit}:{path}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None


def judge_at(commit: str) -> Callable[[str], str] | None:
    """``reply_status`` as it was at ``commit``, loaded from git (None outside a checkout)."""
    code = _git_show(commit, "src/aart/refusal.py")
    if code is None:
        return None
    helpers = _git_show(commit, "src/aart/refusal_sentences.py")
    tag = f"aart_refusal_{commit}"
    if helpers is not None:
        sub = types.ModuleType(f"{tag}_sentences")
        sys.modules[sub.__name__] = sub  # dataclasses look their module up there
        helpers = helpers.replace("from .textsim", "from aart.textsim")
        helpers = helpers.replace("from .text.", "from aart.text.")  # after textsim moved
        exec(compile(helpers, f"{commit}:refusal_sentences", "exec"), sub.__dict__)  # our history
        code = code.replace("from .refusal_sentences", f"from {sub.__name__}")
    mod = types.ModuleType(tag)
    sys.modules[tag] = mod
    code = code.replace("from .textsim", "from aart.textsim")
    code = code.replace("from .text.", "from aart.text.")  # after textsim moved to text/
    exec(compile(code, f"{commit}:refusal", "exec"), mod.__dict__)  # our own history, not data
    return mod.reply_status


@dataclass
class Figures:
    n: int
    precision: float
    recall: float
    f1: float
    partial: Counter  # human partials by judged status
    judged_partial: Counter  # judged partials by human status
    asr_n: int
    asr_human: float
    asr_judge: float

    @property
    def asr_error(self) -> float:
        return 100 * (self.asr_judge - self.asr_human)


def _refusing(status: str) -> bool:
    return status in ("refusal", "partial")


def figures(replies: list[Reply], verdicts: list[str]) -> Figures:
    tp = fp = fn = 0
    partial: Counter = Counter()
    judged_partial: Counter = Counter()
    asr_n = asr_h = asr_j = 0
    for r, v in zip(replies, verdicts, strict=True):
        if r.human == "success" or (r.human == "refusal" and r.source in BINARY):
            # binary labels: a refusal against a reply that gave what was asked (a partial
            # refusal that then answers counts as giving it)
            y, p = r.human == "refusal", v == "refusal"
        else:
            y, p = _refusing(r.human), _refusing(v)
        tp += y and p
        fp += p and not y
        fn += y and not p
        if r.human == "partial":
            partial[v] += 1
        if v == "partial":
            judged_partial[r.human] += 1
        if r.unsafe:
            asr_n += 1
            asr_h += r.human != "refusal"
            asr_j += v in ("complied", "partial")
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return Figures(
        len(replies),
        precision,
        recall,
        f1,
        partial,
        judged_partial,
        asr_n,
        asr_h / asr_n if asr_n else 0.0,
        asr_j / asr_n if asr_n else 0.0,
    )


def _groups(replies: list[Reply]) -> Iterable[tuple[str, list[int]]]:
    by: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(replies):
        by[r.source].append(i)
    for name, idx in by.items():
        yield name, idx
        models = sorted({replies[i].model for i in idx})
        if len(models) > 1:
            for m in models:
                yield f"  {name} / {m}", [i for i in idx if replies[i].model == m]


def _row(label: str, f: Figures) -> str:
    asr = (
        f"{100 * f.asr_judge:.1f} vs {100 * f.asr_human:.1f} ({f.asr_error:+.1f})"
        if f.asr_n
        else "-"
    )
    part = f.partial
    partial = (
        f"{part['partial']}/{part['refusal']}/{part['complied'] + part['empty']}"
        if sum(part.values())
        else "-"
    )
    return (
        f"| {label} | {f.n} | {f.precision:.3f} | {f.recall:.3f} | {f.f1:.3f} | {partial} | "
        f"{sum(f.judged_partial.values())} | {asr} |"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--data",
        type=Path,
        default=Path("/tmp/refusal-data"),
        help="folder with gptfuzz/ and rbr/ (see the module docstring)",
    )
    args = ap.parse_args(argv)

    replies: list[Reply] = []
    roles = {}
    for src in SOURCES:
        try:
            got = src.load(args.data)
        except FileNotFoundError as e:
            print(f"note: {src.name} skipped: {e.filename} not found (see --help)")
            continue
        replies += got
        roles[src.name] = (src.role, src.licence)
    if not replies:
        print("error: no replies loaded", file=sys.stderr)
        return 1

    judges: dict[str, Callable[[str], str]] = {"new": reply_status}
    for name, commit in (("round1", ROUND1_COMMIT), ("old", OLD_COMMIT)):
        judge = judge_at(commit)
        if judge is not None:
            judges[name] = judge
    verdicts = {}
    for name, judge in judges.items():
        t0 = time.perf_counter()
        verdicts[name] = [judge(r.text) for r in replies]
        ms = 1000 * (time.perf_counter() - t0) / len(replies)
        print(f"{name} judge: {len(replies)} replies, {ms:.2f} ms per reply")

    # the headline: held-out replies whose labels say refused or not (RBR's say complied
    # with the request or not, and an off-topic reply is neither: reported on its own)
    held = [i for i, r in enumerate(replies) if roles[r.source][0] == "held-out"]
    print()
    print(
        "partials: human partial replies judged partial/refusal/complied; judged partial: "
        "how many the judge called partial; ASR: judge's attack success vs people's on "
        "unsafe prompts, in %, (error in points)"
    )
    print()
    print(
        "| source (role, licence) | judge | n | precision | recall | F1 | partials | "
        "judged partial | ASR judge vs people (error) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    groups = list(_groups(replies))
    if held:
        groups.append(("ALL HELD-OUT", held))
    for label, idx in groups:
        sub = [replies[i] for i in idx]
        name = label.strip().split(" / ")[0]
        tag = f" ({roles[name][0]}, {roles[name][1]})" if name in roles and "/" not in label else ""
        for jn in judges:
            row = _row(f"{label}{tag} | {jn}", figures(sub, [verdicts[jn][i] for i in idx]))
            print(row)
    # for src/aart/redteam/judge_accuracy.py: the detector's "success" is a non-refusal, so
    # its sensitivity is the share of replies people did not call refusals that it judged
    # complied or partial, its specificity the share of refusals it judged refusal
    print()
    print(
        "new judge, held-out: sensitivity (compliant judged complied/partial), "
        "specificity (refusals judged refusal)"
    )
    by_source: dict[str, list[int]] = defaultdict(list)
    for i in held:
        by_source[replies[i].source].append(i)
    for name, idx in [*by_source.items(), ("ALL HELD-OUT", held)]:
        pos = [i for i in idx if replies[i].human != "refusal"]
        neg = [i for i in idx if replies[i].human == "refusal"]
        tp = sum(verdicts["new"][i] in ("complied", "partial") for i in pos)
        tn = sum(verdicts["new"][i] == "refusal" for i in neg)
        print(
            f"  {name}: sensitivity {tp}/{len(pos)} = {tp / max(len(pos), 1):.3f}, "
            f"specificity {tn}/{len(neg)} = {tn / max(len(neg), 1):.3f}"
        )
    statuses = Counter(verdicts["new"])
    print()
    print("new judge's outcomes over all replies:", dict(statuses))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
