"""The local executor: worker processes give the same tables as one process, and close."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from connect_zero_pipeline.core.labelling import Labeller
from connect_zero_pipeline.core.models import build_model
from connect_zero_pipeline.core.selfplay import self_play
from connect_zero_pipeline.executors.local import ProcessChunkRunner, local_self_play
from tests.helpers import bitboard_arrays, selfplay_config

# Late-game positions: cheap to solve exactly.
LATE_GAMES = ["664163221317133624532157163764", "2577713147446472", "44444433333322222", "1212124"]


def test_local_worker_processes_give_the_single_process_table():
    torch.manual_seed(0)
    model = build_model({"arch": "resnet", "blocks": 1, "channels": 8, "value_hidden": 8})
    cfg = selfplay_config(num_games=6, sims=4, moves_per_gen=40, seed=3)
    one = self_play(cfg, model=model, generation=2)
    two = local_self_play(cfg, model, workers=2, generation=2).table
    assert len(one) > 0
    same = [c for c in one.columns if c != "root_value"]
    assert one[same].equals(two[same])
    assert (one["root_value"] - two["root_value"]).abs().max() < 1e-5
    # The recipe's precision reaches the workers: bfloat16 plays games of its own (another
    # move now and then), the same in two workers as in one process.
    bf16 = dataclasses.replace(cfg, precision="bfloat16")
    one_bf16 = self_play(bf16, model=model, generation=2)
    assert not one_bf16[same].equals(one[same])
    assert one_bf16[same].equals(local_self_play(bf16, model, workers=2, generation=2).table[same])
    with pytest.raises(ValueError, match="workers must be an integer >= 1, got 0"):
        local_self_play(cfg, model, workers=0)


def test_local_pool_gives_the_same_labels_as_in_process(tmp_path):
    pos, mask = bitboard_arrays(LATE_GAMES)
    with Labeller(max_nodes=0, chunk_size=1) as one:
        a, _, _ = one.label(pos, mask)
    with Labeller(max_nodes=0, chunk_size=1, run_chunks=ProcessChunkRunner(2)) as pool:
        b, _, _ = pool.label(pos, mask)
    assert np.array_equal(a, b)


def test_the_labeller_closes_its_process_pool():
    runner = ProcessChunkRunner(2)
    with Labeller(max_nodes=0, run_chunks=runner) as lab:
        lab.label(*bitboard_arrays(LATE_GAMES))
        assert runner._pool is not None
    assert runner._pool is None
    with pytest.raises(ValueError, match="workers must be an integer >= 1, got 0"):
        ProcessChunkRunner(0)


def test_the_self_play_workers_are_kept_for_the_next_generation():
    from connect_zero_pipeline.executors import local

    torch.manual_seed(0)
    model = build_model({"arch": "resnet", "blocks": 1, "channels": 8, "value_hidden": 8})
    cfg = selfplay_config(num_games=4, sims=2, moves_per_gen=16, seed=1)
    local.close_pools()
    first = local_self_play(cfg, model, workers=2, generation=1, progress=True).table
    pids = {p.pid for p in local._POOLS[2].pool._processes.values()}
    second = local_self_play(cfg, model, workers=2, generation=2).table
    assert {p.pid for p in local._POOLS[2].pool._processes.values()} == pids  # same processes
    assert first["generation"].eq(1).all() and second["generation"].eq(2).all()
    alone = self_play(cfg, model=model, generation=2)  # nothing carried over between calls
    same = [c for c in alone.columns if c != "root_value"]
    assert second[same].equals(alone[same])
    local.close_pools()
    assert local._POOLS == {}


def _init_then_interrupted(parent: int, conn) -> None:
    """A worker after its initializer, then a Ctrl-C."""
    import os
    import signal

    from connect_zero_pipeline.executors.local import init_worker

    init_worker(parent)
    conn.send("initialized")
    os.kill(os.getpid(), signal.SIGINT)  # as a Ctrl-C at the terminal, while it works
    conn.send("survived the Ctrl-C")


def test_a_ctrl_c_ends_a_worker_at_once_and_quietly():
    import os
    import signal
    from multiprocessing import get_context

    ctx = get_context("spawn")
    mine, theirs = ctx.Pipe()
    worker = ctx.Process(target=_init_then_interrupted, args=(os.getpid(), theirs))
    worker.start()
    worker.join(60)
    assert mine.recv() == "initialized"
    # os._exit from the handler: no KeyboardInterrupt (whose traceback would end it with 1)
    assert worker.exitcode == 128 + signal.SIGINT
    assert not mine.poll()


SELF_PLAY = """
import os
import signal
import sys
from multiprocessing.context import SpawnProcess

from connect_zero_pipeline.core.models import build_model
from connect_zero_pipeline.executors import local
from connect_zero_pipeline.executors.local import local_self_play
from tests.helpers import selfplay_config

start = local._QuietStartProcess.start
spawn = SpawnProcess.start


def announced(process):  # a line as each worker process is started (it then imports torch)
    start(process)
    print("worker started", flush=True)


def interrupted(process):  # a terminal's Ctrl-C that lands while the first worker starts
    SpawnProcess.start = spawn
    os.killpg(os.getpgrp(), signal.SIGINT)
    spawn(process)


{patch}
model = build_model({{"arch": "resnet", "blocks": 1, "channels": 8, "value_hidden": 8}})
try:
    local_self_play(selfplay_config(num_games=4, sims=2, moves_per_gen={moves}), model, workers=2)
except KeyboardInterrupt:
    print("Interrupted.", flush=True)
    sys.exit(130)
print("Played.", flush=True)
"""


def _self_play_in_a_terminal(patch: str, moves: int):
    """``SELF_PLAY`` with ``patch`` and ``moves`` a shard, in a process group of its own as a
    terminal starts it; its output and errors in one stream."""
    import subprocess
    import sys

    from tests.helpers import REPO, _as_in_a_terminal

    script = SELF_PLAY.format(patch=patch, moves=moves)
    return subprocess.Popen([sys.executable, "-c", script], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, preexec_fn=_as_in_a_terminal)  # fmt: skip


def test_a_ctrl_c_that_lands_while_a_worker_starts_is_not_lost():
    """The run's process keeps its handler while it starts a worker (only SIGINT's mask
    changes, in the starting thread): a Ctrl-C in that moment stops the run as any other.
    A shard is a few moves: a lost Ctrl-C lets the run play them and say so."""
    proc = _self_play_in_a_terminal("SpawnProcess.start = interrupted", moves=8)
    rest, _ = proc.communicate()
    assert proc.returncode == 130 and rest == "Interrupted.\n", rest[-2000:]


def test_a_ctrl_c_while_the_workers_start_is_the_parent_s_alone():
    """A terminal's Ctrl-C reaches every process of its group. The workers, still importing
    torch, stay quiet (they start with SIGINT blocked); only the parent says it was
    interrupted: no KeyboardInterrupt or BrokenPipe traceback of a worker. And the workers
    play none of the shards they were sent (the generation was given up): the run ends."""

    # Both workers started, and importing torch: the Ctrl-C lands in their start-up.
    rest = _ctrl_c_after("local._QuietStartProcess.start = announced", ["worker started\n"] * 2)
    assert rest == "Interrupted.\n"


def _ctrl_c_after(patch: str, lines: list[str]) -> str:
    """``SELF_PLAY`` with ``patch`` and minutes of self-play a shard (a worker that played its
    shard would outlast the test), stopped by a terminal's Ctrl-C once it printed ``lines``:
    it must end with 130 within a minute; the rest of its output."""
    import os
    import signal

    proc = _self_play_in_a_terminal(patch, moves=40000)
    try:
        assert [proc.stdout.readline() for _ in lines] == lines
        os.killpg(proc.pid, signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)  # not the minutes of a played shard
        assert proc.returncode == 130
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return rest


def test_a_ctrl_c_while_the_shards_play_ends_the_generation_at_once():
    """A Ctrl-C once the workers play their shards (the parent waits on them): the parent
    gives the generation up and says it was interrupted; the shards' minutes are not played."""
    patch = (
        "real_wait = local.wait\n"
        "def announced_wait(*args, **kwargs):  # the parent waits on the playing shards\n"
        "    if not getattr(announced_wait, 'said', False):\n"
        "        announced_wait.said = True\n"
        "        print('waiting', flush=True)\n"
        "    return real_wait(*args, **kwargs)\n"
        "local.wait = announced_wait\n"
    )
    assert _ctrl_c_after(patch, ["waiting\n"]) == "Interrupted.\n"
