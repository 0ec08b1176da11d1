"""Which Kedro runner a run uses, and the one that overlaps independent nodes.

A run's runner is the one ``kedro run --runner`` names; without ``--runner`` it is the
recipe's (:func:`recipe_runner`): Kedro's ``SequentialRunner``, or with
``alphazero.overlap: true`` (``conf/gpu``) the :class:`OverlapRunner`, which runs the nodes
that do not depend on each other at once: a generation's scorecard (``evaluate``, a leaf of
the DAG) beside the next generation's self-play and training, and the public sets' labels
beside the first generation. The recipe's results are the same either way (every part of a
generation is seeded by its own numbers), up to float rounding of CPU kernels that share
the cores.

:class:`OverlapRunner` is Kedro's ``ThreadRunner`` with its own executor (Kedro's
extension point for runners, ``_get_executor``):

- **the loop first**: among the nodes ready to run it starts the one with the longest chain
  of nodes after it (self-play and training before a scorecard), so a scorecard never
  holds up the next generation for want of a thread; of nodes with equal chains, the one
  that became ready last;
- **one scorecard at a time** (:data:`AT_ONCE`): on a fast device the generations outrun
  their scorecards (each a fixed amount of work), which would otherwise pile up beside the
  loop, each slowing the others and the loop; those waiting start newest first (equal
  chains), so the newest generation's figures lag the least;
- **it stops as the run stops**: when the run fails or is interrupted (Ctrl-C, or SIGTERM
  handled as one), the nodes still running are interrupted with the same exception type,
  raised in their threads (CPython's ``PyThreadState_SetAsyncExc``, at their next Python
  instruction: a node inside one long C call stops when it returns), and the nodes not
  started never start; Kedro's own ``ThreadRunner`` waits
  for every running node to finish first, which after a Ctrl-C can be minutes.
"""

from __future__ import annotations

import ctypes
import heapq
import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

from kedro.runner import SequentialRunner, ThreadRunner

from ..common.naming import SCORECARD_NODE
from ..params.schema import RunParams


class RecipeRunner(SequentialRunner):
    """What ``kedro run`` passes when no ``--runner`` is given (:mod:`..commands.run`): the session
    replaces it with :func:`recipe_runner` of the run's parameters. Used as it is (a plain
    ``KedroSession``), it is Kedro's ``SequentialRunner``."""

    def __init__(self, is_async: bool = False):
        super().__init__(is_async=is_async)
        self.async_io = is_async


def recipe_runner(sections: RunParams, is_async: bool = False):
    """The runner of the recipe of a run's parameters (``RunContext.sections``):
    :class:`OverlapRunner` with ``alphazero.overlap``, else ``SequentialRunner``."""
    if sections.alphazero.overlap:
        return OverlapRunner()  # threads: Kedro's async loading does not apply
    return SequentialRunner(is_async=is_async)


def critical_path(pipeline) -> dict[Any, int]:
    """Each node's number of nodes on the longest chain from it to the end of ``pipeline``
    (itself included): what is behind it in the DAG."""
    children: dict[Any, list] = {node: [] for node in pipeline.nodes}
    for node, parents in pipeline.node_dependencies.items():
        for parent in parents:
            children[parent].append(node)
    length: dict[Any, int] = {}
    for node in reversed(pipeline.nodes):  # topologically sorted: children first here
        length[node] = 1 + max((length[c] for c in children[node]), default=0)
    return length


AT_ONCE = {SCORECARD_NODE: 1}
"""The most nodes of one name (within its namespace: ``gen_003.evaluate`` is ``evaluate``)
that run at once; a name not here has no bound."""


def group_of(node: Any) -> str | None:
    """The name a node is bounded by in :data:`AT_ONCE`, or None."""
    name = getattr(node, "name", None)
    short = name.rsplit(".", 1)[-1] if isinstance(name, str) else None
    return short if short in AT_ONCE else None


class OverlapRunner(ThreadRunner):
    """Kedro's ``ThreadRunner`` that starts the loop's nodes first and stops its running
    nodes when the run fails or is interrupted (module docstring)."""

    def __init__(self, max_workers: int | None = None, is_async: bool = False):
        super().__init__(max_workers=max_workers, is_async=is_async)
        self._rank: dict[Any, int] = {}

    def _run(self, pipeline, catalog, hook_manager=None, run_id=None) -> None:
        self._rank = critical_path(pipeline)
        super()._run(pipeline, catalog, hook_manager, run_id)

    def _get_executor(self, max_workers: int) -> Executor:
        rank = self._rank
        return StoppingExecutor(max_workers, lambda task: rank.get(getattr(task, "node", None), 0),
                                group=lambda task: group_of(getattr(task, "node", None)),
                                limits=AT_ONCE)  # fmt: skip


SETTLE_S = 0.02
"""How long a free thread waits after a submission before it takes work: Kedro submits the
nodes that became ready together in one loop, so they are all queued, and ordered, first
(a node runs for seconds; on a loaded machine the loop can take longer, and the order is
then as good as the queue was)."""


class StoppingExecutor(Executor):
    """Threads that take the submitted call of the highest ``priority`` first (of those
    submitted together: :data:`SETTLE_S`; of equal priority, the one submitted last), at
    most ``limits[g]`` calls of one ``group`` ``g`` at once, and that are interrupted when
    the block using the executor ends with an exception."""

    def __init__(self, max_workers: int, priority: Callable[[Any], int],
                 group: Callable[[Any], str | None] = lambda fn: None,
                 limits: dict[str, int] | None = None):  # fmt: skip
        self._max_workers = max(1, max_workers)
        self._priority = priority
        self._group = group
        self._limits = dict(limits or {})
        self._busy: dict[str, int] = {}  # group -> its calls running
        self._queue: list = []  # (-priority, -order, future, fn, args, kwargs)
        self._order = itertools.count()
        self._cv = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._running: dict[int, Future] = {}  # thread ident -> the future it works on
        self._closed = False
        self._last_submit = 0.0

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        with self._cv:
            if self._closed:
                raise RuntimeError("cannot submit to an executor that is shut down")
            heapq.heappush(self._queue, (-self._priority(fn), -next(self._order), future, fn,
                                         args, kwargs))  # fmt: skip
            self._last_submit = time.monotonic()
            idle = len(self._threads) - len(self._running)
            if idle < len(self._queue) and len(self._threads) < self._max_workers:
                thread = threading.Thread(target=self._work, name=f"node-{len(self._threads)}",
                                          daemon=True)  # fmt: skip
                self._threads.append(thread)
                thread.start()
            self._cv.notify_all()
        return future

    def _take(self) -> tuple | None:
        """The queued call of the highest priority whose group has room, taken off the
        queue, with its group; None if every queued call waits for its group."""
        for entry in sorted(self._queue):
            group = self._group(entry[3])
            if group is None or self._busy.get(group, 0) < self._limits.get(group, 1 << 30):
                self._queue.remove(entry)
                heapq.heapify(self._queue)
                return entry, group
        return None

    def _work(self) -> None:
        me, group = threading.get_ident(), None
        try:
            while True:
                with self._cv:
                    while True:
                        if not self._queue:
                            if self._closed:
                                return
                            self._cv.wait()
                            continue
                        settle = SETTLE_S - (time.monotonic() - self._last_submit)
                        if settle > 0 and not self._closed:
                            self._cv.wait(settle)  # the rest of a batch of ready nodes, first
                            continue
                        taken = self._take()
                        if taken is not None:
                            break
                        self._cv.wait()  # a group's call ends, or another call comes
                    (_, _, future, fn, args, kwargs), group = taken
                    if not future.set_running_or_notify_cancel():
                        continue
                    self._running[me] = future
                    if group is not None:
                        self._busy[group] = self._busy.get(group, 0) + 1
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:  # an interrupt too: the future carries it
                    future.set_exception(exc)
                else:
                    future.set_result(result)
                finally:
                    self._done(me, group)
                    group = None
        except BaseException:  # an interrupt that landed between two nodes: the run is over
            self._done(me, group)

    def _done(self, me: int, group: str | None) -> None:
        with self._cv:
            if self._running.pop(me, None) is not None and group is not None:
                self._busy[group] -= 1
            self._cv.notify_all()  # a call its group held back may start

    def stop(self, kind: type[BaseException]) -> int:
        """Cancel the calls not started and raise ``kind`` in the threads of those running;
        returns how many were running."""
        with self._cv:
            for _, _, future, *_ in self._queue:
                future.cancel()
            self._queue.clear()
            for ident in self._running:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident),
                                                           ctypes.py_object(kind))  # fmt: skip
            return len(self._running)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._cv:
            self._closed = True
            if cancel_futures:
                for _, _, future, *_ in self._queue:
                    future.cancel()
                self._queue.clear()
            self._cv.notify_all()
        if wait:
            for thread in self._threads:
                thread.join()

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is not None:  # a node failed, or the run was interrupted: stop the others
            self.stop(exc_type if issubclass(exc_type, KeyboardInterrupt) else _Stopped)
        self.shutdown(wait=True)
        return False


class _Stopped(Exception):
    """Raised in a node still running when another node failed: the run is over."""
