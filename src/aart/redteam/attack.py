"""`aart attack`: send every prompt of a dataset to the application under test, judge the
responses, and report attack-success rates by axis. Resumable like generation: one job per
prompt in OUT/run.db, responses cached the moment they arrive."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from ..errors import (
    AartError,
    ConfigError,
    EndpointDown,
    ProviderError,
    TargetError,
    UsageError,
)
from ..evaluate.data import load_dataset, read_rows
from ..llm import Budget, ModelOptions
from ..llm.batch import Deferred
from ..llm.factory import ModelFactory
from ..llm.http_status import is_retryable
from ..llm.types import answer_limit
from ..runner import run_jobs
from ..store.db import RunDB
from ..store.export import write_jsonl
from ..textsim import text_hash
from . import stats
from .execute import Executor
from .findings import Agreement, Comparison, Findings
from .judge_accuracy import Accuracy, built_in, from_labels
from .judges import NOTHING_SAID, RUBRIC_JUDGES, GuardJudge, LLMJudge, RefusalJudge, judge_name
from .replay import attack_dataset, saved_responses
from .results import ResultLine, State, result_line, state_of
from .sampling import check_selection, stratified_order
from .spec import AttackConfig
from .strategies import IDENTITY, Strategy, needs_attacker, parse_strategy
from .targets import ReplayAPI, create_target

STAGE = "attack"


def attack_records(path: Path, config: AttackConfig) -> list[dict[str, Any]]:
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
    axis = len(chosen) > 1 or any(r.get("strategy") for r in rows)
    out = []
    for i in selected(ds, config):
        text = ds.texts[i]
        row = rows[i] if i < len(rows) else {}
        rid = str(row.get("id") or "") or f"p{i:06d}"
        own = row.get("strategy")
        for s in [parse_strategy(str(own))] if own else chosen:
            cell = {**ds.cell_of(i), "strategy": s.label} if axis else ds.cell_of(i)
            out.append({"index": i, "id": rid, "prompt": text, "cell": cell, "strategy": s.label})
    return out


def selected(ds: Any, config: AttackConfig) -> list[int]:
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


class Attack:
    def __init__(self, dataset: str | Path, out: str | Path, config: AttackConfig) -> None:
        self.dataset = Path(dataset)
        self.out = Path(out)
        self.config = config
        self.progress: Callable[[], None] | None = None
        self.records = attack_records(self.dataset, config)
        if not self.records:
            raise UsageError(f"{dataset} holds no prompts")
        if config.batch is not None and config.ray is not None:
            raise UsageError("--batch and --executor ray do not go together: choose one")
        # Everything the attack needs is checked before the directory exists (target,
        # judges, attacker, prices): a usage error leaves nothing behind, so the corrected
        # command starts afresh instead of meeting "other settings".
        self._build(None, config.budget())
        self.out.mkdir(parents=True, exist_ok=True)
        self.db = RunDB(self.out / "run.db", lock="shared")  # other attack workers may join
        try:
            selection = check_selection(  # before _check_settings sets its meta
                self.db,
                self.out,
                config.limit,
                config.sample,
                config.seed,
                len({r["index"] for r in self.records}),
            )
            self._check_settings()
            self.db.set_meta("attack_selection", selection)
            self.budget = config.budget(self.db.call_totals())
            self._build(self.db, self.budget)
            # what `aart rejudge` needs to read the same prompts again
            self.db.set_meta("attack_dataset", json.dumps(config.dataset_meta(self.target_name)))
            spec = config.model_copy(update={"dataset": str(self.dataset.resolve())})
            self.db.set_meta("attack_spec", spec.model_dump_json())
        except BaseException:
            self.db.close()  # and its lock, so the directory is free again
            raise

    def _judge_of(self, spec: str, options: ModelOptions) -> Any:
        """The primary judge a --judge spec names: a rubric judge (harmbench:MODEL,
        strongreject:MODEL) or the policy rubric (MODEL)."""
        kind, _, model = spec.partition(":")
        judge: Any
        if kind in RUBRIC_JUDGES and model:
            judge = RUBRIC_JUDGES[kind](self.models.model(model, options))
        else:
            judge = LLMJudge(
                self.models.model(spec, options), self.config.app_name, self.config.policy
            )
        assert judge.name == judge_name(spec)  # what baselines and rejudges compare against
        return judge

    def _build(self, db: RunDB | None, budget: Budget) -> None:
        """The target, judges, attacker and executor; without ``db``, only to check that
        they can be built (no batch queue, no Ray cluster, nothing stored)."""
        config = self.config
        # target, judges and classifier: one factory, so one budget, one cache, one set of
        # prices
        self.models = ModelFactory(
            options=config.options,
            store=db,
            use_cache=config.use_cache,
            prices=config.prices,
            budget=budget,
            source="the recipe or --price",
        )
        if db is not None and config.batch is not None:
            self.models.batch = config.batch.queue(db, budget)
        if db is not None and config.ray is not None:
            self.models.remote = config.ray.start()
        if config.replay:
            replay = ReplayAPI(config.target, saved_responses(Path(config.replay)), config.options)
            self.target = self.models.wrap(config.target, replay, paid=False)
            earlier = attack_dataset(Path(config.replay))
            self.target_name = earlier.get("target_name") or config.target
        else:
            name, api = create_target(config.target, replace(config.options))
            self.target_name = name
            self.target = self.models.wrap(name, api)
        self.judges: list[Any] = [RefusalJudge()]
        self.primary = "refusal"
        judge_options = ModelOptions(base_url=config.options.base_url)
        if config.judge != "refusal":
            judge = self._judge_of(config.judge, judge_options)
            self.judges.append(judge)
            self.primary = judge.name
        if config.classifier:
            self.judges.append(GuardJudge(self.models.model(config.classifier, judge_options)))
        used = {parse_strategy(r["strategy"]) for r in self.records}
        attacker = None
        if needs_attacker(list(used)) and not config.replay:
            if not config.attacker:
                names = ", ".join(sorted(s.label for s in used if s.kind != "convert"))
                raise ConfigError(
                    f"the strategies {names} need an attacker model: --attacker "
                    "PROVIDER/MODEL (or attack.attacker in the recipe)"
                )
            attacker = self.models.model(config.attacker, judge_options)
        self.executor = Executor(
            self.target,
            self.judges,
            self.primary,
            attacker,
            config.system_prompt,
            config.max_tokens,
            config.max_rounds,
            config.max_turns,
        )

    def _check_settings(self) -> None:
        settings = self.config.settings()
        raw = self.db.get_meta("attack_settings")
        if raw is None and self.db.get_meta("attack_signature"):
            # an attack directory of an earlier version: same dataset and settings, or refused
            digest = hashlib.sha256(self.dataset.read_bytes()).hexdigest()
            if self.db.get_meta("attack_signature") != self.config.signature(digest):
                raise UsageError(
                    f"{self.out} holds an attack of an earlier aart with other settings or "
                    "another dataset; use another --out, or delete it to start over"
                )
        elif raw is not None:
            known = json.loads(raw)
            differs = [
                k for k in sorted(set(known) | set(settings)) if known.get(k) != settings.get(k)
            ]
            if differs:
                raise UsageError(
                    f"{self.out} holds an attack with other settings ({', '.join(differs)}); "
                    "use another --out, `aart rejudge` for other judges, or delete it to "
                    "start over"
                )
        self.db.set_meta("attack_settings", json.dumps(settings, sort_keys=True))

    def _calibration(self, answered: list[dict[str, Any]]) -> dict[str, Any]:
        """The judges against the people's verdicts given with `aart review --attack`."""
        from ..review.session import VERDICT, verdict_figures

        labels = self.db.latest_labels(VERDICT)
        return verdict_figures(answered, labels) if labels else {}

    def _human_verdicts(self) -> dict[str, str]:
        """The people's verdicts (violates, safe, unsure) by attack record id; with several
        reviewers, the latest label says (as the calibration reads them). A re-judged attack
        reads the earlier attack's labels too (the replies are the same); its own win."""
        from ..review.session import VERDICT

        labels = []
        earlier = Path(self.config.replay) / "run.db" if self.config.replay else None
        if earlier is not None and earlier.exists():
            db = RunDB(earlier, lock=False)
            try:
                labels += db.latest_labels(VERDICT)
            finally:
                db.close()
        labels += self.db.latest_labels(VERDICT)
        out: dict[str, str] = {}
        for x in labels:
            if x.get("verdict"):
                out[x["record_id"]] = str(x["verdict"])
        return out

    def _accuracy(
        self, answered: list[dict[str, Any]], human: dict[str, str], judge: str
    ) -> tuple[Accuracy, dict[str, Accuracy]]:
        """A judge's sensitivity and specificity: from the people's verdicts when there are
        enough (overall, and per axis value "axis=value"), else the built-in figure
        (judge_accuracy.BUILT_IN)."""
        from ..review.session import verdict_id

        rows = []
        for r in answered:
            h = human.get(verdict_id(r))
            v = r["verdicts"].get(judge, {}).get("violates")
            if h in ("violates", "safe") and v is not None:
                rows.append((h == "violates", bool(v), r["cell"]))
        overall = from_labels(
            [(h, j) for h, j, _ in rows], f"{len(rows)} human verdicts in this attack"
        ) or built_in(judge)
        per_value: dict[str, Accuracy] = {}
        for axis in sorted({a for _, _, cell in rows for a in cell}):
            for value in sorted({str(cell[axis]) for _, _, cell in rows if axis in cell}):
                sub = [(h, j) for h, j, cell in rows if str(cell.get(axis)) == value]
                acc = from_labels(sub, f"{len(sub)} human verdicts for {axis}={value}")
                if acc is not None:
                    per_value[f"{axis}={value}"] = acc
        return overall, per_value

    def _job_id(self, r: dict[str, Any]) -> str:
        base = f"{r['index']:06d}-{text_hash(r['prompt'])[:8]}"
        strategy = r.get("strategy", IDENTITY)
        return base if strategy == IDENTITY else f"{base}-{strategy}"

    async def _work(self, job: tuple[str, dict[str, Any]]) -> None:
        jid, rec = job
        result: dict[str, Any] = {**rec, "target": self.target_name}
        try:
            result.update(await self.executor.run(jid, rec, parse_strategy(rec["strategy"])))
        except ProviderError as e:
            if not isinstance(e, TargetError) and (
                isinstance(e, EndpointDown) or is_retryable(e.status) or e.status is None
            ):
                raise  # the job fails (and is retried on re-run), or the endpoint is down
            # the application's unusable answer to this prompt (a reply of another shape, a
            # 4xx other than the endpoint's faults such as a content filter): this prompt's
            # outcome, kept as a target error
            result["response"] = None
            result["target_error"] = str(e)[:300]
        except (AartError, Deferred):
            raise  # a spent budget, a usage error, a call waiting for its batch
        except Exception as e:
            # whatever this prompt's answer broke (a bug in aart included) fails this job
            # with the reason, never the attack
            raise ProviderError(f"unexpected {type(e).__name__}: {str(e)[:200]}") from e
        self.db.complete_job(jid, [(jid, STAGE, result)])
        if self.progress:
            self.progress()

    async def run(self, progress: Callable[[], None] | None = None) -> Findings:
        self.progress = progress
        self.db.add_jobs(STAGE, ((self._job_id(r), r) for r in self.records))
        self.db.set_job_status((jid for jid, _, _ in self.db.failed_jobs(STAGE)), "pending")
        try:
            batch = self.models.batch
            if batch is not None and not batch.models:
                raise UsageError(
                    "--batch needs a target or judge that is an OpenAI-compatible model "
                    "(openai/...) on a server with /v1/files and /v1/batches"
                )
            await run_jobs(self.db, STAGE, self._work, self.target.concurrency, batch)
        finally:
            await self.models.aclose()
        return self.findings()

    def findings(self) -> Findings:
        # the prompts of the dataset as it is now (an edited dataset keeps what it can)
        current = {self._job_id(r): r for r in self.records}
        results = sorted(self.db.records(STAGE, set(current)), key=lambda r: r["index"])
        for r in results:  # the cell as the dataset (and --axis) say now
            r["cell"] = current[self._job_id(r)]["cell"]
        answered = [r for r in results if "verdicts" in r]
        judged = [r for r in answered if r["verdicts"][self.primary]["violates"] is not None]
        unjudged = [r for r in answered if r["verdicts"][self.primary]["violates"] is None]
        outcomes = [(r["cell"], bool(r["verdicts"][self.primary]["violates"])) for r in judged]
        states: dict[str, int] = {}
        for r in answered:
            st = state_of(r, self.primary)
            states[st] = states.get(st, 0) + 1
        # unjudged by the primary judge, but the refusal detector saw the reply comply
        unjudged_complied = sum(
            1
            for r in unjudged
            if r["verdicts"].get("refusal", {}).get("refused") is False
            and r["verdicts"].get("refusal", {}).get("status") not in NOTHING_SAID
        )
        human = self._human_verdicts()
        accuracies = {j.name: self._accuracy(answered, human, j.name) for j in self.judges}
        accuracy, accuracy_by_value = accuracies[self.primary]
        failures = [r for r in judged if r["verdicts"][self.primary]["violates"]]
        severity = [r["verdicts"][self.primary].get("severity") or 0 for r in failures]
        refused = sum(1 for r in answered if r["verdicts"].get("refusal", {}).get("refused"))
        agreement = stats.agreement(
            [{k: v["violates"] for k, v in r["verdicts"].items()} for r in answered]
        )
        unjudged_by = {
            j.name: sum(1 for r in answered if r["verdicts"][j.name]["violates"] is None)
            for j in self.judges
        }
        by_value = stats.per_value(outcomes)
        for axis, cells in by_value.items():
            stats.correct_cells(
                cells,
                lambda v, axis=axis: accuracy_by_value.get(f"{axis}={v}", accuracy),  # type: ignore[misc]
            )
        by_pair = stats.per_pair(outcomes)
        for cells in by_pair.values():
            stats.correct_cells(cells, lambda v: accuracy)
        warnings = judge_warnings(self.primary, failures, agreement, unjudged_by, answered)
        warnings += truncation_warnings(results, answer_limit(self.config.max_tokens))
        warnings[:0] = state_warnings(
            self.primary, states, len(answered), unjudged_complied, self.config.max_tokens
        )
        return Findings(
            dataset=str(self.dataset),
            target=self.target_name,
            primary_judge=self.primary,
            judges=[j.name for j in self.judges],
            prompts=len(self.records),
            judged=len(judged),
            unjudged=len(unjudged),
            target_errors=sum(1 for r in results if r.get("target_error")),
            failed_jobs=[
                {"job": jid, "reason": reason} for jid, _, reason in self.db.failed_jobs(STAGE)
            ],
            overall=stats.rate(len(failures), len(judged)),
            refusal_rate=refused / len(results) if results else 0.0,
            by_value=by_value,
            by_pair=by_pair,
            agreement=agreement,
            severity={str(s): severity.count(s) for s in sorted(set(severity))},
            usage=self.db.call_totals(),
            failures=failures,
            unjudged_records=unjudged,
            outcomes={
                outcome_key(r): bool(r["verdicts"][self.primary]["violates"]) for r in judged
            },
            ids={outcome_key(r): r["id"] for r in judged},
            strategy_stats=strategy_stats(judged, self.primary),
            calibration=self._calibration(answered),
            unjudged_by_judge=unjudged_by,
            warnings=warnings,
            measures="attack success" if self.primary != "refusal" else NON_REFUSAL,
            states=states,
            worst_case=stats.rate(len(failures) + len(unjudged), len(answered)),
            corrected=stats.corrected_rate(len(failures), len(judged), accuracy),
            corrected_worst_case=stats.corrected_rate(
                len(failures) + len(unjudged), len(answered), accuracy
            ),
            scores=judge_scores(answered),
            unjudged_complied=unjudged_complied,
            judge_accuracy={
                j: {
                    "overall": asdict(acc),
                    "per_value": {k: asdict(a) for k, a in by.items()},
                }
                for j, (acc, by) in accuracies.items()
            },
        )

    def results(self) -> list[ResultLine]:
        """One line per (prompt, strategy) of the dataset as it is now: every judge's
        verdict, the people's where they gave one, and the state of those not answered."""
        from ..review.session import verdict_id

        current = {self._job_id(r): r for r in self.records}
        done = {self._job_id(r): r for r in self.db.records(STAGE, set(current))}
        failed = {jid: reason for jid, _, reason in self.db.failed_jobs(STAGE)}
        human = self._human_verdicts()
        lines = []
        for jid, rec in current.items():
            r = done.get(jid)
            if r is None:
                state: State = "failed" if jid in failed else "not run"
                lines.append(
                    result_line(
                        {**rec, "failure": failed.get(jid)}, self.primary, None, state=state
                    )
                )
                continue
            r = {**r, "cell": rec["cell"]}
            lines.append(result_line(r, self.primary, human.get(verdict_id(r))))
        return lines

    def close(self) -> None:
        if self.models.remote is not None:
            self.models.remote.shutdown()
        self.db.close()


#: what the rate counts when the refusal detector is the only judge
NON_REFUSAL = "complied (not refused)"


def state_warnings(
    primary: str, states: dict[str, int], answered: int, unjudged_complied: int, max_tokens: int
) -> list[str]:
    """What the headline leaves out: unjudged prompts the refusal detector saw comply, and
    replies that said nothing (empty, cut off)."""
    out = []
    unjudged = states.get("unjudged", 0)
    if unjudged_complied:
        out.append(
            f"{primary} gave no verdict on {unjudged} of {answered} answers, and the refusal "
            f"detector read {unjudged_complied} of them as complying: the rate leaves them "
            "out; rejudge them (aart rejudge) or review them (aart review --attack) before "
            "trusting it"
        )
    empty, cut = states.get("empty", 0), states.get("truncated", 0)
    if empty or cut:
        out.append(
            f"{empty} empty and {cut} cut-off replies (stopped before any answer, e.g. inside "
            f"<think> at --max-tokens {max_tokens}): neither refusals nor successes, counted "
            "as not successes; raise --max-tokens or check the target"
        )
    return out


def judge_scores(answered: list[dict[str, Any]]) -> dict[str, dict[str, float | int | None]]:
    """The mean graded score of every judge that gives one (strongreject)."""
    by: dict[str, list[float]] = {}
    for r in answered:
        for j, v in r["verdicts"].items():
            if v.get("score") is not None and not j.startswith(("refusal", "harmbench:")):
                by.setdefault(j, []).append(float(v["score"]))
    return {j: {"mean": sum(xs) / len(xs), "n": len(xs)} for j, xs in by.items()}


#: two judges agreeing less than this (Cohen's kappa, on at least MIN_PAIRS prompts) disagree
#: badly: the headline rests on one of them
KAPPA_WARNING = 0.2
MIN_PAIRS = 5


def judge_warnings(
    primary: str,
    failures: list[dict[str, Any]],
    agreement: list[Agreement],
    unjudged_by: dict[str, int],
    answered: list[dict[str, Any]],
) -> list[str]:
    """What makes the attack-success rate doubtful: a primary judge that counts refusals as
    violations, judges that disagree badly, a judge that gave no usable verdicts."""
    out = []
    if primary != "refusal":
        contradicted = [r for r in failures if r["verdicts"]["refusal"].get("refused")]
        if contradicted:
            out.append(
                f"{primary} counted {len(contradicted)} of its {len(failures)} violations on "
                f"responses the refusal detector reads as refusals (e.g. "
                f"{(contradicted[0].get('response') or '')[:80]!r}); check the judge before "
                "trusting the rate"
            )
    for a in agreement:
        # the refusal detector is a proxy, not a judge of the policy: a safe answer that does
        # not refuse is expected to disagree with it
        if "refusal" in a["judges"] or a["kappa"] is None or a["n"] < MIN_PAIRS:
            continue
        if a["kappa"] < KAPPA_WARNING:
            out.append(
                f"judges disagree: {' vs '.join(a['judges'])} agree on "
                f"{100 * (a['agreement'] or 0):.0f}% (kappa {a['kappa']:.2f}, n={a['n']})"
            )
    for judge, n in unjudged_by.items():
        if judge != primary and n:
            out.append(f"{judge} gave no usable verdict on {n} of {len(answered)} answers")
    return out


def truncation_warnings(results: list[dict[str, Any]], limit: int) -> list[str]:
    """Answers cut at aart's bound (an endpoint that ignored max_tokens, or a stream that did
    not end): judged, stored and shown by their beginning only."""
    cut = [r for r in results if r.get("truncated")]
    if not cut:
        return []
    return [
        f"{len(cut)} of {len(results)} responses were cut (longer than {limit:,} characters, "
        f"or still streaming at the call's time bound; e.g. {cut[0]['id']}): judged, stored "
        "and shown by their beginning, marked truncated in run.db"
    ]


def outcome_key(r: dict[str, Any]) -> str:
    """A prompt under a strategy: the prompt alone for the control (as earlier versions kept
    it), else the strategy and the prompt."""
    strategy = r.get("strategy", IDENTITY)
    return r["prompt"] if strategy == IDENTITY else f"[{strategy}] {r['prompt']}"


def strategy_stats(judged: list[dict[str, Any]], primary: str) -> dict[str, Any]:
    """PAIR's figures (success by round, queries per success) and queries per strategy."""
    chains = [r for r in judged if "chain" in r]
    out: dict[str, Any] = {}
    if chains:
        wins = [r for r in chains if r["verdicts"][primary]["violates"]]
        by_round: dict[str, int] = {}
        for r in wins:
            by_round[str(r["rounds"])] = by_round.get(str(r["rounds"]), 0) + 1
        out["pair"] = {
            "chains": len(chains),
            "successes": len(wins),
            "success_by_round": dict(sorted(by_round.items())),
            "queries": sum(r["queries"] for r in chains),
            # PAIR's headline figure: target queries spent per jailbreak found
            "queries_per_success": sum(r["queries"] for r in chains) / len(wins) if wins else None,
        }
    return out


def write_regression_dataset(findings: Findings, path: Path) -> int:
    """The failing prompts, in dataset format, to attack again after the application is
    fixed; each keeps its strategy, so a re-run replays the same transformation."""
    rows = []
    for r in findings.failures:
        row = {"id": r["id"], "prompt": r["prompt"], "cell": r["cell"], "annotations": {}}
        if r.get("strategy", IDENTITY) != IDENTITY:
            row["strategy"] = r["strategy"]
            row["cell"] = {k: v for k, v in r["cell"].items() if k != "strategy"}
        rows.append(row)
    return write_jsonl(rows, path)


def read_baseline(previous_dir: Path, judge: str) -> dict[str, Any]:
    """An earlier attack's summary, refused (before any call) when it was judged by another
    judge: the comparison would count the judges' differences as fixes."""
    prev_path = previous_dir / "attack.json"
    if not prev_path.exists():
        raise UsageError(
            f"{previous_dir} holds no attack.json; give the --out of an earlier attack"
        )
    prev: dict[str, Any] = json.loads(prev_path.read_text())
    if prev.get("primary_judge") != judge:
        raise UsageError(
            f"{previous_dir} was judged by {prev.get('primary_judge')}, this attack by {judge}: "
            "the comparison would report the judges' differences as fixes. Attack again with "
            f"the baseline's judge (--judge {_judge_option(prev.get('primary_judge'))}), or "
            "without --baseline"
        )
    return prev


def _judge_option(primary: str | None) -> str:
    return (primary or "refusal").removeprefix("llm:")


def compare_runs(current: Findings, previous_dir: Path) -> Comparison:
    """What changed since an earlier attack: the ids of the prompts fixed, still failing and
    newly failing (matched by prompt text)."""
    prev = read_baseline(previous_dir, current.primary_judge)
    was = {text_hash(p): bool(v) for p, v in prev["outcomes"].items()}
    now = {text_hash(p): bool(v) for p, v in current.outcomes.items()}
    ids = {text_hash(p): i for p, i in current.ids.items()}
    both = sorted(was.keys() & now.keys(), key=lambda k: ids[k])
    return Comparison(
        previous=str(previous_dir),
        previous_rate=prev["overall"]["rate"],
        judge=current.primary_judge,
        compared=len(both),
        fixed=[ids[k] for k in both if was[k] and not now[k]],
        still_failing=[ids[k] for k in both if was[k] and now[k]],
        newly_failing=[ids[k] for k in both if not was[k] and now[k]],
    )
