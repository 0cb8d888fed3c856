"""Calls and cost as a person reads them, the same in the CLI and the reports: an unpriced
paid model costs "unpriced", never "$0.0000", and calls to the application (an HTTP or Python
target) and to the embedded model are not paid calls."""

from __future__ import annotations

from typing import Any


def cost_text(u: dict[str, Any]) -> str:
    """``u`` as :meth:`RunDB.call_totals` gives it."""
    if u.get("cost") is None:
        names = ", ".join(u.get("unpriced") or []) or "a paid model"
        return f"unpriced (no price for {names}: add it to the recipe's prices:)"
    return f"${u['cost']:.4f}"


def calls_text(u: dict[str, Any]) -> str:
    """ "N paid calls", and the calls to the embedded model and to the target apart (neither
    is paid for)."""
    target = int(u.get("target_calls") or 0)
    local = int(u.get("local_calls") or 0)
    fake = int(u.get("fake_calls") or 0)
    paid = u["calls"] - target - local - fake
    parts = []
    if paid or not (local or fake):
        parts.append(f"{paid} paid call{'' if paid == 1 else 's'}")
    if local:
        parts.append(f"{local} embedded-model call{'' if local == 1 else 's'} (no cost)")
    if fake:
        parts.append(f"{fake} fake-model call{'' if fake == 1 else 's'} (no cost)")
    if target:
        parts.append(f"{target} call{'' if target == 1 else 's'} to the target")
    return " and ".join(parts)
