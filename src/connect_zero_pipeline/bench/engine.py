"""``bench engine``: random legal play on the batched bitboard engine vs a naive Python engine."""

from __future__ import annotations

import random
from collections.abc import Iterator

import torch

from ..core.bitboard import initial_state, play, random_legal_actions, reset_done
from ..core.reference import NaiveGame
from . import best_rate, figure


def _batched_steps_fn(num_envs: int, steps: int, device: str = "cpu"):
    gen = torch.Generator(device=device).manual_seed(0)
    state = initial_state(num_envs, device)

    def run() -> int:
        nonlocal state
        for _ in range(steps):
            actions = random_legal_actions(state, gen)
            step = play(state, actions, validate=False)
            state = reset_done(step.state, step.done)
        return num_envs * steps

    return run


def _naive_steps_fn(steps: int):
    rng = random.Random(0)
    game = NaiveGame()

    def run() -> int:
        nonlocal game
        for _ in range(steps):
            cols = [c for c, ok in enumerate(game.legal()) if ok]
            game.play(rng.choice(cols))
            if game.over:
                game = NaiveGame()
        return steps

    return run


def run(args) -> Iterator[dict]:
    """``env_steps_per_s`` with 1 torch thread (the self-play recipe's: at B=4096 the
    engine's small element-wise ops are slower on 2 threads), then with every core."""
    num_envs = 1024 if args.quick else 4096
    repeats = 1 if args.quick else 5
    cores = torch.get_num_threads()
    naive = best_rate(_naive_steps_fn(2000), repeats=repeats)
    for threads in sorted({1, cores}):
        torch.set_num_threads(threads)
        batched = best_rate(_batched_steps_fn(num_envs, 50), repeats=repeats)
        name = "env_steps_per_s" if threads == 1 else f"env_steps_per_s_{threads}_threads"
        # ratio = batched engine / naive per-game Python engine, same process.
        yield figure("engine", name, batched, baseline=naive, batch=num_envs, threads=threads)
    torch.set_num_threads(cores)
    yield figure("engine", "naive_env_steps_per_s", naive)
