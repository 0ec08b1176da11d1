"""The ``ladder`` nodes: select players, play every pair (reusing cached games), rate, publish.

Players (:func:`select_players`):

- generations of AlphaZero runs of this project (``runs``, by run id, or
  ``latest``: the newest finished run), every ``every``-th plus the last;
- registered versions of ``connect-zero`` (``registry``: aliases or numbers);
- REINFORCE chunks (``reinforce``: ``rf_008``, its latest version);
- anchors: ``random``, ``random_punisher`` and ``solver:<epsilon>`` (the
  perfect solver, a uniformly random move with probability epsilon; within
  ``solver_max_nodes`` per position, else win-now / block / random).

A player's id names the exact file it loads (run id and generation, registry
version, chunk version) and how it plays (``|mcts32-puct`` or ``|policy``),
so a rating always refers to one model and one agent.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...common.naming import CHUNK, GENERATION, model_index
from ...common.opening_book import book_solver, has_book, solver_spec
from ...core.config.players import SOLVER_PREFIX
from ...core.device import resolve_device
from ...core.inference import make_evaluate_fn
from ...core.labelling import Labeller, SolvedCache
from ...core.ladder import MatchCache, opening_key, play_pair, random_openings
from ...core.players import PolicyPlayer, make_player
from ...core.progress import progress_bar
from ...core.ratings import Games, bootstrap_intervals, fit_elo, ratings_table
from ...core.search import MCTSPlayer
from ...executors.dispatch import chunk_runner
from ...params.ladder import LadderConfig
from ...params.schema import parse_section
from ...tracking.registry import REGISTERED_MODEL, REGISTRY_PREFIX, load_version_files
from ...tracking.store import publish_ladder
from ..plots import pyplot

log = logging.getLogger(__name__)

Partitions = Mapping[str, Callable[[], Any]]


# ---------------------------------------------------------------------------
# Players
# ---------------------------------------------------------------------------


def select_players(model_files: Partitions, plan: dict, params: dict) -> pd.DataFrame:
    """The ladder's players, one row each: ``id``, ``kind``, ``label``, ``run_id``,
    ``generation``, ``source`` (a partition id of ``model_files``, a ``models:/`` URI or
    the anchor's name), from the runs and registry versions of ``plan`` (the catalog entry
    ``ladder_plan``, :mod:`...run.ladder`).

    Raises:
        ValueError: naming a run without models or an unknown chunk, before any game is
            played; or a ladder that was not planned (a plain ``KedroSession``).
    """
    cfg = parse_section("ladder", params)
    if not plan and (cfg.runs or cfg.registry):
        raise ValueError("ladder: no plan of its runs and registry versions: run it with "
                         "kedro run, whose session plans it at the run's start")  # fmt: skip
    agent = cfg.agent
    rows = []
    generations = model_index(model_files, GENERATION)
    for run in plan.get("runs", []):
        mine = {f.k: f for f in generations if f.k >= 1 and f.version == run}
        if not mine:
            raise ValueError(f"ladder.runs: run {run!r} has no generation models")
        last = max(mine)
        for g in sorted(k for k in mine if k % cfg.every == 0 or k == last):
            rows.append({
                "id": f"{run}/{mine[g].name}|{agent}", "kind": "generation",
                "label": mine[g].name, "run_id": run, "generation": g, "source": mine[g].pid,
            })  # fmt: skip
    for version in plan.get("registry", []):
        n, ref = version["version"], version["ref"]
        rows.append({
            "id": f"{REGISTERED_MODEL}/v{n}|{agent}", "kind": "registry",
            "label": f"{REGISTERED_MODEL} v{n}" + ("" if ref.isdigit() else f" ({ref})"),
            "run_id": version["run_id"], "generation": None, "source": version["uri"],
        })  # fmt: skip
    chunks = {f.name: f for f in model_index(model_files, CHUNK)}  # each chunk's latest version
    for chunk in cfg.reinforce:
        if chunk not in chunks:
            raise ValueError(f"ladder.reinforce: no trained chunk {chunk!r} (expected rf_XXX "
                             f"with a model; chunks: {sorted(chunks) or 'none'})")  # fmt: skip
        rows.append({
            "id": f"{chunk}@{chunks[chunk].version}|{agent}", "kind": "reinforce",
            "label": chunk, "run_id": None, "generation": None, "source": chunks[chunk].pid,
        })  # fmt: skip
    for anchor in cfg.anchors:
        spec = anchor
        if anchor.startswith(SOLVER_PREFIX):
            spec = f"{anchor},nodes={cfg.solver_max_nodes}"
            if cfg.solver_max_nodes and has_book():
                spec += ",book"  # exact at every ply within its budget: another player
        rows.append({"id": spec, "kind": "anchor", "label": anchor, "run_id": None,
                     "generation": None, "source": anchor})  # fmt: skip
    table = pd.DataFrame(rows)
    dupes = table["id"][table["id"].duplicated()].tolist()
    if dupes:
        raise ValueError(f"ladder: players named twice: {dupes}")
    log.info("Ladder: %d players (%s)", len(table), ", ".join(table["label"]))
    return table


def solver_labeller(cfg: LadderConfig, where: str | None):
    """What exact solver anchors (``solver_max_nodes: 0``) analyse with: the project's solver
    cache ``where`` (the run's ``pons.cache_dir``, shared with the labelled sets and
    ``benchmark``), one position per task on ``cfg.node``'s workers (a process per core by
    default). Anchors with a node budget analyse in this process instead: a cached exact
    analysis would make them stronger than their budget, and an anchor must stay the same
    player from ladder to ladder."""
    cache = SolvedCache(Path(where) if where else None)
    log.info("Ladder: the solver anchors analyse through %s (%d positions)", where, len(cache))
    return Labeller(max_nodes=0, cache=cache, chunk_size=1, solver=solver_spec,
                    run_chunks=chunk_runner(cfg.node), flush_seconds=30)  # fmt: skip


def _make_player(row, model_files: Partitions, plan: dict, cfg: LadderConfig, device,
                 labeller=None, solver=None):  # fmt: skip

    if row.kind == "anchor":  # exact: through the labeller; with a budget: ``solver``
        return make_player(row.source, solver_max_nodes=cfg.solver_max_nodes, labeller=labeller,
                           solver=solver)  # fmt: skip
    if row.source.startswith(REGISTRY_PREFIX):  # its files, as the plan found them
        version = next(v for v in plan["registry"] if v["uri"] == row.source)
        model = load_version_files(version["source"],
                                   f"{REGISTERED_MODEL} version {version['version']}")  # fmt: skip
    else:
        model = model_files[row.source]()
    if cfg.mcts is None:
        return PolicyPlayer(model.to(device).eval())
    return MCTSPlayer(make_evaluate_fn(model, device, cfg.node.backend), cfg.mcts)


# ---------------------------------------------------------------------------
# Matches
# ---------------------------------------------------------------------------


def play_ladder(players: pd.DataFrame, model_files: Partitions, plan: dict,
                params: dict) -> pd.DataFrame:  # fmt: skip
    """Every pair's games (round robin), from the cache when already played (the plan's
    ``match_cache``)."""
    cfg = parse_section("ladder", params)
    device = resolve_device(cfg.node.device)
    key = opening_key(cfg.num_openings, cfg.opening_plies, cfg.seed)
    openings = random_openings(cfg.num_openings, cfg.opening_plies, cfg.seed)
    where = plan.get("match_cache")
    cache = MatchCache(Path(where) if where else None)
    rows = list(players.itertuples(index=False))
    built: dict[str, object] = {}
    labeller = None  # the exact solver anchors', made when the first of them plays
    solver = None  # the budgeted ones' (this process's, with the opening book), likewise

    def player(row):
        nonlocal labeller, solver
        if row.id not in built:
            anchor = row.source.startswith(SOLVER_PREFIX)
            if anchor and not cfg.solver_max_nodes and labeller is None:
                labeller = solver_labeller(cfg, plan.get("solver_cache"))
            if anchor and cfg.solver_max_nodes and solver is None:
                solver = book_solver()
            built[row.id] = _make_player(row, model_files, plan, cfg, device, labeller, solver)
        return built[row.id]

    tables, played, reused = [], 0, 0
    pairs = list(itertools.combinations(range(len(rows)), 2))
    try:
        for i, j in progress_bar(pairs, desc="ladder pairs", unit="pair"):
            a, b = rows[i], rows[j]
            games = cache.games(a.id, b.id, key)
            if games is None:
                games = play_pair(player(a), player(b), (a.id, b.id), openings, key,
                                  seed=cfg.seed + i * len(rows) + j, device=device)  # fmt: skip
                cache.add(games)
                played += 1
            else:
                reused += 1
            tables.append(games)
    finally:
        if labeller is not None:
            labeller.close()
    log.info("Ladder: %d pairs played, %d reused from %s", played, reused, where)
    return pd.concat(tables, ignore_index=True)


# ---------------------------------------------------------------------------
# Ratings
# ---------------------------------------------------------------------------


def rate_players(
    matches: pd.DataFrame, players: pd.DataFrame, params: dict
) -> tuple[pd.DataFrame, object, dict]:
    """Elo of every player (anchor fixed), 95% bootstrap intervals, a plot and metrics."""
    cfg = parse_section("ladder", params)
    index = {pid: k for k, pid in enumerate(players["id"])}
    games = Games(
        matches["player_a"].map(index).to_numpy(),
        matches["player_b"].map(index).to_numpy(),
        (matches["result"].to_numpy() + 1) / 2.0,
        len(players),
    )
    anchor = int(np.flatnonzero(players["label"].to_numpy() == cfg.anchor)[0])
    elo = fit_elo(games, anchor, cfg.anchor_elo)
    low, high = bootstrap_intervals(games, anchor, cfg.anchor_elo, cfg.num_bootstrap, cfg.seed)
    count = np.bincount(games.a, minlength=len(players)) + np.bincount(
        games.b, minlength=len(players)
    )
    points = np.bincount(games.a, games.score, len(players)) + np.bincount(
        games.b, 1.0 - games.score, len(players)
    )
    ratings = players.assign(
        elo=elo, elo_low=low, elo_high=high, games=count, score=points / np.maximum(count, 1)
    )
    ratings = ratings.sort_values("elo", ascending=False).reset_index(drop=True)
    log.info("Ladder ratings:\n%s", "\n".join(ratings_table(ratings)))
    metrics = {
        f"ladder.elo.{r.label.replace(' ', '_').replace('(', '').replace(')', '')}"
        + (f".{r.run_id}" if r.kind == "generation" else ""): float(r.elo)
        for r in ratings.itertuples()
    }
    return ratings, plot_ladder(ratings), {k: {"value": v, "step": 0} for k, v in metrics.items()}


def spread(levels: list[float], gap: float) -> list[float]:
    """Label heights for sorted ``levels``: each at its level, moved up just enough to stay
    ``gap`` above the one below (so labels of close anchors do not overlap)."""
    out: list[float] = []
    for y in levels:
        out.append(max(y, out[-1] + gap) if out else y)
    return out


def plot_ladder(ratings: pd.DataFrame):
    """Elo against generation with 95% intervals, one line per run; anchors as levels."""
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415 (matplotlib: only when a figure is drawn)

    fig, ax = pyplot().subplots(figsize=(8, 5))
    gens = ratings[ratings["kind"] == "generation"]
    for run_id, part in gens.groupby("run_id"):
        part = part.sort_values("generation")
        ax.errorbar(part["generation"], part["elo"],
                    yerr=[part["elo"] - part["elo_low"], part["elo_high"] - part["elo"]],
                    marker="o", capsize=3, label=f"run {run_id}")  # fmt: skip
    levels = ratings[ratings["kind"] != "generation"].sort_values("elo")
    for r in levels.itertuples():
        ax.axhline(r.elo, linestyle="--", linewidth=1, color="grey")
    ax.figure.canvas.draw()  # the y-limits are final: labels are spread in their units
    low, high = ax.get_ylim()
    for r, y in zip(levels.itertuples(), spread(levels["elo"].tolist(), 0.045 * (high - low)),
                    strict=True):  # fmt: skip
        ax.annotate(f"{r.label} ({r.elo:+.0f})", (0.01, y), xycoords=("axes fraction", "data"),
                    fontsize=8, va="bottom", color="dimgrey")  # fmt: skip
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # generations are whole numbers
    ax.set_xlabel("generation")
    ax.set_ylabel("Elo (95% bootstrap interval)")
    ax.set_title("Ladder: Elo by generation")
    if len(gens):
        ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def publish_ratings(ratings: pd.DataFrame, plot_png: bytes, params: dict) -> None:
    """MLflow (:func:`...tracking.store.publish_ladder`): ``elo`` on each rated generation's
    child run, the tag ``ladder.elo`` on each rated registered version, the table and the
    plot (``plot_png``: the catalog's ``ladder_plot``, as :func:`rate_players` drew it) on
    this run, and the ``champion`` alias when ``move_champion``."""
    cfg = parse_section("ladder", params)
    publish_ladder(ratings, plot_png, move_champion=cfg.move_champion)
