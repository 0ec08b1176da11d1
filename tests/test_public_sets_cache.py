"""The shipped solver-cache part of the public sets (``scripts/public_sets_cache.py``): it
covers every position of the catalog's public sets, agrees with the solver, and a fresh
project's labelling of them solves nothing."""

from __future__ import annotations

import numpy as np
import pandas as pd

from connect_zero_pipeline.core.labelling import (
    SCORE_COLUMNS,
    SHIPPED_PART,
    Labeller,
    SolvedCache,
    position_keys,
)
from connect_zero_pipeline.core.solver import Solver
from connect_zero_pipeline.params.pons import PonsConfig
from tests.helpers import REPO

SHIPPED = REPO / PonsConfig().cache_dir / SHIPPED_PART


def _public_sets():
    import importlib.util

    spec = importlib.util.spec_from_file_location("build", REPO / "scripts/public_sets_cache.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    assert build.SHIPPED == SHIPPED  # the script writes what the cache reads
    return build.public_sets()


def test_the_shipped_part_covers_the_public_sets_and_agrees_with_the_solver():
    part = pd.read_parquet(SHIPPED)
    tables = _public_sets()
    position = np.concatenate([t["position"].to_numpy(np.uint64) for t in tables.values()])
    mask = np.concatenate([t["mask"].to_numpy(np.uint64) for t in tables.values()])
    assert set(position_keys(position, mask)) == set(part["key"].to_numpy(np.uint64))
    assert part["key"].is_monotonic_increasing  # the build's order: a rebuild is the same file
    # A labeller with the shipped cache alone solves nothing ...
    with Labeller(max_nodes=0, cache=SolvedCache(SHIPPED.parent)) as labeller:
        _, ok, stats = labeller.label(position, mask)
    assert ok.all() and stats.solved == 0 and stats.cached == len(position)
    # ... and its scores are the solver's, on a sample of positions.
    solver = Solver(tt_log2=20)
    rows = part.sample(25, random_state=0)
    for row in rows.itertuples(index=False):
        expected = solver.analyze((int(row.position), int(row.mask)))
        got = [getattr(row, c) for c in SCORE_COLUMNS]
        assert [(-128 if e is None else e) for e in expected] == got
