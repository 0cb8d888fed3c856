"""Which prompts of a dataset an attack takes: all, the first N (``--limit``, the file's
order), or N spread over the cells (``--sample N --seed S``).

A generated dataset is sorted by its primary dimension, so its first N prompts cover a few
values of it. A sample goes round the axes, each pick the least used value of the axis (ties
broken by the seed), and among that value's prompts the one whose other values are least
used: every value of every axis is attacked as evenly as the dataset allows. The picks are an
order, so a larger sample with the same seed holds the smaller one (a re-run extends it).
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from ..errors import UsageError

#: candidates looked at per pick among a value's prompts: bounds the work on large datasets
WINDOW = 64


def stratified_order(cells: Sequence[dict[str, str]], n: int, seed: int) -> list[int]:
    """``n`` indexes of ``cells`` (each record's one value per axis), spread over the values
    of every axis; seeded, and a prefix of the order for any larger ``n``."""
    rng = random.Random(seed)
    n = min(n, len(cells))
    axes = sorted({a for c in cells for a in c})
    if not axes:  # nothing to stratify on: a seeded random sample
        order = list(range(len(cells)))
        rng.shuffle(order)
        return sorted(order[:n])
    buckets: dict[str, dict[str, list[int]]] = {a: defaultdict(list) for a in axes}
    shuffled = list(range(len(cells)))
    rng.shuffle(shuffled)
    for i in shuffled:
        for a, v in cells[i].items():
            buckets[a][v].append(i)
    used: dict[str, Counter[str]] = {a: Counter() for a in axes}
    ties = {a: {v: rng.random() for v in buckets[a]} for a in axes}
    #: per axis and value, where its untaken prompts start (taken ones are skipped)
    start: dict[str, Counter[str]] = {a: Counter() for a in axes}
    taken: set[int] = set()
    picks: list[int] = []
    while len(picks) < n:
        # per axis, the most uses a value may have after this pick for the axis to stay even
        caps = {a: -(-(len(picks) + 1) // len(buckets[a])) for a in axes}
        pick = _pick(buckets, start, used, ties, taken, cells, caps)
        if pick is None:
            break
        taken.add(pick)
        picks.append(pick)
        for a, v in cells[pick].items():
            used[a][v] += 1
    # prompts without a value of some axis come last, in seeded order
    rest = [i for i in shuffled if i not in taken]
    picks += rest[: n - len(picks)]
    return picks


def _pick(
    buckets: dict[str, dict[str, list[int]]],
    start: dict[str, Counter[str]],
    used: dict[str, Counter[str]],
    ties: dict[str, dict[str, float]],
    taken: set[int],
    cells: Sequence[dict[str, str]],
    caps: dict[str, int],
) -> int | None:
    """The next prompt: among the first WINDOW prompts left (in seeded order) of every
    axis's least used value, the one that puts the fewest axes above their even share
    (``caps``), then whose values are least used."""
    candidates: list[int] = []
    for axis, by_value in buckets.items():
        for v, ids in by_value.items():  # skip the taken prompts at the front of each list
            while start[axis][v] < len(ids) and ids[start[axis][v]] in taken:
                start[axis][v] += 1
        left = [v for v, ids in by_value.items() if start[axis][v] < len(ids)]
        if not left:
            continue
        value = min(left, key=lambda v: (used[axis][v], ties[axis][v]))
        ids = by_value[value]
        seen = 0
        for i in ids[start[axis][value] :]:
            if i in taken:
                continue
            candidates.append(i)
            seen += 1
            if seen >= WINDOW:
                break
    if not candidates:
        return None

    def score(i: int) -> tuple[int, int]:
        values = cells[i].items()
        return (
            sum(used[a][x] + 1 > caps[a] for a, x in values),
            sum(used[a][x] for a, x in values),
        )

    return min(candidates, key=score)  # min keeps the first of equals: seeded order


def describe(limit: int | None, sample: int | None, seed: int) -> str:
    if sample is not None:
        return f"--sample {sample} --seed {seed}"
    if limit is not None:
        return f"--limit {limit}"
    return "every prompt"


def check_selection(
    db: Any, out: Any, limit: int | None, sample: int | None, seed: int, selected: int
) -> str:
    """Refuse a re-run into an attack directory that would rewrite its reports over fewer
    prompts than it holds (another --limit, --sample or --seed); a larger selection of the
    same kind extends the attack and is taken. ``selected``: the prompts this one takes.
    Returns the selection for the directory's `attack_selection` meta."""
    if limit is not None and sample is not None:
        raise UsageError("--limit and --sample do not go together: choose one")
    n = sample if sample is not None else limit
    now: dict[str, Any] = {"order": "sample" if sample is not None else "file", "n": n}
    if sample is not None:
        now["seed"] = seed
    if n is not None and n > selected:
        now = {"order": "file", "n": None}  # the whole dataset, however it is asked for
    raw = db.get_meta("attack_selection")
    if raw is None and db.get_meta("attack_settings") is not None:
        # an attack directory of an earlier version: its limit is in attack_dataset
        earlier = json.loads(db.get_meta("attack_dataset") or "{}").get("limit")
        raw = json.dumps({"order": "file", "n": earlier})
    if raw is not None:
        before = json.loads(raw)
        whole = now["n"] is None
        extends = (
            before.get("order") == now["order"]
            and before.get("seed") == now.get("seed")
            and (whole or (before.get("n") is not None and now["n"] >= before["n"]))
        )
        if before != now and not whole and not extends:
            was = (
                describe(before["n"], None, 0)
                if before.get("order") == "file"
                else describe(None, before["n"], before.get("seed", 0))
            )
            again = "leave out --limit and --sample" if before["n"] is None else f"repeat {was}"
            raise UsageError(
                f"{out} holds an attack of {was}; this one asks for "
                f"{describe(limit, sample, seed)}, and its reports would then cover fewer or "
                f"other prompts. Use another --out, or {again} (a larger --limit, or a "
                "larger --sample with the same --seed, extends an attack)"
            )
    return json.dumps(now, sort_keys=True)
