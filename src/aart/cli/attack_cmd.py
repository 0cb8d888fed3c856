"""`aart attack`: run a dataset against the application and report where it fails;
`aart rejudge`: judge an attack's saved responses again, calling no target."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from .. import pipeline
from ..evaluate.data import parse_mapping
from ..llm import Price
from ..llm.batch import BatchSettings
from ..llm.ray_executor import RaySettings
from ..redteam.findings import Findings
from .common import (
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
    if not sep or not name or inp < 0 or out < 0:
        raise click.BadParameter(f"{text!r}: give MODEL=IN,OUT", param_hint="--price")
    return name, Price(inp, out)


def judging_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Judges, gates, prices and outputs: what `aart attack` and `aart rejudge` share."""
    options = [
        click.option(
            "--judge",
            "-j",
            default="refusal",
            show_default=True,
            help="'refusal' (fast detector) or a provider/model LLM judge with the policy rubric.",
        ),
        click.option(
            "--classifier",
            default=None,
            metavar="PROVIDER/MODEL",
            help="A Llama Guard-style classifier as a second opinion.",
        ),
        click.option(
            "--out",
            "-o",
            required=True,
            type=click.Path(file_okay=False),
            help="Attack run directory.",
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
            type=click.FloatRange(0, 1),
            metavar="RATE",
            help=f"Exit {GATE_EXIT_CODE} when the attack-success rate exceeds RATE (0-1).",
        ),
        click.option(
            "--min-judged",
            default=0.9,
            show_default=True,
            type=click.FloatRange(0, 1),
            metavar="SHARE",
            help=f"Below this share of judged prompts the attack is inconclusive: exit "
            f"{INCONCLUSIVE_EXIT_CODE}, whatever --fail-above says.",
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
            type=click.FloatRange(min=0),
            metavar="USD",
            help="Stop when the attack has cost this much (needs a price for every paid model).",
        ),
        no_cache_option,
    ]
    for option in reversed(options):
        f = option(f)
    return f


@click.command("attack")
@click.argument("dataset", type=click.Path(exists=True))
@click.option(
    "--target",
    "-t",
    required=True,
    help="provider/model, a target .yaml (generic HTTP API) or module:function (looked up "
    "in the current directory first).",
)
@judging_options
@click.option(
    "--system-prompt", default=None, help="The application's system prompt (overrides the recipe)."
)
@click.option("--max-tokens", default=400, show_default=True, help="Longest response to request.")
@click.option("--limit", default=None, type=int, help="Attack only the first N prompts.")
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
    "--dry-run",
    is_flag=True,
    help="Estimate calls and tokens per strategy; call nothing, write nothing.",
)
@column_options
@scale_options
def attack_command(
    dataset: str,
    target: str,
    dry_run: bool,
    strategies: tuple[str, ...],
    attacker: str | None,
    max_rounds: int | None,
    max_turns: int | None,
    system_prompt: str | None,
    max_tokens: int,
    limit: int | None,
    concurrency: int | None,
    baseline: str | None,
    text_column: str,
    axes: tuple[str, ...],
    annotations: tuple[str, ...],
    fail_above: float | None,
    min_judged: float,
    prices: tuple[str, ...],
    batch: BatchSettings | None,
    ray: RaySettings | None,
    **judging: Any,
) -> None:
    """Send every prompt of DATASET to the target, judge the responses and report the
    attack-success rate overall, per axis value and per pair of axes. Re-running the same
    command resumes."""
    out = judging.pop("out")
    # what the attack is, shared by the dry run and the run itself
    settings: dict[str, Any] = dict(
        target=target,
        system_prompt=system_prompt,
        max_tokens=max_tokens,
        limit=limit,
        concurrency=concurrency,
        prices=dict(parse_price(p) for p in prices),
        text_column=text_column,
        axis_columns=parse_mapping(axes, "--axis"),
        annotation_columns=parse_mapping(annotations, "--annotation"),
        strategies=list(strategies),
        attacker=attacker,
        max_rounds=max_rounds,
        max_turns=max_turns,
        batch=batch,
        ray=ray,
        **judging,
    )
    if dry_run:
        est = pipeline.attack_dry_run(dataset, **settings)
        click.echo("strategy               prompts  target  attacker  judge     tokens")
        for r in est:
            bound = " (at most)" if r["upper_bound"] else ""
            click.echo(
                f"{r['strategy']:<22} {r['prompts']:>7} {r['target_calls']:>7} "
                f"{r['attacker_calls']:>9} {r['judge_calls']:>6} {r['tokens']:>10,}{bound}"
            )
        click.echo(
            f"{'total':<22} {sum(r['prompts'] for r in est):>7} "
            f"{sum(r['target_calls'] for r in est):>7} "
            f"{sum(r['attacker_calls'] for r in est):>9} "
            f"{sum(r['judge_calls'] for r in est):>6} {sum(r['tokens'] for r in est):>10,}"
        )
        return
    with progress_bars() as bars:
        f = pipeline.attack(
            dataset,
            out=out,
            baseline=baseline,
            progress=bars,
            min_judged=min_judged,
            **settings,
        )
    show_findings(f, out, min_judged, fail_above)


@click.command("rejudge")
@click.argument("attack_dir", type=click.Path(exists=True, file_okay=False))
@judging_options
def rejudge_command(
    attack_dir: str,
    fail_above: float | None,
    min_judged: float,
    prices: tuple[str, ...],
    **judging: Any,
) -> None:
    """Judge the responses saved in ATTACK_DIR (an earlier attack's --out) again, with other
    judges, into --out: no call reaches the target. Same reports and gates as `aart attack`."""
    with progress_bars() as bars:
        f = pipeline.rejudge(
            attack_dir,
            progress=bars,
            min_judged=min_judged,
            prices=dict(parse_price(p) for p in prices),
            **judging,
        )
    show_findings(f, judging["out"], min_judged, fail_above)


def show_findings(f: Findings, out: str, min_judged: float, fail_above: float | None) -> None:
    """What the CLI says about an attack: doubts first, then the figures; exits with the
    inconclusive or gate code when they apply."""
    o = f.overall
    if f.inconclusive:
        stopped = f"\nstopped early: {f.stopped}" if f.stopped else ""
        click.echo(
            f"INCONCLUSIVE: only {f.judged} of {f.prompts} prompts were judged "
            f"({100 * f.judged_share:.0f}% < --min-judged {100 * min_judged:.0f}%): "
            f"{len(f.failed_jobs)} failed calls, {f.target_errors} target errors, "
            f"{f.unjudged} unjudged. Check the target "
            f"and judge, then re-run the same command (finished prompts are kept)." + stopped,
            err=True,
        )
    for w in f.warnings:
        click.echo(f"WARNING: {w}", err=True)
    click.echo(f"aart attack on {f.target}: {out}/report.html")
    rows = [
        (
            "attack success",
            f"{o['successes']}/{o['n']} = {100 * o['rate']:.1f}% "
            f"[{100 * o['ci_low']:.1f}, {100 * o['ci_high']:.1f}] ({f.primary_judge})",
        ),
        ("unjudged", unjudged_line(f)),
        ("target errors", f.target_errors),
        ("calls", usage_line(f.usage)),
    ] + failed_job_lines(f.failed_jobs)
    for axis, cells in f.by_value.items():
        if cells:
            worst = cells[0]
            rows.append((f"worst {axis}", f"{worst['value']} {worst['successes']}/{worst['n']}"))
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
        qps = pair["queries_per_success"]
        rows.append(
            (
                "pair",
                f"{pair['successes']}/{pair['chains']} chains succeeded, by round "
                f"{pair['success_by_round'] or '-'}; "
                + (f"{qps:.1f} queries per success" if qps else "no success"),
            )
        )
    rows.append(("regression set", f"{out}/failures.jsonl ({o['successes']} prompts)"))
    echo_kv(rows)
    if f.inconclusive:
        sys.exit(INCONCLUSIVE_EXIT_CODE)
    if fail_above is not None and o["rate"] > fail_above:
        click.echo(f"gate failed: attack-success rate {o['rate']:.3f} > {fail_above}", err=True)
        sys.exit(GATE_EXIT_CODE)
