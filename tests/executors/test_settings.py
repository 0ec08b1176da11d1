"""Every node setting reaches the search of every executor (in this process, local workers;
the Ray actors' check is in test_ray.py, with its cluster)."""

from __future__ import annotations

import dataclasses
import queue
from concurrent.futures import ThreadPoolExecutor

import torch
from torch._dynamo.utils import counters

from connect_zero_pipeline.core.models import build_model
from connect_zero_pipeline.core.search.compiled import compiled_search
from connect_zero_pipeline.executors import dispatch, local
from connect_zero_pipeline.executors.settings import ROUTING, NodeSettings
from tests.helpers import selfplay_config

# Every field away from its default: a setting dropped on the way falls back and shows.
NODE = NodeSettings(device="cpu", num_threads=2, backend="torch", compile="eager",
                    compile_cache="elsewhere")  # fmt: skip
CFG = selfplay_config(num_games=4, sims=2, moves_per_gen=3, seed=5)


def _model():
    torch.manual_seed(0)
    return build_model({"arch": "resnet", "blocks": 1, "channels": 8, "value_hidden": 8})


def _spy(monkeypatch, module) -> list[dict]:
    """Record the keyword arguments of ``module.play_games`` (which still plays)."""
    calls, real = [], module.play_games

    def play_games(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "play_games", play_games)
    return calls


def test_every_node_setting_is_routing_or_sent_to_each_shard():
    fields = {f.name for f in dataclasses.fields(NodeSettings)}
    sent = set(NODE.shard_kwargs(torch.device("cpu")))
    assert fields == set(ROUTING) | sent
    assert all(getattr(NODE, f) != getattr(NodeSettings(), f) for f in sent - {"device"})


def test_the_in_process_path_plays_with_every_setting(monkeypatch):
    calls = _spy(monkeypatch, local)  # one worker: the local executor plays in this process
    node = dataclasses.replace(NODE, workers=1)
    dispatch.play_generation(CFG, _model(), 1, node)
    assert len(calls) == 1
    sent = node.shard_kwargs(torch.device("cpu"))
    assert {k: calls[0][k] for k in sent} == sent


def test_the_device_path_plays_with_every_setting(monkeypatch):
    """Off the CPU (a GPU) the run's process plays every game at once, with every setting."""
    calls: list[dict] = []
    monkeypatch.setattr(dispatch, "resolve_device", lambda _device: torch.device("cuda"))
    monkeypatch.setattr(dispatch, "play_games", lambda *a, **kw: calls.append(kw) or "games")
    assert dispatch.play_generation(CFG, _model(), 1, NODE) == "games"
    sent = NODE.shard_kwargs(torch.device("cuda"))
    assert len(calls) == 1 and {k: calls[0][k] for k in sent} == sent


def test_compile_eager_in_process_traces_the_search():
    # The setting this path once dropped: one worker, compile eager, so the search runs as
    # torch.compile's graphs (traced once a process), where off runs none.
    program = compiled_search(CFG.mcts, "eager")
    before = program.counters.graph_calls
    dispatch.play_generation(CFG, _model(), 1, dataclasses.replace(NODE, workers=1))
    calls = program.counters.graph_calls - before
    assert calls >= CFG.moves_per_gen * (CFG.mcts.sims + 2)  # sims + 2 graph calls a move
    assert calls % (CFG.mcts.sims + 2) == 0
    assert counters["stats"]["unique_graphs"] > 0
    before = program.counters.graph_calls, counters["stats"]["calls_captured"]
    off = dataclasses.replace(NODE, workers=1, compile="off")
    played = dispatch.play_generation(CFG, _model(), 1, off)
    assert (program.counters.graph_calls, counters["stats"]["calls_captured"]) == before
    assert played.compile_s == 0.0 and len(played.table) > 0


class _ThreadShards:
    """The local executor's pool, with threads of this process instead of processes (so the
    spy sees what each shard's worker function is given)."""

    def __init__(self, workers: int):
        self.pool = ThreadPoolExecutor(workers)
        self.steps = queue.Queue()

    def drain(self) -> None:
        pass


def test_the_local_workers_play_with_every_setting(monkeypatch):
    calls = _spy(monkeypatch, local)
    shards = _ThreadShards(2)
    monkeypatch.setattr(local, "_shard_pool", lambda workers: shards)
    monkeypatch.setattr(local, "_STEPS", shards.steps)  # what a worker's initializer sets
    node = dataclasses.replace(NODE, workers=2)
    with shards.pool:
        dispatch.play_generation(CFG, _model(), 1, node)
    assert len(calls) == 2
    sent = node.shard_kwargs(torch.device("cpu"))
    assert all({k: call[k] for k in sent} == sent for call in calls)
