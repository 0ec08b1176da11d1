"""``bench mcts``: batched MCTS and self-play with the default recipe (``tiny`` model).

The recipe is the project's ``conf/base/parameters_selfplay.yml`` (its
:class:`SelfPlayConfig` keys; the dataclass defaults when the file is absent).

Figures (each against a baseline measured in this process):

- ``search_efficiency``: network evaluations per second inside :func:`search`
  divided by the bare forward throughput of the same model at the same batch
  size (target >= 0.7: tree bookkeeping costs less than the network). The two
  are measured alternately and the best of each is kept, so load from other
  processes hits both alike.
- ``sims_per_s``: game-simulations per second of the batched search
  (``num_games * sims / time``).
- ``selfplay_positions_per_s``: env steps (searched and played positions) per
  second of :func:`self_play` with the default config, over a shortened
  generation; its baseline is the network-bound ceiling ``forward_per_s / (sims + 1)``.
- ``speedup_vs_reference``: batched ``sims_per_s`` over the per-node Python
  reference (:func:`reference_mcts`, one game at a time) on the same network.

All run with the recipe's torch thread count (``DEFAULT_NUM_THREADS``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator

import torch

from ..core.bitboard import (
    random_states,
    to_boards,
)
from ..core.config.search import MCTSConfig
from ..core.config.selfplay import SelfPlayConfig
from ..core.inference import torch_evaluate_fn
from ..core.models import build_model
from ..core.search import search
from ..core.search.reference import reference_mcts
from ..core.selfplay import DEFAULT_NUM_THREADS, self_play
from ..pipelines.structure import section
from . import best_rate, figure


def _recipe() -> SelfPlayConfig:
    """The project's self-play parameters (the default run's: ``conf/base`` and ``local``,
    when run inside the project), as a :class:`SelfPlayConfig`."""
    return section("selfplay")


def run(args) -> Iterator[dict]:
    recipe = _recipe()
    quick = bool(getattr(args, "quick", False))
    num_games = 32 if quick else recipe.num_games
    sims = 8 if quick else recipe.mcts.sims
    repeats = 2 if quick else 4
    torch.set_num_threads(DEFAULT_NUM_THREADS)  # as self_play runs the recipe
    torch.manual_seed(0)
    model = build_model("tiny").eval()
    evaluate_fn = torch_evaluate_fn(model)
    roots = random_states(num_games, 8)
    boards = to_boards(roots)  # (B, 6, 7)
    mcts_cfg = MCTSConfig(
        sims=sims, c_puct=recipe.mcts.c_puct, dirichlet_eps=recipe.mcts.dirichlet_eps
    )
    gen = torch.Generator().manual_seed(0)
    evals = [0]

    def counting_fn(b: torch.Tensor):
        evals[0] += b.shape[0]
        return evaluate_fn(b)

    def bare() -> int:
        with torch.inference_mode():
            model(boards)
        return num_games

    def searched() -> int:
        evals[0] = 0
        search(roots, counting_fn, mcts_cfg, gen)
        return evals[0]

    def simulated() -> int:
        search(roots, evaluate_fn, mcts_cfg, gen)
        return num_games * sims

    # Per-node Python reference, one game at a time, same network and config.
    ref_games = 2 if quick else 8
    ref_roots = [(int(roots.position[i]), int(roots.mask[i])) for i in range(ref_games)]
    ref_cfg = dataclasses.replace(mcts_cfg, dirichlet_eps=0.0)

    def reference() -> int:
        for position, mask in ref_roots:
            reference_mcts(position, mask, evaluate_fn, ref_cfg)
        return ref_games * sims

    bare(), searched()  # warm-up (allocator, oneDNN primitives)
    forward_rate = search_rate = sims_rate = ref_rate = 0.0
    for _ in range(repeats):  # alternate, so drift from other processes hits all alike
        forward_rate = max(forward_rate, best_rate(bare, repeats=1, min_seconds=0.5))
        search_rate = max(search_rate, best_rate(searched, repeats=1, min_seconds=0.5))
        sims_rate = max(sims_rate, best_rate(simulated, repeats=1, min_seconds=0.5))
        ref_rate = max(ref_rate, best_rate(reference, repeats=1, min_seconds=0.5))
    common = {"model": "tiny", "batch": num_games, "sims": sims, "threads": torch.get_num_threads()}
    yield figure(
        "mcts",
        "search_efficiency",
        search_rate / forward_rate,
        evals_per_s=search_rate,
        forward_per_s=forward_rate,
        target=0.7,
        **common,
    )
    yield figure("mcts", "sims_per_s", sims_rate, **common)

    # Self-play: the default recipe over a shortened generation.
    moves = 4 if quick else 16
    sp_cfg = dataclasses.replace(
        recipe,
        num_games=num_games,
        moves_per_gen=moves,
        mcts=dataclasses.replace(recipe.mcts, sims=sims),
    )
    self_play(dataclasses.replace(sp_cfg, moves_per_gen=1), evaluate_fn)  # warm-up
    best = 0.0
    for _ in range(1 if quick else 2):
        start = time.perf_counter()
        self_play(sp_cfg, evaluate_fn)
        best = max(best, num_games * moves / (time.perf_counter() - start))
    # Baseline: the network-bound ceiling, one forward per root and per simulation.
    ceiling = forward_rate / (sims + 1)
    yield figure(
        "mcts", "selfplay_positions_per_s", best, baseline=ceiling, moves_per_gen=moves, **common
    )

    yield figure(
        "mcts",
        "speedup_vs_reference",
        sims_rate / ref_rate,
        reference_sims_per_s=ref_rate,
        **common,
    )
