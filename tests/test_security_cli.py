"""What the security review did through the CLI (issue 18, items 21 and 23): options that
would switch the gate off, bindings of hosts that are not URLs, and untrusted text that
would drive the terminal."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(300)


def aart(*args: str, cwd=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aart", *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=cwd,
    )


@pytest.fixture
def dataset(tmp_path):
    path = tmp_path / "dataset.jsonl"
    path.write_text(
        json.dumps({"id": "r0", "prompt": "a mild test prompt", "axes": {}, "annotations": {}})
        + "\n"
    )
    return path


@pytest.mark.parametrize(
    "option",
    [
        ("--fail-above", "nan"),
        ("--fail-above", "NaN"),
        ("--fail-above", "inf"),
        ("--min-judged", "nan"),
        ("--min-judged", "-inf"),
        ("--max-cost", "nan"),
        ("--max-cost", "inf"),
    ],
)
def test_a_gate_option_that_is_not_a_finite_number_is_a_usage_error(tmp_path, dataset, option):
    out = tmp_path / "att"
    r = aart("attack", str(dataset), "--target", "fake/t", "--out", str(out), *option)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"Invalid value for '{option[0]}'" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


@pytest.mark.parametrize("price", ["fake/t=nan,1", "fake/t=1,nan", "fake/t=inf,1"])
def test_a_price_that_is_not_a_finite_number_is_a_usage_error(tmp_path, dataset, price):
    out = tmp_path / "att"
    r = aart("attack", str(dataset), "--target", "fake/t", "--out", str(out), "--price", price)
    assert r.returncode == 2 and "--price" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("setting", ["budget: {max_cost: .nan}", "budget: {max_cost: .inf}"])
def test_a_recipe_number_that_is_not_finite_is_a_located_error(tmp_path, setting):
    from conftest import MINI_RECIPE, write_recipe

    from aart.errors import RecipeError
    from aart.recipe import load_recipe

    with pytest.raises(RecipeError, match=r"recipe.yaml:\d+:\d+: budget.max_cost"):
        load_recipe(write_recipe(tmp_path, MINI_RECIPE + setting + "\n"))


@pytest.mark.parametrize(
    ("url", "fix"),
    [
        ("support.example.com", "use https://support.example.com"),
        ("support.example.com:8443", "use https://support.example.com:8443"),
        ("http://", "http(s) URL with a host"),
        ("ftp://files.example.com", "http(s) URL with a host"),
        ("https://support.example.com:99999", "valid port"),
    ],
)
def test_endpoints_allow_refuses_anything_but_an_http_url_with_a_host(url, fix):
    from aart.llm import endpoints

    r = aart("endpoints", "allow", url, "--key-env", "SUPPORT_BOT_TOKEN")
    assert r.returncode == 2 and fix in r.stderr and "Traceback" not in r.stderr
    assert not endpoints.config_path().exists()  # nothing stored


def test_endpoints_allow_accepts_a_url():
    r = aart("endpoints", "allow", "https://support.example.com", "--key-env", "SUPPORT_BOT_TOKEN")
    assert r.returncode == 0 and "https://support.example.com:443" in r.stdout


EVIL = (
    "\x1b[2J"  # clear the screen
    "\x1b]52;c;ZXZpbA==\x07"  # write the clipboard
    "\x1b[32mgate passed\x1b[0m"  # a fake verdict, in green
    "\x1b]8;;http://x.invalid\x1b\\link\x1b]8;;\x1b\\"  # a hidden link
    "\x9b2J\r\x08"  # 8-bit CSI, carriage return, backspace
)


def test_terminal_safe_removes_every_control_sequence_and_keeps_the_text():
    from aart.textsafe import terminal_safe

    assert terminal_safe("plain\ttext\nline two") == "plain\ttext\nline two"
    assert terminal_safe("before " + EVIL + " after") == "before gate passedlink after"
    assert terminal_safe("unterminated \x1b]52;c;ZXZpbA==") == "unterminated "
    assert terminal_safe("caf\u00e9 \u2713") == "caf\u00e9 \u2713"  # printable text untouched


def test_a_dataset_value_with_escape_sequences_does_not_reach_the_terminal(tmp_path):
    path = tmp_path / "evil.jsonl"
    rows = [
        {
            "id": f"r{i}",
            "prompt": f"a mild test prompt number {i} {EVIL}",
            "axes": {"topic": ["unmatched " + EVIL if i % 2 else "plain"]},
        }
        for i in range(6)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = aart("evaluate", str(path))
    assert r.returncode == 0, r.stderr
    assert "never matched" in r.stdout and "unmatched" in r.stdout  # the value is shown ...
    for control in ("\x1b", "\x07", "\x9b", "\x9d", "\r", "\x08"):  # ... without its controls
        assert control not in r.stdout and control not in r.stderr
