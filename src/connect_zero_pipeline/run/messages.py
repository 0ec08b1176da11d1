"""Errors in words: the command line's one paragraph and the manifest's one line."""

from __future__ import annotations

from ..common.errors import Terminated
from ..common.internals import dataset_failure
from ..tracking.store import store_line


def error_text(error: BaseException) -> str:
    """What went wrong, in words: a dataset's failure (Kedro's "Failed while loading data
    from dataset <repr>") becomes "<name>: could not load: <the reason, which names the
    file>" (the name: the catalog entry, where Kedro's catalog named it)."""
    failure = dataset_failure(error)
    if failure is None:
        return str(error).strip()
    name, verb, reason = failure
    return f"{name + ': ' if name else ''}could not {verb}: {reason}"


def error_line(error: BaseException) -> str:
    """An error in one line, as a run's manifest records it."""
    if isinstance(error, Terminated):
        return "terminated (SIGTERM)"
    if isinstance(error, KeyboardInterrupt):
        return "interrupted (Ctrl-C)"

    text = store_line(error) or " ".join(error_text(error).split())  # not MLflow's SQL
    text = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."
