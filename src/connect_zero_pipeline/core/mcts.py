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

One simulation, for all games together, is three steps of :class:`_Search`
(the shape of mctx's loop): ``select`` descends with a selection rule passed in
as a function (:func:`puct_rule`, :func:`gumbel_rule`) until the chosen edge is
unexpanded or leads to a terminal node (a per-game "still descending" flag; at
most 42 levels), ``expand`` makes the new node with one network call for the
batch, ``backup`` adds the leaf's value up to the root. ``host_sync`` (on the
CPU by default) lets the loop read device values to stop early and evaluate
only the leaves that need the network; without it the loop has no host
synchronisation and fixed shapes (see :class:`_Search`). Terminal leaves get their exact
value and no network call: draw 0, loss ``-win_value(ply, win_decay)`` for the
side to move (``-1`` when ``win_decay`` is 0; quicker wins are worth more otherwise).

Finished games may share a batch with live ones: their search is a no-op and
returns zero visits and a zero root value. Mixed plies are fine.

Shapes: B games, S slots per tree, A = 7 actions, K gamma candidates.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch

from . import gumbel as G
from .bitboard import (
    BOARD_MASK,
    NUM_CELLS,
    WIDTH,
    State,
    has_won,
    legal_mask,
    play,
    to_boards,
)
from .config import check, is_int
from .inference import EvaluateFn, torch_evaluate_fn
from .players import sample_move

ROOT_INDEX = 0
# Sentinel slots, as offsets from N (the number of real nodes); see the module docstring.
UNVISITED_OFFSET, ILLEGAL_OFFSET, TRASH_OFFSET = 0, 1, 2
NUM_SENTINELS = 3
_GAMMA_CANDIDATES = 6  # K: Marsaglia-Tsang draws per gamma variate (acceptance > 95% each)
SEARCHES = ("puct", "gumbel")
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


@dataclass(frozen=True)
class MCTSConfig:
    """Search hyperparameters. Validated on construction (``ValueError`` naming the field)."""

    sims: int = 32
    """Simulations per search (>= 1); each creates at most one node."""
    c_puct: float = 1.5
    """Exploration constant in ``Q + c_puct * P * sqrt(N_parent) / (1 + N_child)`` (> 0)."""
    dirichlet_alpha: float = 1.0
    """Concentration of the root Dirichlet noise over the legal moves (> 0)."""
    dirichlet_eps: float = 0.0
    """Weight of the root noise: ``P = (1 - eps) * P + eps * Dir(alpha)``; 0 (default) = off.
    PUCT only: Gumbel search explores through its Gumbel noise."""
    search: str = "puct"
    """``puct`` (AlphaZero) or ``gumbel`` (Gumbel AlphaZero, :mod:`.gumbel`)."""
    gumbel_num_actions: int = 7
    """Gumbel: actions sampled at the root (``m``; 7 considers every legal move)."""
    c_visit: float = 50.0
    """Gumbel: ``sigma(q) = (c_visit + max N) * c_scale * q`` (the paper's 50)."""
    c_scale: float = 1.0
    """Gumbel: see ``c_visit`` (the paper's 1)."""
    win_decay: float = 0.5
    """Terminal values: a win with ``n`` stones on the board is worth ``1 - win_decay *
    (n - 7) / 35`` (:func:`win_value`), so quicker wins and slower losses are preferred;
    in ``[0, 1)``, 0 = every win +1. Self-play's value targets use the same rule."""

    def __post_init__(self):
        check(is_int(self.sims) and self.sims >= 1, "sims", self.sims, "an integer >= 1")
        check(_positive(self.c_puct), "c_puct", self.c_puct, "a number > 0")
        check(_positive(self.dirichlet_alpha), "dirichlet_alpha", self.dirichlet_alpha,
              "a number > 0")  # fmt: skip
        check(_number(self.dirichlet_eps) and 0 <= self.dirichlet_eps <= 1, "dirichlet_eps",
              self.dirichlet_eps, "in [0, 1]")  # fmt: skip
        check(self.search in SEARCHES, "search", self.search, f"one of {SEARCHES}")
        check(is_int(self.gumbel_num_actions) and 1 <= self.gumbel_num_actions <= WIDTH,
              "gumbel_num_actions", self.gumbel_num_actions, "an integer in [1, 7]")  # fmt: skip
        check(_positive(self.c_visit), "c_visit", self.c_visit, "a number > 0")
        check(_positive(self.c_scale), "c_scale", self.c_scale, "a number > 0")
        check(_number(self.win_decay) and 0 <= self.win_decay < 1, "win_decay", self.win_decay,
              "a number in [0, 1)")  # fmt: skip


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _positive(v) -> bool:
    return _number(v) and v > 0


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


class SearchResult(NamedTuple):
    visit_counts: torch.Tensor  # [B, 7] int32, root children visits (sum = sims; 0 if finished)
    root_value: torch.Tensor  # [B] float32, mean root value, side to move's view (0 if finished)
    tree: Tree
    policy: torch.Tensor | None = None  # [B, 7] Gumbel: the improved policy (training target)
    action: torch.Tensor | None = None  # [B] int64 Gumbel: the move to play


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
    depth: int  # levels descended so far (0: every game is at its root)
    sim: int  # the simulation, 1..sims
    children: torch.Tensor  # [B, 7] flat child indices
    q: torch.Tensor  # [B, 7] children's mean values, node's view (-inf illegal, 0 unvisited)
    visits: torch.Tensor  # [B, 7] children's visit counts


SelectFn = Callable[[Level], torch.Tensor]
"""A selection rule: a :class:`Level` -> the ``[B] int64`` action of every game."""


class _Search:
    """The tensor tree of one batched search and its three steps (module docstring).

    ``host_sync``: the host may read device values inside the loop, to stop the
    descent as soon as every game has stopped and to evaluate only the leaves that
    need the network (compacted rows). Without it (the default off the CPU, where
    each read is a device-to-host synchronisation) the descent runs a bound the host
    knows, ``min(sim - 1, 42)`` levels (no node is deeper before simulation ``sim``),
    the backup as many, and every game's leaf is evaluated, the unneeded rows masked
    out: a fixed number of tensor ops of fixed shapes per simulation. Both give the
    same tree: extra levels re-select the edge a stopped game already chose, and extra
    backups land in TRASH.
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
        self.stats[:, N + ILLEGAL_OFFSET, 1] = float("-inf")
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
        self.ones = torch.ones(B, device=dev)

    def evaluate(self, slot: int, evaluate_fn: EvaluateFn, rows, position, mask, legal):
        """Priors and values of node ``slot`` for the games of ``rows [B] bool``."""
        if self.host_sync:
            idx = rows.nonzero().squeeze(1)  # (M,)
            if idx.numel():
                p, v = _evaluate(evaluate_fn, position[idx], mask[idx], legal[idx])
                self.prior[idx, slot], self.raw_value[idx, slot] = p, v
            return
        p, v = _evaluate(evaluate_fn, position, mask, legal)  # every game, then masked
        self.prior[:, slot] = torch.where(rows.unsqueeze(1), p, self.prior[:, slot])
        self.raw_value[:, slot] = torch.where(rows, v, self.raw_value[:, slot])

    def select(self, select_fn: SelectFn, sim: int):
        """Descend every game from its root until its edge is unexpanded or leads to a
        terminal node; a game that stopped re-selects the same edge at later levels.
        Returns ``(node [B], action [B], child [B], levels)``."""
        cur = self.base
        bound = NUM_CELLS if self.host_sync else min(sim - 1, NUM_CELLS)
        levels = 0  # depth of `cur` when every game has stopped
        while True:
            ch = self.children_f[cur]  # (B, 7) flat child indices
            st = self.stats_f[ch]  # (B, 7, 2)
            n_child, w_child = st[..., 0], st[..., 1]
            q = w_child / n_child.clamp(min=1.0)  # (B, 7); -inf for ILLEGAL, 0 for UNVISITED
            a = select_fn(Level(cur, levels, sim, ch, q, n_child))
            nxt = ch.gather(1, a.unsqueeze(1)).squeeze(1)  # (B,)
            go = self.expandable_f[nxt]  # (B,)
            if levels == bound or (self.host_sync and not bool(go.any())):
                return cur, a, nxt, levels
            cur = torch.where(go, nxt, cur)
            levels += 1

    def expand(self, sim: int, evaluate_fn: EvaluateFn, cur, a, nxt) -> torch.Tensor:
        """Unexpanded edges become node ``sim`` (other games write garbage into slot
        ``sim`` of their own tree, which nothing links to); returns each game's leaf."""
        expand = nxt == self.unvisited  # (B,)
        step = play(
            State(self.position.view(-1)[cur], self.mask.view(-1)[cur], self.ply_f[cur]),
            a,
            validate=False,
        )
        new_pos, new_mask = step.state.position, step.state.mask
        self.position[:, sim], self.mask[:, sim] = new_pos, new_mask
        self.parent[:, sim], self.action[:, sim] = cur, a
        new_legal = legal_mask(step.state)  # (B, 7)
        self.children[:, sim] = torch.where(
            new_legal, self.unvisited.unsqueeze(1), self.illegal.unsqueeze(1)
        )
        self.expandable[:, sim] = ~step.done
        self.ply[:, sim] = step.state.ply
        # exact: the side to move has lost (or drawn, 0)
        self.raw_value[:, sim] = -step.reward * win_value(self.ply[:, sim], self.cfg.win_decay)
        self.evaluate(sim, evaluate_fn, expand & ~step.done, new_pos, new_mask, new_legal)
        new = self.base + sim
        self.children_f.view(-1)[cur * WIDTH + a] = torch.where(expand, new, nxt)
        return torch.where(expand, new, nxt)

    def backup(self, leaf: torch.Tensor, levels: int) -> None:
        """From the leaf up through the root into TRASH; the sign flips at every level."""
        val = -self.raw_value_f[leaf]  # view of the player who moved into the leaf
        upd = (torch.stack([self.ones, val], 1), torch.stack([self.ones, -val], 1))  # (B, 2)
        node = leaf
        for level in range(levels + 2):
            self.stats_f.index_add_(0, node, upd[level & 1])
            node = self.parent_f[node]

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
        u = tree.prior_f[node].mul_(tree.stats_f[node, 0].sqrt_().mul_(c_puct).unsqueeze(1))
        return torch.addcdiv(level.q, u, level.visits + 1.0).argmax(1)

    return select


class GumbelRoot(NamedTuple):
    """What Gumbel search fixes at the root before the first simulation."""

    noise: torch.Tensor  # [B, 7] Gumbel(0, 1) (zeros: the greedy agent)
    logits: torch.Tensor  # [B, 7] the root's prior logits
    considered: torch.Tensor  # [B, 7] bool: the Gumbel-Top-k sample
    num_considered: torch.Tensor  # [B] int64
    schedule: torch.Tensor  # [m + 1, sims] Sequential Halving's visit schedule


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
        # At depth 0 every game is at its root; deeper, the host looks only if it may.
        if level.depth > 0 and not (tree.host_sync and bool(at_root.all())):
            logits = tree.prior_f[level.node].clamp_min(1e-30).log()  # (B, 7)
            node = G.NodeStats(logits, legal_c, q, level.visits, value)
            inner = G.interior_action(node, cfg.c_visit, cfg.c_scale)
            if tree.host_sync and not bool(at_root.any()):
                return inner
        stats = G.NodeStats(root.logits, legal_c, q, level.visits, value)
        scores = G.root_scores(root.noise, stats, cfg.c_visit, cfg.c_scale)
        needed = root.schedule[root.num_considered, level.sim - 1]  # (B,)
        picked = G.root_action(scores, root.considered, level.visits, needed)
        return picked if inner is None else torch.where(at_root, picked, inner)

    return select


def search(
    state: State,
    evaluate_fn: EvaluateFn,
    config: MCTSConfig | None = None,
    generator: torch.Generator | None = None,
    root_noise: torch.Tensor | None = None,
    gumbel: torch.Tensor | None = None,
    host_sync: bool | None = None,
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
            per-game streams), mixed in with weight ``dirichlet_eps``.
        gumbel: ``config.search == "gumbel"``: optional ``[B, 7]`` Gumbel(0, 1)
            noise of the root's action sampling (None: no noise, the greedy agent).
        host_sync: whether the loop may read device values on the host (see
            :class:`_Search`); None: on the CPU only, where a read costs nothing and
            stopping early and compacting save work. The results are the same.

    Returns:
        :class:`SearchResult`: root ``visit_counts [B, 7] int32`` summing to
        ``sims`` for live games, ``root_value [B] float32`` (mean over the
        root's ``sims + 1`` visits, side to move's view), and the tree; for
        Gumbel search also the improved ``policy [B, 7]`` and the ``action [B]``.
    """
    cfg = config or MCTSConfig()
    dev = state.device
    B = state.batch_size
    if host_sync is None:
        host_sync = dev.type == "cpu"
    t = _Search(state, cfg, host_sync)

    # Root: evaluate live games, add noise, expand. A finished root keeps TRASH children.
    t.position[:, ROOT_INDEX], t.mask[:, ROOT_INDEX] = state.position, state.mask
    t.ply[:, ROOT_INDEX] = state.ply
    finished = has_won(state.position ^ state.mask) | (state.mask == BOARD_MASK)  # (B,)
    live = ~finished
    legal = legal_mask(state) & live.unsqueeze(1)  # (B, 7)
    t.evaluate(ROOT_INDEX, evaluate_fn, live, state.position, state.mask, legal)
    root_prior = t.prior[:, ROOT_INDEX]
    if cfg.dirichlet_eps > 0 and cfg.search == "puct":
        noise = (
            root_noise
            if root_noise is not None
            else sample_dirichlet(legal, cfg.dirichlet_alpha, generator)
        )
        if noise.shape != (B, WIDTH):
            raise ValueError(f"root_noise must be [B, 7] = [{B}, 7], got {tuple(noise.shape)}")
        noise = noise.to(root_prior) * legal  # (B, 7)
        root_prior = (1 - cfg.dirichlet_eps) * root_prior + cfg.dirichlet_eps * noise
        t.prior[:, ROOT_INDEX] = root_prior
    t.children[:, ROOT_INDEX] = torch.where(
        legal, t.unvisited.unsqueeze(1), torch.where(live, t.illegal, t.trash).unsqueeze(1)
    )
    t.expandable[:, ROOT_INDEX] = live
    t.stats[:, ROOT_INDEX, 0] = 1.0  # the root's own evaluation counts as its first visit
    t.stats[:, ROOT_INDEX, 1] = -t.raw_value[:, ROOT_INDEX]
    root = None
    if cfg.search == "gumbel":
        g_noise = torch.zeros(B, WIDTH, device=dev) if gumbel is None else gumbel.to(root_prior)
        if g_noise.shape != (B, WIDTH):
            raise ValueError(f"gumbel must be [B, 7] = [{B}, 7], got {tuple(g_noise.shape)}")
        root_logits = root_prior.clamp_min(1e-30).log()  # (B, 7); softmax-invariant shift
        considered, num_considered = G.top_m(g_noise, root_logits, legal, cfg.gumbel_num_actions)
        schedule = G.schedule_table(cfg.gumbel_num_actions, cfg.sims, dev)  # (m + 1, sims)
        root = GumbelRoot(g_noise, root_logits, considered, num_considered, schedule)
        select_fn = gumbel_rule(t, root)
    else:
        select_fn = puct_rule(t)

    for sim in range(1, t.N):
        cur, a, nxt, levels = t.select(select_fn, sim)
        leaf = t.expand(sim, evaluate_fn, cur, a, nxt)
        t.backup(leaf, levels)

    root_children = t.children[:, ROOT_INDEX]  # (B, 7)
    counts = t.stats_f[root_children, 0] * legal  # (B, 7)
    root_value = torch.where(live, -t.stats[:, ROOT_INDEX, 1] / t.stats[:, ROOT_INDEX, 0], 0.0)
    if root is None:
        return SearchResult(counts.round().to(torch.int32), root_value, t.tree())
    w_root = t.stats_f[root_children, 1]  # (B, 7)
    q_root = torch.where(legal, w_root / counts.clamp(min=1.0), torch.zeros_like(w_root))
    node = G.NodeStats(root.logits, legal, q_root, counts, t.raw_value[:, ROOT_INDEX])
    policy = G.improved_policy(node, cfg.c_visit, cfg.c_scale)
    scores = G.root_scores(root.noise, node, cfg.c_visit, cfg.c_scale)
    action = G.final_action(scores, root.considered, counts)
    return SearchResult(counts.round().to(torch.int32), root_value, t.tree(), policy, action)


class MCTSPlayer:
    """A :class:`~.players.Player` that searches before every move.

    Args:
        evaluate_fn: an ``evaluate_fn`` or an ``nn.Module`` (wrapped by
            :func:`~.inference.torch_evaluate_fn` on ``device``).
        config: :class:`MCTSConfig` (no root noise by default: evaluation play).
        temperature: 0 (default) plays the most visited column (ties -> lowest);
            > 0 samples proportionally to ``visits ** (1 / temperature)``.
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
        result = search(state, self.evaluate_fn, self.config, generator)
        if result.action is not None:  # Gumbel search: its own (noise-free, greedy) choice
            return result.action
        visits = result.visit_counts.float()  # (B, 7)
        return sample_move(visits.log(), legal_mask(state), generator, self.temperature)
