"""The layers contract: each module of aart imports only from its own layer or the layers below
it, top to bottom as listed in LAYERS. Packages joined in one layer by "|" are siblings and may
not import each other; modules in a layer marked shared may (the text primitives, the base).
Function-level (lazy) and TYPE_CHECKING imports count too: a lazy import hides a cycle, it does
not remove it.

KNOWN_VIOLATIONS lists what is left to remove, each with its owner; the test also fails when a
listed violation no longer exists, so the list can only shrink."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"

#: top to bottom: (packages or modules of the layer, whether they may import each other)
LAYERS: list[tuple[tuple[str, ...], bool]] = [
    (("aart.__main__",), False),  # `python -m aart`
    (("aart.cli", "aart.testing"), False),
    (("aart.pipeline", "aart.api"), False),  # the facade (later aart.api)
    (("aart.search",), False),  # the search for failures: attacks, judged, over the cells
    (("aart.review", "aart.report"), False),
    (("aart.redteam", "aart.steps", "aart.interop"), False),
    (("aart.evaluate",), False),
    (("aart.jobs", "aart.runner"), False),
    (("aart.data",), False),
    (("aart.store",), False),
    (("aart.recipe",), False),
    (("aart.llm",), False),
    (
        (
            "aart.text",
            "aart.textsim",
            "aart.refusal",
            "aart.refusal_model",
            "aart.refusal_sentences",
            "aart.textsafe",
            "aart.cells",
        ),
        True,
    ),
    (("aart.types", "aart.injection", "aart.ids", "aart.errors", "aart.redaction"), True),
]

#: the old paths of moved modules: each only re-exports its new place, and goes in a later
#: release (importing the new place from a layer below the old one is their whole point)
SHIMS = {
    "aart.textsim": "aart.text.normalize",
    "aart.evaluate.keywords": "aart.text.keywords",
    "aart.evaluate.data": "aart.data.load",
    "aart.evaluate.stream": "aart.data.stream",
    "aart.store.export": "aart.data.export",
    "aart.interop.read": "aart.data.foreign",
    "aart.runner": "aart.jobs.runner",
    "aart.llm.ray_executor": "aart.llm.transport.ray",
}

#: (importer, imported) pairs still to remove, and who removes them
KNOWN_VIOLATIONS: dict[tuple[str, str], str] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every aart module ``path`` imports, at any depth of the file (``from x import y``
    counts as x, or as x.y when y is a module)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for a in node.names:
                sub = f"{module}.{a.name}"
                is_module = (SRC / sub.replace(".", "/")).is_dir() or (
                    SRC / (sub.replace(".", "/") + ".py")
                ).exists()
                out.add(sub if is_module else module)
    return {m for m in out if m == "aart" or m.startswith("aart.")}


def _place(module: str) -> tuple[int, str, bool] | None:
    """(layer number from the top, the layer's member holding ``module``, shared)."""
    for i, (members, shared) in enumerate(LAYERS):
        for m in members:
            if module == m or module.startswith(m + "."):
                return i, m, shared
    return None


def _violations() -> dict[tuple[str, str], str]:
    found = {}
    for path in sorted((SRC / "aart").rglob("*.py")):
        importer = _module_name(path)
        if importer == "aart" or importer in SHIMS:
            continue  # the package's face imports what it offers; shims checked below
        here = _place(importer)
        assert here is not None, f"{importer} is in no layer: add it to LAYERS"
        for imported in _imports(path):
            if imported == "aart":
                continue  # `from .. import __version__`
            there = _place(imported)
            assert there is not None, f"{imported} (imported by {importer}) is in no layer"
            if there[0] > here[0] or there[1] == here[1] or (there[0] == here[0] and here[2]):
                continue
            why = "a layer above" if there[0] < here[0] else "a sibling"
            found[(importer, imported)] = f"{importer} imports {imported}, {why}"
    return found


def _matches(known: tuple[str, str], found: tuple[str, str]) -> bool:
    return found[0] == known[0] and (found[1] == known[1] or found[1].startswith(known[1] + "."))


def test_every_import_goes_down_the_layers():
    found = _violations()
    new = [
        why for pair, why in found.items() if not any(_matches(k, pair) for k in KNOWN_VIOLATIONS)
    ]
    assert not new, "imports against the layers (see LAYERS in this file):\n" + "\n".join(new)


@pytest.mark.parametrize("known", sorted(KNOWN_VIOLATIONS))
def test_a_known_violation_is_still_there(known):
    """A violation removed is taken off KNOWN_VIOLATIONS, so the list only shrinks."""
    assert any(_matches(known, pair) for pair in _violations()), (
        f"{known[0]} no longer imports {known[1]}: remove it from KNOWN_VIOLATIONS"
    )


def test_a_shim_only_re_exports_its_new_place():
    for old, new in SHIMS.items():
        path = SRC / (old.replace(".", "/") + ".py")
        # the base layer (aart.errors) is below every shim's new place too
        assert _imports(path) - {"aart.errors"} <= {new, new.rpartition(".")[0]}, old


def test_the_recipe_names_the_strategies_the_attack_implements():
    """The recipe checks strategy names against its own list (it may not import the attack
    code): the list is the attack's."""
    from aart.recipe.strategy_names import STRATEGY_NAMES, TAKES_ARGUMENT
    from aart.redteam import strategies

    implemented = [strategies.IDENTITY, *strategies.CONVERTERS, *strategies.LLM_CONVERTERS]
    assert list(STRATEGY_NAMES) == [*implemented, *strategies.OTHER]
    for name in STRATEGY_NAMES:
        strategies.parse_strategy(f"{name}:x" if name in TAKES_ARGUMENT else name)
