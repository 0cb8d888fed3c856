"""Datasets out to the tools teams already run (promptfoo, inspect_ai, garak, Hugging Face
datasets) and back in. One module per tool; :func:`export_dataset` is the entry point, and
:mod:`.read` is what the dataset loader calls for a promptfoo tests file or an HF folder."""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from .source import ExportRecord, ExportSource, load_source

FORMATS = ("promptfoo", "inspect", "garak", "hf")
JUDGES = ("refusal", "policy")


def export_dataset(
    dataset: str | Path,
    to: str,
    out: str | Path,
    *,
    judges: list[str] | None = None,
    provider: str = "echo",
    license: str = "other",
    evaluation: str | Path | None = None,
    text_column: str = "prompt",
    axis_columns: dict[str, str] | None = None,
    annotation_columns: dict[str, str] | None = None,
) -> list[Path]:
    """Write DATASET (a dataset file or a run directory) in format ``to`` under ``out``;
    return the files written. ``judges`` become promptfoo assertions and the inspect task's
    scorer where one maps (default: refusal, plus policy when the recipe has one)."""
    from . import garak, hf, inspectai, promptfoo

    if to not in FORMATS:
        raise UsageError(f"unknown export format {to!r}; use one of {', '.join(FORMATS)}")
    target = Path(out)
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target} is a file; export writes a folder: give a new path")
    src = load_source(
        dataset,
        evaluation,
        text_column=text_column,
        axis_columns=axis_columns,
        annotation_columns=annotation_columns,
    )
    if not src.records:
        raise UsageError(f"{dataset} holds no prompts; nothing to export")
    if judges is None:
        judges = ["refusal"] + (["policy"] if src.policy else [])
    for j in judges:
        if j not in JUDGES:
            raise UsageError(f"unknown judge {j!r} for export; use {' or '.join(JUDGES)}")
    if to == "promptfoo":
        return promptfoo.export(src, target, judges, provider)
    if to == "inspect":
        return inspectai.export(src, target, judges)
    if to == "garak":
        return garak.export(src, target)
    return hf.export(src, target, license)


__all__ = ["FORMATS", "ExportRecord", "ExportSource", "export_dataset", "load_source"]
