"""Step 3, query generation: one structured call per blueprint attempt, every item validated
and annotated, refusals and shortfalls topped up, duplicates removed but counted."""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import StructuredOutputError
from ..llm import GenerateConfig, Model, looks_like_refusal
from ..recipe import Recipe
from ..runner import run_pool
from ..store.export import write_csv, write_jsonl, write_parquet
from ..store.rundir import Run
from ..textsim import find_duplicates, normalize
from .prompting import output_fields, output_schema, render_messages

STAGE = "generate"
INVALID = "generate.invalid"
REFUSED = "generate.refused"
AART_COLUMNS = [
    "crime",
    "use_case",
    "region",
    "region_specific_topic",
    "why_prompt_tailored_for_region",
    "medium_keyword",
    "why_prompt_harmful",
    "why_prompt_contains_instruction_keyword",
    "prompt",
]


@dataclass
class GenerateStats:
    attempts: int = 0
    jobs: int = 0
    topup_jobs: int = 0
    requested: int = 0
    items: int = 0
    valid_items: int = 0
    invalid_items: int = 0
    refused_items: int = 0
    refused_calls: int = 0
    invalid_calls: int = 0  # answers that never parsed as JSON, after the re-asks
    missing_items: int = 0  # queries an answer left out
    exact_duplicates: int = 0
    near_duplicates: int = 0
    prompts: int = 0
    invalid_reasons: dict[str, int] = field(default_factory=dict)

    @property
    def valid_rate(self) -> float:
        return self.valid_items / self.items if self.items else 0.0

    @property
    def shortfall(self) -> int:
        return max(0, self.requested - self.prompts)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["valid_rate"] = round(self.valid_rate, 4)
        d["shortfall"] = self.shortfall
        return d


def job_id(attempt: dict[str, Any], round_: int, queries: int) -> str:
    digest = hashlib.sha1(
        json.dumps([attempt["values"], queries, round_], sort_keys=True).encode()
    ).hexdigest()[:10]
    return f"{attempt['id']}:r{round_}:{digest}"


def _canonical(value: Any, allowed: list[str]) -> str | None:
    text = normalize(str(value))
    for a in allowed:
        if normalize(a) == text:
            return a
    return None


def validate_item(
    recipe: Recipe, attempt: dict[str, Any], item: Any
) -> tuple[dict[str, Any] | None, str]:
    """(clean item, "") when valid, else (None, reason). Reason "refusal" marks a refused item."""
    g = recipe.generate
    if not isinstance(item, dict):
        return None, "not an object"
    clean: dict[str, Any] = {}
    for f in output_fields(recipe):
        value = item.get(f["name"])
        if not isinstance(value, str) or not value.strip():
            return None, f"missing or empty field {f['name']}"
        value = " ".join(value.split()) if f["name"] == g.prompt_field else value.strip()
        if f["dimension"]:
            canon = _canonical(value, attempt["values"].get(f["dimension"], []))
            if canon is None:
                return None, f"{f['name']} is not one of the attempt's {f['dimension']}"
            value = canon
        clean[f["name"]] = value
    prompt = clean[g.prompt_field]
    if looks_like_refusal(prompt):
        return None, "refusal"
    words = len(prompt.split())
    if words < g.min_words:
        return None, f"prompt shorter than {g.min_words} words"
    if words > g.max_words:
        return None, f"prompt longer than {g.max_words} words"
    return clean, ""


def _items_of(parsed: Any) -> list[Any]:
    if isinstance(parsed, dict):
        for key in ("queries", "items", "prompts"):
            if isinstance(parsed.get(key), list):
                return parsed[key]
        return [parsed]
    return parsed if isinstance(parsed, list) else []


class Generator:
    def __init__(self, run: Run, model: Model, progress: Callable[[], None] | None = None) -> None:
        self.run = run
        self.model = model
        self.progress = progress
        self.recipe = run.recipe
        self.blueprint = run.read_blueprint()

    def _config(self, round_: int) -> GenerateConfig:
        g = self.recipe.generate
        return GenerateConfig(g.temperature, g.max_tokens, g.seed + 1009 * round_)

    async def _work(self, job: tuple[str, dict[str, Any]]) -> None:
        jid, payload = job
        attempt, round_ = payload["attempt"], payload["round"]
        g = self.recipe.generate
        msgs = render_messages(self.recipe, attempt)
        cfg = self._config(round_)
        records: list[tuple[str, str, dict[str, Any]]] = []
        try:
            out = await self.model.generate(
                msgs, cfg, output_schema(self.recipe, attempt), validate=False, tag=jid
            )
        except StructuredOutputError as e:
            stage = REFUSED if looks_like_refusal(e.raw_text) else INVALID
            records.append(
                (f"{jid}:call", stage, {"reason": str(e), "raw_text": e.raw_text[:2000]})
            )
            self.run.db.complete_job(jid, records)
            self._tick()
            return
        prov = {
            "run_id": self.run.id,
            "recipe": self.recipe.name,
            "recipe_hash": self.run.loaded.hash,
            "model": self.model.name,
            "temperature": cfg.temperature,
            "seed": cfg.seed,
            "attempt_id": attempt["id"],
            "round": round_,
            "job_id": jid,
            "call_id": out.call_id,
            "cached": out.cached,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        items = _items_of(out.parsed)
        if not items and looks_like_refusal(out.text):
            records.append(
                (f"{jid}:call", REFUSED, {"reason": "refusal", "raw_text": out.text[:2000]})
            )
        for i, item in enumerate(items[: attempt["queries"]]):
            clean, reason = validate_item(self.recipe, attempt, item)
            rid = f"{jid}:{i}"
            if clean is None:
                stage = REFUSED if reason == "refusal" else INVALID
                records.append((rid, stage, {"reason": reason, "item": item}))
                continue
            annotations = {
                f["dimension"]: clean[f["name"]]
                for f in output_fields(self.recipe)
                if f["dimension"]
            }
            record = {"id": rid, "prompt": clean[g.prompt_field]}
            record.update({k: v for k, v in clean.items() if k != g.prompt_field})
            record.update(
                {"axes": attempt["values"], "annotations": annotations, "provenance": prov}
            )
            records.append((rid, STAGE, record))
        missing = attempt["queries"] - len(items)
        if missing > 0 and items:
            records.append(
                (f"{jid}:short", INVALID, {"reason": "queries missing", "missing": missing})
            )
        self.run.db.complete_job(jid, records)
        self._tick()

    def _tick(self) -> None:
        if self.progress:
            self.progress()

    def _add_round(self, round_: int, needs: dict[str, int]) -> int:
        by_id = {a["id"]: a for a in self.blueprint}
        jobs = [
            (
                job_id(by_id[aid], round_, n),
                {"attempt": {**by_id[aid], "queries": n}, "round": round_},
            )
            for aid, n in needs.items()
            if n > 0
        ]
        self.run.db.add_jobs(STAGE, jobs)
        return len(jobs)

    def _current_job_ids(self) -> set[str]:
        rows = self.run.db.conn.execute("SELECT id, payload FROM jobs WHERE stage=?", (STAGE,))
        ids = {a["id"]: a for a in self.blueprint}
        out = set()
        for jid, payload in rows:
            p = json.loads(payload)
            a = ids.get(p["attempt"]["id"])
            if a is not None and p["attempt"]["values"] == a["values"]:
                out.add(jid)
        return out

    def dataset(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]], GenerateStats]:
        """Valid records of the current blueprint in blueprint order, deduplicated."""
        jobs = self._current_job_ids()
        order = {a["id"]: i for i, a in enumerate(self.blueprint)}

        def key(r: dict[str, Any]) -> tuple[int, int, int]:
            p = r["provenance"]
            return order[p["attempt_id"]], p["round"], int(r["id"].rsplit(":", 1)[1])

        records = sorted(self.run.db.records(STAGE, jobs), key=key)
        dups = find_duplicates(
            [r["prompt"] for r in records], self.recipe.generate.near_duplicate_threshold
        )
        dup_index = {i: (j, kind) for i, j, kind in dups}
        kept = [r for i, r in enumerate(records) if i not in dup_index]
        duplicates = [
            {
                "id": records[i]["id"],
                "prompt": records[i]["prompt"],
                "kind": kind,
                "duplicate_of": records[j]["id"],
            }
            for i, (j, kind) in dup_index.items()
        ]
        stats = GenerateStats(attempts=len(self.blueprint))
        stats.requested = sum(a["queries"] for a in self.blueprint)
        invalid = list(self.run.db.records(INVALID, jobs))
        refused = list(self.run.db.records(REFUSED, jobs))
        stats.valid_items = len(records)
        stats.invalid_items = sum(1 for r in invalid if "item" in r)
        stats.refused_items = sum(1 for r in refused if "item" in r)
        stats.refused_calls = sum(1 for r in refused if "item" not in r)
        stats.invalid_calls = sum(1 for r in invalid if "raw_text" in r)
        stats.missing_items = sum(r.get("missing", 0) for r in invalid)
        stats.items = stats.valid_items + stats.invalid_items + stats.refused_items
        stats.invalid_reasons = dict(Counter(r["reason"].split(" (")[0][:60] for r in invalid))
        stats.exact_duplicates = sum(1 for d in duplicates if d["kind"] == "exact")
        stats.near_duplicates = len(duplicates) - stats.exact_duplicates
        stats.prompts = len(kept)
        stats.jobs, stats.topup_jobs = self.run.db.conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(json_extract(payload, '$.round') > 0), 0) FROM jobs"
            " WHERE stage=? AND id IN (SELECT value FROM json_each(?))",
            (STAGE, json.dumps(sorted(jobs))),
        ).fetchone()
        return kept, duplicates, stats

    def _needs(self, kept: list[dict[str, Any]]) -> dict[str, int]:
        have = Counter(r["provenance"]["attempt_id"] for r in kept)
        return {a["id"]: a["queries"] - have[a["id"]] for a in self.blueprint}

    async def run_all(self) -> GenerateStats:
        self._add_round(0, {a["id"]: a["queries"] for a in self.blueprint})
        for round_ in range(self.recipe.generate.max_topups + 1):
            await run_pool(self.run.db.pending_jobs(STAGE), self._work, self.model.concurrency)
            if round_ == self.recipe.generate.max_topups:
                break
            kept, _, _ = self.dataset()
            # Refusals, invalid items and duplicates are made up by top-up attempts, so the
            # dataset does not shrink silently.
            if not self._add_round(round_ + 1, self._needs(kept)):
                break
        kept, duplicates, stats = self.dataset()
        self.write_outputs(kept, duplicates, stats)
        return stats

    def write_outputs(
        self, kept: list[dict[str, Any]], duplicates: list[dict[str, Any]], stats: GenerateStats
    ) -> None:
        root = self.run.root
        write_jsonl(kept, root / "dataset.jsonl")
        flat = [flatten_record(r) for r in kept]
        write_csv(flat, root / "dataset.csv")
        write_parquet(flat, root / "dataset.parquet")
        write_csv([aart_row(self.recipe, r) for r in kept], root / "dataset.aart.csv", AART_COLUMNS)
        write_jsonl(duplicates, root / "duplicates.jsonl")
        (root / "generate.json").write_text(json.dumps(stats.as_dict(), indent=2))


def flatten_record(r: dict[str, Any]) -> dict[str, Any]:
    """One flat row for CSV and Parquet: axes joined with '; ', provenance prefixed."""
    row = {k: v for k, v in r.items() if k not in ("axes", "annotations", "provenance")}
    for axis, vals in r["axes"].items():
        row[f"axis_{axis}"] = "; ".join(vals)
    for axis, v in r["annotations"].items():
        row[f"annotated_{axis}"] = v
    for k, v in r["provenance"].items():
        row[f"provenance_{k}"] = v
    return row


def aart_row(recipe: Recipe, r: dict[str, Any]) -> dict[str, Any]:
    """A row with exactly the released AART dataset's columns."""
    cols = dict(recipe.generate.aart_columns)
    if "crime" not in cols and recipe.scope.primary:
        cols["crime"] = recipe.scope.primary
    row = {c: r.get(c, "") for c in AART_COLUMNS}
    for col, dim in cols.items():
        row[col] = ", ".join(r["axes"].get(dim, []))
    if not row["medium_keyword"] and "use_case" in cols:
        row["medium_keyword"] = r["annotations"].get(cols["use_case"], "")
    return row


async def generate_run(
    run: Run, model: Model, progress: Callable[[], None] | None = None
) -> GenerateStats:
    """Run Step 3 for the run's blueprint (resuming finished jobs) and write the dataset."""
    return await Generator(run, model, progress).run_all()
