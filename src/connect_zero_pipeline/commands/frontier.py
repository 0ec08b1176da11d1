"""``python -m connect_zero_pipeline frontier``: strength against wall time, every finished run.

Usage::

    python -m connect_zero_pipeline frontier [--project DIR ...] [--out FILE.png] [--json]

Reads every finished ``alphazero`` run of each project (``data/runs``) from its own records:
its manifest (env, parameters, wall time) and its generations' scorecards, through
:mod:`..run.outputs` (the reader ``curve`` uses). Each generation is a point at the wall
minutes from the run's start to its scorecard (``curve --times``' ``scorecard at s``; a run
that was resumed or trained further counts its stages' seconds instead, ``curve``'s ``s so
far``, so that the hours between its sessions do not count). Prints one row per run: its
id, what it is (its env and what its parameters change over that env), its generations, its
wall minutes and its last generation's ``solver.acc``, ``solver.weak_acc`` and weak
mistakes at plies 0-6 (``1 - solver.weak_acc_ply00_06``: the opening, where the network is
weakest), and whether it is on the frontier: no run finished in fewer minutes or as many is
stronger (``solver.acc``). ``--out`` draws both figures against wall minutes, every run's
curve a line, its end a dot, and the frontier a step through its runs' ends.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from ..common.config_loader import load_parameters
from ..common.naming import RESUME_KEY
from ..pipelines.plots import pyplot
from ..run.manifest import alphazero_runs, read_manifest
from ..run.outputs import generation_rows
from ..run.rules import flatten, is_placement
from .curve import TIMED

ACC, WEAK, OPENING = "solver.acc", "solver.weak_acc", "solver.weak_acc_ply00_06"
"""The scorecard's figures the frontier reads: strict and weak accuracy of the network alone
on the solver set, and its weak accuracy at plies 0-6."""
NAMED_CHANGES = 4
"""Parameter changes a run's label spells out; past them it says how many more."""


@dataclass
class RunCurve:
    """One finished run: what it is and its generations' points (minutes, figures)."""

    project: Path
    run_id: str
    label: str
    generations: int
    minutes: list[float] = field(default_factory=list)
    acc: list[float] = field(default_factory=list)
    opening_weak: list[float] = field(default_factory=list)
    weak_acc: float = math.nan
    frontier: bool = False

    @property
    def end(self) -> tuple[float, float]:
        return self.minutes[-1], self.acc[-1]

    def row(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "project": str(self.project), "label": self.label,
                "generations": self.generations, "minutes": round(self.minutes[-1], 1),
                ACC: self.acc[-1], WEAK: self.weak_acc,
                "opening_weak_mistakes": self.opening_weak[-1],
                "frontier": self.frontier}  # fmt: skip


def run_label(project: Path, manifest: dict) -> str:
    """``env=<env>`` (``base`` when none) and what the run's parameters change over that
    env's configuration as it is now, where a stage runs (``*.node.*``) left out:
    ``base model.preset=small train.buffer_gens=6``."""
    env = manifest.get("env")
    try:
        configured = flatten(load_parameters(Path(project) / "conf", env))
    except Exception:  # an env removed since: its keys show as changes over base
        configured = flatten(load_parameters(Path(project) / "conf", None))
    ran = flatten(manifest.get("params") or {})
    changed = [f"{k}={ran[k]}" for k in sorted(ran)
               if not is_placement(k) and k != RESUME_KEY and configured.get(k) != ran[k]]  # fmt: skip
    shown = changed[:NAMED_CHANGES]
    if len(changed) > NAMED_CHANGES:
        shown.append(f"+{len(changed) - NAMED_CHANGES}")
    return " ".join([f"env={env or 'base'}", *shown])


def run_curve(project: Path, run_id: str) -> RunCurve | None:
    """Run ``run_id``'s points, or None when no generation has a scorecard with the
    figures."""
    manifest = read_manifest(project, run_id)
    paused = bool(manifest.get("resumed") or manifest.get("extended"))
    rows = [r for r in generation_rows(project, run_id, times=True) if ACC in r]
    curve = RunCurve(project, run_id, run_label(project, manifest),
                     int((manifest.get("params") or {}).get("alphazero", {})
                         .get("num_generations") or len(rows)))  # fmt: skip
    so_far = 0.0
    for row in rows:
        stages = [row.get(key) for key in TIMED]
        so_far = math.nan if None in stages else so_far + sum(stages)
        at = row.get("scorecard_at_s")
        seconds = so_far if paused or at is None else at
        if not math.isfinite(seconds):
            continue
        curve.minutes.append(seconds / 60)
        curve.acc.append(float(row[ACC]))
        curve.opening_weak.append(1.0 - float(row.get(OPENING, math.nan)))
        curve.weak_acc = float(row.get(WEAK, math.nan))
    return curve if curve.minutes else None


def mark_frontier(curves: list[RunCurve]) -> list[RunCurve]:
    """Mark the runs no other beats: none that ended in as many minutes or fewer is as
    strong or stronger (``solver.acc``; equal ends: the first). Returns them, fastest first."""
    best = -math.inf
    on = []
    for curve in sorted(curves, key=lambda c: (c.end[0], -c.end[1])):
        curve.frontier = curve.end[1] > best
        if curve.frontier:
            best = curve.end[1]
            on.append(curve)
    return on


def collect(projects: list[Path]) -> list[RunCurve]:
    """Every finished ``alphazero`` run of ``projects`` with points, oldest first, the
    frontier marked."""
    curves = [c for p in projects for r in alphazero_runs(p) if (c := run_curve(p, r))]
    mark_frontier(curves)
    return curves


def table(curves: list[RunCurve]) -> str:
    """The Markdown table of the runs, one row each."""
    head = ("| run | what | generations | wall min | `solver.acc` | weak acc | weak mistakes, "
            "plies 0-6 | frontier |\n|---|---|---|---|---|---|---|---|")  # fmt: skip
    rows = [f"| {c.run_id} | {c.label} | {c.generations} | {c.minutes[-1]:.1f} | "
            f"{c.acc[-1]:.3f} | {c.weak_acc:.3f} | {c.opening_weak[-1]:.1%} | "
            f"{'yes' if c.frontier else ''} |" for c in curves]  # fmt: skip
    return "\n".join([head, *rows])


def draw(curves: list[RunCurve], path: Path) -> None:
    """Both figures against wall minutes in one PNG at ``path``."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8 + 0.17 * len(curves)))
    front = sorted((c for c in curves if c.frontier), key=lambda c: c.end[0])
    for curve in curves:
        line = axes[0].plot(curve.minutes, curve.acc, lw=1.2, alpha=0.8,
                            label=f"{curve.label} ({curve.run_id[:16]})")[0]  # fmt: skip
        axes[1].plot(curve.minutes, curve.opening_weak, lw=1.2, alpha=0.8, color=line.get_color())
        for ax, ys in ((axes[0], curve.acc), (axes[1], curve.opening_weak)):
            ax.plot(curve.minutes[-1], ys[-1], "o", color=line.get_color(),
                    markersize=7 if curve.frontier else 4)  # fmt: skip
    if front:
        xs = [c.end[0] for c in front]
        axes[0].step(xs, [c.end[1] for c in front], where="post", color="black", lw=2,
                     alpha=0.5, label="frontier (runs' ends)")  # fmt: skip
        axes[1].step(xs, [c.opening_weak[-1] for c in front], where="post", color="black",
                     lw=2, alpha=0.5)  # fmt: skip
    axes[0].set_ylabel("solver.acc (network alone)")
    axes[1].set_ylabel("weak mistakes at plies 0-6 (network alone)")
    axes[1].yaxis.set_major_formatter(plt.FuncFormatter(lambda y, _: f"{y:.0%}"))
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("wall minutes from the run's start")
        ax.grid(alpha=0.3, which="both")
    handles, labels = axes[0].get_legend_handles_labels()
    rows = len(labels)
    fig.legend(handles, labels, fontsize=7, loc="lower center", ncol=1, frameon=False)
    fig.tight_layout(rect=(0, min(0.5, 0.035 * rows + 0.02), 1, 1))  # the legend below
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


@click.command()
@click.option("--project", "projects", multiple=True, default=["."], show_default=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A project whose finished runs to read (again for more projects).")  # fmt: skip
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Draw the figures into this PNG file.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="One JSON object a run (for scripts), in "
              "place of the table.")  # fmt: skip
def frontier(projects: tuple[Path, ...], out: Path | None, as_json: bool) -> None:
    """Every finished run's strength against its wall minutes.

    A row per finished alphazero run, the frontier marked (--out: the curves drawn too)."""
    if out is not None and out.suffix.lower() != ".png":
        raise click.BadParameter(f"must name a .png file, got {str(out)!r}", param_hint="--out")
    curves = collect([p.resolve() for p in projects])
    if not curves:
        raise click.ClickException(
            f"no finished alphazero run with scorecards in {', '.join(map(str, projects))} "
            "(python -m connect_zero_pipeline runs lists the runs)"
        )
    if as_json:
        for curve in curves:
            click.echo(json.dumps(curve.row(), sort_keys=True))
    else:
        click.echo(table(curves))
    if out is not None:
        draw(curves, out)
        click.echo(f"Drew {len(curves)} run(s) into {out}")
