"""Serving the review app on 127.0.0.1: in the foreground for `aart review`, or in a
background thread (tests, notebooks)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from .app import create_app, new_token
from .session import Review


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ReviewServer:
    def __init__(self, review: Review, port: int | None = None) -> None:
        import uvicorn

        self.review = review
        self.port = port or free_port()
        self.token = new_token()
        app = create_app(review, self.token, self.port)
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", access_log=False
        )
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The address to open: it carries the access token."""
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def serve(self) -> None:
        """In the foreground, until Ctrl-C."""
        self.server.run()

    def start(self) -> ReviewServer:
        self._thread = threading.Thread(target=self.server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> ReviewServer:
        return self.start()

    def __exit__(self, *_: Any) -> None:
        self.stop()
