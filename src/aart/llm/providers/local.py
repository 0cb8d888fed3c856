"""The embedded model through llama-cpp-python, with JSON-Schema-constrained decoding."""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ...errors import ConfigError, ProviderError
from ...injection import ToolSpec
from ..local_model import EMBEDDED, INSTALL_HINT, resolve_model_path
from ..structured import schema_instructions
from ..types import GenerateConfig, Message, RawResponse, Usage, bounded_call, inline_calls
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


#: the environment variable that sets llama.cpp's thread count when the options do not (on a
#: machine shared with other work, one thread each runs faster than threads waiting on each other)
THREADS_ENV = "AART_LOCAL_THREADS"


def threads(n_threads: int | None) -> int:
    """The engine's thread count: the options', else AART_LOCAL_THREADS, else the cores."""
    if n_threads:
        return n_threads
    raw = os.environ.get(THREADS_ENV, "").strip()
    if raw:
        try:
            n = int(raw)
        except ValueError:
            n = 0
        if n < 1:
            raise ConfigError(
                f"{THREADS_ENV}={raw!r} is not a positive whole number; set it to 1, 2, ..."
            )
        return n
    return os.cpu_count() or 2


def load_engine(path: str, n_ctx: int, n_threads: int | None) -> Any:
    n = threads(n_threads)
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
                    n_threads=n,
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

    takes_tools = True

    async def complete_tools(
        self, messages: list[Message], config: GenerateConfig, tools: tuple[ToolSpec, ...]
    ) -> RawResponse:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(engine_thread(), self._run_tools, messages, config, tools)

    def _run_tools(
        self, messages: list[Message], config: GenerateConfig, tools: tuple[ToolSpec, ...]
    ) -> RawResponse:
        """A completion offering tools, in the layout of llama-cpp-python's
        ``chatml-function-calling`` format (the tools listed in the system turn; the answer
        begins ``message:`` or ``functions.<name>:``), decoded here in two grammar-bound
        stages: which of the two (temperature 0), then the message, or the call's arguments
        under the tool's JSON schema. That format's own handler (0.3.x) bounds a message by
        the grammar of a call, so a reply of text comes out empty; hence ours. One call a
        step (the agent's loop asks again after answering it)."""
        from llama_cpp import LlamaGrammar
        from llama_cpp.llama_grammar import JSON_GBNF

        engine = load_engine(self.path, self.options.n_ctx, self.options.n_threads)
        prompt = tool_prompt(messages, tools)
        names = " | ".join(f'"functions.{t.name}:"' for t in tools)
        common: dict[str, Any] = {"seed": config.seed} if config.seed is not None else {}
        try:
            first = engine.create_completion(
                prompt=prompt,
                max_tokens=32,
                temperature=0.0,
                grammar=LlamaGrammar.from_string(
                    f'root ::= "message:" | functions\nfunctions ::= {names}\n', verbose=False
                ),
                **common,
            )
            choice = first["choices"][0]["text"].strip()
            usage = Usage(*_tokens(first))
            tool = next((t for t in tools if choice == f"functions.{t.name}:"), None)
            kwargs: dict[str, Any] = {
                "max_tokens": config.max_tokens,
                "temperature": config.temperature,
                "stop": ["<|im_end|>", *config.stop],
                **common,
            }
            if tool is None:
                out = engine.create_completion(prompt=prompt + "message:\n", **kwargs)
            else:
                try:
                    grammar = LlamaGrammar.from_json_schema(
                        json.dumps(tool.parameters), verbose=False
                    )
                except Exception:  # a schema its converter does not take: any JSON
                    grammar = LlamaGrammar.from_string(JSON_GBNF, verbose=False)
                out = engine.create_completion(
                    prompt=prompt + f"functions.{tool.name}:\n", grammar=grammar, **kwargs
                )
        except ValueError as e:  # e.g. prompt longer than the context window
            raise ProviderError(f"embedded model failed: {e}") from e
        text = out["choices"][0]["text"]
        usage.add(Usage(*_tokens(out)))
        finish = out["choices"][0].get("finish_reason") or "stop"
        if tool is None:
            said, calls = inline_calls(text, tools)
            if calls:  # the model wrote its calls in the message, in the format's words
                return RawResponse(
                    text=said, usage=usage, finish_reason="tool_calls", tool_calls=calls
                )
            return RawResponse(text=said, usage=usage, finish_reason=finish)
        return RawResponse(
            text="",
            usage=usage,
            finish_reason="tool_calls" if finish == "stop" else finish,
            tool_calls=[bounded_call(tool.name, text.strip(), "call_0")],
        )


def _tokens(out: Any) -> tuple[int, int]:
    u = out.get("usage") or {}
    return u.get("prompt_tokens", 0), u.get("completion_tokens", 0)


#: the instructions of llama-cpp-python's chatml-function-calling format, after the tools
_TOOL_INSTRUCTIONS = (
    "\n\nYou can respond to users messages with either a single message or one or more "
    "function calls.\n\nTo respond with a message begin the message with 'message:', use "
    "the following format:\n\nmessage:\n<message>\n\nTo respond with one or more function "
    "calls begin the message with 'functions.<function_name>:', use the following format:"
    '\n\nfunctions.<function_name>:\n{ "arg1": "value1", "arg2": "value2" }'
)


def tool_prompt(messages: list[Message], tools: tuple[ToolSpec, ...]) -> str:
    """The ChatML prompt of a call offering ``tools``: the system turn lists them (one is
    added when the conversation has none: the format would list no tool then), an earlier
    call is written ``functions.<name>:`` and its arguments, and a tool's result is a user
    turn saying which tool returned it (the format has no tool turn)."""
    listing = "\n\nYou have access to the following functions:\n" + "".join(
        f"\nfunctions.{t.name}:\n{json.dumps(t.parameters)}\n" for t in tools
    )
    turns = list(messages)
    if not any(m.role == "system" for m in turns):
        turns.insert(0, Message("system", "You are a helpful assistant."))
    out = []
    listed = False
    for m in turns:
        if m.role == "system" and not listed:
            body, listed = m.content + listing + _TOOL_INSTRUCTIONS, True
            out.append(f"<|im_start|>system\n{body}<|im_end|>\n")
        elif m.role == "tool":
            out.append(
                f"<|im_start|>user\n[result of the tool {m.name or 'call'}]\n{m.content}<|im_end|>\n"
            )
        elif m.role == "assistant":
            parts = [f"message:\n{m.content}"] if m.content else []
            parts += [
                f"functions.{c.name}:\n{c.raw or json.dumps(c.arguments)}" for c in m.tool_calls
            ]
            out.append(f"<|im_start|>assistant\n{chr(10).join(parts)}<|im_end|>\n")
        else:
            out.append(f"<|im_start|>{m.role}\n{m.content}<|im_end|>\n")
    return "".join(out) + "<|im_start|>assistant\n"


register_provider("local", LocalLlamaAPI)
