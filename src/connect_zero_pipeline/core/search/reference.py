"""The slow reference search: one game, one node at a time, in plain Python floats.

:func:`reference_mcts` follows the same rules as the batched
:func:`~.loop.search` (PUCT and Gumbel), with one network call per leaf and
no tensors: the oracle the tests compare the batched search with, and the
baseline of ``bench mcts``. Unbatched, slow by design.
"""

from __future__ import annotations

import math

import torch

from ..bitboard import (
    BOARD_MASK,
    alignment,
    bitboards_to_board,
    bottom_mask_col,
    legal_columns,
    play_move,
    popcount,
)
from ..board import WIDTH
from ..config.search import MCTSConfig
from ..inference import EvaluateFn
from . import gumbel as G
from .base import masked_softmax, win_value


class _RefNode:
    """Unbatched reference node; ``value_sum`` from the view of the player who moved in."""

    __slots__ = (
        "children",
        "mask",
        "position",
        "prior",
        "terminal",
        "value",
        "value_sum",
        "visits",
        "win_decay",
    )

    def __init__(self, position: int, mask: int, win_decay: float):
        self.position, self.mask, self.win_decay = position, mask, win_decay
        self.terminal = alignment(position ^ mask) or mask == BOARD_MASK
        # Previous mover won -> -win_value for the side to move; full board -> 0.
        won = alignment(position ^ mask)
        self.value = -float(win_value(torch.tensor(popcount(mask)), win_decay)) if won else 0.0
        self.prior: list[float] = []
        self.children: dict[int, _RefNode] = {}
        self.visits, self.value_sum = 0, 0.0

    def expand(self, evaluate_fn: EvaluateFn) -> float:
        board = torch.from_numpy(bitboards_to_board(self.position, self.mask)).unsqueeze(0)
        logits, value = evaluate_fn(board)
        legal = torch.tensor([[c in legal_columns(self.mask) for c in range(WIDTH)]])
        self.prior = masked_softmax(logits, legal)[0].tolist()
        self.value = float(value[0])
        return self.value

    def child(self, col: int) -> _RefNode:
        if col not in self.children:
            position, mask = play_move(self.position, self.mask, bottom_mask_col(col))
            self.children[col] = _RefNode(position, mask, self.win_decay)  # opponent's view
        return self.children[col]


def reference_mcts(
    position: int,
    mask: int,
    evaluate_fn: EvaluateFn,
    config: MCTSConfig | None = None,
    root_noise: list[float] | None = None,
    gumbel: list[float] | None = None,
) -> tuple[list[int], float] | tuple[list[int], float, list[float], int]:
    """SLOW REFERENCE: straightforward per-node Python MCTS for one game. Unbatched.

    Same rules as :func:`search` (root evaluation counts as a visit, unvisited
    ``Q = 0`` for PUCT, ties to the lowest column, exact terminal values,
    negamax backup), one network call per leaf, in plain Python floats. Used
    by tests and ``bench mcts``. ``config.search == "gumbel"`` follows
    :mod:`.gumbel` (``gumbel``: the root's Gumbel noise, default none).

    Returns:
        (root visit counts, 7 ints), root mean value (side to move's view);
        for Gumbel search also the improved policy (7 floats) and the action.
    """
    cfg = config or MCTSConfig()
    root = _RefNode(position, mask, cfg.win_decay)
    if root.terminal:
        return [0] * WIDTH, 0.0
    v = root.expand(evaluate_fn)
    if cfg.dirichlet_eps > 0 and root_noise is not None and cfg.search == "puct":
        root.prior = [
            (1 - cfg.dirichlet_eps) * p + cfg.dirichlet_eps * n
            for p, n in zip(root.prior, root_noise, strict=True)
        ]
    root.visits, root.value_sum = 1, -v
    legal = [c in legal_columns(mask) for c in range(WIDTH)]
    g = list(gumbel) if gumbel is not None else [0.0] * WIDTH
    considered: list[int] = []
    schedule: tuple[int, ...] = ()
    if cfg.search == "gumbel":
        ranked = sorted(legal_columns(mask), key=lambda c: -(g[c] + _ref_logit(root, c)))
        considered = ranked[: min(cfg.gumbel_num_actions, len(ranked))]
        schedule = G.considered_visits(len(considered), cfg.sims)
    for k in range(cfg.sims):
        node, path = root, [root]
        while True:
            if cfg.search == "puct":
                best = _ref_puct(node, cfg)
            elif node is root:
                scores = _ref_gumbel_scores(node, cfg, g)
                count = schedule[k]
                match = [c for c in considered if _ref_visits(node, c) == count]
                pool = match or considered
                best = max(pool, key=lambda c: (scores[c], -c))
            else:
                best = _ref_gumbel_interior(node, cfg)
            child = node.child(best)
            path.append(child)
            if child.terminal:
                value = child.value
                break
            if child.visits == 0:
                value = child.expand(evaluate_fn)
                break
            node = child
        for n in reversed(path):  # value is from the leaf's side to move; flip per level
            value = -value
            n.visits += 1
            n.value_sum += value
    counts = [root.children[c].visits if c in root.children else 0 for c in range(WIDTH)]
    counts = [n if ok else 0 for n, ok in zip(counts, legal, strict=True)]
    root_value = -root.value_sum / root.visits
    if cfg.search == "puct":
        return counts, root_value
    policy = _ref_improved(root, cfg)
    scores = _ref_gumbel_scores(root, cfg, g)
    most = max(counts[c] for c in considered)
    action = max((c for c in considered if counts[c] == most), key=lambda c: (scores[c], -c))
    return counts, root_value, policy, action


def _ref_visits(node: _RefNode, c: int) -> int:
    return node.children[c].visits if c in node.children else 0


def _ref_logit(node: _RefNode, c: int) -> float:
    return math.log(max(node.prior[c], 1e-30))


def _ref_puct(node: _RefNode, cfg: MCTSConfig) -> int:
    sqrt_n = math.sqrt(node.visits)
    best, best_score = -1, -math.inf
    for c in legal_columns(node.mask):
        ch = node.children.get(c)
        n, w = (ch.visits, ch.value_sum) if ch else (0, 0.0)
        q = w / n if n else 0.0
        score = q + cfg.c_puct * node.prior[c] * sqrt_n / (1 + n)
        if score > best_score:
            best, best_score = c, score
    return best


def _ref_sigma(node: _RefNode, cfg: MCTSConfig) -> dict[int, float]:
    """``sigma(completed_q)`` of every legal child, the paper's formulas one node at a time."""
    legal = legal_columns(node.mask)
    n = {c: _ref_visits(node, c) for c in legal}
    q = {c: node.children[c].value_sum / n[c] for c in legal if n[c]}
    total = sum(n.values())
    p_visited = sum(node.prior[c] for c in q)
    if p_visited > 0:
        weighted = sum(node.prior[c] * q[c] for c in q) / p_visited
        mixed = (node.value + total * weighted) / (1 + total)
    else:
        mixed = node.value
    scale = (cfg.c_visit + max(n.values())) * cfg.c_scale
    return {c: scale * ((q.get(c, mixed) + 1.0) / 2.0) for c in legal}


def _ref_gumbel_scores(node: _RefNode, cfg: MCTSConfig, g: list[float]) -> dict[int, float]:
    sig = _ref_sigma(node, cfg)
    return {c: g[c] + _ref_logit(node, c) + sig[c] for c in sig}


def _ref_improved(node: _RefNode, cfg: MCTSConfig) -> list[float]:
    sig = _ref_sigma(node, cfg)
    z = {c: _ref_logit(node, c) + sig[c] for c in sig}
    top = max(z.values())
    e = {c: math.exp(v - top) for c, v in z.items()}
    total = sum(e.values())
    return [e[c] / total if c in e else 0.0 for c in range(WIDTH)]


def _ref_gumbel_interior(node: _RefNode, cfg: MCTSConfig) -> int:
    pi = _ref_improved(node, cfg)
    legal = legal_columns(node.mask)
    total = sum(_ref_visits(node, c) for c in legal)
    return max(legal, key=lambda c: (pi[c] - _ref_visits(node, c) / (1 + total), -c))
