"""Batched AlphaZero MCTS: every game of a batch searches at once, in lock-step.

The tree lives in preallocated tensors, mctx-style: per game ``S = N + 3``
slots, where ``N = sims + 1`` real nodes (the root is ``ROOT_INDEX = 0`` and
simulation ``i`` creates node ``i``) are followed by three sentinel slots::

    slot  0 .. N-1   real nodes
    slot  N          UNVISITED: every unexpanded legal edge points here; its
                     stats stay 0, so an unvisited child reads N = 0, Q = 0
    slot  N + 1      ILLEGAL: full columns point here; its value sum is -inf,
                     so the PUCT score of an illegal move is -inf (never chosen)
    slot  N + 2      TRASH: the root's parent and the children of a finished
                     root; backups that run past the root land here

Per-node arrays are ``[B, S]`` (visits, value sums, parents, incoming actions,
bitboards ``position``/``mask``, ``expandable`` flag, ``raw_value``) and
per-edge arrays are ``[B, S, 7]`` (children, priors). Children and parents
hold *flat* indices ``b * S + slot`` so that every lookup is one gather on a
flattened tensor, with no per-game offset arithmetic in the hot loop.

Value conventions (negamax): ``raw_value`` is the network's (or the exact
terminal) value from the view of the node's side to move; ``value_sum`` is
from the view of the player who moved *into* the node, so the PUCT ``Q`` of
edge ``(s, a)`` is simply ``value_sum[child] / visits[child]``. Backups flip
the sign once per level.

The slow per-node reference with the same rules is :mod:`.search_reference`.

The shape is mctx's: one loop (:func:`_loop`: start, ``sims`` simulations, finish) that
knows no policy, and policies as objects (:class:`Policy`): each prepares its inputs
(:class:`SearchInputs`: its noise, given), fixes what it needs at the root, gives the
loop its selection rule and makes the one output every search returns
(:class:`SearchResult`: the move, the action weights, the tree). :class:`PUCT`
(AlphaZero: root Dirichlet noise, PUCT, the visits) and :class:`Gumbel` (Gumbel-Top-k at
the root, Sequential Halving, the improved policy) are :data:`POLICIES`; :func:`search`
takes ``config.search``'s or any other (``tests/core/test_mcts.py`` adds a third there).

One simulation, for all games together, is three steps of :class:`_Search`:
``select`` descends with a selection rule passed in
as a function (:func:`puct_rule`, :func:`gumbel_rule`) until the chosen edge is
unexpanded or leads to a terminal node (a per-game "still descending" flag; at
most 42 levels), ``expand`` makes the new node with one network call for the
batch, ``backup`` adds the leaf's value to every node of the descent's path in one
scatter. ``host_sync`` (the eager search's default, on any device: measured faster on
the CPU and on an H100, docs/gpu.md) lets the loop read device values to stop early and
evaluate only the leaves that need the network; without it (a compiled search) the loop
has no host synchronisation and fixed shapes (see :class:`_Search`). Terminal leaves get their exact
value and no network call: draw 0, loss ``-win_value(ply, win_decay)`` for the
side to move (``-1`` when ``win_decay`` is 0; quicker wins are worth more otherwise).

Finished games may share a batch with live ones: their search is a no-op and
returns zero visits and a zero root value. Mixed plies are fine.

Shapes: B games, S slots per tree, A = 7 actions, K gamma candidates.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import torch
from torch._higher_order_ops.while_loop import while_loop

from . import gumbel as G
from .bitboard import BOARD_MASK, State, has_won, legal_mask, play, to_boards
from .board import NUM_CELLS, WIDTH
from .config.search import MCTSConfig
from .inference import EvaluateFn, torch_evaluate_fn
from .players import sample_move

ROOT_INDEX = 0
# Sentinel slots, as offsets from N (the number of real nodes); see the module docstring.
UNVISITED_OFFSET, ILLEGAL_OFFSET, TRASH_OFFSET = 0, 1, 2
NUM_SENTINELS = 3
_GAMMA_CANDIDATES = 6  # K: Marsaglia-Tsang draws per gamma variate (acceptance > 95% each)
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


# ---------------------------------------------------------------------------
# Randomness: Dirichlet noise from explicit uniforms (works with any RNG stream)
# ---------------------------------------------------------------------------


def dirichlet_uniform_shape(batch: int) -> tuple[int, ...]:
    """Shape of the uniforms :func:`dirichlet_from_uniforms` consumes: ``[B, 7, K + 1, 3]``."""
    return (batch, WIDTH, _GAMMA_CANDIDATES + 1, 3)


def dirichlet_from_uniforms(legal: torch.Tensor, alpha: float, u: torch.Tensor) -> torch.Tensor:
    """Symmetric ``Dir(alpha)`` over the legal columns, from uniforms in ``(0, 1)``.

    Gamma variates by Marsaglia-Tsang with ``K`` candidates drawn at once (the
    first accepted one is kept; if all ``K`` are rejected, probability below
    1e-7, the candidate mean ``d`` is used), boosted by ``U^(1/alpha)`` for
    ``alpha < 1``. Taking uniforms instead of a generator lets callers use any
    stream, e.g. one per game (see :mod:`.selfplay`).

    Args:
        legal: ``[B, 7] bool``.
        alpha: concentration > 0.
        u: ``[B, 7, K + 1, 3]`` float uniforms in (0, 1), see :func:`dirichlet_uniform_shape`.

    Returns:
        ``[B, 7] float32``, summing to 1 over legal columns (rows without one are 0).
    """
    a = alpha if alpha >= 1 else alpha + 1.0
    d = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    cand, extra = u[:, :, :-1], u[:, :, -1, 0]  # (B, 7, K, 3), (B, 7)
    x = torch.sqrt(-2.0 * torch.log(cand[..., 0])) * torch.cos(2.0 * math.pi * cand[..., 1])
    v = (1.0 + c * x) ** 3  # (B, 7, K)
    ok = (v > 0) & (
        torch.log(cand[..., 2]) < 0.5 * x * x + d - d * v + d * torch.log(v.clamp(1e-30))
    )
    first = ok.to(torch.int8).argmax(-1, keepdim=True)  # (B, 7, 1)
    g = (d * v).gather(-1, first).squeeze(-1)  # (B, 7)
    g = torch.where(ok.any(-1), g, torch.full_like(g, d))
    if alpha < 1:
        g = g * extra ** (1.0 / alpha)
    g = g * legal
    return g / g.sum(1, keepdim=True).clamp_min(1e-30)


def sample_dirichlet(legal: torch.Tensor, alpha: float, generator: torch.Generator | None):
    """``[B, 7] float32`` ``Dir(alpha)`` over legal columns, drawn from a ``torch.Generator``."""
    shape = dirichlet_uniform_shape(legal.shape[0])
    u = torch.rand(shape, generator=generator, device=legal.device).clamp_(1e-12, 1.0)
    return dirichlet_from_uniforms(legal, alpha, u)


# ---------------------------------------------------------------------------
# Batched search
# ---------------------------------------------------------------------------


def _masked_softmax(logits: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    return torch.softmax(logits.float().masked_fill(~legal, float("-inf")), dim=1)


def _evaluate(evaluate_fn: EvaluateFn, position, mask, legal: torch.Tensor):
    """Network priors ``[M, 7]`` and values ``[M]`` of ``M`` positions."""
    boards = to_boards(State(position, mask, mask))  # (M, 6, 7)
    logits, value = evaluate_fn(boards)
    m = position.shape[0]
    if logits.shape != (m, WIDTH) or value.shape != (m,):
        raise ValueError(
            f"evaluate_fn must return logits [M, 7] and value [M] for M={m} boards, "
            f"got {tuple(logits.shape)} and {tuple(value.shape)}"
        )
    return _masked_softmax(logits, legal), value.float()


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


class _Search:
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
        self.base = torch.arange(B, device=dev) * S  # (B,) flat index of each game's root
        self.unvisited = self.base + N + UNVISITED_OFFSET
        self.illegal = self.base + N + ILLEGAL_OFFSET
        self.trash = self.base + N + TRASH_OFFSET
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
                p, v = _evaluate(evaluate_fn, position[idx], mask[idx], legal[idx])
                self.prior_f[at[idx]], self.raw_value_f[at[idx]] = p, v
            return
        p, v = _evaluate(evaluate_fn, position, mask, legal)  # every game, then masked
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
        cur = self.base
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
        ``i`` and ``bound`` live on the CPU, the path is a fixed ``[B, 43]`` tensor."""
        columns = torch.arange(NUM_CELLS + 1, device=cur.device)  # (43,)
        path = cur.unsqueeze(1).repeat(1, NUM_CELLS + 1)  # (B, 43)

        def body(i, cur, a, nxt, go, depth, path):
            depth = depth + go
            cur = torch.where(go, nxt, cur)
            i = i + 1
            a, nxt, go = level(None, cur)  # the depth is a tensor: the rule cannot skip work
            path = torch.where(columns == i.to(cur.device), cur.unsqueeze(1), path)
            return i, cur, a, nxt, go, depth, path

        i = torch.zeros((), dtype=torch.int64)  # CPU, as bound
        # cur is the tree's own `base` at level 0: a copy, as a loop's state may alias nothing.
        _, cur, a, nxt, _, depth, path = while_loop(
            lambda i, *_: i < bound, body, (i, cur.clone(), a, nxt, go, depth, path)
        )
        return cur, a, nxt, path, depth

    def expand(self, sim, evaluate_fn: EvaluateFn, cur, a, nxt) -> torch.Tensor:
        """Unexpanded edges become node ``sim`` (other games write garbage into slot
        ``sim`` of their own tree, which nothing links to); returns each game's leaf.
        ``sim`` is an int or a 0-d device tensor: it is only added to flat indices."""
        expand = nxt == self.unvisited  # (B,)
        step = play(State(self.position_f[cur], self.mask_f[cur], self.ply_f[cur]), a,
                    validate=False)  # fmt: skip
        new = self.base + sim  # (B,) flat index of each game's slot `sim`
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

    def tree(self) -> Tree:
        s = self
        return Tree(
            s.stats[..., 0], s.stats[..., 1], s.parent, s.action, s.children, s.prior,
            s.position, s.mask, s.expandable, s.raw_value, s.N,
        )  # fmt: skip


def puct_rule(tree: _Search) -> SelectFn:
    """AlphaZero's PUCT: ``argmax_a Q + c_puct * P * sqrt(N_node) / (1 + N_child)``
    (ties: the lowest column)."""
    c_puct = tree.cfg.c_puct

    def select(level: Level) -> torch.Tensor:
        node = level.node
        u = tree.prior_f[node] * (tree.stats_f[node, 0].sqrt() * c_puct).unsqueeze(1)
        return torch.addcdiv(level.q, u, level.visits + 1.0).argmax(1)

    return select


class GumbelRoot(NamedTuple):
    """What Gumbel search fixes at the root before the first simulation."""

    noise: torch.Tensor  # [B, 7] Gumbel(0, 1) (zeros: the greedy agent)
    logits: torch.Tensor  # [B, 7] the root's prior logits
    considered: torch.Tensor  # [B, 7] bool: the Gumbel-Top-k sample
    num_considered: torch.Tensor  # [B] int64
    schedule: torch.Tensor  # [m + 1, sims] Sequential Halving's visit schedule


def _column(x: torch.Tensor, i: int | torch.Tensor) -> torch.Tensor:
    """``x[:, i]`` for an int or a 0-d device tensor ``i`` (no host read of it)."""
    if isinstance(i, int):
        return x[:, i]
    return x.index_select(1, i.view(1)).squeeze(1)


def gumbel_rule(tree: _Search, root: GumbelRoot) -> SelectFn:
    """Gumbel search (:mod:`.gumbel`): Sequential Halving at a game's root, the
    deterministic ``pi' - N / (1 + sum N)`` rule below it. A game that stopped at its
    root keeps choosing the same root edge at later levels."""
    cfg = tree.cfg

    def select(level: Level) -> torch.Tensor:
        legal_c = level.children != tree.illegal.unsqueeze(1)  # (B, 7)
        q = torch.where(legal_c, level.q, torch.zeros_like(level.q))  # ILLEGAL's -inf out
        value = tree.raw_value_f[level.node]  # (B,)
        at_root = level.node == tree.base  # (B,)
        inner = None
        # At depth 0 every game is at its root; deeper (or at a depth the host does not know:
        # a rolled loop), the host looks only if it may.
        if level.depth != 0 and not (tree.host_sync and bool(at_root.all())):
            logits = tree.prior_f[level.node].clamp_min(1e-30).log()  # (B, 7)
            node = G.NodeStats(logits, legal_c, q, level.visits, value)
            inner = G.interior_action(node, cfg.c_visit, cfg.c_scale)
            if tree.host_sync and not bool(at_root.any()):
                return inner
        stats = G.NodeStats(root.logits, legal_c, q, level.visits, value)
        scores = G.root_scores(root.noise, stats, cfg.c_visit, cfg.c_scale)
        needed = _column(root.schedule, level.sim - 1)[root.num_considered]  # (B,)
        picked = G.root_action(scores, root.considered, level.visits, needed)
        return picked if inner is None else torch.where(at_root, picked, inner)

    return select


def descent_bound(sim: int) -> int:
    """Levels simulation ``sim`` descends without host reads: ``min(sim - 1, 42)`` (no node
    is deeper before it)."""
    return min(sim - 1, NUM_CELLS)


def _expand_root(t: _Search, state: State, evaluate_fn: EvaluateFn):
    """Evaluate the live roots and count that as their first visit; ``(legal [B, 7], live
    [B])``. The children stay unset: a policy may change the root's prior first."""
    t.position[:, ROOT_INDEX], t.mask[:, ROOT_INDEX] = state.position, state.mask
    t.ply[:, ROOT_INDEX] = state.ply
    finished = has_won(state.position ^ state.mask) | (state.mask == BOARD_MASK)  # (B,)
    live = ~finished
    legal = legal_mask(state) & live.unsqueeze(1)  # (B, 7)
    t.evaluate(t.base + ROOT_INDEX, evaluate_fn, live, state.position, state.mask, legal)
    t.expandable[:, ROOT_INDEX] = live
    t.stats[:, ROOT_INDEX, 0].fill_(1.0)  # the root's own evaluation is its first visit
    t.stats[:, ROOT_INDEX, 1] = -t.raw_value[:, ROOT_INDEX]
    return legal, live


def _open_root(t: _Search, legal: torch.Tensor, live: torch.Tensor) -> None:
    """The root's children: unvisited where legal; a finished root keeps TRASH children."""
    t.children[:, ROOT_INDEX] = torch.where(
        legal, t.unvisited.unsqueeze(1), torch.where(live, t.illegal, t.trash).unsqueeze(1)
    )


# -- policies: what a search fixes at its root, its selection rule, its output -------------


class Policy:
    """A search policy, as mctx has them: the one loop (:func:`_loop`) asks it for

    - :meth:`prepare`: its inputs, made on the host before the loop (noise drawn, tables
      built; eager, never compiled);
    - :meth:`root`: what it fixes at the root once the root is evaluated (``root`` state:
      any tensors, or None);
    - :meth:`rule`: its selection rule (a :data:`SelectFn`), at the root and below;
    - :meth:`output`: the move each game plays and its action weights (:class:`SearchResult`).

    The last three run inside the loop's steps, compiled in a compiled search: tensors
    only, no host reads. A policy object is constant (one per kind and setting): a compiled
    search compiles its steps once per policy. A new policy subclasses this; the loop, its
    callers and the compiled search need no edit (``tests/core/test_mcts.py`` adds one).
    """

    inputs: frozenset[str] = frozenset()
    """The :class:`SearchInputs` fields it reads, so that callers make only those."""

    def prepare(self, state: State, cfg: MCTSConfig, inputs: SearchInputs,
                generator: torch.Generator | None) -> SearchInputs:  # fmt: skip
        return inputs

    def root(self, t: _Search, legal: torch.Tensor, live: torch.Tensor, inputs: SearchInputs):
        return None

    def rule(self, t: _Search, root) -> SelectFn:
        raise NotImplementedError

    def output(self, t: _Search, root, legal: torch.Tensor, counts: torch.Tensor,
               inputs: SearchInputs) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        """``(action_weights [B, 7], action [B])`` from the root's ``counts [B, 7]``."""
        raise NotImplementedError

    def at(self, temperature: float, generator: torch.Generator | None = None) -> Policy:
        """This policy playing at ``temperature`` (an agent's setting; by default the policy
        plays as it is)."""
        return self


def visit_weights(counts: torch.Tensor) -> torch.Tensor:
    """``[B, 7]`` the visit distribution (0 for a finished root)."""
    return counts / counts.sum(1, keepdim=True).clamp(min=1.0)


def most_visited(counts: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """``[B]`` the most visited legal column (ties: the lowest)."""
    return counts.masked_fill(~legal, -1).argmax(1)


class PUCT(Policy):
    """AlphaZero's search: root Dirichlet noise (``dirichlet_eps > 0``: ``inputs.noise``,
    else drawn with the generator), PUCT everywhere; its action weights are the visit
    distribution and its move the most visited column, or sampled from the visits: per game
    where ``inputs.sample``, with ``inputs.uniform`` (temperature 1: the first column whose
    cumulative count exceeds ``u * total``), or with ``temperature > 0`` and a generator
    (``visits ** (1 / temperature)``, eager only)."""

    inputs = frozenset({"noise", "uniform", "sample"})

    def __init__(self, temperature: float = 0.0, generator: torch.Generator | None = None):
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        self.temperature, self.generator = temperature, generator

    def prepare(self, state, cfg, inputs, generator):
        if cfg.dirichlet_eps <= 0:
            return inputs._replace(noise=None)
        noise = inputs.noise
        if noise is None:
            legal = legal_mask(state) & ~has_won(state.position ^ state.mask).unsqueeze(1)
            noise = sample_dirichlet(legal, cfg.dirichlet_alpha, generator)
        _check_shape("root_noise", noise, state.batch_size)
        return inputs._replace(noise=noise)

    def root(self, t, legal, live, inputs):
        if inputs.noise is not None:  # mixed with weight dirichlet_eps
            eps = t.cfg.dirichlet_eps
            root_prior = t.prior[:, ROOT_INDEX]
            t.prior[:, ROOT_INDEX] = (1 - eps) * root_prior + eps * (inputs.noise.to(root_prior)
                                                                       * legal)  # fmt: skip
        return None

    def rule(self, t, root):
        return puct_rule(t)

    def at(self, temperature, generator=None):
        return PUCT(temperature, generator) if temperature else self

    def output(self, t, root, legal, counts, inputs):
        action = most_visited(counts, legal)
        if inputs.sample is not None:
            threshold = inputs.uniform.unsqueeze(1) * counts.sum(1, keepdim=True)  # (B, 1)
            sampled = (counts.cumsum(1) <= threshold).sum(1)
            action = torch.where(inputs.sample, sampled, action)
        elif self.temperature > 0:
            action = sample_move(counts.log(), legal, self.generator, self.temperature)
        return visit_weights(counts), action


class Gumbel(Policy):
    """Gumbel search (:mod:`.gumbel`): Gumbel-Top-k at the root with ``inputs.gumbel`` (None:
    no noise, the greedy agent), Sequential Halving there, the deterministic improved-policy
    rule below; its action weights are the improved policy and its move the halving's
    survivor."""

    inputs = frozenset({"gumbel"})

    def prepare(self, state, cfg, inputs, generator):
        gumbel = inputs.gumbel
        if gumbel is None:
            gumbel = torch.zeros(state.batch_size, WIDTH, device=state.device)
        _check_shape("gumbel", gumbel, state.batch_size)
        schedule = G.schedule_table(cfg.gumbel_num_actions, cfg.sims, state.device)
        return inputs._replace(gumbel=gumbel, schedule=schedule)  # schedule: (m + 1, sims)

    def root(self, t, legal, live, inputs):
        return gumbel_root(t, legal, inputs.gumbel, inputs.schedule)

    def rule(self, t, root):
        return gumbel_rule(t, root)

    def output(self, t, root, legal, counts, inputs):
        return gumbel_output(t, root, legal, counts)


POLICIES = {"puct": PUCT(), "gumbel": Gumbel()}
"""The policy of each ``MCTSConfig.search``: one constant object each."""


def gumbel_root(t: _Search, legal: torch.Tensor, gumbel: torch.Tensor, schedule) -> GumbelRoot:
    """What Gumbel search fixes at the root: its noise, logits and the Gumbel-Top-k sample."""
    g_noise = gumbel.to(t.prior)
    root_logits = t.prior[:, ROOT_INDEX].clamp_min(1e-30).log()  # (B, 7); a softmax shift
    considered, num_considered = G.top_m(g_noise, root_logits, legal, t.cfg.gumbel_num_actions)
    return GumbelRoot(g_noise, root_logits, considered, num_considered, schedule)


def gumbel_output(t: _Search, root: GumbelRoot, legal: torch.Tensor, counts: torch.Tensor):
    """``(improved policy [B, 7], action [B])`` from the root's visits and values."""
    cfg = t.cfg
    w_root = t.stats_f[t.children[:, ROOT_INDEX], 1]  # (B, 7)
    q_root = torch.where(legal, w_root / counts.clamp(min=1.0), torch.zeros_like(w_root))
    node = G.NodeStats(root.logits, legal, q_root, counts, t.raw_value[:, ROOT_INDEX])
    policy = G.improved_policy(node, cfg.c_visit, cfg.c_scale)
    scores = G.root_scores(root.noise, node, cfg.c_visit, cfg.c_scale)
    return policy, G.final_action(scores, root.considered, counts)


# -- the three steps of the one loop, for any policy ---------------------------------------


def _start(t: _Search, state: State, evaluate_fn: EvaluateFn, policy: Policy,
           inputs: SearchInputs):  # fmt: skip
    """The root, expanded, with the policy's set-up: ``(root, legal [B, 7], live [B])``."""
    legal, live = _expand_root(t, state, evaluate_fn)
    root = policy.root(t, legal, live, inputs)
    _open_root(t, legal, live)
    return root, legal, live


def _simulate(t: _Search, policy: Policy, root, evaluate_fn: EvaluateFn, sim, bound):
    """Simulation ``sim`` (an int, or a 0-d device tensor in a compiled search) for every
    game: select with the policy's rule (at most ``bound`` levels without host reads: an
    int, or a 0-d CPU tensor in a compiled search), expand, backup."""
    cur, a, nxt, path, depth = t.select(policy.rule(t, root), sim, bound)
    leaf = t.expand(sim, evaluate_fn, cur, a, nxt)
    t.backup(leaf, path, depth)


def _finish(t: _Search, policy: Policy, root, inputs: SearchInputs, legal: torch.Tensor,
            live: torch.Tensor):  # fmt: skip
    """``(visit_counts [B, 7] int32, root_value [B], action_weights [B, 7], action [B])``."""
    counts = t.stats_f[t.children[:, ROOT_INDEX], 0] * legal  # (B, 7)
    root_value = torch.where(live, -t.stats[:, ROOT_INDEX, 1] / t.stats[:, ROOT_INDEX, 0], 0.0)
    weights, action = policy.output(t, root, legal, counts, inputs)
    return counts.round().to(torch.int32), root_value, weights, action


class Steps(NamedTuple):
    """The three steps a search is made of (:func:`_start`, :func:`_simulate`,
    :func:`_finish`), as they run: :data:`EAGER` calls them, a compiled search
    (:mod:`.compiled`) passes their compiled forms."""

    start: Callable
    simulate: Callable
    finish: Callable
    compiled: bool = False
    """``sim`` as a device tensor and the descent's bound as a CPU tensor, so that one
    simulation graph serves every simulation (the descent a rolled loop); implies
    ``host_sync=False``."""


EAGER = Steps(_start, _simulate, _finish)


def search(
    state: State,
    evaluate_fn: EvaluateFn,
    config: MCTSConfig | None = None,
    generator: torch.Generator | None = None,
    root_noise: torch.Tensor | None = None,
    gumbel: torch.Tensor | None = None,
    host_sync: bool | None = None,
    steps: Steps = EAGER,
    policy: Policy | None = None,
    inputs: SearchInputs | None = None,
) -> SearchResult:
    """Run ``config.sims`` simulations of batched MCTS from every position of ``state``.

    Args:
        state: ``[B]`` positions on one device; finished games are allowed (no-op).
        evaluate_fn: ``boards int8 [M, 6, 7] -> (logits [M, 7], value [M])``,
            the value from the view of each board's side to move.
        config: :class:`MCTSConfig` (default: 32 sims, no noise).
        generator: draws the root Dirichlet noise when ``dirichlet_eps > 0``
            and ``root_noise`` is not given.
        root_noise: optional ``[B, 7] float32`` noise distributions (e.g. from
            per-game streams), mixed in with weight ``dirichlet_eps`` (``inputs.noise``).
        gumbel: ``config.search == "gumbel"``: optional ``[B, 7]`` Gumbel(0, 1)
            noise of the root's action sampling (None: no noise, the greedy agent;
            ``inputs.gumbel``).
        host_sync: whether the loop may read device values on the host (see
            :class:`_Search`); None: yes, unless ``steps`` is compiled (stopping early
            and compacting save more than the reads cost, on the CPU and on an H100
            alike). The results are the same.
        steps: how the steps run: :data:`EAGER`, or a compiled search's
            (:class:`~.compiled.CompiledSearch` passes them; never with ``host_sync``).
        policy: the search's :class:`Policy` (default: ``config.search``'s, :data:`POLICIES`).
        inputs: the policy's :class:`SearchInputs` (``root_noise`` and ``gumbel`` fill theirs).

    Returns:
        :class:`SearchResult`: root ``visit_counts [B, 7] int32`` summing to
        ``sims`` for live games, ``root_value [B] float32`` (mean over the
        root's ``sims + 1`` visits, side to move's view), the tree, and the policy's
        ``action_weights [B, 7]`` and ``action [B]``.
    """
    cfg = config or MCTSConfig()
    policy = policy or POLICIES[cfg.search]
    inputs = inputs or SearchInputs()
    if root_noise is not None:
        inputs = inputs._replace(noise=root_noise)
    if gumbel is not None:
        inputs = inputs._replace(gumbel=gumbel)
    return _loop(state, evaluate_fn, cfg, host_sync, steps, policy,
                 policy.prepare(state, cfg, inputs, generator))  # fmt: skip


def _check_shape(name: str, noise: torch.Tensor, batch: int) -> None:
    if noise.shape != (batch, WIDTH):
        raise ValueError(f"{name} must be [B, 7] = [{batch}, 7], got {tuple(noise.shape)}")


def _loop(state, evaluate_fn, cfg, host_sync, steps: Steps, policy: Policy, inputs):
    """The one search loop, for any policy: start, ``sims`` simulations, finish."""
    dev = state.device
    if host_sync is None:  # the eager search's faster way on the CPU and on an H100 alike
        host_sync = not steps.compiled
    if host_sync and steps.compiled:
        raise ValueError("a compiled search runs without host synchronisation (host_sync=False)")
    t = _Search(state, cfg, host_sync)
    root, legal, live = steps.start(t, state, evaluate_fn, policy, inputs)
    if steps.compiled:  # one graph for every simulation (copies: a view's offset is compiled in)
        sims = torch.arange(t.N, device=dev)
        bounds = torch.tensor([descent_bound(s) for s in range(1, t.N)] or [0])
        for sim in range(1, t.N):
            steps.simulate(t, policy, root, evaluate_fn, sims[sim].clone(),
                           bounds[sim - 1].clone())  # fmt: skip
    else:
        for sim in range(1, t.N):
            bound = NUM_CELLS if host_sync else descent_bound(sim)
            steps.simulate(t, policy, root, evaluate_fn, sim, bound)
    counts, root_value, weights, action = steps.finish(t, policy, root, inputs, legal, live)
    return SearchResult(counts, root_value, t.tree(), weights, action)


class MCTSPlayer:
    """A :class:`~.players.Player` that searches before every move.

    Args:
        evaluate_fn: an ``evaluate_fn`` or an ``nn.Module`` (wrapped by
            :func:`~.inference.torch_evaluate_fn` on ``device``).
        config: :class:`MCTSConfig` (no root noise by default: evaluation play).
        temperature: 0 (default) plays the most visited column (ties -> lowest);
            > 0 samples proportionally to ``visits ** (1 / temperature)`` (PUCT; Gumbel
            search plays its survivor).
    """

    def __init__(
        self,
        evaluate_fn: EvaluateFn | torch.nn.Module,
        config: MCTSConfig | None = None,
        temperature: float = 0.0,
        device: torch.device | str | None = None,
    ):
        if isinstance(evaluate_fn, torch.nn.Module):
            evaluate_fn = torch_evaluate_fn(evaluate_fn, device)
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        self.evaluate_fn = evaluate_fn
        self.config = config or MCTSConfig()
        self.temperature = temperature

    def act(self, state: State, generator: torch.Generator | None = None) -> torch.Tensor:
        """``[B] int64`` 0-based columns for unfinished games."""
        policy = POLICIES[self.config.search].at(self.temperature, generator)
        return search(state, self.evaluate_fn, self.config, generator, policy=policy).action


def chosen_move(result: SearchResult, legal: torch.Tensor | None = None) -> torch.Tensor:
    """``[B] int64``: the move a search result plays (its policy's choice): the one rule of
    the agents that play (:class:`MCTSPlayer`, the play command's analysis, evaluation)."""
    return result.action
