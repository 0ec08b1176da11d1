"""The ways a run stops before its work that are not a program's errors, and the run an
error ended."""

from __future__ import annotations

import contextlib

import click


class NothingToDo(Exception):
    """A ``--only-missing-outputs`` run whose every output exists: it stops before it writes
    anything (no manifest, no MLflow run, no summary), and the command exits 0 with this
    message (:class:`.session.ProjectSession`)."""


class RunRefused(click.ClickException, ValueError):
    """A run refused before any work (bad parameters, a resume that cannot work).

    A ``ValueError`` for code that runs sessions in-process; on the command
    line, click prints ``Error: <message>`` (no traceback) and exits with 1.
    """


RUN_ATTRIBUTE = "connect_zero_run_id"
"""The attribute by which a session tells the command line which run an error ended."""


def mark_run(error: BaseException, run_id: str | None) -> None:
    """Say on ``error`` that it ended run ``run_id`` (:func:`run_of` reads it)."""
    if run_id and getattr(error, RUN_ATTRIBUTE, None) is None:
        with contextlib.suppress(AttributeError):  # an exception type without a __dict__
            setattr(error, RUN_ATTRIBUTE, run_id)


def run_of(error: BaseException) -> str | None:
    """The run that ``error`` ended, when its session had started one (:func:`mark_run`)."""
    return getattr(error, RUN_ATTRIBUTE, None)
