"""Step 3, query generation: one structured call per blueprint attempt, every item validated
and annotated, refusals and shortfalls topped up, duplicates removed but counted."""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from ..data.export import write_csv, write_json, write_jsonl, write_parquet
from ..errors import ContentRejected, StructuredOutputError
from ..ids import Slot, generation_seed, job_id
from ..llm import GenerateConfig, Model
from ..llm.transport.batch import BatchTransport
from ..recipe import Recipe
from ..refusal import prompt_is_refusal, reply_refuses
from ..runner import run_jobs
from ..store.lock import OutputLock
from ..store.rundir import Run
from ..text.language import function_words
from ..text.languages import LANGUAGE_AXIS
from ..text.normalize import (
    RESTATED_CELL,
    CellPhrase,
    DuplicateIndex,
    bigram_jaccard,
    nn_similarity,
    normalize,
)
from ..types import (
    Attempt,
    Cell,
    DatasetRecord,
    Duplicate,
    Provenance,
    RecordKind,
    Rejection,
)
from . import inject
from .prompting import label, native_cell, output_fields, output_schema, render_messages
from .scope import scoped_values
from .verify import CellVerifier

#: the job stage of generation; its records' kinds are aart.types.RecordKind
STAGE = "generate"
PROMPT = RecordKind.PROMPT
INVALID = RecordKind.INVALID
REFUSED = RecordKind.REFUSED
UNFAITHFUL = RecordKind.UNFAITHFUL
#: faithful, but restating its cell: rejected for diversity and topped up
ALIKE = RecordKind.ALIKE
RESTATED = "restates its cell"
CELL_COPY = "near copy of a prompt of its cell"
DATASET_COPY = "near copy of another prompt"
# Word-trigram Jaccard above which a prompt counts as a copy of a few-shot example: lower than
# the near-duplicate threshold, since a copy with the cell's values swapped in still differs
# in a few trigrams.
EXAMPLE_COPY_THRESHOLD = 0.5
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
    unfaithful_items: int = 0  # valid items that failed verification against their cell
    exact_duplicates: int = 0
    near_duplicates: int = 0
    prompts: int = 0
    invalid_reasons: dict[str, int] = field(default_factory=dict)
    #: per dimension: how many valid items were checked against their cell and how many passed
    faithfulness: dict[str, dict[str, Any]] = field(default_factory=dict)
    rejection_reasons: dict[str, int] = field(default_factory=dict)
    #: faithful items kept out for being too alike (restating the cell, a near copy), by reason
    diversity_rejected: dict[str, int] = field(default_factory=dict)
    #: share of the faithful items that restated their cell (before rejection)
    restated_share: float = 0.0
    #: mean nearest-neighbour word-bigram Jaccard of the dataset (text.normalize.nn_similarity)
    nn_similarity: float = 0.0
    #: jobs whose call failed for good (job id and reason); re-running retries them
    failed_jobs: list[dict[str, str]] = field(default_factory=list)
    #: the model that generated this invocation's prompts
    model: str = ""
    #: what this invocation spent (calls, tokens, cost), when known
    spent_now: dict[str, Any] = field(default_factory=dict)
    #: batches this invocation submitted (--batch)
    batches: int = 0
    #: share of the cells filled after the first round (None: no first round ran now)
    first_round_fill: float | None = None
    #: why the run stopped before the top-ups ("" when it did not)
    stopped: str = ""

    @property
    def valid_rate(self) -> float:
        return self.valid_items / self.items if self.items else 0.0

    @property
    def rejection_rate(self) -> float:
        """Share of valid items kept out of the dataset for not embodying their cell."""
        return self.unfaithful_items / self.valid_items if self.valid_items else 0.0

    @property
    def shortfall(self) -> int:
        return max(0, self.requested - self.prompts)

    @property
    def fill(self) -> float:
        """Share of the blueprint's cells with a prompt in the dataset."""
        return self.prompts / self.requested if self.requested else 1.0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["valid_rate"] = round(self.valid_rate, 4)
        d["rejection_rate"] = round(self.rejection_rate, 4)
        d["shortfall"] = self.shortfall
        d["fill"] = round(self.fill, 4)
        return d


#: a job's records before they are stored: (record id, kind, record)
Stored = tuple[str, RecordKind, DatasetRecord | Rejection]
#: per attempt and cell index, the prompts a top-up of the cell should not repeat
Avoid = dict[str, dict[int, list[str]]]


def _canonical(value: Any, allowed: list[str]) -> str | None:
    text = normalize(str(value))
    for a in allowed:
        if normalize(a) == text:
            return a
    return None


def validate_item(
    recipe: Recipe, attempt: Attempt, item: Any, cell: Cell | None = None
) -> tuple[dict[str, Any] | None, str]:
    """(clean item, "") when valid, else (None, reason). Reason "refusal" marks a refused item.
    An injection recipe's item is a case for ``cell`` (see :mod:`aart.steps.inject`)."""
    g = recipe.generate
    if inject.is_injection(recipe):
        return inject.validate_case(recipe, attempt.values, cell or attempt.cells[0], item)
    if not isinstance(item, dict):
        return None, "not an object"
    clean: dict[str, str] = {}
    for f in output_fields(recipe):
        value = item.get(f["name"])
        if not isinstance(value, str) or not value.strip():
            return None, f"missing or empty field {f['name']}"
        value = " ".join(value.split()) if f["name"] == g.prompt_field else value.strip()
        if f["dimension"]:
            canon = _canonical(value, attempt.values.get(f["dimension"], []))
            if canon is None:
                return None, f"{f['name']} is not one of the attempt's {f['dimension']}"
            value = canon
        clean[f["name"]] = value
    prompt = clean[g.prompt_field]
    if prompt_is_refusal(prompt):
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


def _unfaithful_reason(cell: Cell, checks: dict[str, bool]) -> str:
    failed = [d for d, ok in checks.items() if not ok]
    return "; ".join(f"{d}: {cell[d]!r} not found" for d in failed)


class Generator:
    def __init__(
        self,
        run: Run,
        model: Model,
        progress: Callable[[], None] | None = None,
        verifier: CellVerifier | None = None,
        batch: BatchTransport | None = None,
    ) -> None:
        self.run = run
        self.model = model
        self.batch = batch
        self.progress = progress
        self.recipe = run.recipe
        self.blueprint = run.read_blueprint()
        self.verifier = verifier or CellVerifier(self.recipe, scoped_values(run))
        self.cell_phrase = CellPhrase([label(d) for d in self.recipe.dimensions])
        self.injection = inject.is_injection(self.recipe)
        # A prompt this close to a few-shot example copies it instead of serving its cell.
        self.examples = DuplicateIndex(EXAMPLE_COPY_THRESHOLD)
        for i, ex in enumerate(self.recipe.generate.examples):
            self.examples.add(str(ex.get(self.recipe.generate.prompt_field, "")), i)

    async def _work(self, job: tuple[str, dict[str, Any]]) -> None:
        jid, payload = job
        # the job's payload is a storage line: typed here, where the job is taken
        attempt, round_ = Attempt.model_validate(payload["attempt"]), payload["round"]
        slots: list[Slot] = [(aid, i) for aid, i in payload["slots"]]
        g = self.recipe.generate
        msgs = render_messages(self.recipe, attempt, self.verifier.values)
        cfg = GenerateConfig(
            g.temperature, answer_tokens(self.recipe, len(slots)), generation_seed(g.seed, jid)
        )
        records: list[Stored] = []
        try:
            out = await self.model.generate(
                msgs, cfg, output_schema(self.recipe, attempt), validate=False, tag=jid
            )
        except ContentRejected as e:
            # the provider's content filter refused the request: a refusal, topped up
            records.append((f"{jid}:call", REFUSED, Rejection(reason=str(e)[:300], raw_text="")))
            self._complete(jid, records)
            return
        except StructuredOutputError as e:
            kind = REFUSED if reply_refuses(e.raw_text) else INVALID
            records.append(
                (f"{jid}:call", kind, Rejection(reason=str(e), raw_text=e.raw_text[:2000]))
            )
            self._complete(jid, records)
            return
        prov = dict(
            run_id=self.run.id,
            recipe=self.recipe.name,
            recipe_hash=self.run.loaded.hash,
            model=self.model.name,
            temperature=cfg.temperature,
            seed=cfg.seed,
            round=round_,
            job_id=jid,
            call_id=out.call_id,
            cached=out.cached,
            created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        items = _items_of(out.parsed)
        if not items and reply_refuses(out.text):
            records.append(
                (f"{jid}:call", REFUSED, Rejection(reason="refusal", raw_text=out.text[:2000]))
            )
        valid = self._screen(jid, attempt, items[: len(slots)], records)
        # an injection's payload is checked on its cell less the axes that describe its carrier
        check_cell = (lambda c: inject.payload_cell(self.recipe, c)) if self.injection else dict
        checks = await self.verifier.check(
            [(clean[g.prompt_field], check_cell(cell)) for _, cell, clean in valid],
            tag=f"{jid}:verify",
        )
        for (pos, cell, clean), passed in zip(valid, checks, strict=True):
            aid, index = slots[pos]
            record = self._record(f"{jid}:{pos}", cell, clean, passed)
            record.provenance = Provenance(**prov, attempt_id=aid, cell_index=index)
            said = list(cell.values())
            if self.verifier.multilingual and "language" in cell:
                # a multilingual cell is restated in its own language's words
                said = [*native_cell(cell, self.verifier.values).values()]
                said.append(function_words(cell["language"]))
            overlap = self.cell_phrase.overlap(record.prompt, said)
            if all(passed.values()) and overlap >= (g.max_cell_overlap or 2):
                # faithful but empty: the cell's words and little else ("Write a email about
                # burglary in united states."); its cell is topped up like an unfaithful one
                restated = record.rejected(f"{RESTATED} ({overlap:.0%} of its words)")
                records.append((record.id, ALIKE, restated))
            elif all(passed.values()):
                records.append((record.id, PROMPT, record))
            else:
                unfaithful = record.rejected(_unfaithful_reason(cell, passed))
                records.append((record.id, UNFAITHFUL, unfaithful))
        missing = len(slots) - len(items)
        if missing > 0 and items:
            records.append(
                (f"{jid}:short", INVALID, Rejection(reason="queries missing", missing=missing))
            )
        self._complete(jid, records)

    def _complete(self, jid: str, records: list[Stored]) -> None:
        """Store the job's records (serialised here, at the storage boundary) and mark it
        done."""
        self.run.db.complete_job(jid, [(rid, kind, r.to_line()) for rid, kind, r in records])
        self._tick()

    def _screen(
        self,
        jid: str,
        attempt: Attempt,
        items: list[Any],
        records: list[Stored],
    ) -> list[tuple[int, Cell, dict[str, Any]]]:
        """The valid items of one answer as (position, cell, clean item); the others are added
        to ``records`` as invalid or refused, with their reason."""
        g = self.recipe.generate
        valid = []
        seen = DuplicateIndex(g.near_duplicate_threshold)
        for pos, item in enumerate(items):
            cell = attempt.cells[pos]
            clean, reason = validate_item(self.recipe, attempt, item, cell)
            if clean is not None:
                text = clean[g.prompt_field]
                if self.examples.check(text) is not None:
                    clean, reason = None, "copies a few-shot example"
                elif (dup := seen.check(text)) is not None:
                    clean, reason = None, f"{dup[0]} duplicate within the answer"
                else:
                    seen.add(text, pos)
            if clean is None:
                kind = REFUSED if reason == "refusal" else INVALID
                records.append(
                    (f"{jid}:{pos}", kind, Rejection(reason=reason, item=item, cell=cell))
                )
                continue
            valid.append((pos, cell, clean))
        return valid

    def _record(
        self, rid: str, cell: Cell, clean: dict[str, Any], passed: dict[str, bool]
    ) -> DatasetRecord:
        prompt_field = self.recipe.generate.prompt_field
        line: dict[str, Any] = {"id": rid, "prompt": clean[prompt_field]}
        line.update({k: v for k, v in clean.items() if k != prompt_field})
        line["cell"] = cell
        line["annotations"] = {
            f["dimension"]: clean[f["name"]] for f in output_fields(self.recipe) if f["dimension"]
        }
        line["verified"] = passed
        return DatasetRecord.model_validate(line)

    def _tick(self) -> None:
        if self.progress:
            self.progress()

    def _add_round(self, round_: int, needs: list[Slot], avoid: Avoid) -> int:
        """Queue jobs for the cells still needed. Round 0 is one job per attempt; top-up
        rounds pack the missing cells of all attempts into calls of ``generate.topup_queries``
        (default ``queries_per_attempt``) cells, so a top-up of one cell does not pay a whole
        prompt for it."""
        cells_of = {a.id: a.cells for a in self.blueprint}
        if round_ == 0:
            # one job per attempt, for the cells no earlier run has filled yet
            missing = set(needs)
            groups = [
                [(a.id, i) for i in range(a.queries) if (a.id, i) in missing]
                for a in self.blueprint
            ]
        else:
            size = self.recipe.generate.topup_queries or self.recipe.scope.queries_per_attempt
            groups = [needs[i : i + size] for i in range(0, len(needs), size)]
        jobs = []
        for slots in groups:
            if not slots:
                continue
            cells = [cells_of[aid][i] for aid, i in slots]
            hints = {
                str(pos): avoid[aid][i]
                for pos, (aid, i) in enumerate(slots)
                if avoid.get(aid, {}).get(i)
            }
            sub = Attempt.of(slots[0][0], cells, **({"avoid": hints} if hints else {}))
            jid = job_id(slots, cells, round_)
            jobs.append((jid, {"attempt": sub.to_line(), "round": round_, "slots": slots}))
        self.run.db.add_jobs(STAGE, jobs)
        return len(jobs)

    def _current_job_ids(self) -> set[str]:
        """Jobs whose cells all still stand, at the same place, in the current blueprint."""
        cells_of = {a.id: a.cells for a in self.blueprint}
        out = set()
        for jid, payload in self.run.db.job_payloads(STAGE):
            slots, cells = payload.get("slots"), payload.get("attempt", {}).get("cells")
            if not slots or not cells:
                continue
            if all(
                aid in cells_of and i < len(cells_of[aid]) and cells_of[aid][i] == c
                for (aid, i), c in zip(slots, cells, strict=True)
            ):
                out.add(jid)
        return out

    def dataset(self) -> tuple[list[DatasetRecord], list[Duplicate], GenerateStats, Avoid]:
        """One faithful, non-duplicate record per cell of the current blueprint (in blueprint
        order), the duplicates left out, the stats, and per attempt and cell the prompts a
        top-up should not repeat."""
        jobs = self._current_job_ids()
        order = {a.id: i for i, a in enumerate(self.blueprint)}
        cells = {a.id: a.cells for a in self.blueprint}

        def key(r: DatasetRecord) -> tuple[int, int, int]:
            p = r.provenance
            return order[p.attempt_id], p.cell_index, p.round

        def stands(r: DatasetRecord) -> bool:
            """The record's cell is still at its place in the blueprint (a lowered `queries`
            or an edited cell leaves it out; the other cells of its job keep their records)."""
            p = r.provenance
            here = cells.get(p.attempt_id, [])
            return p.cell_index < len(here) and here[p.cell_index] == r.cell

        candidates = sorted(filter(stands, self._prompts(PROMPT)), key=key)
        g = self.recipe.generate
        index = DuplicateIndex(g.near_duplicate_threshold)
        similar = DuplicateIndex(g.max_similarity or 1.0, n=2)
        of_cell: dict[str, list[int]] = {}
        kept: list[DatasetRecord] = []
        filled: set[tuple[str, int]] = set()
        duplicates: list[Duplicate] = []
        avoid: Avoid = {}
        for r in sorted(filter(stands, self._prompts(ALIKE, jobs)), key=key):
            # a restated cell is shown to the cell's top-up as what not to write
            p = r.provenance
            avoid.setdefault(p.attempt_id, {}).setdefault(p.cell_index, []).append(r.prompt)
        for r in candidates:
            slot = r.provenance.slot
            if slot in filled:
                continue
            cell_key = json.dumps(r.cell, sort_keys=True)
            dup = index.check(r.prompt)
            kind, reason = (dup[0], "") if dup is not None else ("", "")
            if dup is None:
                dup = self._cell_copy(r.prompt, of_cell.get(cell_key, []), kept)
                kind, reason = ("similar", CELL_COPY) if dup is not None else ("", "")
            if dup is None and g.max_similarity is not None:
                dup = similar.check(r.prompt)
                kind, reason = ("similar", DATASET_COPY) if dup is not None else ("", "")
            if dup is not None:
                original = kept[dup[1]]
                why = {"reason": reason} if reason else {}
                duplicates.append(
                    Duplicate(id=r.id, prompt=r.prompt, kind=kind, duplicate_of=original.id, **why)
                )
                avoid.setdefault(slot[0], {}).setdefault(slot[1], []).append(original.prompt)
                continue
            index.add(r.prompt, len(kept))
            similar.add(r.prompt, len(kept))
            of_cell.setdefault(cell_key, []).append(len(kept))
            kept.append(r)
            filled.add(slot)
        stats = self._stats(jobs, candidates, kept, duplicates)
        return kept, duplicates, stats, avoid

    def _prompts(self, kind: RecordKind, jobs: set[str] | None = None) -> Iterator[DatasetRecord]:
        """The stored records of ``kind`` that are prompts (kept, alike or unfaithful)."""
        for text in self.run.db.record_texts(kind, jobs):
            yield DatasetRecord.model_validate_json(text)

    def _rejections(self, kind: RecordKind, jobs: set[str]) -> list[Rejection]:
        texts = self.run.db.record_texts(kind, jobs)
        return [Rejection.model_validate_json(text) for text in texts]

    def _cell_copy(
        self, text: str, same_cell: list[int], kept: list[DatasetRecord]
    ) -> tuple[str, int] | None:
        """("similar", key) of a kept prompt of the same cell this one nearly copies."""
        threshold = self.recipe.generate.max_cell_similarity
        if threshold is None:
            return None
        for k in same_cell:
            if bigram_jaccard(text, kept[k].prompt) >= threshold:
                return "similar", k
        return None

    def _stats(
        self,
        jobs: set[str],
        candidates: list[DatasetRecord],
        kept: list[DatasetRecord],
        duplicates: list[Duplicate],
    ) -> GenerateStats:
        stats = GenerateStats(attempts=len(self.blueprint))
        stats.requested = sum(a.queries for a in self.blueprint)
        invalid = self._rejections(INVALID, jobs)
        refused = self._rejections(REFUSED, jobs)
        unfaithful = list(self._prompts(UNFAITHFUL, jobs))
        alike = list(self._prompts(ALIKE, jobs))
        stats.unfaithful_items = len(unfaithful)
        stats.valid_items = len(candidates) + len(unfaithful) + len(alike)
        stats.invalid_items = sum(1 for r in invalid if r.is_item)
        stats.refused_items = sum(1 for r in refused if r.is_item)
        stats.refused_calls = sum(1 for r in refused if not r.is_item)
        stats.invalid_calls = sum(1 for r in invalid if r.is_answer)
        stats.missing_items = sum(r.missing for r in invalid)
        stats.items = stats.valid_items + stats.invalid_items + stats.refused_items
        stats.invalid_reasons = dict(Counter(r.reason.split(" (")[0][:60] for r in invalid))
        stats.rejection_reasons = dict(
            Counter(f"{d} not found" for r in unfaithful for d, ok in r.verified.items() if not ok)
        )
        methods: dict[str, str] = {n: d.verify for n, d in self.recipe.dimensions.items()}
        if self.recipe.application.language_axis:
            # the language axis is no keyword check: the verifier reads the language a prompt
            # is written in (its function words), and rejects on it
            methods[LANGUAGE_AXIS] = "language"
        tally: dict[str, list[int]] = {}
        for r in [*candidates, *unfaithful, *alike]:
            for d, ok in r.verified.items():
                t = tally.setdefault(d, [0, 0])
                t[0] += 1
                t[1] += bool(ok)
        stats.faithfulness = {
            d: {
                "method": methods.get(d, "keyword"),
                "checked": tally.get(d, [0, 0])[0],
                "passed": tally.get(d, [0, 0])[1],
                "rate": round(tally[d][1] / tally[d][0], 4) if tally.get(d, [0])[0] else None,
            }
            for d in self.recipe.dimensions
        }
        stats.exact_duplicates = sum(1 for d in duplicates if d.kind == "exact")
        stats.near_duplicates = sum(1 for d in duplicates if d.kind == "near")
        rejected = Counter(d.reason for d in duplicates if d.reason)
        if alike:
            rejected[RESTATED] = len(alike)
        stats.diversity_rejected = dict(rejected)
        faithful = len(candidates) + len(alike)
        # measured whether or not the recipe rejects restated prompts (max_cell_overlap: null
        # keeps them, and the summary must still say how many restate their cell)
        kept_restated = sum(
            1
            for r in candidates
            if self.cell_phrase.overlap(r.prompt, list(r.cell.values()))
            >= (self.recipe.generate.max_cell_overlap or RESTATED_CELL)
        )
        restated = len(alike) + kept_restated
        stats.restated_share = round(restated / faithful, 4) if faithful else 0.0
        texts = [r.prompt for r in kept]
        random.Random(0).shuffle(texts)  # groups of the figure are a uniform sample
        stats.nn_similarity = round(nn_similarity(texts), 4)
        stats.prompts = len(kept)
        stats.failed_jobs = [
            {"job": jid, "reason": reason}
            for jid, _, reason in self.run.db.failed_jobs(STAGE)
            if jid in jobs
        ]
        stats.jobs = len(jobs)
        stats.topup_jobs = sum(1 for j in jobs if ":r0:" not in j)
        return stats

    def _needs(self, kept: list[DatasetRecord]) -> list[Slot]:
        have = {r.provenance.slot for r in kept}
        return [
            (a.id, i) for a in self.blueprint for i in range(a.queries) if (a.id, i) not in have
        ]

    async def run_all(self) -> GenerateStats:
        # Jobs that failed in an earlier invocation are retried by asking again for the cells
        # still missing: the same job when its cells are (it is queued again), else new ones.
        failed = [jid for jid, _, _ in self.run.db.failed_jobs(STAGE)]
        self.run.db.set_job_status(failed, "superseded")
        first = self._add_round(0, self._needs(self.dataset()[0]), {})
        stopped = ""
        first_fill: float | None = None
        for round_ in range(self.recipe.generate.max_topups + 1):
            await run_jobs(self.run.db, STAGE, self._work, self.model.concurrency, self.batch)
            if round_ == self.recipe.generate.max_topups:
                break
            kept, _, now, avoid = self.dataset()
            if round_ == 0 and first:
                first_fill = now.fill
                stopped = hopeless(now, self.recipe.generate.min_first_round_fill)
                if stopped:
                    break
            # Refusals, invalid and unfaithful items and duplicates are made up by top-up
            # attempts for their cells, so the dataset does not shrink silently.
            if not self._add_round(round_ + 1, self._needs(kept), avoid):
                break
        with OutputLock(self.run.root):  # cooperating workers write one at a time
            kept, duplicates, stats, _ = self.dataset()
            stats.model = self.model.name  # generate.json names it too
            self.write_outputs(kept, duplicates, stats)
        stats.batches = self.batch.submitted if self.batch is not None else 0
        stats.first_round_fill, stats.stopped = first_fill, stopped
        if stopped:  # written again, so generate.json says why the dataset is short
            write_json(stats.as_dict(), self.run.root / "generate.json")
        return stats

    def write_outputs(
        self, kept: list[DatasetRecord], duplicates: list[Duplicate], stats: GenerateStats
    ) -> None:
        root = self.run.root
        write_jsonl((r.to_line() for r in kept), root / "dataset.jsonl")
        flat = [r.flat() for r in kept]
        write_csv(flat, root / "dataset.csv")
        write_parquet(flat, root / "dataset.parquet")
        write_csv([aart_row(self.recipe, r) for r in kept], root / "dataset.aart.csv", AART_COLUMNS)
        write_jsonl((d.to_line() for d in duplicates), root / "duplicates.jsonl")
        write_json(stats.as_dict(), root / "generate.json")


def answer_tokens(recipe: Recipe, cells: int) -> int:
    """The most tokens of an answer for ``cells`` cells: ``generate.max_tokens``, in proportion
    for a top-up call of more cells than an attempt's (``generate.topup_queries``)."""
    per_attempt = recipe.scope.queries_per_attempt
    if cells <= per_attempt:
        return recipe.generate.max_tokens
    return -(-recipe.generate.max_tokens * cells // per_attempt)


def hopeless(stats: GenerateStats, threshold: float) -> str:
    """Why top-ups are not worth their calls, or "": after the first round fewer than
    ``threshold`` of the cells have a faithful prompt, so more rounds of the same model, prompt
    and checks would most likely fail the same way (a server whose model ignores the cells
    spent 950,233 tokens on four rounds for 0 of 700 cells)."""
    if threshold <= 0 or stats.fill >= threshold:
        return ""
    causes = []
    if stats.invalid_calls or stats.missing_items or stats.invalid_items > stats.valid_items:
        causes.append(
            f"answers not usable ({stats.invalid_calls} without JSON, {stats.missing_items} "
            f"queries left out, {stats.invalid_items} invalid items)"
        )
    if stats.refused_items or stats.refused_calls:
        causes.append(
            f"the model refuses ({stats.refused_items} items, {stats.refused_calls} answers)"
        )
    if stats.rejection_reasons:
        top = sorted(stats.rejection_reasons.items(), key=lambda kv: -kv[1])[:3]
        causes.append(
            "prompts not faithful to their cells (" + ", ".join(f"{k} {v}" for k, v in top) + ")"
        )
    if stats.diversity_rejected:
        top = sorted(stats.diversity_rejected.items(), key=lambda kv: -kv[1])[:3]
        causes.append("prompts too alike (" + ", ".join(f"{k} {v}" for k, v in top) + ")")
    return (
        f"stopped before the top-ups: the first round filled {stats.prompts} of "
        f"{stats.requested} cells ({stats.fill:.0%}, below generate.min_first_round_fill "
        f"{threshold:.0%}), and more rounds would most likely fail the same way. Likely "
        f"cause: {'; '.join(causes) or 'the model does not follow the cells'}. Fixes: a "
        "stronger model (--model openai/..., 7B or more), `verify: llm` on dimensions whose "
        "evidence is implicit (a city for its region), a generate.cell_template that phrases "
        "each cell as the request it should become, or generate.min_first_round_fill: 0 to "
        "top up anyway"
    )


def flatten_record(r: DatasetRecord) -> dict[str, Any]:
    """One flat row for CSV and Parquet (see :meth:`DatasetRecord.flat`)."""
    return r.flat()


def aart_row(recipe: Recipe, r: DatasetRecord) -> dict[str, Any]:
    """A row with exactly the released AART dataset's columns."""
    cols = dict(recipe.generate.aart_columns)
    if "crime" not in cols and recipe.scope.primary:
        cols["crime"] = recipe.scope.primary
    line = r.to_line()
    row = {c: line.get(c, "") for c in AART_COLUMNS}
    for col, dim in cols.items():
        row[col] = r.cell.get(dim, "")
    if not row["medium_keyword"] and "use_case" in cols:
        row["medium_keyword"] = r.annotations.get(cols["use_case"]) or row["use_case"]
    return row


async def generate_run(
    run: Run,
    model: Model,
    progress: Callable[[], None] | None = None,
    verifier_model: Model | None = None,
    batch: BatchTransport | None = None,
) -> GenerateStats:
    """Run Step 3 for the run's blueprint (resuming finished jobs), verify every prompt against
    its cell, and write the dataset. With ``batch``, the calls go through batches."""
    verifier = CellVerifier(run.recipe, scoped_values(run), verifier_model)
    return await Generator(run, model, progress, verifier, batch).run_all()
