"""The search's device path as a few compiled programs: ``torch.compile(fullgraph=True)``.

A search without host synchronisation (:func:`~.loop.search` with ``host_sync=False``)
is a fixed stream of tensor ops of fixed shapes: tens of thousands of tiny kernels a
move. :class:`CompiledSearch` runs its three steps (:data:`~.Steps`) compiled:

- ``start``: the root's network call, noise and Gumbel sample: one graph;
- ``simulate``: one whole simulation (select, expand with its network call, backup) per
  graph call. The simulation number is a device tensor and the descent one rolled loop
  (torch's ``while_loop``) whose bound is a CPU tensor, so one simulation graph serves
  every simulation of a search of any ``sims``;
- ``finish``: the root's visit counts, value, improved policy and move: one graph.

So a search compiles :data:`GRAPHS` graphs and a move is ``sims + 2`` graph calls. On CUDA the whole move is then captured once as a
CUDA graph (:class:`_Captured`) and each later move is one graph replay.

No recompilation per move, per generation or per shard: the compiled functions are made
once per process (:func:`_compiled`), the tree's tensors are graph inputs, and the
network is one module per architecture and device (:func:`network`) whose weights are
copied in place for each new model. Graph breaks are errors (``fullgraph=True``).

Inductor keeps what it compiled in an on-disk cache (:func:`use_cache`: the project's
``.cache/torch_compile`` by default, ``node.compile_cache``), so a later process on the same
machine loads the graphs instead of compiling them.

Every figure of what a move costs is counted here (:class:`Counters`): graph calls, graph
replays and the seconds spent compiling. ``bench selfplay`` and self-play's metrics read them.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import torch
from torch import nn

from ..bitboard import State
from ..config.search import COMPILE, MCTSConfig
from ..inference import EvaluateFn
from .base import SearchInputs, SearchResult
from .loop import Steps, finish, run_loop, simulate, start
from .policies import POLICIES, Policy

log = logging.getLogger(__name__)

GRAPHS = 3
"""Graphs one compiled search is made of: ``start``, ``simulate`` and ``finish``."""
RECOMPILE_LIMIT = 64
"""Graphs one compiled step may hold. The steps are compiled with ``dynamic=False``, so each
batch size is a graph of its own: a run's search uses a few, but a benchmark of many batch
sizes, or one process that plays several searches, needs more than torch's default (8).
Past it a step fails loudly instead of falling back to eager ops."""


CAPTURE_ERROR_MODE = "thread_local"
"""How a CUDA-graph capture treats CUDA calls made meanwhile: only this thread's unsafe ones
fail it (CUDA's ``cudaStreamCaptureModeThreadLocal``), so other threads of the process (an
overlapped run's scorecard) compute on as they do."""


def compile_backend(setting: str) -> str | None:
    """The ``torch.compile`` backend that ``node.compile`` (:data:`COMPILE`) means, or None
    for the eager search."""
    if setting not in COMPILE:
        raise ValueError(f"compile must be one of {COMPILE}, got {setting!r}")
    return {"on": "inductor", "off": None, "auto": None}.get(setting, setting)


def compile_setting(backend: str) -> str:
    """The ``node.compile`` value that compiles with ``backend`` (inverse of
    :func:`compile_backend` on CUDA)."""
    return "on" if backend == "inductor" else backend


@cache
def compiled_search(config: MCTSConfig, backend: str = "inductor") -> CompiledSearch:
    """The process's :class:`CompiledSearch` of ``config``: made once, so that every
    generation and shard of a process reuses its compiled graphs and captures."""
    return CompiledSearch(config, backend)


@dataclass
class Counters:
    """What the compiled searches of this process did (``bench selfplay`` reads them)."""

    graph_calls: int = 0
    """Compiled-graph invocations (each step call)."""
    replays: int = 0
    """CUDA graph replays (a captured move)."""
    moves: int = 0
    compile_seconds: float = 0.0
    """Wall time of the step calls that compiled a graph (or loaded it from the cache)."""
    graphs_compiled: int = 0


def use_cache(folder: str | os.PathLike | None) -> str:
    """Keep inductor's on-disk cache (its FX graphs and generated kernels; Triton's on CUDA)
    in ``folder`` from now on, created if missing; None keeps ``TORCHINDUCTOR_CACHE_DIR`` or
    torch's default (a temporary folder). Returns the folder in use."""
    if folder is not None:
        path = os.path.abspath(folder)
        os.makedirs(path, exist_ok=True)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = path  # the one setting inductor reads
    from torch._inductor.runtime.cache_dir_utils import cache_dir  # noqa: PLC0415 (torch._inductor: seconds, only when compiling)

    return cache_dir()


@cache
def _compiled(fn: Callable, backend: str, mode: str | None) -> Callable:
    """``fn`` compiled once per process: a new ``torch.compile`` wrapper per search would
    compile again."""
    return torch.compile(fn, fullgraph=True, dynamic=False, backend=backend, mode=mode)


def compiled_steps(backend: str = "inductor", counters: Counters | None = None) -> Steps:
    """:data:`~.Steps` compiled with ``backend`` (``inductor``; ``eager`` or
    ``aot_eager`` trace without generating code: the tests' graph-break check)."""
    counters = counters if counters is not None else Counters()
    fns = [_compiled(f, backend, None) for f in (start, simulate, finish)]

    from torch._dynamo.utils import counters as dynamo  # noqa: PLC0415 (torch._dynamo's counters, only when compiling)

    def counted(fn):
        def call(*args):
            counters.graph_calls += 1
            graphs, start = dynamo["stats"]["unique_graphs"], time.perf_counter()
            with torch._dynamo.config.patch(
                recompile_limit=RECOMPILE_LIMIT, fail_on_recompile_limit_hit=True
            ):
                out = fn(*args)
            if dynamo["stats"]["unique_graphs"] > graphs:  # this call compiled a graph
                counters.compile_seconds += time.perf_counter() - start
                counters.graphs_compiled += dynamo["stats"]["unique_graphs"] - graphs
            return out

        return call

    return Steps(*(counted(f) for f in fns), compiled=True)


class CompiledSearch:
    """:func:`~.loop.search` of one :class:`MCTSConfig` with compiled steps.

    Args:
        config: the search.
        backend: ``torch.compile``'s backend (``inductor`` generates fused kernels).
        cuda_graph: capture each ``(batch, network)`` move as a CUDA graph and replay it
            (None: on CUDA with ``inductor``).
        policy: the search's :class:`~.Policy` (default: ``config.search``'s).
    """

    def __init__(
        self, config: MCTSConfig, backend: str = "inductor", cuda_graph: bool | None = None,
        policy: Policy | None = None,
    ):  # fmt: skip
        self.config = config
        self.policy = policy or POLICIES[config.search]
        self.backend = backend
        self.cuda_graph = cuda_graph
        self.counters = Counters()
        self.steps = compiled_steps(backend, self.counters)
        self._captured: dict[tuple, _Captured] = {}
        self._shapes: set[tuple] = set()

    def __call__(
        self,
        state: State,
        evaluate_fn: EvaluateFn,
        inputs: SearchInputs | None = None,
    ) -> SearchResult:
        """As :func:`~.loop.search` with ``host_sync=False`` and this search's policy; the
        policy's inputs are given (its noise, its Gumbel variates), never drawn."""
        inputs = self.policy.prepare(state, self.config, inputs or SearchInputs(), None)
        self.counters.moves += 1
        shape = (state.batch_size, state.device.type)
        if shape not in self._shapes:
            self._shapes.add(shape)
            if self.backend == "inductor":
                log.info(
                    "Compiling the search for %d games on %s: %d graphs with inductor, cached "
                    "in %s (the first time on a machine takes minutes; later runs load them)",
                    state.batch_size, state.device.type, GRAPHS, use_cache(None),
                )  # fmt: skip
        capture = self.cuda_graph
        if capture is None:
            capture = state.device.type == "cuda" and self.backend == "inductor"
        if not capture:
            with torch.no_grad():
                return self._search(state, evaluate_fn, inputs)
        key = (state.batch_size, state.device, id(evaluate_fn), *(x is None for x in inputs))
        captured = self._captured.get(key)
        if captured is None:
            captured = self._captured[key] = _Captured(self._search, evaluate_fn)
        try:
            result = captured(state, inputs)
        except RuntimeError as exc:  # a capture that fails costs speed, never the run
            if captured.graph is not None:  # a replay of a whole capture failed: an error
                raise
            del self._captured[key]
            log.warning("CUDA graph capture of the search failed (%s); it runs compiled "
                        "without it", (str(exc).splitlines() or [type(exc).__name__])[0])  # fmt: skip
            self.cuda_graph = False
            with torch.no_grad():
                return self._search(state, evaluate_fn, inputs)
        self.counters.replays += 1
        return result

    def _search(self, state, evaluate_fn, inputs: SearchInputs) -> SearchResult:
        """The loop with the inputs :meth:`__call__` prepared once (no second ``prepare``)."""
        return run_loop(state, evaluate_fn, self.config, False, self.steps, self.policy,
                          inputs)  # fmt: skip


class _Captured:
    """One move (fixed batch, network and noise inputs) captured as a CUDA graph.

    The inputs are copied into static tensors, the graph replays, and the outputs are
    cloned (the next replay overwrites them; the returned tree is the graph's own, valid
    until the next replay). The first two calls warm up on a side stream
    (they compile); the capture follows. The network's weights are read at replay, so a
    new model copied into the same :func:`network` module needs no new capture.
    """

    def __init__(self, search_fn, evaluate_fn):
        self.search_fn, self.evaluate_fn = search_fn, evaluate_fn
        self.graph = None
        self.static: list[torch.Tensor | None] | None = None
        self.out = None

    def _run(self, position, mask, ply, *inputs):
        with torch.no_grad():
            return self.search_fn(State(position, mask, ply), self.evaluate_fn,
                                  SearchInputs(*inputs))  # fmt: skip

    def __call__(self, state: State, inputs: SearchInputs) -> SearchResult:
        given = [state.position, state.mask, state.ply, *inputs]
        if self.graph is None:
            self._capture(given)
        for dst, src in zip(self.static, given, strict=True):
            if dst is not None:
                dst.copy_(src)
        self.graph.replay()
        out = self.out
        return SearchResult(out.visit_counts.clone(), out.root_value.clone(), out.tree,
                            out.action_weights.clone(), out.action.clone())  # fmt: skip

    def _capture(self, given: list) -> None:
        """Warm up, then capture one move; ``graph`` is set only once a capture is whole, so a
        capture that raises leaves it None (the caller then runs the move uncaptured)."""
        static = [None if x is None else x.clone() for x in given]
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):  # compiles, allocates, warms up cuBLAS/cuDNN
                self._run(*static)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        # thread_local: in an overlapped run a scorecard computes on the GPU in another
        # thread meanwhile; torch's default ("global") makes its calls fail the capture.
        with torch.cuda.graph(graph, capture_error_mode=CAPTURE_ERROR_MODE):
            out = self._run(*static)
        self.static, self.out, self.graph = static, out, graph


@dataclass
class _Network:
    """One module per architecture and device; a new model's weights are copied into it."""

    module: nn.Module
    evaluate_fn: EvaluateFn


_NETWORKS: dict[tuple[str, str], _Network] = {}


def network(model: nn.Module, device: torch.device) -> EvaluateFn:
    """An :data:`~.inference.EvaluateFn` for ``model`` that compiled steps can call again with
    the next model without recompiling: the same function and module every time for one
    architecture and device, with ``model``'s weights copied in (in place).

    Not for two models at once: the second call's weights replace the first's.
    """
    key = (json.dumps(model.config, sort_keys=True), str(device))
    net = _NETWORKS.get(key)
    if net is None:
        module = copy.deepcopy(model).to(device).eval()
        for p in module.parameters():
            p.requires_grad_(False)

        def evaluate_fn(boards: torch.Tensor):
            logits, value = module(boards)
            return logits.float(), value.float()

        net = _NETWORKS[key] = _Network(module, evaluate_fn)
    with torch.no_grad():
        net.module.load_state_dict(model.state_dict())
    return net.evaluate_fn
