"""``bench selfplay`` prints the shape of a move (a smoke run; benchmarks never assert timings)."""

from __future__ import annotations

import argparse

from connect_zero_pipeline.bench.selfplay import run
from connect_zero_pipeline.core.search.base import descent_bound

FIGURES = ["positions_per_s", "evals_per_s", "host_syncs_per_move", "aten_ops_per_move",
           "bytes_per_slot"]  # fmt: skip
COMPILED = ["graph_breaks", "graph_calls_per_move", "kernels_per_move", "compile_s", "recompiles"]
WAYS = [("host_sync", True, False), ("device", False, False), ("compiled", False, True)]


def test_bench_selfplay_counts_the_host_syncs_and_graph_calls_of_every_way():
    # The compiled cells traced by torch.compile's eager backend: the same graphs, no codegen.
    # One batch size of --quick's two (each compiles its own graphs; --sizes is the knob).
    lines = list(run(argparse.Namespace(quick=True, compile="eager", sizes="32")))
    keys = [(line["batch"], line["sims"], line["way"], line["figure"]) for line in lines]
    assert keys == [(32, 8, way, f) for way, _, c in WAYS for f in FIGURES + COMPILED * c]
    assert all(line["host_sync"] == (line["way"] == "host_sync") for line in lines)
    assert all(line["compiled"] == (line["way"] == "compiled") for line in lines)
    value = {key: line["value"] for key, line in zip(keys, lines, strict=True)}
    for batch in (32,):
        # Without host sync, none in the whole move; with it, several per simulation.
        assert value[batch, 8, "device", "host_syncs_per_move"] == 0
        # The compiled descent's loop counter lives on the CPU and is read there (at most one
        # read a level and one a simulation; test_compiled runs it on the meta device: no
        # device value is read).
        levels = sum(descent_bound(s) + 2 for s in range(1, 9))
        assert 0 < value[batch, 8, "compiled", "host_syncs_per_move"] <= levels
        assert value[batch, 8, "host_sync", "host_syncs_per_move"] > 8
        # The fixed shapes run every level and evaluate every leaf: more ops.
        assert (
            value[batch, 8, "device", "aten_ops_per_move"]
            > value[batch, 8, "host_sync", "aten_ops_per_move"]
        )
        # Compiled: one graph per step, no break, nothing compiled again by a later move.
        assert value[batch, 8, "compiled", "graph_calls_per_move"] == 8 + 2
        assert value[batch, 8, "compiled", "graph_breaks"] == 0
        assert value[batch, 8, "compiled", "recompiles"] == 0
        assert all(value[batch, 8, w, "positions_per_s"] > 0 for w, _, _ in WAYS)
