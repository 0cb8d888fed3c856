"""Providers LiteLLM covers (Anthropic, Gemini, Bedrock, ...): an optional extra, imported lazily."""

from __future__ import annotations

from typing import Any

from ...errors import ConfigError, ProviderError, TransientError
from ..endpoints import host_bound, origin
from ..http_status import is_retryable
from ..structured import schema_instructions
from ..types import GenerateConfig, Message, RawResponse, Usage
from .base import ModelAPI, ModelOptions, register_provider


class LiteLLMAPI(ModelAPI):
    def __init__(self, model: str, options: ModelOptions) -> None:
        super().__init__(model, options)
        try:
            import litellm
        except ImportError as e:
            raise ConfigError(
                f"litellm/{model} needs the litellm extra: pip install 'aart-redteam[litellm]'"
            ) from e
        self._litellm = litellm
        # LiteLLM sends the provider's key from the environment to api_base: a recipe may
        # only point it at a host the user bound a key to.
        if (
            options.untrusted
            and options.base_url
            and not host_bound(options.base_url, options.bound)
        ):
            raise ConfigError(
                f"litellm/{model}'s base_url would send your provider key to "
                f"{origin(options.base_url)}, a host you have not bound it to. If you trust "
                f"it: `aart endpoints allow {origin(options.base_url)} --key-env VAR`, with "
                "VAR the variable LiteLLM reads for this provider"
            )

    @property
    def endpoint(self) -> str:
        # the same model name behind another api_base is another endpoint
        return f"{self.model}@{self.options.base_url or 'default'}"

    async def complete(
        self, messages: list[Message], config: GenerateConfig, schema: dict[str, Any] | None
    ) -> RawResponse:
        msgs = [{"role": m.role, "content": m.content} for m in messages]
        if schema is not None:
            msgs.insert(0, {"role": "system", "content": schema_instructions(schema)})
        try:
            resp = await self._litellm.acompletion(
                model=self.model,
                messages=msgs,
                temperature=config.temperature,
                max_tokens=config.max_tokens,
                seed=config.seed,
                stop=list(config.stop) or None,
                timeout=self.options.timeout,
                api_base=self.options.base_url,
            )
        except Exception as e:  # litellm maps every provider's errors onto its own classes
            status = getattr(e, "status_code", None)
            if is_retryable(status) or "Timeout" in type(e).__name__:
                raise TransientError(str(e)[:300], status=status) from e
            raise ProviderError(str(e)[:300], status=status) from e
        choice = resp.choices[0]
        usage = getattr(resp, "usage", None)
        return RawResponse(
            text=choice.message.content or "",
            usage=Usage(
                getattr(usage, "prompt_tokens", 0) or 0, getattr(usage, "completion_tokens", 0) or 0
            ),
            finish_reason=choice.finish_reason or "stop",
        )


register_provider("litellm", LiteLLMAPI)
