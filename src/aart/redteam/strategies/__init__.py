"""Attack strategies: how a test prompt is transformed before it reaches the target. The
strategy is one more axis of the findings ("base64 x financial crimes x south-eastern asia
fails at 40% [28, 53]"), and the unconverted prompt (``identity``) is always the control.
One interface (``base.StrategyKind``), one class per kind, one registry:

- ``convert``: deterministic converters (base64, rot13, leetspeak, homoglyphs, spacing,
  zero-width, case-mix, payload-split, json): no model call, reproducible;
- ``rewrite``: LLM converters (translate:LANG, paraphrase, roleplay, hypothetical,
  past-tense): the ``--attacker`` model rewrites the prompt, with a structured answer;
- ``pair``: iterative refinement from the target's reply and the judge's rationale;
- ``crescendo``: a multi-turn escalation toward the prompt's goal.
"""

from .base import IDENTITY, AttackContext, Calls, Strategy, StrategyKind
from .convert import CONVERTERS, Converter, convert, recover
from .crescendo import Crescendo
from .pair import Pair
from .registry import KINDS, kind_of, names, needs_attacker, parse_strategy, register
from .rewrite import LLM_CONVERTERS, LLM_PEERS

#: the strategies that are neither converters nor rewrites, with what peers call them
OTHER = {**Pair.peers, **Crescendo.peers}

__all__ = [
    "CONVERTERS", "IDENTITY", "KINDS", "LLM_CONVERTERS", "LLM_PEERS", "OTHER",
    "AttackContext", "Calls", "Converter", "Strategy", "StrategyKind", "convert", "kind_of",
    "names", "needs_attacker", "parse_strategy", "recover", "register",
]  # fmt: skip
