"""The one model interface the steps use: concurrency, retries, rate limits, cache,
structured output and accounting around any provider."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import random
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from ..errors import (
    ConfigError,
    ContentRejected,
    EndpointDown,
    ProviderError,
    StructuredOutputError,
    TargetError,
    TransientError,
)
from ..injection import ToolCall, ToolSpec
from .adaptive import AdaptiveLimit, limit_for
from .deadline import within
from .http_status import is_endpoint_fault
from .limits import Budget, Price, RateLimiter, RetryPolicy
from .providers.base import ModelAPI, ModelOptions, create_api
from .storage import CallStore
from .structured import parse_json, schema_errors
from .transport.direct import DIRECT
from .types import (
    INTERRUPTED,
    Call,
    CallRecord,
    GenerateConfig,
    Message,
    ModelOutput,
    RawResponse,
    Usage,
    answer_limit,
    estimate_tokens,
)

if TYPE_CHECKING:
    from .transport.base import Transport

__all__ = ["ABANDONED", "CallRecord", "CallStore", "Model", "cache_key", "get_model"]


def cache_key(
    endpoint: str,
    messages: list[Message],
    config: GenerateConfig,
    schema: dict[str, Any] | None,
    tools: Sequence[ToolSpec] = (),
) -> str:
    """The call's key in the cache. A plain call's (no tools, no tool turns) is what it was
    before tools existed, so the caches of earlier runs stay valid; tools and tool turns
    add their own fields."""
    payload: dict[str, Any] = {
        "endpoint": endpoint,
        "messages": [_turn_key(m) for m in messages],
        "config": config.as_dict(),
        "schema": schema,
    }
    if tools:
        payload["tools"] = [t.model_dump() for t in tools]
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _turn_key(m: Message) -> list[Any]:
    key: list[Any] = [m.role, m.content]
    if m.tool_calls or m.tool_call_id or m.name:
        key.append(
            {
                "tool_calls": [c.model_dump() for c in m.tool_calls],
                "tool_call_id": m.tool_call_id,
                "name": m.name,
            }
        )
    return key


log = logging.getLogger("aart")

# requests being answered right now, by (store, cache key): a second caller waits for the first
_INFLIGHT: dict[tuple[int, str], asyncio.Future[None]] = {}

#: the cache key recorded for a call abandoned part-way: paid for, never cached
ABANDONED = "abandoned"

#: This many calls in a row that fail for good (retries spent, or a non-retryable answer),
#: with no success between them, make the endpoint suspect. It is down only when a request
#: it answered before (or a plain "Hello") fails too: the failures may be one category of prompts that breaks
#: the application (a dataset sorted by category sends them together), not the endpoint.
FAILURES_TO_STOP = 3


class Model:
    """A named model with its policies. ``await model.generate(...)`` is the whole API."""

    def __init__(
        self,
        name: str,
        api: ModelAPI,
        *,
        options: ModelOptions | None = None,
        store: CallStore | None = None,
        use_cache: bool = True,
        price: Price | None = None,
        budget: Budget | None = None,
        seed: int = 0,
        transport: Transport | None = None,
    ) -> None:
        self.name = name
        self.api = api
        self.options = options or api.options
        self.store = store
        self.use_cache = use_cache
        self.price = price or Price()
        #: False for a paid model without a price: its calls cost "unpriced" (NULL), not $0
        self.priced = True
        self.budget = budget
        self.retry = RetryPolicy(
            self.options.max_retries, self.options.backoff_base, self.options.backoff_max
        )
        self.limiter = RateLimiter(self.options.rpm, self.options.tpm)
        self.concurrency = self.options.concurrency or api.default_concurrency
        #: the endpoint's adaptive concurrency limit (set at the first call)
        self.concurrency_limit: AdaptiveLimit | None = None
        self._rng = random.Random(seed)
        self.usage = Usage()
        self.calls = 0
        self.cache_hits = 0
        self.failures = 0
        self._failed_in_a_row = 0
        #: the last request the endpoint answered: re-sent to tell "down" from "these
        #: prompts fail" (see FAILURES_TO_STOP)
        self._last_ok: tuple[list[Message], GenerateConfig, dict[str, Any] | None] | None = None
        self._probe_lock = asyncio.Lock()
        #: why the endpoint is considered down; once set, every call raises EndpointDown
        self.down: str | None = None
        #: how the calls travel (aart.llm.transport): direct, on Ray workers, in batches
        self.transport: Transport = transport or DIRECT

    @property
    def endpoint(self) -> str:
        """What names the endpoint in cache keys: the decoding mode changes answers, so it is
        part of it."""
        return self.api.endpoint + (
            f"|decoding={self.options.decoding}" if self.options.decoding else ""
        )

    async def generate(
        self,
        messages: list[Message],
        config: GenerateConfig | None = None,
        schema: dict[str, Any] | None = None,
        *,
        validate: bool = True,
        tag: str | None = None,
        tools: Sequence[ToolSpec] = (),
    ) -> ModelOutput:
        """Complete ``messages``. With ``schema`` the answer is parsed (tolerantly) into
        ``parsed``; with ``validate`` it must also satisfy the schema. Invalid answers are
        recorded and retried ``structured_retries`` times, then raise StructuredOutputError.
        With ``tools`` the model may call them (the OpenAI tools API): the calls it made are
        in ``tool_calls``, recorded, never executed."""
        config = config or GenerateConfig()
        tools = tuple(tools)
        if tools and schema is not None:
            raise ConfigError("a call takes tools or a structured-output schema, not both")
        key = cache_key(self.endpoint, messages, config, schema, tools)
        if not (self.use_cache and self.store is not None):
            return await self._generate(key, messages, config, schema, validate, tag, tools)
        hit = self._cached(key, schema)
        if hit is not None:
            return hit
        # The same request already in flight (two jobs asking the same thing at once): wait
        # for its answer rather than paying for it twice.
        slot = (id(self.store), key)
        pending = _INFLIGHT.get(slot)
        if pending is not None:
            await asyncio.shield(pending)
            hit = self._cached(key, schema)
            if hit is not None:
                return hit
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        _INFLIGHT[slot] = done
        try:
            return await self._generate(key, messages, config, schema, validate, tag, tools)
        finally:
            del _INFLIGHT[slot]
            done.set_result(None)

    def _cached(self, key: str, schema: dict[str, Any] | None) -> ModelOutput | None:
        assert self.store is not None
        hit = self.store.cache_get(key)
        if hit is None:
            return None
        self.cache_hits += 1
        out = ModelOutput(
            text=hit["text"],
            usage=Usage(**hit["usage"]),
            finish_reason=hit["finish_reason"],
            cached=True,
            truncated=bool(hit.get("truncated")),
            model=self.name,
            tool_calls=[ToolCall.model_validate(c) for c in hit.get("tool_calls") or []],
        )
        if schema is not None:
            out.parsed = parse_json(out.text, schema)
        return out

    async def _generate(
        self,
        key: str,
        messages: list[Message],
        config: GenerateConfig,
        schema: dict[str, Any] | None,
        validate: bool,
        tag: str | None,
        tools: tuple[ToolSpec, ...] = (),
    ) -> ModelOutput:
        last_error = ""
        last_text = ""
        for attempt in range(self.options.structured_retries + 1):
            # A re-ask must be able to come out differently, so it gets another seed.
            cfg = config
            if attempt and config.seed is not None:
                cfg = GenerateConfig(
                    config.temperature, config.max_tokens, config.seed + 7919 * attempt, config.stop
                )
            # the request's own key (a re-ask's seed differs): what names it in a batch
            ckey = key if cfg is config else cache_key(self.endpoint, messages, cfg, schema, tools)
            raw, latency, hold, row = await self._call(
                Call(self.name, ckey, messages, cfg, schema, tag, tools)
            )
            limit = answer_limit(cfg.max_tokens)
            if len(raw.text) > limit:  # an endpoint that ignored max_tokens
                raw.text, raw.truncated = raw.text[:limit], True
            if raw.truncated:
                log.warning(
                    "%s: an answer was cut at %d characters (or %ss); what is kept is its "
                    "beginning",
                    self.name,
                    limit,
                    self.options.max_seconds,
                )
            out = ModelOutput(
                text=raw.text,
                usage=raw.usage,
                finish_reason=raw.finish_reason,
                latency=latency,
                model=self.name,
                truncated=raw.truncated,
                tool_calls=list(raw.tool_calls),
            )
            error = None
            if schema is not None:
                try:
                    out.parsed = parse_json(raw.text, schema)
                    if validate:
                        errs = schema_errors(out.parsed, schema)
                        if errs:
                            error = "schema: " + "; ".join(errs)
                except ValueError as e:
                    error = f"unparseable: {e}"
            if raw.call_id is not None:  # paid for when its batch was imported
                out.call_id = raw.call_id
            else:
                out.call_id = self.pay(key, raw, latency, error, tag, hold, row)
            if error is None:
                if self.use_cache and self.store is not None:
                    self.store.cache_put(
                        key,
                        self.name,
                        {
                            "text": raw.text,
                            "usage": {
                                "prompt_tokens": raw.usage.prompt_tokens,
                                "completion_tokens": raw.usage.completion_tokens,
                            },
                            "finish_reason": raw.finish_reason,
                            **({"truncated": True} if raw.truncated else {}),
                            **(
                                {"tool_calls": [c.model_dump() for c in raw.tool_calls]}
                                if raw.tool_calls
                                else {}
                            ),
                        },
                    )
                return out
            self.failures += 1
            last_error, last_text = error, raw.text
        raise StructuredOutputError(
            f"{self.name} gave no valid structured answer in "
            f"{self.options.structured_retries + 1} tries ({last_error})",
            raw_text=last_text,
        )

    async def _call(self, call: Call) -> tuple[RawResponse, float, tuple[int, float], int | None]:
        """One logical call: rate limit, concurrency slot, and retries on transient errors.
        A call that fails for good raises ProviderError (that job's failure), or EndpointDown
        when the endpoint itself is unusable."""
        if not self.transport.online and not call.tools:
            # collected, not sent (a batch's answer, paid when imported; else Deferred): the
            # policies below are for requests sent from here
            return await self.transport.send(self.api, call), 0.0, (0, 0.0), None
        messages, config = call.messages, call.config
        attempt = 0
        while True:
            if self.down is not None:
                raise EndpointDown(self.down)
            # Held from here until the answer is paid for (in pay) or the call fails, so
            # concurrent callers cannot all pass the budget check at once; what it may cost
            # at most is held, so the calls in flight cannot overshoot a cap either.
            hold = (0, 0.0)
            if self.budget is not None:
                hold = self.budget.reserve(*self._worst_case(messages, config))
            row: int | None = None
            try:
                await self.limiter.acquire(estimate_tokens(messages) + config.max_tokens)
                limit = limit_for(self.api.server, self.concurrency, self.options.adaptive)
                self.concurrency_limit = limit
                epoch = await limit.acquire()
                start = time.perf_counter()
                raw: RawResponse | None = None
                err: ProviderError | None = None
                row = self._begin(call.tag)
                try:
                    raw = await self._send(call)
                except TimeoutError as e:
                    # The server may have run it: count the prompt it read, and read the
                    # silence as load.
                    err = TransientError(
                        f"{self.name}: no answer within {self.options.timeout}s",
                        congested=True,
                        spent=(estimate_tokens(messages), 0),
                    )
                    err.__cause__ = e
                except ProviderError as e:
                    err = e
                finally:
                    limit.release(
                        epoch,
                        answered=raw is not None,
                        congested=isinstance(err, TransientError) and err.congested,
                        ttft=raw.ttft if raw is not None else None,
                    )
                if raw is not None:
                    self._failed_in_a_row = 0
                    self._last_ok = (messages, config, call.schema)
                    return raw, time.perf_counter() - start, hold, row
            except BaseException:
                if self.budget is not None:
                    self.budget.release(hold)
                self._interrupted(row, messages)
                raise
            assert err is not None
            latency = time.perf_counter() - start
            if isinstance(err, TransientError) and err.spent is not None:
                # an abandoned call the server worked on: paid for, with estimated usage
                spent = RawResponse("", Usage(*err.spent), "abandoned", estimated=True)
                self.pay(ABANDONED, spent, latency, f"abandoned: {err}", None, hold, row)
            else:
                if self.budget is not None:
                    self.budget.release(hold)
                self.pay("", RawResponse(""), latency, str(err), None, row=row)
            if not isinstance(err, TransientError) or attempt >= self.retry.max_retries:
                await self._give_up(err, attempt + 1)
            assert isinstance(err, TransientError)
            await asyncio.sleep(self.retry.delay(attempt, err, self._rng))
            attempt += 1

    async def _give_up(self, err: ProviderError, attempts: int) -> NoReturn:
        """Raise the failure of one call, after deciding whether it is the endpoint's."""
        why = None
        if self.down is not None:
            raise EndpointDown(self.down, status=err.status) from err
        if is_endpoint_fault(err.status) or isinstance(err, EndpointDown):
            why = f"{self.name}: {err}"
        elif not err.per_request:
            self._failed_in_a_row += 1
            # this call's place in the streak: the message counts the failures up to it, each
            # recorded (a job's failure, this one included), not those failing meanwhile
            streak = self._failed_in_a_row
            if streak >= FAILURES_TO_STOP:
                async with self._probe_lock:  # one probe for the calls failing at once
                    if self.down is not None:
                        raise EndpointDown(self.down, status=err.status) from err
                    if self._failed_in_a_row >= FAILURES_TO_STOP and not await self._probe():
                        why = (
                            f"{self.name}: {streak} calls in a row failed for good, the last "
                            f"after {attempts} attempts: {err}"
                        )
                        why += (
                            "; a request it had answered before failed too"
                            if self._last_ok is not None
                            else '; a plain "Hello" failed too'
                        )
        if why is not None:
            self.down = self.down or (
                f"{why}; the work done so far is saved, re-run the same command once the "
                "endpoint answers"
            )
            down = EndpointDown(self.down, status=err.status)
            down.own = True
            raise down from err
        if isinstance(err, (ContentRejected, TargetError)):
            raise err
        tries = f" (gave up after {attempts} attempts)" if attempts > 1 else ""
        raise ProviderError(
            f"{err}{tries}", status=err.status, per_request=err.per_request
        ) from err

    async def _probe(self) -> bool:
        """Whether the endpoint still answers: the last request it answered, sent again
        uncached (or, none answered in this process, a plain "Hello"), as one paid call."""
        messages, config, schema = self._last_ok or (
            [Message("user", "Hello")],
            GenerateConfig(0.0, 8, 0),
            None,
        )
        hold = (0, 0.0)
        if self.budget is not None:
            hold = self.budget.reserve(*self._worst_case(messages, config))
        start = time.perf_counter()
        row = self._begin("probe")
        try:
            raw = await self._send(Call(self.name, "probe", messages, config, schema, "probe"))
        except (ProviderError, TimeoutError) as e:
            if self.budget is not None:
                self.budget.release(hold)
            self.pay("", RawResponse(""), 0.0, f"probe: {e}", "probe", row=row)
            return False
        except BaseException:
            if self.budget is not None:
                self.budget.release(hold)
            self._interrupted(row, messages)
            raise
        self.pay("probe", raw, time.perf_counter() - start, None, "probe", hold, row)
        self._failed_in_a_row = 0  # it is up: the failures were those prompts'
        return True

    def _worst_case(self, messages: list[Message], config: GenerateConfig) -> tuple[int, float]:
        """The most a call may spend: its prompt (chars/4 runs up to a third low on some
        tokenizers, hence the margin) and every token of max_tokens."""
        prompt = estimate_tokens(messages) * 3 // 2
        return prompt + config.max_tokens, self.price.cost(Usage(prompt, config.max_tokens))

    def pay(
        self,
        key: str,
        raw: RawResponse,
        latency: float,
        error: str | None,
        tag: str | None,
        hold: tuple[int, float] | None = (0, 0.0),
        row: int | None = None,
        *,
        price: Price | None = None,
    ) -> int | None:
        """The one way a call is paid for and recorded: online answers, abandoned calls,
        failures (``key`` empty: nothing spent) and the answers batches bring (``price``
        their batch price, ``hold`` None: paid outside a reservation). Returns the call's
        row in the store."""
        cost = (price or self.price).cost(raw.usage)
        if key:  # a transport failure spent nothing we can count
            self.calls += 1
            self.usage.add(raw.usage)
            if self.budget is not None:
                if hold is None:
                    self.budget.add(raw.usage, cost)
                else:
                    self.budget.spend(raw.usage, cost, hold)
        if self.store is None:
            return None
        return self.store.record_call(
            CallRecord(
                model=self.name,
                cache_key=key,
                prompt_tokens=raw.usage.prompt_tokens,
                completion_tokens=raw.usage.completion_tokens,
                latency=latency,
                finish_reason=raw.finish_reason,
                cost=cost if self.priced else None,
                error=error,
                raw_text=raw.text if error else None,
                tag=tag,
            ),
            row,
        )

    async def _send(self, call: Call) -> RawResponse:
        """One request through the transport, under the call deadline (unless the provider
        keeps its own, as streams do)."""
        # a call with tools travels direct: batches and Ray workers carry plain calls only
        sent = (
            self.api.complete_tools(call.messages, call.config, call.tools)
            if call.tools
            else self.transport.send(self.api, call)
        )
        return await within(sent, None if self.api.manages_deadlines else self.options.timeout)

    def _begin(self, tag: str | None) -> int | None:
        """Record the call as in flight before it is sent (see RunDB.begin_call)."""
        begin = getattr(self.store, "begin_call", None)
        return begin(self.name, tag) if begin is not None else None

    def _interrupted(self, row: int | None, messages: list[Message]) -> None:
        """A call in flight when the run stopped (Ctrl-C, another job's stop): the server
        may have run it, so it stays counted, abandoned with its prompt's estimate."""
        if row is None or self.store is None:
            return
        spent = RawResponse("", Usage(estimate_tokens(messages), 0), "abandoned")
        self.store.record_call(
            CallRecord(self.name, ABANDONED, spent.usage.prompt_tokens, 0, 0.0, "abandoned",
                       self.price.cost(spent.usage), INTERRUPTED),
            row,
        )  # fmt: skip

    @property
    def cost(self) -> float:
        return self.price.cost(self.usage)

    async def aclose(self) -> None:
        await self.api.aclose()


def get_model(
    name: str,
    options: ModelOptions | None = None,
    *,
    store: CallStore | None = None,
    use_cache: bool = True,
    price: Price | None = None,
    budget: Budget | None = None,
) -> Model:
    """Build a :class:`Model` for ``provider/model``."""
    options = options or ModelOptions()
    return Model(
        name,
        create_api(name, options),
        options=options,
        store=store,
        use_cache=use_cache,
        price=price,
        budget=budget,
    )
