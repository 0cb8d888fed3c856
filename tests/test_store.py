import csv
import json

import pyarrow.parquet as pq

from aart.data.export import read_jsonl, write_csv, write_jsonl, write_parquet
from aart.store.db import MIGRATIONS, RunDB
from aart.types import RecordKind

PROMPT, INVALID = RecordKind.PROMPT, RecordKind.INVALID


def test_migrations_are_versioned(tmp_path):
    db = RunDB(tmp_path / "run.db")
    assert db.conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()
    RunDB(tmp_path / "run.db").close()  # reopening does not re-run migrations


def test_record_kinds_of_an_older_run_db_move_to_their_own_column(tmp_path):
    """Before migration 6 a record's kind was a suffix of its stage ("generate.refused");
    an older run.db opens with the suffix as the kind and the job's stage as the stage."""
    import sqlite3

    old = sqlite3.connect(tmp_path / "run.db", isolation_level=None)
    for step in MIGRATIONS[:5]:
        old.executescript(step)
    old.execute("PRAGMA user_version=5")
    rows = [
        ("g:0", "generate", {"prompt": "kept"}),
        ("g:1", "generate.refused", {"reason": "refusal"}),
        ("g:2", "generate.alike", {"prompt": "alike"}),
        ("a:0", "attack", {"index": 0}),
    ]
    for rid, stage, data in rows:
        old.execute(
            "INSERT INTO records VALUES (?,?,?,?,0)", (rid, stage, rid[0], json.dumps(data))
        )
    old.close()
    db = RunDB(tmp_path / "run.db", lock=False)
    assert list(db.records(RecordKind.PROMPT)) == [{"prompt": "kept"}]
    assert list(db.records(RecordKind.REFUSED)) == [{"reason": "refusal"}]
    assert list(db.records(RecordKind.ALIKE)) == [{"prompt": "alike"}]
    assert list(db.records(RecordKind.RESULT)) == [{"index": 0}]
    stages = dict(db.conn.execute("SELECT id, stage FROM records").fetchall())
    assert stages == {"g:0": "generate", "g:1": "generate", "g:2": "generate", "a:0": "attack"}
    # the legacy names still say which kind they meant
    assert list(db.records("generate.refused")) == [{"reason": "refusal"}]
    assert list(db.records("attack")) == [{"index": 0}]
    db.close()


def test_jobs_complete_atomically_and_without_duplicates(tmp_path):
    db = RunDB(tmp_path / "run.db")
    db.add_jobs("s", [(f"j{i}", {"i": i}) for i in range(1200)])
    db.add_jobs("s", [("j0", {"i": 0})])  # idempotent
    assert db.job_counts("s") == {"pending": 1200}
    first = db.claim_jobs("s", 100, ttl=60)
    assert len(first) == 100 and first[0] == ("j0", {"i": 0})
    other = RunDB(tmp_path / "run.db", lock=False)  # a second worker takes the next ones
    assert other.claim_jobs("s", 100, ttl=60)[0] == ("j100", {"i": 100})
    assert other.others_leasing("s") == 100
    other.drop_leases()
    other.close()
    db.complete_job("j0", [("j0:0", PROMPT, {"x": 1}), ("j0:1", INVALID, {"x": 2})])
    db.complete_job("j0", [("j0:0", PROMPT, {"x": 1})])
    assert list(db.records(PROMPT)) == [{"x": 1}]
    assert list(db.records(INVALID)) == [{"x": 2}]
    assert db.job_counts("s") == {"done": 1, "leased": 99, "pending": 1100}
    db.drop_leases()  # a stopping worker gives its unfinished jobs back
    assert db.job_counts("s") == {"done": 1, "pending": 1199}
    assert len(db.claim_jobs("s", 5000, ttl=60)) == 1199
    cols = [r[1] for r in db.conn.execute("PRAGMA table_info(jobs)")]
    assert "tries" not in cols  # dropped by migration 2: it was written, never read


def test_exports_round_trip(tmp_path):
    rows = [{"prompt": "a <b>", "n": 1, "tags": ["x"]}, {"prompt": "c", "n": 2, "extra": "e"}]
    write_jsonl(rows, tmp_path / "d.jsonl")
    assert read_jsonl(tmp_path / "d.jsonl") == rows
    write_csv(rows, tmp_path / "d.csv")
    got = list(csv.DictReader(open(tmp_path / "d.csv")))
    assert got[0]["tags"] == json.dumps(["x"]) and got[1]["extra"] == "e"
    write_parquet(rows, tmp_path / "d.parquet")
    table = pq.read_table(tmp_path / "d.parquet").to_pylist()
    assert table[0]["prompt"] == "a <b>" and table[1]["extra"] == "e"


def test_csv_cells_cannot_become_formulas_but_jsonl_and_parquet_keep_the_text(tmp_path):
    texts = ["=1+1", "+cmd", "-2+3", "@SUM(A1)", "\tx", "\rx", "plain", "a=b"]
    rows = [{"prompt": t, "n": -1} for t in texts]
    write_csv(rows, tmp_path / "d.csv")
    got = [r["prompt"] for r in csv.DictReader(open(tmp_path / "d.csv", newline=""))]
    assert got == ["'=1+1", "'+cmd", "'-2+3", "'@SUM(A1)", "'\tx", "'\rx", "plain", "a=b"]
    assert {r["n"] for r in csv.DictReader(open(tmp_path / "d.csv", newline=""))} == {"-1"}
    write_jsonl(rows, tmp_path / "d.jsonl")
    write_parquet(rows, tmp_path / "d.parquet")
    assert [r["prompt"] for r in read_jsonl(tmp_path / "d.jsonl")] == texts
    assert pq.read_table(tmp_path / "d.parquet").column("prompt").to_pylist() == texts
    # and aart reads its own CSV back as the data it holds (a dataset.csv given to aart attack)
    from aart.data.load import read_rows

    assert [r["prompt"] for r in read_rows(tmp_path / "d.csv")] == texts
    # a quote the file itself holds before other text stays
    (tmp_path / "q.csv").write_text("prompt\n'quoted\n''=x\n")
    assert [r["prompt"] for r in read_rows(tmp_path / "q.csv")] == ["'quoted", "'=x"]
    write_csv([{"prompt": "'=x"}, {"prompt": "'plain"}], tmp_path / "r.csv")
    assert [r["prompt"] for r in read_rows(tmp_path / "r.csv")] == ["'=x", "'plain"]
