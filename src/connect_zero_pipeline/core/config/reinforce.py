"""The REINFORCE baseline's settings: training (:class:`ReinforceConfig`) and its per-chunk
evaluation (:class:`ReinforceEvalConfig`)."""

from __future__ import annotations

from dataclasses import dataclass

from . import check, check_loss_weight, check_lr

OPPONENTS = ("self", "random_punisher", "random")

BASELINES = ("none", "mean", "value")


@dataclass(frozen=True)
class ReinforceConfig:
    """Hyper-parameters of REINFORCE training. Validated on construction."""

    games_per_batch: int = 512
    """Games per gradient step (the batch), played together; colours alternate."""
    batches_per_chunk: int = 200
    """Gradient steps per chunk (one checkpoint and one evaluation per chunk)."""
    lr: float = 3e-3
    """Adam learning rate (constant)."""
    beta: float = 0.1
    """Entropy bonus weight at the start of the run (0 disables the bonus and the policy collapses)."""
    beta_final: float | None = None
    """Entropy bonus at the end of the run, reached linearly; ``None`` keeps ``beta``."""
    gamma: float = 1.0
    """Discount per remaining move of the mover (see the module doc); 1 = no discount."""
    baseline: str = "mean"
    """``none`` (plain REINFORCE), ``mean`` (running mean of returns) or ``value`` (value head)."""
    baseline_decay: float = 0.99
    """Running-mean baseline: ``b <- decay * b + (1 - decay) * mean(batch returns)``."""
    value_coef: float = 0.5
    """Weight of the value-head MSE when ``baseline`` is ``value``."""
    opponent: str = "self"
    """``self`` (frozen copy, refreshed by the swap rule), ``random_punisher`` or ``random``."""
    swap_threshold: float = 0.52
    """Refresh the frozen copy when the learner's win rate against it reaches this."""
    swap_window: int = 2048
    """Training games against the current copy the win rate is measured over (sliding)."""
    grad_clip: float = 1.0
    """Max global grad norm (0 disables clipping)."""
    max_loss: float = 50.0
    """Stop with :class:`TrainingDivergedError` when a loss exceeds this or is not finite."""
    seed: int = 0
    """Seeds the games of every batch (mixed with the global step number)."""

    def __post_init__(self):
        check(self.games_per_batch >= 2, "games_per_batch", self.games_per_batch, ">= 2")
        check(self.batches_per_chunk >= 1, "batches_per_chunk", self.batches_per_chunk, ">= 1")
        check_lr(self.lr)
        check_loss_weight("beta", self.beta)
        if self.beta_final is not None:
            check_loss_weight("beta_final", self.beta_final)
        check(0 < self.gamma <= 1, "gamma", self.gamma, "in (0, 1]")
        check(self.baseline in BASELINES, "baseline", self.baseline, f"one of {BASELINES}")
        check(0 <= self.baseline_decay < 1, "baseline_decay", self.baseline_decay, "in [0, 1)")
        check_loss_weight("value_coef", self.value_coef)
        check(self.opponent in OPPONENTS, "opponent", self.opponent, f"one of {OPPONENTS}")
        check(0 < self.swap_threshold <= 1, "swap_threshold", self.swap_threshold, "in (0, 1]")
        check(self.swap_window >= 1, "swap_window", self.swap_window, ">= 1")
        check(self.grad_clip >= 0, "grad_clip", self.grad_clip, ">= 0")
        check(self.max_loss > 0, "max_loss", self.max_loss, "> 0")


@dataclass(frozen=True)
class ReinforceEvalConfig:
    """Per-chunk evaluation. Validated on construction."""

    num_games: int = 400
    """Games of the greedy network against RandomPunisher (colours alternate)."""
    diversity_games: int = 200
    """Sampled self-play games for ``distinct_games`` and ``policy_entropy``."""
    seed: int = 0
    """Seeds the matches. The same for every chunk: the curve compares models on equal draws."""

    def __post_init__(self):
        check(self.num_games >= 200, "num_games", self.num_games, ">= 200 (both colours, seeded)")
        check(self.diversity_games >= 1, "diversity_games", self.diversity_games, ">= 1")
