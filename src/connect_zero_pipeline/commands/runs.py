"""``python -m connect_zero_pipeline runs``: the project's runs and how each ended.

Usage::

    python -m connect_zero_pipeline runs [--project DIR]

One row per run manifest (``data/runs/<id>.json``), oldest first: the run id, its
status, its pipelines, its generations (``24 -> 40`` for a run trained further), when
it started, and for a failed run the error's one line.
The status is :func:`..run.liveness.run_status`'s: ``running`` (its process is alive),
``finished``, ``failed``, or ``interrupted`` (killed, or it could not record its end).
A ``failed`` or ``interrupted`` run continues with ``make resume RUN=<id>``; a
finished one trains further with ``make resume RUN=<id> PARAMS=alphazero.num_generations=N``.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..common.naming import DEFAULT_PIPELINE, pipeline_label, pipeline_names
from ..run.liveness import run_status
from ..run.manifest import known_runs, read_manifest

RESUMABLE = ("failed", "interrupted")


def num_generations(manifest: dict) -> int | None:
    """A run's generations now (after any extension), or None for a run of no generations."""
    if DEFAULT_PIPELINE not in pipeline_names(manifest.get("pipelines")):
        return None
    return (manifest.get("params") or {}).get("alphazero", {}).get("num_generations")


def generations(manifest: dict) -> str:
    """A run's generations: ``24``, ``24 -> 40`` once trained further, ``-`` for a run of
    no generations."""
    now = num_generations(manifest)
    if now is None:
        return "-"
    return " -> ".join([*(str(e["from"]) for e in manifest.get("extended") or []), str(now)])


def runs_table(project: Path) -> str:
    """The runs of ``project`` as a Markdown table (and lines on resuming and training
    further)."""
    rows, resumable, trained = [], [], []
    for run_id in known_runs(project):
        manifest = read_manifest(project, run_id)
        status = run_status(manifest)
        if status in RESUMABLE:
            resumable.append(run_id)
        now = num_generations(manifest)
        if status == "finished" and now is not None:
            trained.append((run_id, now))
        cells = [f"`{run_id}`", status, pipeline_label(manifest.get("pipelines")),
                 generations(manifest),
                 str(manifest.get("started", "-")), manifest.get("error", "")]  # fmt: skip
        rows.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    if not rows:
        return f"no runs in {project.resolve()} yet (kedro run starts one)"
    lines = ["| run | status | pipelines | generations | started | error |",
             "|---|---|---|---|---|---|", *rows]  # fmt: skip
    if resumable:
        lines += ["", f"Continue a failed or interrupted run: make resume RUN={resumable[-1]}"]
    if trained:
        run_id, size = trained[-1]
        lines += ["", f"Train a finished run further: make resume RUN={run_id} "
                      f"PARAMS=alphazero.num_generations={size + max(1, size // 2)}"]  # fmt: skip
    return "\n".join(lines)


PROJECT = click.option("--project", default=".", show_default=True, type=click.Path(path_type=Path),
                       help="The project folder.")  # fmt: skip


@click.command()
@PROJECT
def runs(project: Path) -> None:
    """List the project's runs: id, status, generations, start, error.

    The status is running, finished, failed or interrupted (its process gone); the table
    also gives each run's pipelines and how to resume or extend it."""
    click.echo(runs_table(project))
