"""`aart review`: review a dataset and an attack's verdicts in the browser."""

from __future__ import annotations

import getpass
import webbrowser

import click

from ..errors import ConfigError
from ..review import open_review


@click.command("review")
@click.argument("path", type=click.Path(exists=True))
@click.option(
    "--attack",
    "attack_dir",
    default=None,
    type=click.Path(exists=True, file_okay=False),
    help="An attack's --out: review its verdicts too (disagreements first).",
)
@click.option("--sample", default=None, type=int, help="Review a sample of N records.")
@click.option("--stratify-by", default=None, metavar="AXIS", help="Spread the sample over AXIS.")
@click.option("--reviewer", default=None, help="Your name in the labels (default: your login).")
@click.option("--port", default=None, type=int, help="Port on 127.0.0.1 (default: a free one).")
@click.option("--no-open", is_flag=True, help="Print the URL; do not open a browser.")
@click.option(
    "--export",
    "export_only",
    is_flag=True,
    help="Write the reviewed dataset and labels.csv; no server.",
)
def review_command(
    path: str,
    attack_dir: str | None,
    sample: int | None,
    stratify_by: str | None,
    reviewer: str | None,
    port: int | None,
    no_open: bool,
    export_only: bool,
) -> None:
    """Review PATH (a run directory or a dataset file) in the browser: is each prompt a good
    test, does it match its values, flags, notes, edits, exclusions; with --attack, a human
    verdict per response and each judge's precision, recall and kappa against people. Labels
    are kept in the run's run.db."""
    review = open_review(
        path,
        attack=attack_dir,
        sample=sample,
        stratify_by=stratify_by,
        reviewer=reviewer or getpass.getuser(),
    )
    try:
        if export_only:
            for name, p in review.export().items():
                click.echo(f"{name}: {p}")
            click.echo(review.applied_line())
            return
        try:
            from ..review.server import ReviewServer
        except ImportError as e:
            raise ConfigError(
                f"aart review needs the review extra ({e.name} is missing): "
                "pip install 'aart-redteam[review]'"
            ) from None
        server = ReviewServer(review, port)
        click.echo(f"aart review: {server.url}")
        click.echo("(127.0.0.1 only; the link carries the access token; Ctrl-C to stop)")
        if not no_open:  # a local file with a one-time link: the token stays out of `ps`
            webbrowser.open(server.launch_url())
        server.serve()
    finally:
        review.close()
