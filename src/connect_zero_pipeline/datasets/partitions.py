"""``OptionalPartitionedDataset``: a ``PartitionedDataset`` that may be empty."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kedro_datasets.partitions import PartitionedDataset


class OptionalPartitionedDataset(PartitionedDataset):
    """Loads ``{}`` for a folder with no partitions (or no folder) instead of raising.

    The node reading it then decides what "nothing there" means and says so
    (the scorecard names the run that would have produced the files).
    """

    def load(self) -> dict[str, Callable[[], Any]]:
        self._invalidate_caches()
        if not self._list_partitions():
            return {}
        return super().load()
