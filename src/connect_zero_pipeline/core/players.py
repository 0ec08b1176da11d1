"""Players: batched move choosers over a :class:`~.bitboard.State`.

A player is any object with ``act(state, generator) -> actions [B] int64``
(0-based columns, always legal). Models follow the protocol of docs/architecture.md §3:
``model(boards int8 [B, 6, 7]) -> (logits [B, 7] float32, value [B] float32)``;
illegal columns are masked here, never trusted to the model.

Shapes: B = batch of games, A = 7 columns.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import torch

from .bitboard import (
    State,
    legal_mask,
    random_legal_actions,
    threat_moves,
    to_boards,
    winning_moves,
)
from .board import WIDTH
from .config.players import NAMED_PLAYERS, PLAYER_NAMES, SOLVER_PREFIX, is_player_name


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


PLAYERS = dict(zip(NAMED_PLAYERS, (RandomPlayer, RandomPunisher), strict=True))


def make_player(name: str, *, solver_max_nodes: int = 0, labeller=None, solver=None) -> Player:
    """A player that needs no network, by name: ``random``, ``random_punisher``, or
    ``solver:<epsilon>`` (the perfect solver playing a random move with probability
    epsilon, within ``solver_max_nodes`` nodes per position with ``solver``, or through
    ``labeller``: :class:`SolverPlayer`)."""
    if not is_player_name(name):
        raise ValueError(f"unknown player {name!r}; choose {PLAYER_NAMES}")
    if name in PLAYERS:
        return PLAYERS[name]()
    return SolverPlayer(epsilon=float(name[len(SOLVER_PREFIX) :]), max_nodes=solver_max_nodes,
                        solver=solver, labeller=labeller)  # fmt: skip


class SolverPlayer:
    """Perfect player (the :class:`Player` protocol; :mod:`.solver` underneath), batched over games.

    Every game is analysed with :meth:`~.solver.Solver.analyze_batch`; the player picks
    uniformly among the moves with the best score. With probability
    ``epsilon`` a game instead gets a uniformly random legal move (and is not
    analysed). All random draws come from the ``generator`` passed to
    :meth:`act`, so a seeded generator repeats the same games.

    Cost: analysing a position solves each of its children. With an opening book
    (:mod:`.book`: a ``solver`` made with one) that is milliseconds at every ply; without,
    seconds around ply 8 and minutes to hours closer to the empty board, so play from the
    opening then needs ``max_nodes``.

    Args:
        epsilon: probability of a random move, in ``[0, 1]``.
        max_nodes: node budget per position (0 = none). A game whose analysis
            exceeds it falls back to a shallow rule: win at once if possible,
            else block an immediate threat, else a uniformly random legal
            move. ``num_fallbacks`` counts those moves.
        solver: the :class:`~.solver.Solver` to use (its opening book answers the opening
            at once: ``common.opening_book.book_solver``); this or ``labeller`` is needed.
        labeller: analyse through this :class:`~.labelling.Labeller` instead (its cache,
            its worker processes and its ``max_nodes``, which then replaces ``max_nodes``):
            a position analysed once, in any game or any earlier ladder, is not solved
            again.
    """

    def __init__(self, epsilon: float = 0.0, max_nodes: int = 0, solver=None, labeller=None):
        if not 0.0 <= float(epsilon) <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon!r}")
        if int(max_nodes) < 0:
            raise ValueError(f"max_nodes must be >= 0, got {max_nodes!r}")
        if solver is None and labeller is None:
            raise ValueError("a SolverPlayer needs a solver or a labeller")
        self.epsilon = float(epsilon)
        self.max_nodes = int(max_nodes)
        self.solver = solver
        self.labeller = labeller
        self.num_fallbacks = 0

    def scores(self, state: State) -> tuple[torch.Tensor, torch.Tensor]:
        """``[B, 7] int16`` move scores (``FULL_COLUMN`` for full columns) and ``[B] bool`` ok."""
        pos = state.position.detach().cpu().numpy()  # (B,)
        mask = state.mask.detach().cpu().numpy()  # (B,)
        if self.labeller is not None:
            scores, ok, _ = self.labeller.label(pos.view(np.uint64), mask.view(np.uint64))
        else:
            scores, ok, _ = self.solver.analyze_batch(pos, mask, max_nodes=self.max_nodes)
        return torch.from_numpy(scores.astype(np.int16)), torch.from_numpy(ok)

    def act(self, state: State, generator: torch.Generator | None = None) -> torch.Tensor:
        """``[B] int64`` 0-based columns: an optimal move per game (see the class docstring)."""
        device = state.device
        num_games = state.batch_size
        noise = torch.rand((num_games, WIDTH), generator=generator, device=device)  # (B, 7)
        explore = torch.rand(num_games, generator=generator, device=device) < self.epsilon  # (B,)
        random_moves = random_legal_actions(state, generator)  # (B,)
        actions = random_moves.clone()
        solve = (~explore).nonzero().squeeze(1)  # (S,) games to analyse
        if solve.numel() == 0:
            return actions
        sub = state.take(solve)
        scores, ok = self.scores(sub)  # (S, 7), (S,)
        scores, ok = scores.to(device), ok.to(device)
        best = scores.max(1, keepdim=True).values  # (S, 1); full columns (-128) never win
        choice = scores == best  # (S, 7)
        if not bool(ok.all()):
            # Over budget: win now, else block, else any legal move.
            wins, blocks, legal = winning_moves(sub), threat_moves(sub), legal_mask(sub)
            shallow = torch.where(
                wins.any(1, keepdim=True),
                wins,
                torch.where(blocks.any(1, keepdim=True), blocks, legal),
            )
            choice = torch.where(ok.unsqueeze(1), choice, shallow)
            self.num_fallbacks += int((~ok).sum())
        # Uniform among the chosen columns: the largest noise among them wins.
        pick = torch.where(choice, noise[solve], torch.full_like(noise[solve], -1.0)).argmax(1)
        actions[solve] = pick
        return actions
