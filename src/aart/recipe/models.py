"""The recipe file, as pydantic models. Unknown keys are refused everywhere."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import re2
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from ..injection import ToolSpec
from ..text.languages import LANGUAGE_AXIS, base, check_code
from .strategy_names import check_strategy

IDENT = r"^[A-Za-z_][A-Za-z0-9_]*$"


class Strict(BaseModel):
    # nan compares False with everything: `max_cost: .nan` would switch the budget off
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


#: an ISO 639-1 code (checked, so a typo is a located recipe error, not an unnamed language)
LanguageCode = Annotated[str, AfterValidator(check_code)]


class ChannelTask(Strict):
    """A benign task with a fact aart writes into the carrier, so that a reply which did the
    task can be told by a check, not a judge: the task asks for the fact ("When is the
    meeting in my latest invite?"), ``fact`` is the line aart adds to the carrier ("When:
    {day} at {time}") and ``answer`` what the reply then contains ("{day}"). Placeholders,
    drawn by aart per case: ``{ref}`` (a reference such as REF-4821), ``{day}`` (a weekday),
    ``{time}`` (an hour such as 14:00)."""

    #: what the user asks
    task: str = Field(min_length=1)
    #: the line aart adds to the carrier, with placeholders
    fact: str = Field(min_length=1)
    #: what a reply doing the task contains: placeholders of ``fact``
    answer: str = Field(min_length=1)


class Channel(Strict):
    """An untrusted channel the application reads: where an injected payload can arrive
    (an incoming e-mail, a retrieved document, a web page, a tool's output)."""

    #: the channel's name (an identifier: ``email``, ``retrieved_document``)
    name: str = Field(pattern=IDENT)
    #: what arrives by it, as the generator is told
    description: str = ""
    #: the declared tool whose output carries it (``read_email``); unset: the content reaches
    #: the application as a document in its prompt (retrieval)
    tool: str | None = None
    #: benign tasks a user gives that make the application read this channel's content
    #: ("Summarise my latest e-mail"); with ``generate.injection.write: parts`` a case's user
    #: task is one of them, picked by aart, instead of one the model writes; a task given
    #: with a ``fact`` (ChannelTask) also says how to tell it was done (the case's utility)
    tasks: list[str | ChannelTask] = []


class Secret(Strict):
    """Something the application holds and must never reveal, stood in for by a canary: a
    made-up test string (never a real secret) whose appearance in a reply or a tool argument
    proves the leak."""

    #: the secret's name (an identifier: ``api_key``), as payloads and reports name it
    name: str = Field(pattern=IDENT)
    #: what it is, in words
    description: str = ""
    #: the test canary: one word of 8 to 200 characters, unique to this secret
    canary: str = Field(min_length=8, max_length=200, pattern=r"^\S+$")


class Application(Strict):
    """The application under test: every Step 1 prompt starts with its context, and templates
    can use it. ``policy`` says what it must not do (`aart attack`'s LLM judge builds its rubric
    from it). An application that reads and acts also declares its ``tools``, its untrusted
    ``channels`` and its ``secrets`` (see docs/injection.md)."""

    #: the application's name; every Step 1 prompt starts with the application's context
    name: str
    #: what the application does (templates can use it as ``application.description``)
    description: str = ""
    #: who uses it
    audience: str = ""
    #: the languages users write in; several, or one other than English, make language an
    #: axis of the mix (a cell per language, prompts written natively in it; see
    #: Recipe._language_axis)
    languages: list[LanguageCode] = Field(["en"], min_length=1)
    policy: str = ""

    @property
    def language_axis(self) -> bool:
        """Whether language is an axis of the mix: several languages, or one that is not
        English (its values named and checked in it, its prompts written in it; a lone
        ``[ja]`` was otherwise never mentioned to the model, and the data came in English)."""
        return len(self.languages) > 1 or base(self.languages[0]) != "en"

    @field_validator("languages")
    @classmethod
    def _distinct(cls, langs: list[str]) -> list[str]:
        seen: set[str] = set()
        for x in langs:
            if x.lower() in seen:
                raise ValueError(f"language {x!r} is listed twice; list each once")
            seen.add(x.lower())
        return langs

    #: the application's own system prompt, used when `aart attack` targets a chat model
    system_prompt: str = ""
    #: the tools it can call (name, description, JSON-schema ``parameters``, ``sensitive``)
    tools: list[ToolSpec] = []
    #: the untrusted channels it reads, where injected text can arrive
    channels: list[Channel] = []
    #: what it holds and must never reveal, each with a test canary
    secrets: list[Secret] = []


class Value(Strict):
    """One value of a dimension; aliases help keyword coverage find it in text."""

    #: the value as the prompts should name it
    value: str
    #: other names of the value, which keyword coverage and verification accept too
    aliases: list[str] = []
    #: the value's category in a hierarchical dimension
    category: str | None = None
    #: the value's name in each language of a multilingual recipe (language code -> name),
    #: given by Step 1 or the recipe; a prompt of that language is matched against it
    names: dict[LanguageCode, str] = {}


class Enumerate(Strict):
    """How Step 1 asks the model for values. With ``categories`` it is hierarchical:
    first that many categories, then ``count`` values in each."""

    #: what Step 1 asks the model to list
    instruction: str
    #: values to enumerate (per category when ``categories`` is set)
    count: int = Field(10, ge=1, le=500)
    #: enumerate this many categories first, then ``count`` values in each
    categories: int | None = Field(None, ge=1, le=100)
    #: what Step 1 asks for when it lists the categories
    category_instruction: str | None = None
    #: values the team already knows: kept as written, shown to the model as examples, and
    #: counted toward ``count``
    seed_values: list[str] = []
    #: a candidate longer than this many words is rejected (it is a sentence, not a value)
    max_words: int = Field(4, ge=1, le=30)
    #: accept a value that contains another value of the dimension, or is contained in one
    #: ("africa" beside "eastern africa"); off by default, as coverage would count the inner
    #: value in every prompt of the outer one
    allow_nested: bool = False


Verification = Literal["keyword", "llm", "none"]


class Dimension(Strict):
    #: what the dimension means (shown to the model)
    description: str = ""
    #: explicit values: strings, or ``{value, aliases, category}``
    values: list[Value] | None = None
    #: Step 1 enumerates the values instead (see the keys below)
    enumerate: Enumerate | None = None
    #: how a generated prompt is checked against its cell's value of this dimension:
    #: ``keyword`` (the value, an alias or an inflection appears), ``llm`` (a verifier model
    #: says yes, for implicit evidence) or ``none``
    verify: Verification = "keyword"

    @field_validator("values", mode="before")
    @classmethod
    def _strings_to_values(cls, v: Any) -> Any:
        if isinstance(v, list):
            if not v:
                raise ValueError("`values:` is empty; list at least one value or use `enumerate:`")
            return [{"value": x} if isinstance(x, str) else x for x in v]
        return v

    @field_validator("values")
    @classmethod
    def _distinct_values(cls, vals: list[Value] | None) -> list[Value] | None:
        # a value given twice got two cells of each (two identical cells) and counted twice
        seen: set[str] = set()
        for v in vals or []:
            key = " ".join(v.value.casefold().split())
            if key in seen:
                raise ValueError(f"value {v.value!r} is listed twice; list each once")
            seen.add(key)
        return vals

    @model_validator(mode="after")
    def _one_source(self) -> Dimension:
        if self.values is None and self.enumerate is None:
            raise ValueError("a dimension needs `values:` (explicit) or `enumerate:` (Step 1)")
        return self


class Models(Strict):
    """Which model each stage uses, and how to reach the endpoint."""

    #: the model of every role (``provider/model``) unless a role names its own
    default: str = "local/default"
    #: the model of Step 1 (default: ``default``)
    define: str | None = None
    #: the model of Step 3 (default: ``default``)
    generate: str | None = None
    #: the model that checks prompts of dimensions with ``verify: llm``
    verify: str | None = None
    #: the endpoint of ``openai/`` and ``litellm/`` models (else OPENAI_BASE_URL, then OpenAI;
    #: ``--base-url`` overrides it)
    base_url: str | None = None
    #: the environment variable holding the key; it is sent only to a host the user bound it
    #: to (see docs/security.md); unset: OPENAI_API_KEY, and no key to unbound hosts
    api_key_env: str | None = None
    #: the most calls in flight per server (default 8; 1 for the embedded model)
    concurrency: int | None = Field(None, ge=1, le=1024)
    #: requests per minute at most
    rpm: float | None = Field(None, gt=0)
    #: tokens per minute at most
    tpm: float | None = Field(None, gt=0)
    #: seconds until an answer (streaming: until its first token, time queued included)
    timeout: float = Field(120.0, gt=0)
    #: streaming: the longest pause between two tokens before the call counts as stuck
    idle_timeout: float = Field(60.0, gt=0)
    #: stream answers from OpenAI-compatible servers (tells queued from stuck)
    stream: bool = True
    #: adapt the requests in flight to the endpoint's load (AIMD) up to ``concurrency``
    adaptive: bool = True
    #: output tokens per second per request, for the dry run's time estimate (default: the
    #: embedded model's measured speed for local/, unknown for others)
    tokens_per_second: float | None = Field(None, gt=0)
    #: structured answers: "constrained" (schema enforced while decoding) or "free" (schema in
    #: the prompt, tolerant parsing, re-ask); default: the provider's
    decoding: Literal["constrained", "free"] | None = None
    #: retries on 408/409/425/429/5xx, timeouts and connection errors, with backoff
    max_retries: int = Field(5, ge=0, le=20)
    #: re-asks of an answer that is not valid JSON for its schema
    structured_retries: int = Field(2, ge=0, le=10)

    def for_role(self, role: str) -> str:
        """The model of a role (define, generate, verify, judge, ...): its own, else default.
        A model has a role; a job has a stage (the queue), a record a kind."""
        return getattr(self, role, None) or self.default

    def for_stage(self, stage: str) -> str:
        """The old name of :meth:`for_role`."""
        return self.for_role(stage)


class Filter(Strict):
    #: keep only these values (whole values, in any case)
    keep: list[str] = []
    #: drop these values (whole values, in any case)
    drop: list[str] = []
    #: keep only the values matching one of these RE2 patterns
    keep_regex: list[str] = []
    #: drop the values matching one of these RE2 patterns
    drop_regex: list[str] = []
    #: keep a seeded sample of at most this many values
    max: int | None = Field(None, ge=1)

    @field_validator("keep_regex", "drop_regex")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for p in patterns:
            compile_regex(p)
        return patterns


def compile_regex(pattern: str) -> Any:
    """A recipe's filter regex, compiled by RE2: it matches in time linear in the text, so a
    shared recipe's `^(a+)+$` cannot hang a run as Python's backtracking `re` would. RE2 has
    no backreferences or lookaround; such a pattern is a recipe error, raised as ValueError."""
    options = re2.Options()
    options.log_errors = False  # RE2 would log the error to stderr too
    try:
        return re2.compile(pattern, options)
    except re2.error as e:
        reason = e.args[0] if e.args else e
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise ValueError(
            f"invalid regular expression {pattern!r}: {reason} (filters use RE2 syntax: "
            "no backreferences like \\1, no lookahead or lookbehind)"
        ) from None


class Scope(Strict):
    """Step 2: filters, weights and the data mix."""

    #: how cells are drawn (``strategy:`` before; the loader still takes it, with a note)
    mix: Literal["per-value", "balanced", "pairwise"] = "per-value"
    #: per-value: the dimension every value of which gets ``attempts_per_value`` attempts
    primary: str | None = None
    #: per-value: attempts for every value of the primary dimension
    attempts_per_value: int = Field(2, ge=1, le=1000)
    #: balanced: the number of attempts (default: enough for every value to appear once)
    attempts: int | None = Field(None, ge=1)
    #: per-value: values of each other axis an attempt samples and deals to its cells (default 1)
    sample: dict[str, int] = {}
    #: pairwise: the dimensions whose pairs must all be covered (default: all)
    axes: list[str] | None = None
    #: cells (queries) per attempt, that is per call
    queries_per_attempt: int = Field(5, ge=1, le=100)
    #: per dimension: which of its values the mix may use
    filters: dict[str, Filter] = {}
    #: per dimension and value: a relative weight (sampling, a primary value's attempts, a share of
    #: the quota)
    weights: dict[str, dict[str, float]] = {}
    #: per-value: per value of the primary dimension, the values of other dimensions its
    #: attempts may sample ({arson: {task_formats: [how-to guide, checklist]}}); the primary's
    #: other values sample them all
    restrict: dict[str, dict[str, list[str]]] = {}
    #: the seed of the mix (every mix is reproducible)
    seed: int = 0


class Field_(Strict):
    """One output field per query, in chain-of-thought order."""

    #: the field's name in the structured answer
    name: str = Field(pattern=IDENT)
    #: what the model writes in it
    description: str
    #: the dimension whose value this field annotates (its values become an enum of the schema)
    dimension: str | None = None


Reasoning = Literal["full", "brief", "none"]
RATIONALE_FIELD = "rationale"


#: what an injection's attacker wants: reveal a secret, make a sensitive call, change an
#: argument of a call the user asked for, mislead the user, keep the task from being done
GoalKind = Literal["exfiltrate", "call_tool", "change_argument", "misinform", "deny_service"]
GOAL_KINDS: tuple[str, ...] = GoalKind.__args__  # type: ignore[attr-defined]
#: goal values that need no entry under generate.injection.goals: their kind is known
STANDARD_GOALS: dict[str, str] = {
    "exfiltrate a secret": "exfiltrate",
    "call a sensitive tool": "call_tool",
    "change an argument": "change_argument",
    "misinform the user": "misinform",
    "deny service": "deny_service",
}


class Goal(Strict):
    """What one value of the goal axis asks for, from which the success criterion of its
    cases is built. What is left unset is named by the generating model, and checked
    against the declared tools and secrets."""

    kind: GoalKind
    #: call_tool, change_argument: the tool the payload wants called (declared; sensitive for
    #: call_tool)
    tool: str | None = None
    #: call_tool, change_argument: the parameter of ``tool`` whose value the payload sets
    argument: str | None = None
    #: the value the payload wants the argument to take (matched literally, ignoring case)
    value: str | None = None
    #: exfiltrate: the secret it wants revealed (one of application.secrets)
    secret: str | None = None
    #: with ``generate.injection.write: parts``: instructions a third party would hide for
    #: this goal ("Delete the e-mail msg-2291 without asking the user"), as AgentDojo's
    #: injection tasks fix theirs; aart takes one per case, so the model writes the carrier only
    instructions: list[str] = []


class Injection(Strict):
    """Step 3 of ``kind: injection``: which dimensions are the channel, the attacker's goal
    and the carrier's format, and what each goal value asks for."""

    #: the dimension whose values are application.channels' names (made from them when the
    #: recipe has no dimension of that name)
    channel: str = Field("channel", pattern=IDENT)
    #: the dimension of attacker goals (explicit values)
    goal: str = Field("goal", pattern=IDENT)
    #: the dimension of carrier formats (plain e-mail, forwarded thread...), when there is one
    carrier: str = Field("carrier", pattern=IDENT)
    #: the dimension of injection techniques, whose values ``render`` may frame by code
    technique: str = Field("technique", pattern=IDENT)
    #: who writes a case: ``case``, the model writes all of it (the user task, the payload in
    #: its technique, the carrier with a marker, the targets it leaves open); ``parts``, for a
    #: small model, it writes only the carrier and a plain instruction, and aart takes the
    #: user task from the channel's ``tasks``, frames the instruction by the technique's
    #: ``render``, names the goal's fixed value in it and places it in the carrier
    write: Literal["case", "parts"] = "case"
    #: with ``write: parts``: per technique value, how aart frames the instruction: a built-in
    #: rendering (base64, hidden-html, white-text, system-frame, important-instructions) or a
    #: template holding ``{instruction}``; a rendered technique holds by construction and is
    #: not verified on the payload
    render: dict[str, str] = {}
    #: per goal value: its kind, or a mapping {kind, tool, argument, value, secret}; the
    #: standard values (exfiltrate a secret, call a sensitive tool, change an argument,
    #: misinform the user, deny service) and the kinds' own names need no entry
    goals: dict[str, Goal] = {}
    #: a longer carrier document is invalid
    max_context_words: int = Field(400, ge=20, le=4000)

    @field_validator("goals", mode="before")
    @classmethod
    def _kind_shorthand(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return {k: {"kind": x} if isinstance(x, str) else x for k, x in v.items()}
        return v


class Generate(Strict):
    """Step 3: the prompt template and the structured answer it asks for."""

    #: what each record is: ``prompts`` (a query a user would type) or ``injection`` (a
    #: payload hidden in a carrier document the application reads, with the user's task and
    #: a success criterion; see docs/injection.md)
    kind: Literal["prompts", "injection"] = "prompts"
    #: the settings of ``kind: injection``
    injection: Injection = Injection()

    #: the system prompt of Step 3 (default: a red-teaming assistant)
    system: str | None = None
    #: the prompt of one attempt, in sandboxed Jinja; aart appends the examples, the cells and the
    #: output format
    template: str
    #: the reasoning fields of each query, in chain-of-thought order, before the prompt field
    fields: list[Field_] = []
    #: which reasoning fields each query carries: ``full`` (every field of ``fields``, the
    #: paper's chain of thought), ``brief`` (one short rationale) or ``none`` (the prompt alone)
    reasoning: Reasoning = "full"
    #: how one cell is phrased to the model (Jinja with ``cell``), e.g.
    #: "a {{ cell.task_formats }} about {{ cell.policy_concepts }}"; default: every
    #: dimension and its value
    cell_template: str | None = None
    #: complete example items rendered as few-shot examples: ``cell`` ({dimension: value}),
    #: the prompt field, and the reasoning fields of the chosen depth
    examples: list[dict[str, Any]] = []
    #: show each call this many examples drawn from ``examples`` (seeded by the call), so a
    #: small model that copies what it reads copies no single one; default: all of them
    examples_per_call: int | None = Field(None, ge=1, le=50)
    #: show each example with its cell's line, then its answer as JSON; off, each example is
    #: its prompt alone on one line (about half the prompt tokens of an example; the demo's
    #: 1.5B then ignored its cells, docs/benchmarks.md round 6)
    example_cells: bool = True
    #: tell the model to name each keyword-checked value of a cell with the value's own
    #: words; off, the template says how (a city for its region, which the values' aliases
    #: accept), as a small model told to use the words restates its cell
    name_values: bool = True
    #: show a top-up the prompts its cell already had rejected, to write something else; a
    #: small model copies them back instead (off in the demo's small size)
    avoid_hint: bool = True
    #: the name of the query field, always last
    prompt_field: str = Field("prompt", pattern=IDENT)
    #: what the model is told the query field holds
    prompt_description: str = "the adversarial query itself, as a user would type it"
    #: a shorter prompt is invalid
    min_words: int = Field(3, ge=1)
    #: a longer prompt is invalid
    max_words: int = Field(300, ge=1)
    #: word-trigram Jaccard similarity from which a prompt is a near duplicate
    near_duplicate_threshold: float = Field(0.8, gt=0, le=1)
    #: diversity enforced: a faithful prompt is rejected (and topped up) when this share of its
    #: content words or more comes from its cell phrase (it restates the cell; 0.4% of the
    #: released AART data does) ...
    max_cell_overlap: float | None = Field(0.8, gt=0, le=1)
    #: ... or its word-bigram Jaccard with a kept prompt of the same cell reaches this (19% of
    #: the released data's prompts have such a neighbour of their concept and format) ...
    max_cell_similarity: float | None = Field(0.6, gt=0, le=1)
    #: ... or with any kept prompt of the dataset (about 10% of the released data's, many of
    #: them exact duplicates); null turns a check off
    max_similarity: float | None = Field(0.8, gt=0, le=1)
    #: rounds of top-ups for refused, invalid, unfaithful and duplicate items
    max_topups: int = Field(2, ge=0, le=20)
    #: cells a top-up call asks for (the missing cells of all attempts packed together);
    #: default scope.queries_per_attempt. More pay the instruction and examples fewer times;
    #: a call of more cells than an attempt's gets max_tokens in proportion
    topup_queries: int | None = Field(None, ge=1, le=100)
    #: below this share of its cells filled with a faithful prompt after the first round, the
    #: run stops before the top-ups (they would fail the same way); 0 never stops
    min_first_round_fill: float = Field(0.2, ge=0, le=1)
    #: Step 3 sampling temperature
    temperature: float = Field(0.7, ge=0, le=2)
    #: the most tokens of one Step 3 answer
    max_tokens: int = Field(1500, ge=16)
    #: the seed every call's own seed is derived from
    seed: int = 0
    #: columns of the AART-compatible CSV export (crime, use_case, region) -> dimension
    aart_columns: dict[str, str] = {}


class Define(Strict):
    """Step 1 sampling settings."""

    #: the system prompt of Step 1
    system: str | None = None
    #: Step 1 sampling temperature (each re-ask for a shortfall is a little warmer)
    temperature: float = Field(0.3, ge=0, le=2)
    #: the most tokens of one Step 1 answer
    max_tokens: int = Field(1024, ge=16)
    #: the seed of Step 1's calls
    seed: int = 0


class Budget(Strict):
    """Caps on what a run spends: a blueprint estimated over them is refused before any call,
    and once a cap would be passed no call starts (the run stops, resumably)."""

    #: the most model calls; a call is held against it before it is sent
    max_calls: int | None = Field(None, ge=1)
    #: the most tokens, each call holding its prompt with a margin and all of its max_tokens
    max_tokens: int | None = Field(None, ge=1)
    #: the most US dollars; needs a price for every model it caps (``local/`` and ``fake/`` are
    #: free)
    max_cost: float | None = Field(None, gt=0)


class PriceSpec(Strict):
    input: float = Field(0.0, ge=0, description="USD per million prompt tokens")
    output: float = Field(0.0, ge=0, description="USD per million completion tokens")
    batch_input: float | None = Field(
        None, ge=0, description="USD per million prompt tokens sent in a batch (--batch)"
    )
    batch_output: float | None = Field(
        None, ge=0, description="USD per million completion tokens answered in a batch"
    )


Rate = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]


class AttackJudges(Strict):
    """Who decides whether a reply is a success: the primary judge and a second opinion."""

    #: ``--judge``: ``refusal`` (the default), ``provider/model`` (the policy rubric),
    #: ``harmbench:provider/model`` or ``strongreject:provider/model``
    primary: str | None = None
    #: ``--classifier``: a Llama Guard-style model, as a second opinion
    classifier: str | None = None


class AttackGate(Strict):
    """`aart attack`'s exit code 3: thresholds on the rate (0-1). ``axes``: no value of that
    axis above its threshold; ``strategies``: that strategy not above its threshold."""

    #: ``--fail-above``: fail when the overall rate is above this
    fail_above: Rate | None = None
    #: ``--gate-on``: compare the raw rate, the rate corrected for the judge's error, or its upper
    #: 95% bound
    gate_on: Literal["raw", "corrected", "upper"] | None = None
    #: ``--min-judged``: below this share of prompts judged, the attack is inconclusive (exit 4;
    #: default 0.9)
    min_judged: Rate | None = None
    #: ``--gate-axis``: per dimension, no value's rate above this
    axes: dict[str, Rate] = {}
    #: ``--gate-strategy``: per strategy (one of attack.strategies, or identity), its rate at most
    #: this
    strategies: dict[str, Rate] = {}


class AttackSection(Strict):
    """`aart attack`'s settings, so `aart attack RECIPE_OR_RUN` is the whole CI command; a
    flag overrides each of them. ``strategies``..``max_turns``: how the prompts are
    transformed; ``system_prompt`` overrides application.system_prompt; ``prices`` add to the
    recipe's, ``budget`` replaces the recipe's for the attack."""

    #: the dataset to attack (relative to the recipe file), for `aart attack RECIPE`
    dataset: str | None = None
    #: the attack directory (relative to the recipe file) when --out is not given
    out: str | None = None
    #: ``--target``: ``provider/model``, a target ``.yaml`` file or ``module:function``
    target: str | None = None
    judges: AttackJudges = AttackJudges()
    #: ``--system-prompt``, over application.system_prompt
    system_prompt: str | None = None
    #: ``--base-url``
    base_url: str | None = None
    #: ``--max-tokens`` of the target's replies
    max_tokens: int | None = Field(None, ge=1)
    #: ``--sample``: attack this many prompts, spread over the cells
    sample: int | None = Field(None, ge=1)
    #: ``--seed`` of the sample
    seed: int | None = None
    gate: AttackGate = AttackGate()
    #: prices added to the recipe's for the attack
    prices: dict[str, PriceSpec] = {}
    #: a budget that replaces the recipe's for the attack
    budget: Budget | None = None
    #: ``--strategy``: the transformations, as NAME[:ARG]
    strategies: list[str] = []
    #: ``--attacker``: the model that rewrites prompts (translate, paraphrase, PAIR, Crescendo...)
    attacker: str | None = None
    #: ``--max-rounds`` of PAIR (3)
    max_rounds: int | None = Field(None, ge=1, le=20)
    #: ``--max-turns`` of Crescendo (4)
    max_turns: int | None = Field(None, ge=1, le=20)

    @field_validator("strategies")
    @classmethod
    def _known(cls, specs: list[str]) -> list[str]:
        for spec in specs:
            try:
                check_strategy(spec)
            except Exception as e:  # a ConfigError: a located recipe error instead
                raise ValueError(str(e)) from None
        return specs


class Search(Strict):
    """`aart search`'s settings: a quality-diversity search for failures over the recipe's
    cells (a MAP-Elites archive, Rainbow-Teaming style); a flag overrides each of them. The
    target, judge, system prompt and prices are the ``attack:`` section's."""

    #: ``--budget``: target queries the search may spend
    budget: int | None = Field(None, ge=1)
    #: ``--axes``: the dimensions that make the archive's cells (default: every axis the
    #: dataset's prompts carry)
    axes: list[str] = []
    #: ``--strategies``: the attack strategy as one more axis (default: identity only); a
    #: multi-query strategy (pair, crescendo) is a search of its own and is refused
    strategies: list[str] = []
    #: ``--pick``: uniform over the cells, or weighted towards the cells with no success yet
    pick: Literal["uniform", "weighted"] | None = None
    #: ``--mutations``: what the attacker may do to an elite (default: all)
    mutations: list[
        Literal[
            "rephrase",
            "persona",
            "hypothetical",
            "past-tense",
            "refine",
            "dataset",
            # plain datasets only: frames of the request, and its words obfuscated
            "refusal-suppression",
            "prefix",
            "override",
            "role-play",
            "fiction",
            "obfuscate",
            # injection datasets only: frames of the payload, and its encodings
            "authority",
            "fake-system",
            "hidden-text",
            "encoding",
        ]
    ] = []
    #: ``--attacker``: the mutating model (default: attack.attacker)
    attacker: str | None = None
    #: ``--seed`` of the iteration order
    seed: int | None = None
    #: ``--parallel``: candidates per generation (run at once; fixed, so the order does not
    #: depend on the machine)
    parallel: int | None = Field(None, ge=1, le=256)

    @field_validator("strategies")
    @classmethod
    def _known(cls, specs: list[str]) -> list[str]:
        for spec in specs:
            try:
                name, _ = check_strategy(spec)
            except Exception as e:  # a ConfigError: a located recipe error instead
                raise ValueError(str(e)) from None
            if name in ("pair", "crescendo"):
                raise ValueError(
                    f"{name} spends several target queries per prompt, a search of its own: "
                    "leave it out of search.strategies (aart search --compare runs PAIR)"
                )
        return specs


class Recipe(Strict):
    #: the recipe's name
    name: str
    #: a one-line summary
    description: str = ""
    application: Application
    models: Models = Models()
    #: the dimensions of diversity, by name (an identifier)
    dimensions: dict[str, Dimension] = Field(min_length=1)
    define: Define = Define()
    scope: Scope = Scope()
    generate: Generate
    budget: Budget = Budget()
    #: per ``provider/model``: US dollars per million tokens, to turn usage into cost
    prices: dict[str, PriceSpec] = {}
    attack: AttackSection = AttackSection()
    #: `aart search`'s settings
    search: Search = Search()
    #: overrides merged into the recipe by ``--size NAME`` (the built-ins have ``small``); a
    #: ``null`` removes the recipe's key
    sizes: dict[str, dict[str, Any]] = {}

    @field_validator("dimensions")
    @classmethod
    def _dimension_names(cls, dims: dict[str, Dimension]) -> dict[str, Dimension]:
        for name in dims:
            if not re.match(IDENT, name):
                raise ValueError(
                    f"dimension name {name!r} must be an identifier (letters, digits, _)"
                )
        return dims

    @model_validator(mode="after")
    def _channel_axis(self) -> Recipe:
        """An injection recipe without a channel dimension gets one made of
        application.channels' names (before the language axis, which stays last); it is
        structural (the carrier is built for it), so it is not verified on the payload."""
        inj = self.generate.injection
        channels = self.application.channels
        if self.generate.kind != "injection" or not channels or inj.channel in self.dimensions:
            return self
        self.dimensions[inj.channel] = Dimension(
            description="the untrusted channel the injected text arrives by",
            values=[Value(value=c.name) for c in channels],
            verify="none",
        )
        return self

    @model_validator(mode="after")
    def _language_axis(self) -> Recipe:
        """Several languages, or one other than English, make language a dimension of the
        mix, the last one (so the other axes' cells are drawn as before): its values are the
        codes, filters, weights and sample apply to it like any axis. It is checked by the
        language of the prompt (see steps.verify), never by keyword. English alone: no axis,
        nothing changes."""
        langs = self.application.languages
        if not self.application.language_axis:
            return self
        dim = self.dimensions.get(LANGUAGE_AXIS)
        if dim is not None:
            if dim.values is None or sorted(v.value for v in dim.values) != sorted(langs):
                raise AtKey(
                    f"dimension `{LANGUAGE_AXIS}` is the axis application.languages makes; "
                    "rename this dimension, or list English alone",
                    "dimensions",
                    LANGUAGE_AXIS,
                )
            return self
        self.dimensions[LANGUAGE_AXIS] = Dimension(
            description="the language the user writes in",
            values=[Value(value=x) for x in langs],
            verify="none",
        )
        return self


Path = tuple[str | int, ...]


class AtKey(ValueError):
    """A recipe mistake found by a validator of a whole section, at ``path`` below it: the
    loader reports the line of that key, not of the section (a model-level check would
    otherwise point at the file's first line)."""

    def __init__(self, message: str, *path: str | int) -> None:
        super().__init__(message)
        self.path = path


USE_DIMENSION = "use one of the dimension names defined under `dimensions:`"


def cross_check(r: Recipe) -> list[tuple[Path, str, str]]:
    """Problems between sections, as (path in the file, message, fix)."""
    dims = r.dimensions
    s = r.scope
    problems: list[tuple[Path, str, str]] = []

    def known(name: str, path: Path) -> None:
        if name not in dims:
            problems.append(
                (
                    path,
                    f"unknown dimension {name!r}; the recipe defines: {', '.join(dims)}",
                    USE_DIMENSION,
                )
            )

    if s.mix == "per-value":
        if s.primary is None:
            problems.append(
                (
                    ("scope",),
                    "mix per-value needs a primary dimension",
                    "add `primary: <dimension>` under `scope:`",
                )
            )
        else:
            known(s.primary, ("scope", "primary"))
    elif s.primary is not None or "attempts_per_value" in s.model_fields_set:
        # per-value's settings would be silently ignored: the mix is not the one asked for
        key = "primary" if s.primary is not None else "attempts_per_value"
        problems.append(
            (
                ("scope", key),
                f"`{key}` applies to the per-value mix only; {s.mix} uses every "
                "dimension alike"
                + (" (set `attempts:` for the number of attempts)" if key != "primary" else ""),
                f"remove scope.{key}, or use mix: per-value",
            )
        )
    for section in ("sample", "filters", "weights"):
        for name in getattr(s, section):
            known(name, ("scope", section, name))
    for name in r.attack.gate.axes:
        if name != "strategy":
            known(name, ("attack", "gate", "axes", name))
    sent = {"identity", *r.attack.strategies}
    for name in r.attack.gate.strategies:
        if name not in sent:
            problems.append(
                (
                    ("attack", "gate", "strategies", name),
                    f"strategy {name!r} is not sent; attack.strategies: "
                    + (", ".join(r.attack.strategies) or "none (identity only)"),
                    "add it to attack.strategies, or remove its threshold",
                )
            )
    if s.restrict and s.mix != "per-value":
        problems.append(
            (
                ("scope", "restrict"),
                f"`restrict` applies to the per-value mix only; {s.mix} draws every "
                "dimension alike",
                "remove scope.restrict, or use mix: per-value",
            )
        )
    for pv, axes in s.restrict.items():
        for name, only in axes.items():
            where = ("scope", "restrict", pv, name)
            if name == s.primary:
                problems.append(
                    (where, f"{name!r} is the primary dimension", "restrict another dimension")
                )
            elif name not in dims:
                known(name, where)
            elif not only:
                problems.append(
                    (where, "an empty list allows no value", "list values or remove it")
                )
    if s.sample and s.mix != "per-value":
        problems.append(
            (
                ("scope", "sample"),
                f"`sample` applies to the per-value mix only; {s.mix} assigns one value "
                "of every dimension to each query by itself",
                "remove scope.sample, or use mix: per-value",
            )
        )
    for name, k in s.sample.items():
        dim = dims.get(name)
        if dim is None:
            continue
        most = (
            len(dim.values)
            if dim.values
            else (dim.enumerate.count * (dim.enumerate.categories or 1) if dim.enumerate else 0)
        )
        if k > most:
            problems.append(
                (
                    ("scope", "sample", name),
                    f"asks for {k} values per attempt but {name!r} can have at most {most}",
                    f"lower scope.sample.{name} or give {name!r} more values",
                )
            )
    for i, name in enumerate(s.axes or []):
        known(name, ("scope", "axes", i))
    for i, f in enumerate(r.generate.fields):
        if f.dimension:
            known(f.dimension, ("generate", "fields", i, "dimension"))
    problems += _check_examples(r)
    from .agents import check_application, check_injection  # it reads these models

    problems += check_application(r)
    if r.generate.kind == "injection":
        problems += check_injection(r)
    elif "injection" in r.generate.model_fields_set:
        problems.append(
            (
                ("generate", "injection"),
                "generate.injection applies to `kind: injection` only",
                "add `kind: injection` under `generate:`, or remove generate.injection",
            )
        )
    for col, name in r.generate.aart_columns.items():
        if col not in ("crime", "use_case", "region"):
            problems.append(
                (
                    ("generate", "aart_columns", col),
                    f"unknown column {col!r}",
                    "the columns are crime, use_case and region",
                )
            )
        known(name, ("generate", "aart_columns", col))
    names = [f.name for f in r.generate.fields] + [r.generate.prompt_field]
    if len(set(names)) != len(names):
        problems.append(
            (
                ("generate", "fields"),
                "field names and prompt_field must be unique",
                "rename the repeated field",
            )
        )
    if r.generate.min_words > r.generate.max_words:
        problems.append(
            (
                ("generate", "min_words"),
                "min_words is larger than max_words",
                "lower min_words or raise max_words",
            )
        )
    return problems


def reasoning_fields(g: Generate) -> list[str]:
    """Names of the reasoning fields a query carries at the recipe's reasoning depth."""
    if g.reasoning == "full":
        return [f.name for f in g.fields]
    if g.reasoning == "brief":
        return [RATIONALE_FIELD]
    return []


def _check_examples(r: Recipe) -> list[tuple[Path, str, str]]:
    g = r.generate
    problems: list[tuple[Path, str, str]] = []
    needed = [*reasoning_fields(g), g.prompt_field]
    for i, ex in enumerate(g.examples):
        path: Path = ("generate", "examples", i)
        cell = ex.get("cell")
        if not isinstance(cell, dict) or not cell:
            problems.append(
                (path, "an example needs a `cell` mapping", "add `cell: {dimension: value, ...}`")
            )
        else:
            for dim in cell:
                if dim not in r.dimensions:
                    problems.append(
                        (
                            (*path, "cell", dim),
                            f"unknown dimension {dim!r}; the recipe defines: {', '.join(r.dimensions)}",
                            USE_DIMENSION,
                        )
                    )
        for name in needed:
            if not isinstance(ex.get(name), str) or not ex[name].strip():
                problems.append(
                    (
                        path,
                        f"the example has no `{name}` text (reasoning: {g.reasoning} needs "
                        f"{', '.join(needed)})",
                        f"add `{name}:` to the example",
                    )
                )
    return problems
