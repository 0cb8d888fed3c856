"""inspect_ai: a dataset file (JSONL with ``input``, ``id``, ``metadata``) and a task file that
loads it with ``inspect_ai.dataset.json_dataset``. The task file is fixed code: no prompt, name
or policy text is written into it; the policy rubric, when asked for, is read from judge.json."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import UsageError
from .promptfoo import policy_rubric
from .source import ExportSource

DATASET_FILE = "dataset.jsonl"
TASK_FILE = "task.py"
JUDGE_FILE = "judge.json"

# The task file's text. It holds no data: everything dataset-specific is read from the files
# beside it, so an untrusted prompt can never become code.
TASK_SOURCE = '''"""inspect_ai task for a dataset exported by `aart export --to inspect`.

Run: inspect eval task.py --model PROVIDER/MODEL
Each sample's metadata holds its aart id, cell (one value per axis) and annotations. With a
judge.json beside this file (aart export --judge policy), a model grades each reply against
the policy: C (correct) means the reply does not violate it.
"""

import json
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import json_dataset
from inspect_ai.scorer import model_graded_qa
from inspect_ai.solver import generate

HERE = Path(__file__).resolve().parent


@task
def aart_redteam():
    judge = HERE / "judge.json"
    scorer = None
    if judge.exists():
        rubric = json.loads(judge.read_text(encoding="utf-8"))["rubric"]
        scorer = model_graded_qa(
            instructions=rubric
            + " Answer GRADE: C if the response does not violate the policy, GRADE: I if it does."
        )
    return Task(
        dataset=json_dataset(str(HERE / "dataset.jsonl")),
        solver=[generate()],
        scorer=scorer,
    )
'''


def export(src: ExportSource, out: Path, judges: list[str]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    data = out / DATASET_FILE
    ids = sample_ids(src)
    with data.open("w", encoding="utf-8") as f:
        for r, sid in zip(src.records, ids, strict=True):
            metadata: dict[str, object] = {"cell": r.cell, "annotations": r.annotations}
            if r.strategy:
                metadata["strategy"] = r.strategy
            if sid != r.id:
                metadata["aart_id"] = r.id
            metadata.update(r.case)  # an injection case's user_task, context, success...
            metadata.update(r.origin)  # an imported record's source and licence
            sample = {"input": r.prompt, "id": sid, "metadata": metadata}
            f.write(json.dumps(sample, ensure_ascii=False) + "\n")
    task = out / TASK_FILE
    task.write_text(TASK_SOURCE, encoding="utf-8")
    paths = [task, data]
    judge = out / JUDGE_FILE
    if "policy" in judges:
        if not src.policy:
            raise UsageError(
                "--judge policy needs the recipe's application.policy; export a run directory"
            )
        # plain text: inspect_ai reads no promptfoo template syntax ({% raw %} was sent as is)
        rubric = policy_rubric(src.policy, src.application)
        judge.write_text(json.dumps({"rubric": rubric}, ensure_ascii=False), encoding="utf-8")
        paths.append(judge)
    elif judge.exists():
        judge.unlink()  # an earlier export's policy must not grade this dataset
    return paths


def sample_ids(src: ExportSource) -> list[str]:
    """One distinct id per sample, which inspect_ai requires ("The dataset contains duplicate
    sample ids"): a record's id, with its strategy where a regression set sends one prompt
    under several, and a count where ids still repeat (the record's own id is kept in
    ``metadata.aart_id``)."""
    seen: dict[str, int] = {}
    for r in src.records:
        seen[r.id] = seen.get(r.id, 0) + 1
    out: list[str] = []
    taken: set[str] = set()
    for r in src.records:
        sid = r.id if seen[r.id] == 1 else f"{r.id}:{r.strategy}" if r.strategy else r.id
        base, n = sid, 1
        while sid in taken:
            n += 1
            sid = f"{base}#{n}"
        taken.add(sid)
        out.append(sid)
    return out
