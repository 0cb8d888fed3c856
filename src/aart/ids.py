"""Job ids and the seeds derived from them: the one place where a job's identity becomes the
seed of its model calls. Each formula is kept as it was when its callers lived apart, because a
seed is part of a call's cache key: another formula would make every cached call miss."""

from __future__ import annotations

import hashlib
import json

Slot = tuple[str, int]  # (attempt id, cell index): where a cell stands in the blueprint


def job_id(slots: list[Slot], cells: list[dict[str, str]], round_: int) -> str:
    """A generation job's id: its first attempt, its round and a digest of what it asks for."""
    digest = hashlib.sha1(json.dumps([slots, cells, round_], sort_keys=True).encode()).hexdigest()
    return f"{slots[0][0]}:r{round_}:{digest[:10]}"


def generation_seed(base: int, job: str) -> int:
    """The seed of a generation call: ``generate.seed`` moved by the job, so identical attempts
    never send identical requests (the seed depends on the job's attempt, cells and round, not
    only on the round)."""
    digest = hashlib.sha1(job.encode()).digest()
    return (base + int.from_bytes(digest[:4], "big")) % (2**31)


def attack_seed(job: str, step: int = 0) -> int:
    """The seed of the attacker model's call at ``step`` of an attack job (a rewrite, a PAIR
    round, a Crescendo plan): a repeated job sends the same requests (and hits the cache) while
    two jobs never do."""
    return int(hashlib.sha256(f"{job}:{step}".encode()).hexdigest()[:8], 16)


__all__ = ["Slot", "attack_seed", "generation_seed", "job_id"]
