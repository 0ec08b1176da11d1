"""``bench selfplay``: the shape of one self-play move on any device.

A move is what every self-play step does for ``B`` games at once: one Gumbel
search of ``sims`` simulations (the default recipe's search) from ``B``
self-play-like positions, then the chosen moves are played. For each ``B`` and
``sims``, both ways the search can run (:func:`~..core.mcts.search`'s
``host_sync``):

- ``host_sync=True``: the host reads device values inside the loop to stop the
  descent early and evaluate only the leaves that need the network (the CPU's
  default, and the only way before the search was restructured);
- ``host_sync=False``: a host-known number of levels, every leaf evaluated
  (the default off the CPU).

Figures per ``(B, sims, host_sync)``, from one timed move after a profiled
warm-up move (a move at B = 16384 takes a minute on two cores):
``positions_per_s`` (games moved per second), ``evals_per_s`` (boards through the
network per second), ``host_syncs_per_move`` and ``aten_ops_per_move`` (counted with
``torch.profiler``: the calls of ``aten::item``, ``aten::is_nonzero``,
``aten::_local_scalar_dense`` and ``aten::nonzero``, each a device-to-host
synchronisation on CUDA; and every ``aten::`` op, a proxy for kernel launches),
and ``bytes_per_slot`` (peak CUDA memory of the move per game on a GPU, the
search tree's tensors per game on the CPU).

Torch runs the recipe's one thread on the CPU. The network is ``tiny``, so that
``B = 16384`` stays within minutes on two cores; ``--model`` names another preset. ``--quick``: ``B`` in 32 and 128,
8 simulations.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import torch

from ..core.bitboard import play
from ..core.config import resolve_device
from ..core.inference import torch_evaluate_fn
from ..core.mcts import MCTSConfig, search
from ..core.models import build_model
from ..core.selfplay import DEFAULT_NUM_THREADS
from . import figure
from .mcts import _roots

SYNC_OPS = ("aten::item", "aten::is_nonzero", "aten::_local_scalar_dense", "aten::nonzero")
"""Calls that read a device value on the host: each is a synchronisation on CUDA."""


def count_ops(fn) -> tuple[int, int]:
    """``(host syncs, aten ops)`` of one call of ``fn()`` (torch.profiler, on the CPU)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    events = prof.key_averages()
    syncs = sum(e.count for e in events if e.key in SYNC_OPS)
    return syncs, sum(e.count for e in events if e.key.startswith("aten::"))


def run(args) -> Iterator[dict]:
    quick = bool(getattr(args, "quick", False))
    device = resolve_device("auto")
    sizes = (32, 128) if quick else (512, 4096, 16384)
    sims_list = (8,) if quick else (16, 64)
    preset = getattr(args, "model", None) or "tiny"
    if device.type == "cpu":
        torch.set_num_threads(DEFAULT_NUM_THREADS)  # as self_play runs the recipe
    torch.manual_seed(0)
    model = build_model(preset).eval().to(device)
    network = torch_evaluate_fn(model, device)
    evals = [0]

    def evaluate_fn(boards):
        evals[0] += boards.shape[0]
        return network(boards)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()

    for batch in sizes:
        roots = _roots(batch, 10, seed=batch)
        roots = type(roots)(*(x.to(device) for x in roots))
        for sims in sims_list:
            cfg = MCTSConfig(sims=sims, search="gumbel")
            for host_sync in (True, False):

                def move(roots=roots, cfg=cfg, host_sync=host_sync):
                    result = search(roots, evaluate_fn, cfg, host_sync=host_sync)
                    return play(roots, result.action, validate=False), result

                syncs, ops = count_ops(move)  # also the warm-up: allocator, kernels
                sync()
                evals[0] = 0
                if device.type == "cuda":
                    torch.cuda.reset_peak_memory_stats()
                    before = torch.cuda.memory_allocated()
                start = time.perf_counter()
                _, result = move()
                sync()
                seconds = time.perf_counter() - start
                evaluated = evals[0]
                if device.type == "cuda":
                    per_slot = (torch.cuda.max_memory_allocated() - before) / batch
                else:
                    tree = result.tree
                    per_slot = sum(t.nbytes for t in tree[:-1]) / batch
                extra = {"batch": batch, "sims": sims, "host_sync": host_sync,
                         "device": device.type, "model": preset}  # fmt: skip
                yield figure("selfplay", "positions_per_s", batch / seconds, unit="1/s", **extra)
                yield figure("selfplay", "evals_per_s", evaluated / seconds, unit="1/s", **extra)
                yield figure("selfplay", "host_syncs_per_move", syncs, **extra)
                yield figure("selfplay", "aten_ops_per_move", ops, **extra)
                yield figure("selfplay", "bytes_per_slot", per_slot, unit="B", **extra)
