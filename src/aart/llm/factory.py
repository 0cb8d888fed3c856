"""The one way to build models: every role (define, generate, verify, baseline, attack target,
judge, classifier) gets its model from a :class:`ModelFactory`, so the same rules hold for all:
endpoint options, the price of each model, one shared budget, one store and cache."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any

from ..errors import UsageError
from .limits import Budget, Price
from .model import Model
from .providers.base import ModelAPI, ModelOptions, create_api
from .storage import CallStore
from .transport.base import Execution, Transport
from .transport.direct import DIRECT

# Providers whose calls cost nothing, so a cost cap needs no price for them. Attack targets
# behind their own API (http/) or in Python (python/) are the application, not a model we pay
# per token.
FREE_PROVIDERS = ("local/", "fake/", "http/", "python/")


def check_priced(
    name: str, max_cost: float | None, prices: Mapping[str, Any], source: str = "the recipe"
) -> None:
    """A cost cap needs a price: refuse, before any call (and in a dry run, which said
    "within" the budget of a run that was then refused), a capped run of an unpriced model."""
    if max_cost is None or name.startswith(FREE_PROVIDERS) or name in prices:
        return
    raise UsageError(
        f"a max_cost budget is set but {source} has no price for {name}, so the cap "
        f"could never be reached; add prices: {{{name}: {{input: ..., output: ...}}}} "
        "(US dollars per million tokens) or remove max_cost"
    )


@dataclass
class ModelFactory:
    """Builds the models of a command. ``execution`` chooses, once, how their calls travel;
    its transport is started with the factory and closed by :meth:`close` (or leaving a
    ``with`` block), so a Ray cluster connection never outlives the command."""

    options: ModelOptions = field(default_factory=ModelOptions)
    store: CallStore | None = None
    use_cache: bool = True
    #: US dollars per million tokens, by model name
    prices: Mapping[str, Price] = field(default_factory=dict)
    budget: Budget | None = None
    #: where the prices and budget come from, for messages ("the recipe", "--price")
    source: str = "the recipe"
    made: list[Model] = field(default_factory=list)
    execution: Execution = field(default_factory=Execution)
    #: what the execution started: the models whose API it accepts use it, the others go
    #: direct
    transport: Transport = field(init=False, default=DIRECT)

    def __post_init__(self) -> None:
        self.transport = self.execution.start(self.store, self.budget)

    def __enter__(self) -> ModelFactory:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop what the execution started (Ray's workers); the models' connections are
        closed by :meth:`aclose`."""
        self.transport.close()

    def check_priced(self, name: str) -> None:
        """A cost cap needs a price: refuse, before any call, a capped run of an unpriced
        model."""
        check_priced(name, self.budget.max_cost if self.budget else None, self.prices, self.source)

    def model(self, name: str, options: ModelOptions | None = None) -> Model:
        """The model ``provider/model`` with this factory's rules."""
        self.check_priced(name)
        opts = replace(options or self.options)
        if getattr(self.transport, "export_to", None) is not None:
            # `aart batch export`: its requests go to a file for an engine with no server,
            # so a hosted API's missing key is no error (nothing is sent)
            opts = replace(opts, extra={**opts.extra, "files_only": True})
        return self.wrap(name, create_api(name, opts), opts)

    def wrap(
        self, name: str, api: ModelAPI, options: ModelOptions | None = None, *, paid: bool = True
    ) -> Model:
        """A model around an API built elsewhere (an attack target's). ``paid=False`` (saved
        responses answered again) records no calls, caches nothing and spends no budget."""
        if not paid:
            m = Model(name, api, options=options or api.options, use_cache=False)
            self.made.append(m)
            return m
        self.check_priced(name)
        transport = self.transport if self.transport.accepts(api) else DIRECT
        m = Model(
            name,
            api,
            options=options or api.options,
            store=self.store,
            use_cache=self.use_cache,
            price=self.prices.get(name, Price()),
            budget=self.budget,
            transport=transport,
        )
        m.priced = name in self.prices or name.startswith(FREE_PROVIDERS)
        transport.attach(m)
        self.made.append(m)
        return m

    @property
    def cost(self) -> float:
        return sum(m.cost for m in self.made)

    async def aclose(self) -> None:
        for m in self.made:
            await m.aclose()
