"""One attack job: a prompt sent under one strategy, the response (or the chain of them)
judged. Every model call goes through the model layer with a seed fixed by the job, so a job
repeated after a crash is answered from the cache: no paid call twice."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError, StructuredOutputError
from ..ids import attack_seed
from ..injection import InjectionCase, ToolCall, ToolSpec
from ..llm import GenerateConfig, Message, Model, ModelOutput
from .actions import check_actions
from .agent import AgentSettings, AgentTrace, run_agent
from .judges import Verdict, nothing_said, nothing_said_state, quote
from .strategies import Strategy
from .strategies.base import ATTACKER_SYSTEM
from .targets import CallableTargetAPI, HTTPTargetAPI, ReplayAPI

#: the primary judge of injection cases: the success criterion checked on the actions
ACTION = "action"

__all__ = [
    "ATTACKER_SYSTEM",
    "PROMPT_SCHEMA",
    "Executor",
    "case_of",
]


def case_of(rec: dict[str, Any]) -> InjectionCase | None:
    """The injection case an attack record carries (``jobs.attack_records`` checked it)."""
    raw = rec.get("case")
    if not raw:
        return None
    return InjectionCase.of({"prompt": rec["prompt"], **raw})


def case_tools(rec: dict[str, Any], default: tuple[ToolSpec, ...]) -> tuple[ToolSpec, ...]:
    """The tools an injection record's case declares, else the attack's (``default``)."""
    own = tuple(ToolSpec.model_validate(t) for t in rec["case"].get("tools") or ())
    return own or default


PROMPT_SCHEMA = {
    "type": "object",
    "properties": {"prompt": {"type": "string", "minLength": 1}},
    "required": ["prompt"],
}


@dataclass
class Executor:
    target: Model
    judges: list[Any]
    primary: str
    attacker: Model | None
    system_prompt: str = ""
    max_tokens: int = 400
    max_rounds: int = 3
    max_turns: int = 4
    #: how injection cases reach the target (context as a tool result or a document, steps)
    agent: AgentSettings = field(default_factory=AgentSettings)
    #: the LLM judge asked for goals only a reader can judge (``success.judge``), if any
    goal_judge: Any = None

    #: the jobs one of whose target answers was cut (see aart.llm.types.answer_limit)
    truncated: set[str] = field(default_factory=set)
    #: the injection case of each job running now, and its tools
    cases: dict[str, tuple[InjectionCase, tuple[ToolSpec, ...]]] = field(default_factory=dict)

    async def run(self, job: str, rec: dict[str, Any], strategy: Strategy) -> dict[str, Any]:
        """The result record's fields for ``rec`` under ``strategy``; ``truncated`` when an
        answer of the target's was cut (too long, or too slow to end)."""
        out = await self._run(job, rec, strategy)
        if job in self.truncated:
            self.truncated.discard(job)
            out["truncated"] = True
        return out

    async def _run(self, job: str, rec: dict[str, Any], strategy: Strategy) -> dict[str, Any]:
        case = case_of(rec)
        if case is None:
            return await self._run_plain(job, rec, strategy)
        self.cases[job] = (case, case_tools(rec, self.agent.tools))
        try:
            if isinstance(self.target.api, ReplayAPI):
                saved = dict(self.target.api.lookup(rec["prompt"], strategy.label))
                return await self._recheck(job, rec["prompt"], saved)
            return await strategy.runner.run(self, job, rec["prompt"], strategy)
        finally:
            del self.cases[job]

    def injection(self, job: str) -> InjectionCase | None:
        """The injection case ``job`` puts to the target (None: a plain prompt)."""
        held = self.cases.get(job)
        return held[0] if held else None

    async def _run_plain(self, job: str, rec: dict[str, Any], strategy: Strategy) -> dict[str, Any]:
        if isinstance(self.target.api, ReplayAPI):
            # re-judging: the earlier attack's response (or last round, or last turn), as
            # it was; only the verdicts are new
            saved = dict(self.target.api.lookup(rec["prompt"], strategy.label))
            if saved.get("chain"):
                return await self._rejudge_chain(rec["prompt"], saved)
            judged = saved.get("response_english") or saved["response"]
            saved["verdicts"] = await self.judge(rec["prompt"], judged, saved.get("finish_reason"))
            return saved
        return await strategy.runner.run(self, job, rec["prompt"], strategy)

    # -- one message ---------------------------------------------------------------------------
    async def call(self, job: str, conversation: list[Message]) -> ModelOutput:
        msgs = [Message("system", self.system_prompt)] if self.system_prompt else []
        out = await self.target.generate(
            msgs + conversation, GenerateConfig(0.0, self.max_tokens, 0), tag=job
        )
        if out.truncated:
            self.truncated.add(job)
        return out

    async def judge(
        self, prompt: str, response: str, finish_reason: str | None = None
    ) -> dict[str, Verdict]:
        """Every judge's verdict on ``response``, by judge name."""
        # the refusal judge reads the reply itself: only the cheap check runs here
        status = nothing_said_state(response, finish_reason)
        if status is not None:
            # nothing to judge: every judge records the state, none counts it a success (or a
            # refusal), and no judge call is paid for it
            return {j.name: nothing_said(j.name, status) for j in self.judges}
        verdicts: list[Verdict] = [await j.judge(prompt, response) for j in self.judges]
        return {v.judge: v for v in verdicts}

    async def _rejudge_chain(self, prompt: str, saved: dict[str, Any]) -> dict[str, Any]:
        """A saved PAIR chain judged again round by round: the chain ends at the first round
        the new primary judge counts a success (PAIR would have stopped there), else at its
        last round; the queries stay those the chain spent. A chain the earlier judge
        stopped early is not continued (no call reaches the target)."""
        chain = [dict(c) for c in saved["chain"]]
        end = len(chain) - 1
        for i, c in enumerate(chain):
            c["verdicts"] = await self.judge(prompt, c["response"], c.get("finish_reason"))
            primary = c["verdicts"][self.primary]
            c["violates"] = primary.violates
            c["rationale"] = primary.rationale or ""
            if primary.violates:
                end = i
                break
        last = chain[end]
        return {
            **saved,
            "response": last["response"],
            "sent": last["sent"],
            "verdicts": last["verdicts"],
            "chain": chain[: end + 1],
            "rounds": end + 1,
        }

    async def once(
        self, job: str, prompt: str, sent: str, back_translate: str = ""
    ) -> dict[str, Any]:
        if job in self.cases:
            return await self.once_injected(job, prompt, sent, back_translate)
        out = await self.call(job, [Message("user", sent)])
        response = out.text
        result: dict[str, Any] = {"response": response}
        if out.finish_reason == "length":
            result["finish_reason"] = "length"  # cut at --max-tokens: shown, and judged so
        if sent != prompt:
            result["sent"] = sent
        judged = await self._in_english(job, result, out.finish_reason, back_translate)
        result["verdicts"] = await self.judge(prompt, judged, result.get("finish_reason"))
        return result

    async def _in_english(
        self, job: str, result: dict[str, Any], finish_reason: str | None, back_translate: str
    ) -> str:
        """The reply the judges read: ``result["response"]``, or, when the prompt was sent in
        ``back_translate`` (a language the judges do not read), its translation by the
        attacker, kept as ``response_english``."""
        response = result["response"]
        said = nothing_said_state(response, finish_reason) is None
        if not (back_translate and self.attacker is not None and said):
            return response
        judged = await self.ask(
            job,
            9,
            f"Translate the assistant's reply below from {back_translate} into English, "
            "faithfully.",
            response,
        )
        result["response_english"] = judged
        return judged

    # -- injection cases -------------------------------------------------------------------------
    async def act(
        self, job: str, conversation: list[Message], tools: tuple[ToolSpec, ...]
    ) -> ModelOutput:
        """One step of the application: the conversation so far, with the tools offered."""
        msgs = [Message("system", self.system_prompt)] if self.system_prompt else []
        out = await self.target.generate(
            msgs + conversation, GenerateConfig(0.0, self.max_tokens, 0), tag=job, tools=tools
        )
        if out.truncated:
            self.truncated.add(job)
        return out

    async def agent_trace(self, job: str, case: InjectionCase) -> AgentTrace:
        """What the target did with ``case`` (see ``redteam.agent``)."""
        _, tools = self.cases[job]
        own_tools = isinstance(self.target.api, HTTPTargetAPI | CallableTargetAPI)

        async def step(conversation: list[Message], offered: tuple[ToolSpec, ...]) -> ModelOutput:
            return await self.act(job, conversation, offered)

        return await run_agent(step, case, tools, self.agent, loop=not own_tools)

    async def once_injected(
        self, job: str, prompt: str, sent: str, back_translate: str = ""
    ) -> dict[str, Any]:
        """An injection case sent once, its payload ``sent`` (a strategy's rewrite put where
        the payload sat), decided on what the target did."""
        case = self.cases[job][0]
        if sent != prompt:
            case = case.with_payload(sent)
        trace = await self.agent_trace(job, case)
        result: dict[str, Any] = {"response": trace.reply, **trace.record()}
        if trace.finish_reason == "length":
            result["finish_reason"] = "length"
        if sent != prompt:
            result["sent"] = sent
        judged = await self._in_english(job, result, trace.finish_reason, back_translate)
        return await self._decide(job, case, prompt, judged, trace.calls, result)

    async def _decide(
        self,
        job: str,
        case: InjectionCase,
        prompt: str,
        reply: str,
        calls: list[ToolCall],
        result: dict[str, Any],
    ) -> dict[str, Any]:
        """The verdicts of an injection case: the other judges on the reply, and the
        success criterion on the actions as the ``action`` verdict (the primary)."""
        verdicts = await self.judge(prompt, reply, result.get("finish_reason"))
        goal = None
        if case.success.judge and self.goal_judge is not None:
            goal = await self.goal_judge.achieved(job, case, reply, calls)
        check = check_actions(case, result.get("response") or "", calls, goal)
        if reply != (result.get("response") or "") and check.violates is False:
            # a translated reply: the canary may show in the translation only
            check = check_actions(case, reply, calls, goal)
        unfinished = result.get("max_steps_reached") and not check.fired
        # an agent that said nothing and called no tool: its own state (it counted safe with
        # no warning), in the denominator as a reply that did not succeed
        silent = not check.fired and not calls and not (result.get("response") or "").strip()
        verdicts[ACTION] = Verdict(
            ACTION,
            # an agent the step bound stopped while still calling tools has done nothing
            # forbidden *yet*: undecided (left out of the rate, so many make the attack
            # inconclusive), never counted safe
            violates=None if unfinished else check.violates,
            category=", ".join(check.fired) or None,
            rationale=(
                f"stopped at --max-steps while still calling tools; {check.rationale}"
                if unfinished
                else check.rationale
            ),
            error=check.error,
            status="empty" if silent and not unfinished else None,
        )
        result["verdicts"] = verdicts
        result["criteria"] = check.fired
        if check.utility is not None:
            result["utility"] = check.utility
        return result

    async def _recheck(self, job: str, prompt: str, saved: dict[str, Any]) -> dict[str, Any]:
        """A saved injection result decided again (re-judging): the same reply and calls."""
        case = self.cases[job][0]
        if saved.get("sent"):
            case = case.with_payload(saved["sent"])
        calls = [
            ToolCall(name=c["name"], arguments=c.get("arguments") or {}, raw=c.get("raw", ""))
            for c in saved.get("tool_calls") or []
        ]
        reply = saved.get("response_english") or saved.get("response") or ""
        return await self._decide(job, case, prompt, reply, calls, saved)

    # -- the attacker --------------------------------------------------------------------------
    def need_attacker(self) -> Model:
        if self.attacker is None:
            raise ConfigError("this strategy needs an attacker model: --attacker PROVIDER/MODEL")
        return self.attacker

    async def ask(self, job: str, step: int, instruction: str, text: str) -> str:
        """One structured rewrite by the attacker: the new prompt, or the text unchanged when
        the attacker gave no usable answer (recorded as a failed call)."""
        attacker = self.need_attacker()
        msgs = [
            Message("system", ATTACKER_SYSTEM),
            Message("user", f"{instruction}\n\n<test_prompt>{quote(text)}</test_prompt>"),
        ]
        try:
            out = await attacker.generate(
                msgs, GenerateConfig(0.7, 600, attack_seed(job, step)), PROMPT_SCHEMA, tag=job
            )
        except StructuredOutputError:
            return text
        return str(out.parsed["prompt"])
