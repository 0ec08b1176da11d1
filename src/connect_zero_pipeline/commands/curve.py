"""``python -m connect_zero_pipeline curve``: a run's learning curve as a Markdown table.

Usage::

    python -m connect_zero_pipeline curve [--run ID] [--project DIR] [--times] [--json]

Prints which run it shows first (its id, pipelines, generations, start, and the model it
started from, as resolved when it began: run, generation, registered version), then reads
the per-generation metric files of one run (:mod:`..run.outputs`, where the catalog puts
them: ``data/08_reporting/gen_XXX/{eval,selfplay,train}_metrics.json/<ID>/``): the run ``ID``
(see ``data/runs``), by default the newest run with a learning curve (a partial run, one
of ``--from-nodes`` or ``--namespaces``, has the generations it made; an export or a ladder
has none, and an earlier run is shown), or, in a project whose runs predate manifests, the
newest version of each file. Prints one row per generation the run made: solver-set accuracy (strict and weak, by ply bucket), cross
entropy, value sign accuracy, win rates against RandomPunisher (network alone
and MCTS), the score against the previous generation, the self-play positions,
the seconds of self-play (of which compiling the search, where it was compiled), training
and evaluation, and their running sum, and whether the generation's scorecard was in full
(its games and searches: every ``evaluate.full_every`` generations and the last) or the
solver set alone. The table in ``docs/results.md`` is this output.
``--times`` adds when each generation's model and its scorecard were written, in seconds
since the run started: with ``alphazero.overlap`` the stages overlap, so the running sum is
not the wall time, and a scorecard is written after the next generations' models.
``--json`` prints the same generations as one JSON object a line (every metric under its
own name, :func:`..run.outputs.generation_rows`), for scripts.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..common.naming import generation_name, pipeline_label
from ..run.manifest import known_runs, read_manifest
from ..run.outputs import curve_generations, generation_rows, newest_curve_run
from .runs import PROJECT

COLUMNS = [
    ("gen", None),
    ("acc", "solver.acc"),
    ("weak acc", "solver.weak_acc"),
    ("begin / middle / end", None),
    ("ce", "solver.ce"),
    ("val sign acc", "solver.val_signacc"),
    ("policy vs RP", "punisher.policy.win_rate"),
    ("MCTS vs RP", "punisher.mcts.win_rate"),
    ("vs previous", "gate.score"),
    ("self-play positions", "selfplay.positions"),
    ("self-play s", "selfplay.seconds"),
    ("compile s", "selfplay.compile_s"),
    ("train s", "train.train_seconds"),
    ("eval s", "evaluate.seconds"),
    ("s so far", None),
    ("scorecard", "evaluate.full"),
]
TIMED = ("selfplay.seconds", "train.train_seconds", "evaluate.seconds")
"""A generation's stages, timed: ``s so far`` is their running sum (the compile seconds are
part of self-play's), so the time to any target reads off the table; a run without one of
them (made before it was measured) has none."""


def _cell(value, key: str) -> str:
    if value is None:
        return "-"
    if key == "evaluate.full":  # evaluate.full_every: the games and searches, or the set alone
        return "full" if value else "solver set"
    if key in ("selfplay.positions",):
        return f"{int(value):,}"
    if key.endswith(("seconds", "_s")):
        return f"{value:.0f}"
    return f"{value:.3f}"


WRITTEN = (("model at s", "model_at_s"), ("scorecard at s", "scorecard_at_s"))
"""``--times``: the columns, and :func:`..run.outputs.generation_rows`' keys they read."""


def curve_table(project: Path, run_id: str | None, times: bool = False) -> str:
    """The Markdown table of run ``run_id`` (None: the newest versions) in ``project``; a
    column with no value in any generation (a run made before its metric, or self-play not
    compiled) is left out. ``times``: when each generation's model and scorecard were
    written, seconds since the run started."""
    columns = COLUMNS + (list(WRITTEN) if times else [])
    rows = []
    so_far = 0.0
    scored = set(curve_generations(project, run_id))
    for flat in generation_rows(project, run_id, times):
        if flat["generation"] not in scored:  # a model whose scorecard has not come yet
            continue
        cells = [str(flat["generation"])]
        timed = [flat.get(key) for key in TIMED]
        so_far = None if so_far is None or None in timed else so_far + sum(timed)
        for title, key in columns[1:]:
            if title == "s so far":
                cells.append(_cell(so_far, "seconds"))
            elif title == "begin / middle / end":
                cells.append(
                    " / ".join(
                        _cell(flat.get(f"solver.acc_{b}"), "x") for b in ("begin", "middle", "end")
                    )
                )
            else:
                cells.append(_cell(flat.get(key), key))
        rows.append(cells)
    if not rows:  # an export or a ladder: it made no generation
        raise _no_generations(project, run_id)
    shown = [i for i in range(len(columns)) if i == 0 or any(r[i] != "-" for r in rows)]
    header = "| " + " | ".join(columns[i][0] for i in shown) + " |"
    rule = "|" + "---|" * len(shown)
    body = ["| " + " | ".join(r[i] for i in shown) + " |" for r in rows]
    return "\n".join([header, rule, *body])


def _no_generations(project: Path, run_id: str | None) -> click.ClickException:
    return click.ClickException(
        f"no generation metrics of run {run_id or '(latest)'} under {project}/data: it "
        "made no generation (python -m connect_zero_pipeline runs lists the runs)"
    )


@click.command()
@click.option("--run", "run_id", default=None, help="A run id.",
              show_default="the newest run with a learning curve")  # fmt: skip
@click.option("--times", is_flag=True, help="Add when each generation's model and scorecard "
              "were written (seconds since the run started).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="One JSON object a generation, every "
              "metric under its own name (for scripts), in place of the heading and table.")  # fmt: skip
@PROJECT
def curve(run_id: str | None, project: Path, times: bool, as_json: bool) -> None:
    """Print a run's learning curve as a Markdown table.

    A row per generation, its metrics a column each (--json: every metric, one object a
    generation)."""
    chosen = "--run"
    if run_id is None:
        run_id = newest_curve_run(project)  # a later ladder or export run has no generations
        chosen = "the newest run with a learning curve; --run <id> shows another"
    if as_json:
        rows = generation_rows(project, run_id, times)
        if not rows:
            raise _no_generations(project, run_id)
        for row in rows:
            click.echo(json.dumps({"run_id": run_id, **row}, sort_keys=True))
        return
    click.echo(run_heading(project, run_id, chosen))
    click.echo(curve_table(project, run_id, times))


def _span(generations: list[int]) -> str:
    """``gen_003`` or ``gen_002..gen_004`` (or a list, when there are gaps)."""
    names = [generation_name(k) for k in generations]
    if generations == list(range(generations[0], generations[-1] + 1)) and len(names) > 1:
        return f"{names[0]}..{names[-1]}"
    return ", ".join(names)


def run_heading(project: Path, run_id: str | None, chosen: str) -> str:
    """Which run a table is about, first: ``Run <id>: alphazero, 24 generations, started ...,
    from <start> (<why this run>)``."""
    if run_id is None:
        return "Run: none recorded (data/runs); the newest version of each metric file\n"
    if run_id not in known_runs(project):
        return f"Run {run_id} ({chosen}; it has no manifest in data/runs)\n"
    manifest = read_manifest(project, run_id)
    params = manifest.get("params") or {}
    parts = [pipeline_label(manifest.get("pipelines"))]
    generations = (params.get("alphazero") or {}).get("num_generations")
    made = curve_generations(project, run_id)
    if generations is not None:
        parts.append(f"{generations} generations")
    if made and generations is not None and made != list(range(1, generations + 1)):
        parts.append(f"this run made {_span(made)}")
    parts.append(f"started {manifest.get('started', '?')}")
    # The start as resolved when the run began (an alias may have moved since), else as given.
    resolved = manifest.get("start_from") or {}
    start = resolved.get("described") or (params.get("model") or {}).get("start_from")
    if start:
        parts.append(f"started from {start}")
    return f"Run {run_id}: {', '.join(parts)} ({chosen})\n"
