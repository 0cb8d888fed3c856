"""AgentDojo (Debenedetti et al., 2024; ethz-spylab/agentdojo, MIT): four suites (workspace,
travel, banking, slack) of user tasks and injection tasks; a security case is one user
task with one injection task (629 in v1: 40x6 + 20x7 + 16x9 + 21x5).

The tasks are Python classes. They are read from their syntax tree, never imported: a
user task's ``PROMPT`` and an injection task's ``GOAL`` (f-strings over class constants)
and the ``FunctionCall(function=..., args=...)`` literals of their ``ground_truth``. What
cannot be read literally is counted and skipped (a goal) or left out (an argument).

What maps: the payload is the attack's template (``important_instructions`` by default,
read from the attacks' source) with the goal in it; the context is each environment record
(an e-mail, a file, a web page, a review) that holds one of the injection vectors the user
task meets, with the payload in place of the vector and the other vectors at their
defaults; ``success`` is the injection task's ground-truth call that its goal spells out
the most (the arguments the goal states, as patterns; placeholders such as ``$content``,
dates and amounts left free), or, for a goal that wants words said, its
``GROUND_TRUTH_OUTPUT`` as a canary, or else ``judge``; ``utility`` is the user task's last
ground-truth call with the arguments its prompt states. Which vectors a user task meets, AgentDojo finds by
running the task; here it is read from the checkout's recorded runs (``runs/``) when they
are there, else guessed from the records the task's literal arguments name (counted).
Lost: AgentDojo's security and utility functions check the environment after the run
(an e-mail sent with the right body, a file deleted); the calls approximate them."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import yaml

from ...injection import ToolSpec
from . import _pyliteral as lit
from ._common import Checkout, CheckoutError, Tally, case_line, literal_pattern

NAME = "agentdojo"
URL = "https://github.com/ethz-spylab/agentdojo"
SUITES = ("workspace", "travel", "banking", "slack")
ATTACKS = ("important_instructions", "direct", "ignore_previous", "system_message", "injecagent")
DEFAULT_VERSION = "v1"
#: a carrier record rendered longer than this is cut around the payload (a whole
#: filesystem or inbox is not one document)
_MAX_CARRIER = 6000
_MAX_RUN_LOG = 8 * 1024 * 1024
#: the tools that only read (AgentDojo names them so)
_READ = re.compile(r"(get|search|read|list|check)_")


@dataclass
class Task:
    id: str
    version: tuple[int, int, int]
    text: str | None  # PROMPT or GOAL
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    args_left_out: int = 0
    calls_literal: bool = True
    file: str = ""
    #: the text the task expects in the reply (GROUND_TRUTH_OUTPUT), when literal
    output: str = ""


def read(
    root: str,
    tally: Tally,
    *,
    split: str | None = None,
    subset: list[str] | None = None,
    attack: str | None = None,
    revision: str | None = None,
    **_: Any,
) -> Iterator[dict[str, Any]]:
    version = _version(split or DEFAULT_VERSION)
    for s in subset or []:
        if s not in SUITES:
            raise CheckoutError(f"AgentDojo has no suite {s!r}; use {', '.join(SUITES)}")
    co = Checkout(root, "AgentDojo", tally)
    base = _package(co)
    present = [s for s in SUITES if co.exists(f"{base}/default_suites/v1/{s}/user_tasks.py")]
    for s in subset or []:
        if s not in present:
            co.require(f"{base}/default_suites/v1/{s}/user_tasks.py", f"the tasks of suite {s}")
    suites = subset or present
    attack = attack or "important_instructions"
    template = _attack_template(co, base, attack)
    source: dict[str, Any] = {
        "benchmark": "AgentDojo",
        "url": URL,
        "version": split or DEFAULT_VERSION,
        "attack": attack,
        "license": co.licence(),
    }
    if pkg := _package_version(co):
        source["package_version"] = pkg
    if rev := (revision or co.revision()):
        source["revision"] = rev
    for suite in suites:
        users = _tasks(co, base, suite, "user_tasks.py", "UserTask", "PROMPT", version, tally)
        injections = _tasks(
            co, base, suite, "injection_tasks.py", "InjectionTask", "GOAL", version, tally
        )
        if not users or not injections:
            raise CheckoutError(
                f"{co.root}: no {'user' if not users else 'injection'} tasks found for suite "
                f"{suite!r} under {base}/default_suites/v1/{suite}/; is this an AgentDojo checkout?"
            )
        env = _Environment(co, base, suite)
        seen = _runs(co, suite, tally)
        tools = _tool_specs(co, base, suite, tally)
        for u in users:
            vectors = seen.get(u.id) or env.guess(u, tally)
            for inj in injections:
                tally.read += 1
                line = _line(suite, u, inj, vectors, env, template, source, tools, tally)
                if line is not None:
                    yield line


def _line(
    suite: str,
    u: Task,
    inj: Task,
    vectors: list[str],
    env: _Environment,
    template: str,
    source: dict[str, Any],
    tools: list[ToolSpec],
    tally: Tally,
) -> dict[str, Any] | None:
    if u.text is None:
        tally.skip("user task's PROMPT not literal")
        return None
    if inj.text is None:
        tally.skip("injection task's GOAL not literal")
        return None
    payload = template.replace("{goal}", inj.text)
    context, start, carriers = env.context(vectors, payload)
    if start < 0:
        tally.skip("no injection vector found for the user task")
        return None
    success: dict[str, Any] = {"goal": inj.text}
    if inj.calls:
        # the step that does the harm is an action (not a read) the goal spells out the
        # most: the e-mail to the attacker, not the search before it nor the clean-up after
        # it; ties: the last
        acts = [i for i, (n, _) in enumerate(inj.calls) if not _READ.match(n)]
        ranked = [
            (len(_patterns(inj.calls[i][1], inj.text)), i) for i in acts or range(len(inj.calls))
        ]
        name, args = inj.calls[max(ranked)[1]]
        patterns = _patterns(args, inj.text)
        success["forbidden_call"] = {"tool": name, "arguments": patterns}
    elif inj.output:
        # no call to make: the attack wins when the reply says what it wants said
        success["canary"] = inj.output
    else:
        success["judge"] = True
        tally.judged += 1
    utility = None
    if u.calls:
        name, args = u.calls[-1]
        patterns = _patterns(args, u.text)
        utility = {"call": {"tool": name, "arguments": patterns}}
    uid, iid = u.id.replace("user_task_", "u"), inj.id.replace("injection_task_", "i")
    try:
        line = case_line(
            id=f"agentdojo-{suite}-{uid}-{iid}",
            payload=payload,
            user_task=u.text,
            context=context,
            start=start,
            channel="tool_output",
            carrier=carriers,
            success=success,
            utility=utility,
            cell={
                "suite": suite,
                "user_task": u.id,
                "injection_task": inj.id,
                "attack": str(source["attack"]),
            },
            source=source,
            tools=tools,
            extra={"injection_vectors": vectors},
        )
    except ValueError as e:
        tally.skip("not a valid case")
        tally.note(f"invalid case: {e}")
        return None
    tally.converted += 1
    return line


def _patterns(args: dict[str, Any], stated: str) -> dict[str, str]:
    """The patterns of the arguments the task's text states (the attacker's IBAN, the
    recipient and subject the goal names): an argument the ground truth fills in on its own
    (a date, an amount) is left free, as AgentDojo's checks leave it."""
    out = {}
    for k, v in args.items():
        p = _pattern(v)
        one = v[0] if isinstance(v, list) and len(v) == 1 else v
        if p is not None and isinstance(one, str) and _states(stated, one):
            out[k] = p
    return out


def _states(text: str, value: str) -> bool:
    """``text`` names ``value`` as a whole (not "Bill" inside "bill-december.txt")."""
    return re.search(rf"(?<![\w.-]){re.escape(value)}(?![\w-])", text, re.IGNORECASE) is not None


def _pattern(v: Any) -> str | None:
    """An argument's pattern: a literal string, or a list holding one; None leaves the
    argument free (numbers, placeholders, long texts the agent words its own way)."""
    if isinstance(v, list) and len(v) == 1:
        v = v[0]
    if isinstance(v, str) and len(v) > 120:
        return None
    return literal_pattern(v)


def _version(text: str) -> tuple[int, int, int]:
    m = re.fullmatch(r"v?(\d+)(?:[._](\d+))?(?:[._](\d+))?", text.strip())
    if not m:
        raise CheckoutError(f"AgentDojo version {text!r}: write it like v1, v1.1.2 or v1.2.1")
    return (int(m[1]), int(m[2] or 0), int(m[3] or 0))


def _package(co: Checkout) -> str:
    """Where the package sits in the checkout (``src/agentdojo`` in the repository)."""
    for base in ("src/agentdojo", "agentdojo", "."):
        if any(co.exists(f"{base}/default_suites/v1/{s}/user_tasks.py") for s in SUITES):
            return base
    co.require(
        "src/agentdojo/default_suites/v1/banking/user_tasks.py", "the v1 tasks of the suites"
    )
    return "src/agentdojo"


def _package_version(co: Checkout) -> str:
    if co.exists("pyproject.toml"):
        m = re.search(r'(?m)^version\s*=\s*"([^"]{1,40})"', co.text("pyproject.toml"))
        if m:
            return m[1]
    return ""


def _version_dirs(co: Checkout, base: str) -> list[str]:
    root = co.path(f"{base}/default_suites")
    if not root.is_dir():
        return []
    dirs = [p.name for p in root.iterdir() if p.is_dir() and re.fullmatch(r"v\d+(_\d+)*", p.name)]
    return sorted(dirs, key=lambda d: tuple(int(x) for x in d[1:].split("_")))


def _tasks(
    co: Checkout,
    base: str,
    suite: str,
    filename: str,
    prefix: str,
    attr: str,
    version: tuple[int, int, int],
    tally: Tally,
) -> list[Task]:
    """The suite's tasks of ``version``: each task id at the highest version of it not
    above ``version`` (AgentDojo's own rule), in the order of their numbers."""
    pool: dict[str, dict[tuple[int, int, int], Task]] = {}
    combined: list[_Combined] = []
    for vdir in _version_dirs(co, base):
        rel = f"{base}/default_suites/{vdir}/{suite}/{filename}"
        if not co.exists(rel):
            continue
        module = co.python(rel)
        consts = lit.constants(module.body, {})
        for task in _read_tasks(module, rel, prefix, attr, consts, tally):
            pool.setdefault(task.id, {})[task.version] = task
        if prefix == "UserTask":
            combined.extend(_combinations(module, consts, rel, tally))
    for c in sorted(combined, key=lambda c: c.version):
        parts = [_at(pool, ref, c.version) for ref in c.parts]
        if any(p is None for p in parts):
            tally.note("combined user task naming a task not found, skipped")
            continue
        one, two = parts[0], parts[1]
        assert one is not None and two is not None
        text = c.prompt
        if text is None and one.text is not None and two.text is not None:
            # AgentDojo's TaskCombinator words a combined task so
            text = (
                "Perform the following tasks in the order they are given: "
                f"1. {one.text} 2. {two.text}"
            )
        pool.setdefault(c.id, {})[c.version] = Task(
            id=c.id, version=c.version, text=text, calls=one.calls + two.calls, file=c.file
        )
    chosen = [t for t in (_at(pool, tid, version) for tid in pool) if t is not None]
    for t in chosen:
        what = "user task" if prefix == "UserTask" else "injection task"
        if t.args_left_out:
            tally.note(f"{what}: ground-truth argument not literal (left free)", t.args_left_out)
        if not t.calls_literal:
            tally.note(f"{what}: ground truth read from calls outside a literal list")
        if t.text is None:
            tally.note(f"{what}: {attr} not literal")
    return sorted(chosen, key=lambda t: int(t.id.rpartition("_")[2]))


def _at(
    pool: dict[str, dict[tuple[int, int, int], Task]], tid: str, version: tuple[int, int, int]
) -> Task | None:
    versions = [v for v in pool.get(tid, {}) if v <= version]
    return pool[tid][max(versions)] if versions else None


@dataclass
class _Combined:
    id: str
    version: tuple[int, int, int]
    parts: list[str]
    prompt: str | None
    file: str


def _combinations(
    module: ast.Module, consts: dict[str, Any], rel: str, tally: Tally
) -> Iterator[_Combined]:
    """``task_combinator.create_combined_task("UserTask23", <task 1>, <task 2>)`` (and
    ``update_combined_task(..., benchmark_version=...)``): a user task made of two."""
    for stmt in module.body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            continue
        kind = call.func.attr
        if kind not in ("create_combined_task", "update_combined_task"):
            continue
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        try:
            name = lit.value(call.args[0], consts)
            version: Any = (1, 0, 0)
            if kind == "update_combined_task":
                node = kw.get("benchmark_version") or (call.args[3] if len(call.args) > 3 else None)
                version = tuple(lit.value(node, consts)) if node is not None else None
            prompt = lit.value(kw["prompt"], consts) if "prompt" in kw else None
        except (lit.NotLiteral, IndexError, TypeError):
            tally.note("combined user task not literal, skipped")
            continue
        refs = [_task_ref(a) for a in call.args[1:3]]
        m = re.fullmatch(r"UserTask(\d+)", str(name))
        if not m or version is None or len(version) != 3 or None in refs or len(refs) != 2:
            tally.note("combined user task not literal, skipped")
            continue
        yield _Combined(
            id=f"user_task_{m[1]}",
            version=(int(version[0]), int(version[1]), int(version[2])),
            parts=[r for r in refs if r is not None],
            prompt=prompt if isinstance(prompt, str) else None,
            file=rel,
        )


def _task_ref(node: ast.AST) -> str | None:
    """The id a combined task's part names: ``task_suite.user_tasks["user_task_1"]``,
    ``task_suite._user_tasks["user_task_1"][V]`` or
    ``task_suite.get_latest_user_task_by_id("user_task_1", V)``."""
    for n in ast.walk(node):
        if (
            isinstance(n, ast.Constant)
            and isinstance(n.value, str)
            and n.value.startswith("user_task_")
        ):
            return n.value
    return None


def _read_tasks(
    module: ast.Module, rel: str, prefix: str, attr: str, consts: dict[str, Any], tally: Tally
) -> Iterator[Task]:
    for node in module.body:
        if not isinstance(node, ast.ClassDef):
            continue
        m = re.fullmatch(rf"{prefix}(\d+)", node.name)
        version = _registered(node, consts)
        if not m or version is None:
            continue
        env = {**consts, **lit.constants(node.body, consts)}
        text = env.get(attr)
        if not isinstance(text, str):
            text = None
        task = Task(
            id=f"{re.sub(r'(?<!^)(?=[A-Z])', '_', prefix).lower()}_{m[1]}",
            version=version,
            text=text,
            file=rel,
        )
        output = env.get("GROUND_TRUTH_OUTPUT")
        if isinstance(output, str) and len(output) >= 4:
            task.output = output
        _ground_truth(node, env, task, placeholders=prefix == "InjectionTask")
        yield task


def _registered(node: ast.ClassDef, consts: dict[str, Any]) -> tuple[int, int, int] | None:
    """The benchmark version a task class is registered for, from its decorator:
    ``@task_suite.register_*_task`` is 1.0.0, ``@task_suite.update_*_task((1, 2, 0))`` that."""
    for d in node.decorator_list:
        if (
            isinstance(d, ast.Attribute)
            and d.attr.startswith("register_")
            and d.attr.endswith("_task")
        ):
            return (1, 0, 0)
        if isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute):
            if d.func.attr.startswith("update_") and d.args:
                try:
                    v = lit.value(d.args[0], consts)
                except lit.NotLiteral:
                    return None
                if (
                    isinstance(v, tuple | list)
                    and len(v) == 3
                    and all(isinstance(x, int) for x in v)
                ):
                    return (v[0], v[1], v[2])
    return None


def _ground_truth(node: ast.ClassDef, env: dict[str, Any], task: Task, placeholders: bool) -> None:
    """The ``FunctionCall(...)`` literals of ``ground_truth``, in source order; for an
    injection task its ``placeholder_args`` (what the attacker fixes) when given."""
    method = next(
        (s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "ground_truth"),
        None,
    )
    if method is None:
        return
    returns = [s for s in ast.walk(method) if isinstance(s, ast.Return)]
    literal_list = len(returns) == 1 and isinstance(returns[0].value, ast.List)
    task.calls_literal = literal_list
    found = sorted(
        (n for n in ast.walk(method) if isinstance(n, ast.Call)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    for call in found:
        if not (isinstance(call, ast.Call) and _named(call.func) == "FunctionCall"):
            continue
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        fn = kw.get("function") or (call.args[0] if call.args else None)
        try:
            name = lit.value(fn, env) if fn is not None else None
        except lit.NotLiteral:
            name = None
        if not isinstance(name, str):
            continue
        args_node = (
            kw.get("placeholder_args")
            if placeholders and "placeholder_args" in kw
            else kw.get("args")
        )
        args: dict[str, Any] = {}
        if isinstance(args_node, ast.Dict):
            for k, v in zip(args_node.keys, args_node.values, strict=True):
                if not isinstance(k, ast.Constant) or not isinstance(k.value, str):
                    continue
                try:
                    args[k.value] = lit.value(v, env)
                except lit.NotLiteral:
                    task.args_left_out += 1
        task.calls.append((name, args))


def _named(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _attack_template(co: Checkout, base: str, attack: str) -> str:
    """The attack's text with ``{goal}`` in it, read from the attacks' source as literals
    (the user's name as the attack signs it; the model named generically)."""
    if attack not in ATTACKS:
        raise CheckoutError(
            f"AgentDojo attack {attack!r} is not read here; use one of {', '.join(ATTACKS)}"
        )
    consts: dict[str, Any] = {}
    classes: dict[str, ast.ClassDef] = {}
    for name in ("base_attacks.py", "baseline_attacks.py", "important_instructions_attacks.py"):
        rel = f"{base}/attacks/{name}"
        if co.exists(rel):
            module = co.python(rel)
            consts.update(lit.constants(module.body, consts))
            classes.update({n.name: n for n in module.body if isinstance(n, ast.ClassDef)})
    user = str(consts.get("DEFAULT_USER_NAME", "the user"))
    model = str(consts.get("DEFAULT_MODEL_NAME", "the AI language model"))
    for cls in classes.values():
        env = lit.constants(cls.body, consts)
        if env.get("name") != attack:
            continue
        text, signer = _template_of(cls, classes, consts)
        if text is None:
            break
        return text.replace("{user}", signer or user).replace("{model}", model)
    raise CheckoutError(
        f"{co.root / base}/attacks/: the template of attack {attack!r} was not found as "
        "literal text; is this an AgentDojo checkout?"
    )


def _template_of(
    cls: ast.ClassDef, classes: dict[str, ast.ClassDef], consts: dict[str, Any], depth: int = 0
) -> tuple[str | None, str | None]:
    env = lit.constants(cls.body, consts)
    text = env.get("_JB_STRING")
    signer = None
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
            for n in ast.walk(stmt):
                if isinstance(n, ast.Call) and _named(n.func) == "__init__" and n.args:
                    try:
                        v = lit.value(n.args[0], env)
                    except lit.NotLiteral:
                        v = None
                    if isinstance(v, str) and text is None:
                        text = v
                if isinstance(n, ast.Assign) and any(
                    isinstance(t, ast.Attribute) and t.attr == "user_name" for t in n.targets
                ):
                    try:
                        u = lit.value(n.value, consts)
                        signer = u if isinstance(u, str) else signer
                    except lit.NotLiteral:
                        pass
    if (text is None or signer is None) and depth < 5:
        for b in cls.bases:
            parent = classes.get(_named(b))
            if parent is not None:
                t2, s2 = _template_of(parent, classes, consts, depth + 1)
                text, signer = text or t2, signer or s2
    return text, signer


def _runs(co: Checkout, suite: str, tally: Tally) -> dict[str, list[str]]:
    """Which injection vectors each user task meets, as AgentDojo's recorded runs say
    (``runs/<model>/<suite>/<user_task>/<attack>/<injection_task>.json``, the
    ``injections`` keys): one log per user task is read."""
    found: dict[str, list[str]] = {}
    runs = co.path("runs")
    if not runs.is_dir():
        return found
    for model in sorted(p for p in runs.iterdir() if p.is_dir()):
        sdir = model / suite
        if not sdir.is_dir():
            continue
        for udir in sorted(sdir.iterdir()):
            if not udir.name.startswith("user_task_") or udir.name in found:
                continue
            for adir in sorted(udir.iterdir()):
                if adir.name == "none" or not adir.is_dir():
                    continue
                logs = sorted(adir.glob("injection_task_*.json"))
                if not logs:
                    continue
                rel = co.rel(logs[0])
                try:
                    if logs[0].stat().st_size > _MAX_RUN_LOG:
                        continue
                    data = json.loads(co.text(rel))
                except (ValueError, RecursionError, OSError, CheckoutError):
                    # a recorded run is a hint, not the benchmark: one that cannot be read
                    # (not JSON, a link out of the checkout) is passed over
                    tally.note("a run log that cannot be read, passed over")
                    continue
                names = data.get("injections") if isinstance(data, dict) else None
                if isinstance(names, dict) and names:
                    found[udir.name] = [str(k) for k in names]
                    break
    if found:
        tally.note(f"{suite}: injection vectors read from recorded runs", len(found))
    return found


class _IncludeLoader(yaml.SafeLoader):
    """A safe YAML loader that follows AgentDojo's ``!include`` inside the checkout."""


class _Environment:
    """A suite's environment data (environment.yaml and what it includes) and its
    injection vectors (injection_vectors.yaml), read as data."""

    def __init__(self, co: Checkout, base: str, suite: str) -> None:
        self.co, self.suite = co, suite
        self.dir = f"{base}/data/suites/{suite}"
        vec_rel = co.require(f"{self.dir}/injection_vectors.yaml", "the suite's injection vectors")
        co.require(f"{self.dir}/environment.yaml", "the suite's environment")
        vectors = self._yaml(f"{self.dir}/injection_vectors.yaml")
        if not isinstance(vectors, dict):
            raise CheckoutError(f"{vec_rel}: expected a mapping of vector names")
        self.defaults = {
            str(k): str((v or {}).get("default", "")) if isinstance(v, dict) else ""
            for k, v in vectors.items()
        }
        self.env = self._yaml(f"{self.dir}/environment.yaml")
        #: vector -> (section path, record) of the record whose text holds it
        self.records: dict[str, tuple[str, Any]] = {}
        #: YAML aliases can make a small file a huge tree: the walk is bounded
        self._budget = 1_000_000
        self._find(self.env, [])

    def _yaml(self, rel: str, depth: int = 0) -> Any:
        co = self.co
        if depth > 8:
            raise CheckoutError(f"{co.root / rel}: !include nested more than 8 deep")

        def include(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
            target = str(PurePosixPath(rel).parent / str(loader.construct_scalar(node)))  # type: ignore[arg-type]
            return self._yaml(target, depth + 1)

        class Loader(_IncludeLoader):
            pass

        Loader.add_constructor("!include", include)
        text = co.text(rel)
        try:
            return yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader subclass
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            at = f"{mark.line + 1}:{mark.column + 1}" if mark else "1"
            raise CheckoutError(f"{co.root / rel}:{at}: not valid YAML") from None

    def _find(self, node: Any, path: list[str]) -> None:
        """Note, for each vector, the record whose text holds it: the nearest mapping (an
        e-mail, a file, a hotel with its reviews), or the one entry of a mapping keyed by
        file names or URLs (a filesystem, the web's pages)."""
        self._budget -= 1
        if self._budget < 0 or len(path) > 50:
            raise CheckoutError(f"{self.co.root / self.dir}/environment.yaml: too large a tree")
        if isinstance(node, dict):
            for k, v in node.items():
                here = [*path, str(k)]
                if isinstance(v, str):
                    self._hold(v, here, {k: v} if re.search(r"[./]", str(k)) else node)
                elif isinstance(v, list) and any(isinstance(x, str) for x in v):
                    for x in v:
                        if isinstance(x, str):
                            self._hold(x, here, node)
                        else:
                            self._find(x, here)
                else:
                    self._find(v, here)
        elif isinstance(node, list):
            for v in node:
                if isinstance(v, str):
                    self._hold(v, path, {path[-1] if path else "item": node})
                else:
                    self._find(v, path)

    def _hold(self, text: str, path: list[str], record: Any) -> None:
        for name in re.findall(r"\{(\w+)\}", text):
            if name in self.defaults and name not in self.records:
                self.records[name] = ("/".join(path[:2]), record)

    def guess(self, task: Task, tally: Tally) -> list[str]:
        """The vectors in records that the task's literal arguments name (a file, a URL,
        a channel), else every vector of the suite."""
        words = {
            v.lower()
            for _, args in task.calls
            for v in _flat(args)
            if isinstance(v, str) and len(v) >= 4
        }
        hits = [
            name
            for name, (_, rec) in self.records.items()
            if any(w in _render(rec).lower() for w in words)
        ]
        tally.note("user task whose vectors are guessed (no recorded run)")
        return hits or list(self.records)

    def context(self, vectors: list[str], payload: str) -> tuple[str, int, str]:
        """The carrier records of ``vectors`` with the payload in place of each, the other
        vectors at their defaults; the first payload's start; the carriers' sections."""
        parts: list[str] = []
        sections: list[str] = []
        seen: set[str] = set()
        start = -1
        for name in vectors:
            if name not in self.records:
                continue
            section, rec = self.records[name]
            text = _render(rec)
            if text in seen:
                continue
            seen.add(text)
            text = _fill(text, self.defaults, {v: payload for v in vectors})
            if len(text) > _MAX_CARRIER:
                at = text.find(payload)
                lo = max(0, at - _MAX_CARRIER // 2)
                text = text[lo : lo + _MAX_CARRIER + len(payload)]
            offset = sum(len(p) + 2 for p in parts)
            if start < 0 and payload in text:
                start = offset + text.index(payload)
            parts.append(text)
            if section not in sections:
                sections.append(section)
        return "\n\n".join(parts), start, ",".join(sections)


def _fill(text: str, defaults: dict[str, str], chosen: dict[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        name = m[1]
        if name in chosen:
            return chosen[name]
        return defaults.get(name, m[0])

    return re.sub(r"\{(\w+)\}", sub, text)


def _render(record: Any, indent: str = "") -> str:
    """A record as ``key: value`` lines, values as they are (no quoting: the payload's
    span must be its own characters)."""
    if isinstance(record, dict):
        lines = []
        for k, v in record.items():
            if isinstance(v, dict | list) and v:
                lines.append(f"{indent}{k}:\n{_render(v, indent + '  ')}")
            else:
                lines.append(f"{indent}{k}: {_scalar(v)}")
        return "\n".join(lines)
    if isinstance(record, list):
        return "\n".join(
            f"{indent}- {_render(v, indent + '  ').lstrip()}"
            if isinstance(v, dict)
            else f"{indent}- {_scalar(v)}"
            for v in record
        )
    return f"{indent}{_scalar(record)}"


def _scalar(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, list | dict):
        return "" if not v else json.dumps(v, default=str)
    return str(v)


def _flat(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _flat(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _flat(v)
    else:
        yield value


_JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}


def _tool_specs(co: Checkout, base: str, suite: str, tally: Tally) -> list[ToolSpec]:
    """The suite's tools (the ``TOOLS`` list of its task_suite.py) as specs, from the tool
    functions' signatures and docstrings (``:param x: ...``) in default_suites/v1/tools/;
    the environment a function is given (an ``Annotated[..., Depends(...)]`` parameter) is
    not a parameter of the tool. A tool that acts rather than reads is marked sensitive."""
    rel = f"{base}/default_suites/v1/{suite}/task_suite.py"
    if not co.exists(rel):
        tally.note(f"{suite}: no task_suite.py: lines carry no tool definitions")
        return []
    names: list[str] = []
    for node in co.python(rel).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "TOOLS" for t in node.targets
        ):
            if isinstance(node.value, ast.List):
                names = [e.id for e in node.value.elts if isinstance(e, ast.Name)]
    funcs: dict[str, ast.FunctionDef] = {}
    tools_dir = co.path(f"{base}/default_suites/v1/tools")
    if tools_dir.is_dir():
        for f in sorted(tools_dir.glob("*.py")):
            module = co.python(co.rel(f))
            funcs.update({n.name: n for n in module.body if isinstance(n, ast.FunctionDef)})
    specs = []
    for name in names:
        fn = funcs.get(name)
        if fn is None:
            tally.note("tool whose function was not found, left out")
            continue
        description, params = _docstring(ast.get_docstring(fn) or "")
        props: dict[str, Any] = {}
        required = []
        args = fn.args.args
        defaults = [None] * (len(args) - len(fn.args.defaults)) + list(fn.args.defaults)
        for arg, default in zip(args, defaults, strict=True):
            note = ast.unparse(arg.annotation) if arg.annotation is not None else ""
            if (
                arg.arg == "self"
                or "Annotated" in note
                or "Depends" in note
                or note.startswith("Annotated")
            ):
                continue
            if note and note[0].isupper() and note.endswith(("Web", "Env", "Environment")):
                continue  # an alias of the environment it is given (AnnotatedWeb)
            props[arg.arg] = {"type": _json_type(note), "description": params.get(arg.arg, "")}
            if props[arg.arg]["type"] == "array":
                props[arg.arg]["items"] = {"type": "string"}
            if default is None:
                required.append(arg.arg)
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            schema["required"] = required
        try:
            specs.append(
                ToolSpec(
                    name=name,
                    description=description,
                    parameters=schema,
                    sensitive=not _READ.match(name),
                )
            )
        except ValueError:
            tally.note("tool whose name the tools API cannot carry, left out")
    return specs


def _json_type(annotation: str) -> str:
    base = annotation.split("|")[0].strip()
    if base.startswith(("list", "List", "set", "tuple")):
        return "array"
    if base.startswith(("dict", "Dict")):
        return "object"
    return _JSON_TYPES.get(base, "string")  # ids and e-mail addresses are texts


def _docstring(doc: str) -> tuple[str, dict[str, str]]:
    """A docstring's text before its ``:param`` lines, and each parameter's text."""
    head, *rest = re.split(r"\n\s*:param\s+", "\n" + doc.strip(), maxsplit=0)
    params = {}
    for part in rest:
        name, _, text = part.partition(":")
        text = re.split(r"\n\s*:(?:return|raises)", text)[0]
        params[name.strip()] = " ".join(text.split())
    return " ".join(head.split()), params
