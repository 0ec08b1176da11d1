"""``python -m connect_zero_pipeline benchmark``: a trained agent on any file of positions.

Options: ``python -m connect_zero_pipeline benchmark --help`` (``--sims 0`` by default: the
network alone).

Each file holds one position per line in Pascal Pons' benchmark format,
``<moves> [<score>]`` (``tests/data/pons/Test_L2_R1``); only the moves are
read, the expected score is ignored. Empty lines are skipped. A ``.parquet``
file is a table labelled already (the ``pons_positions`` schema, e.g. the
shipped ``data/03_primary/pons_positions.parquet``: a versioned folder is its newest
version), scored as it is. The model is
chosen as by ``play`` (:mod:`.model_source`): ``--model`` a model file or a
versioned folder (its latest version), else the latest version of the catalog
entry ``--dataset`` (default ``latest_model``). ``--plies LO-HI`` keeps only the
positions of those plies (before any labelling), e.g. ``0-6``: the opening.

Every move of every position is labelled by the perfect solver, with the
``pons`` pipeline's :class:`~..core.labelling.Labeller` on every core, within
``--max-nodes`` nodes per position (0: no limit; positions over budget are
skipped and counted), through the persistent solver cache ``--cache`` (by
default the project's ``data/02_intermediate/solver_cache`` when run inside
the project). Then each agent plays every position:

- ``--sims 0``: the network alone (its most probable legal move), scored with
  :func:`~..core.evaluation.solver_set_metrics` (``acc``, ``ce``,
  ``val_signacc``, per ply bucket and per outcome class, ``_win``, ``_draw``,
  ``_loss``, and the same over decisive positions with the suffix ``_decisive``);
- ``--sims N``: the MCTS agent with N simulations and no noise
  (:func:`~..core.evaluation.search_agent_metrics`): ``--search puct`` (the
  default) plays the most visited move, ``--search gumbel`` the Sequential
  Halving survivor.

A progress bar follows the labelling and each search agent; then a table prints one row
per file and agent: positions scored, strict accuracy, weak mistakes and seconds, and a
second the same by ply (0-6, 7-12, 13-20, 21-42: where an agent is weak). With
``--json``, one JSON line per file and agent instead, as it finishes, with ``strict_acc`` (the chosen move has
the best exact score), ``weak_mistake_rate`` (AlphaZero.jl's: the chosen
move's outcome class, win, draw or loss under perfect play, is worse than the
best move's) and ``weak_mistakes``, over ``count`` positions, and ``seconds``::

    {"file": "tests/data/pons/Test_L2_R1", "model": "<path>", "agent": "mcts-600",
     "sims": 600, "positions": 1000, "decisive": 998, "skipped": 0, "count": 1000.0,
     "strict_acc": ..., "weak_acc": ..., "weak_mistake_rate": ..., "weak_mistakes": 4,
     "seconds": ...}

- ``positions``: positions read from the file; ``skipped``: those over the
  node budget, left out of every metric (``count = positions - skipped``);
- ``decisive``: scored positions where not every legal move has the same
  score. On the others every move is optimal, so ``acc`` is trivially 1
  there: the ``*_decisive`` metrics (``acc_decisive``, ``ce_decisive``,
  ``val_signacc_decisive`` and per ply bucket, e.g. ``acc_middle_decisive``)
  are over decisive positions only, and absent when there are none.

Exit status: 0; 1 when a line is invalid (each bad line is reported on stderr
with its file, line number and bad move, and nothing is scored); 2 for a
usage error (unreadable file, no model).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import TextIO

import click
import pandas as pd

from ..common.opening_book import solver_spec
from ..common.project import project_root
from ..core.board import NUM_CELLS
from ..core.config.evaluation import STRENGTH_BUCKETS
from ..core.config.search import SEARCHES, MCTSConfig
from ..core.evaluation import set_scores
from ..core.inference import make_evaluate_fn, torch_evaluate_fn
from ..core.labelling import SCORE_COLUMNS, Labeller, SolvedCache
from ..core.pons_files import label_positions, read_pons_file
from ..executors.dispatch import chunk_runner
from ..executors.settings import NodeSettings
from ..params.pons import PonsConfig
from ..run.manifest import newest_version
from . import finish, max_nodes_option
from .model_source import (
    CommandError,
    from_here,
    model_options,
    one_model,
    resolve_model,
    run_command,
)

EXIT_BAD_INPUT = 1


def _sims(ctx, param, text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or any(v < 0 for v in values):
        raise click.BadParameter(
            f"must be comma-separated integers >= 0 like 0,32,600, got {text!r}"
        )
    return values


def _plies(ctx, param, text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    lo, sep, hi = text.partition("-")
    try:
        span = (int(lo), int(hi)) if sep else (int(lo), int(lo))
    except ValueError:
        span = (-1, -1)
    if not 0 <= span[0] <= span[1] <= NUM_CELLS:
        raise click.BadParameter(f"must be a ply or a range LO-HI within 0-{NUM_CELLS} like 0-6, "
                                 f"got {text!r}")  # fmt: skip
    return span


def _searches() -> list[str]:
    return list(SEARCHES)


@click.command()
@click.option(
    "--file",
    "files",
    multiple=True,
    required=True,
    metavar="PATH",
    help="A position file, one '<moves> [<score>]' per line (repeat for several "
    "files); a .parquet file is a solver-labelled table (the pons_positions schema, "
    "e.g. data/03_primary/pons_positions.parquet), scored as it is.",
)
@model_options
@max_nodes_option("Skip a position")
@click.option(
    "--sims",
    default="0",
    callback=_sims,
    metavar="N[,N...]",
    show_default=True,
    help="The agents: 0 is the network alone, N > 0 MCTS with N simulations.",
)
@click.option(
    "--plies",
    default=None,
    callback=_plies,
    metavar="LO-HI",
    help="Only the positions of these plies (stones on the board), e.g. 0-6: the opening.",
)
@click.option(
    "--search",
    type=click.Choice(_searches()),
    default="puct",
    show_default=True,
    help="The MCTS agents' search (gumbel: Sequential Halving, no noise).",
)
@click.option(
    "--cache",
    default=None,
    metavar="DIR",
    show_default="the project's data/02_intermediate/solver_cache",
    help="A persistent solver cache ('none': no cache).",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=4096,
    show_default=True,
    metavar="N",
    help="Positions per network forward pass.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="One JSON line per file and agent, with every metric, instead of the table.",
)
def benchmark(**options) -> None:
    """Score an agent on position files against the perfect solver.

    The network alone and MCTS agents (--sims) on files in Pons' benchmark format, each
    position labelled by the perfect solver: a table of the results (--json: one line a
    file and agent)."""
    one_model(options["model"], options["dataset"])
    args = SimpleNamespace(**{**options, "json": options.pop("as_json")})
    args.files = tuple(from_here(f) for f in args.files)
    args.model = from_here(args.model)
    if args.cache is not None and args.cache.lower() != "none":
        args.cache = from_here(args.cache)
    finish(run_command(lambda: run(args, sys.stdout, sys.stderr), args.project))


LABELLED_COLUMNS = ("position", "mask", "ply", "best_score", "decisive")


def is_labelled(path: Path) -> bool:
    """A ``.parquet`` file holds a solver-labelled table, scored without labelling."""
    return path.suffix == ".parquet"


def read_positions(path: Path) -> tuple[pd.DataFrame, list[str]]:
    """:func:`~..core.pons_files.read_pons_file`, with an unreadable file as a usage error.

    A ``.parquet`` file is read as an already labelled table (``pons_positions``
    schema); one without those columns is reported as an invalid file.
    """
    try:
        if is_labelled(path):
            table = pd.read_parquet(path)
            missing = [c for c in (*LABELLED_COLUMNS, *SCORE_COLUMNS) if c not in table]
            if missing:
                return table, [f"{path}: not a solver-labelled table, it lacks {missing}"]
            return table, []
        return read_pons_file(path)
    except OSError as exc:
        raise CommandError(str(exc)) from exc


def positions_file(path: Path) -> Path:
    """``path``, or for a versioned dataset folder (``data/03_primary/pons_positions.parquet``)
    its newest version's file: one set, never every version read as one table."""
    if path.is_dir() and (newest := newest_version(path)) is not None:
        return newest
    return path


def run(args: SimpleNamespace, stdout: TextIO, stderr: TextIO) -> int:
    """Score every file; returns the exit status."""
    paths = [positions_file(Path(f)) for f in args.files]
    tables, errors = [], []
    for path in paths:  # every file is checked before minutes of solving start
        table, bad = read_positions(path)
        if args.plies is not None and not bad:  # before the labelling: only these are solved
            table = table.loc[table["ply"].between(*args.plies)].reset_index(drop=True)
        tables.append(table)
        errors.extend(bad)
    if errors:
        for message in errors:
            print(message, file=stderr, flush=True)
        print(f"{len(errors)} invalid line(s): nothing scored", file=stderr, flush=True)
        return EXIT_BAD_INPUT

    model, description = resolve_model(args.model, args.dataset)
    print(f"Scoring {description}", file=stderr, flush=True)  # first, before the labelling
    network_fn = torch_evaluate_fn(model, "cpu")
    search_fn = make_evaluate_fn(model, "cpu", "auto") if any(args.sims) else None
    cache = SolvedCache(_cache_dir(args.cache))
    runner = chunk_runner(NodeSettings())  # every core
    records: list[dict] = []
    with Labeller(max_nodes=args.max_nodes, cache=cache, run_chunks=runner,
                  solver=solver_spec) as labeller:  # fmt: skip
        for path, table in zip(paths, tables, strict=True):
            if is_labelled(path):
                labelled, skipped = table, 0
            else:
                labelled, skipped = label_positions(table, labeller, desc=path.name)
            for sims in args.sims:
                start = time.perf_counter()
                mcts = MCTSConfig(sims=sims, search=args.search) if sims else None
                agent = "network" if sims == 0 else f"mcts-{sims}"
                metrics = set_scores(labelled, network_fn, search_fn, mcts, args.batch_size,
                                     progress=f"{agent} on {path.name}")  # fmt: skip
                strict = metrics.pop("strict_acc", 0.0)
                weak = metrics.pop("weak_acc", 0.0)
                metrics.pop("weak_mistake_rate", None)
                count = float(len(labelled))
                record = {
                    "file": str(path),
                    "plies": None if args.plies is None else "{}-{}".format(*args.plies),
                    "model": description,
                    "agent": agent,
                    "search": None if sims == 0 else args.search,
                    "sims": sims,
                    "positions": len(table),
                    "decisive": int(labelled["decisive"].sum()),
                    "skipped": skipped,
                    "count": count,
                    "strict_acc": strict,
                    "weak_acc": weak,
                    "weak_mistake_rate": 1.0 - weak if count else 0.0,
                    "weak_mistakes": round((1.0 - weak) * count),
                    **metrics,
                    "seconds": time.perf_counter() - start,
                }
                if args.json:
                    print(json.dumps(record), file=stdout, flush=True)
                records.append(record)
    if not args.json:
        print(f"Model: {description}\n\n{results_table(records)}", file=stdout, flush=True)
    return 0


def results_table(records: list[dict]) -> str:
    """The records as Markdown tables: file, agent, positions, strict accuracy, weak
    mistakes (count and rate), seconds; then the strict accuracy and weak-mistake rate of
    each by ply (:data:`~..core.config.evaluation.STRENGTH_BUCKETS`: where an agent is weak),
    ``-`` for a bucket with no positions."""
    lines = [
        "| file | agent | positions | strict acc | weak mistakes | seconds |",
        "|---|---|---|---|---|---|",
    ]
    for r in records:
        agent = _agent_label(r)
        skipped = f" ({r['skipped']} over budget)" if r["skipped"] else ""
        lines.append(
            f"| {_file_label(r)} | {agent} | {int(r['count'])}{skipped} "
            f"| {r['strict_acc']:.3f} | {r['weak_mistakes']} ({r['weak_mistake_rate']:.1%}) "
            f"| {r['seconds']:.0f} |"
        )
    spans = [f"plies {lo}-{hi}" for lo, hi in STRENGTH_BUCKETS.values()]
    lines += ["", "By ply (strict acc / weak mistakes):", "",
              "| file | agent | " + " | ".join(spans) + " |",
              "|---|---|" + "---|" * len(spans)]  # fmt: skip
    for r in records:
        agent = _agent_label(r)
        cells = [
            f"{r[f'strict_acc_{b}']:.3f} / {r[f'weak_mistake_rate_{b}']:.1%}"
            if f"strict_acc_{b}" in r else "-"
            for b in STRENGTH_BUCKETS
        ]  # fmt: skip
        lines.append(f"| {_file_label(r)} | {agent} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _agent_label(record: dict) -> str:
    """A row's agent, with its search when not PUCT (the default)."""
    search = record["search"]
    return record["agent"] if search in (None, "puct") else f"{record['agent']} ({search})"


def _file_label(record: dict) -> str:
    """A row's file: its name, and the plies it was limited to (``--plies``)."""
    name = Path(record["file"]).name
    return name if record.get("plies") is None else f"{name} (plies {record['plies']})"


def _cache_dir(option: str | None) -> Path | None:
    """``--cache``: a folder, ``none``, or by default the project's solver cache (if any)."""
    if option is not None:
        return None if option.lower() == "none" else Path(option)

    project = project_root()
    default = PonsConfig().cache_dir
    return project / default if project is not None and default else None
