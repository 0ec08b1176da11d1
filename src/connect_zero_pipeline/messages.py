"""Errors in words: the command line's one paragraph and the manifest's one line."""

from __future__ import annotations

import re

_DATASET_ERROR = re.compile(
    r"^(?P<name>[^\s:]+: )?Failed while (?P<verb>loading|saving) data (?:from|to) dataset "
    r".*?\)\.\s*\n(?P<rest>.*)$",
    re.DOTALL,
)


def error_text(error: BaseException) -> str:
    """What went wrong, in words: Kedro's "Failed while loading data from dataset <repr>"
    becomes "<name>: could not load: <the reason, which names the file>"."""
    text = str(error).strip()
    found = _DATASET_ERROR.match(text)
    if found:
        verb = "load" if found["verb"] == "loading" else "save"
        text = f"{found['name'] or ''}could not {verb}: {found['rest'].strip()}"
    return text


def error_line(error: BaseException) -> str:
    """An error in one line, as a run's manifest records it."""
    if isinstance(error, KeyboardInterrupt):
        return "interrupted (Ctrl-C)"
    from .tracking import store_line

    text = store_line(error) or " ".join(error_text(error).split())  # not MLflow's SQL
    text = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."
