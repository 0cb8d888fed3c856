"""Providers LiteLLM covers (Anthropic, Gemini, Bedrock, ...): an optional extra, imported lazily."""

from __future__ import annotations

import os
from typing import Any

from ...errors import ConfigError, ProviderError, TransientError
from ...redaction import remember
from ..endpoints import allowed, refuse
from ..http_status import is_retryable
from ..structured import schema_instructions
from ..types import GenerateConfig, Message, RawResponse, Usage
from .base import ModelAPI, ModelOptions, register_provider

#: the variable LiteLLM reads each provider's key from (the providers aart documents; the
#: others follow LiteLLM's convention, PROVIDER_API_KEY)
PROVIDER_KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "text-completion-openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "cohere": "COHERE_API_KEY",
    "cohere_chat": "COHERE_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "xai": "XAI_API_KEY",
    "perplexity": "PERPLEXITYAI_API_KEY",
    "fireworks_ai": "FIREWORKS_AI_API_KEY",
    "deepinfra": "DEEPINFRA_API_KEY",
    "azure": "AZURE_API_KEY",
    "huggingface": "HUGGINGFACE_API_KEY",
    "hosted_vllm": "HOSTED_VLLM_API_KEY",
}
#: local servers LiteLLM sends no key to
KEYLESS_PROVIDERS = {"ollama", "ollama_chat", "lm_studio", "llamafile"}
#: model names LiteLLM routes without a provider prefix
_BARE = (("claude", "anthropic"), ("gemini", "gemini"), ("gpt-", "openai"), ("o1", "openai"),
         ("o3", "openai"), ("o4", "openai"), ("mistral", "mistral"), ("command", "cohere"))  # fmt: skip


def provider_of(model: str) -> str:
    """The LiteLLM provider of ``model`` (``anthropic/claude-...`` or a bare known name)."""
    if "/" in model:
        return model.split("/", 1)[0].lower()
    for prefix, provider in _BARE:
        if model.lower().startswith(prefix):
            return provider
    return "openai"  # LiteLLM's default for a name it does not know


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
        #: the variable whose value is sent as the key (None: LiteLLM's own choice)
        self.key_env: str | None = None
        if options.untrusted and options.base_url:
            self.key_env = self._check_binding(model, options)

    @staticmethod
    def _check_binding(model: str, options: ModelOptions) -> str | None:
        """A recipe chose api_base, so the variable LiteLLM would send there must be bound
        to that host: the one the recipe names if it is set (aart passes its value, so LiteLLM
        reads no other), else the provider's own. Binding *by variable*: a gateway bound to
        $OPENAI_API_KEY (say, the user's OPENAI_BASE_URL) does not receive $ANTHROPIC_API_KEY.
        Returns the variable to send, None if none is set."""
        provider = provider_of(model)
        own = PROVIDER_KEY_ENV.get(provider)
        if own is None and provider not in KEYLESS_PROVIDERS:
            own = f"{provider.upper()}_API_KEY"  # LiteLLM's convention for the others
        named = options.api_key_env if options.key_named else None
        var = next((v for v in (named, own) if v and os.environ.get(v)), None)
        if var is not None:
            remember(var, os.environ[var])
        if var is not None and not allowed(options.base_url or "", var, options.bound):
            raise refuse(f"litellm/{model}'s base_url", options.base_url or "", var)
        return var

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
                # the checked variable's value, so LiteLLM sends no other one to api_base
                **({"api_key": os.environ.get(self.key_env)} if self.key_env else {}),
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
