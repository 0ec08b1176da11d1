"""The recipe's runner: the overlapping one starts the loop's nodes first and stops its
running nodes when the run fails or is interrupted, where Kedro's ThreadRunner would wait
for them to finish."""

from __future__ import annotations

import signal
import threading
import time

import pytest
from kedro.io import DataCatalog, MemoryDataset
from kedro.pipeline import Node, Pipeline
from kedro.runner import SequentialRunner

from connect_zero_pipeline.params.schema import parse_run_params
from connect_zero_pipeline.session.project_session import chosen_runner
from connect_zero_pipeline.session.runner import (
    OverlapRunner,
    StoppingExecutor,
    critical_path,
    recipe_runner,
)


def _spin(stop_seen: list, name: str):
    """A node that computes in Python until it is interrupted (never on its own)."""

    def spin(_x):
        try:
            while True:
                sum(range(1000))
        except BaseException as exc:
            stop_seen.append((name, type(exc).__name__))
            raise

    return spin


def _catalog() -> DataCatalog:
    return DataCatalog({"start": MemoryDataset(1)})


def test_a_failing_node_stops_the_one_still_running_at_once():
    seen: list = []

    def fail(_x):
        time.sleep(0.3)  # the spinning node is running by now
        raise ValueError("bad generation")

    pipe = Pipeline([Node(_spin(seen, "spin"), "start", "a", name="spin"),
                     Node(fail, "start", "b", name="fail")])  # fmt: skip
    start = time.perf_counter()
    with pytest.raises(ValueError, match="bad generation"):
        OverlapRunner(max_workers=2).run(pipe, _catalog())
    assert time.perf_counter() - start < 10  # Kedro's ThreadRunner would wait for ever
    assert seen == [("spin", "_Stopped")]


def test_ctrl_c_stops_every_running_node_and_starts_no_other():
    seen: list = []
    started: list = []

    def interrupt(x):
        time.sleep(0.3)  # Ctrl-C: SIGINT, which the main thread turns into KeyboardInterrupt
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        _spin(seen, "interrupt")(x)  # stopped too (a C call is stopped when it returns)

    def later(_a):
        started.append("later")

    pipe = Pipeline([Node(_spin(seen, "spin"), "start", "a", name="spin"),
                     Node(interrupt, "start", "b", name="interrupt"),
                     Node(later, "a", "c", name="later")])  # fmt: skip
    start = time.perf_counter()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's, as in a run
    try:
        with pytest.raises(KeyboardInterrupt):
            OverlapRunner(max_workers=3).run(pipe, _catalog())
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.perf_counter() - start < 10
    assert sorted(seen) == [("interrupt", "KeyboardInterrupt"), ("spin", "KeyboardInterrupt")]
    assert started == []
    assert not [t for t in threading.enumerate() if t.name.startswith("node-")]  # all joined


def test_a_node_ranks_by_the_longest_chain_after_it_and_the_runner_keeps_the_order():
    order: list[str] = []

    def step(name):
        def run(*_):
            order.append(name)
            return 1

        return run

    # "scorecard" is a leaf; "loop1" -> "loop2" -> "loop3" is the loop's path.
    pipe = Pipeline([Node(step("scorecard"), "start", "s", name="scorecard"),
                     Node(step("loop1"), "start", "l1", name="loop1"),
                     Node(step("loop2"), "l1", "l2", name="loop2"),
                     Node(step("loop3"), "l2", "l3", name="loop3")])  # fmt: skip
    ranks = {n.name: r for n, r in critical_path(pipe).items()}
    assert ranks == {"scorecard": 1, "loop1": 3, "loop2": 2, "loop3": 1}
    OverlapRunner(max_workers=1).run(pipe, _catalog())
    assert sorted(order) == ["loop1", "loop2", "loop3", "scorecard"]
    assert order.index("loop1") < order.index("loop2") < order.index("loop3")


def test_the_executor_takes_the_highest_priority_first_and_stops_the_running():
    release, order = threading.Event(), []
    executor = StoppingExecutor(1, priority=lambda fn: fn.rank)

    def job(rank, wait=False):
        def run():
            if wait:
                release.wait()
            order.append(rank)

        run.rank = rank
        return run

    first = executor.submit(job(0, wait=True))  # holds the one thread
    time.sleep(0.1)
    futures = [executor.submit(job(r)) for r in (1, 5, 3)]
    release.set()
    executor.shutdown(wait=True)
    assert first.done() and all(f.done() for f in futures)
    assert order == [0, 5, 3, 1]


def test_the_recipe_names_the_runner_unless_the_command_line_does():
    overlap = parse_run_params({"alphazero": {"overlap": True}})
    assert isinstance(recipe_runner(overlap), OverlapRunner)
    plain = recipe_runner(parse_run_params({}))
    assert type(plain) is SequentialRunner
    named = SequentialRunner()
    assert chosen_runner(named, overlap) is named  # --runner wins
    assert isinstance(chosen_runner(None, overlap), OverlapRunner)
    with pytest.raises(ValueError, match="alphazero.overlap must be true or false, got 'yes'"):
        parse_run_params({"alphazero": {"overlap": "yes"}})  # refused by the run's plan


def test_scorecards_run_one_at_a_time_beside_the_loop_the_newest_first():
    """The loop's three generations finish while the first scorecard runs: the other two wait
    for it (never two at once), then the newest generation's goes first."""
    lock, state = threading.Lock(), {"running": 0, "most": 0}
    started: list[int] = []
    loop_done = threading.Event()

    def loop(k):
        def run(_x):
            if k == 3:
                loop_done.set()
            return k

        return run

    def scorecard(k):
        def run(_model):
            with lock:
                state["running"] += 1
                state["most"] = max(state["most"], state["running"])
                started.append(k)
            if k == 1:  # the loop ends meanwhile: both later scorecards are queued
                assert loop_done.wait(10)
                time.sleep(0.3)
            time.sleep(0.05)
            with lock:
                state["running"] -= 1
            return k

        return run

    nodes = []
    for k in (1, 2, 3):
        before = "start" if k == 1 else f"gen_{k - 1:03d}.model"
        nodes += [Node(loop(k), before, f"gen_{k:03d}.model", name="train",
                       namespace=f"gen_{k:03d}"),
                  Node(scorecard(k), f"gen_{k:03d}.model", f"gen_{k:03d}.eval_metrics",
                       name="evaluate", namespace=f"gen_{k:03d}")]  # fmt: skip
    OverlapRunner(max_workers=4).run(Pipeline(nodes), _catalog())
    assert state["most"] == 1
    assert started == [1, 3, 2]
