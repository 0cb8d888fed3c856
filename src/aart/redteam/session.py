"""`aart attack`: send every prompt of a dataset to the application under test, judge the
responses, and report attack-success rates by axis. :class:`AttackSession` owns one attack
from its :class:`~.spec.AttackSpec` to its outputs: open (everything checked before the
directory exists, then the resume check), the jobs (one per prompt and strategy in
OUT/run.db, responses cached the moment they arrive), the findings, their warnings, the
values never attacked, the baseline comparison, and the files written."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import (
    AartError,
    ConfigError,
    Deferred,
    EndpointDown,
    ProviderError,
    UsageError,
)
from ..jobs.runner import run_jobs
from ..llm import Budget, BudgetExhausted, ModelOptions
from ..llm.factory import ModelFactory
from ..llm.http_status import retry_later
from ..llm.transport.base import Execution
from ..llm.transport.batch import batch_of
from ..llm.types import answer_limit
from ..store.db import RunDB
from ..store.lock import OutputLock
from . import stats
from .actions import ActionJudge, GoalJudge
from .agent import AgentSettings, load_tools, offered_tools, parse_tools
from .execute import Executor, case_of, case_tools
from .findings import Corrected, Findings
from .gate import gate_report
from .jobs import STAGE, attack_records, job_id
from .judge_accuracy import (
    Accuracy,
    human_verdicts,
    judge_accuracy,
    judge_disputed,
    verdict_labels,
)
from .judges import (
    NOTHING_SAID,
    RUBRIC_JUDGES,
    GuardJudge,
    LLMJudge,
    RefusalJudge,
    judge_name,
    rubric_of,
)
from .records import AttackRecord
from .regression import compare_runs, read_baseline, write_regression_dataset
from .replay import attack_dataset, saved_responses
from .results import ResultLine, State, result_line, state_of, write_results
from .sampling import check_selection
from .spec import AttackSpec
from .strategies import IDENTITY, needs_attacker, parse_strategy
from .tally import (
    NON_REFUSAL,
    agent_figures,
    judge_scores,
    judge_warnings,
    state_warnings,
    strategy_stats,
    truncation_warnings,
)
from .targets import ReplayAPI, create_target, is_chat_model
from .untested import untested

#: the pipeline's progress bars: (label, total) -> tick
Progress = Callable[[str, int], Callable[[], None]]


class AttackSession:
    """One attack: :meth:`run` opens the directory, runs the jobs, reads the findings and
    writes the outputs. ``baseline``: an earlier attack's --out to compare with (refused
    before any call when it was judged another way); ``report``: what writes the reports
    (``aart.report.attack.write_attack_report``)."""

    #: the attack directory's run.db, from :meth:`open` to :meth:`close`
    db: RunDB
    #: the target's, judges' and attacker's models (one budget, one cache)
    models: ModelFactory

    def __init__(
        self,
        spec: AttackSpec,
        out: str | Path,
        *,
        baseline: str | Path | None = None,
        report: Callable[[Findings, Path], Any] | None = None,
    ) -> None:
        self.spec = self.config = spec
        #: writes report.html, report.md and attack.json (``report.attack``, a layer above:
        #: given by the caller)
        self.report = report
        self.dataset = Path(spec.dataset)
        #: per axis, the values of the prompts sent (set by :meth:`findings`)
        self.attacked: dict[str, set[str]] = {}
        self.out = Path(out)
        self.baseline = Path(baseline) if baseline is not None else None
        self.progress: Callable[[], None] | None = None
        self.records = attack_records(self.dataset, spec)

    # -- the whole attack ----------------------------------------------------------------------
    def run(self, progress: Progress | None = None) -> Findings:
        """Attack, judge the responses, write OUT/report.html, report.md, attack.json,
        results.jsonl and failures.jsonl; returns the findings. ``findings.inconclusive`` is
        true when fewer than ``min_judged`` of the prompts got a verdict (target errors and
        unjudged answers), or when an endpoint failed every call and the attack stopped
        (``findings.stopped`` says why): its rate then proves nothing. A spent budget writes
        the partial reports, then is raised."""
        self.open()
        spent: BudgetExhausted | None = None
        try:
            try:
                findings = asyncio.run(self._attack(start=progress))
            except EndpointDown as e:
                # The target or a judge fails every call: report what was done, inconclusive.
                findings = self.findings()
                findings.stopped = str(e)
            except BudgetExhausted as e:
                findings = self.findings()
                findings.stopped = str(e)
                spent = e
            results = self.results()  # every verdict, for results.jsonl/.csv/.parquet
        finally:
            self.close()
        self._conclude(findings)
        self._write(findings, results)
        if spent is not None:
            raise BudgetExhausted(f"{spent}; the partial reports are in {self.out}") from None
        return findings

    def open(self) -> None:
        """Everything the attack needs is checked before the directory exists (target,
        judges, attacker, prices): a usage error leaves nothing behind, so the corrected
        command starts afresh instead of meeting "other settings". Then the directory, its
        resume check, and the models that record their calls in it."""
        spec = self.spec
        if not self.records:
            raise UsageError(f"{spec.dataset} holds no prompts")
        _check_gate_axes(spec.gate_axes, self.records)
        # how the calls travel (direct, batch or Ray: one or the other), started in _build
        self.execution = Execution.of(spec.batch, spec.ray)
        self._build(None, spec.budget())
        if self.baseline is not None:  # refused before any call when judged another way
            # by the primary judge as built: an injection attack's is the action check, which
            # --judge does not name (its baseline was refused, "judged by action, this attack
            # by refusal", and "--judge action" then asked for an LLM named action)
            read_baseline(self.baseline, self.primary)
        self.out.mkdir(parents=True, exist_ok=True)
        self.db = RunDB(self.out / "run.db", lock="shared")  # other attack workers may join
        try:
            selection = check_selection(  # before _check_settings sets its meta
                self.db,
                self.out,
                spec.limit,
                spec.sample,
                spec.seed,
                len({r["index"] for r in self.records}),
            )
            self._check_settings()
            self.db.set_meta("attack_selection", selection)
            self.budget = spec.budget(self.db.call_totals())
            self._build(self.db, self.budget)
            # what `aart rejudge` needs to read the same prompts again (attack_dataset for
            # earlier versions)
            self.db.set_meta("attack_dataset", json.dumps(spec.dataset_meta(self.target_name)))
            kept = spec.model_copy(update={"dataset": str(self.dataset.resolve())})
            self.db.set_meta("attack_spec", kept.model_dump_json())
        except BaseException:
            self.db.close()  # and its lock, so the directory is free again
            del self.db
            raise

    def _judge_of(self, spec: str, options: ModelOptions) -> Any:
        """The primary judge a --judge spec names: a rubric judge (harmbench:MODEL,
        strongreject:MODEL) or the policy rubric (MODEL)."""
        kind, model = rubric_of(spec)
        judge: Any
        if kind is not None:
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
            execution=self.execution if db is not None else Execution(),
        )
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
        injected = any("case" in r for r in self.records)
        goal_judge = None
        #: injection cases whose goal only a reader can tell, with no LLM judge to read them
        self.needs_judge = 0
        if injected:
            # an injection's success is decided on what the target did, not on its words
            self.judges.append(ActionJudge())
            self.primary = ActionJudge.name
            readers = sum(
                1 for r in self.records if "case" in r and r["case"]["success"].get("judge")
            )
            if config.judge != "refusal" and readers:
                kind, _, model = config.judge.partition(":")
                spec = model if kind in RUBRIC_JUDGES and model else config.judge
                goal_judge = GoalJudge(self.models.model(spec, judge_options))
            elif config.judge == "refusal":
                self.needs_judge = readers
            if not config.replay and not getattr(self.target.api, "takes_tools", False):
                raise ConfigError(
                    f"{config.dataset} holds injection cases, and the target {config.target} "
                    "cannot be offered tools; use an OpenAI-compatible model, local/default, "
                    "an HTTP target or a Python target"
                )
        if config.classifier:
            self.judges.append(GuardJudge(self.models.model(config.classifier, judge_options)))
        used = {parse_strategy(r["strategy"]) for r in self.records}
        attacker = None
        if needs_attacker(list(used)) and not config.replay:
            if not config.attacker:
                names = ", ".join(sorted(s.label for s in used if s.runner.needs_attacker))
                raise ConfigError(
                    f"the strategies {names} need an attacker model: --attacker "
                    "PROVIDER/MODEL (or attack.attacker in the recipe)"
                )
            attacker = self.models.model(config.attacker, judge_options)
        if injected and any(s.name == "crescendo" for s in used):
            raise ConfigError(
                "crescendo does not apply to injection cases (the payload sits in a document, "
                "not in the user's turns); use converters or pair on them"
            )
        self.executor = Executor(
            target=self.target,
            judges=self.judges,
            primary=self.primary,
            attacker=attacker,
            system_prompt=config.system_prompt,
            max_tokens=config.max_tokens,
            max_rounds=config.max_rounds,
            max_turns=config.max_turns,
            agent=AgentSettings(config.context_as, config.max_steps, self._tools())
            if injected
            else AgentSettings(),
            goal_judge=goal_judge,
        )

    def _tools(self) -> tuple[Any, ...]:
        """The application's tools for lines that carry none: --tools FILE, else the
        recipe's ``application.tools``."""
        if self.config.tools:
            return load_tools(self.config.tools)
        if self.config.recipe:
            from ..store.rundir import recipe_at

            app = recipe_at(self.config.recipe).recipe.application
            declared = getattr(app, "tools", None) or []
            keys = ("name", "description", "parameters", "sensitive")
            plain = [t.model_dump() if hasattr(t, "model_dump") else dict(t) for t in declared]
            return parse_tools(
                [{k: t[k] for k in keys if k in t} for t in plain],
                f"{self.config.recipe}: application.tools",
            )
        return ()

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
        from ..evaluate.human import verdict_figures

        # a re-judged attack's include the earlier attack's labels (it said nothing of them)
        labels = verdict_labels(self.db, self.spec.replay)
        return verdict_figures(answered, labels) if labels else {}

    async def _work(self, job: tuple[str, dict[str, Any]]) -> None:
        jid, rec = job
        result: dict[str, Any] = {**rec, "target": self.target_name}
        try:
            # verdicts stay Verdict objects until the record is stored (below)
            result.update(await self.executor.run(jid, rec, parse_strategy(rec["strategy"])))
        except ProviderError as e:
            if retry_later(e):
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
        try:  # the record's type checks it and gives run.db's plain line (its fields, as given)
            stored = AttackRecord.read(result).dump()
        except ValidationError as e:  # this job fails with the reason, never the attack
            raise ProviderError(f"unusable result: {str(e)[:200]}") from None
        self.db.complete_job(jid, [(jid, STAGE, stored)])
        if self.progress:
            self.progress()

    async def _attack(
        self, progress: Callable[[], None] | None = None, start: Progress | None = None
    ) -> Findings:
        """Every job not done yet (the failed ones again), then the findings. ``start``
        opens a bar over the jobs left (a resumed attack's bar counts those, and says how
        many were done before); ``progress`` is a tick of the caller's own."""
        self.db.add_jobs(STAGE, ((job_id(r), r) for r in self.records))
        self.db.set_job_status((jid for jid, _, _ in self.db.failed_jobs(STAGE)), "pending")
        if start is not None:
            done = min(self.db.job_counts(STAGE).get("done", 0), len(self.records))
            before = f" ({done} of {len(self.records)} done before)" if done else ""
            # a rejudge calls no target: its bar says whose replies it judges again
            what = "rejudge of" if self.spec.replay else "attack on"
            progress = start(f"{what} {self.target_name}{before}", len(self.records) - done)
        self.progress = progress
        try:
            batch = batch_of(self.models.transport)
            if batch is not None and not batch.models:
                raise UsageError(
                    "--batch needs a target or judge that is an OpenAI-compatible model "
                    "(openai/...) on a server with /v1/files and /v1/batches"
                )
            await run_jobs(self.db, STAGE, self._work, self.target.concurrency, batch)
        finally:
            await self.models.aclose()
        return self.findings()

    def _stored(self) -> list[AttackRecord]:
        """The results of the prompts of the dataset as it is now (an edited dataset keeps
        what it can), validated, with the cell the dataset (and --axis) say now."""
        current = {job_id(r): r for r in self.records}
        out = []
        for raw in self.db.records(STAGE, set(current)):
            rec = AttackRecord.read(raw)
            rec.cell = current[job_id(raw)]["cell"]
            out.append(rec)
        return sorted(out, key=lambda r: r.index)

    def findings(self) -> Findings:
        p = self.primary
        results = self._stored()
        # per axis, the values of the prompts sent, judged or not (the values never attacked
        # are the others: a judge that rated nothing listed every value as never attacked)
        self.attacked = {}
        for r in results:
            for axis, value in r.cell.items():
                self.attacked.setdefault(axis, set()).add(str(value))
        answered = [r for r in results if r.answered]
        plain = [r.dump() for r in answered]  # for the review's figures, which read lines
        judged = [r for r in answered if r.verdict(p).violates is not None]
        unjudged = [r for r in answered if r.verdict(p).violates is None]
        outcomes = [(r.cell, bool(r.verdict(p).violates)) for r in judged]
        states: dict[str, int] = {}
        for line in plain:
            st = state_of(line, p)
            states[st] = states.get(st, 0) + 1
        # unjudged by the primary judge, but the refusal detector saw the reply comply
        unjudged_complied = sum(
            1
            for r in unjudged
            if r.verdict("refusal").refused is False
            and r.verdict("refusal").status not in NOTHING_SAID
        )
        human = human_verdicts(self.db, self.spec.replay)
        accuracies = {j.name: judge_accuracy(plain, human, j.name) for j in self.judges}
        accuracy, accuracy_by_value = accuracies[p]
        failures = [r for r in judged if r.verdict(p).violates]
        severity = [r.verdict(p).severity or 0 for r in failures]
        refused = sum(1 for r in answered if r.verdict("refusal").refused)
        agreement = stats.agreement(
            [{k: v.violates for k, v in (r.verdicts or {}).items()} for r in answered]
        )
        unjudged_by = {
            j.name: sum(1 for r in answered if r.verdict(j.name).violates is None)
            for j in self.judges
        }
        by_value = stats.per_value(outcomes)
        for axis, cells in by_value.items():
            stats.correct_cells(
                cells,
                lambda v, axis=axis: accuracy_by_value.get(f"{axis}={v}", accuracy),  # type: ignore[misc]
            )
        # the gate's worst case per value: a value whose prompts the judge declined to rate
        # (none judged, so no row of by_value) must not pass an axis or strategy rule
        worst_by_value = (
            stats.per_value(outcomes + [(r.cell, True) for r in unjudged]) if unjudged else {}
        )
        for axis, cells in worst_by_value.items():
            stats.correct_cells(
                cells,
                lambda v, axis=axis: accuracy_by_value.get(f"{axis}={v}", accuracy),  # type: ignore[misc]
            )
        by_pair = stats.per_pair(outcomes)
        for cells in by_pair.values():
            stats.correct_cells(cells, lambda v: accuracy)
        warnings = judge_warnings(p, failures, agreement, unjudged_by, answered)
        warnings += truncation_warnings(
            results, answer_limit(self.spec.max_tokens), self.spec.max_tokens
        )
        warnings[:0] = state_warnings(
            p, states, len(answered), unjudged_complied, self.spec.max_tokens
        )
        agent = agent_figures(answered, p) if p == ActionJudge.name else {}
        if agent.get("max_steps_reached"):
            warnings.insert(
                0,
                f"{agent['max_steps_reached']} of {len(answered)} agents were still calling "
                f"tools when --max-steps {self.spec.max_steps} stopped them: undecided, left "
                "out of the rate; raise --max-steps",
            )
        return Findings(
            agent=agent,
            dataset=str(self.dataset),
            target=self.target_name,
            primary_judge=p,
            judges=[j.name for j in self.judges],
            prompts=len(self.records),
            judged=len(judged),
            unjudged=len(unjudged),
            target_errors=sum(1 for r in results if r.target_error),
            failed_jobs=[
                {"job": jid, "id": _prompt_name(rec), "reason": reason}
                for jid, rec, reason in self.db.failed_jobs(STAGE)
            ],
            overall=stats.rate(len(failures), len(judged)),
            # of the answered replies, as the headline counts (a target error is no reply)
            refusal_rate=refused / len(answered) if answered else 0.0,
            by_value=by_value,
            by_pair=by_pair,
            agreement=agreement,
            severity={str(s): severity.count(s) for s in sorted(set(severity))},
            usage=self.db.call_totals(),
            failures=[r.dump() for r in failures],
            unjudged_records=[r.dump() for r in unjudged],
            outcomes={r.outcome_key(): bool(r.verdict(p).violates) for r in judged},
            ids={r.outcome_key(): r.id for r in judged},
            strategy_stats=strategy_stats(judged, p),
            calibration=self._calibration(plain),
            unjudged_by_judge=unjudged_by,
            warnings=warnings,
            measures="attack success" if p != "refusal" else NON_REFUSAL,
            states=states,
            worst_case=stats.rate(len(failures) + len(unjudged), len(answered)),
            corrected=corrected_overall(judged, [], p, accuracy, accuracy_by_value),
            corrected_worst_case=corrected_overall(
                judged, unjudged, p, accuracy, accuracy_by_value
            ),
            worst_case_by_value=worst_by_value,
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
        from ..evaluate.human import verdict_id

        current = {job_id(r): r for r in self.records}
        done = {job_id(r): r for r in self.db.records(STAGE, set(current))}
        failed = {jid: reason for jid, _, reason in self.db.failed_jobs(STAGE)}
        human = human_verdicts(self.db, self.spec.replay)
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
        if getattr(self, "models", None) is not None:
            self.models.close()  # what the execution started (Ray's workers)
        if getattr(self, "db", None) is not None:
            self.db.close()

    #: what the rate counts when the refusal detector is the only judge
    # -- after the jobs ------------------------------------------------------------------------
    def _conclude(self, findings: Findings) -> None:
        """What the findings say besides the figures: the settings and their sources, the
        gate, the values never attacked, the warnings, the baseline comparison."""
        spec = self.spec
        findings.min_judged = spec.min_judged
        findings.settings = spec.report()
        findings.gate = gate_report(findings, spec.gate())
        findings.untested, findings.filtered_out = untested(
            self.attacked, self.dataset, spec.recipe
        )
        unoffered = _unoffered_forbidden_tools(self.records, self._tools())
        if unoffered:
            names = ", ".join(f"{t} ({n})" for t, n in sorted(unoffered.items()))
            findings.warnings.append(
                f"the forbidden call of {sum(unoffered.values())} cases names a tool the target "
                f"was not offered: {names}; they cannot succeed by that criterion (give the "
                "tools with --tools, the recipe's application.tools or the case's tools)"
            )
        if is_chat_model(spec.target) and not spec.system_prompt and spec.replay is None:
            findings.warnings.insert(
                # unjudged replies that complied say first that the rate leaves prompts out
                1 if findings.unjudged_complied else 0,
                f"no system prompt was sent to {spec.target}: it answered as itself, not as "
                "the application; give --system-prompt, or a recipe with "
                "application.system_prompt",
            )
        findings.needs_judge = self.needs_judge
        if findings.needs_judge:
            findings.warnings.insert(
                0,
                f"{findings.needs_judge} injection cases have a goal only a reader can tell "
                "(success judge: true, such as misinformation); with no --judge they stay "
                "unjudged: add --judge MODEL (an LLM judge) to judge them",
            )
        disputed = judge_disputed(findings.calibration, findings.primary_judge)
        if disputed:
            findings.warnings.insert(0, disputed)
        if self.baseline is not None:
            findings.comparison = compare_runs(findings, self.baseline)

    def _write(self, findings: Findings, results: list[ResultLine]) -> None:
        with OutputLock(self.out):  # cooperating workers write the reports one at a time
            write_regression_dataset(findings, self.out / "failures.jsonl")
            write_results(results, self.out)
            if self.report is not None:
                self.report(findings, self.out)


def _prompt_name(rec: dict[str, Any]) -> str:
    """A job as the user knows it: the prompt's dataset id, and its strategy but the control's."""
    strategy = rec.get("strategy") or IDENTITY
    return str(rec.get("id", "")) + ("" if strategy == IDENTITY else f" ({strategy})")


def _check_gate_axes(gate_axes: dict[str, float], records: list[dict[str, Any]]) -> None:
    """A gate rule on an axis no prompt has could never pass: refused before any call (it
    was found after every prompt had been sent, and exited 3 as if the target had failed)."""
    import difflib

    axes = sorted({str(a) for r in records for a in r["cell"]})
    for axis in gate_axes:
        if axis not in axes:
            near = difflib.get_close_matches(axis, axes, n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise UsageError(
                f"gate axis {axis!r}: no prompt of the dataset has it; {hint}its axes are "
                f"{', '.join(axes) or 'none'} (fix --gate-axis or attack.gate.axes)"
            )


def corrected_overall(
    judged: list[AttackRecord],
    unjudged: list[AttackRecord],
    primary: str,
    accuracy: Accuracy,
    by_value: dict[str, Accuracy],
) -> Corrected:
    """The headline's corrected rate (``unjudged`` counted as successes: the worst case). A
    judge with figures of its own per language (the refusal detector's) corrects each
    language's prompts with its figure, so the headline agrees with the per-language rows;
    else one figure corrects the totals."""
    strata: dict[str, list[int]] = {}
    counted = [(r, bool(r.verdict(primary).violates)) for r in judged]
    for r, success in counted + [(r, True) for r in unjudged]:
        lang = r.cell.get("language")
        key = f"language={lang}" if lang is not None and f"language={lang}" in by_value else ""
        s = strata.setdefault(key, [0, 0])
        s[0] += success
        s[1] += 1
    return stats.stratified_rate(
        [(k, n, by_value.get(key, accuracy)) for key, (k, n) in sorted(strata.items())],
        default=accuracy,
    )


def _unoffered_forbidden_tools(
    records: list[dict[str, Any]], default_tools: tuple[Any, ...]
) -> dict[str, int]:
    """Per tool, the injection cases whose ``success.forbidden_call`` names a tool the target
    is not offered (the case's tools, else the attack's, and the channel's): such a case
    was judged safe however the target acted."""
    out: dict[str, int] = {}
    for rec in records:
        case = case_of(rec)
        if case is None or case.success.forbidden_call is None:
            continue
        names = {t.name.casefold() for t in offered_tools(case, case_tools(rec, default_tools))}
        tool = case.success.forbidden_call.tool
        if tool.casefold() not in names:
            out[tool] = out.get(tool, 0) + 1
    return out
