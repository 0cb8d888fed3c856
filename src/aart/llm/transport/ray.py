"""``--executor ray`` (was ``aart.llm.ray_executor``): the model calls of a run's jobs run on Ray workers, across the nodes of
a cluster, while the driver (the aart process) keeps the job logic and stays the single writer
of ``run.db`` (so resume, leases, the cache and accounting are unchanged).

- Calls to OpenAI-compatible endpoints (``openai/...``: vLLM, Ollama, llama.cpp, hosted APIs)
  go to a pool of async :class:`CallWorker` actors spread over the cluster's nodes; other
  models (``local/``, an HTTP or Python target) are called in the driver as usual.
- Each endpoint has one named :class:`EndpointLimiter` actor (namespace ``aart``): every call,
  from any worker of any aart process connected to the cluster, takes a slot there, so the
  endpoint's ``concurrency`` and ``rpm``/``tpm`` hold cluster-wide.
- Secrets never travel through Ray: a worker reads the API key from its own environment (a
  local cluster's workers inherit the driver's; on a remote cluster, export it on the nodes)
  under the same binding rules as the driver (aart.llm.endpoints).

Why not ``ray.data.llm``: its HTTP request processor maps one fixed dataset through an
endpoint, while aart's jobs are chains decided as the answers come (a verifier after the
generator, a judge after the target, PAIR rounds, re-asks of invalid JSON); it would also carry
the API key in the processor's config to the cluster, and it needs the ``ray[llm]`` extra
(vLLM and its stack). vLLM engines on a Ray cluster are best served as an OpenAI-compatible
endpoint (``vllm serve``, or Ray Serve LLM), which aart calls like any other.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import ContentRejected, EndpointDown, ProviderError, TransientError, UsageError
from ..providers.base import ModelAPI, ModelOptions
from ..types import Call, GenerateConfig, Message, RawResponse, estimate_tokens

if TYPE_CHECKING:
    from ..limits import Budget
    from ..model import Model
    from ..storage import CallStore

NAMESPACE = "aart"


def _ray() -> Any:
    """Ray, imported when used (it is an optional extra, and slow to import)."""
    try:
        import ray
    except ImportError as e:
        raise UsageError(
            "--executor ray needs Ray: pip install 'aart-redteam[ray]' (on the driver and "
            "on every node of the cluster)"
        ) from e
    return ray


_ERRORS: dict[str, type[ProviderError]] = {
    c.__name__: c for c in (ProviderError, TransientError, ContentRejected, EndpointDown)
}


def _error_state(e: ProviderError) -> dict[str, Any]:
    """An error as plain data (our exceptions take keyword arguments that pickling loses)."""
    return {
        "type": type(e).__name__ if type(e).__name__ in _ERRORS else "ProviderError",
        "message": str(e),
        "status": e.status,
        "per_request": e.per_request,
        "retry_after": getattr(e, "retry_after", None),
        "congested": getattr(e, "congested", False),
        "spent": getattr(e, "spent", None),
    }


def _rebuild(state: dict[str, Any]) -> ProviderError:
    kind = _ERRORS[state["type"]]
    if kind is TransientError:
        return TransientError(
            state["message"],
            status=state["status"],
            retry_after=state["retry_after"],
            congested=state["congested"],
            spent=tuple(state["spent"]) if state["spent"] else None,
        )
    if kind is ContentRejected:
        return ContentRejected(state["message"], status=state["status"])
    return kind(state["message"], status=state["status"], per_request=state["per_request"])


class EndpointLimiter:
    """One endpoint's slots and request/token rates, for the whole cluster."""

    def __init__(self, concurrency: int, rpm: float | None, tpm: float | None) -> None:
        self.concurrency, self.rpm, self.tpm = concurrency, rpm, tpm
        self._slots: asyncio.Semaphore | None = None
        self._rate: Any = None
        self.in_use = 0
        self.peak = 0

    async def acquire(self, tokens: int) -> None:
        from ..limits import RateLimiter

        if self._slots is None:  # made in the actor's own event loop
            self._slots = asyncio.Semaphore(self.concurrency)
            self._rate = RateLimiter(self.rpm, self.tpm)
        await self._slots.acquire()
        await self._rate.acquire(tokens)
        self.in_use += 1
        self.peak = max(self.peak, self.in_use)

    async def release(self) -> None:
        assert self._slots is not None
        self.in_use -= 1
        self._slots.release()

    async def stats(self) -> dict[str, int]:
        return {"in_use": self.in_use, "peak": self.peak, "concurrency": self.concurrency}


class CallWorker:
    """Makes model calls on a node: one API object (and HTTP session) per endpoint."""

    def __init__(self) -> None:
        self._apis: dict[tuple[str, str, str], ModelAPI] = {}

    async def complete(
        self,
        kind: type[ModelAPI],
        model: str,
        options: ModelOptions,
        messages: list[Message],
        config: GenerateConfig,
        schema: dict[str, Any] | None,
        limiter: Any,
    ) -> tuple[str, Any]:
        key = (f"{kind.__module__}.{kind.__qualname__}", model, repr(options))
        api = self._apis.get(key)
        try:
            if api is None:
                api = self._apis[key] = kind(model, options)
            await limiter.acquire.remote(estimate_tokens(messages) + config.max_tokens)
            try:
                raw = await api.complete(messages, config, schema)
            finally:
                await limiter.release.remote()
        except ProviderError as e:
            return "error", _error_state(e)
        except UsageError as e:  # a key this node may not send: the endpoint is unusable
            return "error", _error_state(EndpointDown(str(e)))
        return "ok", raw


@dataclass
class RaySettings:
    """Where the calls run: the cluster at ``address`` (else ``RAY_ADDRESS``, else a local
    instance of ``num_cpus`` CPUs)."""

    address: str | None = None
    num_cpus: int | None = None

    def start(self, store: CallStore | None = None, budget: Budget | None = None) -> RayExecutor:
        """Connect (see :class:`RayExecutor`); the calls' store and budget stay the driver's."""
        return RayExecutor(self.address, num_cpus=self.num_cpus)


class RayExecutor:
    """The Ray transport: connects to a Ray cluster (``address``, else ``RAY_ADDRESS``, else
    a local one with ``num_cpus``) and sends the calls of OpenAI-compatible models to its
    workers. The model's policies (budget, retries, its own adaptive limit) stay in the
    driver; the cluster-wide limiter actor bounds the endpoint for every driver."""

    online = True

    def __init__(
        self, address: str | None = None, *, num_cpus: int | None = None, workers: int | None = None
    ) -> None:
        ray = _ray()
        address = address or os.environ.get("RAY_ADDRESS") or None
        self.started = not ray.is_initialized()
        if self.started:
            ray.init(
                address=address,
                num_cpus=None if address else num_cpus,
                namespace=NAMESPACE,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        self.address = address or "a local Ray instance"
        n = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        remote_worker = ray.remote(CallWorker).options(
            max_concurrency=100_000, num_cpus=0, scheduling_strategy="SPREAD"
        )
        self.workers: list[Any] = [remote_worker.remote() for _ in range(n)]
        self._limiters: dict[str, Any] = {}
        self._next = 0

    @staticmethod
    def accepts(api: ModelAPI) -> bool:
        """Calls that can run on a worker: an OpenAI-compatible endpoint's, over HTTP."""
        from ..providers.openai import OpenAIChatAPI

        return isinstance(api, OpenAIChatAPI)

    def attach(self, model: Model) -> None:
        pass

    async def send(self, api: ModelAPI, call: Call) -> RawResponse:
        # the concurrency the model has (its options are the API's: see ModelFactory)
        concurrency = api.options.concurrency or api.default_concurrency
        return await self.complete(api, concurrency, call.messages, call.config, call.schema)

    def limiter(self, api: ModelAPI, concurrency: int) -> Any:
        """The endpoint's limiter actor, shared by every aart process on the cluster."""
        server = api.server
        if server not in self._limiters:
            ray = _ray()
            options = api.options
            self._limiters[server] = (
                ray.remote(EndpointLimiter)
                .options(
                    name=f"limiter:{server}",
                    namespace=NAMESPACE,
                    get_if_exists=True,
                    num_cpus=0,
                    max_concurrency=100_000,
                )
                .remote(concurrency, options.rpm, options.tpm)
            )
        return self._limiters[server]

    async def complete(
        self,
        api: ModelAPI,
        concurrency: int,
        messages: list[Message],
        config: GenerateConfig,
        schema: dict[str, Any] | None,
    ) -> RawResponse:
        """One call on the next worker; its errors are raised here as if made locally."""
        worker = self.workers[self._next % len(self.workers)]
        self._next += 1
        status, value = await worker.complete.remote(
            type(api),
            api.model,
            api.options,
            messages,
            config,
            schema,
            self.limiter(api, concurrency),
        )
        if status == "error":
            raise _rebuild(value)
        assert isinstance(value, RawResponse)
        return value

    async def limiter_stats(self) -> dict[str, dict[str, int]]:
        return {s: await lim.stats.remote() for s, lim in self._limiters.items()}

    def close(self) -> None:
        """Kill the workers, and the local instance if this process started it."""
        ray = _ray()
        for w in self.workers:
            ray.kill(w)
        self.workers = []
        if self.started:
            ray.shutdown()
            self.started = False

    shutdown = close  # the name before the transport seam


#: the Ray transport by its role's name
RayTransport = RayExecutor
