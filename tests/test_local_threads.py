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


# -- the embedded model's calls are not "paid" --------------------------------------------------


def test_embedded_model_calls_are_not_labelled_paid(tmp_path):
    from aart.llm.types import CallRecord
    from aart.report.usage import calls_text
    from aart.store.db import RunDB

    db = RunDB(tmp_path / "run.db")
    fields = dict(prompt_tokens=10, completion_tokens=5, latency=0.1, finish_reason="stop")
    db.record_call(CallRecord(model="local/default", cache_key="k1", tag="t", cost=0.0, **fields))
    db.record_call(CallRecord(model="local/default", cache_key="k2", tag="t", cost=0.0, **fields))
    u = db.call_totals()
    assert u["local_calls"] == 2
    assert calls_text(u) == "2 embedded-model calls (no cost)"
    db.record_call(CallRecord(model="openai/x", cache_key="k3", tag="t", cost=0.01, **fields))
    db.record_call(CallRecord(model="http/app", cache_key="k4", tag="t", cost=0.0, **fields))
    text = calls_text(db.call_totals())
    assert text == "1 paid call and 2 embedded-model calls (no cost) and 1 call to the target"
    assert calls_text({"calls": 0}) == "0 paid calls"
    db.record_call(CallRecord(model="fake/test", cache_key="k5", tag="t", cost=0.0, **fields))
    assert "(no cost) and 1 fake-model call (no cost) and 1 call" in calls_text(db.call_totals())


def test_the_dry_run_counts_the_embedded_model_reading_its_prompts():
    """An injection case's generation prompt is ~500-1,000 tokens for ~100 written: the time
    of reading it was left out (the small size's estimate said ~1m36s; it took 12 minutes)."""
    import aart
    from aart.steps.dryrun import LOCAL_SPEEDS

    for model in LOCAL_SPEEDS:
        est = aart.dry_run("email-assistant", size="small", model=model)
        read, write = LOCAL_SPEEDS[model]
        least = est["generate_prompt_tokens"] / read + est["generate_completion_tokens"] / write
        assert est["seconds"] >= least > est["generate_completion_tokens"] / 20
    slow = aart.dry_run("email-assistant", size="small", model="local/qwen2.5-coder-1.5b")
    fast = aart.dry_run("email-assistant", size="small", model="local/default")
    assert slow["seconds"] > 2 * fast["seconds"]  # the 1.5B is about three times slower
