"""``bench pool`` prints its figures (a smoke run; benchmarks never assert timings)."""

from __future__ import annotations

import argparse

import pytest

from connect_zero_pipeline.bench.pool import run
from connect_zero_pipeline.executors import local


@pytest.mark.slow
def test_bench_pool_prints_both_series_and_the_saving():
    lines = list(run(argparse.Namespace(quick=True)))
    names = [(line["figure"], line.get("generation")) for line in lines]
    assert names[:6] == [(f"seconds_{s}", g) for s in ("kept", "fresh") for g in (1, 2, 3)]
    assert names[6:] == [("seconds_per_generation_kept", None), ("saved_per_generation", None)]
    seconds = {(line["figure"], line.get("generation")): line["value"] for line in lines}
    kept = [seconds["seconds_kept", g] for g in (2, 3)]  # after the first: the pool is warm
    fresh = [seconds["seconds_fresh", g] for g in (2, 3)]
    assert all(value > 0 for value in kept + fresh)
    summary = lines[6]
    assert summary["value"] == pytest.approx(sum(kept) / 2)
    assert summary["baseline_value"] == pytest.approx(sum(fresh) / 2)
    assert lines[7]["value"] == pytest.approx(summary["baseline_value"] - summary["value"])
    assert local._POOLS == {}  # the benchmark leaves no workers behind
