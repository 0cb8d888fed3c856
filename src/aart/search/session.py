"""`aart search`: a quality-diversity search for failures over the recipe's cells (a MAP-Elites
archive, as in Rainbow Teaming, Samvelyan et al. 2024). :class:`SearchSession` owns one search
from its :class:`~.spec.SearchSpec` to its outputs.

It runs in generations of ``parallel`` candidates. Each generation's cells, parents and
mutations are drawn from the archive as the last generation left it, with a random generator
seeded by (``seed``, generation); each candidate is a job of OUT/run.db whose model calls are
seeded by its (iteration, cell), so a search killed part-way and started again draws the same
candidates, finds the finished ones in run.db and the answered calls in the cache: it pays no
call twice and ends with the same archive. The attack's machinery does the rest: the target,
judges and attacker of an :class:`~aart.redteam.session.AttackSession`, its
:class:`~aart.redteam.execute.Executor` for the attacker's rewrites, the strategy and the
judging, generation's :class:`~aart.steps.verify.CellVerifier` for the cell check."""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.load import load_dataset, read_rows
from ..errors import EndpointDown, ProviderError, UsageError
from ..injection import InjectionCase, ToolSpec
from ..jobs.runner import run_pool
from ..llm import BudgetExhausted, ModelOptions
from ..llm.http_status import retry_later
from ..llm.transport.base import Execution
from ..recipe import Recipe
from ..redteam.jobs import injection_fields, refuse_unsendable_prompt
from ..redteam.judges import Verdict
from ..redteam.session import AttackSession
from ..redteam.strategies import parse_strategy
from ..redteam.tally import NON_REFUSAL
from ..steps.verify import CellVerifier
from ..store.db import RunDB
from .archive import MAX_CELLS, STRATEGY_AXIS, Archive, Elite, cell_key, grid
from .mutate import (
    FEEDBACK,
    INJECTION_MUTATIONS,
    PLAIN_MUTATIONS,
    Injected,
    copies,
    fallbacks,
    instruction,
    stack,
    step,
    variant,
)
from .prefer import judge_model, prefers
from .spec import SearchSpec

STAGE = "search"
#: the attacker's step of a mutation in attack_seed (the rewrite strategies use 0, PAIR 1..)
MUTATE_STEP = 50
#: at most this many iterations per target query of the budget: a search whose candidates
#: are all refused (off-cell, duplicates) stops instead of asking the attacker for ever
ITERATIONS_PER_QUERY = 4
#: the share of mutations made from a neighbour's elite (a cell one axis away)
NEIGHBOUR_SHARE = 0.3
#: the share of iterations that take another prompt of the cell from the dataset, while the
#: cell has untried ones and "dataset" is among the mutations
DATASET_SHARE = 0.25
#: the share of mutations that refine the parent from its reply and verdict (``refine``,
#: when it is among the mutations): the others are drawn uniformly from the rest
REFINE_SHARE = 0.5


@dataclass
class Plan:
    """One candidate to make: its iteration, cell, parent and mutation."""

    iteration: int
    cell: int
    mutation: str
    #: the parent elite's id and cell, or the dataset prompt taken
    parent: Elite | None = None
    row: int | None = None

    @property
    def job(self) -> str:
        return f"i{self.iteration:06d}-c{self.cell:04d}"


@dataclass
class SearchResult:
    """What a search found (search.json's content, and the archive)."""

    spec: SearchSpec
    archive: Archive
    target: str
    primary: str
    measures: str
    queries: int
    iterations: int
    #: (target queries, cells with a success), after each candidate
    curve: list[tuple[int, int]] = field(default_factory=list)
    rejected: dict[str, int] = field(default_factory=dict)
    stopped: str | None = None
    warnings: list[str] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    #: the static baselines (--compare): name -> their figures
    baselines: dict[str, dict[str, Any]] = field(default_factory=dict)
    dataset_prompts: int = 0
    #: target queries the target answered with an error, or with an empty reply
    target_errors: int = 0
    empty_replies: int = 0
    #: cells whose best candidate has no verdict from the primary judge (unjudged, not safe)
    unjudged: int = 0

    @property
    def finished(self) -> bool:
        return self.stopped is None

    @property
    def empty(self) -> bool:
        """No target reply with anything in it: no candidate reached the target, or every
        one met an error or an empty reply (a search that judged nothing)."""
        return self.queries == self.target_errors + self.empty_replies


class SearchSession:
    """One search into ``out``: :meth:`run` opens the directory, searches, and returns the
    result (the caller writes the outputs, ``search.outputs.write``)."""

    db: RunDB

    def __init__(self, spec: SearchSpec, out: str | Path) -> None:
        self.spec = spec
        self.out = Path(out)
        self.dataset = Path(spec.dataset)

    # -- opening -------------------------------------------------------------------------------
    def _load(self) -> None:
        """The dataset's prompts and the archive's cells, checked before anything exists."""
        ds = load_dataset(
            self.dataset,
            text_column=self.spec.attack.text_column,
            axis_columns=self.spec.attack.axis_columns,
            annotation_columns=self.spec.attack.annotation_columns,
        )
        rows = read_rows(self.dataset)
        self.texts = ds.texts
        for i, text in enumerate(self.texts):
            refuse_unsendable_prompt(self.dataset, i, text, self.spec.attack.text_column)
        #: per row, its injection case's keys (``redteam.jobs.injection_fields``), or None
        self.cases = [
            injection_fields(rows[i] if i < len(rows) else {}, self.texts[i],
                             f"{self.dataset}: line {i + 1}")
            for i in range(len(ds))
        ]  # fmt: skip
        self.injected = any(c is not None for c in self.cases)
        # the injection mutations frame a payload: a plain dataset's search leaves them out
        # (so its draws are those it made before they existed), and an injection dataset's
        # the plain requests' frames
        own, other = ((INJECTION_MUTATIONS, PLAIN_MUTATIONS) if self.injected
                      else (PLAIN_MUTATIONS, INJECTION_MUTATIONS))  # fmt: skip
        self.mutations = [m for m in self.spec.mutations if m != "dataset" and m not in other]
        #: the deterministic mutations a candidate may fall back to
        self.frame_mutations = [m for m in self.mutations if m in own]
        self.row_ids = [
            str((rows[i] if i < len(rows) else {}).get("id") or "") or f"p{i:06d}"
            for i in range(len(ds))
        ]
        cells = [{a: v for a, v in ds.cell_of(i).items() if a != STRATEGY_AXIS}
                 for i in range(len(ds))]  # fmt: skip
        known = sorted({a for c in cells for a in c})
        axes = self.spec.axes or known
        missing = [a for a in axes if a not in known]
        if missing:
            raise UsageError(
                f"--axes {','.join(missing)}: {self.dataset} has no such axis; its axes are "
                f"{', '.join(known) or 'none'}"
            )
        self.axes = axes
        self.cells = grid(cells, axes, self.spec.strategies)
        if not self.cells:
            raise UsageError(
                f"{self.dataset} holds no prompt with a value of every axis of "
                f"{', '.join(axes)}; choose fewer axes (--axes)"
            )
        if len(self.cells) > MAX_CELLS:
            raise UsageError(
                f"{len(self.cells)} cells is more than a search can fill (at most "
                f"{MAX_CELLS}); choose fewer axes (--axes) or strategies"
            )
        index = {cell_key(c): i for i, c in enumerate(self.cells)}
        #: per cell, the dataset's prompts in it (file order)
        self.seeds: list[list[int]] = [[] for _ in self.cells]
        for i, c in enumerate(cells):
            if not all(a in c for a in axes) or not self.texts[i].strip():
                continue
            base = {a: c[a] for a in axes}
            for s in self.spec.strategies:
                self.seeds[index[cell_key({**base, STRATEGY_AXIS: s})]].append(i)
        self.values = ds.derived_values()

    def _verifier(self) -> CellVerifier:
        """Generation's verifier over the archive's axes: the recipe's (its verify: methods
        and the values' aliases) when there is one, else a keyword check of the values."""
        recipe: Recipe | None = None
        if self.spec.recipe is not None:
            from ..store.rundir import recipe_at

            recipe = recipe_at(self.spec.recipe).recipe
        values = dict(self.values)
        if recipe is not None:
            # only the archive's axes are checked (a dimension the recipe does not know, by
            # keyword), each by the method the recipe gives it
            dims = {a: d for a, d in recipe.dimensions.items() if a in self.axes}
            recipe = recipe.model_copy(update={"dimensions": dims})
            for name, dim in dims.items():
                if dim.values:  # their aliases help the keyword check
                    values[name] = list(dim.values)
        else:
            recipe = Recipe.model_validate({
                "name": "dataset",
                "application": {"name": "the application"},
                "dimensions": {a: {"values": [v.value for v in values.get(a, [])] or [a]}
                               for a in self.axes},
                "generate": {"template": "-"},
            })  # fmt: skip
        model = None
        if any(d.verify == "llm" for d in recipe.dimensions.values()):
            name = recipe.models.verify or recipe.models.default
            model = self.attack.models.model(
                name, ModelOptions(base_url=recipe.models.base_url or self.spec.attack.base_url)
            )
        self.duplicate = recipe.generate.near_duplicate_threshold
        return CellVerifier(recipe, values, model)

    def open(self) -> None:
        """Check everything (dataset, cells, target, judges, attacker) before the directory
        exists, then open it and refuse one that holds another search."""
        spec = self.spec
        self._load()
        # the attack's target, judges and attacker, built as `aart attack` builds them
        # (its records, one prompt's, only say which strategies need the attacker)
        self.attack = AttackSession(
            spec.attack.model_copy(update={"limit": 1, "sample": None}), self.out
        )
        self.attack.execution = Execution.of(None, spec.attack.ray)
        self.attack._build(None, spec.attack.budget())
        self.out.mkdir(parents=True, exist_ok=True)
        self.db = RunDB(self.out / "run.db")
        try:
            digest = hashlib.sha256(self.dataset.read_bytes()).hexdigest()
            settings = json.dumps(spec.settings(digest), sort_keys=True)
            known = self.db.get_meta("search_settings")
            if known is not None and known != settings:
                old, new = json.loads(known), json.loads(settings)
                differs = [k for k in sorted(new) if old.get(k) != new.get(k)]
                raise UsageError(
                    f"{self.out} holds a search with other settings ({', '.join(differs)}); "
                    "use another --out, or delete it to start over"
                )
            before = int(self.db.get_meta("search_budget") or 0)
            if spec.budget < before:
                # the same search with a smaller budget stopped earlier in the same order and
                # wrote its reports over the larger one's, fewer failures in them
                raise UsageError(
                    f"{self.out} holds this search at a budget of {before}; --budget "
                    f"{spec.budget} would rewrite its reports with fewer candidates. Give "
                    f"--budget {before} or more to go on, another --out, or delete it"
                )
            self.db.set_meta("search_settings", settings)
            self.db.set_meta("search_budget", str(spec.budget))
            self.budget = spec.attack.budget(self.db.call_totals())
            self.attack.db = self.db
            self.attack._build(self.db, self.budget)
            self.executor = self.attack.executor
            if self.executor.attacker is None:
                assert spec.attack.attacker is not None
                self.executor.attacker = self.attack.models.model(
                    spec.attack.attacker, ModelOptions(base_url=spec.attack.base_url)
                )
            self.verifier = self._verifier()
            primary = next(j for j in self.attack.judges if j.name == self.attack.primary)
            self.prefer_model = judge_model(primary)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        attack = getattr(self, "attack", None)
        if attack is not None and getattr(attack, "models", None) is not None:
            attack.models.close()
        if getattr(self, "db", None) is not None:
            self.db.close()
            del self.db

    # -- the search ----------------------------------------------------------------------------
    def run(self) -> SearchResult:
        """Search until the budget of target queries is spent; a spent call budget or an
        endpoint that fails every call stops it part-way (``result.stopped`` says why)."""
        self.open()
        try:
            self.result = SearchResult(
                spec=self.spec,
                archive=Archive(self.cells, self.duplicate),
                target=self.attack.target_name,
                primary=self.attack.primary,
                # issue 19's names: the refusal detector alone measures compliance
                measures="attack success" if self.attack.primary != "refusal" else NON_REFUSAL,
                queries=0,
                iterations=0,
                curve=[(0, 0)],
                dataset_prompts=len(self.texts),
            )
            try:
                asyncio.run(self._search())
            except (EndpointDown, BudgetExhausted, ProviderError) as e:
                # a spent budget or an endpoint down (one candidate's call that failed for
                # good costs that candidate only): the search stops where it is, and
                # re-running resumes it
                self.result.stopped = str(e)
            self._warn_unjudged()
            self.result.usage = self.db.call_totals()
        finally:
            self.close()
        return self.result

    def _warn_unjudged(self) -> None:
        """Cells whose best candidate has no verdict are unjudged, never safe: say so (a
        search of injection cases that need a reader reported "no success" in silence)."""
        r = self.result
        r.unjudged = sum(1 for e in r.archive.elites.values() if not e.has_verdict(r.primary))
        if not r.unjudged:
            return
        hint = (
            "injection cases whose goal only a reader can tell (judge: true) need --judge MODEL"
            if r.primary == "action"
            else "check the judge, then re-run the same command"
        )
        r.warnings.append(
            f"{r.unjudged} of {len(r.archive.cells)} cells have no verdict from "
            f"{r.primary}: they are unjudged, not safe ({hint})"
        )

    async def _search(self) -> None:
        r = self.result
        spec = self.spec
        done = {rec["job"]: rec for rec in self.db.records("result") if "job" in rec}
        tried: list[set[int]] = [set() for _ in self.cells]  # dataset prompts taken, per cell
        iteration = generation = 0
        # the cells' first dataset prompts, in an order drawn from the seed
        order = [c for c in range(len(self.cells)) if self.seeds[c]]
        random.Random(f"{spec.seed}:seeds").shuffle(order)
        try:
            while r.queries < spec.budget and iteration < ITERATIONS_PER_QUERY * spec.budget:
                n = min(spec.parallel, spec.budget - r.queries)
                rng = random.Random(f"{spec.seed}:{generation}")
                plans: list[Plan] = []
                while order and len(plans) < n:
                    c = order.pop(0)
                    tried[c].add(self.seeds[c][0])
                    plans.append(Plan(iteration + len(plans), c, "seed", row=self.seeds[c][0]))
                if not plans:
                    for c in r.archive.pick(rng, n, spec.pick == "weighted"):
                        plan = self._plan(rng, iteration + len(plans), c, tried)
                        if plan is not None:
                            plans.append(plan)
                if not plans:
                    r.warnings.append("no cell had a parent to mutate; the search stopped")
                    break
                results: dict[str, dict[str, Any]] = {}

                async def work(p: Plan, results: dict[str, dict[str, Any]] = results) -> None:
                    results[p.job] = done.get(p.job) or await self._candidate(p)

                await run_pool(plans, work, spec.parallel)
                for p in plans:  # in iteration order, whatever order they finished in
                    self._offer(p, results[p.job])
                iteration += len(plans)
                generation += 1
        finally:
            await self.attack.models.aclose()
        r.iterations = iteration
        if r.queries < spec.budget and r.stopped is None and not r.warnings:
            r.warnings.append(
                f"the search stopped after {iteration} iterations with {r.queries} of "
                f"{spec.budget} target queries spent: too many candidates were refused "
                f"({', '.join(f'{k} {v}' for k, v in sorted(r.rejected.items()))})"
            )

    def _plan(
        self, rng: random.Random, iteration: int, c: int, tried: list[set[int]]
    ) -> Plan | None:
        """The candidate of cell ``c``: another prompt of the dataset, or a mutation of its
        elite or of a neighbour's (always a neighbour's when it has none yet)."""
        archive = self.result.archive
        untried = [i for i in self.seeds[c] if i not in tried[c]]
        mutations = self.mutations
        if (
            untried
            and "dataset" in self.spec.mutations
            and (not mutations or rng.random() < DATASET_SHARE)
        ):
            tried[c].add(untried[0])
            return Plan(iteration, c, "dataset", row=untried[0])
        own = archive.elites.get(c)
        near = [j for j in archive.neighbours(c) if j in archive.elites]
        roll = rng.random()
        parent: Elite | None
        if own is not None and (not near or roll >= NEIGHBOUR_SHARE):
            parent = own
        elif near:
            # a neighbour's success first: it shows the way into this cell
            won = [j for j in near if archive.elites[j].success]
            parent = archive.elites[rng.choice(won or near)]
        elif archive.elites:
            parent = archive.elites[rng.choice(sorted(archive.elites))]
        else:
            parent = None  # nothing judged yet (every seed was refused)
        if parent is None or not mutations:
            return None  # nothing to make for this cell now
        # PAIR's step, which reads why the elite failed, is half of the mutations when it is
        # among them: drawn as one of eleven, it had about one try a cell at a budget of 24
        others = [m for m in mutations if m not in FEEDBACK]
        if len(others) < len(mutations) and (not others or rng.random() < REFINE_SHARE):
            return Plan(iteration, c, FEEDBACK[0], parent=parent)
        return Plan(iteration, c, rng.choice(others), parent=parent)

    async def _candidate(self, p: Plan) -> dict[str, Any]:
        """Make, check and (when it passes) send one candidate; its record, stored in
        run.db before it is returned."""
        cell = self.cells[p.cell]
        rec: dict[str, Any] = {"job": p.job, "iteration": p.iteration, "cell": cell,
                               "mutation": p.mutation}  # fmt: skip
        axes = {a: v for a, v in cell.items() if a != STRATEGY_AXIS}
        plain = None  # the request the cell check reads (the payload inside the frames)
        frames: list[list[Any]] = []
        checked = False  # the request is one verified already (the dataset's, the cell's own)
        if p.row is not None:
            prompt = self.texts[p.row]
            rec["parent"] = self.row_ids[p.row]
            checked = True  # a dataset prompt was verified when it was generated
        elif p.mutation in INJECTION_MUTATIONS:
            # a frame or an encoding of the payload: no attacker call
            assert p.parent is not None
            rec["parent"] = p.parent.id
            plain = p.parent.request
            form = variant(p.mutation, p.job)
            frames = [*p.parent.frames, [p.mutation, form]]
            prompt = step(p.mutation, form, p.parent.prompt)
        elif p.mutation in PLAIN_MUTATIONS:
            # frames around the cell's own request: no attacker call, no cell to leave
            assert p.parent is not None
            rec["parent"] = p.parent.id
            made = self._framed(p, p.mutation, axes)
            if made is None:
                return self._store(p, {**rec, "rejected": "unchanged"})
            plain, frames, prompt = made
            checked = True
        else:
            assert p.parent is not None
            rec["parent"] = p.parent.id
            text = instruction(
                p.mutation, cell, p.parent.cell, failed=not p.parent.success, job=p.job,
                feedback=self._feedback(p) if p.mutation in FEEDBACK else None,
                injected=self._injected(p) if p.mutation in FEEDBACK else None,
            )  # fmt: skip
            try:
                prompt = await self.executor.ask(p.job, MUTATE_STEP, text, p.parent.prompt)
            except EndpointDown:
                raise  # every call fails: the search stops, and a re-run resumes
            except ProviderError as e:
                # the attacker's refusal of this request (a content filter, a 4xx), or its
                # call failing for good (retries spent): this candidate is not made, the
                # search goes on
                return self._store(p, {**rec, "rejected": f"attacker failed: {str(e)[:200]}"})
            unusable = None
            if prompt.strip() == p.parent.prompt.strip():
                unusable = "unchanged"
            elif p.mutation in FEEDBACK and copies(prompt, p.parent.response):
                unusable = "copies the reply"
            else:
                unusable = await self._off_cell(prompt, axes, p.job)
            checked = True
            if unusable is not None:
                # a small attacker often sends the prompt back or leaves the cell: a
                # deterministic mutation of the cell's own request goes instead (its lineage
                # says so), so the candidate still reaches the target
                made = choice = None
                for choice in fallbacks(self.frame_mutations, p.job):
                    made = self._framed(p, choice, axes)
                    if made is not None:
                        break
                if made is None or choice is None:
                    return self._store(p, {**rec, "prompt": prompt, "rejected": unusable})
                rec["fallback"] = {"from": p.mutation, "reason": unusable,
                                   "rewrite": prompt[:500]}  # fmt: skip
                rec["mutation"] = choice
                plain, frames, prompt = made
        rec["prompt"] = prompt
        if plain is not None and plain != prompt:
            rec["base"] = plain
        if frames:
            rec["frames"] = frames
        if not checked and (off := await self._off_cell(plain or prompt, axes, p.job)):
            return self._store(p, {**rec, "rejected": off})
        if self.result.archive.duplicates(p.cell, plain or prompt):
            return self._store(p, {**rec, "rejected": "duplicate"})
        strategy = parse_strategy(cell[STRATEGY_AXIS])
        case = self._case(p, prompt)
        if case is not None:
            # the payload put back in its carrier, sent with the user's task and the tools
            # as `aart attack` sends a case (Executor.once_injected)
            injected, tools = case
            self.executor.cases[p.job] = (injected, tools)
            rec["row"] = p.row if p.row is not None else self._carrier(p)
            rec["case"] = {**injected.fields(),
                           **({"tools": [t.model_dump() for t in tools]} if tools else {})}  # fmt: skip
        # the judges read the cell's own request (a dataset prompt), as they read PAIR's goal
        # and the static dataset's prompt: a frame or a rewrite that drifted to another ask
        # (a small attacker's "why was it refused?") is judged on what the cell asks
        behaviour = self._behaviour(p) if case is None else prompt
        if behaviour != prompt:
            rec["behaviour"] = behaviour
        ctx = _JudgedOn(self.executor, behaviour) if behaviour != prompt else self.executor
        try:
            out = await strategy.runner.run(ctx, p.job, prompt, strategy)
            out["verdicts"] = {k: v.as_dict() for k, v in out["verdicts"].items()}
        except EndpointDown:
            raise  # every call fails: the search stops, and a re-run resumes
        except ProviderError as e:
            # the application's unusable answer to this prompt, or this candidate's call (the
            # target's or a judge's) failing for good: a query spent, no verdict, and the
            # search goes on (it stopped at that candidate, and a re-run stopped there again)
            why = "failed call (retries spent): " if retry_later(e) else ""
            out = {"response": None, "target_error": why + str(e)[:300]}
        else:
            out.update(await self._preference(p, behaviour, out))
        finally:
            self.executor.cases.pop(p.job, None)
        return self._store(p, {**rec, **out, "queried": True})

    async def _off_cell(self, text: str, axes: dict[str, str], job: str) -> str | None:
        """Why ``text`` does not embody the cell's ``axes`` (the same check as generation's),
        or None when it does."""
        checks = (await self.verifier.check([(text, axes)], tag=job))[0]
        off = sorted(d for d, ok in checks.items() if not ok)
        return f"off-cell ({', '.join(off)})" if off else None

    def _framed(
        self, p: Plan, mutation: str, axes: dict[str, str]
    ) -> tuple[str, list[list[Any]], str] | None:
        """A deterministic mutation for cell ``p.cell``: the parent's frames (its own, or a
        neighbour's that showed the way in) and one more, put around the cell's own request
        (its elite's, else its first dataset prompt). (request, frames, prompt), or None
        when the mutation changes nothing (an obfuscation of words the request lacks)."""
        own = self.result.archive.elites.get(p.cell)
        if own is not None:
            base = own.request
        elif self.seeds[p.cell]:
            base = self.texts[self.seeds[p.cell][0]]
        else:
            return None
        source = p.parent if p.parent is not None else own
        frames = [*(source.frames if source is not None else []),
                  [mutation, variant(mutation, p.job)]]  # fmt: skip
        prompt = stack(frames, base, list(axes.values()))
        inner = stack(frames[:-1], base, list(axes.values()))
        if prompt == inner:
            return None
        return base, frames, prompt

    def _feedback(self, p: Plan) -> tuple[str, str, str]:
        """What ``refine`` shows the attacker of the elite it refines: the target's reply to
        it, as it came back, the primary judge's reason, and the cell's request (what the
        judges read). The reply and the reason are in the elite's run.db record, so a
        resumed search asks the attacker the same thing (the same cached call) without
        querying anything again."""
        assert p.parent is not None
        verdict = p.parent.verdicts.get(self.attack.primary) or {}
        return p.parent.response, str(verdict.get("rationale") or ""), self._behaviour(p)

    def _injected(self, p: Plan) -> Injected | None:
        """What ``refine`` shows of an injection elite besides its reply (PAIR's injection
        step): the channel, task and aim of the case its candidate goes into, and the tools
        the agent called on the elite (None: a plain prompt)."""
        assert p.parent is not None
        case = self._base_case(self._carrier(p))
        if case is None:
            return None
        return Injected(case.injection.channel, case.user_task, case.success.goal,
                        tuple(p.parent.tool_calls))  # fmt: skip

    def _behaviour(self, p: Plan) -> str:
        """What the judges read as the request of a candidate of ``p``: its dataset prompt,
        else the request its cell's elite was judged on, else the cell's first dataset
        prompt."""
        if p.row is not None:
            return self.texts[p.row]
        own = self.result.archive.elites.get(p.cell)
        if own is not None:
            return own.behaviour or own.prompt
        return self.texts[self.seeds[p.cell][0]] if self.seeds[p.cell] else ""

    def _carrier(self, p: Plan) -> int:
        """The dataset row whose carrier a mutated payload goes into: its parent's when the
        parent is of the same cell, else the cell's first prompt's (the cell's own task,
        carrier and success criterion)."""
        parent = p.parent
        if parent is not None and parent.row is not None and parent.cell == self.cells[p.cell]:
            return parent.row
        return self.seeds[p.cell][0]

    def _case(self, p: Plan, payload: str) -> tuple[InjectionCase, tuple[ToolSpec, ...]] | None:
        """The injection case a candidate of ``p`` is sent as, with its tools (None: a plain
        prompt)."""
        row = p.row if p.row is not None else self._carrier(p)
        base = self._base_case(row)
        if base is None:
            return None
        raw = self.cases[row] or {}
        tools = tuple(ToolSpec.model_validate(t) for t in raw.get("tools") or ())
        return base.with_payload(payload), tools or self.executor.agent.tools

    def _base_case(self, row: int) -> InjectionCase | None:
        """Dataset row ``row``'s injection case as written (None: a plain prompt)."""
        raw = self.cases[row]
        return InjectionCase.of({"prompt": self.texts[row], **raw}) if raw is not None else None

    async def _preference(self, p: Plan, prompt: str, out: dict[str, Any]) -> dict[str, Any]:
        """When the candidate and its cell's elite (as the generation began) both succeed,
        the judge's model says which goes further (an LLM judge only)."""
        incumbent = self.result.archive.elites.get(p.cell)
        if self.prefer_model is None or incumbent is None or not incumbent.success:
            return {}
        score, _, success = score_of(out["verdicts"], self.attack.primary)
        if not success or score != incumbent.score:
            return {}
        reply = out.get("response_english") or out.get("response") or ""
        spec = self.spec.attack
        choice = await prefers(self.prefer_model, p.job, spec.app_name, spec.policy,
                               (prompt, reply), (incumbent.behaviour or incumbent.prompt,
                                                 incumbent.response))  # fmt: skip
        if choice is None:
            return {}
        return {"preferred": choice, "preferred_over": incumbent.id}

    def _store(self, p: Plan, rec: dict[str, Any]) -> dict[str, Any]:
        self.db.add_jobs(STAGE, [(p.job, {"iteration": p.iteration, "cell": p.cell})])
        self.db.complete_job(p.job, [(p.job, "result", rec)])
        return rec

    def _offer(self, p: Plan, rec: dict[str, Any]) -> None:
        """Count a finished candidate and offer it to the archive."""
        r = self.result
        if not rec.get("queried"):
            reason = str(rec.get("rejected", "rejected")).split(" (")[0].split(":")[0]
            r.rejected[reason] = r.rejected.get(reason, 0) + 1
            return
        r.queries += 1
        if rec.get("response") is None:
            r.target_errors += 1
        elif not str(rec["response"]).strip():
            r.empty_replies += 1
        score, preference, success = score_of(rec.get("verdicts") or {}, r.primary)
        elite = Elite(
            id=p.job,
            cell=self.cells[p.cell],
            prompt=rec["prompt"],
            sent=rec.get("sent") or rec["prompt"],
            response=rec.get("response") or "",
            iteration=p.iteration,
            queries=r.queries,
            parent=rec.get("parent"),
            mutation=rec.get("mutation") or p.mutation,
            score=score,
            preference=preference,
            success=success,
            verdicts=rec.get("verdicts") or {},
            preferred_over=rec.get("preferred_over"),
            preferred=rec.get("preferred"),
            row=rec.get("row"),
            case=rec.get("case"),
            base=rec.get("base"),
            frames=rec.get("frames") or [],
            fallback=rec.get("fallback"),
            behaviour=rec.get("behaviour"),
            tool_calls=[
                str(c.get("name")) for c in rec.get("tool_calls") or [] if isinstance(c, dict)
            ],  # fmt: skip
        )
        if rec.get("response") is None:
            elite.score = -1.0  # a target error: kept only while the cell has nothing else
        if not r.archive.offer(p.cell, elite):
            r.rejected["not better"] = r.rejected.get("not better", 0) + 1
        r.curve.append((r.queries, r.archive.successes()))


class _JudgedOn:
    """The executor, with its judges reading ``behaviour`` as the request: what the target
    is sent (the candidate, under its strategy) is unchanged."""

    def __init__(self, executor: Any, behaviour: str) -> None:
        self._executor = executor
        self._behaviour = behaviour

    def __getattr__(self, name: str) -> Any:
        return getattr(self._executor, name)

    async def once(self, job: str, prompt: str, sent: str, back_translate: str = "") -> Any:
        return await self._executor.once(job, self._behaviour, sent, back_translate)


#: the refusal detector's reply states, as a preference between equal scores
_STATE_PREFERENCE = {"complied": 1.0, "partial": 0.5}


def score_of(verdicts: dict[str, Any], primary: str) -> tuple[float, float, bool]:
    """(score, preference, success) of a candidate from the primary judge's verdict: its
    graded score where it gives one (StrongREJECT), else 1 for a success and 0 for none; the
    preference is its severity (LLM judges), else how plainly the reply complied. An
    unjudged reply scores 0 and is never a success."""
    raw = verdicts.get(primary)
    if raw is None:
        return 0.0, 0.0, False
    v = raw if isinstance(raw, Verdict) else Verdict(**raw)
    if v.violates is None:
        return 0.0, 0.0, False
    score = v.score if v.score is not None else (1.0 if v.violates else 0.0)
    refusal = verdicts.get("refusal")
    status = (
        refusal.get("status") if isinstance(refusal, dict) else getattr(refusal, "status", None)
    )
    state = _STATE_PREFERENCE.get(str(status), 0.0)
    preference = float(v.severity) + state / 10 if v.severity is not None else state
    return float(score), preference, bool(v.violates)
