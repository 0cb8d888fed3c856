"""Serving the review app on 127.0.0.1: in the foreground for `aart review`, or in a
background thread (tests, notebooks)."""

from __future__ import annotations

import errno
import html
import os
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .app import OneTimeCodes, create_app, new_token
from .session import Review


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listen(port: int | None) -> socket.socket:
    """A listening socket on 127.0.0.1:``port`` (a free port when None), bound before the
    URL is printed: a port out of range or in use is a one-line usage error (exit code 2),
    never uvicorn's traceback or its exit code 3, which is the --fail-above gate's."""
    if port is not None and not 1 <= port <= 65535:
        raise UsageError(
            f"port {port} is out of range: give --port a number from 1 to 65535, or leave it "
            "out for a free port"
        )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
    try:
        sock.bind(("127.0.0.1", port or 0))
        sock.listen(128)
    except OSError as e:
        sock.close()
        why = (
            "is in use (another aart review?)"
            if e.errno == errno.EADDRINUSE
            else (f"cannot be opened ({e.strerror})")
        )
        raise UsageError(
            f"port {port} on 127.0.0.1 {why}: give another --port, or leave it out for a free port"
        ) from None
    return sock


class ReviewServer:
    def __init__(self, review: Review, port: int | None = None) -> None:
        import uvicorn

        self.review = review
        self.socket = listen(port)
        self.port = int(self.socket.getsockname()[1])
        self.token = new_token()
        self.once = OneTimeCodes()
        self._launch_dirs: list[Path] = []
        app = create_app(review, self.token, self.port, self.once)
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", access_log=False
        )
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The address to open: it carries the access token."""
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def launch_url(self) -> str:
        """A ``file://`` URL for the browser launcher: a page readable by this user only that
        opens a one-time login link, so the token stays off every command line (``ps``). The
        file is removed once used, and when the server stops."""
        folder = Path(tempfile.mkdtemp(prefix="aart-review-"))  # mode 0700
        self._launch_dirs.append(folder)
        path = folder / "open.html"
        code = self.once.new(lambda: path.unlink(missing_ok=True))
        link = html.escape(f"http://127.0.0.1:{self.port}/open?once={code}", quote=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(
                "<!DOCTYPE html><meta charset='utf-8'><title>aart review</title>"
                f"<meta http-equiv='refresh' content='0;url={link}'>"
                f"<p><a href='{link}'>open aart review</a></p>"
            )
        return path.as_uri()

    def serve(self) -> None:
        """In the foreground, until Ctrl-C."""
        try:
            self.server.run(sockets=[self.socket])
        finally:
            self.close()

    def start(self) -> ReviewServer:
        """In a background thread. The socket listens already, so a request made now waits
        for the app rather than failing; this returns once uvicorn has started (or died)."""
        self._thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True
        )
        self._thread.start()
        while not self.server.started and self._thread.is_alive():
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self.close()

    def close(self) -> None:
        self.socket.close()
        for folder in self._launch_dirs:
            shutil.rmtree(folder, ignore_errors=True)

    def __enter__(self) -> ReviewServer:
        return self.start()

    def __exit__(self, *_: Any) -> None:
        self.stop()
