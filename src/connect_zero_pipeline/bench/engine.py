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
    torch.set_num_threads(max(1, torch.get_num_threads()))
    num_envs = 1024 if args.quick else 4096
    batched = best_rate(_batched_steps_fn(num_envs, 50), repeats=3 if not args.quick else 1)
    naive = best_rate(_naive_steps_fn(2000), repeats=3 if not args.quick else 1)
    # ratio = batched engine / naive per-game Python engine, same process.
    yield figure("engine", "env_steps_per_s", batched, baseline=naive, batch=num_envs, device="cpu")
    yield figure("engine", "naive_env_steps_per_s", naive)
