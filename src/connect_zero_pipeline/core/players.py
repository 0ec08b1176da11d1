"""Players: batched move choosers over a :class:`~.bitboard.State`.

A player is any object with ``act(state, generator) -> actions [B] int64``
(0-based columns, always legal). Models follow the protocol of design §3:
``model(boards int8 [B, 6, 7]) -> (logits [B, 7] float32, value [B] float32)``;
illegal columns are masked here, never trusted to the model.

Shapes: B = batch of games, A = 7 columns.
"""

from __future__ import annotations

from typing import Protocol

import torch

from .bitboard import (
    State,
    legal_mask,
    random_legal_actions,
    threat_moves,
    to_boards,
    winning_moves,
)


class Player(Protocol):
    """Chooses one legal column per game."""

    def act(self, state: State, generator: torch.Generator | None = None) -> torch.Tensor:
        """``[B] int64`` 0-based columns, one legal move per (unfinished) game."""
        ...


def masked_logits(logits: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """``[B, 7]`` logits with illegal columns set to ``-inf``."""
    return logits.float().masked_fill(~legal, float("-inf"))


def sample_move(
    logits: torch.Tensor,
    legal: torch.Tensor,
    generator: torch.Generator | None = None,
    temperature: float = 1.0,
) -> torch.Tensor:
    """Sample a legal column from ``softmax(logits / temperature)``.

    Args:
        logits: ``[B, 7]`` float scores (any finite values).
        legal: ``[B, 7] bool``; every row needs at least one legal column.
        generator: a ``torch.Generator`` on the logits' device, for repeatable draws.
        temperature: ``0`` plays the argmax (ties go to the lowest column).

    Returns:
        ``[B] int64`` columns, never an illegal one.
    """
    if not bool(legal.any(1).all()):
        raise ValueError("sample_move: a game has no legal column (is it finished?)")
    z = masked_logits(logits, legal)
    if temperature == 0:
        return z.argmax(1)
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    # Gumbel-max: argmax(z / T + g) with g ~ Gumbel(0, 1) samples softmax(z / T).
    u = torch.rand(z.shape, generator=generator, device=z.device).clamp_(1e-20, 1.0)
    return (z / temperature - torch.log(-torch.log(u))).argmax(1)


class RandomPlayer:
    """Uniformly random legal moves."""

    def act(self, state: State, generator: torch.Generator | None = None) -> torch.Tensor:
        return random_legal_actions(state, generator)


class RandomPunisher:
    """Wins when it can, else blocks an immediate threat, else plays randomly.

    Batched: the winning and blocking columns of every game come from one
    bitboard computation each; among several candidates it picks uniformly.
    """

    def act(self, state: State, generator: torch.Generator | None = None) -> torch.Tensor:
        legal = legal_mask(state)  # (B, 7)
        wins = winning_moves(state)  # (B, 7)
        blocks = threat_moves(state)  # (B, 7)
        choice = torch.where(
            wins.any(1, keepdim=True), wins, torch.where(blocks.any(1, keepdim=True), blocks, legal)
        )
        return sample_move(torch.zeros(legal.shape, device=state.device), choice, generator)


class PolicyPlayer:
    """Plays from a model's policy head: sampled (``temperature > 0``) or greedy (``0``)."""

    def __init__(self, model: torch.nn.Module, temperature: float = 0.0):
        self.model = model
        self.temperature = temperature

    @torch.no_grad()
    def act(self, state: State, generator: torch.Generator | None = None) -> torch.Tensor:
        logits, _ = self.model(to_boards(state))
        return sample_move(logits, legal_mask(state), generator, self.temperature)


class RandomOpening:
    """Uniformly random moves for the first ``plies`` plies of a game, then ``player``'s.

    Wrapping both sides of a match between deterministic players (greedy
    policies, noise-free MCTS) gives every game its own opening, so a match
    measures more than the same two games repeated.
    """

    def __init__(self, player: Player, plies: int):
        if plies < 0:
            raise ValueError(f"plies must be >= 0, got {plies}")
        self.player = player
        self.plies = plies

    def act(self, state: State, generator: torch.Generator | None = None) -> torch.Tensor:
        early = state.ply < self.plies  # (B,)
        if not bool(early.any()):  # past every game's opening: no random draw
            return self.player.act(state, generator)
        actions = random_legal_actions(state, generator)
        late = (~early).nonzero().squeeze(1)
        if late.numel():
            actions[late] = self.player.act(state.take(late), generator)
        return actions


PLAYERS = {"random": RandomPlayer, "random_punisher": RandomPunisher}


def make_player(name: str) -> Player:
    """A baseline player by name: ``random`` or ``random_punisher``."""
    if name not in PLAYERS:
        raise ValueError(f"unknown player {name!r}; choose one of: {', '.join(PLAYERS)}")
    return PLAYERS[name]()
