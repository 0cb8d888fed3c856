"""The attack's dry run: calls, tokens and cost per strategy, nothing called and nothing
written; each strategy kind says what one prompt costs under it (``StrategyKind.calls``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from .jobs import attack_records
from .spec import AttackSpec
from .strategies import parse_strategy

#: an expected reply, as a share of --max-tokens: refusals are short, and few answers reach
#: the cap (counting every reply at the cap overestimated an attack's tokens 3x)
REPLY_SHARE = 1 / 3
#: tokens of a judge's verdict (JSON with a short rationale) and of a classifier's label
VERDICT_TOKENS = 80
LABEL_TOKENS = 5


def estimate(
    records: list[dict[str, Any]],
    *,
    judges: int,
    max_tokens: int,
    max_rounds: int,
    max_turns: int,
    system_prompt: str = "",
    rubric_tokens: int = 350,
    classifier: bool = False,
    price: Callable[[str, int, int], float | None] | None = None,
    max_steps: int = 1,
) -> list[dict[str, Any]]:
    """Calls and tokens per strategy, nothing spent: target, attacker and judge calls
    (``judges``: the LLM judge and classifier in use; ``classifier``: one of them is a
    classifier). pair and crescendo stop at the first success, so theirs are upper bounds.
    Replies count at REPLY_SHARE of ``max_tokens``; ``rubric_tokens`` is the LLM judge's
    instructions. ``price(role, prompt_tokens, completion_tokens)`` ("target", "attacker",
    "judge", "classifier") gives each row a ``cost`` (None: unpriced). An injection case
    reads its task, document and tools, up to ``max_steps`` times (an upper bound)."""
    reply = max(1, round(max_tokens * REPLY_SHARE))
    llm_judges = judges - int(classifier)
    rows: dict[str, dict[str, Any]] = {}
    spent: dict[str, dict[str, list[int]]] = {}
    for r in records:
        s = parse_strategy(r["strategy"])
        prompt = len(r["prompt"]) // 4 + len(system_prompt) // 4 + 8
        calls = s.runner.calls(s, max_rounds, max_turns)
        case = r.get("case")
        if case:  # the task, the document and the tools, on every step of the agent
            read = len(case["user_task"]) + len(case["context"]) + len(str(case.get("tools", "")))
            prompt += read // 4
            calls = replace(
                calls,
                sends=calls.sends * max_steps,
                messages=calls.messages * max_steps,
                upper_bound=calls.upper_bound or max_steps > 1,
            )
        row = rows.setdefault(
            s.label,
            {"strategy": s.label, "prompts": 0, "target_calls": 0, "attacker_calls": 0,
             "judge_calls": 0, "tokens": 0, "upper_bound": calls.upper_bound},
        )  # fmt: skip
        row["prompts"] += 1
        row["target_calls"] += calls.sends
        row["attacker_calls"] += calls.asks
        row["judge_calls"] += calls.judged * judges
        by_role = spent.setdefault(s.label, {})

        def add(role: str, n: int, p: int, c: int, by_role: dict = by_role) -> None:
            t = by_role.setdefault(role, [0, 0])
            t[0] += n * p
            t[1] += n * c

        add("target", calls.messages, prompt, reply)
        add("attacker", calls.asks, prompt + 300, 300)
        add("judge", calls.judged * llm_judges, prompt + reply + rubric_tokens, VERDICT_TOKENS)
        add("classifier", calls.judged * int(classifier), prompt + reply + 20, LABEL_TOKENS)
    for label, row in rows.items():
        row["tokens"] = sum(p + c for p, c in spent[label].values())
        if price is not None:
            costs = [price(role, p, c) for role, (p, c) in spent[label].items() if p or c]
            row["cost"] = None if any(c is None for c in costs) else sum(costs)  # type: ignore[misc]
    return list(rows.values())


def dry_run(spec: AttackSpec) -> list[dict[str, Any]]:
    """Calls and tokens per strategy of the attack ``spec`` describes; nothing is called and
    nothing is written."""
    from ..llm import Usage
    from ..llm.factory import FREE_PROVIDERS
    from .judges import RUBRIC
    from .targets import is_chat_model

    judges = (spec.judge != "refusal") + bool(spec.classifier)
    rubric = RUBRIC.format(
        app=spec.app_name or "the application",
        policy=spec.policy.strip() or "Do not help with harmful activities.",
    )
    models = {
        "target": spec.target,
        "judge": spec.judge,
        "classifier": spec.classifier,
        "attacker": spec.attacker,
    }

    def price(role: str, prompt: int, completion: int) -> float | None:
        name = models.get(role) or ""
        if name.startswith(FREE_PROVIDERS) or (role == "target" and not is_chat_model(name)):
            return 0.0  # a free model, or the application itself (HTTP or Python)
        if name not in spec.prices:
            return None
        return spec.prices[name].cost(Usage(prompt, completion))

    return estimate(
        attack_records(Path(spec.dataset), spec),
        judges=judges,
        max_tokens=spec.max_tokens,
        max_rounds=spec.max_rounds,
        max_turns=spec.max_turns,
        system_prompt=spec.system_prompt,
        rubric_tokens=len(rubric) // 4 + 30,
        classifier=bool(spec.classifier),
        price=price,
        max_steps=spec.max_steps,
    )
