"""The ways a run stops before its work that are not a program's errors, and the run an
error ended."""

from __future__ import annotations

import contextlib

import click


class NothingToDo(Exception):
    """A ``--only-missing-outputs`` run whose every output exists: it stops before it writes
    anything (no manifest, no MLflow run, no summary), and the command exits 0 with this
    message (:class:`.session.project_session.ProjectSession`)."""


class RunRefused(click.ClickException, ValueError):
    """A run refused before any work (bad parameters, a resume that cannot work).

    A ``ValueError`` for code that runs sessions in-process; on the command
    line, click prints ``Error: <message>`` (no traceback) and exits with 1.
    """


class Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler's stop, ``timeout``, ``kill``): raised where a Ctrl-C's
    ``KeyboardInterrupt`` would be, so a run stops the same way: its workers stopped, its
    manifest and MLflow runs marked, the resume line printed (``Terminated.``, exit 143)."""


RUN_ATTRIBUTE = "connect_zero_run_id"
"""The attribute by which a session tells the command line which run an error ended."""
UNRECORDED_ATTRIBUTE = "connect_zero_unrecorded"
"""The attribute that says why the run's end could not be written in its manifest."""


def mark_run(error: BaseException, run_id: str | None, unrecorded: str | None = None) -> None:
    """Say on ``error`` that it ended run ``run_id`` (:func:`run_of` reads it), and, when its
    manifest could not record that, why (:func:`unrecorded`)."""
    if run_id and getattr(error, RUN_ATTRIBUTE, None) is None:
        with contextlib.suppress(AttributeError):  # an exception type without a __dict__
            setattr(error, RUN_ATTRIBUTE, run_id)
            setattr(error, UNRECORDED_ATTRIBUTE, unrecorded)


def run_of(error: BaseException) -> str | None:
    """The run that ``error`` ended, when its session had started one (:func:`mark_run`)."""
    return getattr(error, RUN_ATTRIBUTE, None)


def unrecorded(error: BaseException) -> str | None:
    """Why the end of the run that ``error`` ended is not in its manifest; None when it is."""
    return getattr(error, UNRECORDED_ATTRIBUTE, None)
