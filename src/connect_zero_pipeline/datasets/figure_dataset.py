"""``FigureDataset``: a matplotlib figure as one PNG file per version.

kedro-datasets' ``MatplotlibDataset`` does the same, but its module imports
``matplotlib.pyplot`` (0.3-0.5 s) when the catalog is made, before a run's first node,
whether or not a figure is drawn. This one imports nothing of matplotlib: the node that
draws a figure has imported it already. Loading gives the PNG's bytes; kedro-viz shows it
as an image (:meth:`FigureDataset.preview`).
"""

from __future__ import annotations

import base64
import io
import sys
from typing import Any

from .versioned_file import VersionedFileDataset


class FigureDataset(VersionedFileDataset[Any, bytes]):
    """A figure saved as PNG (``figure.savefig``), then closed in pyplot; loads the bytes.

    Example catalog entry::

        learning_curves:
          type: connect_zero_pipeline.datasets.FigureDataset
          filepath: data/08_reporting/learning_curves.png
          versioned: true
    """

    def _encode(self, data: Any) -> bytes:
        buffer = io.BytesIO()
        data.savefig(buffer, format="png")
        pyplot = sys.modules.get("matplotlib.pyplot")  # a figure pyplot made stays open in it
        if pyplot is not None:
            pyplot.close(data)
        return buffer.getvalue()

    def _decode(self, data: bytes, path: str) -> bytes:
        return data

    def preview(self) -> ImagePreview:  # noqa: F821 (kedro-viz reads the annotation's name)
        """The latest version's PNG, base64-encoded: what kedro-viz shows as an image."""
        return base64.b64encode(self.load()).decode()
