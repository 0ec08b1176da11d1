"""REINFORCE self-play: batches of complete games between the learner and an opponent.

Shapes: G games, N recorded learner moves, A = 7 columns.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch
from torch import nn

from ..board import NUM_CELLS
from ..match import MatchResult, play_match
from ..players import Player, PolicyPlayer
from .loss import discounted_returns, masked_entropy

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------
# Self-play
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Rollout:
    """A batch of games; per-move tensors hold the learner's moves only, ply-major."""

    boards: torch.Tensor  # [N, 6, 7] int8, from the learner's view
    legal: torch.Tensor  # [N, 7] bool
    moves: torch.Tensor  # [N] int64
    returns: torch.Tensor  # [N] float32, discounted (see discounted_returns)
    outcome: torch.Tensor  # [N] float32, the learner's final result in the move's game
    game: torch.Tensor  # [N] int64
    ply: torch.Tensor  # [N] int64, ply of the move in its game (0 = first move)
    result: torch.Tensor  # [G] int8, the learner's result per game (+1 / 0 / -1)
    length: torch.Tensor  # [G] int16, plies per game


def play_rollout(
    learner: nn.Module,
    opponent: Player,
    num_games: int,
    seed: int,
    gamma: float = 1.0,
    device: torch.device | str = "cpu",
) -> Rollout:
    """Play ``num_games`` games of the sampling ``learner`` against ``opponent``.

    The learner moves first in even-numbered games. Returns the learner's moves
    with their discounted returns (:class:`Rollout`).
    """
    match = play_match(
        PolicyPlayer(learner, temperature=1.0), opponent, num_games, seed, True, device
    )
    mine = match.mover_is_a  # (N_all,)
    boards = match.states[mine]  # (N, 6, 7)
    game = match.game[mine]
    outcome = match.returns[mine]
    returns = discounted_returns(outcome, match.ply[mine], match.length[game], gamma)
    return Rollout(
        boards=boards,
        legal=boards[:, 0, :] == 0,  # top row (row 0) empty <=> the column is playable
        moves=match.moves[mine],
        returns=returns,
        outcome=outcome,
        game=game,
        ply=match.ply[mine],
        result=match.result,
        length=match.length,
    )


def distinct_games(match: MatchResult) -> int:
    """Number of distinct move sequences among the games of a recorded match."""
    if match.moves is None:
        raise ValueError("distinct_games needs a match played with record=True")
    seqs = torch.full((match.num_games, NUM_CELLS), -1, dtype=torch.int64)  # (G, 42)
    seqs[match.game.cpu(), match.ply.cpu()] = match.moves.cpu()
    return int(torch.unique(seqs, dim=0).shape[0])


@torch.no_grad()
def selfplay_diversity(
    model: nn.Module, num_games: int = 200, seed: int = 0, device: torch.device | str = "cpu"
) -> dict[str, float]:
    """How varied the model's sampled self-play is: the policy-collapse detector.

    Plays ``num_games`` games of the model against itself, both sides sampling
    from the masked softmax. Returns ``distinct_games`` (distinct move
    sequences), ``distinct_fraction`` and ``policy_entropy`` (mean masked-softmax
    entropy, nats, over every position played).
    """
    model = model.to(device).eval()
    player = PolicyPlayer(model, temperature=1.0)
    match = play_match(player, player, num_games, seed, record=True, device=device)
    logits, _ = model(match.states)
    entropy = masked_entropy(logits, match.states[:, 0, :] == 0)
    distinct = distinct_games(match)
    return {
        "distinct_games": float(distinct),
        "distinct_fraction": distinct / num_games,
        "policy_entropy": float(entropy.mean()),
        "selfplay_mean_length": float(match.length.double().mean()),
    }
