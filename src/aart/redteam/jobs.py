"""The attack's jobs: one record per (prompt, strategy) of the dataset, the prompts chosen by
--limit or --sample, and each job's id in run.db."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..data.load import load_dataset, read_rows
from ..errors import ConfigError, UsageError
from ..injection import InjectionCase, case_keys
from ..text.normalize import text_hash
from .agent import parse_tools
from .sampling import stratified_order
from .spec import AttackSpec
from .strategies import IDENTITY, Strategy, parse_strategy

STAGE = "attack"


#: the longest prompt sent (about 250,000 tokens, beyond any model's context): a dataset is
#: untrusted, and a runaway record would otherwise be paid for
MAX_PROMPT_CHARS = 1_000_000


def refuse_unsendable_prompt(path: Path, i: int, text: str, column: str) -> None:
    """A usage error naming the record (``i`` from 0), before any call, for a prompt that must
    not be sent: an empty one (a reply to nothing would be judged a success) or one longer
    than MAX_PROMPT_CHARS."""
    if not text.strip():
        raise UsageError(
            f"{path}: record {i + 1}: the prompt (column {column!r}) is empty; "
            "fix or delete the record"
        )
    if len(text) > MAX_PROMPT_CHARS:
        raise UsageError(
            f"{path}: record {i + 1}: the prompt (column {column!r}) has {len(text):,} "
            f"characters, more than the {MAX_PROMPT_CHARS:,} aart sends; shorten or delete "
            "the record"
        )


def attack_records(path: Path, config: AttackSpec) -> list[dict[str, Any]]:
    """One record per (prompt, strategy), with the one value per axis that findings group by
    (``Dataset.cell_of``, plus ``strategy`` when strategies are in use): each prompt counts
    once per axis, so per axis n sums to the judged prompts. Other tables map their columns
    as `aart evaluate` does. A row that names its strategy (a regression set) replays that
    one transformation."""
    ds = load_dataset(
        path,
        text_column=config.text_column,
        axis_columns=config.axis_columns,
        annotation_columns=config.annotation_columns,
    )
    rows = read_rows(path)
    chosen = strategy_list(config.strategies)
    replay = any(r.get("strategy") for r in rows)  # a regression set
    axis = len(chosen) > 1 or replay
    out = []
    for i in selected(ds, config):
        text = ds.texts[i]
        refuse_unsendable_prompt(path, i, text, config.text_column)
        row = rows[i] if i < len(rows) else {}
        rid = str(row.get("id") or "") or f"p{i:06d}"
        own = row.get("strategy")
        case = injection_fields(row, text, f"{path}: line {i + 1}")
        # in a regression set a line without a strategy is the control (an older set's):
        # replayed once, not again under every strategy beside the lines that name theirs
        own = own or (IDENTITY if replay else None)
        for s in [parse_strategy(str(own))] if own else chosen:
            cell = {**ds.cell_of(i), "strategy": s.label} if axis else ds.cell_of(i)
            rec = {"index": i, "id": rid, "prompt": text, "cell": cell, "strategy": s.label}
            if case is not None:
                rec["case"] = case
            out.append(rec)
    return out


def injection_fields(row: dict[str, Any], prompt: str, where: str) -> dict[str, Any] | None:
    """The injection case a dataset line holds (``aart.injection``), as the job carries it
    (its keys, and the application's ``tools`` when the line gives them); None for a plain
    prompt. A line that is not a valid case is a usage error naming the line and field."""
    try:
        case = InjectionCase.of({**row, "prompt": prompt}, where)
    except ValueError as e:
        raise UsageError(f"{e}; fix the line or drop its injection keys") from None
    if case is None:
        return None
    out = case.fields()
    tools = case_keys(row).get("tools")  # a list, or JSON text in a CSV or Parquet row
    if tools:
        try:
            tools = parse_tools(tools, f"{where}: tools")
        except ConfigError as e:
            raise UsageError(str(e)) from None
        out["tools"] = [t.model_dump() for t in tools]
    return out


def selected(ds: Any, config: AttackSpec) -> list[int]:
    """The dataset positions the attack takes: --sample over the cells, else --limit."""
    if config.sample is not None:
        if config.limit is not None:
            raise UsageError("--limit and --sample do not go together: choose one")
        cells = [ds.cell_of(i) for i in range(len(ds))]
        return sorted(stratified_order(cells, config.sample, config.seed))
    return list(range(len(ds)))[: config.limit or None]


def strategy_list(specs: list[str]) -> list[Strategy]:
    """The control first, then each strategy once."""
    out = [Strategy(IDENTITY)]
    for spec in specs:
        s = parse_strategy(spec)
        if s not in out:
            out.append(s)
    return out


def job_id(r: dict[str, Any]) -> str:
    """The run.db job of an attack record: its position, its prompt's hash, its injection
    case's hash (an edited document, payload or success criterion is a new job, not the old
    verdict), its strategy (the control's ids are those earlier versions gave every prompt)."""
    base = f"{r['index']:06d}-{text_hash(r['prompt'])[:8]}"
    if r.get("case"):
        base += "-" + text_hash(json.dumps(r["case"], sort_keys=True))[:8]
    strategy = r.get("strategy", IDENTITY)
    return base if strategy == IDENTITY else f"{base}-{strategy}"
