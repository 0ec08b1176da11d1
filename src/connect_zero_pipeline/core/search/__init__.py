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

The slow per-node reference with the same rules is :mod:`.reference`.

The shape is mctx's: one loop (:func:`.loop.run_loop`: start, ``sims`` simulations, finish) that
knows no policy, and policies as objects (:class:`.policies.Policy`): each prepares its inputs
(:class:`.base.SearchInputs`: its noise, given), fixes what it needs at the root, gives the
loop its selection rule and makes the one output every search returns
(:class:`.base.SearchResult`: the move, the action weights, the tree). :class:`.policies.PUCT`
(AlphaZero: root Dirichlet noise, PUCT, the visits) and :class:`.policies.Gumbel` (Gumbel-Top-k at
the root, Sequential Halving, the improved policy) are :data:`.policies.POLICIES`; :func:`.loop.search`
takes ``config.search``'s or any other (``tests/core/test_mcts.py`` adds a third there). A policy
reads and writes the tree only through :class:`.tree.SearchTree`'s methods (a node's prior,
visits and value, the root's edges and prior, whether a node is a root or an edge legal), and
takes its settings as the loop hands them (``cfg``), never from the tree.

One simulation, for all games together, is three steps of :class:`.tree.SearchTree`:
``select`` descends with a selection rule passed in
as a function (:func:`.policies.puct_rule`, :func:`.policies.gumbel_rule`) until the chosen edge is
unexpanded or leads to a terminal node (a per-game "still descending" flag; at
most 42 levels), ``expand`` makes the new node with one network call for the
batch, ``backup`` adds the leaf's value to every node of the descent's path in one
scatter. ``host_sync`` (the eager search's default, on any device: measured faster on
the CPU and on an H100, docs/gpu.md) lets the loop read device values to stop early and
evaluate only the leaves that need the network; without it (a compiled search) the loop
has no host synchronisation and fixed shapes (see :class:`.tree.SearchTree`). Terminal leaves get their exact
value and no network call: draw 0, loss ``-win_value(ply, win_decay)`` for the
side to move (``-1`` when ``win_decay`` is 0; quicker wins are worth more otherwise:
:func:`.base.win_value`).

Finished games may share a batch with live ones: their search is a no-op and
returns zero visits and a zero root value. Mixed plies are fine.

Shapes: B games, S slots per tree, A = 7 actions, K gamma candidates.

The modules, as mctx splits the same concerns: :mod:`.base` (slots, sentinels, the search's
inputs and output, a level of the descent), :mod:`.tree` (:class:`.tree.SearchTree` and its
steps), :mod:`.noise` (root Dirichlet noise), :mod:`.policies` (PUCT, Gumbel and the
interface), :mod:`.gumbel` (Gumbel search's rules on rows), :mod:`.loop` (the loop,
:func:`.loop.search`, :class:`.loop.MCTSPlayer`), :mod:`.compiled` (the steps compiled) and
:mod:`.reference` (the slow oracle).
"""

from .base import SearchInputs, SearchResult, win_value
from .compiled import (
    CompiledSearch,
    compile_backend,
    compile_setting,
    compiled_search,
    network,
    use_cache,
)
from .gumbel import gumbel_from_uniforms
from .loop import MCTSPlayer, search
from .noise import dirichlet_from_uniforms, dirichlet_uniform_shape
from .policies import POLICIES, PUCT, Gumbel, Policy

__all__ = [
    "POLICIES",
    "PUCT",
    "CompiledSearch",
    "Gumbel",
    "MCTSPlayer",
    "Policy",
    "SearchInputs",
    "SearchResult",
    "compile_backend",
    "compile_setting",
    "compiled_search",
    "dirichlet_from_uniforms",
    "dirichlet_uniform_shape",
    "gumbel_from_uniforms",
    "network",
    "search",
    "use_cache",
    "win_value",
]
