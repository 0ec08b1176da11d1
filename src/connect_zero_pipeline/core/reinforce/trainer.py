"""REINFORCE training in resumable chunks, the opponent's swap rule, and the evaluation.

Shapes: G games, N recorded learner moves, A = 7 columns.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from collections.abc import Mapping
from typing import Any

import pandas as pd
import torch
from torch import nn

from ..config import check, mix_seed
from ..config.reinforce import ReinforceConfig, ReinforceEvalConfig
from ..evaluation import solver_set_metrics, win_rates
from ..inference import torch_evaluate_fn
from ..models import build_model
from ..players import Player, PolicyPlayer, RandomPunisher, make_player
from ..progress import progress_bar as _bar
from ..training import TrainingDivergedError
from .loss import beta_at, reinforce_loss
from .rollout import play_rollout, selfplay_diversity

log = logging.getLogger(__name__)


STATE_FORMAT = "connect-zero-reinforce-state/1"


# ---------------------------------------------------------------------------
# The frozen opponent's swap rule
# ---------------------------------------------------------------------------


class SwapRule:
    """When to refresh the frozen copy: the learner's win rate over its recent games against it.

    Batches of training games are added with :meth:`update`. The window holds
    the most recent batches covering at least ``window`` games (whole batches:
    the oldest is dropped while the rest still cover ``window``). When the
    window covers ``window`` games and ``wins / games >= threshold``,
    :meth:`update` returns ``True`` and the window restarts empty (games
    against the old copy say nothing about the new one). Draws count as
    not-wins.
    """

    def __init__(self, threshold: float, window: int):
        check(0 < threshold <= 1, "swap_threshold", threshold, "in (0, 1]")
        check(window >= 1, "swap_window", window, ">= 1")
        self.threshold = threshold
        self.window = window
        self.batches: list[tuple[int, int]] = []  # (wins, games) per batch, oldest first

    @property
    def games(self) -> int:
        return sum(g for _, g in self.batches)

    @property
    def win_rate(self) -> float:
        """Win rate over the window (0 when empty)."""
        games = self.games
        return sum(w for w, _ in self.batches) / games if games else 0.0

    def update(self, wins: int, games: int) -> bool:
        """Add a batch's ``wins`` out of ``games``; ``True`` when the copy should be refreshed."""
        if not 0 <= wins <= games:
            raise ValueError(f"wins must be in [0, games={games}], got {wins}")
        self.batches.append((int(wins), int(games)))
        while len(self.batches) > 1 and self.games - self.batches[0][1] >= self.window:
            self.batches.pop(0)
        if self.games >= self.window and self.win_rate >= self.threshold:
            self.batches.clear()
            return True
        return False

    def state_dict(self) -> dict[str, Any]:
        return {"batches": [list(b) for b in self.batches]}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.batches = [(int(w), int(g)) for w, g in state.get("batches", [])]


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------


def init_policy(model_config: dict[str, Any] | str, seed: int = 0) -> nn.Module:
    """A freshly initialised network from ``model_config`` (see ``build_model``), seeded.

    The global RNG is forked, so the caller's random state is left untouched.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        model = build_model(model_config)
    model.meta = {"chunk": 0}
    return model.eval()


def train_chunk(
    model: nn.Module,
    config: ReinforceConfig,
    state: Mapping[str, Any] | None = None,
    chunk: int = 1,
    num_chunks: int = 1,
    device: torch.device | str = "cpu",
    progress_bar: bool = False,
) -> tuple[nn.Module, dict[str, Any], dict[str, float]]:
    """Train a copy of ``model`` for one chunk of ``config.batches_per_chunk`` batches.

    Args:
        model: the policy to start from (not modified).
        config: hyper-parameters.
        state: the trainer state returned by the previous chunk (``None`` or
            ``{}`` for a fresh start): Adam moments, frozen opponent, swap window,
            running-mean baseline.
        chunk: 1-based chunk number; with ``num_chunks`` it places this chunk in
            the run (beta schedule, per-batch seeds ``mix_seed(seed, step)``).
        device: where games and training run.
        progress_bar: show a progress bar (:mod:`connect_zero_pipeline.core.progress`).

    Returns:
        ``(model, state, metrics)``: the trained copy (eval mode, on CPU), the
        trainer state for the next chunk, and the chunk's metrics: ``loss``,
        ``policy_loss``, ``policy_entropy``, ``value_loss`` (batch means),
        ``win_rate``/``draw_rate``/``loss_rate`` against the training opponent,
        ``mean_return``, ``mean_game_length``, ``beta_start``, ``beta_end``,
        ``opponent_swaps`` (in this chunk), ``opponent_version`` (swaps so far),
        ``swap_window_win_rate``, ``games``, ``samples``, ``seconds``, ``games_per_s``.

    Raises:
        TrainingDivergedError: a batch loss was not finite or exceeded ``max_loss``.
        ValueError: ``state`` is not a REINFORCE trainer state for this model.
    """
    check(1 <= chunk <= num_chunks, "chunk", chunk, f"in [1, num_chunks={num_chunks}]")
    device = torch.device(device)
    state = dict(state or {})
    if state and state.get("format") != STATE_FORMAT:
        raise ValueError(f"trainer state is not a {STATE_FORMAT} dict: {state.get('format')!r}")
    net = copy.deepcopy(model).to(device)
    opt = torch.optim.Adam(net.parameters(), lr=config.lr)
    if state.get("optimizer"):
        _load_optimizer(opt, state["optimizer"])
        for group in opt.param_groups:
            group["lr"] = config.lr
    swap = SwapRule(config.swap_threshold, config.swap_window)
    swap.load_state_dict(state.get("swap", {}))
    baseline_mean = float(state.get("baseline", 0.0))
    version = int(state.get("opponent_version", 0))

    frozen: nn.Module | None = None
    if config.opponent == "self":
        frozen = copy.deepcopy(net)
        if state.get("opponent") is not None:
            try:
                frozen.load_state_dict(state["opponent"])
            except RuntimeError as exc:
                raise ValueError(
                    f"trainer state's opponent does not match the model: {exc}"
                ) from exc
        frozen.eval().requires_grad_(False)
        opponent: Player = PolicyPlayer(frozen, temperature=1.0)
    else:
        opponent = make_player(config.opponent)

    total_steps = num_chunks * config.batches_per_chunk
    first_step = (chunk - 1) * config.batches_per_chunk
    if "step" in state and int(state["step"]) != first_step:
        log.warning(
            "trainer state is at step %s but chunk %d starts at step %d; using the chunk's step",
            state["step"],
            chunk,
            first_step,
        )
    keys = ("loss", "policy_loss", "policy_entropy", "value_loss", "mean_return")
    sums = dict.fromkeys(keys, 0.0)
    wins = draws = games = samples = plies = swaps = 0
    betas = []
    steps = range(config.batches_per_chunk)
    if progress_bar:
        steps = _bar(steps, desc=f"reinforce chunk {chunk}", unit="batch", leave=False)
    start = time.perf_counter()
    for i in steps:
        step = first_step + i
        beta = beta_at(step / total_steps, config.beta, config.beta_final)
        betas.append(beta)
        net.eval()  # act with inference-mode layers (BatchNorm running stats)
        b = play_rollout(
            net,
            opponent,
            config.games_per_batch,
            seed=mix_seed(config.seed, step),
            gamma=config.gamma,
            device=device,
        )
        net.train()
        b_logits, b_value = net(b.boards)  # (N, 7), (N,)
        if config.baseline == "value":
            b_adv = b.returns - b_value.detach()
        elif config.baseline == "mean":
            b_adv = b.returns - baseline_mean
        else:
            b_adv = b.returns
        out = reinforce_loss(
            b_logits,
            b.legal,
            b.moves,
            b_adv,
            beta,
            value=b_value if config.baseline == "value" else None,
            returns=b.returns,
            value_coef=config.value_coef if config.baseline == "value" else 0.0,
        )
        loss, policy_loss, entropy, value_loss = (
            torch.stack([out.loss, out.policy_loss, out.entropy, out.value_loss]).detach().tolist()
        )
        if not math.isfinite(loss) or abs(loss) > config.max_loss:
            raise TrainingDivergedError(
                f"REINFORCE diverged at step {step + 1} (chunk {chunk}): loss {loss} "
                f"(limit max_loss={config.max_loss}); the previous model is kept"
            )
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        if config.grad_clip > 0:
            nn.utils.clip_grad_norm_(net.parameters(), config.grad_clip)
        opt.step()

        mean_return = float(b.returns.mean())
        decay = config.baseline_decay
        baseline_mean = decay * baseline_mean + (1 - decay) * mean_return  # tracks the returns
        for key, value in (
            ("loss", loss),
            ("policy_loss", policy_loss),
            ("policy_entropy", entropy),
            ("value_loss", value_loss),
            ("mean_return", mean_return),
        ):
            sums[key] += value
        b_wins = int((b.result > 0).sum())
        wins += b_wins
        draws += int((b.result == 0).sum())
        games += config.games_per_batch
        samples += b.moves.shape[0]
        plies += int(b.length.sum())
        if frozen is not None and swap.update(b_wins, config.games_per_batch):
            frozen.load_state_dict(net.state_dict())
            frozen.eval()
            swaps += 1
            version += 1
            log.debug("chunk %d step %d: learner beat its frozen copy, refreshed", chunk, step + 1)
        if progress_bar:
            steps.set_postfix(
                entropy=f"{entropy:.3f}", win=f"{b_wins / config.games_per_batch:.2f}"
            )
    seconds = time.perf_counter() - start
    n = config.batches_per_chunk
    metrics = {key: sums[key] / n for key in keys}
    metrics.update(
        win_rate=wins / games,
        draw_rate=draws / games,
        loss_rate=(games - wins - draws) / games,
        mean_game_length=plies / games,
        beta_start=betas[0],
        beta_end=betas[-1],
        opponent_swaps=float(swaps),
        opponent_version=float(version),
        swap_window_win_rate=swap.win_rate,
        games=float(games),
        samples=float(samples),
        seconds=seconds,
        games_per_s=games / seconds if seconds > 0 else 0.0,
    )
    new_state = {
        "format": STATE_FORMAT,
        "step": first_step + n,
        "optimizer": opt.state_dict(),
        "opponent": None if frozen is None else _cpu_state(frozen),
        "opponent_version": version,
        "swap": swap.state_dict(),
        "baseline": baseline_mean,
    }
    net = net.eval().cpu()
    net.meta = {"chunk": chunk, "step": first_step + n, "algorithm": "reinforce"}
    return net, new_state, metrics


def _load_optimizer(opt: torch.optim.Optimizer, saved: Mapping[str, Any]) -> None:
    """Load Adam's state, checking every moment's shape (torch only checks the counts)."""
    params = [p for group in opt.param_groups for p in group["params"]]
    try:
        for index, moments in saved["state"].items():
            for name, value in moments.items():
                if name != "step" and tuple(value.shape) != tuple(params[index].shape):
                    raise ValueError(
                        f"{name} of parameter {index} has shape {tuple(value.shape)}, "
                        f"the model's is {tuple(params[index].shape)}"
                    )
        opt.load_state_dict(saved)
    except (ValueError, KeyError, IndexError) as exc:
        raise ValueError(f"trainer state's optimizer does not match the model: {exc}") from exc


def _cpu_state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}


# ---------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------


def evaluate_policy(
    model: nn.Module,
    positions: pd.DataFrame | None,
    config: ReinforceEvalConfig,
    device: torch.device | str = "cpu",
) -> dict[str, float]:
    """The network alone, under the metric names the AlphaZero evaluation uses.

    Returns:
        ``solver.*`` (see :func:`~.evaluation.solver_set_metrics`; left out when
        ``positions`` is None), ``punisher.policy.*`` (greedy network vs
        RandomPunisher: ``win_rate``, ``draw_rate``, ``loss_rate``, ...) and the
        diversity figures of :func:`selfplay_diversity` (``distinct_games``,
        ``distinct_fraction``, ``policy_entropy``, ``selfplay_mean_length``).
    """
    model = model.to(device).eval()
    metrics: dict[str, float] = {}
    if positions is not None:
        for k, v in solver_set_metrics(torch_evaluate_fn(model, device), positions).items():
            metrics[f"solver.{k}"] = v
    greedy = PolicyPlayer(model, temperature=0.0)
    for k, v in win_rates(greedy, RandomPunisher(), config.num_games, config.seed, device).items():
        metrics[f"punisher.policy.{k}"] = v
    metrics.update(selfplay_diversity(model, config.diversity_games, config.seed + 1, device))
    return metrics
