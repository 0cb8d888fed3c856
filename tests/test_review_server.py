"""The review app's server without a browser: ports, bad addresses, the token's path."""

from __future__ import annotations

import hmac
import json
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from aart.errors import UsageError
from aart.review import open_review
from aart.review.server import ReviewServer


@pytest.fixture
def dataset(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("".join(
        json.dumps({"id": f"r{i}", "prompt": f"a mild test prompt {i}", "cell": {"c": "x"}}) + "\n"
        for i in range(3)
    ))  # fmt: skip
    return path


def aart_review(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "aart", "review", *args, "--no-open"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def post(url: str, data: dict, cookie: str) -> tuple[int, str]:
    req = urllib.request.Request(
        url, data=urllib.parse.urlencode(data).encode(), headers={"Cookie": cookie}
    )
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_a_port_out_of_range_is_a_usage_error(dataset):
    """Issue 18.16: `--port 99999` ended in uvicorn's OverflowError traceback."""
    review = open_review(dataset)
    with pytest.raises(UsageError, match="port 99999 is out of range"):
        ReviewServer(review, 99999)
    review.close()
    r = aart_review(str(dataset), "--port", "99999")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        "error: port 99999 is out of range: give --port a number from 1 to 65535, or leave it "
        "out for a free port"
    ]


def test_a_port_in_use_is_a_usage_error_not_the_gates_code(dataset):
    """Issue 18.16: a port in use printed the token URL, then uvicorn's error, exit code 3
    (the --fail-above gate's)."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = aart_review(str(dataset), "--port", str(port))
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "token" not in r.stdout and "Traceback" not in r.stderr
    assert r.stderr.strip() == (
        f"error: port {port} on 127.0.0.1 is in use (another aart review?): give another "
        "--port, or leave it out for a free port"
    )


def test_an_out_of_range_record_is_a_clear_404(dataset):
    """Issue 18.16: a POST to a record past the end raised IndexError (a 500)."""
    review = open_review(dataset)
    with ReviewServer(review) as server:
        csrf = hmac.new(server.token.encode(), b"csrf", "sha256").hexdigest()
        cookie = f"aart_review_{server.port}={server.token}"
        base = f"http://127.0.0.1:{server.port}"
        for url in (f"{base}/records/7", f"{base}/verdicts/7"):
            code, text = post(url, {"csrf": csrf, "good": "yes"}, cookie)
            assert code == 404 and text.startswith("no "), (url, code, text)
        assert "this review has 3 (0 to 2)" in post(f"{base}/records/3", {"csrf": csrf}, cookie)[1]
    assert not review.record_labels()
    review.close()


def test_a_token_url_never_redirects_off_site(dataset):
    """Issue 18.23: `//evil.com/?token=...` answered with a redirect to //evil.com/."""
    import http.client

    review = open_review(dataset)
    with ReviewServer(review) as server:
        for path in ("//evil.example/x", "/\\evil.example/x", "///evil.example/"):
            conn = http.client.HTTPConnection("127.0.0.1", server.port)
            conn.request("GET", f"{path}?token={server.token}")
            r = conn.getresponse()
            location = r.getheader("location")
            conn.close()
            assert r.status == 303 and location.startswith("/"), (path, location)
            assert not location.startswith(("//", "/\\")), (path, location)
    review.close()


def test_the_browser_launcher_never_sees_the_token(dataset, monkeypatch):
    """Issue 18.23: the token was on the browser launcher's command line (visible in `ps`)."""
    import webbrowser

    from click.testing import CliRunner

    from aart.cli.main import cli
    from aart.review.server import ReviewServer as Server

    opened, seen = [], {}

    def fake_serve(self):
        seen["token"] = self.token
        seen["file"] = Path(opened[0].removeprefix("file://")).read_text()
        seen["mode"] = Path(opened[0].removeprefix("file://")).stat().st_mode & 0o777
        self.close()

    monkeypatch.setattr(webbrowser, "open", lambda url, *a, **k: opened.append(url) or True)
    monkeypatch.setattr(Server, "serve", fake_serve)
    result = CliRunner().invoke(cli, ["review", str(dataset)])
    assert result.exit_code == 0, result.output
    assert opened[0].startswith("file://") and seen["token"] not in opened[0]
    assert seen["token"] not in seen["file"] and "/open?once=" in seen["file"]
    assert seen["mode"] == 0o600
    assert not Path(opened[0].removeprefix("file://")).exists()  # removed when it stopped


def get(server, path: str) -> str:
    req = urllib.request.Request(
        f"http://127.0.0.1:{server.port}{path}",
        headers={"Cookie": f"aart_review_{server.port}={server.token}"},
    )
    with urllib.request.urlopen(req) as r:
        return r.read().decode()


def test_the_figures_page_compares_only_the_axes_the_recipe_has(tmp_path):
    """Issue 18.25: the Figures page showed the paper's concept, region and format figures
    for any recipe."""
    rows = [{"id": "r0", "prompt": "a mild test", "cell": {"risks": "x", "regions": "eu"}}]
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(rows[0]) + "\n")
    review = open_review(path)
    with ReviewServer(review) as server:
        page = get(server, "/summary")
    review.close()
    assert "region 96.7%" in page
    assert "policy concept" not in page and "task format" not in page


def test_the_record_page_shows_every_reasoning_field(tmp_path):
    """Issue 18.25: reasoning fields whose names do not start with `why_` were hidden."""
    row = {"id": "r0", "prompt": "a mild test", "cell": {"concepts": "c"},
           "annotations": {"concepts": "c"}, "rationale": "it tests a mild rule",
           "why_prompt_harmful": "it asks for a mild thing", "topic": "a mild topic",
           "explanation": "a mild explanation", "provenance": {"model": "fake"}}  # fmt: skip
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(row) + "\n")
    review = open_review(path)
    with ReviewServer(review) as server:
        page = get(server, "/records/0")
    review.close()
    for field in ("rationale", "why_prompt_harmful", "topic", "explanation"):
        assert f"<b>{field}</b>: {row[field]}" in page
