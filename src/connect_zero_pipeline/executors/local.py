"""The local executor: every core of this machine, through worker processes.

- :func:`local_self_play` splits one generation's game slots into one shard per
  worker process and merges the shard tables; it is the same table as playing
  in one process (the slots' random streams are keyed by their global index,
  see :mod:`connect_zero_pipeline.core.selfplay`). The worker processes are
  kept for the next generation of the same process (:func:`close_pools`).
- :class:`ProcessChunkRunner` solves the labeller's chunks on a pool of
  processes, each keeping its solver and transposition table between chunks.

Processes are started with ``spawn`` (no forked copies of torch's thread
pools), with SIGINT blocked until their initializer runs (:func:`spawn_context`). The
self-play pool lives as long as the process (a ``kedro run``); the
solver pool as long as its labeller. Every worker dies with the process that started it,
even when that one is killed with SIGKILL (:func:`.lifetime.die_with_parent`): no orphan keeps a core
and hundreds of MB after a ``kill -9`` of ``kedro run``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import queue as queue_module
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, as_completed, wait
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import resource_tracker
from multiprocessing.context import SpawnContext, SpawnProcess

import numpy as np
import pandas as pd
import torch

from ..common.internals import kill_pool_workers
from ..common.stops import deferred, quiet_worker, sigint_blocked
from ..core.checkpoint import checkpoint_dict, from_dict
from ..core.config.selfplay import SelfPlayConfig
from ..core.labelling import init_worker_solver, solve_chunk
from ..core.progress import progress_bar
from ..core.selfplay import Played, merge_shards, play_games, shard_slots
from ..core.solver import SolverSpec
from .lifetime import die_with_parent
from .settings import NodeSettings


def init_worker(parent: int) -> None:
    """Process initializer of every worker: it dies with its parent
    (:func:`.lifetime.die_with_parent`)
    and a Ctrl-C ends it at once, quietly: the run's process reports the interrupt. (Before
    this runs, while the worker imports torch, SIGINT is blocked: :class:`_QuietStartProcess`;
    a Ctrl-C that came meanwhile ends it here.)"""
    die_with_parent(parent)
    quiet_worker()


class _QuietStartProcess(SpawnProcess):
    """A spawned process that starts with SIGINT blocked, until :func:`init_worker`.

    A terminal's Ctrl-C reaches every process of the run. A worker still importing torch
    would raise KeyboardInterrupt there and print its traceback (170 lines, in rich's
    format); with SIGINT blocked the interrupt waits in the worker until its quiet handler
    is set, and the run's process alone reports it. A process inherits the signal mask of
    the thread that starts it, across ``exec`` too, so the starting thread blocks SIGINT for
    the moment it starts the process (:func:`..common.stops.sigint_blocked`). The run's process keeps its
    own handler meanwhile: a Ctrl-C then goes to another of its threads, or waits until the
    start is done, and is never lost (ignoring SIGINT for the moment, as this once did, lost
    a Ctrl-C that landed in it).
    """

    def start(self) -> None:
        with sigint_blocked():
            return super().start()


class _QuietStartContext(SpawnContext):
    Process = _QuietStartProcess


def spawn_context() -> SpawnContext:
    """``multiprocessing``'s spawn context whose processes hold a Ctrl-C back until their
    initializer runs (:class:`_QuietStartProcess`): every pool of this module uses it. It
    starts the resource tracker first (:func:`quiet_resource_tracker`)."""
    quiet_resource_tracker()
    return _QuietStartContext()


def quiet_resource_tracker() -> None:
    """Start ``multiprocessing``'s resource tracker (if it is not running) with its stderr on
    the null device.

    The tracker is the process that removes a pool's semaphores when the process that made
    them is gone. After a ``kill -9`` of ``kedro run`` it removes them and then warns
    "resource_tracker: There appear to be 5 leaked semaphore objects" on the terminal,
    about a cleanup that worked: its stderr is the only thing it writes to, and it gets the
    one it starts with.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            resource_tracker.ensure_running()
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _init_solver_worker(parent: int, spec: SolverSpec) -> None:
    init_worker(parent)
    init_worker_solver(spec)


_STEPS = None
"""In a self-play worker: the queue its shards report their env steps to (set by its
initializer, :func:`_init_shard_worker`: a queue reaches a spawned process only as it starts)."""
_CANCELLED = None
"""In a self-play worker: the event its pool's owner sets when a generation failed or was
interrupted; a shard that starts after it plays nothing, and one playing stops at its next
step. (A worker still starting when a Ctrl-C came ignored it, and a worker the interrupt did
not reach, as when a run's other threads stop it, would otherwise play its whole shard
before the run could end.)"""


class ShardCancelled(Exception):
    """A shard stopped at a step because its generation was given up (failed or interrupted
    elsewhere): its pool's owner ignores it."""


def _init_shard_worker(parent: int, steps, cancelled) -> None:
    global _STEPS, _CANCELLED
    init_worker(parent)
    _STEPS, _CANCELLED = steps, cancelled


def _play_shard(ckpt: dict, config: SelfPlayConfig, generation: int, shard: int, shards: int,
                node: NodeSettings, report_steps: bool):  # fmt: skip
    """One shard in a worker process, on its CPU with ``node``'s settings (:class:`Played`);
    with ``report_steps`` it reports its env steps to the pool's queue. None, once the
    generation was given up (``_CANCELLED``)."""
    if _CANCELLED is not None and _CANCELLED.is_set():
        return None
    slots = len(shard_slots(config.num_games, shard, shards))

    def report(done: int, total: int) -> None:  # after each env step of this shard's slots
        if _CANCELLED is not None and _CANCELLED.is_set():  # given up: stop at this step
            raise ShardCancelled(f"shard {shard} of generation {generation}: given up")
        if report_steps:
            _STEPS.put(slots)

    return play_games(
        config,
        model=from_dict(ckpt, "self-play weights"),
        generation=generation,
        shard_index=shard,
        num_shards=shards,
        progress=report,
        **node.shard_kwargs(torch.device("cpu")),
    )


def local_self_play(
    config: SelfPlayConfig,
    model: torch.nn.Module,
    *,
    workers: int,
    generation: int = 0,
    node: NodeSettings | None = None,
    progress: bool = False,
) -> Played:
    """One generation split into ``workers`` shards on CPU worker processes of this machine.

    The same table as ``self_play(config, model=model, generation=generation)``, and the
    longest ``compile_s`` of a worker;
    ``workers=1`` plays in this process. Every shard plays with ``node``'s settings
    (:meth:`~.settings.NodeSettings.shard_kwargs`; default :class:`NodeSettings`) on the
    CPU. With ``progress`` one bar counts the env steps of all workers together.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    node = node or NodeSettings()
    workers = min(workers, config.num_games)
    if workers == 1:
        return play_games(config, model=model, generation=generation, progress=progress,
                          **node.shard_kwargs(torch.device("cpu")))  # fmt: skip
    ckpt = checkpoint_dict(model)
    for attempt in (1, 2):  # a worker of an earlier call may have died: start afresh, once
        shard_pool = _shard_pool(workers)
        shard_pool.drain()
        try:
            with deferred():  # the pool's bookkeeping is never cut half-way
                futures = {
                    shard_pool.pool.submit(
                        _play_shard, ckpt, config, generation, i, workers, node, progress
                    ): i
                    for i in range(workers)
                }
            break
        except BrokenProcessPool:
            close_pools()
            if attempt == 2:
                raise
        except BaseException as exc:  # a Ctrl-C while the workers start: some shards are sent
            _give_up(shard_pool, stopped=isinstance(exc, KeyboardInterrupt))
            raise
    tables: list[pd.DataFrame | None] = [None] * workers
    compile_s = 0.0
    bar = None
    if progress:
        total = config.num_games * config.moves_per_gen
        bar = progress_bar(total=total, desc=f"self-play ({workers} processes)", unit="step")
    pending = set(futures)
    try:
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for fut in done:
                if (played := fut.result()) is not None:  # None: a shard given up
                    tables[futures[fut]] = played.table
                    compile_s = max(compile_s, played.compile_s)
            while bar is not None:
                try:
                    bar.update(shard_pool.steps.get_nowait())
                except queue_module.Empty:
                    break
    except BaseException as exc:
        for fut in pending:
            fut.cancel()
        _give_up(shard_pool, stopped=isinstance(exc, KeyboardInterrupt))
        raise
    finally:
        if bar is not None:
            bar.close()
    return Played(merge_shards(tables), compile_s)


def _give_up(shard_pool: _ShardPool, stopped: bool = False) -> None:
    """A failed or interrupted generation: the shards not begun play nothing and a shard
    playing stops at its next step (the workers read the pool's cancel event), and no busy
    worker is left behind. ``stopped`` (a Ctrl-C or a SIGTERM): the workers are ended at
    once, those still starting too (importing torch takes seconds; nothing of theirs is
    kept)."""
    shard_pool.cancelled.set()
    if stopped:
        kill_pool_workers(shard_pool.pool)
    close_pools()


class _ShardPool:
    """Self-play worker processes (and the queue that carries their progress), kept between
    calls.

    Starting two spawned workers costs several seconds (Python, torch,
    onnxruntime imports), paid once per process instead of once per
    generation. Workers get the network with every call, so nothing of an
    earlier generation is reused but the processes.
    """

    def __init__(self, workers: int):
        ctx = spawn_context()  # spawn: no forked copies of torch's thread pools
        self.steps = ctx.Queue()
        self.cancelled = ctx.Event()
        self.pool = ProcessPoolExecutor(
            workers, mp_context=ctx, initializer=_init_shard_worker,
            initargs=(os.getpid(), self.steps, self.cancelled),
        )  # fmt: skip

    def drain(self) -> None:
        """Forget progress left in the queue by an interrupted earlier call."""
        while True:
            try:
                self.steps.get_nowait()
            except queue_module.Empty:
                return

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.steps.close()


_POOLS: dict[int, _ShardPool] = {}


def _shard_pool(workers: int) -> _ShardPool:
    pool = _POOLS.get(workers)
    if pool is None:
        for other in list(_POOLS):  # one pool of workers at a time: cores are the limit
            _POOLS.pop(other).close()
        pool = _POOLS[workers] = _ShardPool(workers)
    return pool


def close_pools() -> None:
    """Stop the kept self-play workers (also at interpreter exit)."""
    while _POOLS:
        _, pool = _POOLS.popitem()
        with contextlib.suppress(Exception):  # already broken: its processes are gone or going
            pool.close()


atexit.register(close_pools)


class ProcessChunkRunner:
    """A :class:`~connect_zero_pipeline.core.labelling.Labeller` runner on ``workers`` processes.

    Called as ``runner(chunks, max_nodes, spec)``, it yields ``(chunk index,
    solve_chunk result)`` as chunks finish. The pool starts on the first call
    and stays for the next ones (each process keeps its solver's table, and its opening book
    memory-mapped);
    :meth:`close` (the labeller's) stops it.
    """

    def __init__(self, workers: int):
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._spec: SolverSpec | None = None

    def __call__(
        self, chunks: Sequence[tuple[np.ndarray, np.ndarray]], max_nodes: int, spec: SolverSpec
    ) -> Iterator[tuple[int, tuple]]:
        if self._pool is None or self._spec != spec:
            self.close()
            self._pool = ProcessPoolExecutor(
                self.workers,
                mp_context=spawn_context(),
                initializer=_init_solver_worker,
                initargs=(os.getpid(), spec),
            )
            self._spec = spec
        futures = {
            self._pool.submit(solve_chunk, p, m, max_nodes, spec): i
            for i, (p, m) in enumerate(chunks)
        }
        for fut in as_completed(futures):
            yield futures[fut], fut.result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
