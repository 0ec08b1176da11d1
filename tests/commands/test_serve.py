"""make mlflow / make viz / make play / make serve: a taken port is refused by number before a
server starts, and a started server stops whole, whatever stops it or make; make serve
answers a board with the registered model's logits and value, and a bad board in one line."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from connect_zero_pipeline.commands.serve import port_taken, serve_ui
from connect_zero_pipeline.tracking.store import serving_port
from tests.helpers import REPO, _as_in_a_terminal, descendants, make_project, wait_for_line


def _serve(*args: str):
    return CliRunner().invoke(serve_ui, list(args))


def test_a_taken_port_is_an_error_that_names_it(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert port_taken(port)
        for ui, variable in (("mlflow", "MLFLOW_PORT"), ("viz", "VIZ_PORT"),
                             ("model", "SERVE_PORT")):  # fmt: skip
            res = _serve(ui, str(port))
            err = res.stderr
            assert res.exit_code == 2
            assert f"port {port} on 127.0.0.1 is taken" in err and f"{variable}=<port>" in err
    assert not port_taken(port)  # released: free again
    res = _serve("nosuch", "1")
    assert res.exit_code == 2 and "Usage:" in res.stderr


def test_a_model_that_is_not_registered_is_named_before_a_server_starts(tmp_path, capsys):
    from connect_zero_pipeline.commands import serve

    _register_a_model(tmp_path)
    port = _free_port()
    for model, said in (("models:/nosuch@champion", "is not in this project's registry"),
                        ("data/06_models/latest_model.pt", "a registered model, models:/")):  # fmt: skip
        code = serve.serve("model", port, tmp_path, model)
        err = capsys.readouterr().err
        assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err
        assert not port_taken(port)
    res = _serve("model", str(port), "--model", "models:/connect-zero/7")
    assert res.exit_code == 2 and "'models:/connect-zero/7' is not in this project's registry" in (
        res.stderr
    ), res.stderr
    assert not (tmp_path / ".cache/served").exists() or not any(
        (tmp_path / ".cache/served").iterdir()
    )


def _register_a_model(project: Path) -> bytes:
    """A tiny network's ONNX file (returned) registered as ``connect-zero`` version 1, the
    champion, in the project's MLflow store, with its weights beside it as MLflow saves
    them by default."""
    import shutil

    import mlflow
    import onnx
    from mlflow import MlflowClient

    from connect_zero_pipeline.core.export import export_onnx
    from connect_zero_pipeline.core.models import build_model
    from connect_zero_pipeline.tracking.store import empty_store

    shutil.copy(empty_store(), project / "mlflow.db")
    saved = project / "registered"
    model_bytes = export_onnx(build_model("tiny"))
    mlflow.onnx.save_model(onnx.load_from_string(model_bytes), str(saved))
    store = f"sqlite:///{project / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=store, registry_uri=store)
    client.create_registered_model("connect-zero")
    version = client.create_model_version("connect-zero", str(saved)).version
    client.set_registered_model_alias("connect-zero", "champion", version)
    return model_bytes


def _post(port: int, body: str) -> tuple[int, dict]:
    import json
    import urllib.error
    import urllib.request

    request = urllib.request.Request(f"http://127.0.0.1:{port}/invocations", body.encode(),
                                     {"Content-Type": "application/json"})  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def _check_the_model_server(port: int, model_bytes: bytes) -> None:
    """A board and two boards get the model's logits and value; a float cell, a wrong shape,
    text, a floating piece and counts no game reaches are refused with one line each (HTTP
    400)."""
    import json

    import numpy as np

    from connect_zero_pipeline.core.export import ort_evaluate, ort_session

    board = [[0] * 7 for _ in range(6)]
    board[5][3] = -1  # the opponent's first piece, in the centre of the bottom row
    status, answer = _post(port, json.dumps({"inputs": [board, board]}))
    assert status == 200, answer
    logits, value = ort_evaluate(ort_session(model_bytes),
                                 np.array([board, board], dtype=np.int8))  # fmt: skip
    got = answer["predictions"]
    assert np.allclose(got["logits"], logits, atol=1e-5) and np.allclose(
        got["value"], value, atol=1e-5
    )
    status, one = _post(port, json.dumps({"inputs": board}))  # one board, [6, 7]
    assert status == 200 and np.allclose(one["predictions"]["logits"], logits[:1], atol=1e-5)
    floats = [row[:] for row in board]
    floats[2][4] = 0.5
    floating = [row[:] for row in board]
    floating[3][0] = 1  # rows 4 and 5 of column 0 empty
    ahead = [row[:] for row in board]
    ahead[5][0] = ahead[5][1] = 1
    for body, said in (
        ({"inputs": [floats]}, "a cell is -1, 0 or 1 (1: the side to move's piece); got 0.5 at "
                               "[board, row, column] [0, 2, 4]"),
        ({"inputs": [[0, 0, 0]]}, "a board is 6 rows of 7 cells ([6, 7] or [N, 6, 7]); got "
                                  "shape [1, 3]"),
        ({"inputs": [["a"]]}, "a board's cells are numbers (-1, 0 or 1); got text"),
        ({"inputs": [board, floating]}, "board 1: the piece at row 3, column 0 floats over an "
                                        "empty cell (row 0 is the top; pieces rest on the "
                                        "bottom row or on others)"),
        ({"inputs": [[[1] * 7] + [[0] * 7] * 5]}, "board 0: the piece at row 0, column 0 "
                                                   "floats over an empty cell (row 0 is the "
                                                   "top; pieces rest on the bottom row or on "
                                                   "others)"),
        ({"inputs": ahead}, "board 0: 2 pieces of the side to move (1) and 1 of the opponent "
                            "(-1); a game gives the side to move as many as the opponent or "
                            "one fewer"),
    ):  # fmt: skip
        status, refused = _post(port, json.dumps(body))
        assert status == 400 and refused["message"] == said, refused
        assert refused["error_code"] == "INVALID_PARAMETER_VALUE"
    # A body that is not a request: one line of ours, before MLflow parses it.
    for text, said in (
        ('{"board": 1}', "a request is {\"inputs\": a board [6, 7] or boards [N, 6, 7]}; got "
                         "the keys ['board']"),
        ("[1, 2]", "a request is {\"inputs\": a board [6, 7] or boards [N, 6, 7]}; got a JSON "
                   "list"),
        ("{not json", "a request is JSON, {\"inputs\": a board [6, 7] or boards [N, 6, 7]}; "
                      "got b'{not json'"),
    ):  # fmt: skip
        status, refused = _post(port, text)
        assert status == 400 and refused == {"error_code": "INVALID_PARAMETER_VALUE",
                                             "message": said}, refused  # fmt: skip


def _free_port() -> int:
    """A free port below the kernel's ephemeral range (``ip_local_port_range``, 32768 and up
    by default; kedro-viz refuses IANA's, above 49152): a port in that range can be handed to
    any process's outgoing connection meanwhile (another test's), which would hold it when
    the test checks that the stopped server freed it."""
    import random

    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    while port_taken(port := random.randint(min(20000, low - 1000), low - 1)):
        pass
    return port


def _exits(pids: set[int]) -> dict[int, int]:
    """A pidfd per process of ``pids`` still there: readable once that process has exited
    (zombie or reaped), so a test waits on the exits themselves."""
    fds = {}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # gone already
            fds[pid] = os.pidfd_open(pid)
    return fds


def _left_after(fds: dict[int, int], deadline: float) -> list[int]:
    """The processes of ``fds`` (:func:`_exits`) that have not exited by ``deadline``
    (``time.monotonic()``)."""
    left = []
    for pid, fd in fds.items():
        exited, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        os.close(fd)
        if not exited:
            left.append(pid)
    return left


STOPS = {  # how the test stops a server: (whom, signal)
    "SIGTERM to make": ("make", signal.SIGTERM),
    "Ctrl-C": ("terminal", signal.SIGINT),
    "closed terminal": ("terminal", signal.SIGHUP),
    "kill -9 of make": ("make", signal.SIGKILL),
}


# Each way to stop a server once: what a process manager or `kill <pid>` sends make (SIGTERM),
# a Ctrl-C, a closed terminal and a kill -9 of make. viz, mlflow and serve share one mechanism
# (commands/serve.py: every signal the same handler, make's death seen by its pipe), so they
# take three of the four; play (the page's own server) takes the commonest.
STOPPED_BY = {"viz": "Ctrl-C", "mlflow": "kill -9 of make", "play": "SIGTERM to make",
              "serve": "closed terminal"}  # fmt: skip


@pytest.mark.slow
def test_every_server_frees_its_port_and_leaves_no_process_however_it_is_stopped(tmp_path):
    """make viz, make mlflow, make play and make serve (the repository's Makefile, set-up
    taken as done), started as from a terminal (a session of their own) and stopped by a SIGTERM to
    make's pid, a Ctrl-C (SIGINT to the terminal's process group), a closed terminal
    (SIGHUP to it) or a kill -9 of make: within 10 s no process make started is left and
    the port binds again."""
    project = make_project(tmp_path / "project")
    model_bytes = _register_a_model(project)  # what make serve serves: the champion
    venv = Path(sys.executable).parent.parent
    make = ["make", "-f", str(REPO / "Makefile"), "-o", "setup", f"VENV={venv}"]
    servers = {  # name: (make's target and port variable, the line that says it answers)
        "viz": ("viz", "VIZ_PORT", "Ctrl-C stops it"),
        "mlflow": ("mlflow", "MLFLOW_PORT", "Ctrl-C stops it"),
        "play": ("play", "PLAY_PORT", "Serving the play page at"),
        "serve": ("serve", "SERVE_PORT", "Ctrl-C stops it"),
    }
    started = {}
    for name, (target, variable, _) in servers.items():
        port = _free_port()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen([*make, target, f"{variable}={port}"], cwd=project, env=env,
                                text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=_as_in_a_terminal)  # fmt: skip
        started[name] = (proc, port)
    try:
        for name, (proc, port) in started.items():
            wait_for_line(proc, servers[name][2])
            assert port_taken(port), name
            if name == "mlflow":  # a run's summary links to the port that serves its store
                assert serving_port(project / "mlflow.db") == port
            if name == "serve":
                _check_the_model_server(port, model_bytes)
            below = descendants(proc.pid)
            # the server (make's child), and viz's and mlflow's own processes
            assert len(below) >= (1 if name == "play" else 2), name
            exits = _exits(below)
            whom, sig = STOPS[STOPPED_BY[name]]
            stopped = time.monotonic()
            if whom == "make":
                os.kill(proc.pid, sig)
            else:
                os.killpg(proc.pid, sig)  # the terminal's process group
            assert proc.wait(timeout=30) == -sig, (name, proc.stdout.read())
            assert _left_after(exits, deadline=stopped + 10) == [], (name, STOPPED_BY[name])
            assert not port_taken(port), f"{name}: port {port} still taken"
            with socket.socket() as again:  # a new server can start there at once (as servers
                # do, with SO_REUSEADDR: the test's own requests leave TIME_WAIT behind)
                again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                again.bind(("127.0.0.1", port))
    finally:  # a failed test leaves no server: SIGTERM stops each with what it started
        for proc, _ in started.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc, _ in started.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
