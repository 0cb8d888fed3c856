"""`aart attack`: run a dataset against the application and report where it fails;
`aart rejudge`: judge an attack's saved responses again, calling no target."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import click

from .. import pipeline
from ..data.load import parse_mapping
from ..llm import Price
from ..llm.batch import BatchSettings
from ..llm.ray_executor import RaySettings
from ..redteam.findings import Findings
from ..redteam.gate import GATE_ON, GateSpec, RuleOutcome, check_gate
from ..redteam.spec import AttackArgs
from .common import (
    FiniteFloatRange,
    column_options,
    echo_kv,
    failed_job_lines,
    no_cache_option,
    progress_bars,
    scale_options,
    usage_line,
)

GATE_EXIT_CODE = 3
# Too few prompts got a verdict for the rate to mean anything: never a pass.
INCONCLUSIVE_EXIT_CODE = 4


def unjudged_line(f: Findings) -> str:
    """Every judge's unjudged verdicts, the primary's first."""
    order = [f.primary_judge] + [j for j in f.unjudged_by_judge if j != f.primary_judge]
    return ", ".join(f"{f.unjudged_by_judge.get(j, 0)} ({j})" for j in order)


def parse_price(text: str) -> tuple[str, Price]:
    name, sep, rest = text.partition("=")
    try:
        inp, out = (float(x) for x in rest.split(","))
    except ValueError:
        raise click.BadParameter(
            f"{text!r}: give MODEL=IN,OUT in US dollars per million tokens, "
            "e.g. openai/gpt-4o-mini=0.15,0.6",
            param_hint="--price",
        ) from None
    # nan passes `< 0` and would make every cost nan, which no --max-cost ever exceeds
    if not sep or not name or not (0 <= inp < math.inf and 0 <= out < math.inf):
        raise click.BadParameter(f"{text!r}: give MODEL=IN,OUT", param_hint="--price")
    return name, Price(inp, out)


def judging_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Judges, gates, prices and outputs: what `aart attack` and `aart rejudge` share."""
    options = [
        click.option(
            "--judge",
            "-j",
            default=None,
            help="(default: the recipe's attack.judges.primary, else refusal) 'refusal' (the fast detector: a complied-not-refused rate, not harm), a "
            "provider/model LLM judge with the policy rubric, harmbench:PROVIDER/MODEL (the "
            "HarmBench classifier's yes/no rubric) or strongreject:PROVIDER/MODEL (the "
            "StrongREJECT rubric, scored 0-1).",
        ),
        click.option(
            "--classifier",
            default=None,
            metavar="PROVIDER/MODEL",
            help="A Llama Guard-style classifier as a second opinion (default: the recipe's "
            "attack.judges.classifier).",
        ),
        click.option(
            "--out",
            "-o",
            default=None,
            type=click.Path(file_okay=False),
            help="Attack run directory (aart attack: default the recipe's attack.out, or "
            "RUN/attack for a run directory; aart rejudge: required, a new directory).",
        ),
        click.option(
            "--recipe",
            default=None,
            help="Recipe whose policy and system prompt to use "
            "(default: the dataset's run directory recipe, if any).",
        ),
        click.option(
            "--base-url", default=None, help="Endpoint for openai/... targets and judges."
        ),
        click.option(
            "--fail-above",
            default=None,
            type=FiniteFloatRange(0, 1),
            metavar="RATE",
            help=f"Exit {GATE_EXIT_CODE} when the rate (attack success; with --judge refusal, "
            "complied) exceeds RATE (0-1); see --gate-on.",
        ),
        click.option(
            "--gate-on",
            type=click.Choice(GATE_ON),
            default=None,
            help="(default: the recipe's attack.gate.gate_on, else raw) Which figure the gate compares: the judge's raw rate, the rate corrected "
            "for the judge's error, or the upper end of the corrected rate's 95% interval "
            "(the strictest). Unjudged prompts count as successes in every case.",
        ),
        click.option(
            "--min-judged",
            default=None,
            type=FiniteFloatRange(0, 1),
            metavar="SHARE",
            help=f"Below this share of judged prompts the attack is inconclusive: exit "
            f"{INCONCLUSIVE_EXIT_CODE}, whatever --fail-above says (default: the recipe's "
            "attack.gate.min_judged, else 0.9).",
        ),
        click.option(
            "--gate-axis",
            "gate_axes",
            multiple=True,
            metavar="AXIS=RATE",
            help=f"Exit {GATE_EXIT_CODE} when any value of AXIS has a rate above RATE "
            "(repeatable; replaces the recipe's attack.gate.axes).",
        ),
        click.option(
            "--gate-strategy",
            "gate_strategies",
            multiple=True,
            metavar="STRATEGY=RATE",
            help=f"Exit {GATE_EXIT_CODE} when STRATEGY's rate is above RATE (repeatable; "
            "replaces the recipe's attack.gate.strategies).",
        ),
        click.option(
            "--price",
            "prices",
            multiple=True,
            metavar="MODEL=IN,OUT",
            help="US dollars per million input and output tokens for a model (repeatable; "
            "adds to the recipe's prices).",
        ),
        click.option(
            "--max-cost",
            default=None,
            type=FiniteFloatRange(min=0),
            metavar="USD",
            help="Stop when the attack has cost this much (needs a price for every paid model).",
        ),
        click.option(
            "--json",
            "as_json",
            is_flag=True,
            help="Print the findings (attack.json's content) to stdout; everything else goes "
            "to stderr.",
        ),
        click.option(
            "--junit",
            default=None,
            type=click.Path(dir_okay=False),
            metavar="PATH",
            help="Write a JUnit XML file: a test case per gate rule (failing when broken) and "
            "a failing test case per prompt that succeeded.",
        ),
        click.option(
            "--sarif",
            default=None,
            type=click.Path(dir_okay=False),
            metavar="PATH",
            help="Write a SARIF 2.1.0 file: the succeeding prompts as results (one rule per "
            "judge), with their axis values.",
        ),
        no_cache_option,
    ]
    for option in reversed(options):
        f = option(f)
    return f


@click.command("attack")
@click.argument("dataset", metavar="DATASET|RUN|RECIPE", type=click.Path(exists=True))
@click.option(
    "--target",
    "-t",
    default=None,
    help="provider/model, a target .yaml (generic HTTP API) or module:function (looked up "
    "in the current directory first); default: the recipe's attack.target.",
)
@judging_options
@click.option(
    "--system-prompt", default=None, help="The application's system prompt (overrides the recipe)."
)
@click.option(
    "--max-tokens",
    default=None,
    type=click.IntRange(1),
    help="Longest response to request (default: the recipe's attack.max_tokens, else 400).",
)
@click.option(
    "--limit",
    default=None,
    type=click.IntRange(1),
    help="Attack only the first N prompts, in the file's order (a generated dataset is sorted "
    "by its primary dimension, so they cover few of its values: --sample spreads them).",
)
@click.option(
    "--sample",
    default=None,
    type=click.IntRange(1),
    metavar="N",
    help="Attack N prompts spread over the cells: every value of every axis as evenly as "
    "the dataset allows (a larger N with the same --seed extends the attack).",
)
@click.option("--seed", default=None, type=int, help="With --sample: its seed (default 0).")
@click.option(
    "--concurrency",
    default=None,
    type=int,
    help="Most requests in flight to the target and judges (adapted to the load up to it).",
)
@click.option(
    "--baseline",
    default=None,
    type=click.Path(file_okay=False),
    help="An earlier attack's --out, judged the same way: report what was fixed and what "
    "still fails.",
)
@click.option(
    "--strategy",
    "strategies",
    multiple=True,
    metavar="NAME[:ARG]",
    help="Transform the prompts before sending (repeatable): base64, rot13, leetspeak, "
    "homoglyphs, spacing, zero-width, case-mix, payload-split, json, translate:LANG, "
    "paraphrase, roleplay, hypothetical, past-tense, pair, crescendo. The unconverted prompt "
    "is always sent too, as the control.",
)
@click.option(
    "--attacker",
    default=None,
    metavar="PROVIDER/MODEL",
    help="The model that rewrites prompts (LLM converters, pair, crescendo).",
)
@click.option("--max-rounds", default=None, type=click.IntRange(1, 20), help="pair: rounds.")
@click.option(
    "--max-turns", default=None, type=click.IntRange(1, 20), help="crescendo: user turns."
)
@click.option(
    "--context-as",
    default=None,
    type=click.Choice(["tool", "document"]),
    help="Injection cases: give a chat-model target the carrier document as the result of a "
    "call of the channel's tool (default) or as a document in the user's message.",
)
@click.option(
    "--max-steps",
    default=None,
    type=click.IntRange(1, 16),
    help="Injection cases: a chat-model target's model calls per case, its tool calls "
    "answered by a simulated environment in between (default 4).",
)
@click.option(
    "--tools",
    "tools_file",
    default=None,
    type=click.Path(dir_okay=False),
    help="Injection cases: a YAML/JSON list of the application's tools (name, description, "
    "parameters), for dataset lines that carry none.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Estimate calls and tokens per strategy; call nothing, write nothing.",
)
@column_options
@scale_options
def attack_command(
    dataset: str,
    target: str | None,
    dry_run: bool,
    strategies: tuple[str, ...],
    attacker: str | None,
    max_rounds: int | None,
    max_turns: int | None,
    context_as: str | None,
    max_steps: int | None,
    tools_file: str | None,
    system_prompt: str | None,
    max_tokens: int | None,
    limit: int | None,
    concurrency: int | None,
    baseline: str | None,
    text_column: str,
    axes: tuple[str, ...],
    annotations: tuple[str, ...],
    prices: tuple[str, ...],
    batch: BatchSettings | None,
    ray: RaySettings | None,
    **judging: Any,
) -> None:
    """Send every prompt of DATASET to the target, judge the responses and report the
    attack-success rate overall, per axis value and per pair of axes. Re-running the same
    command resumes. Given a run directory (its dataset.jsonl and recipe.yaml) or a recipe
    (its attack.dataset), the recipe's attack section gives every setting a flag leaves out:
    `aart attack RECIPE` is the whole CI command."""
    ci = {k: judging.pop(k) for k in ("as_json", "junit", "sarif")}
    dataset, judging["recipe"], out = attack_input(dataset, judging["recipe"], judging.pop("out"))
    # what the attack is (aart.redteam.spec.AttackArgs), shared by the dry run and the run
    settings = AttackArgs(
        target=target,
        system_prompt=system_prompt,
        max_tokens=max_tokens,
        limit=limit,
        concurrency=concurrency,
        prices=dict(parse_price(p) for p in prices),
        text_column=text_column,
        axis_columns=parse_mapping(axes, "--axis"),
        annotation_columns=parse_mapping(annotations, "--annotation"),
        strategies=list(strategies) or None,
        attacker=attacker,
        max_rounds=max_rounds,
        max_turns=max_turns,
        context_as=context_as,
        max_steps=max_steps,
        tools=tools_file,
        batch=batch,
        ray=ray,
        **gate_flags(judging),  # type: ignore[typeddict-item]
        **judging,  # the judging options' keys are AttackArgs' own
    )
    if dry_run:
        echo_attack_estimate(pipeline.attack_dry_run(dataset, **settings))
        return
    if out is None:
        raise click.UsageError("no attack directory: give --out DIR (or attack.out in the recipe)")
    with progress_bars(stderr=ci["as_json"]) as bars:
        f = pipeline.attack(dataset, out=out, baseline=baseline, progress=bars, **settings)
    show_findings(f, out, **ci)


def gate_flags(judging: dict[str, Any]) -> dict[str, Any]:
    """The gate's flags out of ``judging``, None where not given (the recipe's then apply)."""
    return dict(
        fail_above=judging.pop("fail_above"),
        gate_on=judging.pop("gate_on"),
        min_judged=judging.pop("min_judged"),
        gate_axes=parse_rates(judging.pop("gate_axes"), "--gate-axis"),
        gate_strategies=parse_rates(judging.pop("gate_strategies"), "--gate-strategy"),
    )


def parse_rates(texts: tuple[str, ...], flag: str) -> dict[str, float] | None:
    """NAME=RATE pairs (RATE 0-1); None when the flag was not given."""
    out: dict[str, float] = {}
    for text in texts:
        name, sep, rest = text.partition("=")
        try:
            rate = float(rest)
        except ValueError:
            rate = math.nan
        if not sep or not name or not 0 <= rate <= 1:  # nan fails both comparisons
            raise click.BadParameter(f"{text!r}: give NAME=RATE, RATE 0-1", param_hint=flag)
        out[name] = rate
    return out or None


def attack_input(
    given: str, recipe: str | None, out: str | None
) -> tuple[str, str | None, str | None]:
    """(dataset, recipe, out) from what `aart attack` was given: a dataset; a run directory
    (its dataset.jsonl, recipe.yaml, and RUN/attack as the default --out); or a recipe file
    (its attack.dataset and attack.out, relative to the recipe). A promptfoo tests file or
    config (.yaml too) is a dataset."""
    from pathlib import Path

    from ..data.foreign import is_promptfoo_document
    from ..recipe import load_recipe

    p = Path(given)
    if p.is_dir() and (p / "dataset.jsonl").is_file():
        return str(p / "dataset.jsonl"), recipe, out or str(p / "attack")
    if p.is_file() and p.suffix in (".yaml", ".yml") and not is_promptfoo_document(p):
        section = load_recipe(p).recipe.attack
        if not section.dataset:
            raise click.UsageError(
                f"{p}: the recipe names no dataset to attack: add attack.dataset "
                "(a path relative to the recipe), or give the dataset instead of the recipe"
            )
        ds = p.parent / section.dataset
        if not ds.exists():
            raise click.UsageError(
                f"{p}: attack.dataset {section.dataset} does not exist ({ds}): generate it "
                "first (aart run), or fix the path (relative to the recipe)"
            )
        if out is None and section.out:
            out = str(p.parent / section.out)
        return str(ds), recipe or str(p), out
    return given, recipe, out


def echo_attack_estimate(est: list[dict[str, Any]]) -> None:
    """The attack dry run's table: calls, expected tokens and cost per strategy."""

    def cost(c: float | None) -> str:
        return "unpriced" if c is None else f"${c:.4f}"

    click.echo("strategy               prompts  target  attacker  judge     tokens       cost")
    for r in est:
        bound = " (at most)" if r["upper_bound"] else ""
        click.echo(
            f"{r['strategy']:<22} {r['prompts']:>7} {r['target_calls']:>7} "
            f"{r['attacker_calls']:>9} {r['judge_calls']:>6} {r['tokens']:>10,} "
            f"{cost(r['cost']):>10}{bound}"
        )
    costs = [r["cost"] for r in est]
    total = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)
    click.echo(
        f"{'total':<22} {sum(r['prompts'] for r in est):>7} "
        f"{sum(r['target_calls'] for r in est):>7} "
        f"{sum(r['attacker_calls'] for r in est):>9} "
        f"{sum(r['judge_calls'] for r in est):>6} {sum(r['tokens'] for r in est):>10,} "
        f"{cost(total):>10}"
    )
    click.echo(
        "tokens are expected figures (replies at a third of --max-tokens); unpriced: add "
        "--price MODEL=IN,OUT"
        if total is None
        else "tokens are expected figures (replies at a third of --max-tokens)"
    )


@click.command("rejudge")
@click.argument("attack_dir", type=click.Path(exists=True, file_okay=False))
@judging_options
def rejudge_command(
    attack_dir: str,
    prices: tuple[str, ...],
    **judging: Any,
) -> None:
    """Judge the responses saved in ATTACK_DIR (an earlier attack's --out) again, with other
    judges, into --out: no call reaches the target. Same reports and gates as `aart attack`."""
    ci = {k: judging.pop(k) for k in ("as_json", "junit", "sarif")}
    if judging["out"] is None:
        raise click.UsageError("give --out DIR: the new attack directory")
    with progress_bars(stderr=ci["as_json"]) as bars:
        f = pipeline.rejudge(
            attack_dir,
            progress=bars,
            prices=dict(parse_price(p) for p in prices),
            **gate_flags(judging),
            **judging,
        )
    show_findings(f, judging["out"], rejudged=True, **ci)


def worst_value(cells: Sequence[Mapping[str, Any]]) -> str:
    """The worst value of an axis: "none" when no value had a success, "all N values tied"
    when every value is at the same rate (the order among equals means nothing). Values
    tied at the worst rate are named, as a tie."""
    worst = cells[0]
    if not worst["successes"]:
        if len(cells) == 1:
            return f"none (1 value, 0/{worst['n']})"
        return f"none ({len(cells)} values, all 0/n)"
    if len(cells) > 1 and all(c["rate"] == worst["rate"] for c in cells):
        # "none" read as "no failures" when every value was at 100%
        return f"all {len(cells)} values tied at {100 * worst['rate']:.0f}%"
    tied = [c for c in cells if c["rate"] == worst["rate"]]
    at = f"{100 * worst['rate']:.0f}%"
    if len(tied) > 5:
        names = ", ".join(str(c["value"]) for c in tied[:5])
        return f"{len(tied)} values tied at {at}: {names}, ..."
    if len(tied) > 1:
        named = [f"{c['value']} {c['successes']}/{c['n']}" for c in tied]
        return f"{', '.join(named[:-1])} and {named[-1]} tied at {at}"
    return f"{worst['value']} {worst['successes']}/{worst['n']}"


def show_findings(
    f: Findings,
    out: str,
    *,
    as_json: bool = False,
    junit: str | None = None,
    sarif: str | None = None,
    rejudged: bool = False,
) -> None:
    """What the CLI says about an attack (``rejudged``: a rejudge of one): doubts first, then
    the figures; writes the JUnit and SARIF files asked for; exits with the inconclusive or
    gate code when they apply. With ``as_json`` the findings alone go to stdout, the rest to
    stderr."""
    title = f"aart {'rejudge of' if rejudged else 'attack on'} {f.target}"
    from pathlib import Path

    from ..report.attack import (
        agent_line,
        attack_summary,
        corrected_line,
        headline,
        honest_note,
        pair_line,
        people_line,
        plural,
        state_line,
        worst_case_line,
    )
    from ..report.ci import write_ci_files

    spec = gate_spec(f)
    o = f.overall
    if f.inconclusive:
        stopped = f"\nstopped early: {f.stopped}" if f.stopped else ""
        click.echo(
            f"INCONCLUSIVE: only {f.judged} of {f.prompts} prompts were judged "
            f"({100 * f.judged_share:.0f}% < --min-judged {100 * spec.min_judged:.0f}%): "
            f"{plural(len(f.failed_jobs), 'failed call')}, "
            f"{plural(f.target_errors, 'target error')}, "
            f"{f.unjudged} unjudged. "
            + (
                f"{f.needs_judge} of them only a reader can judge: add --judge MODEL."
                if f.needs_judge
                else "Check the target and judge, then re-run the same command (finished "
                "prompts are kept)."
            )
            + stopped,
            err=True,
        )
    if f.inconclusive and not f.judged:
        # nothing was judged: no figure to show, only where the partial reports are
        write_ci_files(f, Path(out), check_gate(f, spec), junit=junit, sarif=sarif)
        click.echo(f"{title}: {out}/report.html", err=True)
        if as_json:
            click.echo(json.dumps(attack_summary(f), indent=1))
        sys.exit(INCONCLUSIVE_EXIT_CODE)
    for w in f.warnings:
        click.echo(f"WARNING: {w}", err=True)
    note = honest_note(f)
    if note:
        click.echo(f"NOTE: {note}", err=True)
    click.echo(f"{title}: {out}/report.html", err=as_json)
    rows: list[tuple[str, Any]] = [
        (f.measures, headline(f).removeprefix(f.measures + " ")),
        ("states", state_line(f)),
    ]
    if corrected_line(f):
        rows.append(("corrected", corrected_line(f)))
    if people_line(f):
        rows.append(("people", people_line(f)))
    if worst_case_line(f):
        rows.append(("worst case", worst_case_line(f)))
    if f.agent:
        rows.append(("agent", agent_line(f.agent)))
    rows += [
        ("unjudged", unjudged_line(f)),
        ("target errors", f.target_errors),
        ("calls", usage_line(f.usage)),
    ] + failed_job_lines(f.failed_jobs)
    for j, sc in f.scores.items():
        rows.append((f"{j} score", f"mean {sc['mean']:.2f} over {sc['n']}"))
    for axis, cells in f.by_value.items():
        if cells:
            rows.append((f"worst {axis}", worst_value(cells)))
    if f.comparison:
        c = f.comparison
        rows.append(
            (
                "since baseline",
                f"{len(c.fixed)} fixed, {len(c.still_failing)} still failing, "
                f"{len(c.newly_failing)} new (ids in report.md)",
            )
        )
    pair = f.strategy_stats.get("pair")
    if pair:
        rows.append(("pair", pair_line(pair)))
    rows.append(("regression set", f"{out}/failures.jsonl ({plural(o['successes'], 'prompt')})"))
    rows.append(("every verdict", f"{out}/results.jsonl (.csv, .parquet)"))
    rules = check_gate(f, spec)
    write_ci_files(f, Path(out), rules, junit=junit, sarif=sarif)
    if junit:
        rows.append(("junit", junit))
    if sarif:
        rows.append(("sarif", sarif))
    echo_kv(rows, err=as_json)
    if as_json:
        click.echo(json.dumps(attack_summary(f), indent=1))
    if f.inconclusive:
        sys.exit(INCONCLUSIVE_EXIT_CODE)
    for r in rules:
        if r.skipped:
            click.echo(f"gate: {r.message}", err=True)
    broken = [r for r in rules[1:] if r.failed]
    if broken:
        echo_broken(f, broken)
        sys.exit(GATE_EXIT_CODE)


def gate_spec(f: Findings) -> GateSpec:
    """The gate the attack resolved (flags over the recipe), as the findings hold it."""
    g = f.gate
    return GateSpec(
        fail_above=g.get("fail_above"),
        gate_on=g.get("gate_on") or "raw",
        axes=g.get("axes") or {},
        strategies=g.get("strategies") or {},
        min_judged=f.min_judged,
    )


def echo_broken(f: Findings, broken: list[RuleOutcome]) -> None:
    """Each broken gate rule on its own line."""
    for r in broken:
        click.echo(f"gate failed: {r.message}", err=True)
        if r.name == "overall" and f.unjudged and f.overall["rate"] <= r.threshold:
            click.echo(
                f"  the judged prompts alone give {f.overall['rate']:.3f}: {f.unjudged} "
                "unjudged prompts could change the outcome; rejudge them (aart rejudge) or "
                "review them (aart review --attack)",
                err=True,
            )
