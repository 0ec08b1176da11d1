"""A search's settings (:class:`MCTSConfig`, wherever one runs), how it may be compiled and
which library evaluates its network."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..board import WIDTH
from . import check, is_int

BACKENDS = ("auto", "torch", "onnxruntime")

COMPILE = ("auto", "on", "off", "eager", "aot_eager")
"""The ``node.compile`` setting: ``on`` compiles with inductor (fused generated kernels, for
long runs: the first compile on a machine takes minutes, later runs load inductor's cache),
``off`` never, ``auto`` (the default) never either: no cold compile on a run's critical path
(on an H100 the eager host-sync search ran at once where the compile kept the GPU idle for
minutes; on the CPU a whole default generation measured 2x slower compiled: docs/gpu.md,
docs/benchmarks.md). ``eager`` and ``aot_eager`` trace the same graphs without generating
code (torch.compile's debugging backends: every graph break or recompilation shows, in
seconds; no speed-up)."""


SEARCHES = ("puct", "gumbel")


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
    """``puct`` (AlphaZero) or ``gumbel`` (Gumbel AlphaZero, :mod:`..search.gumbel`)."""
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
