"""Evaluation node: solver-set metrics, matches against RandomPunisher and the previous model, gating."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from torch import nn

from ...core.config import check, is_int, mix_seed, resolve_device
from ...core.evaluation import search_agent_metrics, solver_set_metrics, win_rates
from ...core.inference import BACKENDS, make_evaluate_fn, torch_evaluate_fn
from ...core.labelling import Labeller, SolvedCache
from ...core.mcts import SEARCHES, MCTSConfig, MCTSPlayer
from ...core.players import PolicyPlayer, RandomOpening, RandomPunisher
from ...core.pons_files import label_positions, read_pons_file
from ...executors import chunk_runner
from ...tracking import in_project
from ..params import parse_section
from ..pons.nodes import PonsConfig

log = logging.getLogger(__name__)


BENCHMARK_FILES = ("tests/data/pons/Test_L3_R1", "tests/data/pons/Test_L2_R1")
"""Pascal Pons' public end-easy and middle-easy sets, shipped with the project."""


@dataclass(frozen=True)
class EvaluateConfig:
    num_games: int = 200
    """Games against RandomPunisher, for the network alone and for the MCTS agent (colours alternate)."""
    mcts_sims: int = 32
    """Simulations per move of the MCTS agent."""
    previous_games: int = 100
    """Games of the new model (MCTS agent) against the previous generation's."""
    previous_sims: int = 16
    """Simulations per move of both MCTS agents in the match against the previous generation."""
    opening_plies: int = 2
    """Random moves that open every game against the previous generation (the agents are
    deterministic: without them the match would repeat the same two games)."""
    gating: bool = False
    """Keep the previous model unless the new one wins ``gate_threshold`` of the match."""
    gate_threshold: float = 0.55
    """Score (wins + draws/2) the new model needs against the previous one to replace it."""
    seed: int = 0
    """Seeds the matches (mixed with the generation number)."""
    device: str = "auto"
    """``auto``, ``cpu`` or ``cuda``."""
    backend: str = "auto"
    """Network evaluation inside the MCTS agents: ``auto`` (onnxruntime on CPU, torch on
    CUDA), ``torch`` or ``onnxruntime``."""
    num_threads: int | None = None
    """onnxruntime threads of the MCTS agents' network (null: one per core; the node runs
    alone, so it has the machine to itself). The figures do not depend on it."""
    search: str = "puct"
    """The MCTS agents' search: ``puct`` (most visited move) or ``gumbel`` (Gumbel search
    without noise: its Sequential Halving survivor)."""
    benchmark_files: list = field(default_factory=lambda: list(BENCHMARK_FILES))
    """Pons-format position files (paths from the project root), labelled once by the solver
    (through the ``pons`` solver cache), on which the network and the MCTS agents of
    ``benchmark_sims`` are scored every generation: ``bench.<file>.<agent>.strict_acc`` and
    ``.weak_mistake_rate``. Default: the two shipped public sets (:data:`BENCHMARK_FILES`);
    ``[]``: none."""
    benchmark_sims: list = field(default_factory=lambda: [32])
    """Simulations of the MCTS agents scored on ``benchmark_files`` (the network always is)."""

    def __post_init__(self):
        check(self.num_games >= 200, "num_games", self.num_games, ">= 200 (both colours, seeded)")
        check(self.mcts_sims >= 1, "mcts_sims", self.mcts_sims, ">= 1")
        check(self.previous_games >= 2, "previous_games", self.previous_games, ">= 2")
        check(self.previous_sims >= 1, "previous_sims", self.previous_sims, ">= 1")
        check(0 <= self.opening_plies <= 8, "opening_plies", self.opening_plies, "in [0, 8]")
        check(self.backend in BACKENDS, "backend", self.backend, f"one of {BACKENDS}")
        check(
            self.num_threads is None or (is_int(self.num_threads) and self.num_threads >= 1),
            "num_threads",
            self.num_threads,
            "null (one per core) or an integer >= 1",
        )
        check(self.search in SEARCHES, "search", self.search, f"one of {SEARCHES}")
        check(
            isinstance(self.benchmark_sims, (list, tuple))
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 1
                    for n in self.benchmark_sims),
            "benchmark_sims",
            self.benchmark_sims,
            "a list of integers >= 1",
        )  # fmt: skip
        for path in self.benchmark_files:
            check(
                isinstance(path, str) and in_project(path).is_file(),
                "benchmark_files",
                path,
                "a list of existing position files (paths from the project root)",
            )
        check(0 <= self.gate_threshold <= 1, "gate_threshold", self.gate_threshold, "in [0, 1]")


_LABELLED: dict[tuple, pd.DataFrame] = {}  # (file, mtime, size) -> labelled table, per process


def _labelled_file(path: str) -> pd.DataFrame:
    """The solver-labelled positions of a Pons file, labelled once per process and file version."""
    file = in_project(path)
    stat = file.stat()
    key = (str(file.resolve()), stat.st_mtime_ns, stat.st_size)
    if key not in _LABELLED:
        table, errors = read_pons_file(file)
        if errors:
            raise ValueError(f"evaluate.benchmark_files: {errors[0]} ({len(errors)} bad lines)")
        cache = SolvedCache(in_project(PonsConfig().cache_dir))
        with Labeller(max_nodes=0, cache=cache, run_chunks=chunk_runner("local", 0)) as lab:
            labelled, _ = label_positions(table, lab, desc=f"labelling {Path(path).name}")
        _LABELLED[key] = labelled
    return _LABELLED[key]


def _benchmark(path: str, model: nn.Module, search_fn, cfg, device) -> dict[str, float]:
    """``bench.<file>.<agent>.*`` metrics of the network and the MCTS agents on a Pons file."""
    labelled = _labelled_file(path)
    name = Path(path).name
    network = solver_set_metrics(torch_evaluate_fn(model, device), labelled)
    out = {
        f"bench.{name}.network.strict_acc": network["acc"],
        f"bench.{name}.network.weak_mistake_rate": 1.0 - network["weak_acc"],
    }
    for sims in cfg.benchmark_sims:
        agent = search_agent_metrics(search_fn, labelled, MCTSConfig(sims=sims, search=cfg.search))
        out[f"bench.{name}.mcts{sims}.strict_acc"] = agent["strict_acc"]
        out[f"bench.{name}.mcts{sims}.weak_mistake_rate"] = 1.0 - agent["weak_acc"]
    return out


def evaluate_generation(
    candidate: nn.Module,
    previous: nn.Module,
    positions: pd.DataFrame,
    params: dict,
    generation: int,
) -> tuple[nn.Module, dict]:
    """Measure ``candidate``; return the generation's model (gated) and its metrics.

    Metric names are shared with the REINFORCE pipeline so MLflow charts align:
    ``solver.*`` (network alone), ``punisher.policy.*`` and ``punisher.mcts.*``
    (win/draw/loss against RandomPunisher), ``previous.*`` (MCTS agents, new vs
    previous), ``gate.accepted`` and, for ``benchmark_files``, ``bench.<file>.<agent>.*``.
    """
    (cfg,) = parse_section("evaluate", params)
    device = resolve_device(cfg.device)
    seed = mix_seed(cfg.seed, generation)
    metrics: dict[str, float] = {}
    for k, v in solver_set_metrics(torch_evaluate_fn(candidate, device), positions).items():
        metrics[f"solver.{k}"] = v
    punisher = RandomPunisher()
    mcts_cfg = MCTSConfig(sims=cfg.mcts_sims, search=cfg.search)
    threads = cfg.num_threads or 0  # 0: onnxruntime's default, one thread per core
    new_fn = make_evaluate_fn(candidate, device, cfg.backend, threads)
    old_fn = make_evaluate_fn(previous, device, cfg.backend, threads)
    agent = MCTSPlayer(new_fn, mcts_cfg)
    for name, player in (("policy", PolicyPlayer(candidate.to(device).eval())), ("mcts", agent)):
        for k, v in win_rates(player, punisher, cfg.num_games, seed, device).items():
            metrics[f"punisher.{name}.{k}"] = v
    prev_cfg = MCTSConfig(sims=cfg.previous_sims, search=cfg.search)
    new_agent = RandomOpening(MCTSPlayer(new_fn, prev_cfg), cfg.opening_plies)
    old_agent = RandomOpening(MCTSPlayer(old_fn, prev_cfg), cfg.opening_plies)
    vs_prev = win_rates(new_agent, old_agent, cfg.previous_games, seed + 1, device)
    for k, v in vs_prev.items():
        metrics[f"previous.{k}"] = v
    score = vs_prev["win_rate"] + 0.5 * vs_prev["draw_rate"]
    accepted = (not cfg.gating) or score >= cfg.gate_threshold
    metrics["gate.accepted"] = float(accepted)
    metrics["gate.score"] = score
    for path in cfg.benchmark_files:
        metrics.update(_benchmark(path, candidate, new_fn, cfg, device))
    log.info(
        "Generation %d: solver acc %.3f, ce %.3f | vs RandomPunisher: policy %.3f, mcts %.3f | "
        "vs previous %.3f%s",
        generation,
        metrics["solver.acc"],
        metrics["solver.ce"],
        metrics["punisher.policy.win_rate"],
        metrics["punisher.mcts.win_rate"],
        score,
        "" if accepted else " -> rejected, keeping the previous model",
    )
    chosen = candidate if accepted else previous
    chosen = chosen.cpu()
    chosen.meta = {**getattr(chosen, "meta", {}), "generation_accepted_at": generation}
    return chosen, metrics
