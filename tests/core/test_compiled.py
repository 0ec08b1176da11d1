"""The compiled device path (core.search.compiled): one graph per step, no graph break, the same
trees and games as the eager search, no recompilation per move, generation or shard; and a
self-play move and a training step on the ``meta`` device (no host read, no tensor made on
the wrong device, no op without a meta kernel: what a first GPU run would catch).

The graphs are traced with torch.compile's ``eager`` backend: Dynamo builds exactly the
graphs inductor would compile (a graph break or a data-dependent shape fails the same way),
in seconds instead of minutes of code generation on two cores. ``bench selfplay`` runs
inductor and reports the figures.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch._dynamo.backends.common import aot_autograd
from torch._dynamo.utils import counters
from torch._higher_order_ops.while_loop import while_loop_op

from connect_zero_pipeline.core.bitboard import State, initial_state
from connect_zero_pipeline.core.config.search import COMPILE, MCTSConfig
from connect_zero_pipeline.core.config.selfplay import SEARCH, SelfPlayConfig
from connect_zero_pipeline.core.config.training import TrainConfig
from connect_zero_pipeline.core.inference import torch_evaluate_fn
from connect_zero_pipeline.core.models import build_model
from connect_zero_pipeline.core.search import SearchInputs
from connect_zero_pipeline.core.search.base import descent_bound
from connect_zero_pipeline.core.search.compiled import CompiledSearch, compile_backend, network
from connect_zero_pipeline.core.search.loop import search
from connect_zero_pipeline.core.selfplay import _draws_per_step, _step, self_play, slot_keys
from connect_zero_pipeline.core.training import train_step
from connect_zero_pipeline.executors.settings import NodeSettings
from tests.core.test_mcts import _mixed_batch, pure_fn


def _graphs() -> int:
    return counters["stats"]["unique_graphs"]


def _breaks() -> int:
    return sum(counters["graph_break"].values())


def test_a_simulation_descends_no_deeper_than_its_tree_can_be():
    assert [descent_bound(s) for s in (1, 2, 5, 43, 44, 400)] == [0, 1, 4, 42, 42, 42]


@pytest.mark.parametrize(("kind", "sims"), [("gumbel", 16), ("puct", 64)])
def test_the_compiled_search_is_one_graph_per_step_and_grows_the_eager_tree(kind, sims):
    # 64 simulations reach every descent bound (0 .. 42 levels); the descent is one rolled
    # loop, so three graphs (start, a simulation, finish) serve every bound and every count.
    state = _mixed_batch()  # live games of mixed plies and a finished one
    gumbel = torch.randn(state.batch_size, 7) if kind == "gumbel" else None
    noise = torch.softmax(torch.randn(state.batch_size, 7), 1) if kind == "puct" else None
    cfg = MCTSConfig(sims=sims, search=kind, dirichlet_eps=0.25 if kind == "puct" else 0.0)
    program = CompiledSearch(cfg, backend="aot_eager")  # AOT: what inductor is given
    breaks, graphs = _breaks(), _graphs()
    compiled = program(state, pure_fn, SearchInputs(noise=noise, gumbel=gumbel))
    assert _breaks() == breaks
    assert _graphs() - graphs == 3
    assert program.counters.graph_calls == sims + 2 <= 3 * sims + 10
    eager = search(
        state, pure_fn, cfg, inputs=SearchInputs(noise=noise, gumbel=gumbel), host_sync=False
    )
    assert torch.equal(compiled.visit_counts, eager.visit_counts)
    assert torch.equal(compiled.root_value, eager.root_value)
    if kind == "gumbel":
        assert torch.equal(compiled.action_weights, eager.action_weights)
        assert torch.equal(compiled.action, eager.action)
    n = eager.tree.num_nodes
    for field in ("visits", "value_sum", "parent", "children", "prior", "position"):
        assert torch.equal(getattr(compiled.tree, field)[:, :n], getattr(eager.tree, field)[:, :n])
    # Another move (other positions, same shapes) compiles nothing.
    graphs = _graphs()
    program(State(*(x.flip(0) for x in state)), pure_fn, SearchInputs(noise=noise, gumbel=gumbel))
    assert _graphs() == graphs and program.counters.graph_calls == 2 * (sims + 2)


def test_compiled_self_play_plays_the_eager_games_and_compiles_once_per_process():
    torch.manual_seed(0)
    first, second = build_model("tiny"), build_model("tiny")
    mcts = dataclasses.replace(SEARCH, sims=4)
    cfg = SelfPlayConfig(num_games=12, moves_per_gen=10, mcts=mcts)
    eager = self_play(cfg, model=first, compile="off", backend="torch", shard_index=0,
                      num_shards=2)  # fmt: skip
    breaks = _breaks()
    compiled = self_play(cfg, model=first, compile="eager", shard_index=0, num_shards=2)
    assert _breaks() == breaks
    # The same games: every action, game id and ply; floats up to the batch's rounding.
    assert len(compiled) == len(eager) > 0
    for column in ("game", "ply", "position", "mask", "action"):
        assert compiled[column].equals(eager[column]), column
    floats = [c for c in eager.columns if eager[c].dtype.kind == "f"]
    assert (compiled[floats] - eager[floats]).abs().max().max() < 1e-5
    # The next generation (a new model) and the other shard reuse every graph.
    graphs = _graphs()
    other = self_play(cfg, model=second, compile="eager", generation=1, shard_index=1,
                      num_shards=2)  # fmt: skip
    assert _graphs() == graphs and len(other) > 0
    reference = self_play(cfg, model=second, compile="off", backend="torch", generation=1,
                          shard_index=1, num_shards=2)  # fmt: skip
    assert other["action"].equals(reference["action"])


def test_compile_settings_are_checked_and_mean_a_backend():
    # auto compiles nothing at a run's start, on any device (docs/gpu.md: the eager
    # host-sync search, measured faster than a cold compile's minutes).
    assert compile_backend("auto") is None and compile_backend("off") is None
    assert compile_backend("on") == "inductor" and compile_backend("eager") == "eager"
    with pytest.raises(ValueError, match="compile must be one of"):
        compile_backend("yes")
    with pytest.raises(ValueError, match=r"compile.*'yes'"):
        NodeSettings(compile="yes")
    assert NodeSettings().compile == "auto" and set(COMPILE) >= {"auto", "on", "off"}
    # YAML reads a bare `compile: on` / `off` as a boolean.
    assert (
        NodeSettings(compile=True).compile == "on" and NodeSettings(compile=False).compile == "off"
    )
    with pytest.raises(ValueError, match="backend is 'onnxruntime'"):
        self_play(SelfPlayConfig(num_games=2, moves_per_gen=1), model=build_model("tiny"),
                  compile="eager", backend="onnxruntime")  # fmt: skip


def test_network_keeps_one_module_and_takes_each_models_weights():
    torch.manual_seed(1)
    first, second = build_model("tiny"), build_model("tiny")
    boards = torch.zeros(3, 6, 7, dtype=torch.int8)
    fn = network(first, torch.device("cpu"))
    a = fn(boards)[0]
    assert network(second, torch.device("cpu")) is fn
    b = fn(boards)[0]
    assert not torch.equal(a, b)
    assert torch.allclose(b, torch_evaluate_fn(second)(boards)[0])


@pytest.mark.parametrize("kind", ["gumbel", "puct"])
def test_a_self_play_move_runs_on_the_meta_device(kind):
    meta = torch.device("meta")
    cfg = SelfPlayConfig(num_games=6, mcts=dataclasses.replace(SEARCH, sims=8, search=kind))
    model = build_model("tiny").to(meta)
    evaluate_fn = torch_evaluate_fn(model, meta)
    state = initial_state(6, meta)
    keys = slot_keys(cfg.seed, 3, torch.arange(6, device=meta))
    every = torch.arange(6, device=meta)
    episode = torch.zeros(6, dtype=torch.int64, device=meta)
    for active in (None, state.ply > 0):  # a step of every slot, and a masked finishing step
        rows, after = _step(state, every, active, keys, episode, 40, evaluate_fn, cfg,
                            lambda s, fn, **kw: search(s, fn, cfg.mcts, host_sync=False,
                                                       **kw))  # fmt: skip
        assert all(v.device == meta for v in rows.values()) and after.position.device == meta
        assert rows["target"].shape == (6, 7) and rows["action"].shape == (6,)
    assert _draws_per_step(cfg.mcts) > 7


def _host_copies(seen: list[str]):
    """A ``torch.compile`` backend that runs the graphs inductor is given (aten ops, after
    AOTAutograd) eagerly and notes each op of them that takes a CPU tensor and makes a tensor
    on another device: a copy from the host, which fails a CUDA graph's capture. The rolled
    descent's ``while_loop`` is not one: its CPU counter and bound stay on the host."""

    def record(gm: torch.fx.GraphModule, example_inputs):
        for graph in (m.graph for m in gm.modules() if isinstance(m, torch.fx.GraphModule)):
            for node in graph.nodes:
                if node.op != "call_function" or node.target is while_loop_op:
                    continue
                ins = [a.meta.get("val") for a in node.all_input_nodes]
                out = node.meta.get("val")
                outs = out if isinstance(out, tuple | list) else [out]
                if any(isinstance(t, torch.Tensor) and t.device.type == "cpu" for t in ins) and any(
                    isinstance(t, torch.Tensor) and t.device.type != "cpu" for t in outs
                ):
                    seen.append(str(node.target))
        return gm.forward

    return aot_autograd(fw_compiler=record)


@pytest.mark.parametrize("kind", ["gumbel", "puct"])
def test_a_compiled_search_runs_on_the_meta_device(kind):
    # Its only host reads are of the rolled descent's counter and bound, which live on the
    # CPU: a read of a device value would fail on `meta`, which has none. And nothing is
    # copied from the host: the first H200's capture failed on the descent's column count.
    meta = torch.device("meta")
    evaluate_fn = torch_evaluate_fn(build_model("tiny").to(meta), meta)
    state = initial_state(6, meta)
    cfg = MCTSConfig(sims=8, search=kind)
    search(state, evaluate_fn, cfg, host_sync=False)  # the bitboard's tables, made eagerly
    gumbel = torch.zeros(6, 7, device=meta) if kind == "gumbel" else None
    seen: list[str] = []
    program = CompiledSearch(cfg, backend=_host_copies(seen))
    result = program(state, evaluate_fn, SearchInputs(gumbel=gumbel))
    assert result.visit_counts.device == meta and result.visit_counts.shape == (6, 7)
    assert program.counters.graphs_compiled == 3
    assert seen == []


def test_a_training_step_runs_on_the_meta_device():
    meta = torch.device("meta")
    net = build_model("tiny").to(meta).train()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    boards = torch.zeros(8, 6, 7, dtype=torch.int8, device=meta)
    pi = torch.full((8, 7), 1 / 7, device=meta)
    stats = train_step(net, opt, boards, pi, torch.zeros(8, device=meta), TrainConfig())
    assert stats.device == meta and stats.shape == (4,)
    assert all(p.device == meta for p in net.parameters())


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_cuda_the_compiled_captured_search_plays_the_eager_games():
    from tests.core.test_mcts import _W

    cuda = torch.device("cuda")
    weights = _W.to(cuda)

    def cuda_fn(boards):  # pure_fn on the GPU: integer sums, batch-invariant
        s = boards.long() * weights
        return s.sum(1).float() / 8.0, torch.tanh(s.sum((1, 2)).float() / 40.0)

    state = _mixed_batch()
    gumbel = torch.randn(state.batch_size, 7)
    cfg = MCTSConfig(sims=16, search="gumbel")
    program = CompiledSearch(cfg)  # inductor, a CUDA graph per (batch, network)
    on_gpu = State(*(x.to(cuda) for x in state))
    for _ in range(3):  # warm-up, capture, replay
        result = program(on_gpu, cuda_fn, SearchInputs(gumbel=gumbel.to(cuda)))
    assert program.counters.replays == 3
    cpu = search(state, pure_fn, cfg, inputs=SearchInputs(gumbel=gumbel))
    assert torch.equal(result.visit_counts.cpu(), cpu.visit_counts)
    assert torch.equal(result.action.cpu(), cpu.action)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_cuda_compiled_self_play_plays_the_eager_games():
    cuda = torch.device("cuda")
    torch.manual_seed(0)
    model = build_model("tiny")
    sp = SelfPlayConfig(num_games=64, moves_per_gen=12, mcts=dataclasses.replace(SEARCH, sims=8))
    eager = self_play(sp, model=model, device=cuda, compile="off")
    compiled = self_play(sp, model=model, device=cuda, compile="on")
    assert compiled["action"].equals(eager["action"]) and compiled["game"].equals(eager["game"])


class _FakeStream:
    def wait_stream(self, _other) -> None:
        pass


def test_a_failed_cuda_graph_capture_runs_the_search_compiled_without_it(monkeypatch, caplog):
    """The capture's CUDA calls stood in for on the CPU, the capture itself raising: the move
    is the eager search's, one warning says so, and no later move tries to capture."""
    import contextlib

    calls = {"capture": 0}

    @contextlib.contextmanager
    def failing_capture(_graph, capture_error_mode="global"):
        calls["capture"] += 1
        calls["mode"] = capture_error_mode
        raise RuntimeError("CUDA error: operation not permitted when stream is capturing")
        yield  # pragma: no cover

    monkeypatch.setattr(torch.cuda, "Stream", _FakeStream)
    monkeypatch.setattr(torch.cuda, "current_stream", _FakeStream)
    monkeypatch.setattr(torch.cuda, "stream", lambda _s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "CUDAGraph", object)
    monkeypatch.setattr(torch.cuda, "graph", failing_capture)
    state = _mixed_batch()
    gumbel = torch.randn(state.batch_size, 7)
    cfg = MCTSConfig(sims=4, search="gumbel")
    program = CompiledSearch(cfg, backend="eager", cuda_graph=True)
    with caplog.at_level("WARNING", logger="connect_zero_pipeline.core.search.compiled"):
        first = program(state, pure_fn, SearchInputs(gumbel=gumbel))
        again = program(state, pure_fn, SearchInputs(gumbel=gumbel))
    eager = search(state, pure_fn, cfg, inputs=SearchInputs(gumbel=gumbel), host_sync=False)
    for result in (first, again):
        assert torch.equal(result.visit_counts, eager.visit_counts)
        assert torch.equal(result.action, eager.action)
    warned = [r.getMessage() for r in caplog.records if "capture" in r.getMessage()]
    assert len(warned) == 1 and "runs compiled without it" in warned[0], warned
    assert "operation not permitted" in warned[0]
    assert calls["capture"] == 1 and program.counters.replays == 0 and not program.cuda_graph
    # Other threads' CUDA calls during a capture (an overlapped scorecard) do not fail it.
    assert calls["mode"] == "thread_local"
