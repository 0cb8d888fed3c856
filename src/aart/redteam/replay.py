"""The read-only openers of an earlier attack directory: how it read its prompts (its
:class:`~.spec.AttackSpec`), and its saved responses, for `aart rejudge` (``--replay``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..store.db import RunDB
from .records import AttackRecord
from .spec import AttackSpec
from .targets import ReplayAPI

STAGE = "attack"

#: what a re-judged attack takes from the earlier one: all but the verdicts
SAVED_FIELDS = (
    "response", "target_error", "sent", "response_english", "chain", "transcript", "rounds",
    "queries", "finish_reason", "tool_calls", "steps", "trace", "max_steps_reached",
)  # fmt: skip


def _open(previous_dir: Path) -> RunDB:
    if not (previous_dir / "run.db").exists():
        raise UsageError(f"{previous_dir} holds no attack (no run.db); give an attack's --out")
    return RunDB(previous_dir / "run.db", lock=False)


def _is_attack(directory: Path) -> bool:
    try:
        return _meta(directory, "attack_dataset") is not None
    except Exception:  # another tool's or a broken run.db: not one to suggest
        return False


def _meta(previous_dir: Path, key: str) -> str | None:
    db = _open(previous_dir)
    try:
        return db.get_meta(key)
    finally:
        db.close()


def attack_dataset(previous_dir: Path) -> dict[str, Any]:
    """How an earlier attack read its dataset (path, target, limit, column mapping)."""
    raw = _meta(previous_dir, "attack_dataset")
    if raw is None:
        if (previous_dir / "blueprint.jsonl").exists() or (previous_dir / "dataset.jsonl").exists():
            # a generation run's directory: its run.db holds no attack
            attacks = sorted(
                str(p.parent) for p in previous_dir.glob("*/run.db") if _is_attack(p.parent)
            )
            hint = (
                f": give an attack's --out ({', '.join(attacks)})"
                if attacks
                else (f"; attack it first (aart attack {previous_dir})")
            )
            raise UsageError(f"{previous_dir} is a generation run, not an attack{hint}")
        raise UsageError(f"{previous_dir} was made by an older aart; attack again to re-judge")
    data: dict[str, Any] = json.loads(raw)
    return data


def earlier_spec(previous_dir: Path) -> AttackSpec:
    """The specification an earlier attack ran with; for a directory of a version that kept
    only its ``attack_dataset`` meta, the settings that say which prompts it read."""
    raw = _meta(previous_dir, "attack_spec")
    if raw is not None:
        return AttackSpec.model_validate_json(raw)
    return AttackSpec.from_dataset_meta(attack_dataset(previous_dir))


def saved_responses(previous_dir: Path) -> dict[str, dict[str, Any]]:
    """An earlier attack's results without their verdicts, by prompt and strategy."""
    db = _open(previous_dir)
    try:
        saved = [AttackRecord.read(r) for r in db.records(STAGE)]  # validated
    finally:
        db.close()
    out = {}
    for rec in saved:
        line = rec.dump()
        out[ReplayAPI.key(rec.prompt, rec.strategy)] = {
            k: line[k] for k in SAVED_FIELDS if k in line
        }
    return out
