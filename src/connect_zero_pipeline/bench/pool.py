"""``bench pool``: what keeping the local self-play workers between generations saves.

Three consecutive small generations (64 games, 8 simulations, 16 plies, the
``tiny`` network; ``--quick``: two generations of 8 games, 2 simulations, 4
plies) in 2 worker processes, twice: with the processes kept from one call to
the next (what a ``kedro run`` does) and with them started anew for every call
(what every generation paid before). The first call starts the processes in both
series alike: it is timed once, in the kept series, and stands for both. Figures: the
seconds of each call of both series, and the mean saving per generation after the
first (``ratio`` = kept / fresh).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

import torch

from ..core.config.selfplay import SEARCH, SelfPlayConfig
from ..core.models import build_model
from ..executors import local
from . import figure


def run(args) -> Iterator[dict]:
    torch.manual_seed(0)
    model = build_model("tiny")
    if args.quick:  # a smoke run: the process start-ups it measures, little play
        cfg, generations = (
            SelfPlayConfig(num_games=8, mcts=replace(SEARCH, sims=2), moves_per_gen=4),
            2,
        )
    else:
        cfg, generations = (
            SelfPlayConfig(num_games=64, mcts=replace(SEARCH, sims=8), moves_per_gen=16),
            3,
        )
    series: dict[str, list[float]] = {}
    for label, fresh in (("kept", False), ("fresh", True)):
        local.close_pools()
        times = series["kept"][:1] if fresh else []  # the first call: a start in either
        for generation in range(len(times) + 1, generations + 1):
            if fresh:
                local.close_pools()
            start = time.perf_counter()
            local.local_self_play(cfg, model, workers=2, generation=generation)
            times.append(time.perf_counter() - start)
        series[label] = times
        for generation, seconds in enumerate(times, start=1):
            yield figure("pool", f"seconds_{label}", seconds, unit="s", generation=generation)
    local.close_pools()
    kept, fresh = (sum(series[k][1:]) / (generations - 1) for k in ("kept", "fresh"))
    yield figure("pool", "seconds_per_generation_kept", kept, fresh, unit="s")
    yield figure("pool", "saved_per_generation", fresh - kept, unit="s")
