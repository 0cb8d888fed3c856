"""The main job end to end on the embedded model, at the demo's smallest size (a few minutes)."""

import csv
import json

import pytest
from test_local_model import needs_embedded

import aart
from aart.steps.generate import AART_COLUMNS


@needs_embedded
@pytest.mark.embedded
def test_aart_demo_small_on_the_embedded_model(tmp_path):
    out = tmp_path / "run"
    result = aart.run("aart-demo", size="small", out=out)
    s = result.stats
    assert s.requested > 0 and s.items > 0
    assert s.prompts + s.shortfall == s.requested  # nothing vanishes unaccounted
    rows = [json.loads(line) for line in (out / "dataset.jsonl").read_text().splitlines()]
    assert len(rows) == s.prompts
    for r in rows:
        fmt = r["annotations"]["task_formats"]
        assert fmt in r["axes"]["task_formats"] and r["prompt"].strip()
        assert r["provenance"]["model"] == "local/default"
    header = next(csv.reader(open(out / "dataset.aart.csv")))
    assert header == AART_COLUMNS
    assert result.usage["calls"] > 0
