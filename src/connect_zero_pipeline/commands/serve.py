"""``make mlflow``, ``make viz`` and ``make serve``: a server whose address is the last
thing printed.

``python -m connect_zero_pipeline.commands.serve {mlflow,viz,model} PORT [--model URI]`` (a
click command of its own: ``mlflow`` and ``viz`` are already kedro-mlflow's and kedro-viz's
``kedro`` commands, so it is not one of the project's group). ``model`` serves a registered
model (the champion by default) with MLflow's own scoring server (what ``mlflow models
serve`` runs), behind a check of each request (:mod:`..tracking.served_app`,
:mod:`..tracking.served`). Before anything starts, a port another program holds is an error that names it (exit 2).
The server then starts with the library deprecation warnings that say nothing to a user
turned off (:data:`QUIET_WARNINGS`); once it answers, the addresses to open are printed,
last. Ctrl-C, SIGTERM, a closed terminal (SIGHUP) or the death of the ``make`` that started
it stops it with every process it started, and the port is free again (exit 0).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import click

from ..common.project import project_root
from ..tracking.store import LOOPBACK, ui_base, ui_url
from . import interrupts

QUIET_WARNINGS = (
    # kedro-viz imports a response class that FastAPI deprecates (15 wrapped lines).
    "ignore:ORJSONResponse is deprecated",
    # MLflow's server imports a Starlette module that Starlette deprecates.
    "ignore:starlette.middleware.wsgi is deprecated",
)
"""``PYTHONWARNINGS`` entries (message prefixes) for the server processes, which import
the libraries before the project could filter anything."""
START_TIMEOUT_S = 180.0


def port_taken(port: int, host: str = LOOPBACK) -> bool:
    """Whether another program listens on (or holds) ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def _answers(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((LOOPBACK, port)) == 0


DEFAULT_MODEL = "models:/connect-zero@champion"
"""What ``make serve`` serves without ``MODEL=``."""
SERVED_FOLDER = Path(".cache") / "served"
"""Where the served models are made, in the project (one folder per registered version)."""


def command(ui: str, port: int, project: Path, model: str = DEFAULT_MODEL,
            ) -> tuple[list[str], dict[str, str], list[str]]:  # fmt: skip
    """``(argv, extra environment, the lines to print once it answers)`` of server ``ui``."""
    binary = Path(sys.executable).parent
    if ui == "model":
        return _model_command(port, project, model)
    if ui == "mlflow":
        db = project / "mlflow.db"
        store = f"sqlite:///{db}"
        # The registry named (else a notice says it is the store); uvicorn's own lines off
        # (one access line per request, four start-up lines): its warnings and errors stay.
        argv = [str(binary / "mlflow"), "ui", "--backend-store-uri", store,
                "--registry-store-uri", store, "--host", LOOPBACK, "--port", str(port),
                "--workers", "1", "--uvicorn-opts", "--no-access-log --log-level warning"]  # fmt: skip
        # One worker and no job runner (MLflow's GenAI jobs): 2 processes, about 0.5 GB,
        # where the defaults start 11 (about 2.3 GB) on a 2-core machine.
        env = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        lines = [
            'On a run\'s page MLflow opens the GenAI view until you pick "Model training" in '
            "its sidebar once; its Assistant panel opens on the first visit and no server "
            "setting turns it off: close it with its X once (your browser keeps both)."
        ]
        if view := ui_url(db, port, headline_view=True):
            lines.append(f"The headline metrics as the runs list's columns (a shared view: its "
                         f"banner's \"Override saved view\" keeps them): {view}")  # fmt: skip
        return argv, env, [*lines, f"MLflow UI: {ui_url(db, port)}"]
    argv = [str(binary / "kedro"), "viz", "run", "--no-browser", "--host", LOOPBACK,
            "--port", str(port)]  # fmt: skip
    base = f"{ui_base(port)}/"
    return argv, {}, [f"kedro-viz: {base}",
                      f"one generation's lineage: {base}?pid=__default__&fid=gen_002"]  # fmt: skip


QUIET_MODEL_SERVER = {
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",  # a bar for every download
    "MLFLOW_LOGGING_LEVEL": "WARNING",  # "Selected backend", "=== Running command ..."
    "UVICORN_LOG_LEVEL": "warning",  # its four start-up lines
    "UVICORN_ACCESS_LOG": "false",  # a line a request
}
"""The environment of ``make serve`` and its server: MLflow's and uvicorn's warnings and
errors stay, their info lines go (uvicorn reads ``UVICORN_*`` for its options)."""


def _model_command(port: int, project: Path, model: str):
    """MLflow's scoring server (what ``mlflow models serve --env-manager local`` runs) for
    ``model``'s served form (:func:`..tracking.served.served_model`), started by uvicorn in
    this environment behind a check of each request's JSON (:mod:`..tracking.served_app`)."""
    os.environ.update(QUIET_MODEL_SERVER)  # before MLflow is imported: it reads them then
    # here, not at the top, for two reasons: both import MLflow's model serving (importing
    # tracking.served, which served_app imports too, takes 1.9 s against 0.3 s for this
    # module), which make mlflow and make viz, started by this module too, do not need; and
    # MLflow must read QUIET_MODEL_SERVER, set just above, when it is first imported
    from ..tracking import served_app  # noqa: PLC0415
    from ..tracking.served import SOURCE_FILE, served_model  # noqa: PLC0415

    store = f"sqlite:///{project / 'mlflow.db'}"
    folder = served_model(model, project / SERVED_FOLDER, store)
    source = json.loads((folder / SOURCE_FILE).read_text())
    argv = [sys.executable, "-m", "uvicorn", "--factory", f"{served_app.__name__}:make_app",
            "--host", LOOPBACK, "--port", str(port), "--workers", "1", "--no-access-log",
            "--log-level", "warning"]  # fmt: skip
    env = {served_app.MODEL_ENV: str(folder), "MLFLOW_TRACKING_URI": store,
           **QUIET_MODEL_SERVER}  # fmt: skip
    url = f"http://{LOOPBACK}:{port}/invocations"
    empty = [[0] * 7 for _ in range(6)]
    lines = [
        f"Serving {model} ({source['name']} version {source['version']}) with MLflow's scoring "
        "server. A board is 6 rows of 7 cells, row 0 at the top: 1 the side to move's piece, "
        "-1 the opponent's, 0 empty; the answer is the model's logits (one a column) and "
        "value (the side to move's, -1 to 1):",
        f"  curl -s {url} -H 'Content-Type: application/json' "
        f"-d '{json.dumps({'inputs': [empty]}, separators=(',', ':'))}'",
        f"Model server: {url}",
    ]
    return argv, env, lines


def serve(ui: str, port: int, project: Path, model: str = DEFAULT_MODEL) -> int:
    if port_taken(port):
        variable = {"mlflow": "MLFLOW_PORT", "viz": "VIZ_PORT", "model": "SERVE_PORT"}[ui]
        target = "serve" if ui == "model" else ui
        print(f"Error: port {port} on {LOOPBACK} is taken (another {target} server, or another "
              f"program); stop it, or pick another port: make {target} {variable}=<port>",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        argv, extra, lines = command(ui, port, project, model)
    except ValueError as exc:  # a model that is not there: one line, nothing started
        print(f"Error: {exc}", file=sys.stderr)
        return 2
    warnings = ",".join(filter(None, [os.environ.get("PYTHONWARNINGS"), *QUIET_WARNINGS]))
    env = {**os.environ, **extra, "PYTHONWARNINGS": warnings}
    # Stopped any way but Ctrl-C (kill, a closed terminal, make's death), it stops the server
    # too: in a session of its own, nothing else would. A SIGHUP that was ignored (nohup)
    # stays ignored.
    signal.signal(signal.SIGTERM, _stop)
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        signal.signal(signal.SIGHUP, _stop)
    proc = None
    try:
        interrupts.stop_with_make()
        # Its own session: the terminal's Ctrl-C reaches this process only, which stops the
        # server with SIGTERM, its clean shutdown (SIGINT makes uvicorn print a traceback).
        proc = subprocess.Popen(argv, env=env, cwd=project, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while proc.poll() is None and not _answers(port) and time.monotonic() < deadline:
            time.sleep(0.3)
        if proc.poll() is None:
            time.sleep(0.5)  # the server's own start-up lines come first
            print("\n" + "\n".join(lines) + "\n(Ctrl-C stops it)", flush=True)
        return proc.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        if proc is not None:
            stop_group(proc, port)


def stop_group(proc: subprocess.Popen, port: int, timeout: float = 10.0) -> None:
    """Stop the server started as ``proc`` in a session of its own, with every process it
    started (kedro-viz serves from a child of ``kedro viz run``; terminating the parent alone
    left that child holding the port): SIGTERM to its whole process group, then SIGKILL to
    whatever of it still holds ``port`` after ``timeout`` seconds."""
    group = proc.pid  # start_new_session: the group's id is the leader's pid

    def signal_group(sig: int) -> bool:
        try:
            os.killpg(group, sig)
        except ProcessLookupError:  # the whole group is gone
            return False
        return True

    if not signal_group(signal.SIGTERM):
        proc.wait()
        return
    deadline = time.monotonic() + timeout
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=timeout)
    # The leader gone, its children may still be closing: wait for the port, not for them
    # (an orphan is reaped by whoever adopts it, which this process cannot wait for).
    while signal_group(0) and port_taken(port) and time.monotonic() < deadline:
        time.sleep(0.1)
    if port_taken(port):
        signal_group(signal.SIGKILL)
    proc.wait()


def _stop(signum, frame) -> None:
    raise KeyboardInterrupt


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("ui", type=click.Choice(["mlflow", "viz", "model"]))
@click.argument("port", type=click.IntRange(0, 65535))
@click.option("--model", default=DEFAULT_MODEL, show_default=True,
              help="model: the registered model to serve (models:/<name>@<alias> or "
                   "models:/<name>/<version>)")  # fmt: skip
def serve_ui(ui: str, port: int, model: str) -> None:
    """Start the MLflow UI, kedro-viz or a registered model's server for the project around
    this folder; its addresses are printed last."""
    click.get_current_context().exit(serve(ui, port, project_root() or Path.cwd(), model))


if __name__ == "__main__":
    serve_ui(prog_name="python -m connect_zero_pipeline.commands.serve")
