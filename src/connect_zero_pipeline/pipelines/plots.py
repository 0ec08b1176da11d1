"""matplotlib for the nodes that draw (learning curves, the ladder), loaded when they draw.

pyplot takes most of a second to import; a pipeline registry that imported it at module
level made every ``kedro`` command pay for it, a refused run or ``--help`` included.
"""

from __future__ import annotations


def pyplot():
    """``matplotlib.pyplot`` on the headless Agg backend (nodes never open windows)."""
    import matplotlib  # noqa: PLC0415 (matplotlib: only when a figure is drawn)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 (matplotlib: only when a figure is drawn)

    return plt
