"""REINFORCE with an entropy bonus: the policy-gradient baseline of the Connect-Zero series.

One training *batch* is ``games_per_batch`` complete games between the learner
and an opponent, played together on the batched engine; then one gradient step.

- **Self-play.** The learner samples from its masked softmax (temperature 1).
  Colours alternate: the learner moves first in even-numbered games. Only the
  learner's own moves are trained on, also against a frozen copy of itself
  (the Connect-Zero setup: the copy's moves come from older weights, so they
  are off-policy for the learner).
- **Returns.** The outcome for the mover (+1 win, 0 draw, -1 loss), discounted
  by the *mover's own* remaining moves: a move followed by ``m`` more moves of
  the same player gets ``gamma ** m * outcome``, so both players' last moves
  get the full outcome. ``gamma = 1`` (default) is plain Monte Carlo.
- **Loss** over the ``N`` learner moves of a batch::

      loss = -mean(advantage * log pi(move)) - beta * mean(H(pi)) [+ value_coef * MSE(value, return)]

  ``pi`` is the softmax over the legal columns only, ``H`` its entropy.
  ``advantage = return - baseline`` with ``baseline`` one of ``none`` (0),
  ``mean`` (a running mean of the returns) or ``value`` (the model's value
  head, detached, itself trained towards the returns with the MSE term).
- **Opponent.** ``self``: a frozen copy of the learner, refreshed when the
  learner wins at least ``swap_threshold`` of its last ``swap_window``
  training games against it (:class:`SwapRule`). Or ``random_punisher`` /
  ``random`` (fixed baseline players).
- **Entropy bonus** ``beta`` anneals linearly to ``beta_final`` over the run.

Training runs in *chunks* of ``batches_per_chunk`` batches; a chunk returns the
new model and a trainer state (optimiser, frozen opponent, swap window, running
mean, step) from which the next chunk resumes exactly.

Modules: :mod:`.loss` (returns, loss, entropy schedule), :mod:`.rollout`
(batched games between the learner and its opponent) and :mod:`.trainer`
(configs, the swap rule, chunked training and the evaluation).

Shapes: G games, N recorded learner moves, A = 7 columns.
"""

from __future__ import annotations

from ..config.reinforce import BASELINES, OPPONENTS, ReinforceConfig, ReinforceEvalConfig
from .loss import ReinforceLoss, beta_at, discounted_returns, masked_entropy, reinforce_loss
from .rollout import Rollout, distinct_games, play_rollout, selfplay_diversity
from .trainer import STATE_FORMAT, SwapRule, evaluate_policy, init_policy, train_chunk

__all__ = [
    "BASELINES",
    "OPPONENTS",
    "STATE_FORMAT",
    "ReinforceConfig",
    "ReinforceEvalConfig",
    "ReinforceLoss",
    "Rollout",
    "SwapRule",
    "beta_at",
    "discounted_returns",
    "distinct_games",
    "evaluate_policy",
    "init_policy",
    "masked_entropy",
    "play_rollout",
    "reinforce_loss",
    "selfplay_diversity",
    "train_chunk",
]
