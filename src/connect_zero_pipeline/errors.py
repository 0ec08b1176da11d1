"""The ways a run stops before its work that are not a program's errors."""

from __future__ import annotations

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
