"""``bench pool`` prints its figures (a smoke run; benchmarks never assert timings)."""

from __future__ import annotations

import argparse

from connect_zero_pipeline.bench.pool import run
from connect_zero_pipeline.executors import local


def test_bench_pool_prints_both_series_and_the_saving():
    lines = list(run(argparse.Namespace(quick=True)))
    names = [(line["figure"], line.get("generation")) for line in lines]
    assert names[:6] == [(f"seconds_{s}", g) for s in ("kept", "fresh") for g in (1, 2, 3)]
    assert names[6:] == [("seconds_per_generation_kept", None), ("saved_per_generation", None)]
    assert all(line["value"] >= 0 or line["figure"] == "saved_per_generation" for line in lines)
    assert local._POOLS == {}  # the benchmark leaves no workers behind
