"""What every part of the batched search shares: the tree's slots and sentinels, the value of
a win, the search's output (:class:`SearchResult`) and inputs (:class:`SearchInputs`), a
level of the descent as a selection rule sees it (:class:`Level`, :data:`SelectFn`) and the
descent's bound without host reads (:func:`descent_bound`). The layout of the tree and the
value conventions: :mod:`connect_zero_pipeline.core.search`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

from ..board import NUM_CELLS, WIDTH

ROOT_INDEX = 0


UNVISITED_OFFSET, ILLEGAL_OFFSET, TRASH_OFFSET = 0, 1, 2


NUM_SENTINELS = 3


MIN_WIN_PLY = 7  # the fewest stones on a board with four in a row


def win_value(ply: torch.Tensor, decay: float) -> torch.Tensor:
    """The value of a win for the player who made it, on a board of ``ply`` stones.

    ``1`` for the quickest possible win (7 stones) falling linearly to ``1 - decay``
    for a win with the 42nd stone; the loser's value is its negation (a draw is 0).
    With ``decay > 0`` the search and the value targets prefer quicker wins and
    slower losses, as the solver's exact scores do; ``decay = 0`` is plain +-1.
    """
    span = NUM_CELLS - MIN_WIN_PLY
    return 1.0 - decay * (ply.float() - MIN_WIN_PLY).clamp(0, span) / span


class Tree(NamedTuple):
    """Search tree storage (see the module docstring). ``[B, S]`` / ``[B, S, 7]`` tensors.

    Slot ``i`` of a game whose simulation ``i`` ended on an existing terminal
    node (or whose root is finished) holds garbage that nothing links to; its
    ``visits`` stay 0, so ``visits > 0`` marks the real nodes.
    """

    visits: torch.Tensor  # [B, S] float32
    value_sum: torch.Tensor  # [B, S] float32, view of the player who moved into the node
    parent: torch.Tensor  # [B, S] int64 flat index
    action: torch.Tensor  # [B, S] int64 move from the parent (-1 for the root)
    children: torch.Tensor  # [B, S, 7] int64 flat index
    prior: torch.Tensor  # [B, S, 7] float32
    position: torch.Tensor  # [B, S] int64
    mask: torch.Tensor  # [B, S] int64
    expandable: torch.Tensor  # [B, S] bool: a real, non-terminal, expanded node
    raw_value: torch.Tensor  # [B, S] float32, view of the node's side to move
    num_nodes: int  # N = sims + 1 real nodes; S = N + 3

    def local(self, flat: torch.Tensor) -> torch.Tensor:
        """Flat indices -> per-game slot indices (``UNVISITED`` etc. are ``>= num_nodes``)."""
        return flat % (self.num_nodes + NUM_SENTINELS)

    def root_q(self) -> torch.Tensor:
        """``[B, 7]`` the root's Q per column (its mean value, side to move's view); NaN for a
        column not visited (unvisited, full, or a finished root)."""
        children = self.local(self.children[:, ROOT_INDEX])  # (B, 7) slots
        real = children < self.num_nodes
        slots = children.clamp(max=self.num_nodes - 1)
        n = torch.where(real, self.visits.gather(1, slots), 0.0)
        w = self.value_sum.gather(1, slots)
        return torch.where(n > 0, w / n.clamp(min=1.0), torch.nan)


class SearchResult(NamedTuple):
    """What every search returns, whatever its policy (mctx's ``PolicyOutput``, with the
    root's visits and value)."""

    visit_counts: torch.Tensor  # [B, 7] int32, root children visits (sum = sims; 0 if finished)
    root_value: torch.Tensor  # [B] float32, mean root value, side to move's view (0 if finished)
    tree: Tree
    action_weights: torch.Tensor  # [B, 7] the training target: the policy's (sum 1; 0 if finished)
    action: torch.Tensor  # [B] int64 the move to play (the policy's choice)


class SearchInputs(NamedTuple):
    """The per-search tensors a policy may read: its randomness, given, never drawn inside
    the loop (so a compiled search takes them as inputs). Every field is optional."""

    noise: torch.Tensor | None = None  # [B, 7] root Dirichlet distributions (PUCT)
    gumbel: torch.Tensor | None = None  # [B, 7] root Gumbel(0, 1) noise (Gumbel; None: greedy)
    uniform: torch.Tensor | None = None  # [B] a uniform per game, to sample its move
    sample: torch.Tensor | None = None  # [B] bool: sample the move from the visits
    schedule: torch.Tensor | None = None  # Sequential Halving's table (made by the policy)


class Level(NamedTuple):
    """One level of the descent as a selection rule sees it: a row per game."""

    node: torch.Tensor  # [B] flat index of each game's current node
    depth: int | None  # levels descended so far (0: every game is at its root; None: a
    # rolled loop's level, unknown to the host)
    sim: int | torch.Tensor  # the simulation, 1..sims (a 0-d tensor in a compiled search)
    children: torch.Tensor  # [B, 7] flat child indices
    q: torch.Tensor  # [B, 7] children's mean values, node's view (-inf illegal, 0 unvisited)
    visits: torch.Tensor  # [B, 7] children's visit counts


SelectFn = Callable[[Level], torch.Tensor]
"""A selection rule: a :class:`Level` -> the ``[B] int64`` action of every game."""


def descent_bound(sim: int) -> int:
    """Levels simulation ``sim`` descends without host reads: ``min(sim - 1, 42)`` (no node
    is deeper before it)."""
    return min(sim - 1, NUM_CELLS)


def masked_softmax(logits: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    return torch.softmax(logits.float().masked_fill(~legal, float("-inf")), dim=1)


def check_shape(name: str, noise: torch.Tensor, batch: int) -> None:
    if noise.shape != (batch, WIDTH):
        raise ValueError(f"{name} must be [B, 7] = [{batch}, 7], got {tuple(noise.shape)}")
