"""A run directory: the frozen recipe, one human-editable artifact per stage, and run.db.

RUN/
  recipe.yaml            the recipe as given (frozen on first use)
  dimensions/<name>.yaml Step 1 output, edit freely before `aart scope`
  blueprint.jsonl        Step 2 output, edit freely before `aart generate`
  dataset.jsonl|csv|parquet, dataset.aart.csv, duplicates.jsonl, summary.json
  run.db                 jobs, calls, cache, records (SQLite, WAL)
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..errors import UsageError
from ..recipe import LoadedRecipe, Recipe, Value, load_recipe
from ..recipe.filters import apply_filter
from ..recipe.loader import key_locations, recipe_differences
from ..types import Attempt
from .db import RunDB
from .lock import DirLock, dir_lock


class Run:
    def __init__(self, root: Path, loaded: LoadedRecipe, db: RunDB) -> None:
        self.root = root
        self.loaded = loaded
        self.db = db

    @property
    def recipe(self) -> Recipe:
        return self.loaded.recipe

    @property
    def id(self) -> str:
        return self.db.get_meta("run_id") or ""

    # -- opening ------------------------------------------------------------------------------
    @classmethod
    def create_or_resume(cls, root: str | Path, recipe: str | Path, size: str | None = None) -> Run:
        """Start a run in ``root`` from ``recipe``, or resume the run already there (which must
        hold the same recipe; a run that has spent nothing yet takes the new one)."""
        root = Path(root)
        loaded = load_recipe(recipe, size)
        frozen = root / "recipe.yaml"
        root.mkdir(parents=True, exist_ok=True)
        lock = dir_lock(root)
        lock.acquire()  # before looking, so two processes never both create the run
        try:
            if frozen.exists() and (root / "run.db").exists():
                run = cls._open(root, lock)
                refused = cls._refusal(run, loaded)
                if refused:
                    run.close()
                    raise UsageError(refused)
                if run.loaded.hash != loaded.hash:
                    run.db.set_meta("models", "{}")  # a fresh start: no model used yet
                if run.loaded.text != loaded.text or run.loaded.size != loaded.size:
                    # Operational settings only (a raised budget, new prices, another
                    # concurrency), or a run that never started: take the new recipe.
                    shutil.copyfile(loaded.path, frozen)
                    run.db.set_meta("size", size or "")
                    run.loaded = load_recipe(frozen, size)
                return run
            shutil.copyfile(loaded.path, frozen)
            db = RunDB(root / "run.db", lock=lock)
        except BaseException:
            lock.release()
            raise
        db.set_meta("run_id", uuid.uuid4().hex[:12])
        db.set_meta("size", size or "")
        db.set_meta("source", str(loaded.path))
        loaded = load_recipe(frozen, size)
        return cls(root, loaded, db)

    @classmethod
    def join(
        cls, root: str | Path, recipe: str | Path, size: str | None, wait: Callable[[str], None]
    ) -> Run | None:
        """Join, as one more worker of its Step 3, the run another process is making in
        ``root`` from the same recipe: wait (telling ``wait`` who holds the directory) until it
        shares the directory, then open it shared. None if Steps 1 and 2 are not done then
        (the other process failed before them): the caller makes them itself."""
        root = Path(root)
        lock = dir_lock(root, shared=True)
        lock.acquire(wait=wait)
        try:
            if not (root / "blueprint.jsonl").exists() or not (root / "run.db").exists():
                lock.release()
                return None
            run = cls._open(root, lock)
        except BaseException:
            lock.release()
            raise
        loaded = load_recipe(recipe, size)
        if run.loaded.hash != loaded.hash:
            run.close()
            raise UsageError(
                f"{root} holds a run of a different recipe, which another aart process is "
                f"working on; what differs: "
                f"{', '.join(recipe_differences(run.loaded, loaded)) or 'the size'}. "
                "Use another --out"
            )
        return run

    @classmethod
    def open(cls, root: str | Path, *, lock: bool | str = True) -> Run:
        """Open an existing run directory (its frozen recipe may have been edited); a reader
        that writes nothing passes ``lock=False`` and may run beside a writer; a worker that
        takes jobs by lease (generate) passes ``lock="shared"`` and may run beside others."""
        root = Path(root)
        if not (root / "recipe.yaml").exists() or not (root / "run.db").exists():
            raise UsageError(
                f"{root} is not a run directory; create one with `aart define RECIPE --out {root}`"
            )
        return cls._open(root, lock)

    @staticmethod
    def _refusal(run: Run, loaded: LoadedRecipe) -> str | None:
        """Why ``loaded`` cannot resume ``run``: a run of another recipe that has started."""
        if run.loaded.hash == loaded.hash or run.db.spent_nothing():
            return None
        return (
            f"{run.root} already holds a run of a different recipe "
            f"({run.loaded.path.name}, "
            f"{f'size {run.loaded.size}' if run.loaded.size else 'no size'}); what differs: "
            f"{', '.join(recipe_differences(run.loaded, loaded)) or 'the size'}. "
            f"Use another --out, `aart run --set-aside-old` to move it to {run.root}.old-N, "
            f"or delete {run.root} to start over"
        )

    @classmethod
    def refusal(cls, root: str | Path, recipe: str | Path, size: str | None = None) -> str | None:
        """Why :meth:`create_or_resume` would refuse ``recipe`` in ``root`` (None: it would
        not), read without taking the directory's lock: what `aart run --dry-run` checks."""
        root = Path(root)
        if not ((root / "recipe.yaml").exists() and (root / "run.db").exists()):
            return None
        loaded = load_recipe(recipe, size)
        run = cls._open(root, lock=False)
        try:
            return cls._refusal(run, loaded)
        finally:
            run.close()

    @classmethod
    def set_aside(
        cls, root: str | Path, recipe: str | Path, size: str | None = None
    ) -> Path | None:
        """When ``root`` holds a started run of a different recipe (one that
        :meth:`create_or_resume` would refuse), move it whole to ``<root>.old-N`` and return
        that path, so a fresh run can start in ``root``; None when there is nothing to move
        (no run, or one this recipe resumes). Nothing is deleted; a directory another aart
        process is working in is left alone (RunInUse)."""
        root = Path(root)
        if not ((root / "recipe.yaml").exists() and (root / "run.db").exists()):
            return None
        lock = dir_lock(root)
        lock.acquire()  # raises RunInUse rather than move a directory in use
        try:
            if cls.refusal(root, recipe, size) is None:
                return None
            n = 1
            while root.with_name(f"{root.name}.old-{n}").exists():
                n += 1
            moved = root.with_name(f"{root.name}.old-{n}")
            root.rename(moved)
            return moved
        finally:
            lock.release()

    @classmethod
    def _open(cls, root: Path, lock: bool | str | DirLock) -> Run:
        db = RunDB(root / "run.db", lock=lock)
        try:
            loaded = load_recipe(root / "recipe.yaml", db.get_meta("size") or None)
        except BaseException:
            db.close()
            raise
        return cls(root, loaded, db)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- the models the run was made with ---------------------------------------------------
    def models_used(self) -> dict[str, str]:
        """Per role (define, generate, verify), the model the run was last run with."""
        return dict(json.loads(self.db.get_meta("models") or "{}"))

    def model_for(self, role: str, override: str | None = None) -> str:
        """The model of ``role``: the one asked for, else the one the run was made with (a
        later `aart generate` keeps the run's model), else the recipe's."""
        return override or self.models_used().get(role) or self.recipe.models.for_role(role)

    def remember_model(self, role: str, name: str) -> None:
        used = self.models_used()
        used[role] = name
        self.db.set_meta("models", json.dumps(used, sort_keys=True))

    # -- artifacts ----------------------------------------------------------------------------
    def path(self, name: str) -> Path:
        return self.root / name

    def dimension_path(self, name: str) -> Path:
        return self.root / "dimensions" / f"{name}.yaml"

    def write_dimension(
        self,
        name: str,
        values: list[Value],
        *,
        rejected: list[dict[str, str]] | None = None,
        short: int = 0,
    ) -> Path:
        path = self.dimension_path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        entries: list[Any] = []
        for v in values:
            if v.aliases or v.category or v.names:
                entries.append(v.model_dump(exclude_defaults=True))
            else:
                entries.append(v.value)
        desc = self.recipe.dimensions[name].description
        header = (
            f"# Dimension `{name}` of run {self.id}: edit, add or delete values, then run\n"
            f"# `aart scope {self.root}`. Entries are a value, or value/aliases/category.\n"
        )
        if short:
            header += f"# SHORT by {short}: Step 1 found fewer values than the recipe asks for.\n"
        doc: dict[str, Any] = {"description": desc, "values": entries}
        if rejected:
            # Kept for review: candidates Step 1 refused, with the reason. Never used.
            doc["rejected"] = rejected
        body = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(header + body, encoding="utf-8")
        tmp.replace(path)
        return path

    def read_dimension(self, name: str) -> list[Value]:
        path = self.dimension_path(name)
        if not path.exists():
            raise UsageError(f"{path} is missing; run `aart define {self.root}` first")
        try:
            text = path.read_text(encoding="utf-8")
            data = yaml.safe_load(text) or {}
            raw = data.get("values") if isinstance(data, dict) else None
            if not isinstance(raw, list):
                raise ValueError("expected a `values:` list")
            values = []
            for i, x in enumerate(raw):
                try:
                    values.append(Value(value=x) if isinstance(x, str) else Value.model_validate(x))
                except ValidationError as e:  # a hand edit's typo: where, and the fix
                    raise UsageError(
                        f"{path}:{_item_line(text, i)}: value {i + 1}: {_value_problem(e)}; "
                        "fix the file or delete it and re-run define"
                    ) from None
        except (yaml.YAMLError, ValueError) as e:
            raise UsageError(f"{path}: {e}; fix the file or delete it and re-run define") from None
        if not values:
            raise UsageError(f"{path}: the value list is empty; add values or widen the filters")
        return values

    def scoped_values(self) -> dict[str, list[Value]]:
        """The dimension files after the recipe's scope filters; refuses empty lists."""
        s = self.recipe.scope
        out = {}
        for name in self.recipe.dimensions:
            values = self.read_dimension(name)
            if name in s.filters:
                values = apply_filter(values, s.filters[name], s.seed)
            if not values:
                raise UsageError(
                    f"scope.filters.{name} leaves no values of {name!r}; loosen keep/drop/regex "
                    f"or edit {self.dimension_path(name)}"
                )
            out[name] = values
        return out

    def read_blueprint(self) -> list[Attempt]:
        """The blueprint's attempts, each validated and made consistent (a hand-edited line
        with a malformed field is refused with its file and line)."""
        path = self.path("blueprint.jsonl")
        if not path.exists():
            raise UsageError(f"{path} is missing; run `aart scope {self.root}` first")
        attempts = []
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                a = Attempt.from_line(json.loads(line), self.recipe.scope.queries_per_attempt)
            except ValueError as e:
                raise UsageError(f"{path}:{i}: {e}; fix the line or re-run `aart scope`") from None
            attempts.append(a)
        return attempts


def _item_line(text: str, i: int) -> int | str:
    """The line of the ``i``-th item of a dimension file's ``values:`` ("?" if not found)."""
    line = key_locations(yaml.compose(text)).get(("values", i))
    return line[0] if line else "?"


def _value_problem(e: ValidationError) -> str:
    """The first problem of a value's entry, in a user's words (pydantic's said "1 validation
    error for Value / alias / Extra inputs are not permitted" and linked its docs)."""
    import difflib

    err = e.errors()[0]
    field = str(err["loc"][-1]) if err["loc"] else ""
    if err["type"] == "extra_forbidden":
        near = difflib.get_close_matches(field, list(Value.model_fields), n=1)
        hint = f"did you mean {near[0]!r}?" if near else f"use {', '.join(Value.model_fields)}"
        return f"unknown key {field!r}; {hint}"
    where = ".".join(map(str, err["loc"])) or "the entry"
    return f"{where}: {err['msg']}"


def recipe_at(path: str | Path) -> LoadedRecipe:
    """A recipe file; a run directory's ``recipe.yaml`` at the size its run was made at
    (read from its run.db), as the run itself reads it: loaded alone, it was the recipe's full
    size, so a search checked the small size's prompts with another verifier model and the
    attack listed values the run never had."""
    path = Path(path)
    if path.name == "recipe.yaml" and (path.parent / "run.db").exists():
        db = RunDB(path.parent / "run.db", lock=False)
        try:
            size = db.get_meta("size") or None
        finally:
            db.close()
        return load_recipe(path, size)
    return load_recipe(path)
