"""Hugging Face: a folder that ``datasets.load_dataset(FOLDER)`` loads (Parquet under data/
plus a dataset card, README.md with YAML front matter), and the same folder read back.

Columns follow our flat layout (``id``, ``prompt``, ``cell_<axis>``, ``annotated_<axis>``,
``strategy``), so the Parquet file alone also reads back as dataset.parquet does. The card's
front matter is written by a YAML dumper; the text in its body is HTML-escaped, since the Hub
renders Markdown with inline HTML."""

from __future__ import annotations

import hashlib
import html
import json
import os
from pathlib import Path
from typing import Any

import yaml

from ..data.foreign import HF_CARD_FILE as CARD_FILE

# reading a folder back is data loading (aart.data.foreign); these names stay importable here
from ..data.foreign import hf_data_files as data_files  # noqa: F401
from ..data.foreign import is_hf_folder as is_folder  # noqa: F401
from ..data.foreign import iter_hf_rows as iter_rows  # noqa: F401
from .source import ExportSource

#: the Parquet file, named by its content ("data/train-<sha256:12>.parquet"): `datasets`
#: caches a local folder by its name and its data files' paths, so a re-export under one name
#: ("hf") loaded the earlier rows; an earlier export's files of this pattern are removed
DATA_PATTERN = "data/train-{digest}.parquet"


def export(src: ExportSource, out: Path, license: str) -> list[Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if license == "other" and src.source_license():
        # not chosen: the licence the imported records' source gives (`aart import`)
        license = str(src.source_license())

    axes = list(dict.fromkeys([a for r in src.records for a in r.cell] + list(src.axes)))
    annotated = list(dict.fromkeys(a for r in src.records for a in r.annotations))
    columns: dict[str, list[Any]] = {
        "id": [r.id for r in src.records],
        "prompt": [r.prompt for r in src.records],
    }
    for a in axes:
        columns[f"cell_{a}"] = [r.cell.get(a) for r in src.records]
    for a in annotated:
        columns[f"annotated_{a}"] = [r.annotations.get(a) for r in src.records]
    if any(r.strategy for r in src.records):
        columns["strategy"] = [r.strategy for r in src.records]
    for key in dict.fromkeys(k for r in src.records for k in r.case):
        # an injection case's keys; its objects as JSON text (one string type per column)
        columns[key] = [_case_text(r.case.get(key)) for r in src.records]
    for key in dict.fromkeys(k for r in src.records for k in r.origin):
        # an imported record's source (benchmark, licence, revision) as JSON text
        columns[key] = [_case_text(r.origin.get(key)) for r in src.records]
    schema = pa.schema([(name, pa.string()) for name in columns])
    folder = out / "data"
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / ".train.parquet.tmp"
    pq.write_table(pa.table(columns, schema=schema), tmp)
    digest = hashlib.sha256(tmp.read_bytes()).hexdigest()[:12]
    rel = DATA_PATTERN.format(digest=digest)
    for old in folder.glob("train-*.parquet"):  # an earlier export's
        if old.name != Path(rel).name:
            old.unlink()
    data = out / rel
    os.replace(tmp, data)
    card = out / CARD_FILE
    card.write_text(card_text(src, license, axes, rel), encoding="utf-8")
    return [card, data]


def _case_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


_MARKDOWN = str.maketrans({c: "\\" + c for c in "\\`*_[]()#!|~"})


def _text(value: str) -> str:
    """Untrusted text as literal Markdown: no HTML, links, images, emphasis or table breaks."""
    return html.escape(" ".join(str(value).split()), quote=False).translate(_MARKDOWN)


def _size_category(n: int) -> str:
    for bound, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if n < bound:
            return label
    return "100K<n<1M" if n < 1_000_000 else "1M<n<10M"


def card_text(src: ExportSource, license: str, axes: list[str], data_file: str) -> str:
    front = {
        "license": license,
        "pretty_name": src.recipe_name or src.name,
        "language": src.languages,
        "tags": ["red-teaming", "adversarial", "safety", "aart"],
        "task_categories": ["text-generation"],
        "size_categories": [_size_category(len(src.records))],
        "configs": [
            {
                "config_name": "default",
                "data_files": [{"split": "train", "path": data_file}],
            }
        ],
        # machine-readable copies of what the card's body says
        "aart": {
            "dataset": src.name,
            "recipe": src.recipe_name,
            "axes": {a: src.axes.get(a, []) for a in axes},
            "coverage": src.coverage,
            "provenance": src.provenance,
            "sources": src.sources,
        },
    }
    e = _text
    lines = [
        "---",
        yaml.safe_dump(front, allow_unicode=True, sort_keys=False, width=100).rstrip(),
        "---",
        "",
        f"# {e(src.recipe_name or src.name)}",
        "",
        "Adversarial prompts for red-teaming, generated with aart (AI-assisted red-teaming, "
        "recipe-driven). Each row is one prompt with its cell: the one value of every axis "
        "it was written for. Use it to test that an application refuses what its policy "
        "forbids; it is not training data for a model.",
        "",
    ]
    if src.recipe_description:
        lines += [f"**Recipe:** {e(src.recipe_description)}", ""]
    if src.application:
        lines += [f"**Application:** {e(src.application)}", ""]
    lines += [f"**Licence:** {e(license)}", "", f"**Prompts:** {len(src.records)}", ""]
    lines += ["## Axes", "", "| axis | values |", "| --- | --- |"]
    for a in axes:
        values = src.axes.get(a, [])
        shown = ", ".join(e(v) for v in values[:50])
        more = f" … ({len(values)} in all)" if len(values) > 50 else ""
        lines.append(f"| {e(a)} | {shown}{more} |")
    lines.append("")
    if src.coverage:
        lines += [
            "## Coverage (`aart evaluate`, keyword matching)",
            "",
            "| axis | values | mentions per prompt | prompts mentioning a value | never matched |",
            "| --- | --- | --- | --- | --- |",
        ]
        for a, c in src.coverage.items():
            never = c.get("never_matched") or []
            lines.append(
                f"| {e(a)} | {c.get('values', '-')} | {float(c.get('presence', 0)):.3f} | "
                f"{float(c.get('prompt_share', 0)):.1%} | {len(never)} |"
            )
        lines.append("")
    lines += [
        "## Columns",
        "",
        "`id` (aart's record id), `prompt`, `cell_<axis>` (the value the prompt was built "
        "for), `annotated_<axis>` (the value the generating model says it used), `strategy` "
        "(regression sets: the attack transformation to replay); an injection dataset adds "
        "`user_task`, `context` (the carrier document with the payload, which `prompt` "
        "holds) and `injection`, `success`, `utility` as JSON text.",
        "",
        "## Provenance",
        "",
    ]
    for source in src.sources:
        shown = ", ".join(f"{k} {source[k]}" for k in source if k != "benchmark")
        lines.append(
            f"- imported from {e(str(source.get('benchmark', 'a benchmark')))}: {e(shown)}"
        )
    if src.provenance:
        for key, value in src.provenance.items():
            shown = ", ".join(e(str(v)) for v in value[:10])
            lines.append(f"- {e(key)}: {shown}")
    elif not src.sources:
        lines.append("- not recorded in the source dataset")
    lines += [
        "",
        "Read it back with `aart evaluate FOLDER` or `aart attack FOLDER ...`; load it with "
        '`datasets.load_dataset("FOLDER")`.',
        "",
    ]
    return "\n".join(lines)
