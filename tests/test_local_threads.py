"""AART_LOCAL_THREADS sets the embedded engine's thread count when the options do not."""

import sys
import types

import pytest

from aart.errors import ConfigError
from aart.llm.providers import local


@pytest.fixture
def fake_llama(monkeypatch):
    made = []

    class Llama:
        def __init__(self, **kwargs):
            made.append(kwargs)

        def close(self):
            pass

    monkeypatch.setitem(sys.modules, "llama_cpp", types.SimpleNamespace(Llama=Llama))
    monkeypatch.setattr(local, "_ENGINES", {})
    return made


def test_the_variable_sets_the_threads(fake_llama, monkeypatch):
    monkeypatch.setenv("AART_LOCAL_THREADS", "1")
    local.load_engine("/m.gguf", 512, None)
    assert fake_llama[-1]["n_threads"] == 1


def test_the_options_win_over_the_variable(fake_llama, monkeypatch):
    monkeypatch.setenv("AART_LOCAL_THREADS", "1")
    local.load_engine("/m.gguf", 512, 3)
    assert fake_llama[-1]["n_threads"] == 3


def test_unset_takes_the_cores(fake_llama, monkeypatch):
    monkeypatch.delenv("AART_LOCAL_THREADS", raising=False)
    monkeypatch.setattr(local.os, "cpu_count", lambda: 7)
    local.load_engine("/m.gguf", 512, None)
    assert fake_llama[-1]["n_threads"] == 7


@pytest.mark.parametrize("raw", ["0", "two", "-1"])
def test_a_bad_value_is_a_clear_error(fake_llama, monkeypatch, raw):
    monkeypatch.setenv("AART_LOCAL_THREADS", raw)
    with pytest.raises(ConfigError, match="AART_LOCAL_THREADS"):
        local.load_engine("/m.gguf", 512, None)
    assert not fake_llama
