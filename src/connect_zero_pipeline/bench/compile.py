"""``bench compile``: what compiling self-play's search costs at the recipe's shapes.

The recipe is the project's parameters (``conf/base`` and ``local``, or the env that
``KEDRO_ENV`` names: ``KEDRO_ENV=gpu`` for ``conf/gpu``): one process's batch (the slots
of one shard: ``num_games`` over the local workers, on the CPU one per core), the search
and the network preset. Two self-play moves run through the compiled search on this
machine's device: the first compiles every graph (or loads it from inductor's on-disk
cache), the second only runs. Figures: ``compile_s`` (first move minus second),
``first_move_s``, ``move_s``, ``graphs`` (compiled graphs) and ``graph_breaks``.
``--compile`` names another ``torch.compile`` backend (``eager``: the tracing alone).

Then whole self-play generations of the recipe as ``kedro run`` plays them (its workers
kept between generations, its backend), eager and compiled, side by side: two each, the
first compiled one paying its workers' compiles (``generation_s`` per ``compiled`` and
``generation``; ``--quick`` skips them). The CPU's ``compile: auto`` stays eager unless
these and ``bench selfplay`` measure the compiled search faster. Before them, a tiny
generation played eagerly (torch) and compiled: ``same_actions`` (1: the same games) and
``max_abs_diff`` of their float columns.

Cold and warm, as docs/benchmarks.md reports them::

    export TORCHINDUCTOR_CACHE_DIR=$(mktemp -d)   # an empty cache: cold
    python -m connect_zero_pipeline bench compile  # cold
    python -m connect_zero_pipeline bench compile  # the same cache: warm
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterator
from dataclasses import replace

import click
import torch

from ..core.bitboard import play, random_states
from ..core.config.selfplay import SEARCH, SelfPlayConfig
from ..core.device import resolve_device, use_tensor_cores
from ..core.models import build_model
from ..core.search import (
    SearchInputs,
    compile_backend,
    compile_setting,
    compiled_search,
    network,
)
from ..core.selfplay import DEFAULT_NUM_THREADS, self_play
from ..executors import local
from ..executors.dispatch import play_generation
from ..pipelines.structure import section
from . import figure

OPTIONS = [
    click.Option(
        ["--compile"],
        default=None,
        show_default="the recipe's, inductor",
        help="The torch.compile backend (eager or aot_eager trace only).",
    ),
]
"""``bench compile``'s options besides ``--quick``."""


def run(args) -> Iterator[dict]:
    from torch._dynamo.utils import counters  # noqa: PLC0415 (torch._dynamo's counters, only when compiling)

    selfplay, spec = section("selfplay"), section("model")
    device = resolve_device("auto")
    recipe_device = torch.device("cpu" if selfplay.node.device == "auto" else "cuda")
    batch = math.ceil(selfplay.num_games / selfplay.node.local_workers(recipe_device))
    backend = getattr(args, "compile", None) or compile_backend("on")
    if device.type == "cpu":
        torch.set_num_threads(selfplay.node.num_threads or DEFAULT_NUM_THREADS)
    use_tensor_cores([device])  # as a run's process on CUDA (core/device.py)
    torch.manual_seed(0)
    model = build_model(spec.config())
    evaluate_fn = network(model, device)
    program = compiled_search(selfplay.mcts, backend)
    roots = random_states(batch, 10, seed=0)
    roots = type(roots)(*(x.to(device) for x in roots))
    gumbel = torch.zeros(batch, 7, device=device) if selfplay.mcts.search == "gumbel" else None
    noise = None if gumbel is not None else torch.full((batch, 7), 1 / 7, device=device)

    def move() -> float:
        start = time.perf_counter()
        result = program(roots, evaluate_fn, SearchInputs(noise=noise, gumbel=gumbel))
        play(roots, result.visit_counts.argmax(1), validate=False)
        if device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - start

    graphs, breaks = counters["stats"]["unique_graphs"], sum(counters["graph_break"].values())
    first = move()
    graphs = counters["stats"]["unique_graphs"] - graphs
    second = move()
    extra = {"batch": batch, "sims": selfplay.mcts.sims, "search": selfplay.mcts.search,
             "model": spec.preset, "device": device.type, "backend": backend}  # fmt: skip
    yield figure("compile", "compile_s", first - second, unit="s", **extra)
    yield figure("compile", "first_move_s", first, unit="s", **extra)
    yield figure("compile", "move_s", second, unit="s", **extra)
    yield figure("compile", "graphs", graphs, **extra)
    yield figure("compile", "graph_breaks", sum(counters["graph_break"].values()) - breaks, **extra)
    if getattr(args, "quick", False):
        return
    yield from _same_games(backend, device)

    for compiled in (False, True):
        setting = compile_setting(backend) if compiled else "off"
        node = dataclasses.replace(selfplay.node, compile=setting)
        for generation in (1, 2):
            start = time.perf_counter()
            play_generation(selfplay, model, generation, node)
            seconds = time.perf_counter() - start
            yield figure("compile", "generation_s", seconds, unit="s", compiled=compiled,
                         generation=generation, num_games=selfplay.num_games,
                         workers=node.local_workers(device), **extra)  # fmt: skip
        local.close_pools()


def _same_games(backend: str, device: torch.device) -> Iterator[dict]:
    """A tiny generation (24 slots, 12 steps, 8 simulations, the ``tiny`` network) played
    eagerly (torch) and compiled: ``same_actions`` (1: every action, game and ply equal),
    ``max_abs_diff`` of the float columns (targets, values)."""
    torch.manual_seed(0)
    model = build_model("tiny")
    cfg = SelfPlayConfig(num_games=24, moves_per_gen=12, mcts=replace(SEARCH, sims=8))
    eager = self_play(cfg, model=model, device=device, compile="off", backend="torch")
    compiled = self_play(cfg, model=model, device=device, compile=compile_setting(backend))
    same = len(eager) == len(compiled) and all(
        eager[c].equals(compiled[c]) for c in ("game", "ply", "position", "action")
    )
    floats = [c for c in eager.columns if eager[c].dtype.kind == "f"]
    diff = float((eager[floats] - compiled[floats]).abs().max().max()) if same else float("nan")
    extra = {"rows": len(eager), "backend": backend, "device": device.type}
    yield figure("compile", "same_actions", float(same), **extra)
    yield figure("compile", "max_abs_diff", diff, **extra)
