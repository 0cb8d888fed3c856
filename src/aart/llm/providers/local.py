"""The embedded model through llama-cpp-python, with JSON-Schema-constrained decoding."""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ...errors import ConfigError, ProviderError
from ..local_model import EMBEDDED, INSTALL_HINT, resolve_model_path
from ..structured import schema_instructions
from ..types import GenerateConfig, Message, RawResponse, Usage
from .base import ModelAPI, ModelOptions, register_provider

# One engine per model file per process: loading is slow and the weights are shared.
_ENGINES: dict[tuple[str, int], Any] = {}
_ENGINES_LOCK = threading.Lock()
# Every llama.cpp call runs on one long-lived thread. libgomp keeps a thread team per calling
# thread and throttles its spin-waiting once teams outnumber the cores: calling from fresh
# threads (asyncio.to_thread) measured 30% fewer tokens/s than one steady thread.
_ENGINE_THREAD: ThreadPoolExecutor | None = None


def engine_thread() -> ThreadPoolExecutor:
    global _ENGINE_THREAD
    with _ENGINES_LOCK:
        if _ENGINE_THREAD is None:
            _ENGINE_THREAD = ThreadPoolExecutor(1, thread_name_prefix="aart-llama")
        return _ENGINE_THREAD


def load_engine(path: str, n_ctx: int, n_threads: int | None) -> Any:
    try:
        from llama_cpp import Llama
    except ImportError as e:
        raise ConfigError(f"the embedded model needs llama-cpp-python: {INSTALL_HINT}") from e
    with _ENGINES_LOCK:
        key = (path, n_ctx)
        if key not in _ENGINES:
            if not _ENGINES:
                atexit.register(close_engines)
            try:
                _ENGINES[key] = Llama(
                    model_path=path,
                    n_ctx=n_ctx,
                    n_threads=n_threads or os.cpu_count() or 2,
                    verbose=False,
                )
            except (ValueError, RuntimeError) as e:
                raise ProviderError(f"could not load {path}: {e}; is it a valid GGUF?") from e
        return _ENGINES[key]


def close_engines() -> None:
    """Free the engines before interpreter teardown (llama-cpp-python's __del__ fails then)."""
    with _ENGINES_LOCK:
        for engine in _ENGINES.values():
            engine.close()
        _ENGINES.clear()


class LocalLlamaAPI(ModelAPI):
    # One generation at a time (one engine thread): contexts are not thread-safe and the CPU
    # is the limit anyway.
    default_concurrency = 1

    def __init__(self, model: str, options: ModelOptions) -> None:
        super().__init__(model, options)
        self.path = str(resolve_model_path(model))
        if model in EMBEDDED:
            # verified by its SHA-256 when assembled: the same weights wherever the cache is
            self._identity = f"sha256={EMBEDDED[model].sha256}"
        else:
            # two files may share a name: the real path, size and modification time tell
            # them apart (and a file replaced in place)
            st = os.stat(self.path)
            self._identity = f"{os.path.realpath(self.path)}:{st.st_size}:{st.st_mtime_ns}"

    @property
    def endpoint(self) -> str:
        return f"local:{os.path.basename(self.path)}:{self._identity}"

    def _run(
        self, messages: list[Message], config: GenerateConfig, schema: dict[str, Any] | None
    ) -> RawResponse:
        engine = load_engine(self.path, self.options.n_ctx, self.options.n_threads)
        msgs = [{"role": m.role, "content": m.content} for m in messages]
        free = schema is not None and self.options.decoding == "free"
        if free:
            assert schema is not None
            msgs.insert(0, {"role": "system", "content": schema_instructions(schema)})
        kwargs: dict[str, Any] = {
            "messages": msgs,
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
        }
        if config.seed is not None:
            kwargs["seed"] = config.seed
        if config.stop:
            kwargs["stop"] = list(config.stop)
        if schema is not None and not free:
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        try:
            out = engine.create_chat_completion(**kwargs)
        except ValueError as e:  # e.g. prompt longer than the context window
            raise ProviderError(f"embedded model failed: {e}") from e
        choice = out["choices"][0]
        u = out.get("usage") or {}
        return RawResponse(
            text=choice["message"].get("content") or "",
            usage=Usage(u.get("prompt_tokens", 0), u.get("completion_tokens", 0)),
            finish_reason=choice.get("finish_reason") or "stop",
        )

    async def complete(
        self, messages: list[Message], config: GenerateConfig, schema: dict[str, Any] | None
    ) -> RawResponse:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(engine_thread(), self._run, messages, config, schema)


register_provider("local", LocalLlamaAPI)
