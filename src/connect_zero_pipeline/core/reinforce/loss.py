"""REINFORCE returns, loss and entropy schedule (pure tensor functions).

Shapes: N recorded learner moves, A = 7 columns.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..board import WIDTH
from ..players import masked_logits

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------
# Returns, loss, schedule
# ---------------------------------------------------------------------------


def discounted_returns(
    outcome: torch.Tensor, ply: torch.Tensor, length: torch.Tensor, gamma: float
) -> torch.Tensor:
    """Discounted return of each recorded move.

    Args:
        outcome: ``[N] float32`` final result for the mover (+1 / 0 / -1).
        ply: ``[N] int64`` ply of the move (0 = the game's first move).
        length: ``[N]`` length in plies of the move's game.
        gamma: discount per remaining move of the same player.

    Returns:
        ``[N] float32``: ``gamma ** m * outcome`` with ``m = (length - 1 - ply) // 2``,
        the number of moves the mover still makes after this one.
    """
    remaining = torch.div(length.long() - 1 - ply.long(), 2, rounding_mode="floor")  # (N,)
    if bool((remaining < 0).any()):
        raise ValueError("a move's ply is not before the end of its game")
    return outcome.float() * torch.pow(torch.tensor(float(gamma)), remaining.float())


def masked_entropy(logits: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """``[N]`` entropy (nats) of the softmax over the legal columns of ``logits [N, 7]``."""
    logp = F.log_softmax(masked_logits(logits, legal), dim=1)  # (N, 7), -inf where illegal
    # Zero the illegal entries before the product: 0 * -inf would be NaN (also in backward).
    logp = logp.masked_fill(~legal, 0.0)
    return -(logp.exp() * logp).sum(1)


@dataclass(frozen=True)
class ReinforceLoss:
    """Scalars of one batch: ``loss = policy_loss - beta * entropy + value_coef * value_loss``."""

    loss: torch.Tensor
    policy_loss: torch.Tensor  # -mean(advantage * log pi(move))
    entropy: torch.Tensor  # mean masked-softmax entropy over the batch
    value_loss: torch.Tensor  # MSE(value, returns), 0 without a value baseline


def reinforce_loss(
    logits: torch.Tensor,
    legal: torch.Tensor,
    moves: torch.Tensor,
    advantages: torch.Tensor,
    beta: float,
    value: torch.Tensor | None = None,
    returns: torch.Tensor | None = None,
    value_coef: float = 0.0,
) -> ReinforceLoss:
    """The REINFORCE loss with an entropy bonus (and an optional value-head MSE).

    Args:
        logits: ``[N, 7]`` raw policy logits (illegal columns are masked here).
        legal: ``[N, 7] bool``.
        moves: ``[N] int64`` columns played (legal).
        advantages: ``[N] float32``, treated as constants (no gradient flows into them).
        beta: entropy bonus weight; the bonus *lowers* the loss of spread-out policies.
        value, returns: ``[N]`` value predictions and their targets, for the MSE term.
        value_coef: weight of the MSE term.

    Returns:
        :class:`ReinforceLoss`.
    """
    n = logits.shape[0]
    assert logits.shape == (n, WIDTH) and legal.shape == (n, WIDTH), (logits.shape, legal.shape)
    assert moves.shape == (n,) and advantages.shape == (n,), (moves.shape, advantages.shape)
    logp = F.log_softmax(masked_logits(logits, legal), dim=1)  # (N, 7)
    logp_move = logp.gather(1, moves.long()[:, None]).squeeze(1)  # (N,)
    policy_loss = -(advantages.detach() * logp_move).mean()
    entropy = masked_entropy(logits, legal).mean()
    if value is not None and returns is not None and value_coef > 0:
        value_loss = F.mse_loss(value, returns)
    else:
        value_loss = torch.zeros((), device=logits.device)
    loss = policy_loss - beta * entropy + value_coef * value_loss
    return ReinforceLoss(loss, policy_loss, entropy, value_loss)


def beta_at(progress: float, beta: float, beta_final: float | None) -> float:
    """Entropy weight at run ``progress`` in [0, 1]: linear from ``beta`` to ``beta_final``."""
    if beta_final is None:
        return beta
    progress = min(max(progress, 0.0), 1.0)
    return beta + (beta_final - beta) * progress
