"""Targets: the application under test. Each is a ModelAPI, so attacks get the same
concurrency, retries, rate limits, cache and accounting as generation.

- ``openai/<model>`` or ``local/<model>``: a chat model with the application's system prompt;
- ``path/to/target.yaml``: a generic HTTP target (method, url, headers with ${ENV} secrets,
  JSON body template, JSONPath to the reply), for applications behind their own API;
- ``module:function``: a Python callable, sync or async, taking (prompt) or (prompt, system).

An injection case (``redteam.agent``) reaches an HTTP target as ``{{ context }}`` and
``{{ tools }}`` in its body template (the calls it made read back at its ``tool_calls`` path),
and a Python target as ``f(prompt, context=..., tools=...)``, which may return the reply's
text or an OpenAI-style message (``{"content": ..., "tool_calls": [...]}``).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import re
import sys
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from jinja2 import StrictUndefined
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import ConfigError, ProviderError, RecipeError, TargetError, TransientError
from ..injection import ToolSpec
from ..llm import GenerateConfig, Message, ModelAPI, ModelOptions, RawResponse, create_api
from ..llm.deadline import within
from ..llm.endpoints import allowed, refuse
from ..llm.http_status import MAX_REPLY_BYTES, decode_body, read_bounded, status_error
from ..llm.providers.base import provider_names
from ..llm.types import parse_tool_calls
from ..recipe.sandbox import BoundedSandbox
from ..recipe.template import TemplateRefused, render
from ..recipe.yamlsafe import load_bounded
from ..redaction import redact, remember
from ..text.normalize import text_hash

#: redirect statuses, and how many hops a target may take
REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
_ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: the body template is a shared document's too: bounded like a recipe's, with room for a
#: multi-turn attack's history
_JINJA = BoundedSandbox(undefined=StrictUndefined, max_build=2_000_000)
_JINJA.add_filter("json", lambda v: json.dumps(v))


class HTTPTargetSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = "http-target"
    method: str = "POST"
    url: str
    headers: dict[str, str] = {}
    body: Any = Field(default_factory=lambda: {"message": "{{ prompt }}"})
    reply: str = "$.reply"
    #: where the reply lists the tool calls the application made (OpenAI-style, or
    #: ``[{name, arguments}]``), for injection cases; none: the application reports none
    tool_calls: str | None = None
    timeout: float = 60.0


def expand_env(text: str, where: str) -> str:
    """Replace ${VAR} with the environment's value; secrets never live in the file."""

    def sub(m: re.Match[str]) -> str:
        if m.group(1) not in os.environ:
            raise ConfigError(
                f"{where} uses ${{{m.group(1)}}}, which is not set: export {m.group(1)}=..."
            )
        remember(m.group(1), os.environ[m.group(1)])
        return os.environ[m.group(1)]

    return _ENV_VAR.sub(sub, text)


def render_body(
    template: Any,
    prompt: str,
    system: str,
    history: list[dict[str, str]] | None = None,
    context: str = "",
    tools: list[dict[str, Any]] | None = None,
) -> Any:
    """Render every string in the body template with ``prompt`` (the latest user turn),
    ``system``, ``history`` (the earlier turns, as role/content objects: a multi-turn
    attack's conversation), and, for an injection case, ``context`` (the carrier document)
    and ``tools`` (the application's tools, OpenAI-style). A string that is ``{{ history }}``
    or ``{{ tools }}`` alone becomes the list itself."""
    history = history or []
    tools = tools or []
    if isinstance(template, dict):
        return {
            k: render_body(v, prompt, system, history, context, tools) for k, v in template.items()
        }
    if isinstance(template, list):
        return [render_body(v, prompt, system, history, context, tools) for v in template]
    if isinstance(template, str):
        if template.strip() in ("{{ history }}", "{{history}}"):
            return history
        if template.strip() in ("{{ tools }}", "{{tools}}"):
            return tools
        values = {
            "prompt": prompt,
            "system": system,
            "history": history,
            "context": context,
            "tools": tools,
        }
        return render(template, values, _JINJA, where="body")
    return template


def mentions(template: Any, name: str) -> bool:
    """Whether the body template uses ``name`` anywhere."""
    if isinstance(template, dict):
        return any(mentions(v, name) for v in template.values())
    if isinstance(template, list):
        return any(mentions(v, name) for v in template)
    return isinstance(template, str) and name in template


@dataclass(frozen=True)
class AgentInput:
    """An injection case as an application with its own tools takes it: the user's task,
    the carrier document, the earlier turns and the system prompt, read from the tool form
    of the conversation (``redteam.agent.opening``)."""

    prompt: str
    context: str
    system: str
    history: list[dict[str, str]]

    @classmethod
    def of(cls, messages: list[Message]) -> AgentInput:
        users = [i for i, m in enumerate(messages) if m.role == "user"]
        last = users[-1] if users else len(messages) - 1
        return cls(
            prompt=messages[last].content if messages else "",
            context="\n\n".join(m.content for m in messages if m.role == "tool"),
            system="\n".join(m.content for m in messages if m.role == "system"),
            history=_turns([m for m in messages[:last] if not m.tool_calls]),
        )

    @property
    def document(self) -> str:
        """The task with the document after it, for an application that takes no context."""
        if not self.context:
            return self.prompt
        return f"{self.prompt}\n\n--- document ---\n{self.context}\n--- end of document ---"


def reply_message(out: Any, where: str) -> RawResponse:
    """An application's answer to an injection case: its reply's text, or an OpenAI-style
    message (``content`` and ``tool_calls``); anything else is a target error."""
    if isinstance(out, str):
        return RawResponse(text=out)
    if isinstance(out, dict) and ("content" in out or "tool_calls" in out):
        content = out.get("content")
        if content is not None and not isinstance(content, str):
            raise TargetError(f"{where} returned a message whose content is not text")
        calls = out.get("tool_calls") or []
        if not isinstance(calls, list):
            raise TargetError(f"{where} returned tool_calls that is not a list")
        return RawResponse(text=content or "", tool_calls=parse_tool_calls(calls))
    raise TargetError(
        f"{where} returned {type(out).__name__}: return the reply's text, or a message "
        '{"content": "...", "tool_calls": [...]}'
    )


def _turns(messages: list[Message]) -> list[dict[str, str]]:
    return [
        {"role": m.role, "content": m.content} for m in messages if m.role not in ("system", "tool")
    ]


_PATH_PART = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]|\['([^']+)'\]")


class FieldAbsent(ProviderError):
    """A path's last key is absent from an object its path before it found: the application
    left the field out (an agent that acted and said nothing may), where any other miss is a
    wrong path."""


def json_path(data: Any, path: str) -> Any:
    """A JSONPath subset: $.a.b[0]['c-d']."""
    if not path.startswith("$"):
        raise ConfigError(f"reply path {path!r} must start with $")
    pos, cur = 1, data
    while pos < len(path):
        m = _PATH_PART.match(path, pos)
        if not m:
            raise ConfigError(f"reply path {path!r}: cannot parse at {path[pos:]!r}")
        key = m.group(1) or m.group(3)
        try:
            cur = cur[int(m.group(2))] if m.group(2) is not None else cur[key]
        except (KeyError, IndexError, TypeError) as e:
            last = m.end() == len(path) and isinstance(cur, dict) and key is not None
            raise (FieldAbsent if last else ProviderError)(
                f"reply path {path!r} not found in the response ({e!r})"
            ) from e
        pos = m.end()
    return cur


#: a target file is a few lines; the bound keeps a hostile one from exhausting memory
MAX_TARGET_BYTES = 1_000_000


def load_http_spec(path: Path) -> HTTPTargetSpec:
    # a target file is a shared document: its aliases and nesting are bounded like a recipe's
    raw = path.read_bytes()
    if len(raw) > MAX_TARGET_BYTES:
        raise ConfigError(
            f"{path}: the file is {len(raw):,} bytes; a target file may have at most "
            f"{MAX_TARGET_BYTES:,}"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text; save the target file as UTF-8") from None
    _, data = load_bounded(text, str(path))
    try:
        spec = HTTPTargetSpec.model_validate(data)
    except ValidationError as e:
        # never the values: a header's (a token, a cookie) would reach the terminal and CI logs
        problems = "; ".join(
            f"{'.'.join(map(str, err['loc'])) or 'the file'}: {err['msg']}"
            for err in e.errors(include_input=False, include_url=False)
        )
        raise ConfigError(f"{path}: invalid HTTP target: {problems}") from None
    try:  # a stand-in turn, so that a bad or unbounded body fails before any call
        render_body(
            spec.body,
            "prompt",
            "system",
            [{"role": "user", "content": "earlier"}],
            "context",
            [{"type": "function", "function": {"name": "tool"}}],
        )
    except TemplateRefused as e:
        raise ConfigError(f"{path}: body: {e.reason}; fix: {e.fix}") from None
    except RecipeError as e:  # a syntax error, an unknown name
        message = str(e).removeprefix("<recipe>: ")
        raise ConfigError(
            f"{path}: {message}; fix: correct the body template (it may use {{{{ prompt }}}}, "
            "{{ system }}, {{ history }}, {{ context }} and {{ tools }})"
        ) from None
    return spec


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of a URL, the port made explicit: what a redirect may not
    leave while the request carries a secret."""
    parts = urllib.parse.urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme.lower())
    try:
        port = parts.port or default
    except ValueError:
        port = None
    return parts.scheme.lower(), (parts.hostname or "").lower(), port


class HTTPTargetAPI(ModelAPI):
    def __init__(self, spec: HTTPTargetSpec, options: ModelOptions, source: str = "") -> None:
        super().__init__(spec.name, options)
        self.spec = spec
        where = f"target file {source or spec.name}"
        # A secret in the scheme, host or port would be sent to DNS and printed in every
        # message naming the host: refused, naming the variable, never its value.
        parts = urlsplit(spec.url)
        for var in _ENV_VAR.findall(f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"):
            raise ConfigError(
                f"{where}: its url {spec.url} puts ${{{var}}} in the host; a secret may go in "
                "the headers (or the path), never in the scheme, host or port: write the host out"
            )
        # The file is a shared document: each ${VAR} it uses must be bound by the user to the
        # host it goes to, checked here, before any call.
        self.url = expand_env(spec.url, "url")
        self.headers = {k: expand_env(v, f"header {k}") for k, v in spec.headers.items()}
        for text in [spec.url, *spec.headers.values()]:
            for var in _ENV_VAR.findall(text):
                if not allowed(self.url, var, options.bound):
                    # expand_env remembered each value: the message shows ${VAR}, never it
                    raise ConfigError(redact(str(refuse(where, self.url, var))))
        #: the file sends a secret (a ${VAR} in its url or headers): no redirect off its origin
        self.templated = any(_ENV_VAR.search(t) for t in [spec.url, *spec.headers.values()])
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def endpoint(self) -> str:
        return f"http:{self.spec.method} {self.spec.url}"  # no header values: they hold secrets

    async def complete(
        self, messages: list[Message], config: GenerateConfig, schema: dict[str, Any] | None
    ) -> RawResponse:
        system = "\n".join(m.content for m in messages if m.role == "system")
        prompt = messages[-1].content
        try:
            body = render_body(self.spec.body, prompt, system, _turns(messages[:-1]))
        except RecipeError as e:  # this prompt's body only: one job's failure
            raise ProviderError(f"the target file's body: {e}", per_request=True) from None
        data, text = await self._post(body)
        return RawResponse(text=self._reply(data, text))

    takes_tools = True

    async def complete_tools(
        self, messages: list[Message], config: GenerateConfig, tools: tuple[ToolSpec, ...]
    ) -> RawResponse:
        """An injection case: the task as ``{{ prompt }}``, the document as ``{{ context }}``
        (in the prompt, after the task, when the body uses no ``context``) and the tools as
        ``{{ tools }}``; the calls it made read at the ``tool_calls`` path."""
        given = AgentInput.of(messages)
        takes_context = mentions(self.spec.body, "context")
        try:
            body = render_body(
                self.spec.body,
                given.prompt if takes_context else given.document,
                given.system,
                given.history,
                given.context,
                [t.openai() for t in tools],
            )
        except RecipeError as e:
            raise ProviderError(f"the target file's body: {e}", per_request=True) from None
        data, text = await self._post(body)
        calls: list[Any] = []
        if self.spec.tool_calls:
            try:
                found = json_path(data, self.spec.tool_calls)
            except ProviderError:
                found = []  # no call made: the application may leave the field out
            calls = found if isinstance(found, list) else []
        # it acted and said nothing: the reply's field left out (or null) beside its calls;
        # a path that misses before its last key is wrong, calls or not (a typo there would
        # make every reply empty, and a canary in them unseen)
        return RawResponse(
            text=self._reply(data, text, absent_ok=bool(calls)), tool_calls=parse_tool_calls(calls)
        )

    def _reply(self, data: Any, text: str, absent_ok: bool = False) -> str:
        try:
            reply = json_path(data, self.spec.reply)
        except FieldAbsent as e:
            if absent_ok:
                return ""
            raise TargetError(f"{e}; its reply began {text[:120]!r}") from e
        except ProviderError as e:
            raise TargetError(f"{e}; its reply began {text[:120]!r}") from e
        if reply is None:  # an OpenAI-style message that only called tools: content null
            return ""
        return reply if isinstance(reply, str) else json.dumps(reply)

    async def _post(self, body: Any) -> tuple[Any, str]:
        """The application's answer to ``body``, parsed as JSON (and its text)."""
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop:
            self._session = aiohttp.ClientSession(
                # the whole exchange, body included: a reply that never ends is cut here
                timeout=aiohttp.ClientTimeout(total=self.spec.timeout)
            )
            self._loop = loop
        try:
            status, text, retry_after = await self._exchange(body)
        except TimeoutError as e:
            raise TransientError(f"timeout from {self.spec.url}") from e
        except aiohttp.ClientError as e:
            raise TransientError(f"cannot reach {self.spec.url} ({type(e).__name__})") from e
        if status >= 400:
            raise status_error(
                status,
                text,
                self.spec.url,
                retry_after=retry_after,
                auth_hint="check the headers of the target file",
                not_found_hint="check the target file's url",
            )
        # A reply of another shape than the file says concerns this prompt (the application
        # may answer one category of prompts differently): a target error, never "down".
        try:
            data = json.loads(text)
        except ValueError as e:
            raise TargetError(
                f"{self.spec.url} answered something other than JSON ({text[:80]!r})"
            ) from e
        return data, text

    async def _exchange(self, body: Any) -> tuple[int, str, str | None]:
        """(status, text, Retry-After) of the request, following redirects by hand: within
        the target's origin always; to another origin only when the file sends no ${VAR}
        (aiohttp would carry every header but Authorization to any host the reply names)."""
        assert self._session is not None
        method, url, payload = self.spec.method, self.url, body
        for _ in range(MAX_REDIRECTS + 1):
            async with self._session.request(
                method, url, json=payload, headers=self.headers, allow_redirects=False
            ) as resp:
                location = resp.headers.get("location")
                if resp.status not in REDIRECTS or not location:
                    data = await read_bounded(resp.content, MAX_REPLY_BYTES)
                    if data is None:
                        raise TargetError(
                            f"{self.spec.url} answered more than {MAX_REPLY_BYTES >> 20} MB; "
                            "not read"
                        )
                    text = decode_body(resp, data)
                    return resp.status, text, resp.headers.get("retry-after")
                status = resp.status
            nxt = urllib.parse.urljoin(url, location)
            if origin(nxt) != origin(url) and self.templated:
                raise TargetError(
                    f"{self.spec.url} redirected (HTTP {status}) to another origin, "
                    f"{nxt.split('?')[0][:120]}: aart sends the target file's headers, which hold "
                    "${VAR} secrets, to no other host, and scores no other host's reply; "
                    "if that host is the application, give it as the url"
                )
            if status == 303 or (status in (301, 302) and method == "POST"):
                method, payload = "GET", None  # as browsers (and aiohttp) do
            url = nxt
        raise TargetError(f"{self.spec.url} redirected more than {MAX_REDIRECTS} times")

    async def aclose(self) -> None:
        if self._session is not None and self._loop is asyncio.get_running_loop():
            await self._session.close()
        self._session = None


class CallableTargetAPI(ModelAPI):
    manages_deadlines = True  # its own timeout, not retried (see complete)

    def __init__(self, ref: str, fn: Callable[..., Any], options: ModelOptions) -> None:
        super().__init__(ref, options)
        self.fn = fn
        params = inspect.signature(fn).parameters
        # f(messages=[...]) receives the whole conversation (a multi-turn attack's); a
        # function that also asks for the prompt (f(prompt, messages=None)) gets it too
        self.takes_messages = "messages" in params
        self.required = sum(
            1
            for p in params.values()
            if p.name != "messages"
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            and p.default is p.empty
        )
        self.takes_system = len(params) >= 2
        # f(prompt, context=..., tools=...): an application with tools (injection cases)
        self.takes_context = "context" in params
        self.takes_tool_list = "tools" in params

    takes_tools = True

    async def complete_tools(
        self, messages: list[Message], config: GenerateConfig, tools: tuple[ToolSpec, ...]
    ) -> RawResponse:
        """An injection case: ``f(task, context=document, tools=[...])``, or, for a
        function that takes no context, ``f(task with the document after it)``."""
        given = AgentInput.of(messages)
        kwargs: dict[str, Any] = {}
        if self.takes_context:
            kwargs["context"] = given.context
        if self.takes_tool_list:
            kwargs["tools"] = [t.openai() for t in tools]
        if self.takes_messages:
            kwargs["messages"] = [m.openai() for m in messages]
            args: tuple[Any, ...] = (given.prompt, given.system)[: min(self.required, 2)]
        else:
            prompt = given.prompt if self.takes_context else given.document
            args = (prompt, given.system) if self.takes_system and not kwargs else (prompt,)
        out = await self._answer(args, kwargs)
        return reply_message(out, f"python target {self.model}")

    async def _answer(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            return await within(self._invoke(args, kwargs), self.options.timeout)
        except TimeoutError as e:
            raise ProviderError(
                f"python target {self.model} did not answer within {self.options.timeout}s"
            ) from e

    async def complete(
        self, messages: list[Message], config: GenerateConfig, schema: dict[str, Any] | None
    ) -> RawResponse:
        system = "\n".join(m.content for m in messages if m.role == "system")
        kwargs: dict[str, Any] = {}
        args: tuple[Any, ...] = ()
        if self.takes_messages:
            kwargs["messages"] = [{"role": m.role, "content": m.content} for m in messages]
            args = (messages[-1].content, system)[: min(self.required, 2)]
        elif self.takes_system:
            args = (messages[-1].content, system)
        else:
            args = (messages[-1].content,)
        try:
            # within, not wait_for: a Ctrl-C landing with the answer is not dropped
            out = await within(self._invoke(args, kwargs), self.options.timeout)
        except TimeoutError as e:
            # not retried: a thread cannot be stopped, so each retry would leave one more
            raise ProviderError(
                f"python target {self.model} did not answer within {self.options.timeout}s"
            ) from e
        if not isinstance(out, str):
            # a dict or None stringified would be judged as if the application had said it
            raise TargetError(
                f"python target {self.model} returned {type(out).__name__}, not str: return "
                "the reply's text"
            )
        return RawResponse(text=out)

    async def _invoke(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            if inspect.iscoroutinefunction(self.fn):
                return await self.fn(*args, **kwargs)
            return await _in_daemon_thread(self.fn, *args, **kwargs)
        except Exception as e:  # the application's own failure on this prompt: its job's
            raise ProviderError(
                f"python target {self.model} raised {type(e).__name__}: {str(e)[:200]}"
            ) from e


def _in_daemon_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> asyncio.Future[Any]:
    """``fn`` in a thread of its own that never holds the process up: a target that hangs
    past its timeout would otherwise keep the attack from ending (asyncio.run, and the
    interpreter's exit, wait for the threads of the default executor)."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not fut.done():
            fut.set_result(value) if ok else fut.set_exception(value)

    def run() -> None:
        try:
            outcome = (True, fn(*args, **kwargs))
        except Exception as e:
            outcome = (False, e)
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:
            pass  # the loop is gone: nobody waits for this answer any more

    threading.Thread(target=run, name="aart-python-target", daemon=True).start()
    return fut


class ReplayAPI(ModelAPI):
    """An earlier attack's saved results, by prompt and strategy: re-judging them calls no
    target (nor attacker). The attack's executor looks them up; nothing sends to this API."""

    default_concurrency = 8

    def __init__(self, name: str, saved: dict[str, dict[str, Any]], options: ModelOptions) -> None:
        super().__init__(name, options)
        self.saved = saved

    @staticmethod
    def key(prompt: str, strategy: str) -> str:
        return f"{text_hash(prompt)}|{strategy}"

    def lookup(self, prompt: str, strategy: str) -> dict[str, Any]:
        rec = self.saved.get(self.key(prompt, strategy))
        if rec is None:
            raise ProviderError(
                f"the earlier attack saved no response for this prompt under {strategy}"
            )
        if rec.get("response") is None:
            raise ProviderError(rec.get("target_error") or "target error", status=400)
        return rec

    @property
    def endpoint(self) -> str:
        return f"replay:{self.model}"

    async def complete(
        self, messages: list[Message], config: GenerateConfig, schema: dict[str, Any] | None
    ) -> RawResponse:
        raise ProviderError("a replayed attack sends nothing to its target")


def load_callable(ref: str) -> Callable[..., Any]:
    """``module:function`` from the import path, the current directory first (as `python -m`
    would have it), so `--target mytarget:reply` finds ./mytarget.py."""
    module, _, attr = ref.partition(":")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise ConfigError(
            f"cannot load target {ref!r}: {e}; give module:function importable from here"
        ) from None
    if not callable(fn):
        raise ConfigError(f"target {ref!r} is not callable")
    return fn


def create_target(spec: str, options: ModelOptions | None = None) -> tuple[str, ModelAPI]:
    """(display name, api) for a target given on the command line."""
    options = options or ModelOptions()
    path = Path(spec)
    if spec.endswith((".yaml", ".yml")):
        if not path.exists():
            raise ConfigError(f"HTTP target file {spec} does not exist")
        s = load_http_spec(path)
        options.timeout = max(options.timeout, s.timeout)
        return f"http/{s.name}", HTTPTargetAPI(s, options, spec)
    if "/" in spec:
        return spec, create_api(spec, options)
    if ":" in spec:
        return f"python/{spec}", CallableTargetAPI(spec, load_callable(spec), options)
    raise ConfigError(
        f"target {spec!r} is not provider/model, a target .yaml file or module:function"
    )


def is_chat_model(target: str) -> bool:
    """A provider/model target (not an HTTP target file or a Python callable)."""
    if target.endswith((".yaml", ".yml")) or "/" not in target:
        return False
    return target.partition("/")[0] in provider_names()
