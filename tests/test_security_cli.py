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
