"""Datasets in from other tools, as the rows `aart evaluate` and `aart attack` read: a
promptfoo tests file (or a config with its tests) and a Hugging Face dataset folder. Reading
them is data loading, below every feature; writing them is :mod:`aart.interop`'s."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from ..errors import UsageError
from .chunks import chunked

HF_CARD_FILE = "README.md"


def handles(path: Path) -> bool:
    path = Path(path)
    return path.is_dir() or is_promptfoo_tests(path)


def iter_rows(path: Path, size: int) -> Iterator[list[dict[str, Any]]]:
    path = Path(path)
    if path.is_dir():
        if not is_hf_folder(path):
            raise UsageError(
                f"{path} is a directory but not a Hugging Face dataset folder (README.md and "
                "data/*.parquet); give a dataset file, or the run's dataset.jsonl"
            )
        yield from iter_hf_rows(path, size)
        return
    yield from chunked(iter_promptfoo_rows(path), size)


# -- a Hugging Face dataset folder ------------------------------------------------------
def is_hf_folder(path: Path) -> bool:
    """A folder with Parquet files under data/ (a run directory's dataset.parquet is not one)."""
    return path.is_dir() and any(path.glob("data/**/*.parquet"))


def _hf_parquet_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(folder.glob("data/**/*.parquet")) or sorted(folder.glob("*.parquet"))


def hf_data_files(folder: Path) -> list[Path]:
    """The Parquet files of the card's default config (its train split when it names splits),
    else data/**/*.parquet."""
    card = folder / HF_CARD_FILE
    if card.exists():
        text = card.read_text(encoding="utf-8")
        if text.startswith("---"):
            front_text = text.split("---", 2)[1] if text.count("---") >= 2 else ""
            try:
                front = yaml.safe_load(front_text) or {}
            except yaml.YAMLError:
                raise UsageError(f"{card}: its front matter is not valid YAML") from None
            files = _hf_config_files(folder, front)
            if files:
                return files
    files = _hf_parquet_files(folder)
    if not files:
        raise UsageError(
            f"{folder}: no Parquet files (data/*.parquet); export one with "
            "`aart export DATASET --to hf FOLDER`"
        )
    return files


def _hf_config_files(folder: Path, front: Any) -> list[Path]:
    configs = front.get("configs") if isinstance(front, dict) else None
    if not isinstance(configs, list) or not configs:
        return []
    config = next((c for c in configs if isinstance(c, dict) and c.get("default")), configs[0])
    specs = config.get("data_files") if isinstance(config, dict) else None
    if isinstance(specs, str):
        specs = [{"path": specs}]
    patterns: list[str] = []
    for spec in specs or []:
        if isinstance(spec, dict):
            paths = spec.get("path")
            patterns += [paths] if isinstance(paths, str) else list(paths or [])
    root = folder.resolve()
    out: list[Path] = []
    for pattern in patterns:
        for p in sorted(folder.glob(str(pattern))):
            # a card is data too: it may not point outside its folder
            if p.suffix == ".parquet" and p.resolve().is_relative_to(root):
                out.append(p)
    return out


def iter_hf_rows(folder: Path, size: int) -> Iterator[list[dict[str, Any]]]:
    import pyarrow.parquet as pq

    for path in hf_data_files(folder):
        parquet = pq.ParquetFile(path, buffer_size=1 << 20, pre_buffer=False)
        for batch in parquet.iter_batches(batch_size=size):
            yield batch.to_pylist()


# -- a promptfoo tests file --------------------------------------------------------------
RAW_OPEN, RAW_CLOSE = "{% raw %}", "{% endraw %}"

RAW_LITERAL = {"{{": '{% endraw %}{{ "{{" }}{% raw %}', "{%": '{% endraw %}{{ "{%" }}{% raw %}'}


def unescape(value: str) -> str:
    """The text an :func:`escape` d value renders to; other values are returned unchanged."""
    if not (value.startswith(RAW_OPEN) and value.endswith(RAW_CLOSE)):
        return value
    body = value[len(RAW_OPEN) : -len(RAW_CLOSE)]
    for literal, emitted in RAW_LITERAL.items():
        body = body.replace(emitted, literal)
    return body


def is_promptfoo_tests(path: Path) -> bool:
    return path.suffix.lower() in (".yaml", ".yml")


def is_promptfoo_document(path: Path) -> bool:
    """A .yaml that is a promptfoo tests file (a list) or config (a mapping with ``tests``
    and none of a recipe's ``application`` or ``dimensions``), not an aart recipe."""
    if not is_promptfoo_tests(path):
        return False
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False  # the recipe loader says what is wrong, with the line
    if isinstance(data, list):
        return True
    return (
        isinstance(data, dict)
        and "tests" in data
        and not {"application", "dimensions"} & set(map(str, data))
    )


def iter_promptfoo_rows(path: Path) -> Iterator[dict[str, Any]]:
    """A promptfoo tests file (a list of tests), or a config whose ``tests`` is such a list or a
    ``file://`` reference to one, as flat rows: the vars (unescaped) and the metadata."""
    tests = _promptfoo_tests(path, depth=0)
    for n, test in enumerate(tests, start=1):
        if not isinstance(test, dict):
            raise UsageError(f"{path}: test {n} is not a mapping; a promptfoo test has vars:")
        row: dict[str, Any] = {}
        meta = test.get("metadata") or {}
        variables = test.get("vars") or {}
        if not isinstance(variables, dict) or not isinstance(meta, dict):
            raise UsageError(f"{path}: test {n}: vars and metadata must be mappings")
        for key, value in meta.items():
            if isinstance(value, (str, int, float, bool)):
                row[str(key)] = value
        for key, value in variables.items():
            row[str(key)] = unescape(value) if isinstance(value, str) else value
        if "id" not in row and test.get("description"):
            row["id"] = str(test["description"])
        yield row


def _promptfoo_tests(path: Path, depth: int) -> list[Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise UsageError(f"{path}{where}: not valid YAML; fix the file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{path}: cannot be read ({e})") from None
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and "tests" in data:
        tests = data["tests"]
        if isinstance(tests, list):
            return tests
        if isinstance(tests, str) and tests.startswith("file://") and depth == 0:
            ref = (path.parent / tests[7:]).resolve()
            if ref.suffix.lower() in (".yaml", ".yml") and ref.exists():
                return _promptfoo_tests(ref, depth + 1)
        raise UsageError(
            f"{path}: tests: {str(tests)[:80]!r} is not a list of tests or a file:// YAML "
            "tests file beside the config; give the tests file itself"
        )
    raise UsageError(
        f"{path}: not a promptfoo tests file (a YAML list of tests with vars:) or config with tests:"
    )
