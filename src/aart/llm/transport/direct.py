"""The default transport: the provider's own call, in this process."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..model import Model
    from ..providers.base import ModelAPI
    from ..types import Call, RawResponse


class DirectTransport:
    online = True

    def accepts(self, api: ModelAPI) -> bool:
        return True

    def attach(self, model: Model) -> None:
        pass

    async def send(self, api: ModelAPI, call: Call) -> RawResponse:
        return await api.complete(call.messages, call.config, call.schema)

    def close(self) -> None:
        pass


#: stateless, so every model without another transport shares this one
DIRECT = DirectTransport()
