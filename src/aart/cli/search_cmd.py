"""`aart search`: a quality-diversity search for failures over the recipe's cells."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ..llm.batch import BatchSettings
from ..llm.ray_executor import RaySettings
from .attack_cmd import INCONCLUSIVE_EXIT_CODE, parse_price
from .common import FiniteFloatRange, echo_kv, no_cache_option, scale_options, usage_line


def _names(text: str | None) -> list[str] | None:
    """A comma-separated list (None when not given)."""
    if text is None:
        return None
    return [t.strip() for t in text.split(",") if t.strip()]


@click.command("search")
@click.argument("dataset", metavar="DATASET|RUN", type=click.Path(exists=True))
@click.option("--target", "-t", default=None, help="As `aart attack --target` (default: the "
              "recipe's attack.target).")  # fmt: skip
@click.option("--judge", "-j", default=None, help="As `aart attack --judge` (default: the "
              "recipe's attack.judges.primary, else refusal: a complied-not-refused search).")  # fmt: skip
@click.option("--attacker", default=None, metavar="PROVIDER/MODEL",
              help="The model that mutates the prompts (default: the recipe's search.attacker, "
              "else attack.attacker).")  # fmt: skip
@click.option("--budget", "-n", default=None, type=int,
              help="Target queries the search may spend (default: the recipe's search.budget).")  # fmt: skip
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False),
              help="The search directory (re-running the same command resumes).")  # fmt: skip
@click.option("--axes", default=None, metavar="A,B",
              help="The dimensions that make the archive's cells (default: every axis of the "
              "dataset).")  # fmt: skip
@click.option("--strategies", default=None, metavar="S1,S2",
              help="The attack strategy as one more axis: identity, the converters (base64, "
              "json, ...) and the rewrites (paraphrase, roleplay, hypothetical, past-tense, "
              "translate:LANG). Default: identity.")  # fmt: skip
@click.option("--pick", type=click.Choice(["uniform", "weighted"]), default=None,
              help="How each generation picks its cells: uniformly, or weighted towards the "
              "cells with no success yet (default uniform).")  # fmt: skip
@click.option("--mutations", default=None, metavar="M1,M2",
              help="What the attacker may do to an elite: rephrase, persona, hypothetical, "
              "past-tense, refine (PAIR's step: improve it from the target's reply and the "
              "judge's verdict), dataset (another prompt of the cell); on a plain dataset also "
              "refusal-suppression, prefix, override, role-play, fiction (frames of the "
              "request) and obfuscate (its words converted); on an injection dataset "
              "authority, fake-system, hidden-text (frames of the payload) and encoding "
              "(the attack's converters). Default: all.")  # fmt: skip
@click.option("--seed", default=None, type=int, help="Seed of the iteration order (default 0).")
@click.option("--parallel", default=None, type=click.IntRange(1, 256),
              help="Candidates per generation, run at once (default 4; part of the order, so "
              "a resumed search needs the same).")  # fmt: skip
@click.option("--compare", is_flag=True,
              help="Also run, at the same number of target queries, the dataset as it is "
              "(identity) and PAIR on its prompts, and report all three.")  # fmt: skip
@click.option("--recipe", default=None, help="Recipe whose policy, prices and search section "
              "apply (default: the run's or the dataset's directory's recipe.yaml).")  # fmt: skip
@click.option("--system-prompt", default=None, help="The application's system prompt.")
@click.option("--base-url", default=None, help="Endpoint for openai/... models.")
@click.option("--max-tokens", default=None, type=click.IntRange(1),
              help="Longest reply to request of the target (default 400).")  # fmt: skip
@click.option("--concurrency", default=None, type=int,
              help="Most requests in flight to the target and judges.")  # fmt: skip
@click.option("--price", "prices", multiple=True, metavar="MODEL=IN,OUT",
              help="US dollars per million input and output tokens (repeatable).")  # fmt: skip
@click.option("--max-cost", default=None, type=FiniteFloatRange(min=0), metavar="USD",
              help="Stop when the search has cost this much.")  # fmt: skip
@no_cache_option
@scale_options
def search_command(
    dataset: str,
    out: str,
    axes: str | None,
    strategies: str | None,
    mutations: str | None,
    prices: tuple[str, ...],
    recipe: str | None,
    batch: BatchSettings | None,
    ray: RaySettings | None,
    **settings: Any,
) -> None:
    """Search DATASET's cells for failures of the target: a MAP-Elites archive (one elite per
    cell, Rainbow-Teaming style) whose cells are the recipe's (a subset with --axes, times
    --strategies). Each generation picks cells, has the attacker mutate their elite or a
    neighbour's, checks the candidate still embodies its cell and duplicates no other elite,
    queries the target, judges, and keeps the better one. Writes OUT/archive.jsonl (a
    dataset, with lineage), regression.jsonl (every success, for `aart attack`),
    search.json and report.html (coverage over queries)."""
    from .. import search as search_pkg
    from ..report.attack import write_attack_report

    p = Path(dataset)
    if p.is_dir():
        if not (p / "dataset.jsonl").is_file():
            raise click.UsageError(f"{p} holds no dataset.jsonl: give a run directory or a dataset")
        recipe = recipe or (str(p / "recipe.yaml") if (p / "recipe.yaml").is_file() else None)
        dataset = str(p / "dataset.jsonl")
    result = search_pkg.search(
        dataset,
        out=out,
        report=write_attack_report,
        axes=_names(axes),
        strategies=_names(strategies),
        mutations=_names(mutations),
        recipe=recipe,
        prices=dict(parse_price(x) for x in prices),
        batch=batch,
        ray=ray,
        **settings,
    )
    from ..search.outputs import summary

    s = summary(result)
    for w in result.warnings:
        click.echo(f"WARNING: {w}", err=True)
    click.echo(f"aart search on {result.target}: {out}/report.html", err=True)
    rows: list[tuple[str, Any]] = [
        ("cells with a success", f"{s['cells_with_success']}/{s['cells']} ({result.measures})"),
        ("target queries", f"{s['queries']} of {s['budget']}"),
        ("per query", f"{s['success_per_query']:.3f} cells with a success"),
        ("iterations", s["iterations"]),
        ("calls", usage_line(result.usage)),
    ]
    for name, b in result.baselines.items():
        if "error" in b:
            rows.append((name, f"not run: {b['error']}"))
        else:
            rows.append((name, f"{b['cells_with_success']}/{s['axis_cells']} axis cells with a "
                         f"success in {b['queries']} queries ({b['successes']}/{b['judged']} "
                         f"{result.measures})"))  # fmt: skip
    rows.append(("archive", f"{out}/archive.jsonl ({s['cells_filled']} elites)"))
    rows.append(("regression set", f"{out}/regression.jsonl ({s['cells_with_success']} prompts)"))
    echo_kv(rows)
    if not result.finished:
        click.echo(f"UNFINISHED: {result.stopped}; re-run the same command to resume", err=True)
        sys.exit(INCONCLUSIVE_EXIT_CODE)
    if result.empty:
        why = (
            f" ({result.target_errors} target errors, {result.empty_replies} empty replies)"
            if result.queries
            else ""
        )
        click.echo(
            f"EMPTY: no candidate got a reply from the target{why}; nothing was judged", err=True
        )
        sys.exit(INCONCLUSIVE_EXIT_CODE)
    if result.unjudged and result.unjudged == len(result.archive.elites):
        # every cell unjudged is no "0 cells with a success"
        click.echo(
            f"INCONCLUSIVE: no cell's best candidate has a verdict from {result.primary} "
            "(see the warning above)",
            err=True,
        )
        sys.exit(INCONCLUSIVE_EXIT_CODE)
