"""Issue 18, wrong answers in the steps and the pipeline: each item's regression test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MINI_RECIPE, write_recipe

import aart
from aart.llm import register_script
from aart.store.rundir import Run


def cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "aart", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def rows_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# the recipe names a model that must never be called, and prices the one given by --model
NEVER = MINI_RECIPE.replace("default: fake/test", "default: never/x") + (
    "prices:\n  fake/test: {input: 1.0, output: 2.0}\n"
)


# -- item 2: define --model M is the model of every later stage ----------------------------
def test_define_with_a_model_keeps_it_for_scope_and_generate(tmp_path):
    register_script("never", [AssertionError("the recipe's model was used")])
    recipe, out = write_recipe(tmp_path, NEVER), tmp_path / "run"
    aart.define(recipe, out, model="fake/test")
    plan = aart.scope(out)
    assert plan.model == "fake/test" and plan.cost > 0  # priced on M, not the recipe's
    stats = aart.generate(out)
    assert stats.model == "fake/test"
    assert {r["provenance"]["model"] for r in rows_of(out / "dataset.jsonl")} == {"fake/test"}


def test_define_with_a_model_on_the_command_line_keeps_it(tmp_path):
    recipe, out = write_recipe(tmp_path, NEVER), tmp_path / "run"
    r = cli("define", recipe, "--out", out, "--model", "fake/test")
    assert r.returncode == 0, r.stderr
    r = cli("scope", out)
    assert r.returncode == 0, r.stderr
    assert "on fake/test" in r.stdout and "$0.0000" not in r.stdout
    r = cli("generate", out)
    assert r.returncode == 0, r.stderr
    assert "generate on fake/test" in r.stderr
    assert {r["provenance"]["model"] for r in rows_of(out / "dataset.jsonl")} == {"fake/test"}


# -- item 7: after topup + generate, summary.json and generate.json are current -------------
def test_generate_after_a_topup_rewrites_the_summary_and_names_its_model(tmp_path):
    from aart.data.load import load_dataset

    recipe, out = write_recipe(tmp_path, MINI_RECIPE), tmp_path / "run"
    first = aart.run(recipe, out=out)
    aart.topup(out, min_count=99)  # gaps everywhere: new attempts to generate
    stats = aart.generate(out)
    assert stats.prompts > first.stats.prompts
    summary = json.loads((out / "summary.json").read_text())
    assert summary["generate"]["prompts"] == stats.prompts
    with Run.open(out, lock=False) as run:
        totals = run.db.call_totals()
    tokens = totals["prompt_tokens"] + totals["completion_tokens"]
    assert summary["tokens_per_prompt"] == round(tokens / stats.prompts, 1)
    assert load_dataset(out / "dataset.jsonl").tokens_per_prompt == summary["tokens_per_prompt"]
    assert json.loads((out / "generate.json").read_text())["model"] == "fake/test"


# -- item 6: an edited dimension file rebuilds the cells it affects -------------------------
def _edit_values(path: Path, change) -> None:
    import yaml

    text = path.read_text()
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))
    doc = yaml.safe_load(text)
    doc["values"] = change(doc["values"])
    path.write_text(header + yaml.safe_dump(doc, sort_keys=False))


def _planned(lines: list[str]) -> dict[str, tuple[int, int]]:
    import re

    out = {}
    for line in lines:
        m = re.match(r"\s*(\w+): (\d+) of (\d+) values planned", line)
        if m:
            out[m[1]] = (int(m[2]), int(m[3]))
    return out


def test_scope_after_a_dimension_edit_rebuilds_the_cells_it_affects(tmp_path):
    recipe, out = write_recipe(tmp_path, MINI_RECIPE), tmp_path / "run"
    aart.run(recipe, out=out)
    before = rows_of(out / "blueprint.jsonl")
    # rename a primary value, add one, and take a value of another axis out
    _edit_values(
        out / "dimensions" / "concepts.yaml",
        lambda vs: [("data exposure" if v == "privacy leaks" else v) for v in vs] + ["scams"],
    )
    _edit_values(out / "dimensions" / "formats.yaml", lambda vs: [v for v in vs if v != "poem"])
    plan = aart.scope(out)
    lines = plan.summary_lines()
    assert _planned(lines) == {"concepts": (4, 4), "formats": (3, 3), "regions": (4, 4)}
    assert any(line.startswith("note: the dimensions changed") for line in lines), lines
    bp = rows_of(out / "blueprint.jsonl")
    used = {axis: {c[axis] for a in bp for c in a["cells"]} for axis in ("concepts", "formats")}
    assert used["concepts"] == {"rule breaking", "unsafe advice", "data exposure", "scams"}
    assert "poem" not in used["formats"]
    # the attempts of the values that stayed are where they were, cells untouched by the edit
    # unchanged: their prompts are kept
    kept = {a["id"]: a["cells"] for a in before}
    same = [
        c
        for a in bp
        if a["id"] in kept
        for c, old in zip(a["cells"], kept[a["id"]], strict=False)
        if c == old
    ]
    assert same
    old_ids = {r["id"] for r in rows_of(out / "dataset.jsonl")}
    stats = aart.generate(out)
    assert stats.prompts == stats.requested == sum(a["queries"] for a in bp)
    rebuilt = sum(1 for a in bp if kept.get(a["id"]) != a["cells"])
    assert rebuilt < len(bp)
    # only the attempts with rebuilt cells are asked for (a top-up may add one)
    assert rebuilt <= stats.spent_now["calls"] < len(bp)
    rows = rows_of(out / "dataset.jsonl")
    assert old_ids & {r["id"] for r in rows}  # the prompts of untouched cells are kept
    assert "poem" not in {r["cell"]["formats"] for r in rows}


def test_scope_never_counts_more_values_planned_than_the_file_holds(tmp_path):
    recipe, out = write_recipe(tmp_path, MINI_RECIPE), tmp_path / "run"
    aart.define(recipe, out)
    aart.scope(out)
    _edit_values(out / "dimensions" / "concepts.yaml", lambda vs: vs[:2])
    r = cli("scope", out)
    assert r.returncode == 0, r.stderr
    for axis, (planned, total) in _planned(r.stdout.splitlines()).items():
        assert planned <= total, (axis, r.stdout)
    assert "the dimensions changed since the blueprint was built" in r.stdout


# -- item 25: `python -m aart.testing.fake_server` runs without a RuntimeWarning ------------
def test_the_fake_server_runs_as_a_module_without_a_warning():
    r = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-m", "aart.testing.fake_server", "-h"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "RuntimeWarning" not in r.stderr and "--port" in r.stdout


# -- item 3: an unpriced paid model costs "unpriced", never $0.0000 -------------------------
def test_an_unpriced_paid_model_is_unpriced_in_run_and_scope(tmp_path, fake_server):
    recipe, out = write_recipe(tmp_path, MINI_RECIPE), tmp_path / "run"
    model = ["--model", "openai/gen", "--base-url", fake_server.base_url]
    r = cli("run", recipe, "--out", out, *model)
    assert r.returncode == 0, r.stderr
    assert "$0.0000" not in r.stdout and "unpriced (no price for openai/gen" in r.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["usage"]["cost"] is None and summary["usage"]["unpriced"] == ["openai/gen"]
    r = cli("scope", out)
    assert r.returncode == 0, r.stderr
    assert "$0.0000" not in r.stdout and "cost unpriced on openai/gen" in r.stdout


def test_an_unpriced_target_is_unpriced_in_the_attack_and_its_reports(tmp_path, fake_server):
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"a question {i}"}) + "\n" for i in range(3)))
    out = tmp_path / "att"
    r = cli(
        "attack", data, "--target", "openai/app", "--base-url", fake_server.base_url, "--out", out
    )
    assert r.returncode == 0, r.stderr
    assert "$0.0000" not in r.stdout and "unpriced" in r.stdout
    assert json.loads((out / "attack.json").read_text())["usage"]["cost"] is None
    for report in ("report.md", "report.html"):
        text = (out / report).read_text()
        assert "$0.0000" not in text and "unpriced" in text, report


def test_calls_to_a_python_target_are_not_paid_calls(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"a question {i}"}) + "\n" for i in range(3)))
    out = tmp_path / "att"
    r = cli(
        "attack",
        data,
        "--target",
        "targets_fixture:async_app",
        "--out",
        out,
        cwd=Path(__file__).parent,
    )
    assert r.returncode == 0, r.stderr
    assert "0 paid calls and 3 calls to the target" in r.stdout
    assert "0 paid calls and 3 calls to the target" in (out / "report.md").read_text()
    # an attack of a free model costs $0 (nothing unpriced)
    f = aart.attack(data, target="fake/app", out=tmp_path / "free")
    assert f.usage["cost"] == 0.0


# -- item 11: --sample N --seed S spreads an attack over the cells --------------------------
RISKS = ["fraud", "phishing", "data theft", "account takeover", "scams", "insults"]


@pytest.fixture
def sorted_dataset(tmp_path):
    """60 prompts sorted by their primary dimension, as a generated dataset is."""
    path = tmp_path / "sorted.jsonl"
    rows = [
        {
            "id": f"{risk}-{i}",
            "prompt": f"a mild question {i} about {risk}",
            "cell": {"risks": risk, "formats": ["email", "chat", "memo"][i % 3]},
        }
        for risk in RISKS
        for i in range(10)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _attacked(out: Path) -> list[dict]:
    return [
        json.loads(line)
        for line in (out / "responses.jsonl").read_text().splitlines()
        if line.strip()
    ]


def test_a_sample_covers_every_value_where_a_limit_covers_the_first(sorted_dataset, tmp_path):
    first = aart.attack(sorted_dataset, target="fake/app", out=tmp_path / "l", limit=12)
    assert {c["value"] for c in first.by_value["risks"]} == {"fraud", "phishing"}
    f = aart.attack(sorted_dataset, target="fake/app", out=tmp_path / "s", sample=12, seed=3)
    assert f.prompts == 12
    assert sorted(c["n"] for c in f.by_value["risks"]) == [2] * 6  # every risk, evenly
    assert sorted(c["n"] for c in f.by_value["formats"]) == [4, 4, 4]
    again = aart.attack(sorted_dataset, target="fake/app", out=tmp_path / "s2", sample=12, seed=3)
    assert again.ids == f.ids  # seeded: the same prompts
    other = aart.attack(sorted_dataset, target="fake/app", out=tmp_path / "s3", sample=12, seed=4)
    assert other.ids != f.ids


def test_the_sampled_order_extends_with_a_larger_sample():
    from aart.redteam.sampling import stratified_order

    cells = [{"risks": r, "formats": f} for r in RISKS for f in ("email", "chat", "memo")] * 4
    small, large = stratified_order(cells, 10, 7), stratified_order(cells, 30, 7)
    assert large[:10] == small and len(set(large)) == 30
    assert len(stratified_order(cells, 1000, 7)) == len(cells)


def test_a_rerun_over_fewer_prompts_is_refused_and_keeps_the_reports(sorted_dataset, tmp_path):
    out = tmp_path / "att"
    r = cli("attack", sorted_dataset, "--target", "fake/app", "--out", out)
    assert r.returncode == 0, r.stderr
    before = (out / "attack.json").read_text()
    for args in (["--limit", "5"], ["--sample", "5"]):
        r = cli("attack", sorted_dataset, "--target", "fake/app", "--out", out, *args)
        assert r.returncode == 2, r.stderr
        assert "holds an attack of every prompt" in r.stderr and "Traceback" not in r.stderr
        assert (out / "attack.json").read_text() == before
    # a limited attack may be extended (a larger --limit, then every prompt)
    small = tmp_path / "small"
    assert (
        cli("attack", sorted_dataset, "-t", "fake/app", "-o", small, "--limit", "5").returncode == 0
    )
    r = cli("attack", sorted_dataset, "-t", "fake/app", "-o", small, "--limit", "3")
    assert r.returncode == 2 and "holds an attack of --limit 5" in r.stderr
    assert (
        cli("attack", sorted_dataset, "-t", "fake/app", "-o", small, "--limit", "9").returncode == 0
    )
    assert json.loads((small / "attack.json").read_text())["prompts"] == 9
    assert cli("attack", sorted_dataset, "-t", "fake/app", "-o", small).returncode == 0
    assert json.loads((small / "attack.json").read_text())["prompts"] == 60


def test_attack_help_says_what_limit_and_sample_do():
    r = cli("attack", "--help")
    text = " ".join(r.stdout.split())
    assert "first N prompts, in the file's order" in text
    assert "--sample N" in text and "spread over the cells" in text


# -- item 16: unreadable datasets and unwritable outputs are one line, never a traceback ----
def _one_line_error(r, *needles):
    assert r.returncode in (1, 2), (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, r.stderr
    for needle in needles:
        assert needle in errors[0], r.stderr
    return errors[0]


def test_a_latin1_csv_names_its_line_and_how_to_convert_it(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes("prompt\na plain first question\nun caf\xe9 trop sucr\xe9\n".encode("latin-1"))
    for command in (
        ["evaluate", path, "--no-embeddings"],
        ["attack", path, "-t", "fake/app", "-o", tmp_path / "a"],
    ):
        _one_line_error(cli(*command), f"{path}:3: not UTF-8", "iconv -f latin1")
    # a UTF-8 file with a byte-order mark reads as before
    path.write_bytes("\ufeffprompt\nun café\n".encode())
    assert cli("evaluate", path, "--no-embeddings").returncode == 0


@pytest.mark.parametrize(
    "later, said",
    [
        ({"prompt": "a second question", "cell": "fraud"}, "record 2: `cell` is a string"),
        (
            {"prompt": "a second question", "cell": {"risks": ["fraud", "scams"]}},
            "record 2: `cell.risks` is a list",
        ),
        (
            {"prompt": "a second question", "cell": {"risks": {"a": 1}}},
            "record 2: `cell.risks` is an object",
        ),
    ],
)
def test_a_record_whose_cell_has_another_shape_is_named(tmp_path, later, said):
    path = tmp_path / "d.jsonl"
    first = {"prompt": "a first question", "cell": {"risks": "fraud"}}
    path.write_text(json.dumps(first) + "\n" + json.dumps(later) + "\n")
    for command in (
        ["evaluate", path, "--no-embeddings"],
        ["attack", path, "-t", "fake/app", "-o", tmp_path / "a"],
    ):
        _one_line_error(cli(*command), str(path), said, "fix the record")


def test_a_corrupt_parquet_file_is_one_line(tmp_path):
    path = tmp_path / "d.parquet"
    path.write_bytes(b"PAR1" + b"\x00not really parquet" * 20 + b"PAR1")
    _one_line_error(
        cli("evaluate", path, "--no-embeddings"), str(path), "not a readable Parquet file", ".jsonl"
    )


def test_a_read_only_output_directory_is_one_line(tmp_path):
    recipe = write_recipe(tmp_path, MINI_RECIPE)
    # /sys is read-only, whoever runs the test (root included)
    line = _one_line_error(cli("define", recipe, "--out", "/sys/aart-test-run"), "cannot write")
    assert "/sys/aart-test-run" in line and "writable --out" in line


def test_an_output_path_through_a_file_is_one_line(tmp_path):
    """`aart evaluate ... --report odd.csv/out` printed a FileExistsError traceback."""
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"prompt": "a first question"}) + "\n")
    afile = tmp_path / "odd.csv"
    afile.write_text("x\n")
    line = _one_line_error(
        cli("evaluate", data, "--no-embeddings", "--no-topics", "--report", afile / "out"),
        "cannot create",
    )
    assert "is a file, not a folder" in line


def test_a_full_disk_is_one_line_and_says_work_is_saved(tmp_path, monkeypatch, capsys):
    import errno

    from aart.cli import main as cli_main
    from aart.steps import generate as gen

    def full(rows, path):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(gen, "write_jsonl", full)
    recipe = write_recipe(tmp_path, MINI_RECIPE)
    out = tmp_path / "run"
    monkeypatch.setattr(sys, "argv", ["aart", "run", str(recipe), "--out", str(out)])
    with pytest.raises(SystemExit) as e:
        cli_main.main()
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert f"error: cannot write {out}/dataset.jsonl: No space left on device" in err
    assert "finished work is saved" in err


# -- item 25: the dry run counts the LLM-verification calls --------------------------------
def test_the_dry_run_counts_llm_verification_calls(tmp_path):
    text = MINI_RECIPE.replace(
        "    description: regions\n", "    description: regions\n    verify: llm\n"
    ).replace("  min_words: 2", "  min_words: 2\n  max_topups: 0")
    recipe = write_recipe(tmp_path, text)
    est = aart.dry_run(recipe)
    assert est["verify_calls"] == est["generate_calls"] and est["verify_tokens"] > 0
    assert est["total_calls"] == est["define_calls"] + est["generate_calls"] + est["verify_calls"]
    r = cli("run", recipe, "--dry-run")
    assert f"verification: {est['verify_calls']} calls" in r.stdout, r.stdout
    result = aart.run(recipe, out=tmp_path / "run")  # no top-ups: the estimate is exact
    assert result.usage["calls"] == est["total_calls"]


# -- item 25: the attack dry run's tokens are close to what an attack spends, with a cost ---
def test_the_attack_dry_run_is_close_to_the_attack_and_shows_the_cost(tmp_path, fake_server):
    data = tmp_path / "d.jsonl"
    data.write_text(
        "".join(
            json.dumps({"prompt": f"a mild question number {i} about saving at the bank"}) + "\n"
            for i in range(20)
        )
    )
    # the application answers at a realistic length (about 100 tokens)
    fake_server.on_text("bank assistant", {"content": "Here is some general guidance. " * 13})
    args = [
        data,
        "--target",
        "openai/app",
        "--judge",
        "openai/judge",
        "--base-url",
        fake_server.base_url,
        "--system-prompt",
        "You are a polite bank assistant.",
        "--out",
        tmp_path / "att",
    ]
    r = cli("attack", *args, "--dry-run")
    assert r.returncode == 0, r.stderr
    total = next(line for line in r.stdout.splitlines() if line.startswith("total"))
    estimated = int(total.split()[5].replace(",", ""))
    assert "unpriced" in total and "--price MODEL=IN,OUT" in r.stdout
    r = cli("attack", *args)
    assert r.returncode == 0, r.stderr
    usage = json.loads((tmp_path / "att" / "attack.json").read_text())["usage"]
    spent = usage["prompt_tokens"] + usage["completion_tokens"]
    assert 0.67 * spent <= estimated <= 1.5 * spent, (estimated, spent)
    priced = ["--price", "openai/app=1,2", "--price", "openai/judge=1,2"]
    r = cli("attack", *args[:-1], tmp_path / "att2", *priced, "--dry-run")
    total = next(line for line in r.stdout.splitlines() if line.startswith("total"))
    assert "$0.0" in total and "unpriced" not in total


# -- item 25: values scope filtered out are listed apart, in both reports ------------------
def test_values_filtered_out_by_scope_are_not_never_attacked(tmp_path):
    text = MINI_RECIPE.replace(
        "  queries_per_attempt: 3\n",
        "  queries_per_attempt: 3\n  filters:\n    formats: {drop: [poem]}\n",
    )
    out = tmp_path / "run"
    aart.run(write_recipe(tmp_path, text), out=out)
    f = aart.attack(out / "dataset.jsonl", target="fake/app", out=tmp_path / "att")
    assert f.filtered_out == {"formats": ["poem"]}
    assert "poem" not in f.untested.get("formats", [])
    md = (tmp_path / "att" / "report.md").read_text()
    html = (tmp_path / "att" / "report.html").read_text()
    for text in (md, html):
        section = text[text.index("Filtered out by scope") :]
        assert "poem" in section[:400]
    assert "Never attacked" not in md or "poem" not in md[md.index("Never attacked") :][:200]
    attack = json.loads((tmp_path / "att" / "attack.json").read_text())
    assert attack["filtered_out"] == {"formats": ["poem"]}


# -- item 25: `aart values` says what "attacked" counts -------------------------------------
def test_values_says_attacked_counts_prompt_strategy_pairs(tmp_path):
    out = tmp_path / "run"
    aart.run(write_recipe(tmp_path, MINI_RECIPE), out=out)
    att = tmp_path / "att"
    aart.attack(out / "dataset.jsonl", target="fake/app", out=att, strategies=["base64", "rot13"])
    view = aart.values(out, attack=att)
    row = view["concepts"][0]
    assert row["attacked_unit"] == "judged prompt x strategy pairs (3 strategies)"
    prompts = sum(
        1 for r in rows_of(out / "dataset.jsonl") if r["cell"]["concepts"] == row["value"]
    )
    assert row["attacked"] == 3 * prompts  # pairs, as said
    r = cli("values", out, "--attack", att)
    assert r.returncode == 0, r.stderr
    assert "attacked: judged prompt x strategy pairs (3 strategies)" in r.stdout
    plain = tmp_path / "plain"
    aart.attack(out / "dataset.jsonl", target="fake/app", out=plain)
    assert aart.values(out, attack=plain)["concepts"][0]["attacked_unit"] == "judged prompts"


# -- item 25: `aart batch export` after define/scope names --model, not --batch -------------
def test_batch_export_of_a_run_of_another_model_names_model(tmp_path):
    recipe, out = write_recipe(tmp_path, MINI_RECIPE), tmp_path / "run"
    assert cli("define", recipe, "--out", out).returncode == 0
    assert cli("scope", out).returncode == 0
    line = _one_line_error(cli("batch", "export", out), "fake/test", "--model openai/NAME")
    assert "--batch" not in line


# -- item 25: per-value's settings under another mix are a located recipe error ----------
@pytest.mark.parametrize("mix", ["balanced", "pairwise"])
def test_primary_under_another_mix_is_a_located_recipe_error(tmp_path, mix):
    text = MINI_RECIPE.replace("mix: per-value", f"mix: {mix}").replace(
        "  sample: {formats: 2, regions: 2}\n", ""
    )
    recipe = write_recipe(tmp_path, text)
    r = cli("run", recipe, "--dry-run")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    line = next(n for n, t in enumerate(text.splitlines(), 1) if t.startswith("  primary:"))
    assert f"{recipe}:{line}" in r.stderr
    assert "`primary` applies to the per-value mix only" in r.stderr
    assert "remove scope.primary, or use mix: per-value" in r.stderr
    # without primary (and per-value's count) the recipe loads
    text = text.replace("  primary: concepts\n", "").replace("  attempts_per_value: 2\n", "")
    assert cli("run", write_recipe(tmp_path, text), "--dry-run").returncode == 0


def test_a_sample_spreads_over_every_axis_at_once():
    import itertools
    import random
    from collections import Counter

    from aart.redteam.sampling import stratified_order

    combos = itertools.product("wxyz", "pqrs", "klmn")
    cells = [{"a": a, "b": b, "c": c} for a, b, c in combos]
    random.Random(1).shuffle(cells)
    cells.sort(key=lambda c: c["a"])  # sorted by the primary axis, as a generated dataset is
    for seed in range(4):
        for n in (8, 12, 16):
            picks = stratified_order(cells, n, seed)
            for axis in "abc":
                counts = Counter(cells[i][axis] for i in picks)
                assert len(counts) == 4 and max(counts.values()) - min(counts.values()) <= 2


def test_a_weight_on_no_value_of_its_axis_is_a_note_not_ignored_silently(tmp_path):
    # "Privacy leaks" (the value is "privacy leaks": weights match exactly) and a misspelling
    # were both ignored without a word: the mix gave them weight 1
    text = MINI_RECIPE.replace(
        "  queries_per_attempt: 3\n",
        "  queries_per_attempt: 3\n"
        "  weights: {concepts: {Privacy leaks: 2, rule breakingg: 3, unsafe advice: 2}}\n",
    )
    aart.define(write_recipe(tmp_path, text), out=tmp_path / "run")
    plan = aart.scope(tmp_path / "run")
    notes = [line for line in plan.summary_lines() if line.startswith("note: ")]
    said = " ".join(notes)
    assert "scope.weights.concepts" in said, notes
    assert "'rule breakingg'" in said and "'Privacy leaks'" in said and "'privacy leaks'" in said
    assert "'unsafe advice'" not in said  # a value of the axis: no note
