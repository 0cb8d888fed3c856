"""One writer per run directory: an advisory lock (``flock``) next to ``run.db``.

A second process on the same directory is refused with who holds it, instead of repeating paid
work or racing on the output files. The operating system drops the lock when its holder exits,
however it exits (SIGKILL included), so a crashed run never leaves a stale lock behind.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import UsageError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no advisory locks, one process at a time
    fcntl = None  # type: ignore[assignment]


class RunInUse(UsageError):
    """Another process is working in this directory."""


class DirLock:
    """``shared``: workers that split a run's jobs by lease (`aart generate`, `aart attack`)
    share the directory; every other writer needs it alone."""

    def __init__(self, path: Path, shared: bool = False) -> None:
        self.path = path
        self.shared = shared
        self._fd: int | None = None

    def acquire(self, wait: Callable[[str], None] | None = None) -> None:
        """Take the lock, or raise RunInUse naming its holder; with ``wait``, tell it who
        holds the lock and wait for it instead."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is not None:
            mode = fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _describe(os.read(fd, 4096))
                if wait is None:
                    os.close(fd)
                    raise RunInUse(
                        f"{self.path.parent} is in use by another aart process ({holder}); "
                        "wait for it to finish, then re-run this command to continue from "
                        "where it got, or give another --out"
                    ) from None
                wait(holder)
                fcntl.flock(fd, mode)
        os.ftruncate(fd, 0)
        info = {
            "pid": os.getpid(),
            "command": " ".join(["aart", *sys.argv[1:]])[:300],
            "since": time.strftime("%Y-%m-%d %H:%M:%S"),
        }
        os.write(fd, json.dumps(info).encode())
        self._fd = fd

    def share(self) -> None:
        """From alone to shared: `aart run`, past Step 2, lets `aart generate` workers join."""
        if self._fd is not None and fcntl is not None and not self.shared:
            fcntl.flock(self._fd, fcntl.LOCK_SH)
            self.shared = True

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None


def dir_lock(root: Path, shared: bool = False) -> DirLock:
    """The lock of a run (or attack, or baseline) directory."""
    return DirLock(root / "run.db.lock", shared)


class OutputLock:
    """Held (waiting for it) while a process writes a run's output files, so cooperating
    workers write them one at a time."""

    def __init__(self, root: Path) -> None:
        self.path = root / "outputs.lock"
        self._fd: int | None = None

    def __enter__(self) -> OutputLock:
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is not None:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *_: object) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _describe(raw: bytes) -> str:
    try:
        info = json.loads(raw.decode() or "{}")
        return f"pid {info['pid']}: {info['command']}, since {info['since']}"
    except (ValueError, KeyError, UnicodeDecodeError):
        return "holder unknown"
