"""Gumbel AlphaZero search rules (Danihelka et al., "Policy improvement by planning
with Gumbel", ICLR 2022), batched for the tensor tree of :mod:`.tree`.

At the root, the search samples ``m`` actions without replacement with the
Gumbel-Top-k trick (the ``m`` largest ``g(a) + logits(a)``, ``g`` i.i.d.
Gumbel(0, 1); ``g = 0`` without noise) and spends the simulation budget on them
by Sequential Halving: in each of ``ceil(log2 m)`` phases every remaining
action gets the same number of visits, then the better half (by
``g + logits + sigma(q)``) goes on. :func:`considered_visits` writes the whole
schedule down in advance: simulation ``k`` visits the best-scoring considered
action whose visit count is the scheduled one, which is Sequential Halving
with exactly ``sims`` simulations.

- **Acting**: the survivor with the largest ``g + logits + sigma(q)``.
- **Policy target**: ``softmax(logits + sigma(completed_q))`` over legal moves.
- **Inside the tree**: deterministic selection,
  ``argmax_a pi'(a) - N(a) / (1 + sum_b N(b))`` with ``pi' = softmax(logits + sigma(completed_q))``.
- ``completed_q``: an action's mean value if visited, else the mixed value
  ``(v + sum_b N(b) / sum_{b visited} pi(b) * sum_{b visited} pi(b) q(b)) / (1 + sum_b N(b))``
  (``v`` the node's network value, ``pi`` its prior).
- ``sigma(q) = (c_visit + max_b N(b)) * c_scale * q`` on values mapped from
  ``[-1, 1]`` to ``[0, 1]`` (the paper normalises Q to ``[0, 1]``; Connect-4
  values are bounded, so the map is fixed rather than taken from the tree).

Every function here works on ``[B, 7]`` rows, one per game (or node), with no
per-game Python loop; :mod:`.reference` holds the slow, per-node oracle the tests compare
with.

Shapes: B rows, A = 7 actions.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import torch

NEG = -1e9  # "minus infinity" that stays finite under arithmetic (masked entries)


@lru_cache(maxsize=64)
def considered_visits(num_considered: int, sims: int) -> tuple[int, ...]:
    """The visit count the action chosen at each root simulation must have (Sequential Halving).

    ``num_considered`` actions start; each phase gives every remaining action
    ``max(1, sims // (phases * remaining))`` more visits, then halves the
    remaining set (never below 2), until ``sims`` simulations are scheduled.
    Simulation ``k`` picks, among the considered actions with exactly
    ``result[k]`` visits, the best-scoring one.
    """
    if num_considered < 1 or sims < 1:
        raise ValueError(f"need num_considered >= 1 and sims >= 1, got {num_considered}, {sims}")
    if num_considered == 1:
        return tuple(range(sims))
    phases = math.ceil(math.log2(num_considered))
    remaining = num_considered
    counts = [0] * num_considered
    schedule: list[int] = []
    while len(schedule) < sims:
        per_action = max(1, sims // (phases * remaining))
        for _ in range(per_action):
            schedule.extend(counts[:remaining])  # each remaining action once, at its count
            for i in range(remaining):
                counts[i] += 1
        remaining = max(2, remaining // 2)
    return tuple(schedule[:sims])


@lru_cache(maxsize=64)
def schedule_table(max_considered: int, sims: int, device) -> torch.Tensor:
    """``[max_considered + 1, sims] int64``: row ``m`` is :func:`considered_visits` ``(m, sims)``.

    Made once per arguments (a copy to the device each search would wait for the host);
    read-only."""
    rows = [[0] * sims] + [list(considered_visits(m, sims)) for m in range(1, max_considered + 1)]
    return torch.tensor(rows, dtype=torch.int64, device=device)


def gumbel_from_uniforms(u: torch.Tensor) -> torch.Tensor:
    """Gumbel(0, 1) variates from uniforms in (0, 1)."""
    return -torch.log(-torch.log(u))


def sigma(q01: torch.Tensor, visits: torch.Tensor, c_visit: float, c_scale: float) -> torch.Tensor:
    """``(c_visit + max_b N(b)) * c_scale * q`` for ``q01 [B, 7]`` in [0, 1], ``visits [B, 7]``."""
    return (c_visit + visits.max(1, keepdim=True).values) * c_scale * q01


def completed_q(
    q: torch.Tensor, visits: torch.Tensor, prior: torch.Tensor, value: torch.Tensor
) -> torch.Tensor:
    """``[B, 7]``: ``q`` where visited, the mixed value elsewhere (values in [-1, 1]).

    Args:
        q: ``[B, 7]`` mean values of the children (parent's view; anything where unvisited).
        visits: ``[B, 7]`` child visit counts.
        prior: ``[B, 7]`` prior probabilities (0 for illegal moves).
        value: ``[B]`` the node's own network value (its side to move's view).
    """
    visited = visits > 0
    total = visits.sum(1)  # (B,)
    p_visited = (prior * visited).sum(1)  # (B,)
    weighted = (prior * torch.where(visited, q, torch.zeros_like(q))).sum(1)  # (B,)
    mixed = (value + total * weighted / p_visited.clamp_min(1e-12)) / (1.0 + total)
    mixed = torch.where(p_visited > 0, mixed, value)  # nothing visited yet: the node's value
    return torch.where(visited, q, mixed.unsqueeze(1))


class NodeStats(NamedTuple):
    """What the Gumbel rules read of a batch of nodes: ``[B, 7]`` rows, one node per row."""

    logits: torch.Tensor  # [B, 7] prior logits (any per-row shift)
    legal: torch.Tensor  # [B, 7] bool
    q: torch.Tensor  # [B, 7] children's mean values, node's view (anything where unvisited)
    visits: torch.Tensor  # [B, 7] children's visit counts
    value: torch.Tensor  # [B] the node's own network value


def _boosted_logits(node: NodeStats, c_visit: float, c_scale: float) -> torch.Tensor:
    """``logits + sigma(completed_q)``, ``[B, 7]``, values mapped from [-1, 1] to [0, 1]."""
    prior = torch.softmax(node.logits.masked_fill(~node.legal, NEG), 1) * node.legal
    cq = completed_q(node.q, node.visits, prior, node.value)
    return node.logits + sigma((cq + 1.0) / 2.0, node.visits, c_visit, c_scale)


def improved_policy(node: NodeStats, c_visit: float, c_scale: float) -> torch.Tensor:
    """``pi' = softmax(logits + sigma(completed_q))`` over legal moves, ``[B, 7]``."""
    scores = _boosted_logits(node, c_visit, c_scale)
    return torch.softmax(scores.masked_fill(~node.legal, NEG), 1) * node.legal


def interior_action(node: NodeStats, c_visit: float, c_scale: float) -> torch.Tensor:
    """``[B]``: ``argmax_a pi'(a) - N(a) / (1 + sum_b N(b))`` over legal moves (ties: lowest)."""
    pi = improved_policy(node, c_visit, c_scale)
    score = pi - node.visits / (1.0 + node.visits.sum(1, keepdim=True))
    return score.masked_fill(~node.legal, NEG).argmax(1)


def root_scores(
    gumbel: torch.Tensor, node: NodeStats, c_visit: float, c_scale: float
) -> torch.Tensor:
    """``g + logits + sigma(completed_q)``, ``[B, 7]`` (illegal moves: very negative)."""
    score = gumbel + _boosted_logits(node, c_visit, c_scale)
    return score.masked_fill(~node.legal, NEG)


def top_m(gumbel: torch.Tensor, logits: torch.Tensor, legal: torch.Tensor, m: int):
    """The Gumbel-Top-k sample: ``(considered [B, 7] bool, count [B] int64)``."""
    score = (gumbel + logits).masked_fill(~legal, NEG)  # (B, 7)
    order = torch.sort(score, dim=1, descending=True, stable=True).indices  # (B, 7)
    rank = torch.empty_like(order).scatter_(
        1, order, torch.arange(7, device=order.device).expand_as(order)
    )
    count = legal.sum(1).clamp(max=m)  # (B,)
    return (rank < count.unsqueeze(1)) & legal, count


def root_action(
    scores: torch.Tensor,
    considered: torch.Tensor,
    visits: torch.Tensor,
    needed: torch.Tensor,
) -> torch.Tensor:
    """``[B]``: the best-scoring considered action whose visit count is ``needed [B]``.

    Falls back to the best considered action when none has that count (a root
    with fewer legal moves than the schedule's width).
    """
    match = considered & (visits == needed.unsqueeze(1))
    pick = scores.masked_fill(~match, NEG).argmax(1)
    fallback = scores.masked_fill(~considered, NEG).argmax(1)
    return torch.where(match.any(1), pick, fallback)


def final_action(
    scores: torch.Tensor, considered: torch.Tensor, visits: torch.Tensor
) -> torch.Tensor:
    """``[B]``: among the considered actions with the most visits (the survivors), the best score."""
    most = visits.masked_fill(~considered, -1).max(1, keepdim=True).values
    survivors = considered & (visits == most)
    return scores.masked_fill(~survivors, NEG).argmax(1)
