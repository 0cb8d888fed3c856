"""The exceptions aart raises on purpose.

AartError                      base; the CLI prints its message, no traceback
├── UsageError                 the user can fix the input (exit code 2)
│   ├── RecipeError            a recipe file is invalid; carries file:line:column
│   ├── ConfigError            unknown provider, missing API key, bad option
│   └── BudgetError            the planned work exceeds the recipe's budget
└── RuntimeFailure             something failed while running (exit code 1)
    ├── ProviderError          an endpoint failed after retries, or answered unusably
    │   ├── TransientError     a retryable failure (429, 5xx, timeout, connection)
    │   ├── ContentRejected    the endpoint's content filter refused this request
    │   ├── TargetError        the application answered this prompt unusably (a reply of
    │   │                      the wrong shape or type, a redirect off its origin)
    │   └── EndpointDown       every call fails (down, wrong key, unknown model): stop the run
    ├── StructuredOutputError  a model never produced valid structured output
    └── ModelFileError         a local model file is missing or corrupted

Signal                         not an error: the work waits for something outside the process
├── Deferred                   a call's answer comes with a batch (its job stays pending)
└── Exported                   the requests the jobs need were written for ``vllm run-batch``

Exit codes that are not errors' (the CLI returns them after printing its summary): 3 the
attack's ``--fail-above`` gate failed, 4 the attack was inconclusive, 5 the dataset is
incomplete (:data:`INCOMPLETE_EXIT_CODE`).
"""

from __future__ import annotations

from typing import Any

from .redaction import redact

#: `aart run` / `aart generate`: fewer than ``--min-fill`` of the blueprint's cells have a
#: prompt (or the run stopped before the top-ups): an empty or short dataset never exits 0.
INCOMPLETE_EXIT_CODE = 5


class AartError(Exception):
    """Base class; ``exit_code`` is what the CLI returns."""

    exit_code = 1


class UsageError(AartError):
    exit_code = 2


class RecipeError(UsageError):
    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
        fix: str | None = None,
    ) -> None:
        self.file, self.line, self.column, self.fix = file, line, column, fix
        where = file or "<recipe>"
        if line is not None:
            where += f":{line}"
            if column is not None:
                where += f":{column}"
        text = f"{where}: {message}"
        if fix:
            text += f"\n  fix: {fix}"
        super().__init__(text)


class ConfigError(UsageError):
    pass


class BudgetError(UsageError):
    pass


class RuntimeFailure(AartError):
    exit_code = 1


class ProviderError(RuntimeFailure):
    """``per_request``: the answer concerns this request only (say, over the context window),
    so it says nothing about the endpoint's health."""

    def __init__(
        self, message: str, *, status: int | None = None, per_request: bool = False
    ) -> None:
        self.status = status
        self.per_request = per_request
        # a server's text, quoted in the message, may echo a secret it was sent (a gateway
        # that quotes the request's headers): masked before it reaches a terminal or run.db
        super().__init__(redact(message))


class TransientError(ProviderError):
    """``congested``: the endpoint is overloaded (a 429, no first token in time), a reason to
    lower the concurrency. ``spent``: (prompt, completion) tokens the server spent on a call
    abandoned part-way (an estimate), so usage counts every call the server ran."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        congested: bool = False,
        spent: tuple[int, int] | None = None,
    ) -> None:
        self.retry_after = retry_after
        self.congested = congested or status == 429
        self.spent = spent
        super().__init__(message, status=status)


class ContentRejected(ProviderError):
    """A content-policy rejection of one request: for a generator, a refusal; for a target,
    its answer."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message, status=status, per_request=True)


class TargetError(ProviderError):
    """The application under test answered this one prompt unusably: its reply has another
    shape than the target file says, a Python target returned something other than text, or
    the reply came from another origin. That prompt's outcome (a target error, never judged),
    not a sign that the endpoint is down."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message, status=status, per_request=True)


class EndpointDown(ProviderError):
    """Not one job's failure but the endpoint's: further calls would fail the same way, so
    the run stops early with this one message (work done so far is kept). ``own``: raised
    by the job whose own call failed last (recorded as a failed job, so the message's count
    and the failed jobs agree), not by one that found the endpoint down already."""

    own = False


class StructuredOutputError(RuntimeFailure):
    def __init__(self, message: str, *, raw_text: str = "") -> None:
        self.raw_text = raw_text
        super().__init__(message)


class ModelFileError(RuntimeFailure):
    pass


class Signal(Exception):  # noqa: N818 - not an error: it tells the job system to wait
    """Not a failure: the work waits for something that happens outside this process (a
    batch the server runs, a file ``vllm run-batch`` answers). Never an :class:`AartError`,
    so no handler of errors swallows it."""


class Deferred(Signal):
    """This call's answer comes with a batch: the job stays pending until it is imported."""


class Exported(Signal):
    """Batch mode with export: the requests the jobs need are written for ``vllm run-batch``;
    ``files`` is [(path, model, requests)]."""

    def __init__(self, files: list[tuple[Any, str, int]], waiting: int) -> None:
        self.files = files
        #: requests exported earlier whose answers were not imported yet
        self.waiting = waiting
        super().__init__(f"{sum(n for _, _, n in files)} requests exported")
