"""Search policies, as mctx has them: what a search fixes at its root, its selection rule and
its output. :class:`Policy` is the interface the one loop (:mod:`.loop`) asks;
:class:`PUCT` (AlphaZero: root Dirichlet noise, PUCT, the visits) and :class:`Gumbel`
(Gumbel-Top-k at the root, Sequential Halving, the improved policy: :mod:`.gumbel`) are
:data:`POLICIES`, one constant object per ``MCTSConfig.search`` name.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from ..bitboard import State, has_won, legal_mask
from ..board import WIDTH
from ..config.search import MCTSConfig
from ..players import sample_move
from .base import Level, SearchInputs, SelectFn, check_shape
from .gumbel import (
    NodeStats,
    final_action,
    improved_policy,
    interior_action,
    root_action,
    root_scores,
    schedule_table,
    top_m,
)
from .noise import sample_dirichlet
from .tree import SearchTree


class Policy:
    """A search policy, as mctx has them: the one loop (:func:`run_loop`) asks it for

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

    def root(self, t: SearchTree, legal: torch.Tensor, live: torch.Tensor, inputs: SearchInputs,
             cfg: MCTSConfig):  # fmt: skip
        return None

    def rule(self, t: SearchTree, root, cfg: MCTSConfig) -> SelectFn:
        raise NotImplementedError

    def output(self, t: SearchTree, root, legal: torch.Tensor, counts: torch.Tensor,
               inputs: SearchInputs, cfg: MCTSConfig) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
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


def puct_rule(tree: SearchTree, c_puct: float) -> SelectFn:
    """AlphaZero's PUCT: ``argmax_a Q + c_puct * P * sqrt(N_node) / (1 + N_child)``
    (ties: the lowest column)."""

    def select(level: Level) -> torch.Tensor:
        node = level.node
        u = tree.prior_of(node) * (tree.visits_of(node).sqrt() * c_puct).unsqueeze(1)
        return torch.addcdiv(level.q, u, level.visits + 1.0).argmax(1)

    return select


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
        check_shape("root_noise", noise, state.batch_size)
        return inputs._replace(noise=noise)

    def root(self, t, legal, live, inputs, cfg):
        if inputs.noise is not None:  # mixed with weight dirichlet_eps
            t.mix_root_prior(inputs.noise, cfg.dirichlet_eps, legal)
        return None

    def rule(self, t, root, cfg):
        return puct_rule(t, cfg.c_puct)

    def at(self, temperature, generator=None):
        return PUCT(temperature, generator) if temperature else self

    def output(self, t, root, legal, counts, inputs, cfg):
        action = most_visited(counts, legal)
        if inputs.sample is not None:
            threshold = inputs.uniform.unsqueeze(1) * counts.sum(1, keepdim=True)  # (B, 1)
            sampled = (counts.cumsum(1) <= threshold).sum(1)
            action = torch.where(inputs.sample, sampled, action)
        elif self.temperature > 0:
            action = sample_move(counts.log(), legal, self.generator, self.temperature)
        return visit_weights(counts), action


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


def gumbel_root(t: SearchTree, legal: torch.Tensor, gumbel: torch.Tensor, schedule,
                num_actions: int) -> GumbelRoot:  # fmt: skip
    """What Gumbel search fixes at the root: its noise, logits and the Gumbel-Top-k sample
    of ``num_actions`` moves."""
    prior = t.root_prior()
    g_noise = gumbel.to(prior)
    root_logits = prior.clamp_min(1e-30).log()  # (B, 7); a softmax shift
    considered, num_considered = top_m(g_noise, root_logits, legal, num_actions)
    return GumbelRoot(g_noise, root_logits, considered, num_considered, schedule)


def gumbel_rule(tree: SearchTree, root: GumbelRoot, cfg: MCTSConfig) -> SelectFn:
    """Gumbel search (:mod:`.gumbel`): Sequential Halving at a game's root, the
    deterministic ``pi' - N / (1 + sum N)`` rule below it. A game that stopped at its
    root keeps choosing the same root edge at later levels."""

    def select(level: Level) -> torch.Tensor:
        legal_c = tree.legal_edges(level.children)  # (B, 7)
        q = torch.where(legal_c, level.q, torch.zeros_like(level.q))  # ILLEGAL's -inf out
        value = tree.value_of(level.node)  # (B,)
        at_root = tree.is_root(level.node)  # (B,)
        inner = None
        # At depth 0 every game is at its root; deeper (or at a depth the host does not know:
        # a rolled loop), the host looks only if it may.
        if level.depth != 0 and not (tree.host_sync and bool(at_root.all())):
            logits = tree.prior_of(level.node).clamp_min(1e-30).log()  # (B, 7)
            node = NodeStats(logits, legal_c, q, level.visits, value)
            inner = interior_action(node, cfg.c_visit, cfg.c_scale)
            if tree.host_sync and not bool(at_root.any()):
                return inner
        stats = NodeStats(root.logits, legal_c, q, level.visits, value)
        scores = root_scores(root.noise, stats, cfg.c_visit, cfg.c_scale)
        needed = _column(root.schedule, level.sim - 1)[root.num_considered]  # (B,)
        picked = root_action(scores, root.considered, level.visits, needed)
        return picked if inner is None else torch.where(at_root, picked, inner)

    return select


def gumbel_output(t: SearchTree, root: GumbelRoot, legal: torch.Tensor, counts: torch.Tensor,
                  cfg: MCTSConfig):  # fmt: skip
    """``(improved policy [B, 7], action [B])`` from the root's visits and values."""
    _, w_root = t.root_edges()  # (B, 7)
    q_root = torch.where(legal, w_root / counts.clamp(min=1.0), torch.zeros_like(w_root))
    node = NodeStats(root.logits, legal, q_root, counts, t.root_evaluation())
    policy = improved_policy(node, cfg.c_visit, cfg.c_scale)
    scores = root_scores(root.noise, node, cfg.c_visit, cfg.c_scale)
    return policy, final_action(scores, root.considered, counts)


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
        check_shape("gumbel", gumbel, state.batch_size)
        schedule = schedule_table(cfg.gumbel_num_actions, cfg.sims, state.device)
        return inputs._replace(gumbel=gumbel, schedule=schedule)  # schedule: (m + 1, sims)

    def root(self, t, legal, live, inputs, cfg):
        return gumbel_root(t, legal, inputs.gumbel, inputs.schedule, cfg.gumbel_num_actions)

    def rule(self, t, root, cfg):
        return gumbel_rule(t, root, cfg)

    def output(self, t, root, legal, counts, inputs, cfg):
        return gumbel_output(t, root, legal, counts, cfg)


POLICIES = {"puct": PUCT(), "gumbel": Gumbel()}
"""The policy of each name ``MCTSConfig.search`` takes, one constant object each. The names
are :data:`..config.search.SEARCHES`, which the configuration checks before torch is
imported (``tests/core/test_mcts.py`` checks that both name the same policies). A policy of
one's own needs no name: it is passed as an object (``search(policy=...)``,
``CompiledSearch(policy=...)``)."""
