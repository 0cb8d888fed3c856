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
from pathlib import Path

from ..errors import UsageError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no advisory locks, one process at a time
    fcntl = None  # type: ignore[assignment]


class RunInUse(UsageError):
    """Another process is working in this directory."""


class DirLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _describe(os.read(fd, 4096))
                os.close(fd)
                raise RunInUse(
                    f"{self.path.parent} is in use by another aart process ({holder}); wait "
                    "for it to finish, then re-run this command to continue from where it got, "
                    "or give another --out"
                ) from None
        os.ftruncate(fd, 0)
        info = {
            "pid": os.getpid(),
            "command": " ".join(["aart", *sys.argv[1:]])[:300],
            "since": time.strftime("%Y-%m-%d %H:%M:%S"),
        }
        os.write(fd, json.dumps(info).encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None


def dir_lock(root: Path) -> DirLock:
    """The lock of a run (or attack, or baseline) directory."""
    return DirLock(root / "run.db.lock")


def _describe(raw: bytes) -> str:
    try:
        info = json.loads(raw.decode() or "{}")
        return f"pid {info['pid']}: {info['command']}, since {info['since']}"
    except (ValueError, KeyError, UnicodeDecodeError):
        return "holder unknown"
