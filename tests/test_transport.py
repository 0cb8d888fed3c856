"""The transport seam: how a call travels is one object chosen once by an Execution, and the
model layer stands on its own (its storage is a protocol that aart.store implements)."""

from __future__ import annotations

import ast
import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from aart.errors import UsageError
from aart.llm import GenerateConfig, Message, ModelOptions
from aart.llm.factory import ModelFactory
from aart.llm.providers.base import create_api
from aart.llm.transport.base import Execution
from aart.llm.transport.batch import BatchSettings
from aart.llm.transport.direct import DIRECT
from aart.llm.transport.ray import RaySettings
from aart.llm.types import Call, RawResponse, Usage

LLM = Path(__file__).resolve().parents[1] / "src" / "aart" / "llm"
#: what the model layer may not import: the layers above it
ABOVE = ("aart.store", "aart.jobs", "aart.steps", "aart.redteam", "aart.pipeline", "aart.cli")


def test_importing_the_model_layer_imports_no_run_store():
    code = (
        "import sys, aart.llm.model, aart.llm.factory, aart.llm.transport.batch; "
        f"print(sorted(m for m in sys.modules if m.startswith({ABOVE!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_no_module_of_the_model_layer_imports_a_layer_above_it():
    bad = []
    for path in sorted(LLM.rglob("*.py")):
        package = "aart." + ".".join(path.relative_to(LLM.parent).with_suffix("").parts[:-1])
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package.rsplit(".", node.level - 1)[0] if node.level else ""
                name = f"{base}.{node.module}" if base and node.module else node.module or base
            elif isinstance(node, ast.Import):
                name = node.names[0].name
            else:
                continue
            if name.startswith(ABOVE):
                bad.append(f"{path.relative_to(LLM)}:{node.lineno} imports {name}")
    assert not bad


def test_batch_and_ray_exclude_each_other_and_nothing_scaled_goes_direct():
    with pytest.raises(UsageError, match="do not go together"):
        Execution.of(BatchSettings(), RaySettings())
    assert Execution.of().scale is None
    assert Execution.of(batch=BatchSettings()).scale == BatchSettings()
    with ModelFactory() as models:
        assert models.transport is DIRECT
        assert models.model("fake/test").transport is DIRECT


class Recording:
    """A transport that answers every call itself (httpx's MockTransport, for calls)."""

    online = True

    def __init__(self, api_kind: type) -> None:
        self.kind = api_kind
        self.calls: list[Call] = []
        self.attached: list[str] = []
        self.closed = 0

    def accepts(self, api):
        return isinstance(api, self.kind)

    def attach(self, model):
        self.attached.append(model.name)

    async def send(self, api, call):
        self.calls.append(call)
        return RawResponse(f"answer {len(self.calls)}", Usage(3, 2))

    def close(self):
        self.closed += 1


class Scale:
    """A scale setting of one's own: what Execution starts is the factory's transport."""

    def __init__(self, transport: Recording) -> None:
        self.transport = transport

    def start(self, store, budget):
        return self.transport


def test_a_factory_gives_its_transport_to_the_models_it_accepts_and_closes_it_once():
    openai = type(create_api("openai/m", ModelOptions(base_url="http://127.0.0.1:9/v1")))
    recording = Recording(openai)
    with ModelFactory(execution=Execution(Scale(recording))) as models:  # type: ignore[arg-type]
        sent = models.model("openai/m", ModelOptions(base_url="http://127.0.0.1:9/v1"))
        local = models.model("fake/test")
        assert sent.transport is recording and local.transport is DIRECT
        out = asyncio.run(sent.generate([Message("user", "hi")], GenerateConfig(0.0, 8, 1)))
    assert out.text == "answer 1" and sent.calls == 1 and sent.usage.total_tokens == 5
    assert recording.attached == ["openai/m"] and recording.closed == 1
    (call,) = recording.calls
    assert call.model == "openai/m" and call.messages == [Message("user", "hi")]
