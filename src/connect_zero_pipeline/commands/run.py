"""The project's ``kedro run``: Kedro's own run command, with one-paragraph errors.

:data:`run` is the ``run`` of the project's command group (:mod:`.`), which Kedro finds in
``<package>.cli``: ``kedro run`` and ``python -m connect_zero_pipeline run`` are this. ``run`` takes every option of Kedro's run command
and one more, ``--verbose``. Before any work it checks the names a user types (``--env``,
``--pipelines``); after, a user's mistake or a problem of the machine is printed as one
short message instead of a traceback (:func:`user_error`):

- an unknown env, pipeline or node: the valid names (or the closest ones);
- a file that cannot be read (bad Parquet, a corrupt model): the dataset's message, which
  names the file;
- a full disk or a folder that cannot be written; a locked or read-only MLflow store;
- a run refused before it started (bad parameters, a resume that cannot work);
- Ctrl-C: ``Interrupted.``, exit 130 (the run is recorded as failed: :mod:`..session.project_session`).

``kedro run --verbose`` shows the full traceback instead. A bug of the program (any
other exception) always shows its traceback.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import errno
import logging
import sys
import traceback
from pathlib import Path
from typing import Any

import click
from kedro.framework.cli.project import run as _kedro_run
from kedro.framework.project import pipelines as registry
from kedro.framework.project import settings
from kedro.io.core import DatasetError
from rich.logging import RichHandler

from ..common.errors import Terminated, run_of, unrecorded
from ..common.internals import unknown_nodes
from ..common.naming import DEFAULT_PIPELINE
from ..common.project import in_project
from ..common.quiet import drop_log_records
from ..common.stops import EXIT_INTERRUPTED, EXIT_TERMINATED, INTERRUPTED, TERMINATED, stops_handled
from ..pipelines import pipeline_names
from ..run.manifest import manifest_path
from ..run.messages import error_text
from ..run.rules import resume_arguments
from ..tracking.store import store_help, store_problem
from . import UnknownName, did_you_mean

VERBOSE_HELP = "Show the full traceback of an error instead of a one-paragraph message."

# Errors of the machine a user can fix (a full disk, a folder without write permission).
_NO_SPACE = {errno.ENOSPC, errno.EDQUOT}
_NOT_WRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS}
_ENVIRONMENT_ERRNOS = _NO_SPACE | _NOT_WRITABLE


def environment_fix(error: OSError) -> str:
    """What to do about a full disk or a place that cannot be written, in words."""
    if error.errno in _NO_SPACE:
        return "Free space"
    where = f"{error.filename}" if error.filename else "the project's data/"
    return f"Make {where} writable (its permission, or a read-only disk)"


def env_names(conf_source: str | None) -> list[str] | None:
    """The envs of the project's configuration folder (None when it is not a folder)."""
    folder = Path(conf_source) if conf_source else in_project(settings.CONF_SOURCE)
    if not folder.is_dir():
        return None
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and p.name != "base")


def _listing(names: list[str]) -> str:
    return ", ".join(names)


def check_names(env: str | None, conf_source: str | None, pipelines: list[str]) -> None:
    """Refuse an unknown ``--env`` or ``--pipelines`` name, with the closest valid name and
    the list of them."""
    valid = pipeline_names()
    for name in pipelines:
        if name not in valid:
            raise UnknownName(f"no pipeline named {name!r}.{did_you_mean(name, valid)} The "
                              f"pipelines are: {_listing(valid)}")  # fmt: skip
    if env:
        valid_envs = env_names(conf_source)
        if valid_envs is not None and env not in valid_envs:
            raise UnknownName(f"no env named {env!r} (no folder conf/{env}).{did_you_mean(env, valid_envs)}"
                              f" The envs are: {_listing(valid_envs)}")  # fmt: skip


def _unknown_nodes(error: BaseException, pipelines: list[str]) -> str | None:
    wanted = unknown_nodes(error)
    if wanted is None:
        return None
    known: list[str] = []
    for name in pipelines or ["__default__"]:
        with contextlib.suppress(Exception):  # no registry: the names alone still help
            known += [n.name for n in registry[name].nodes]
    lines = [f"no node named {', '.join(map(repr, wanted))} in this run's pipelines"]
    for name in wanted:
        close = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
        if close:
            lines.append(f"  closest to {name!r}: {_listing(close)}")
    lines.append("  every node: kedro registry describe --name <pipeline> (or make viz)")
    return "\n".join(lines)


def _store_error(exc: BaseException) -> str | None:
    problem = store_problem(exc)
    if problem == "read-only":
        return store_help(problem, detail="attempt to write a readonly database")
    return store_help(problem) if problem else None


def user_error(exc: BaseException, pipelines: list[str]) -> str | None:
    """The message for an error that is a user's mistake or the machine's, else None (a bug)."""
    for error in _chain(exc):
        if isinstance(error, OSError) and error.errno in _ENVIRONMENT_ERRNOS:
            where = f" ({error.filename})" if error.filename else ""
            then = "go on as below" if run_of(exc) else "run the same command again"
            return f"{error.strerror or error}{where}. {environment_fix(error)}, then {then}."
        store = _store_error(error)
        if store:
            return store
    if isinstance(exc, DatasetError):
        return error_text(exc)
    if isinstance(exc, ValueError):
        return _unknown_nodes(exc, pipelines) or error_text(exc)
    return None


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


LOG_FORMAT = "%(asctime)s %(levelname)-7s %(message)s"
"""One log record per line, whole, when the output is not a terminal (a file, a pipe)."""
PER_DATASET_LOGS = ("Loading data from",)
"""Kedro's catalog lines, one per dataset read, kept only with --verbose."""
KEDRO_RESUME_HINTS = ("You can resume the pipeline run", "No nodes ran. Repeat the previous")
"""Kedro's runner's advice after a failure (``--from-nodes ...``, or run again): either would
start a new run. The project prints its own, ``make resume RUN=<id>`` (:func:`_run`)."""
RUNNERS = ("kedro.runner.sequential_runner", "kedro.runner.thread_runner",
           "kedro.runner.parallel_runner", "connect_zero_pipeline.session.runner")  # fmt: skip
RECIPE_RUNNER = "connect_zero_pipeline.session.runner.RecipeRunner"
"""What ``run`` hands Kedro when no ``--runner`` is given: the session then runs with the
recipe's runner (``alphazero.overlap``: :mod:`.session.runner`)."""


def tidy_logs(verbose: bool, stream=None) -> None:
    """Off a terminal, Kedro's rich handler (which wraps at 80 columns there) becomes a plain
    one-record-per-line handler; without ``--verbose``, the per-dataset lines go."""
    stream = stream or sys.stdout
    root = logging.getLogger()
    if not stream.isatty():
        for handler in [h for h in root.handlers if isinstance(h, RichHandler)]:
            plain = logging.StreamHandler(stream)
            plain.setFormatter(logging.Formatter(LOG_FORMAT, "%H:%M:%S"))
            plain.setLevel(handler.level or logging.INFO)
            root.removeHandler(handler)
            root.addHandler(plain)
    if not verbose:
        drop_log_records("kedro.io.data_catalog", PER_DATASET_LOGS)
    for runner in RUNNERS:
        drop_log_records(runner, KEDRO_RESUME_HINTS)


def _run(verbose: bool, **kwargs: Any) -> Any:
    if kwargs.get("pipeline"):  # the singular spelling, one name: the plural's, no warning
        if kwargs.get("pipelines"):
            raise click.UsageError("--pipeline and --pipelines cannot be combined: each names "
                                   "the pipelines to run")  # fmt: skip
        kwargs["pipelines"], kwargs["pipeline"] = [kwargs["pipeline"]], None
    pipelines = list(kwargs.get("pipelines") or [])

    kwargs["params"], kwargs["env"] = resume_arguments(
        in_project("."), kwargs.get("params") or {}, kwargs.get("env")
    )
    check_names(kwargs.get("env"), kwargs.get("conf_source"), pipelines)
    kwargs["runner"] = kwargs.get("runner") or RECIPE_RUNNER  # the session picks the recipe's
    tidy_logs(verbose)
    try:
        with stops_handled():
            result = _kedro_run.callback(**kwargs)
            # The kept self-play workers stop here, where a Ctrl-C is a stop like any other,
            # not at the interpreter's exit, where it was a traceback (or exit status 0).
            # Imported here, not at the top: executors.local imports torch (1.6 s), which
            # every kedro command (--help, a misspelt name) would otherwise pay at start-up.
            from ..executors.local import close_pools  # noqa: PLC0415 (start-up time)

            close_pools()
            return result
    except click.ClickException:
        raise
    except KeyboardInterrupt as stop:
        if verbose:
            raise
        terminated = isinstance(stop, Terminated)
        click.echo(TERMINATED if terminated else INTERRUPTED, err=True)
        _resume_hint(stop, "failed (terminated)" if terminated else "failed (interrupted)",
                     fix=False)  # fmt: skip
        sys.exit(EXIT_TERMINATED if terminated else EXIT_INTERRUPTED)
    except Exception as exc:
        message = None if verbose else user_error(exc, pipelines)
        if message is None:  # a bug: its traceback, then how to go on once fixed
            if not _resume_hint(exc, "failed", before=traceback.format_exc()):
                raise
            sys.exit(1)
        click.secho(f"Error: {message}", err=True, fg="red")
        _resume_hint(exc, "failed")
        click.echo("(kedro run --verbose shows the traceback)", err=True)
        sys.exit(1)


def _resume_hint(error: BaseException, how: str, before: str = "", fix: bool = True) -> bool:
    """Print ``before`` and the one way to go on with the run that ``error`` ended as ``how``
    (``make resume RUN=<id>``; after an error, "once fixed"; after an interrupt, nothing to
    fix); False, printing nothing, when no run had started. A run whose manifest could not
    record its end is said to be so, with why (it reads as interrupted)."""
    run_id = run_of(error)
    if not run_id:
        return False
    click.echo(before, err=True, nl=False)
    why = unrecorded(error)
    if why and not manifest_path(in_project("."), run_id).is_file():  # never recorded at all
        click.echo(f"Run {run_id} could not be recorded: its manifest cannot be written "
                   f"({why}), so there is no run to resume. Once data/runs can be written, "
                   "run the same command again.", err=True)  # fmt: skip
        return True
    if why:
        click.echo(f"Run {run_id} could not be recorded as {how}: its manifest cannot be "
                   f"written ({why}). Once data/runs can be written again, resume it: make "
                   f"resume RUN={run_id}", err=True)  # fmt: skip
        return True
    when = "once fixed, " if fix else ""
    click.echo(f"Run {run_id} is recorded as {how}; {when}resume it: make resume RUN={run_id}",
               err=True)  # fmt: skip
    return True


RUN_HELP = f"""Train and measure: run the project's pipelines (Kedro's run, with a
one-paragraph message for a user's mistake).

\b
Without --pipelines it runs {DEFAULT_PIPELINE}: self-play, training and the
scorecard for alphazero.num_generations generations, then the export and the
registered model. Every output is a version named by the run's id; a failed
or killed run resumes with make resume RUN=<id>.
"""
"""``run --help``'s text: the project's default pipeline and how a run is resumed."""

_HELP = {  # Kedro's options whose words are Kedro's defaults, in the project's words
    "pipelines": "Comma-separated pipelines to run (" + ", ".join(
        n for n in pipeline_names() if n != "__default__") + ").",
    "runner": "The Kedro runner; SequentialRunner runs one node at a time (self-play and "
              "labelling fan out inside their nodes).",
    "env": "A configuration env: conf/<env> over conf/base (quick, gpu, tiny, ...).",
    "params": "Parameters over the env's, key=value with dotted keys, comma-separated, "
              "e.g. alphazero.num_generations=4,selfplay.num_games=100.",
}  # fmt: skip
_SHOWN = {"pipelines": DEFAULT_PIPELINE, "runner": "SequentialRunner", "env": "local"}
"""What each of those options means when it is not given, as --help shows it."""


def _run_params() -> list[click.Parameter]:
    """Kedro's run options, its deprecated ``--pipeline`` kept as the project's own spelling
    of ``--pipelines`` with one name (Kedro warns about it; ``_run`` passes it on as the
    plural), and ``--verbose``."""
    params = []
    for param in _kedro_run.params:
        if param.name == "pipeline":
            param = click.Option(["--pipeline", "-p"], type=str, default=None,
                                 help="The one pipeline to run: --pipeline=NAME is "
                                      "--pipelines=NAME.")  # fmt: skip
        elif param.name in _HELP:
            param = copy.copy(param)
            param.help = _HELP[param.name]
            param.show_default = _SHOWN.get(param.name, False)
        params.append(param)
    return [*params, click.Option(["--verbose"], is_flag=True, help=VERBOSE_HELP)]


run = click.Command(
    name="run",
    params=_run_params(),
    callback=_run,
    help=RUN_HELP,
    short_help="Train and measure: kedro run (--pipelines, --params, --env).",
)
