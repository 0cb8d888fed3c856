"""The docs: the generated reference pages match the code, and every relative link resolves.

The reference pages (docs/cli.md, docs/recipe-reference.md, docs/run-db.md) hold a block that
tools/gen_docs.py writes from the CLI, the recipe models and the migrations; a change to any
of those without re-running the generator fails here, naming the command."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "tools" / "gen_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _generator()


@pytest.mark.parametrize("page", [page for page, _ in gen.GENERATORS.values()])
def test_generated_page_is_current(page: str) -> None:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    assert gen.render(page, text) == text, (
        f"docs/{page} is stale: run `{gen.REGENERATE}` to regenerate it"
    )


def test_check_mode_names_the_stale_page_and_the_fix(tmp_path, monkeypatch, capsys) -> None:
    for page, _ in gen.GENERATORS.values():
        (tmp_path / page).write_text((ROOT / "docs" / page).read_text(encoding="utf-8"))
    cli = tmp_path / "cli.md"
    cli.write_text(cli.read_text().replace("Usage: aart run", "Usage: aart walk"))
    monkeypatch.setattr(gen, "DOCS", tmp_path)
    assert gen.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "docs/cli.md" in err and gen.REGENERATE in err
    assert "recipe-reference.md" not in err
    assert gen.main([]) == 0  # regenerates
    assert gen.main(["--check"]) == 0


def test_the_references_cover_every_command_key_and_table() -> None:
    """Spot checks that each generator reads its source, not an empty stand-in."""
    from aart.cli.main import cli

    commands = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for name in cli.commands:
        assert f"## `aart {name}`" in commands
    keys = (ROOT / "docs" / "recipe-reference.md").read_text(encoding="utf-8")
    for key in ("`generate.template`", "`dimensions.<name>.enumerate.count`", "`attack.gate"):
        assert key in keys
    schema = (ROOT / "docs" / "run-db.md").read_text(encoding="utf-8")
    for table in ("jobs", "calls", "cache", "records", "meta", "labels"):
        assert f"### `{table}`" in schema


# --- links -------------------------------------------------------------------------------
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_FENCE = re.compile(r"^(```|~~~)")


def _prose(text: str) -> str:
    """The text outside fenced code blocks and inline code spans (links there are examples)."""
    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(out)


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors for a page's headings (repeats get -1, -2, ...)."""
    seen: dict[str, int] = {}
    anchors = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line.strip()):
            fenced = not fenced
        m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = gen.slug(m.group(1))
            n = seen.get(base, 0)
            anchors.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
    return anchors


def _links(pages: list[Path] = PAGES) -> list[tuple[Path, str]]:
    found = []
    for page in pages:
        for target in _LINK.findall(_prose(page.read_text(encoding="utf-8"))):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                found.append((page, target))
    return found


def _broken(pages: list[Path]) -> list[str]:
    broken = []
    for page, target in _links(pages):
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            broken.append(f"{page.name}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{page.name}: {target} (no heading #{anchor})")
    return broken


def test_every_relative_link_resolves() -> None:
    broken = _broken(PAGES)
    assert not broken, "broken links:\n" + "\n".join(broken)
    assert len(_links()) >= 50  # a guard against a pattern that silently matches nothing


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path) -> None:
    (tmp_path / "b.md").write_text("# B page\n\n## Scale-out: a Ray cluster (`--executor ray`)\n")
    a = tmp_path / "a.md"
    a.write_text(
        "[ok](b.md#scale-out-a-ray-cluster---executor-ray) [ok](#a) [web](https://x.org/y)\n"
        "# A\n[gone](c.md) [no anchor](b.md#nowhere) `[code](d.md)`\n"
        "```\n[fenced](e.md)\n```\n"
    )
    assert _broken([a]) == ["a.md: c.md (no such file)", "a.md: b.md#nowhere (no heading #nowhere)"]


def test_the_python_api_example_reads_only_what_an_earlier_line_wrote():
    # before: aart.rejudge("runs/bank/attack"), aart.values(attack=...) and open_review(attack=...)
    # came before the aart.attack that writes runs/bank/attack, so the example failed as written
    # ("runs/bank/attack holds no attack"); and an attack without target= needed an attack
    # section the bank recipe does not have
    text = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    block = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    written: set[str] = set()
    for line in re.split(r"\n(?=\S)", block):  # a statement and its continuation lines
        read = re.findall(r'(?:^\s*\w+ = aart\.rejudge\(|attack=)"([^"]+)"', line)
        for path in read:
            assert path in written, f"{path} is read before a line writes it: {line}"
        written.update(re.findall(r'\bout="([^"]+)"', line))
        if "aart.attack(" in line:
            assert "target=" in line, line
