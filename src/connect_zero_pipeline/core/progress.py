"""Progress bars that suit where the output goes: one helper for every long loop.

On a terminal, :func:`progress_bar` is a tqdm bar. Off a terminal (a log file,
CI, ``make run > log``) a bar's refreshes would pile up as one very long line,
so the same calls log one line through :mod:`logging` at most every
``interval`` seconds, and a last line when the work ends.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any

log = logging.getLogger(__name__)

LOG_INTERVAL = 15.0
"""Seconds between two progress lines off a terminal."""


def _interactive() -> bool:
    stream = sys.stderr
    return bool(getattr(stream, "isatty", None) and stream.isatty())


class _LoggedProgress:
    """tqdm's small API used here (``update``, ``set_postfix``, ``close``, iteration), as log lines."""

    def __init__(self, iterable, total, desc: str, unit: str, interval: float):
        self.iterable, self.total, self.desc, self.unit = iterable, total, desc, unit
        self.interval, self.n, self.postfix = interval, 0, ""
        self._start = self._last = time.monotonic()
        self._closed = False

    def _line(self) -> str:
        elapsed = time.monotonic() - self._start
        rate = self.n / elapsed if elapsed > 0 else 0.0
        done = f"{self.n}/{self.total}" if self.total else f"{self.n}"
        tail = f", {self.postfix}" if self.postfix else ""
        return (
            f"{self.desc}: {done} {self.unit} in {elapsed:.0f} s ({rate:.3g} {self.unit}/s{tail})"
        )

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self._last >= self.interval:
            self._last = now
            log.info("%s", self._line())

    def set_postfix(self, **values: Any) -> None:
        self.postfix = ", ".join(f"{k}={v}" for k, v in values.items())

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if time.monotonic() - self._start >= self.interval:  # short work: no closing line
                log.info("%s", self._line())

    def __iter__(self) -> Iterator:
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def progress_bar(
    iterable: Iterable | None = None,
    *,
    total: int | None = None,
    desc: str = "",
    unit: str = "it",
    leave: bool = True,
    interval: float = LOG_INTERVAL,
    **tqdm_kwargs: Any,
):
    """A tqdm bar on a terminal; otherwise a log line every ``interval`` seconds.

    Takes tqdm's arguments (``iterable``, ``total``, ``desc``, ``unit``,
    ``leave``, ...) and returns an object with tqdm's ``update``,
    ``set_postfix``, ``close`` and iteration.
    """
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable)
    if _interactive():
        from tqdm.auto import tqdm  # noqa: PLC0415 (tqdm.auto: IPython's check, only for a bar)

        return tqdm(iterable, total=total, desc=desc, unit=unit, leave=leave, **tqdm_kwargs)
    return _LoggedProgress(iterable, total, desc, unit, interval)
