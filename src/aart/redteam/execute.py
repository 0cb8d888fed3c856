"""One attack job: a prompt sent under one strategy, the response (or the chain of them)
judged. Every model call goes through the model layer with a seed fixed by the job, so a job
repeated after a crash is answered from the cache: no paid call twice."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError, StructuredOutputError
from ..ids import attack_seed
from ..llm import GenerateConfig, Message, Model, ModelOutput
from .judges import Verdict, nothing_said, nothing_said_state, quote
from .strategies import Strategy
from .strategies.base import ATTACKER_SYSTEM
from .targets import ReplayAPI

__all__ = [
    "ATTACKER_SYSTEM",
    "PROMPT_SCHEMA",
    "Executor",
]

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

    #: the jobs one of whose target answers was cut (see aart.llm.types.answer_limit)
    truncated: set[str] = field(default_factory=set)

    async def run(self, job: str, rec: dict[str, Any], strategy: Strategy) -> dict[str, Any]:
        """The result record's fields for ``rec`` under ``strategy``; ``truncated`` when an
        answer of the target's was cut (too long, or too slow to end)."""
        out = await self._run(job, rec, strategy)
        if job in self.truncated:
            self.truncated.discard(job)
            out["truncated"] = True
        return out

    async def _run(self, job: str, rec: dict[str, Any], strategy: Strategy) -> dict[str, Any]:
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
        out = await self.call(job, [Message("user", sent)])
        response = out.text
        result: dict[str, Any] = {"response": response}
        if out.finish_reason == "length":
            result["finish_reason"] = "length"  # cut at --max-tokens: shown, and judged so
        if sent != prompt:
            result["sent"] = sent
        judged = response
        said = nothing_said_state(response, out.finish_reason) is None
        if back_translate and self.attacker is not None and said:
            # the judges read English: the reply is judged after translating it back
            judged = await self.ask(
                job,
                9,
                f"Translate the assistant's reply below from {back_translate} into English, "
                "faithfully.",
                response,
            )
            result["response_english"] = judged
        result["verdicts"] = await self.judge(prompt, judged, result.get("finish_reason"))
        return result

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
