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
    assert names[:4] == [(f"seconds_{s}", g) for s in ("kept", "fresh") for g in (1, 2)]
    assert names[4:] == [("seconds_per_generation_kept", None), ("saved_per_generation", None)]
    seconds = {(line["figure"], line.get("generation")): line["value"] for line in lines}
    kept, fresh = seconds["seconds_kept", 2], seconds["seconds_fresh", 2]  # the pool is warm
    assert kept > 0 and fresh > 0
    summary = lines[4]
    assert summary["value"] == pytest.approx(kept)
    assert summary["baseline_value"] == pytest.approx(fresh)
    assert lines[5]["value"] == pytest.approx(fresh - kept)
    assert local._POOLS == {}  # the benchmark leaves no workers behind
