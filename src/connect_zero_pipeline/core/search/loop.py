"""The one search loop, for any policy (:func:`run_loop`: :func:`start`, ``sims`` times
:func:`simulate`, :func:`finish`), the entry point :func:`search`, and
:class:`MCTSPlayer`, the agent that searches before every move. A compiled search
(:mod:`.compiled`) runs the same three steps compiled (:class:`Steps`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

from ..bitboard import State
from ..board import NUM_CELLS
from ..config.search import MCTSConfig
from ..inference import EvaluateFn, torch_evaluate_fn
from .base import SearchInputs, SearchResult, descent_bound
from .policies import POLICIES, Policy
from .tree import SearchTree, expand_root, open_root


def start(t: SearchTree, state: State, evaluate_fn: EvaluateFn, policy: Policy,
           inputs: SearchInputs, cfg: MCTSConfig):  # fmt: skip
    """The root, expanded, with the policy's set-up: ``(root, legal [B, 7], live [B])``."""
    legal, live = expand_root(t, state, evaluate_fn)
    root = policy.root(t, legal, live, inputs, cfg)
    open_root(t, legal, live)
    return root, legal, live


def simulate(t: SearchTree, policy: Policy, root, evaluate_fn: EvaluateFn, sim, bound,
             cfg: MCTSConfig):  # fmt: skip
    """Simulation ``sim`` (an int, or a 0-d device tensor in a compiled search) for every
    game: select with the policy's rule (at most ``bound`` levels without host reads: an
    int, or a 0-d CPU tensor in a compiled search), expand, backup."""
    cur, a, nxt, path, depth = t.select(policy.rule(t, root, cfg), sim, bound)
    leaf = t.expand(sim, evaluate_fn, cur, a, nxt)
    t.backup(leaf, path, depth)


def finish(t: SearchTree, policy: Policy, root, inputs: SearchInputs, legal: torch.Tensor,
            live: torch.Tensor, cfg: MCTSConfig):  # fmt: skip
    """``(visit_counts [B, 7] int32, root_value [B], action_weights [B, 7], action [B])``."""
    visits, _ = t.root_edges()
    counts = visits * legal  # (B, 7)
    weights, action = policy.output(t, root, legal, counts, inputs, cfg)
    return counts.round().to(torch.int32), t.root_value(live), weights, action


class Steps(NamedTuple):
    """The three steps a search is made of (:func:`start`, :func:`simulate`,
    :func:`finish`), as they run: :data:`EAGER` calls them, a compiled search
    (:mod:`.compiled`) passes their compiled forms."""

    start: Callable
    simulate: Callable
    finish: Callable
    compiled: bool = False
    """``sim`` as a device tensor and the descent's bound as a CPU tensor, so that one
    simulation graph serves every simulation (the descent a rolled loop); implies
    ``host_sync=False``."""


EAGER = Steps(start, simulate, finish)


def search(
    state: State,
    evaluate_fn: EvaluateFn,
    config: MCTSConfig | None = None,
    generator: torch.Generator | None = None,
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
            and ``inputs.noise`` is not given.
        host_sync: whether the loop may read device values on the host (see
            :class:`SearchTree`); None: yes, unless ``steps`` is compiled (stopping early
            and compacting save more than the reads cost, on the CPU and on an H100
            alike). The results are the same.
        steps: how the steps run: :data:`EAGER`, or a compiled search's
            (:class:`~.compiled.CompiledSearch` passes them; never with ``host_sync``).
        policy: the search's :class:`Policy` (default: ``config.search``'s, :data:`POLICIES`).
        inputs: the policy's :class:`SearchInputs`: ``noise``, ``[B, 7] float32`` root noise
            distributions (e.g. from per-game streams) mixed in with weight
            ``dirichlet_eps``; ``gumbel`` (``config.search == "gumbel"``), ``[B, 7]``
            Gumbel(0, 1) noise of the root's action sampling (None: no noise, the greedy
            agent); ...

    Returns:
        :class:`SearchResult`: root ``visit_counts [B, 7] int32`` summing to
        ``sims`` for live games, ``root_value [B] float32`` (mean over the
        root's ``sims + 1`` visits, side to move's view), the tree, and the policy's
        ``action_weights [B, 7]`` and ``action [B]``.
    """
    cfg = config or MCTSConfig()
    policy = policy or POLICIES[cfg.search]
    inputs = inputs or SearchInputs()
    return run_loop(state, evaluate_fn, cfg, host_sync, steps, policy,
                 policy.prepare(state, cfg, inputs, generator))  # fmt: skip


def run_loop(state, evaluate_fn, cfg, host_sync, steps: Steps, policy: Policy, inputs):
    """The one search loop, for any policy: start, ``sims`` simulations, finish."""
    dev = state.device
    if host_sync is None:  # the eager search's faster way on the CPU and on an H100 alike
        host_sync = not steps.compiled
    if host_sync and steps.compiled:
        raise ValueError("a compiled search runs without host synchronisation (host_sync=False)")
    t = SearchTree(state, cfg, host_sync)
    root, legal, live = steps.start(t, state, evaluate_fn, policy, inputs, cfg)
    if steps.compiled:  # one graph for every simulation (copies: a view's offset is compiled in)
        sims = torch.arange(t.N, device=dev)
        bounds = torch.tensor([descent_bound(s) for s in range(1, t.N)] or [0])
        for sim in range(1, t.N):
            steps.simulate(t, policy, root, evaluate_fn, sims[sim].clone(),
                           bounds[sim - 1].clone(), cfg)  # fmt: skip
    else:
        for sim in range(1, t.N):
            bound = NUM_CELLS if host_sync else descent_bound(sim)
            steps.simulate(t, policy, root, evaluate_fn, sim, bound, cfg)
    counts, root_value, weights, action = steps.finish(t, policy, root, inputs, legal, live,
                                                       cfg)  # fmt: skip
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
