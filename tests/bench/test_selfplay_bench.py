"""``bench selfplay`` prints the shape of a move (a smoke run; benchmarks never assert timings)."""

from __future__ import annotations

import argparse

from connect_zero_pipeline.bench.selfplay import run

FIGURES = ["positions_per_s", "evals_per_s", "host_syncs_per_move", "aten_ops_per_move",
           "bytes_per_slot"]  # fmt: skip


def test_bench_selfplay_counts_the_host_syncs_of_both_ways():
    lines = list(run(argparse.Namespace(quick=True)))
    keys = [(line["batch"], line["sims"], line["host_sync"], line["figure"]) for line in lines]
    assert keys == [(b, 8, h, f) for b in (32, 128) for h in (True, False) for f in FIGURES]
    value = {key: line["value"] for key, line in zip(keys, lines, strict=True)}
    for batch in (32, 128):
        # Without host sync, none in the whole move; with it, several per simulation.
        assert value[batch, 8, False, "host_syncs_per_move"] == 0
        assert value[batch, 8, True, "host_syncs_per_move"] > 8
        # The fixed shapes run every level and evaluate every leaf: more ops.
        assert (
            value[batch, 8, False, "aten_ops_per_move"] > value[batch, 8, True, "aten_ops_per_move"]
        )
        assert all(value[batch, 8, h, "positions_per_s"] > 0 for h in (True, False))
