"""The transport seam (after httpx's ``BaseTransport``): the model owns policy (cache,
budget, rate limits, concurrency, retries, accounting); a transport only carries a call to
its provider and brings the answer back. One transport is chosen per factory, once, by an
:class:`Execution`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ...errors import UsageError

if TYPE_CHECKING:
    from ..limits import Budget
    from ..model import Model
    from ..providers.base import ModelAPI
    from ..storage import CallStore
    from ..types import Call, RawResponse
    from .batch import BatchSettings
    from .ray import RaySettings


class Transport(Protocol):
    #: True: the call is sent from here, under the model's online policies (budget hold,
    #: rate limit, concurrency slot, deadline, retries). False: the answer is collected, not
    #: sent (a batch brought it, and it was paid for when imported), or :class:`Deferred`
    #: is raised until it comes.
    online: bool

    def accepts(self, api: ModelAPI) -> bool:
        """Whether calls to ``api`` can travel this way (the others go direct)."""
        ...

    def attach(self, model: Model) -> None:
        """A model built to use this transport (a batch transport pays its answers)."""
        ...

    async def send(self, api: ModelAPI, call: Call) -> RawResponse: ...

    def close(self) -> None:
        """Release what the transport holds (Ray's workers); the factory calls it once."""
        ...


@dataclass(frozen=True)
class Execution:
    """How a command's calls travel: direct (``scale`` None), in batches through the
    server's batch API or files (:class:`BatchSettings`), or on a Ray cluster's workers
    (:class:`RaySettings`). One field, so batch and Ray exclude each other by type."""

    scale: BatchSettings | RaySettings | None = None

    @classmethod
    def of(cls, batch: BatchSettings | None = None, ray: RaySettings | None = None) -> Execution:
        """The execution the ``--batch`` and ``--executor ray`` settings ask for."""
        if batch is not None and ray is not None:
            raise UsageError("--batch and --executor ray do not go together: choose one")
        return cls(batch if batch is not None else ray)

    def start(self, store: CallStore | None, budget: Budget | None) -> Transport:
        """The transport of a factory whose calls are stored in ``store``: connects to Ray,
        or opens the run's batch tables (a batch needs a run store)."""
        from .direct import DIRECT

        if self.scale is None:
            return DIRECT
        return self.scale.start(store, budget)
