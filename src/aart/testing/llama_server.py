"""llama-cpp-python's own OpenAI-compatible server (`python -m llama_cpp.server`) serving the
embedded model on 127.0.0.1, for tests and benchmarks against a real server:

    with LlamaServer() as url:   # e.g. http://127.0.0.1:40123/v1, model name "qwen"
        ...
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request

from ..llm.local_model import default_model_path

MODEL_ALIAS = "qwen"


class LlamaServer:
    def __init__(
        self, startup_timeout: float = 600.0, n_ctx: int = 4096, chat_format: str | None = None
    ) -> None:
        # generous: loading the model on a loaded machine is slow, not wrong; a server that
        # exits fails at once
        self.startup_timeout = startup_timeout
        self.n_ctx = n_ctx
        #: llama-cpp-python's chat format (``chatml-function-calling`` parses tool calls);
        #: None: the model's own template
        self.chat_format = chat_format
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self) -> str:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(default_model_path())]
        cmd += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(self.n_ctx)]
        cmd += ["--model_alias", MODEL_ALIAS]
        if self.chat_format:
            cmd += ["--chat_format", self.chat_format]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.url}/models", timeout=1).read()
                return self.url
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"llama-cpp-python's server did not start: {' '.join(cmd)}")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
