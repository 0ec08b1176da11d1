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
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd

from ...core.config import check, is_int, resolve_device
from ...core.ladder import MatchCache, opening_key, play_pair, random_openings
from ...core.mcts import SEARCHES
from ...core.progress import progress_bar
from ...core.ratings import Games, bootstrap_intervals, fit_elo
from ...naming import CHUNK, GENERATION, generation_name, parse_step
from ...registry import REGISTERED_MODEL
from ...runs import alphazero_runs, known_runs, newest_version
from ...tracking import in_project
from ..params import parse_section

log = logging.getLogger(__name__)

ANCHOR_NAMES = ("random", "random_punisher")
SOLVER_PREFIX = "solver:"
LATEST = "latest"


@dataclass(frozen=True)
class LadderConfig:
    runs: list = field(default_factory=lambda: [LATEST])
    """AlphaZero runs whose generations play: run ids (``ls data/runs``) or ``latest``."""
    every: int = 4
    """Every this-many-th generation of each run plays, plus its last."""
    registry: list = field(default_factory=list)
    """Registered versions of ``connect-zero``: aliases (``champion``) or version numbers."""
    reinforce: list = field(default_factory=list)
    """REINFORCE chunks (``rf_008``): their latest version plays."""
    anchors: list = field(
        default_factory=lambda: ["random", "random_punisher", "solver:0.5", "solver:0.25"]
    )
    """Fixed players: ``random``, ``random_punisher``, ``solver:<epsilon>``."""
    anchor: str = "random_punisher"
    """The player whose rating is fixed at ``anchor_elo`` (an anchor name)."""
    anchor_elo: float = 0.0
    sims: int = 32
    """Network players search with MCTS at this many simulations (0: the policy alone)."""
    search: str = "puct"
    """The network players' search: ``puct`` or ``gumbel`` (no noise)."""
    num_openings: int = 20
    """Random openings per pair, each played twice (colours swapped)."""
    opening_plies: int = 4
    """Uniformly random plies of an opening."""
    solver_max_nodes: int = 200_000
    """Node budget of the solver anchors per position (0: exact, slow near the empty board)."""
    num_bootstrap: int = 200
    """Bootstrap resamples of the games for the 95% intervals."""
    cache_dir: str | None = "data/02_intermediate/ladder_cache"
    """Every game played, kept across ladders (a new player plays only its new pairs)."""
    move_champion: bool = False
    """Move the registry alias ``champion`` to the best-rated registered version of this
    ladder; exports then leave the alias alone (the champion follows the ladder)."""
    seed: int = 0
    device: str = "auto"

    def __post_init__(self):
        for name in ("runs", "registry", "reinforce", "anchors"):
            value = getattr(self, name)
            check(isinstance(value, (list, tuple)), name, value, "a list")
        check(is_int(self.every) and self.every >= 1, "every", self.every, "an integer >= 1")
        check(is_int(self.sims) and self.sims >= 0, "sims", self.sims, "an integer >= 0")
        check(self.search in SEARCHES, "search", self.search, f"one of {SEARCHES}")
        check(is_int(self.num_openings) and self.num_openings >= 1, "num_openings",
              self.num_openings, "an integer >= 1")  # fmt: skip
        check(is_int(self.opening_plies) and 0 <= self.opening_plies <= 12, "opening_plies",
              self.opening_plies, "an integer in [0, 12]")  # fmt: skip
        check(is_int(self.solver_max_nodes) and self.solver_max_nodes >= 0, "solver_max_nodes",
              self.solver_max_nodes, "an integer >= 0")  # fmt: skip
        check(is_int(self.num_bootstrap) and self.num_bootstrap >= 1, "num_bootstrap",
              self.num_bootstrap, "an integer >= 1")  # fmt: skip
        for name in self.anchors:
            check(_anchor_ok(name), "anchors", name,
                  "'random', 'random_punisher' or 'solver:<epsilon in [0, 1]>'")  # fmt: skip
        check(self.anchor in self.anchors, "anchor", self.anchor,
              f"one of the anchors {list(self.anchors)}")  # fmt: skip


def _anchor_ok(name) -> bool:
    if name in ANCHOR_NAMES:
        return True
    if isinstance(name, str) and name.startswith(SOLVER_PREFIX):
        try:
            return 0.0 <= float(name[len(SOLVER_PREFIX) :]) <= 1.0
        except ValueError:
            return False
    return False


# ---------------------------------------------------------------------------
# Players
# ---------------------------------------------------------------------------


def _agent(cfg: LadderConfig) -> str:
    return f"mcts{cfg.sims}-{cfg.search}" if cfg.sims else "policy"


def _run_generations(root: Path, run_id: str) -> list[int]:
    """The generations (>= 1) of run ``run_id`` with a model file."""
    files = (root / "data/06_models").glob(f"gen_*/model.pt/{run_id}/model.pt")
    steps = [parse_step(f.parents[2].name) for f in files]  # gen_008/model.pt/<run>/model.pt
    return sorted(k for kind, k in filter(None, steps) if kind == GENERATION and k >= 1)


def select_players(params: dict) -> pd.DataFrame:
    """The ladder's players, one row each: ``id``, ``kind``, ``label``, ``run_id``,
    ``generation``, ``source`` (a model file, a ``models:/`` URI or the anchor's spec).

    Raises:
        ValueError: naming an unknown run id, registry version or alias, or chunk,
            before any game is played.
    """
    (cfg,) = parse_section("ladder", params)
    root = Path(in_project("."))
    agent = _agent(cfg)
    rows = []
    finished = alphazero_runs(root)
    for run in cfg.runs:
        if run == LATEST:
            if not finished:
                raise ValueError(
                    "ladder.runs: 'latest' names no run: this project has no finished "
                    "alphazero run yet (kedro run), or name run ids"
                )
            run = finished[-1]
        elif run not in known_runs(root):
            raise ValueError(
                f"ladder.runs: no run {run!r} in this project; known runs: "
                f"{known_runs(root)[-5:]} (ls data/runs)"
            )
        generations = _run_generations(root, run)
        if not generations:
            raise ValueError(f"ladder.runs: run {run!r} has no generation models")
        last = generations[-1]
        chosen = [g for g in generations if g % cfg.every == 0 or g == last]
        for g in chosen:
            name = generation_name(g)
            rows.append({
                "id": f"{run}/{name}|{agent}", "kind": "generation", "label": name,
                "run_id": run, "generation": g,
                "source": str(root / f"data/06_models/{name}/model.pt/{run}/model.pt"),
            })  # fmt: skip
    if cfg.registry:
        rows += _registry_players(root, cfg, agent)
    for chunk in cfg.reinforce:
        folder = root / f"data/06_models/reinforce/{chunk}/model.pt"
        file = newest_version(folder)
        if file is None or (parse_step(str(chunk)) or ("",))[0] != CHUNK:
            raise ValueError(f"ladder.reinforce: no trained chunk {chunk!r} (expected rf_XXX "
                             f"with a model under {folder})")  # fmt: skip
        rows.append({
            "id": f"{chunk}@{file.parent.name}|{agent}", "kind": "reinforce", "label": chunk,
            "run_id": None, "generation": None, "source": str(file),
        })  # fmt: skip
    for anchor in cfg.anchors:
        spec = anchor
        if anchor.startswith(SOLVER_PREFIX):
            spec = f"{anchor},nodes={cfg.solver_max_nodes}"
        rows.append({"id": spec, "kind": "anchor", "label": anchor, "run_id": None,
                     "generation": None, "source": spec})  # fmt: skip
    table = pd.DataFrame(rows)
    dupes = table["id"][table["id"].duplicated()].tolist()
    if dupes:
        raise ValueError(f"ladder: players named twice: {dupes}")
    log.info("Ladder: %d players (%s)", len(table), ", ".join(table["label"]))
    return table


def _registry_players(root: Path, cfg: LadderConfig, agent: str) -> list[dict]:
    from ...registry import find_version, project_client

    client = project_client(root)
    rows = []
    for ref in map(str, cfg.registry):
        try:
            version = find_version(client, REGISTERED_MODEL, ref)
        except ValueError as exc:
            raise ValueError(f"ladder.registry: {exc}") from exc
        rows.append({
            "id": f"{REGISTERED_MODEL}/v{version.version}|{agent}", "kind": "registry",
            "label": f"{REGISTERED_MODEL} v{version.version}" + ("" if ref.isdigit() else f" ({ref})"),
            "run_id": version.tags.get("run_id"), "generation": None,
            "source": f"models:/{REGISTERED_MODEL}/{version.version}",
        })  # fmt: skip
    return rows


def _make_player(row, cfg: LadderConfig, device):
    from ...core.checkpoint import load_model
    from ...core.inference import make_evaluate_fn
    from ...core.mcts import MCTSConfig, MCTSPlayer
    from ...core.players import PolicyPlayer, RandomPlayer, RandomPunisher, SolverPlayer

    if row.kind == "anchor":
        if row.label == "random":
            return RandomPlayer()
        if row.label == "random_punisher":
            return RandomPunisher()
        epsilon = float(row.label[len(SOLVER_PREFIX) :])
        return SolverPlayer(epsilon=epsilon, max_nodes=cfg.solver_max_nodes)
    if row.source.startswith("models:/"):
        from ...registry import load_registered

        model = load_registered(row.source, Path(in_project(".")))
    else:
        model = load_model(row.source)
    if not cfg.sims:
        return PolicyPlayer(model.to(device).eval())
    evaluate_fn = make_evaluate_fn(model, device, "auto")
    return MCTSPlayer(evaluate_fn, MCTSConfig(sims=cfg.sims, search=cfg.search))


# ---------------------------------------------------------------------------
# Matches
# ---------------------------------------------------------------------------


def play_ladder(players: pd.DataFrame, params: dict) -> pd.DataFrame:
    """Every pair's games (round robin), from the cache when already played."""
    (cfg,) = parse_section("ladder", params)
    device = resolve_device(cfg.device)
    key = opening_key(cfg.num_openings, cfg.opening_plies, cfg.seed)
    openings = random_openings(cfg.num_openings, cfg.opening_plies, cfg.seed)
    cache = MatchCache(in_project(cfg.cache_dir) if cfg.cache_dir else None)
    rows = list(players.itertuples(index=False))
    built: dict[str, object] = {}
    tables, played, reused = [], 0, 0
    pairs = list(itertools.combinations(range(len(rows)), 2))
    for i, j in progress_bar(pairs, desc="ladder pairs", unit="pair"):
        a, b = rows[i], rows[j]
        games = cache.games(a.id, b.id, key)
        if games is None:
            for row in (a, b):
                if row.id not in built:
                    built[row.id] = _make_player(row, cfg, device)
            games = play_pair(built[a.id], built[b.id], (a.id, b.id), openings, key,
                              seed=cfg.seed + i * len(rows) + j, device=device)  # fmt: skip
            cache.add(games)
            played += 1
        else:
            reused += 1
        tables.append(games)
    log.info("Ladder: %d pairs played, %d reused from %s", played, reused, cfg.cache_dir)
    return pd.concat(tables, ignore_index=True)


# ---------------------------------------------------------------------------
# Ratings
# ---------------------------------------------------------------------------


def rate_players(
    matches: pd.DataFrame, players: pd.DataFrame, params: dict
) -> tuple[pd.DataFrame, object, dict]:
    """Elo of every player (anchor fixed), 95% bootstrap intervals, a plot and metrics."""
    (cfg,) = parse_section("ladder", params)
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
    lines = [
        f"{r.label:<22} {r.run_id or '':<25} {r.elo:+7.0f}  [{r.elo_low:+.0f}, {r.elo_high:+.0f}]"
        f"  {r.games} games, score {r.score:.3f}"
        for r in ratings.itertuples()
    ]
    log.info("Ladder ratings (Elo, 95%% interval):\n%s", "\n".join(lines))
    metrics = {
        f"ladder.elo.{r.label.replace(' ', '_').replace('(', '').replace(')', '')}"
        + (f".{r.run_id}" if r.kind == "generation" else ""): float(r.elo)
        for r in ratings.itertuples()
    }
    return ratings, plot_ladder(ratings), {k: {"value": v, "step": 0} for k, v in metrics.items()}


def plot_ladder(ratings: pd.DataFrame):
    """Elo against generation with 95% intervals, one line per run; anchors as levels."""
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    gens = ratings[ratings["kind"] == "generation"]
    for run_id, part in gens.groupby("run_id"):
        part = part.sort_values("generation")
        ax.errorbar(part["generation"], part["elo"],
                    yerr=[part["elo"] - part["elo_low"], part["elo_high"] - part["elo"]],
                    marker="o", capsize=3, label=f"run {run_id}")  # fmt: skip
    for r in ratings[ratings["kind"] != "generation"].itertuples():
        ax.axhline(r.elo, linestyle="--", linewidth=1, color="grey")
        ax.annotate(f"{r.label} ({r.elo:+.0f})", (0.01, r.elo), xycoords=("axes fraction", "data"),
                    fontsize=8, va="bottom", color="dimgrey")  # fmt: skip
    ax.set_xlabel("generation")
    ax.set_ylabel("Elo (95% bootstrap interval)")
    ax.set_title("Ladder: Elo by generation")
    if len(gens):
        ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def publish_ratings(ratings: pd.DataFrame, params: dict) -> None:
    """MLflow: ``elo`` (and its interval) on each rated generation's child run with
    ``step = generation``, the tag ``ladder.elo`` on each rated registered version, the
    ratings table and the plot on this run, and the ``champion`` alias when
    ``move_champion``."""
    import mlflow

    (cfg,) = parse_section("ladder", params)
    active = mlflow.active_run()
    if active is None:  # tracking disabled: the catalog outputs are the result
        return
    client = mlflow.MlflowClient()
    experiment = active.info.experiment_id
    logged = 0
    for run_id, part in ratings[ratings["kind"] == "generation"].groupby("run_id"):
        parents = client.search_runs([experiment], f"tags.run_id = '{run_id}'")
        parents = [p for p in parents if "mlflow.parentRunId" not in p.data.tags]
        if not parents:
            log.warning("Ladder: no MLflow run with run_id %s: its Elo is not logged there", run_id)
            continue
        for parent in parents:
            children = client.search_runs(
                [experiment], f"tags.mlflow.parentRunId = '{parent.info.run_id}'"
            )
            by_name = {c.info.run_name: c.info.run_id for c in children}
            for r in part.itertuples():
                child = by_name.get(generation_name(int(r.generation)))
                if child is None:
                    continue
                for name, value in (
                    ("elo", r.elo),
                    ("elo_low", r.elo_low),
                    ("elo_high", r.elo_high),
                ):
                    client.log_metric(child, name, float(value), step=int(r.generation))
                logged += 1
    registry = ratings[ratings["kind"] == "registry"]
    for r in registry.itertuples():
        version = r.source.rsplit("/", 1)[-1]
        client.set_model_version_tag(REGISTERED_MODEL, version, "ladder.elo", f"{r.elo:.1f}")
    if cfg.move_champion and len(registry):
        from ...registry import CHAMPION, CHAMPION_BY_TAG

        best = registry.sort_values("elo", ascending=False).iloc[0]
        client.set_registered_model_alias(
            REGISTERED_MODEL, CHAMPION, best.source.rsplit("/", 1)[-1]
        )
        client.set_registered_model_tag(REGISTERED_MODEL, CHAMPION_BY_TAG, "ladder.elo")
        log.info("Ladder: %s is the champion (Elo %.0f)", best.label, best.elo)
    client.log_text(active.info.run_id, ratings.to_csv(index=False), "ladder/ratings.csv")
    client.log_figure(active.info.run_id, plot_ladder(ratings), "ladder/elo.png")
    log.info("Ladder: Elo logged on %d generation child run(s)", logged)
