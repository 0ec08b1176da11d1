"""The solver's labels of the public position sets, shipped: a part of the solver cache.

    .venv/bin/python scripts/public_sets_cache.py    # writes SHIPPED (about 25 s on 2 cores)

The public sets (the catalog entry ``pons_benchmarks``: Pascal Pons' ``Test_L3_R1`` and
``Test_L2_R1``, in ``tests/data/pons``) are fixed data, and every run labels every move of
every one of their positions (``label_public_sets``) through the ``pons`` section's solver
cache. This writes those labels, solved exactly by the same labeller with an empty cache,
as one part of that cache (``part-public-sets.parquet``, sorted by key, so a rebuild is the
same file): on a fresh clone the labelling then finds every position in the cache and
solves none. ``tests/test_public_sets_cache.py`` checks that the part covers the catalog's
files and agrees with the solver.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from connect_zero_pipeline.core.labelling import (  # noqa: E402
    SHIPPED_PART,
    Labeller,
    SolvedCache,
    cache_part,
    serial_chunks,
)
from connect_zero_pipeline.datasets.pons_files import PonsFilesDataset  # noqa: E402
from connect_zero_pipeline.params.pons import PonsConfig  # noqa: E402

SHIPPED = REPO / PonsConfig().cache_dir / SHIPPED_PART


def public_sets() -> dict:
    """The catalog's ``pons_benchmarks`` files, read: name -> positions."""
    catalog = yaml.safe_load((REPO / "conf/base/catalog.yml").read_text())
    files = {k: str(REPO / v) for k, v in catalog["pons_benchmarks"]["filepaths"].items()}
    return PonsFilesDataset(files).load()


def main() -> int:
    tables = public_sets().values()
    position = np.concatenate([t["position"].to_numpy(np.uint64) for t in tables])
    mask = np.concatenate([t["mask"].to_numpy(np.uint64) for t in tables])
    with Labeller(max_nodes=0, cache=SolvedCache(None), run_chunks=serial_chunks) as labeller:
        scores, ok, stats = labeller.label(position, mask, progress="solving")
    if not ok.all():
        raise SystemExit(f"{int((~ok).sum())} positions were not solved")
    part = cache_part(position, mask, scores).drop_duplicates("key").sort_values("key")
    SHIPPED.parent.mkdir(parents=True, exist_ok=True)
    part.to_parquet(SHIPPED, index=False)
    print(f"{len(part)} positions, {SHIPPED.stat().st_size} bytes: {SHIPPED.relative_to(REPO)} "
          f"({stats.solve_seconds:.0f} s solving)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
