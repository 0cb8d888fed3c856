"""A loaded recipe and where each of its keys is in the file, so any layer can raise a
:class:`~aart.errors.RecipeError` at file:line:column without importing the loader."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import RecipeError
from .models import Path as KeyPath
from .models import Recipe

#: models settings that may change on resume (with budget and prices)
OPERATIONAL_MODEL_KEYS = (
    "concurrency",
    "rpm",
    "tpm",
    "timeout",
    "max_retries",
    "structured_retries",
    "api_key_env",
    "idle_timeout",
    "stream",
    "adaptive",
    "tokens_per_second",
)


@dataclass
class LoadedRecipe:
    recipe: Recipe
    path: Path
    text: str
    size: str | None
    locations: dict[KeyPath, tuple[int, int]]

    def identity(self) -> dict[str, Any]:
        """What the recipe asks for, without the settings that may change on resume."""
        # attack: and search: are read by `aart attack` and `aart search`; generation never
        data = self.recipe.model_dump(
            mode="json", exclude={"sizes", "budget", "prices", "attack", "search"}
        )
        for key in OPERATIONAL_MODEL_KEYS:
            data["models"].pop(key, None)
        # only `aart attack` sends it; generation never sees it
        data["application"].pop("system_prompt", None)
        # what a recipe for an application that reads and acts adds, left out when unused, so
        # the hash of every recipe written before these keys (and its runs' resume) stands
        for key in ("tools", "channels", "secrets"):
            if not data["application"].get(key):
                data["application"].pop(key, None)
        if data["generate"].get("kind") == "prompts":
            data["generate"].pop("kind", None)
            data["generate"].pop("injection", None)
        # keys added after runs were hashed: at their defaults they are left out, so a run
        # started before resumes and keeps its recipe_hash
        for key, default in (
            ("name_values", True),
            ("avoid_hint", True),
            ("example_cells", True),
            ("topup_queries", None),
        ):
            if data["generate"].get(key) == default:
                data["generate"].pop(key)
        if not data["scope"].get("restrict"):
            data["scope"].pop("restrict", None)
        return data

    @property
    def hash(self) -> str:
        """Hash of what the recipe asks for: detects a changed recipe on resume. Settings that
        change how the work is run, not what it is (budget, prices, concurrency, rate limits,
        timeouts, retries), are left out, so they may change between invocations of a run."""
        data = self.identity()
        # hashed under the key's name before scope.strategy became scope.mix, so runs started
        # before the rename resume, and their datasets keep their recipe_hash
        data["scope"]["strategy"] = data["scope"].pop("mix")
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]

    def where(self, path: KeyPath) -> tuple[int | None, int | None]:
        return _where(self.locations, path)

    def error(self, path: KeyPath, message: str, fix: str | None = None) -> RecipeError:
        return _located(self.path, self.locations, path, message, fix)


def _where(
    locations: dict[KeyPath, tuple[int, int]], path: KeyPath
) -> tuple[int | None, int | None]:
    """Line and column of the deepest part of ``path`` present in the file."""
    for n in range(len(path), -1, -1):
        if path[:n] in locations:
            return locations[path[:n]]
    return None, None


def _located(
    file: Path,
    locations: dict[KeyPath, tuple[int, int]],
    path: KeyPath,
    message: str,
    fix: str | None,
) -> RecipeError:
    line, col = _where(locations, path)
    key = ".".join(str(p) for p in path)
    return RecipeError(
        f"{key}: {message}" if key else message, file=str(file), line=line, column=col, fix=fix
    )


__all__ = ["OPERATIONAL_MODEL_KEYS", "LoadedRecipe"]
