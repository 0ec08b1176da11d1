"""The tensor tree of one batched search (:class:`SearchTree`) and its three steps: ``select``
descends with a selection rule passed in as a function until the chosen edge is unexpanded
or leads to a terminal node (a per-game "still descending" flag; at most 42 levels),
``expand`` makes the new node with one network call for the batch, ``backup`` adds the
leaf's value to every node of the descent's path in one scatter; :func:`expand_root` and
:func:`open_root` make the root. The layout: :mod:`connect_zero_pipeline.core.search`.
"""

from __future__ import annotations

from functools import partial

import torch
from torch._higher_order_ops.while_loop import while_loop

from ..bitboard import BOARD_MASK, State, has_won, legal_mask, play, to_boards
from ..board import NUM_CELLS, WIDTH
from ..config.search import MCTSConfig
from ..inference import EvaluateFn
from .base import (
    ILLEGAL_OFFSET,
    NUM_SENTINELS,
    ROOT_INDEX,
    TRASH_OFFSET,
    UNVISITED_OFFSET,
    Level,
    SelectFn,
    Tree,
    masked_softmax,
    win_value,
)


def evaluate_positions(evaluate_fn: EvaluateFn, position, mask, legal: torch.Tensor):
    """Network priors ``[M, 7]`` and values ``[M]`` of ``M`` positions."""
    boards = to_boards(State(position, mask, mask))  # (M, 6, 7)
    logits, value = evaluate_fn(boards)
    m = position.shape[0]
    if logits.shape != (m, WIDTH) or value.shape != (m,):
        raise ValueError(
            f"evaluate_fn must return logits [M, 7] and value [M] for M={m} boards, "
            f"got {tuple(logits.shape)} and {tuple(value.shape)}"
        )
    # on the tree's device: a network on the GPU may search a tree on the CPU (a scorecard's)
    return masked_softmax(logits.to(legal.device), legal), value.to(legal.device).float()


class SearchTree:
    """The tensor tree of one batched search and its three steps (module docstring).

    ``host_sync``: the host may read device values inside the loop, to stop the
    descent as soon as every game has stopped and to evaluate only the leaves that
    need the network (compacted rows). Without it (a compiled search, where each read
    would be a device-to-host synchronisation) the descent runs a bound the host
    knows, ``min(sim - 1, 42)`` levels (no node is deeper before simulation ``sim``),
    and every game's leaf is evaluated, the unneeded rows masked out: a fixed number of
    tensor ops of fixed shapes per simulation. Both give the same tree: extra levels
    re-select the edge a stopped game already chose, and their path entries back up
    into TRASH.
    """

    def __init__(self, state: State, cfg: MCTSConfig, host_sync: bool):
        dev = state.device
        B, N = state.batch_size, cfg.sims + 1
        S = N + NUM_SENTINELS
        self.cfg, self.host_sync, self.B, self.N = cfg, host_sync, B, N
        self.roots = torch.arange(B, device=dev) * S  # (B,) flat index of each game's root
        self.unvisited = self.roots + N + UNVISITED_OFFSET
        self.illegal = self.roots + N + ILLEGAL_OFFSET
        self.trash = self.roots + N + TRASH_OFFSET
        # stats[..., 0] = visits, stats[..., 1] = value sum: one gather/scatter serves both.
        self.stats = torch.zeros(B, S, 2, device=dev)
        # fill_, not `= -inf`: on CUDA a Python number assigned into a slice becomes a CPU
        # tensor that the copy reads on the host (a read per search; docs/gpu.md).
        self.stats[:, N + ILLEGAL_OFFSET, 1].fill_(float("-inf"))
        self.parent = self.trash.unsqueeze(1).repeat(1, S)  # (B, S)
        self.action = torch.full((B, S), -1, dtype=torch.int64, device=dev)
        self.children = self.trash.view(B, 1, 1).repeat(1, S, WIDTH)  # (B, S, 7)
        self.prior = torch.zeros(B, S, WIDTH, device=dev)
        self.position = torch.zeros(B, S, dtype=torch.int64, device=dev)
        self.mask = torch.zeros(B, S, dtype=torch.int64, device=dev)
        self.expandable = torch.zeros(B, S, dtype=torch.bool, device=dev)
        self.raw_value = torch.zeros(B, S, device=dev)
        self.ply = torch.zeros(B, S, dtype=torch.int64, device=dev)  # stones on each board
        self.stats_f = self.stats.view(B * S, 2)
        self.children_f = self.children.view(B * S, WIDTH)
        self.prior_f = self.prior.view(B * S, WIDTH)
        self.parent_f, self.raw_value_f = self.parent.view(-1), self.raw_value.view(-1)
        self.expandable_f, self.ply_f = self.expandable.view(-1), self.ply.view(-1)
        self.position_f, self.mask_f = self.position.view(-1), self.mask.view(-1)
        self.action_f = self.action.view(-1)

    def evaluate(self, at: torch.Tensor, evaluate_fn: EvaluateFn, rows, position, mask, legal):
        """Priors and values of the nodes at flat indices ``at [B]`` for the games of
        ``rows [B] bool``."""
        if self.host_sync:
            idx = rows.nonzero().squeeze(1)  # (M,)
            if idx.numel():
                p, v = evaluate_positions(evaluate_fn, position[idx], mask[idx], legal[idx])
                self.prior_f[at[idx]], self.raw_value_f[at[idx]] = p, v
            return
        p, v = evaluate_positions(evaluate_fn, position, mask, legal)  # every game, then masked
        self.prior_f[at] = torch.where(rows.unsqueeze(1), p, self.prior_f[at])
        self.raw_value_f[at] = torch.where(rows, v, self.raw_value_f[at])

    def _level(self, select_fn: SelectFn, sim, depth: int | None, cur: torch.Tensor):
        """One level of the descent from the nodes ``cur [B]``: ``(action, child, go)``, ``go``
        where the chosen child is an expanded non-terminal node (the descent goes on)."""
        ch = self.children_f[cur]  # (B, 7) flat child indices
        st = self.stats_f[ch]  # (B, 7, 2)
        n_child, w_child = st[..., 0], st[..., 1]
        q = w_child / n_child.clamp(min=1.0)  # (B, 7); -inf for ILLEGAL, 0 for UNVISITED
        a = select_fn(Level(cur, depth, sim, ch, q, n_child))
        nxt = ch.gather(1, a.unsqueeze(1)).squeeze(1)  # (B,)
        return a, nxt, self.expandable_f[nxt]

    def select(self, select_fn: SelectFn, sim, bound: int | torch.Tensor):
        """Descend every game from its root until its edge is unexpanded or leads to a
        terminal node (at most ``bound`` levels); a game that stopped re-selects the same
        edge at later levels.

        ``bound`` is an int (a Python loop, which with ``host_sync`` stops as soon as every
        game has stopped) or, in a compiled search, a 0-d CPU tensor: the levels are then
        one rolled loop (torch's ``while_loop``), compiled once for every bound, its
        counter read on the host with no device synchronisation.

        Returns ``(node [B], action [B], child [B], path [B, L], depth [B])``: ``path[:, k]``
        is each game's node at level ``k``, meaningful for ``k <= depth`` (the levels the
        game went down; past them it repeats its last node)."""
        level = partial(self._level, select_fn, sim)
        cur = self.roots
        depth = torch.zeros_like(cur)
        a, nxt, go = level(0, cur)
        if isinstance(bound, torch.Tensor):
            return self._rolled(level, bound, cur, a, nxt, go, depth)
        path, levels = [cur], 0
        while levels < bound and not (self.host_sync and not bool(go.any())):
            depth = depth + go
            cur = torch.where(go, nxt, cur)
            levels += 1
            a, nxt, go = level(levels, cur)
            path.append(cur)
        return cur, a, nxt, torch.stack(path, 1), depth

    def _rolled(self, level, bound: torch.Tensor, cur, a, nxt, go, depth):
        """:meth:`select`'s levels after the first as ``while_loop(i < bound)``: the counter
        ``i`` and ``bound`` live on the CPU, the path is a fixed ``[B, 43]`` tensor whose
        column is counted on the device (``k``): nothing is copied from the host."""
        columns = torch.arange(NUM_CELLS + 1, device=cur.device)  # (43,)
        path = cur.unsqueeze(1).repeat(1, NUM_CELLS + 1)  # (B, 43)

        def body(i, k, cur, a, nxt, go, depth, path):
            depth = depth + go
            cur = torch.where(go, nxt, cur)
            i, k = i + 1, k + 1
            a, nxt, go = level(None, cur)  # the depth is a tensor: the rule cannot skip work
            path = torch.where(columns == k, cur.unsqueeze(1), path)
            return i, k, cur, a, nxt, go, depth, path

        i = torch.zeros((), dtype=torch.int64)  # CPU, as bound: the host reads it
        # the same count on the device, for the path's column: a copy of `i` there would be
        # a host-to-device copy of pageable memory, which fails a CUDA graph's capture
        k = torch.zeros((), dtype=torch.int64, device=cur.device)
        # cur is the tree's own `base` at level 0: a copy, as a loop's state may alias nothing.
        _, _, cur, a, nxt, _, depth, path = while_loop(
            lambda i, *_: i < bound, body, (i, k, cur.clone(), a, nxt, go, depth, path)
        )
        return cur, a, nxt, path, depth

    def expand(self, sim, evaluate_fn: EvaluateFn, cur, a, nxt) -> torch.Tensor:
        """Unexpanded edges become node ``sim`` (other games write garbage into slot
        ``sim`` of their own tree, which nothing links to); returns each game's leaf.
        ``sim`` is an int or a 0-d device tensor: it is only added to flat indices."""
        expand = nxt == self.unvisited  # (B,)
        step = play(State(self.position_f[cur], self.mask_f[cur], self.ply_f[cur]), a,
                    validate=False)  # fmt: skip
        new = self.roots + sim  # (B,) flat index of each game's slot `sim`
        new_pos, new_mask = step.state.position, step.state.mask
        self.position_f[new], self.mask_f[new] = new_pos, new_mask
        self.parent_f[new], self.action_f[new] = cur, a
        new_legal = legal_mask(step.state)  # (B, 7)
        self.children_f[new] = torch.where(
            new_legal, self.unvisited.unsqueeze(1), self.illegal.unsqueeze(1)
        )
        self.expandable_f[new] = ~step.done
        self.ply_f[new] = step.state.ply
        # exact: the side to move has lost (or drawn, 0)
        self.raw_value_f[new] = -step.reward * win_value(step.state.ply, self.cfg.win_decay)
        self.evaluate(new, evaluate_fn, expand & ~step.done, new_pos, new_mask, new_legal)
        self.children_f.view(-1)[cur * WIDTH + a] = torch.where(expand, new, nxt)
        return torch.where(expand, new, nxt)

    def backup(self, leaf: torch.Tensor, path: torch.Tensor, depth: torch.Tensor) -> None:
        """Add the leaf's value to the leaf and every node on its ``path`` (:meth:`select`),
        the sign flipping at every level, in one ``index_add_``. Path columns past a game's
        ``depth``, and the whole backup of a game whose search is a no-op (its leaf is
        TRASH), land in TRASH."""
        val = -self.raw_value_f[leaf]  # (B,) view of the player who moved into the leaf
        k = torch.arange(path.shape[1], device=path.device)  # (L,)
        on_path = (k <= depth.unsqueeze(1)) & (leaf != self.trash).unsqueeze(1)  # (B, L)
        nodes = torch.cat([leaf.unsqueeze(1), torch.where(on_path, path, self.trash.unsqueeze(1))],
                          1)  # fmt: skip
        away = depth.unsqueeze(1) + 1 - k  # (B, L) levels from the leaf
        value = torch.where(away % 2 == 0, val.unsqueeze(1), -val.unsqueeze(1))  # (B, L)
        value = torch.cat([val.unsqueeze(1), value], 1)  # (B, L + 1)
        upd = torch.stack([torch.ones_like(value), value], 2)  # (B, L + 1, 2)
        self.stats_f.index_add_(0, nodes.reshape(-1), upd.reshape(-1, 2))

    # -- what a policy reads and writes (policies.py): the tree's own, never its arrays --

    def prior_of(self, node: torch.Tensor) -> torch.Tensor:
        """``[B, 7]`` the prior of the nodes at flat indices ``node [B]``."""
        return self.prior_f[node]

    def visits_of(self, node: torch.Tensor) -> torch.Tensor:
        """``[B]`` the visit counts of the nodes at flat indices ``node [B]``."""
        return self.stats_f[node, 0]

    def value_of(self, node: torch.Tensor) -> torch.Tensor:
        """``[B]`` the network's (or the exact terminal) value of the nodes ``node [B]``."""
        return self.raw_value_f[node]

    def is_root(self, node: torch.Tensor) -> torch.Tensor:
        """``[B] bool``: whether each game's node ``node [B]`` is its root."""
        return node == self.roots

    def legal_edges(self, children: torch.Tensor) -> torch.Tensor:
        """``[B, 7] bool``: which of the child indices ``children [B, 7]`` are legal moves."""
        return children != self.illegal.unsqueeze(1)

    def root_prior(self) -> torch.Tensor:
        """``[B, 7]`` the roots' prior."""
        return self.prior[:, ROOT_INDEX]

    def root_evaluation(self) -> torch.Tensor:
        """``[B]`` the roots' network value (side to move's view)."""
        return self.raw_value[:, ROOT_INDEX]

    def mix_root_prior(self, noise: torch.Tensor, eps: float, legal: torch.Tensor) -> None:
        """Mix ``noise [B, 7]`` into the roots' prior with weight ``eps``, on legal moves."""
        root_prior = self.prior[:, ROOT_INDEX]
        self.prior[:, ROOT_INDEX] = (1 - eps) * root_prior + eps * (noise.to(root_prior) * legal)

    def root_edges(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(visits [B, 7], value sums [B, 7])`` of the roots' children: their Q is
        ``value sum / visits`` where visited (the one place the root's edges are read)."""
        stats = self.stats_f[self.children[:, ROOT_INDEX]]  # (B, 7, 2)
        return stats[..., 0], stats[..., 1]

    def root_value(self, live: torch.Tensor) -> torch.Tensor:
        """``[B]`` the roots' mean value, side to move's view (0 for a finished game)."""
        return torch.where(live, -self.stats[:, ROOT_INDEX, 1] / self.stats[:, ROOT_INDEX, 0],
                           0.0)  # fmt: skip

    def tree(self) -> Tree:
        s = self
        return Tree(
            s.stats[..., 0], s.stats[..., 1], s.parent, s.action, s.children, s.prior,
            s.position, s.mask, s.expandable, s.raw_value, s.N,
        )  # fmt: skip


def expand_root(t: SearchTree, state: State, evaluate_fn: EvaluateFn):
    """Evaluate the live roots and count that as their first visit; ``(legal [B, 7], live
    [B])``. The children stay unset: a policy may change the root's prior first."""
    t.position[:, ROOT_INDEX], t.mask[:, ROOT_INDEX] = state.position, state.mask
    t.ply[:, ROOT_INDEX] = state.ply
    finished = has_won(state.position ^ state.mask) | (state.mask == BOARD_MASK)  # (B,)
    live = ~finished
    legal = legal_mask(state) & live.unsqueeze(1)  # (B, 7)
    t.evaluate(t.roots + ROOT_INDEX, evaluate_fn, live, state.position, state.mask, legal)
    t.expandable[:, ROOT_INDEX] = live
    t.stats[:, ROOT_INDEX, 0].fill_(1.0)  # the root's own evaluation is its first visit
    t.stats[:, ROOT_INDEX, 1] = -t.raw_value[:, ROOT_INDEX]
    return legal, live


def open_root(t: SearchTree, legal: torch.Tensor, live: torch.Tensor) -> None:
    """The root's children: unvisited where legal; a finished root keeps TRASH children."""
    t.children[:, ROOT_INDEX] = torch.where(
        legal, t.unvisited.unsqueeze(1), torch.where(live, t.illegal, t.trash).unsqueeze(1)
    )
