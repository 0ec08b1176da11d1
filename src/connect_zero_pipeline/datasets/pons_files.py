"""``PonsFilesDataset``: position files in Pascal Pons' benchmark format, read-only.

Loads ``{name: positions table}`` (:func:`~..core.pons_files.read_pons_file`'s columns) for
the files named in the catalog entry, in the given order. A bad line fails the load,
naming the file, the line and the bad move.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from kedro.io import AbstractDataset, DatasetError

from ..core.pons_files import read_pons_file


class PonsFilesDataset(AbstractDataset[None, dict[str, pd.DataFrame]]):
    def __init__(self, filepaths: dict[str, str] | None = None, metadata: dict | None = None):
        """``filepaths``: name -> path of a Pons-format file (``{}``: none)."""
        if filepaths is not None and not isinstance(filepaths, dict):
            raise DatasetError(f"filepaths must be a mapping of name: path, got {filepaths!r}")
        self._filepaths = {str(k): Path(v) for k, v in (filepaths or {}).items()}
        self.metadata = metadata

    def load(self) -> dict[str, pd.DataFrame]:
        out = {}
        for name, path in self._filepaths.items():
            try:
                table, errors = read_pons_file(path)
            except OSError as exc:
                raise DatasetError(str(exc)) from exc
            if errors:
                raise DatasetError(f"{errors[0]} ({len(errors)} bad line(s) in {path})")
            out[name] = table
        return out

    def save(self, data: Any) -> None:
        raise DatasetError("PonsFilesDataset is read-only: the position files are inputs")

    def _describe(self) -> dict[str, Any]:
        return {"filepaths": {k: str(v) for k, v in self._filepaths.items()}}

    def _exists(self) -> bool:
        return all(p.is_file() for p in self._filepaths.values())
