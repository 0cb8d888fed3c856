"""The model layer: one async interface over OpenAI-compatible APIs, the embedded llama.cpp
model, LiteLLM and fakes. Models are named ``provider/model``."""

from ..refusal import reply_refuses as looks_like_refusal  # a public name kept: aart.refusal's
from .limits import Budget, BudgetExhausted, Price, RateLimiter, RetryPolicy
from .model import CallRecord, CallStore, Model, cache_key, estimate_tokens, get_model
from .providers.base import ModelAPI, ModelOptions, create_api, provider_names, register_provider
from .providers.fake import ScriptedAPI, register_script
from .structured import parse_json, schema_errors
from .types import GenerateConfig, Message, ModelOutput, RawResponse, Usage

__all__ = [
    "Budget",
    "BudgetExhausted",
    "CallRecord",
    "CallStore",
    "GenerateConfig",
    "Message",
    "Model",
    "ModelAPI",
    "ModelOptions",
    "ModelOutput",
    "Price",
    "RateLimiter",
    "RawResponse",
    "RetryPolicy",
    "ScriptedAPI",
    "Usage",
    "cache_key",
    "create_api",
    "estimate_tokens",
    "get_model",
    "looks_like_refusal",
    "parse_json",
    "provider_names",
    "register_provider",
    "register_script",
    "schema_errors",
]
