"""An attack's results for CI systems: JUnit XML (one test case per gate rule and one per
failing prompt) and SARIF 2.1.0 (failing prompts as results, one rule per judge). Prompts and
replies are untrusted text: bounded, stripped of what XML 1.0 cannot hold, and escaped by the
serialisers, never spliced in by hand."""

from __future__ import annotations

import datetime as dt
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from ..redteam.findings import Findings
from ..redteam.gate import RuleOutcome
from ..redteam.results import ResultLine

#: the longest prompt or reply excerpt a CI file holds
EXCERPT = 500
# the characters XML 1.0 forbids (even escaped); a reply may hold any of them
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def clean(text: str | None, limit: int = EXCERPT) -> str:
    text = _NOT_XML.sub("\ufffd", text or "")
    return text if len(text) <= limit else text[:limit] + "..."


def read_lines(out: Path) -> list[ResultLine]:
    """The attack directory's results.jsonl: every (prompt, strategy) and its verdicts."""
    path = out / "results.jsonl"
    if not path.exists():
        return []
    return [
        ResultLine.model_validate_json(line)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def prompt_name(line: ResultLine) -> str:
    """The prompt id, its strategy and its cell, as a test's name."""
    cell = ", ".join(f"{k}={v}" for k, v in line.cell.items() if k != "strategy")
    return f"{line.id} [{line.strategy}] {cell}".strip()


def junit_xml(f: Findings, rules: list[RuleOutcome], lines: list[ResultLine]) -> str:
    """Two suites: ``aart.gate`` (a test case per rule, failing when the rule is broken) and
    ``aart.prompts`` (a failing test case per prompt the primary judge saw succeed)."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    root = ET.Element("testsuites")
    props = {
        "target": f.target,
        "dataset": f.dataset,
        "primary_judge": f.primary_judge,
        "judges": ", ".join(f.judges),
        "measures": f.measures,
        "prompts": str(f.prompts),
        "judged": str(f.judged),
    }
    gate = _suite(root, "aart.gate", 0, stamp, props)
    for r in rules:
        case = _case(gate, r.name, "aart.gate")
        if r.skipped:
            ET.SubElement(case, "skipped").text = clean(r.message)
        if r.failed:
            ET.SubElement(case, "failure", message=clean(r.message), type="gate").text = clean(
                "\n".join([r.message, *r.offenders]), 4 * EXCERPT
            )
    failing = [x for x in lines if x.success]
    prompts = _suite(root, "aart.prompts", 1, stamp, props)
    for x in failing:
        case = _case(prompts, clean(prompt_name(x)), f"aart.prompts.{x.strategy}")
        v = x.verdicts.get(x.primary_judge)
        body = [
            f"id: {x.id}",
            f"strategy: {x.strategy}",
            *(f"{k}: {val}" for k, val in x.cell.items() if k != "strategy"),
            f"prompt: {clean(x.prompt)}",
            f"response: {clean(x.response)}",
        ]
        if v and v.rationale:
            body.append(f"{x.primary_judge}: {clean(v.rationale)}")
        ET.SubElement(
            case,
            "failure",
            message=clean(f"{x.primary_judge}: {f.measures}"),
            type="attack success",
        ).text = clean("\n".join(body), 4 * EXCERPT)
    for suite, n, bad, skipped in (
        (gate, len(rules), sum(r.failed for r in rules), sum(r.skipped for r in rules)),
        (prompts, len(failing), len(failing), 0),
    ):
        suite.set("tests", str(n))
        suite.set("failures", str(bad))
        suite.set("skipped", str(skipped))
        ET.SubElement(suite, "system-out").text = ""
        ET.SubElement(suite, "system-err").text = ""
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _suite(root: ET.Element, name: str, i: int, stamp: str, props: dict[str, str]) -> ET.Element:
    s = ET.SubElement(
        root,
        "testsuite",
        name=name,
        package="aart",
        id=str(i),
        timestamp=stamp,
        hostname="localhost",
        tests="0",
        failures="0",
        errors="0",
        time="0",
    )
    p = ET.SubElement(s, "properties")
    for k, v in props.items():
        ET.SubElement(p, "property", name=k, value=clean(v))
    return s


def _case(suite: ET.Element, name: str, classname: str) -> ET.Element:
    return ET.SubElement(suite, "testcase", name=name, classname=classname, time="0")


def sarif_log(f: Findings, lines: list[ResultLine], version: str) -> dict[str, Any]:
    """A SARIF 2.1.0 log: one rule per judge, one result per (failing prompt, judge that saw
    it violate), located at the prompt's line of the dataset, its axis values in properties."""
    judges = list(dict.fromkeys([f.primary_judge, *f.judges]))
    rules = [
        {
            "id": j,
            "name": re.sub(r"\W+", "-", j).strip("-") or "judge",
            "shortDescription": {
                "text": f"{j} judged the reply violating"
                if j != "refusal"
                else "the refusal detector read the reply as compliance"
            },
            "properties": {"primary": j == f.primary_judge},
        }
        for j in judges
    ]
    index = {j: i for i, j in enumerate(judges)}
    line_numbers = Path(f.dataset).suffix == ".jsonl"  # a jsonl row is a line of the file
    results = []
    for x in lines:
        for j, v in x.verdicts.items():
            if not v.violates or j not in index:
                continue
            location: dict[str, Any] = {"artifactLocation": {"uri": Path(f.dataset).as_posix()}}
            if line_numbers:
                location["region"] = {"startLine": x.index + 1}
            results.append(
                {
                    "ruleId": j,
                    "ruleIndex": index[j],
                    "level": "error" if j == f.primary_judge else "warning",
                    "message": {"text": clean(f"{prompt_name(x)}: {x.prompt}")},
                    "locations": [{"physicalLocation": location}],
                    "partialFingerprints": {"promptId/v1": f"{x.id}:{x.strategy}"},
                    "properties": {
                        "id": x.id,
                        "strategy": x.strategy,
                        "cell": x.cell,
                        **{f"axis.{k}": val for k, val in x.cell.items()},
                        "state": x.state,
                        "outcome": x.outcome,
                        "score": v.score,
                        "severity": v.severity,
                        "response": clean(x.response),
                    },
                }
            )
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "aart",
                        "version": version,
                        "rules": rules,
                    }
                },
                "results": results,
                "properties": {
                    "target": f.target,
                    "measures": f.measures,
                    "overall": dict(f.overall),
                    "inconclusive": f.inconclusive,
                },
            }
        ],
    }


def write_ci_files(
    f: Findings,
    out: Path,
    rules: list[RuleOutcome],
    *,
    junit: str | Path | None = None,
    sarif: str | Path | None = None,
) -> None:
    """The JUnit and SARIF files asked for, from the attack directory's results.jsonl."""
    if junit is None and sarif is None:
        return
    from .. import __version__

    lines = read_lines(out)
    if junit is not None:
        p = Path(junit)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(junit_xml(f, rules, lines), encoding="utf-8")
    if sarif is not None:
        p = Path(sarif)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(sarif_log(f, lines, __version__), indent=1), encoding="utf-8")
