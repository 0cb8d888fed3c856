"""The check both searches' SIGKILL tests make: a search killed part-way (its attacker held at
a gate, so the kill lands mid-search whatever the machine's speed) and run again ends with the
uninterrupted search's archive, line for line, and pays no answered call twice."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import db_value, wait_until

TESTS = Path(__file__).resolve().parent
ANSWERED = "cache_key NOT IN ('', 'in-flight')"


def answered_calls(run_db: Path) -> tuple[int, list[Any]]:
    """The answered calls of a search's run.db, and those stored more than once."""
    con = sqlite3.connect(run_db)
    repeated = con.execute(
        f"SELECT cache_key, COUNT(*) FROM calls WHERE {ANSWERED} GROUP BY cache_key"
        " HAVING COUNT(*) > 1"
    ).fetchall()
    n = con.execute(f"SELECT COUNT(*) FROM calls WHERE {ANSWERED}").fetchone()[0]
    con.close()
    return n, repeated


def check_resume_after_sigkill(
    dataset: Path, tmp_path: Path, server: Any, target: str, hold_after: int, budget: int = 30
) -> tuple[Path, Path]:
    """Run the search whole (the reference), then again killed once ``hold_after`` attacker
    calls were answered and 4 candidates stored, then once more; returns (ref, resumed)."""

    def cmd(out: Path) -> list[str]:
        return [sys.executable, "-m", "aart", "search", str(dataset), "--target", target,
                "--attacker", "openai/attacker", "--base-url", server.base_url,
                "--budget", str(budget), "--out", str(out)]  # fmt: skip

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path])}
    ref = subprocess.run(cmd(tmp_path / "ref"), capture_output=True, text=True, env=env,
                         cwd=TESTS, timeout=300)  # fmt: skip
    assert ref.returncode == 0, ref.stderr
    out = tmp_path / "killed"
    server.hold(after=hold_after)  # the next attacker call waits at the gate
    first = subprocess.Popen(cmd(out), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env, cwd=TESTS)  # fmt: skip

    def stored() -> int:
        return int(db_value(out / "run.db", "SELECT COUNT(*) FROM records"))  # type: ignore[arg-type]

    try:
        wait_until(lambda: server.held and stored() >= 4, "candidates stored", first)
        first.send_signal(signal.SIGKILL)
        first.wait()
    finally:
        server.release()
    assert 4 <= stored() < budget  # killed part-way through the search
    done = subprocess.run(cmd(out), capture_output=True, text=True, env=env, cwd=TESTS,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    # the same archive as the uninterrupted search, line for line
    assert (out / "archive.jsonl").read_text() == (tmp_path / "ref" / "archive.jsonl").read_text()
    ours, repeated = answered_calls(out / "run.db")
    assert repeated == []  # no call whose answer arrived was paid twice
    # and the resumed search paid what one uninterrupted search pays
    assert ours == answered_calls(tmp_path / "ref" / "run.db")[0]
    return tmp_path / "ref", out
