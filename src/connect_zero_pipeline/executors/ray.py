"""The Ray executor: sharded self-play on actors, solver chunks as tasks.

Two entry points, both used from inside the existing Kedro nodes (the DAG,
the catalog and kedro-mlflow do not change):

- :func:`ray_self_play` (or a reusable :class:`RaySelfPlayPool`) splits one
  generation's game slots into ``num_shards`` contiguous ranges
  (:func:`~connect_zero_pipeline.core.selfplay.shard_slots`) and plays them on
  Ray actors. Each actor rebuilds the network once from one ``ray.put`` of its
  checkpoint dict and runs on a GPU when Ray assigned it one. Shards come back
  as Arrow tables and are merged in shard order
  (:func:`~connect_zero_pipeline.core.selfplay.merge_shards`), which gives the
  single-shard table: every slot draws from its own counter-based stream keyed
  by its *global* index, so the shard count is a hardware setting, not lineage.
- :func:`ray_chunk_runner` is a ``run_chunks`` runner for
  :class:`~connect_zero_pipeline.core.labelling.Labeller`: solver chunks go out
  as Ray tasks and come back as they finish; the labeller merges them into its cache.

Faults: actors restart (``max_restarts``) and re-run the shard they were
playing (``max_task_retries``); solver tasks are retried (``max_retries``).
A shard or a chunk is a pure function of its inputs, so a retried one returns
the same rows: nothing is lost and nothing is doubled (results are keyed by
shard or chunk index, never appended per attempt).

Connecting, addresses and the fast-fail check: :mod:`.ray_cluster`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from ..core.checkpoint import checkpoint_dict, from_dict
from ..core.config import check, is_int
from ..core.config.selfplay import SelfPlayConfig
from ..core.device import use_tensor_cores
from ..core.inference import make_evaluate_fn
from ..core.labelling import solve_chunk
from ..core.progress import progress_bar
from ..core.search import compile_backend, network
from ..core.selfplay import Played, merge_shards, network_dtype, play_games, shard_slots
from ..core.solver import SolverSpec
from .ray_cluster import (
    DEFAULT_CONNECT_TIMEOUT,
    RayClusterUnreachable,
    RayOptions,
    check_reachable,
    connect,
    resolve_address,
)
from .settings import NodeSettings

__all__ = [
    "RayClusterUnreachable",
    "RayOptions",
    "RaySelfPlayPool",
    "check_reachable",
    "connect",
    "ray_chunk_runner",
    "ray_self_play",
]

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------
# Self-play on actors
# ---------------------------------------------------------------------------


class _SelfPlayWorker:
    """A Ray actor that plays shards with a network it builds once per life.

    The network arrives as ``weights_ref = [ray.put(checkpoint_dict(model))]``
    with each call, wrapped in a list so that Ray passes the reference instead
    of the value: the actor fetches and rebuilds it (and its ``evaluate_fn``
    for its backend, e.g. the onnxruntime graph) only when it has not
    built that object yet: its first shard, or its first after a restart.
    Keeping object references out of the constructor is what lets Ray restart
    an actor safely (ray-project/ray#53727).
    """

    def __init__(self, node: NodeSettings):
        import ray  # noqa: PLC0415 (Ray: an optional extra)
        import torch  # noqa: PLC0415 (torch: 1.1 s, when a model is used)

        # Ray sets CUDA_VISIBLE_DEVICES: the actor's GPU, if it was given one, is "cuda".
        has_gpu = bool(ray.get_gpu_ids()) and torch.cuda.is_available()
        if node.device == "cpu" or (node.device == "auto" and not has_gpu):
            self.device = torch.device("cpu")
        elif has_gpu:
            self.device = torch.device("cuda")
        else:
            raise RuntimeError(f"node.device is {node.device!r}, but this Ray actor has no GPU: "
                               "set ray.num_gpus, or device: auto")  # fmt: skip
        use_tensor_cores([self.device])  # the actor's process, as a run's (core/device.py)
        self.node = node
        self._model = None
        self._weights_id = None
        self._evaluate = None  # the evaluate_fn of the current weights, in its dtype
        self._dtype = None

    def _evaluate_fn(self, weights_ref: list, config: SelfPlayConfig | None = None):
        """The ``evaluate_fn`` that :func:`~connect_zero_pipeline.core.selfplay.self_play` would
        build from the model, in ``config``'s precision on this actor's device."""
        import ray  # noqa: PLC0415 (Ray: an optional extra)

        ref = weights_ref[0]
        dtype = network_dtype(config or SelfPlayConfig(), self.device)
        if (self._weights_id, self._dtype) != (ref.hex(), dtype):
            if self._weights_id != ref.hex():
                self._model = from_dict(ray.get(ref), "self-play weights")
            self._weights_id, self._dtype = ref.hex(), dtype
            if compile_backend(self.node.compile):  # the network compiled steps call
                self._evaluate = network(self._model, self.device)
            else:
                self._evaluate = make_evaluate_fn(self._model, self.device, self.node.backend,
                                                  dtype=dtype)  # fmt: skip
        return self._evaluate

    def ready(self, weights_ref: list) -> dict:
        """Build the network now (warm-up); returns the actor's pid and device."""
        self._evaluate_fn(weights_ref)
        return {"pid": os.getpid(), "device": str(self.device)}

    def play(
        self,
        weights_ref: list,
        config: SelfPlayConfig,
        generation: int,
        shard_index: int,
        num_shards: int,
    ):
        """One shard: ``(pyarrow.Table`` (:data:`~connect_zero_pipeline.core.selfplay.COLUMNS`),
        its compile seconds)``."""
        import pyarrow as pa  # noqa: PLC0415 (pyarrow: not for the light commands)

        played = play_games(
            config,
            self._evaluate_fn(weights_ref, config),
            generation=generation,
            shard_index=shard_index,
            num_shards=num_shards,
            **self.node.shard_kwargs(self.device),
        )
        return pa.Table.from_pandas(played.table, preserve_index=False), played.compile_s


def _cluster_capacity(ray, num_cpus: float, num_gpus: float, address: str) -> int:
    """How many actors with these resources the cluster holds at once."""
    total = ray.cluster_resources()
    fits = [int(total.get("CPU", 0) // num_cpus + 1e-9)]
    if num_gpus > 0:
        fits.append(int(total.get("GPU", 0) // num_gpus + 1e-9))
    capacity = min(fits)
    if capacity < 1:
        raise ValueError(
            f"no self-play actor fits on the Ray cluster at {address!r}: each needs "
            f"num_cpus={num_cpus:g}, num_gpus={num_gpus:g}; the cluster has "
            f"{total.get('CPU', 0):g} CPUs and {total.get('GPU', 0):g} GPUs"
        )
    return capacity


class RaySelfPlayPool:
    """Self-play actors holding one network, reusable across calls (the bench warms them once).

    Args:
        model: the network (built with :func:`~connect_zero_pipeline.core.models.build_model`); its
            weights are ``ray.put`` once and every actor rebuilds it.
        node: the stage's :class:`~.settings.NodeSettings`: its ``ray`` options (where the
            cluster is, each actor's resources; ``num_shards`` also caps the actor count),
            and the settings every actor plays its shards with
            (:meth:`~.settings.NodeSettings.shard_kwargs`). Default: ``NodeSettings()``.
        num_games: the generation's slot count, to cap the actors (optional).
    """

    def __init__(
        self,
        model,
        node: NodeSettings | None = None,
        *,
        num_games: int | None = None,
        _worker_cls: type = _SelfPlayWorker,  # testing hook (fault injection)
    ):
        node = node or NodeSettings()
        self.options = node.ray
        self.address = resolve_address(self.options.address)
        ray = connect(self.address, self.options.connect_timeout)
        self._ray = ray
        num_gpus = self.options.num_gpus
        if num_gpus == "auto":
            num_gpus = 1.0 if ray.cluster_resources().get("GPU", 0) > 0 else 0.0
        capacity = _cluster_capacity(ray, self.options.num_cpus, num_gpus, self.address)
        limits = [capacity, self.options.num_shards or capacity, num_games or capacity]
        self.num_actors = min(limits)
        self.num_gpus = float(num_gpus)
        self._weights = [ray.put(checkpoint_dict(model))]  # one copy; alive for restarts
        actor_cls = ray.remote(_worker_cls).options(
            num_cpus=self.options.num_cpus,
            num_gpus=self.num_gpus,
            max_restarts=self.options.max_retries,
            max_task_retries=self.options.max_retries,
        )
        self.actors = [actor_cls.remote(node) for _ in range(self.num_actors)]
        log.info(
            "Started %d self-play actors on %r (%g CPUs, %g GPUs each; capacity %d)",
            self.num_actors, self.address, self.options.num_cpus, self.num_gpus, capacity,
        )  # fmt: skip

    def __enter__(self) -> RaySelfPlayPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop the actors (the Ray connection stays for the rest of the process)."""
        for actor in self.actors:
            try:
                self._ray.kill(actor, no_restart=True)
            except Exception as exc:  # already dead, or the cluster is gone
                log.debug("could not kill actor %s: %s", actor, exc)
        self.actors = []

    def wait_ready(self) -> list[dict]:
        """Block until every actor has built its network; returns pid and device."""
        return self._ray.get([a.ready.remote(self._weights) for a in self.actors])

    def play(
        self,
        config: SelfPlayConfig,
        generation: int = 0,
        *,
        num_shards: int | None = None,
        progress: bool | Callable[[int, int], None] = False,
    ) -> Played:
        """One generation, sharded over the actors; the same table as local
        :func:`~connect_zero_pipeline.core.selfplay.self_play`, and the longest a shard spent
        compiling.

        Args:
            num_shards: shards (default: ``options.num_shards`` or one per
                actor), capped at ``config.num_games``. Each actor plays one
                shard at a time; the next shard goes to the first actor free.
            progress: ``True`` shows a tqdm bar of finished shards; a callable
                gets ``(shards_done, num_shards)``.

        Raises:
            RuntimeError: naming the shard and its slots, when a shard fails
                after its retries (or raises inside the actor).
        """
        if not self.actors:
            raise RuntimeError("RaySelfPlayPool is closed")
        ray = self._ray
        num_shards = min(num_shards or self.options.num_shards or self.num_actors, config.num_games)
        todo = list(range(num_shards))
        tables: list = [None] * num_shards
        pending: dict = {}  # ObjectRef -> (shard index, actor)

        def submit(actor) -> None:
            if todo:
                shard = todo.pop(0)
                ref = actor.play.remote(self._weights, config, generation, shard, num_shards)
                pending[ref] = (shard, actor)

        bar = None
        if progress is True:
            bar = progress_bar(
                total=num_shards, unit="shard", desc=f"self-play gen {generation} (ray)"
            )
        start = time.perf_counter()
        positions, compile_s = 0, 0.0
        try:
            for actor in self.actors:
                submit(actor)
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                shard, actor = pending.pop(done[0])
                try:
                    table, shard_compile_s = ray.get(done[0])
                except Exception as exc:
                    slots = shard_slots(config.num_games, shard, num_shards)
                    raise RuntimeError(
                        f"self-play shard {shard} of {num_shards} (slots {slots.start}-"
                        f"{slots.stop - 1}, generation {generation}) failed on the Ray cluster at "
                        f"{self.address!r} after up to {self.options.max_retries} retries: {exc}"
                    ) from exc
                tables[shard] = table
                positions += table.num_rows
                compile_s = max(compile_s, shard_compile_s)
                submit(actor)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(positions=positions)
                elif callable(progress):
                    progress(num_shards - len(todo) - len(pending), num_shards)
        finally:
            if bar is not None:
                bar.close()
            _cancel(ray, pending)  # after an error or an interrupt: stop what still runs
        merged = merge_shards([t.to_pandas() for t in tables])
        log.info(
            "self-play gen %d on Ray: %d shards on %d actors, %d positions in %.1f s",
            generation, num_shards, self.num_actors, len(merged), time.perf_counter() - start,
        )  # fmt: skip
        return Played(merged, compile_s)


def _cancel(ray, refs) -> None:
    for ref in refs:
        try:
            ray.cancel(ref)
        except Exception as exc:  # already finished, or the cluster is gone
            log.debug("could not cancel %s: %s", ref, exc)


def ray_self_play(
    config: SelfPlayConfig,
    model,
    *,
    generation: int = 0,
    node: NodeSettings | None = None,
    progress: bool | Callable[[int, int], None] = False,
) -> Played:
    """One generation of self-play on Ray actors (a pool for this call only), each shard
    played with ``node``'s settings (:class:`RaySelfPlayPool`).

    Same table as ``self_play(config, model=model, generation=generation)``
    for any shard count (up to float rounding in the network's batched
    kernels, see :mod:`.selfplay`).
    """
    with RaySelfPlayPool(model, node, num_games=config.num_games) as pool:
        return pool.play(config, generation, progress=progress)


# ---------------------------------------------------------------------------
# Solver chunks as tasks
# ---------------------------------------------------------------------------


def ray_chunk_runner(
    address: str | None,
    *,
    max_retries: int = 3,
    max_in_flight: int = 0,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    _solve_fn: Callable = solve_chunk,  # testing hook (fault injection)
):
    """A :class:`~connect_zero_pipeline.core.labelling.Labeller` runner that solves chunks as Ray tasks.

    Connects now (a bad address fails here, before any work). The returned
    callable takes ``(chunks, max_nodes, spec)``, the chunk list being
    ``[(position [n] uint64, mask [n] uint64)]``, and yields ``(chunk index,
    solve_chunk result)`` in completion order, keeping at most
    ``max_in_flight`` tasks submitted (0: twice the cluster's CPUs). Each task
    takes one CPU; a task whose worker dies is retried up to ``max_retries``
    times. Every Ray worker keeps its solver (and its transposition table)
    between tasks, like a local pool process; ``spec``'s opening book is the folder of that
    path on each node (a node without it searches the opening).
    """
    check(is_int(max_retries) and max_retries >= 0, "max_retries", max_retries, "an integer >= 0")
    check(
        is_int(max_in_flight) and max_in_flight >= 0,
        "max_in_flight",
        max_in_flight,
        "an integer >= 0",
    )
    address = resolve_address(address)
    ray = connect(address, connect_timeout)
    remote = ray.remote(_solve_fn).options(num_cpus=1, max_retries=max_retries)
    window = max_in_flight or max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))

    def run_chunks(
        chunks: Sequence[tuple[np.ndarray, np.ndarray]], max_nodes: int, spec: SolverSpec
    ) -> Iterator[tuple[int, tuple]]:
        todo = iter(enumerate(chunks))
        pending: dict = {}  # ObjectRef -> chunk index

        def fill() -> None:
            while len(pending) < window:
                item = next(todo, None)
                if item is None:
                    return
                i, (p, m) = item
                pending[remote.remote(p, m, max_nodes, spec)] = i

        try:
            fill()
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                i = pending.pop(done[0])
                try:
                    result = ray.get(done[0])
                except Exception as exc:
                    raise RuntimeError(
                        f"solver chunk {i} of {len(chunks)} failed on the Ray cluster at "
                        f"{address!r} after up to {max_retries} retries: {exc}"
                    ) from exc
                fill()  # keep the cluster busy while the caller merges this one
                yield i, result
        finally:
            _cancel(ray, pending)

    return run_chunks
