"""``bench selfplay``: the shape of one self-play move on any device, eager and compiled.

A move is what every self-play step does for ``B`` games at once: one Gumbel
search of ``sims`` simulations (the default recipe's search) from ``B``
self-play-like positions, then the chosen moves are played. For each ``B`` and
``sims``, the three ways the search can run (``"way"`` in each line):

- ``host_sync`` (``host_sync: true, compiled: false``): the host reads device values
  inside the loop to stop the descent early and evaluate only the leaves that need the
  network (the CPU's default);
- ``device`` (``host_sync: false, compiled: false``): a host-known number of levels,
  every leaf evaluated, eager ops (the default off the CPU without compile);
- ``compiled`` (``compiled: true``): the same device path through
  :class:`~..core.search.compiled.CompiledSearch` (``--compile``: the ``torch.compile`` backend,
  ``inductor`` by default; ``off`` skips these cells). On CUDA each move is then one
  CUDA graph replay.

Figures per cell, from one timed move after a warm-up move (a move at B = 16384
takes a minute on two cores): ``positions_per_s`` (games moved per second),
``evals_per_s`` (boards through the network per second), ``host_syncs_per_move`` (on
CUDA torch's own count of synchronising calls, ``torch.cuda.set_sync_debug_mode``; on the
CPU, a proxy: the calls of ``aten::_local_scalar_dense``, what ``item``, ``bool`` and
``int`` of a tensor call, and ``aten::nonzero``, each a synchronisation on CUDA for a device
tensor; the compiled descent's loop counter, a CPU tensor, is counted there too), and
``aten_ops_per_move`` (``torch.profiler``: every ``aten::`` op, a proxy for kernel
launches), both on a move after a warm-up move, and ``bytes_per_slot`` (peak CUDA memory of the move
per game on a GPU, the search tree's tensors per game on the CPU).

Compiled cells add:

- ``graph_breaks``: torch._dynamo's graph-break counter over the cell (0: every step is
  one graph; ``fullgraph=True`` would have raised otherwise);
- ``graph_calls_per_move``: compiled-graph invocations of the host per move (step calls;
  on CUDA, CUDA graph replays);
- ``kernels_per_move``: what the device runs per move after fusion: on the CPU the
  calls of inductor's generated kernels (profiled with ``cpp.enable_kernel_profile``)
  plus every ``aten::`` op still called (convolutions, matmuls and the eager glue), so it
  is comparable with ``aten_ops_per_move``; on CUDA the kernels the profiler sees;
- ``compile_s``: the first move's wall time (compiling every graph; with inductor's
  on-disk cache warm, loading them);
- ``recompiles``: graphs compiled by the timed moves (0: no recompilation per move).

Torch runs the recipe's one thread on the CPU. The network is ``tiny``, so that
``B = 16384`` stays within minutes on two cores; ``--model`` names another preset.
``--quick``: ``B`` in 32 and 128, 8 simulations. ``--sizes`` and ``--sims`` override
the grid (``scripts/gpu_check.sh``: B up to 65,536), ``--ways`` picks the ways
(``gpu_check`` runs the eager ones first and the compiled one last).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator

import click
import torch

from ..core.bitboard import play, random_states
from ..core.config.search import MCTSConfig
from ..core.device import resolve_device, use_tensor_cores
from ..core.inference import torch_evaluate_fn
from ..core.models import build_model
from ..core.search import CompiledSearch, SearchInputs, network, search
from ..core.selfplay import DEFAULT_NUM_THREADS
from . import figure

SYNC_OPS = ("aten::_local_scalar_dense", "aten::nonzero")
"""Calls that read a device value on the host: each is a synchronisation on CUDA (``item``,
``is_nonzero`` and ``bool`` all end in ``_local_scalar_dense``: counted once)."""
WAYS = ("host_sync", "device", "compiled")
KERNEL_MARKS = ("cpp_fused", "triton_")
"""Profiler event names of inductor's generated kernels (CPU, CUDA)."""

OPTIONS = [
    click.Option(["--model"], show_default="tiny", help="The network preset."),
    click.Option(["--sizes"], show_default="by --quick", help="Batch sizes, e.g. 512,4096."),
    click.Option(["--sims"], show_default="by --quick", help="Simulation counts, e.g. 16,64."),
    click.Option(
        ["--compile"],
        default="inductor",
        show_default=True,
        help="The compiled "
        "cells' torch.compile backend (eager or aot_eager trace only; off skips them).",
    ),
    click.Option(["--ways"], show_default="all three", help="Which ways, e.g. host_sync,device."),
]
"""``bench selfplay``'s options besides ``--quick``."""


def count_ops(fn, cuda: bool = False) -> tuple[int, int]:
    """``(host syncs, aten ops)`` of one call of ``fn()`` (:func:`_profile`)."""
    return _profile(fn, cuda)[:2]


def _profile(fn, cuda: bool = False) -> tuple[int, int, int]:
    """``(host syncs, aten ops, kernels)`` of one call of ``fn()``: on CUDA the syncs are
    torch's own count of synchronising calls (``set_sync_debug_mode``) and the kernels the
    CUDA kernels; on the CPU the syncs are the calls of :data:`SYNC_OPS` (reads that would
    synchronise on CUDA, and reads of CPU tensors such as a compiled descent's loop counter)
    and the kernels generated-kernel calls plus aten ops."""
    from torch.profiler import ProfilerActivity, profile  # noqa: PLC0415 (torch.profiler: only for a profile)

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof, warnings.catch_warnings(record=True) as seen:
        if cuda:
            warnings.simplefilter("always")
            torch.cuda.synchronize()
            torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            if cuda:
                torch.cuda.set_sync_debug_mode("default")
                torch.cuda.synchronize()
    events = prof.key_averages()
    aten = sum(e.count for e in events if e.key.startswith("aten::"))
    if cuda:
        syncs = sum("synchroniz" in str(w.message) for w in seen)
        kernels = sum(e.count for e in events if str(e.device_type).endswith("CUDA"))
    else:
        syncs = sum(e.count for e in events if e.key in SYNC_OPS)
        kernels = aten + sum(e.count for e in events if any(m in e.key for m in KERNEL_MARKS))
    return syncs, aten, kernels


def _sizes(args, quick: bool, name: str, quick_default, default) -> tuple[int, ...]:
    text = getattr(args, name, None)
    if text:
        return tuple(int(x) for x in str(text).split(","))
    return quick_default if quick else default


def run(args) -> Iterator[dict]:
    quick = bool(getattr(args, "quick", False))
    device = resolve_device("auto")
    sizes = _sizes(args, quick, "sizes", (32, 128), (512, 4096, 16384))
    sims_list = _sizes(args, quick, "sims", (8,), (16, 64))
    backend = getattr(args, "compile", None) or "inductor"
    preset = getattr(args, "model", None) or "tiny"
    if device.type == "cpu":
        torch.set_num_threads(DEFAULT_NUM_THREADS)  # as self_play runs the recipe
    use_tensor_cores([device])  # as a run's process on CUDA (core/device.py)
    torch.manual_seed(0)
    model = build_model(preset).eval().to(device)
    ways = [("host_sync", True), ("device", False)] + ([("compiled", False)] * (backend != "off"))
    if getattr(args, "ways", None):
        wanted = str(args.ways).split(",")
        unknown = sorted(set(wanted) - set(WAYS))
        if unknown:
            raise click.BadParameter(f"{', '.join(unknown)}: the ways are {', '.join(WAYS)}",
                                     param_hint="--ways")  # fmt: skip
        ways = [w for w in ways if w[0] in wanted]
    for batch in sizes:
        roots = random_states(batch, 10, seed=batch)
        roots = type(roots)(*(x.to(device) for x in roots))
        for sims in sims_list:
            cfg = MCTSConfig(sims=sims, search="gumbel")
            for way, host_sync in ways:
                extra = {"batch": batch, "sims": sims, "host_sync": host_sync,
                         "compiled": way == "compiled", "way": way, "device": device.type,
                         "model": preset}  # fmt: skip
                if way == "compiled":
                    extra["backend"] = backend
                    yield from _compiled_cell(model, roots, cfg, backend, extra)
                else:
                    yield from _eager_cell(model, roots, cfg, host_sync, extra)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _timed(move, device: torch.device, batch: int):
    """``(seconds, bytes per slot, result)`` of one move."""
    _sync(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    start = time.perf_counter()
    _, result = move()
    _sync(device)
    seconds = time.perf_counter() - start
    if device.type == "cuda":
        per_slot = (torch.cuda.max_memory_allocated() - before) / batch
    else:
        per_slot = sum(t.nbytes for t in result.tree[:-1]) / batch
    return seconds, per_slot, result


def _eager_cell(model, roots, cfg: MCTSConfig, host_sync: bool, extra: dict) -> Iterator[dict]:
    device, batch = roots.device, roots.batch_size
    network_fn = torch_evaluate_fn(model, device)
    evals = [0]

    def evaluate_fn(boards):
        evals[0] += boards.shape[0]
        return network_fn(boards)

    def move():
        result = search(roots, evaluate_fn, cfg, host_sync=host_sync)
        return play(roots, result.action, validate=False), result

    count_ops(move, device.type == "cuda")  # the warm-up: allocator, kernels, cached tables
    syncs, ops = count_ops(move, device.type == "cuda")
    evals[0] = 0
    seconds, per_slot, _ = _timed(move, device, batch)
    yield figure("selfplay", "positions_per_s", batch / seconds, unit="1/s", **extra)
    yield figure("selfplay", "evals_per_s", evals[0] / seconds, unit="1/s", **extra)
    yield figure("selfplay", "host_syncs_per_move", syncs, **extra)
    yield figure("selfplay", "aten_ops_per_move", ops, **extra)
    yield figure("selfplay", "bytes_per_slot", per_slot, unit="B", **extra)


def _compiled_cell(model, roots, cfg: MCTSConfig, backend: str, extra: dict) -> Iterator[dict]:
    import torch._inductor.config  # noqa: PLC0415 (torch._inductor: seconds, only when compiling)
    from torch._dynamo.utils import counters  # noqa: PLC0415 (torch._dynamo's counters, only when compiling)

    device, batch = roots.device, roots.batch_size
    cuda = device.type == "cuda"
    evaluate_fn = network(model, device)
    gumbel = torch.zeros(batch, 7, device=device)
    program = CompiledSearch(cfg, backend)  # the graphs themselves are compiled once a process
    uncaptured = CompiledSearch(cfg, backend, cuda_graph=False)

    def move(search_fn=program):
        result = search_fn(roots, evaluate_fn, inputs=SearchInputs(gumbel=gumbel))
        return play(roots, result.action, validate=False), result

    # Inductor's CPU kernels report themselves to the profiler only when built to.
    patch = torch._inductor.config.patch({"cpp.enable_kernel_profile": not cuda})
    with patch:
        breaks = sum(counters["graph_break"].values())
        # The first move compiles (and on CUDA captures): its peak is the move's memory
        # (a replay allocates nothing new).
        compile_s, per_slot, _ = _timed(move, device, batch)
        graphs = counters["stats"]["unique_graphs"]
        calls, replays = program.counters.graph_calls, program.counters.replays
        seconds, _, _ = _timed(move, device, batch)
        per_move = (
            program.counters.replays - replays if cuda else program.counters.graph_calls - calls
        )
        if cuda:
            move(uncaptured)  # compiled already; warms the uncaptured path's allocations
        syncs, ops, kernels = _profile(lambda: move(uncaptured), cuda)
        recompiles = counters["stats"]["unique_graphs"] - graphs
        breaks = sum(counters["graph_break"].values()) - breaks
    evals = batch * (cfg.sims + 1)  # the device path evaluates every game at every node
    yield figure("selfplay", "positions_per_s", batch / seconds, unit="1/s", **extra)
    yield figure("selfplay", "evals_per_s", evals / seconds, unit="1/s", **extra)
    yield figure("selfplay", "host_syncs_per_move", syncs, **extra)
    yield figure("selfplay", "aten_ops_per_move", ops, **extra)
    yield figure("selfplay", "bytes_per_slot", per_slot, unit="B", **extra)
    yield figure("selfplay", "graph_breaks", breaks, **extra)
    yield figure("selfplay", "graph_calls_per_move", per_move, **extra)
    yield figure("selfplay", "kernels_per_move", kernels, **extra)
    yield figure("selfplay", "compile_s", compile_s, unit="s", **extra)
    yield figure("selfplay", "recompiles", recompiles, **extra)
