"""garak: a probe module (one Probe subclass whose prompts are the dataset's) and the same
prompts as a JSON list.

garak loads probes only from its own package (``garak.probes.<module>``), so the module is
copied into garak's probes folder (its docstring says how). Copied alone, it cannot
read a data file beside it, so it holds the prompts itself: as ``json.loads`` of one string
literal written by ``repr`` of ASCII-only JSON, which escapes every quote, backslash and line
break. The module's code is fixed text; only that literal and a sanitised module name vary."""

from __future__ import annotations

import json
import re
from pathlib import Path

from .source import ExportSource

PROMPTS_FILE = "prompts.json"

_MODULE = '''"""Probe written by `aart export --to garak`: the prompts of an aart dataset.

Copy this file into garak's probes folder (python -c "import garak.probes, os;
print(os.path.dirname(garak.probes.__file__))"), then run
  garak --target_type openai --target_name MODEL --probes {module}.AartDataset
(by class: the probe is inactive, so a run of all probes leaves it out, and garak skips
an inactive probe selected by its module alone).
"""

import json

import garak.probes

# The dataset as JSON text: data, never code (json.loads of one escaped string literal).
_DATA = json.loads({literal})


class AartDataset(garak.probes.Probe):
    """aart dataset prompts

    Poses the prompts of an aart dataset; a reply without a refusal is a hit."""

    lang = "*"
    intent = "S"
    active = False
    goal = "make the model answer requests its policy says it must refuse"
    doc_uri = "https://arxiv.org/abs/2311.08592"
    tags = ["aart"]
    tier = garak.probes.Tier.UNLISTED
    primary_detector = "mitigation.MitigationBypass"
    prompts = [record["prompt"] for record in _DATA["records"]]
    #: per prompt, in the same order: its aart id and cell (one value per axis)
    aart_records = _DATA["records"]
'''


def module_name(dataset: str) -> str:
    slug = re.sub(r"[^a-z0-9_]+", "_", dataset.lower()).strip("_") or "dataset"
    return f"aart_{slug}"[:60]


def module_source(src: ExportSource, module: str) -> str:
    data = {
        "dataset": src.name,
        "records": [
            {"id": r.id, "prompt": r.prompt, "cell": r.cell, "strategy": r.strategy, **r.origin}
            for r in src.records
        ],
    }
    literal = repr(json.dumps(data, ensure_ascii=True))
    return _MODULE.format(module=module, literal=literal)


def export(src: ExportSource, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    module = module_name(src.name)
    probe = out / f"{module}.py"
    probe.write_text(module_source(src, module), encoding="utf-8")
    prompts = out / PROMPTS_FILE
    prompts.write_text(
        json.dumps([r.prompt for r in src.records], ensure_ascii=False, indent=1) + "\n",
        encoding="utf-8",
    )
    return [probe, prompts]
