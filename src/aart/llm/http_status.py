"""One policy for HTTP error answers, shared by the model providers and the HTTP targets:
which statuses are worth a retry, which mean the endpoint itself is unusable, and the error
each one raises."""

from __future__ import annotations

import email.utils
import re
import time
from typing import Any

from ..errors import ContentRejected, EndpointDown, ProviderError, TargetError, TransientError

# Worth another try after a pause: timeouts, conflicts, rate limits and server errors.
RETRYABLE = frozenset({408, 409, 425, 429})
# Every call would fail the same way (wrong key, no permission, wrong URL or model name):
# the run stops at the first one instead of failing job after job.
ENDPOINT_FAULTS = frozenset({401, 403, 404, 405})


# Answers about one request, not the endpoint: a prompt over the context window is that job's
# failure, a content-policy rejection is a refusal. Neither says the endpoint is down, and
# neither may downgrade a structured-output mode.
_CONTEXT_LENGTH = re.compile(
    r"context.length|context window|maximum context|too many tokens|prompt is too long", re.I
)
_CONTENT_POLICY = re.compile(
    r"content.?policy|content.?filter|content_management|invalid_prompt|responsible ?ai|safety",
    re.I,
)


#: the most of one HTTP answer that is read: a larger one fails its call (what is kept of an
#: answer is bounded further, see aart.llm.types.answer_limit)
MAX_REPLY_BYTES = 64 << 20


async def read_bounded(stream: Any, limit: int = MAX_REPLY_BYTES) -> bytes | None:
    """At most ``limit`` bytes of a body (an aiohttp StreamReader), or None when it holds
    more (not read further)."""
    parts: list[bytes] = []
    size = 0
    async for chunk in stream.iter_any():
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
    return b"".join(parts)


def decode_body(resp: Any, data: bytes) -> str:
    """A body as text, in the charset its headers name (UTF-8 when they name none, or one
    that does not exist: a reply is data, never a reason to crash)."""
    try:
        return str(data.decode(resp.get_encoding(), "replace"))
    except (LookupError, RuntimeError, ValueError):
        return data.decode("utf-8", "replace")


def is_per_request(text: str) -> bool:
    """Whether an error answer concerns this request only (context length, content policy)."""
    return bool(_CONTEXT_LENGTH.search(text) or _CONTENT_POLICY.search(text))


def is_retryable(status: int | None) -> bool:
    return status is not None and (status in RETRYABLE or status >= 500)


def retry_later(e: ProviderError) -> bool:
    """A failure that says nothing about this request's answer: the endpoint down, or its
    retries spent on a server error, rate limit, timeout or lost connection. The job fails,
    and a re-run tries it again; any other failure (a 4xx, a content filter, an
    application's reply of the wrong shape) is this request's outcome, kept as it is."""
    if isinstance(e, TargetError):
        return False
    return isinstance(e, EndpointDown) or is_retryable(e.status) or e.status is None


def is_endpoint_fault(status: int | None) -> bool:
    return status in ENDPOINT_FAULTS


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def status_error(
    status: int,
    text: str,
    where: str,
    *,
    retry_after: str | None = None,
    auth_hint: str = "check the API key",
    not_found_hint: str = "check the URL",
) -> ProviderError:
    """The error for an HTTP answer with ``status`` >= 400 from ``where`` (a secret the
    server's text echoes is masked by :class:`ProviderError`)."""
    if is_retryable(status):
        return TransientError(
            f"HTTP {status} from {where}: {text[:200]}",
            status=status,
            retry_after=parse_retry_after(retry_after),
        )
    if status in (401, 403):
        return ProviderError(
            f"HTTP {status} from {where}: authentication failed; {auth_hint}", status=status
        )
    if status in (404, 405):
        return ProviderError(f"HTTP {status} from {where}: {not_found_hint}", status=status)
    if _CONTENT_POLICY.search(text):
        return ContentRejected(f"HTTP {status} from {where}: {text[:300]}", status=status)
    return ProviderError(
        f"HTTP {status} from {where}: {text[:300]}", status=status, per_request=is_per_request(text)
    )
