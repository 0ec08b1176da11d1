"""Training node: a model and a replay window of games -> a new model and metrics."""

from __future__ import annotations

import logging

import pandas as pd
from torch import nn

from ...common.naming import generation_name
from ...core.config import mix_seed
from ...core.device import resolve_device
from ...core.training import games_to_tensors, train_model, train_steps
from ...params.schema import parse_section

log = logging.getLogger(__name__)


def train_generation(
    model: nn.Module, params: dict, *games: pd.DataFrame, generation: int, num_generations: int
) -> tuple[nn.Module, dict]:
    """Train generation ``generation`` of ``num_generations`` on the replay window ``games``.

    The window (the last ``buffer_gens`` generations, ``games[-1]`` being this
    generation's) is wired into the DAG; in the first ``buffer_gens - 1`` generations it
    begins with generation 0's games (a start run's window, numbered 0, -1, ...: the rows
    of the generations it still reaches are kept); the step count follows the newest
    generation's size (``samples_per_position``); the cosine learning-rate
    schedule spans the whole run.
    """
    cfg = parse_section("train", params)
    first = generation - len(games) + 1  # the window is gen_{first} .. gen_{generation}
    if first == 0:  # generation 0's games: a start run's window (generations <= 0), or none
        oldest = generation - cfg.buffer_gens + 1
        games = (games[0][games[0]["generation"] >= oldest], *games[1:])
    boards, pi, z = games_to_tensors(
        games,
        mirror=cfg.mirror,
        root_value_weight=cfg.root_value_weight,
        names=[f"{generation_name(first + i)}.games" for i in range(len(games))],
        merge_duplicates=cfg.merge_duplicates,
    )
    if boards.shape[0] == 0:
        raise ValueError(
            f"generation {generation}: the replay window has no positions (no self-play game "
            "finished); set selfplay.finish_games=true, or raise selfplay.moves_per_gen"
        )
    new_rows = len(games[-1]) * (2 if cfg.mirror else 1)  # the newest generation's samples
    progress = ((generation - 1) / num_generations, generation / num_generations)
    window_rows = sum(len(g) for g in games) * (2 if cfg.mirror else 1)
    log.info(
        "Generation %d training on %d samples from %d generation(s)%s",
        generation,
        boards.shape[0],
        len(games),
        f" ({window_rows} before merging duplicates)" if cfg.merge_duplicates else "",
    )
    trained, metrics = train_model(
        model,
        boards,
        pi,
        z,
        cfg,
        num_steps=train_steps(cfg, new_rows),
        progress=progress,
        device=resolve_device(cfg.node.device),
        seed=mix_seed(cfg.seed, generation),
        progress_bar=True,
        num_threads=cfg.node.num_threads,
    )
    trained.meta = {"generation": generation}
    start = games[0]["generation"].nunique() if first == 0 else 1  # generation 0's: 0 or more
    metrics["window_generations"] = float(len(games) - 1 + start)
    metrics["distinct_fraction"] = boards.shape[0] / window_rows if cfg.merge_duplicates else 1.0
    log.info("Generation %d training: %s", generation, {k: round(v, 4) for k, v in metrics.items()})
    return trained.cpu(), metrics
