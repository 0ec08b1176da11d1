"""make mlflow / make viz / make play: a taken port is refused by number before a server
starts, and a started server stops whole, whatever stops it or make."""

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
from tests.helpers import REPO, _as_in_a_terminal, make_project, wait_for_line


def _serve(*args: str):
    return CliRunner().invoke(serve_ui, list(args))


def test_a_taken_port_is_an_error_that_names_it(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert port_taken(port)
        for ui, variable in (("mlflow", "MLFLOW_PORT"), ("viz", "VIZ_PORT")):
            res = _serve(ui, str(port))
            err = res.stderr
            assert res.exit_code == 2
            assert f"port {port} on 127.0.0.1 is taken" in err and f"{variable}=<port>" in err
    assert not port_taken(port)  # released: free again
    res = _serve("nosuch", "1")
    assert res.exit_code == 2 and "Usage:" in res.stderr


def _free_port() -> int:
    """A free port below 49152 (kedro-viz refuses the ephemeral range above it)."""
    import random

    while port_taken(port := random.randint(20000, 40000)):
        pass
    return port


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc), zombies left out."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


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


@pytest.mark.slow
@pytest.mark.parametrize(
    "stops",
    [
        # what a process manager or `kill <pid>` sends make, to each server
        {"viz": "SIGTERM to make", "mlflow": "SIGTERM to make", "play": "SIGTERM to make"},
        {"viz": "Ctrl-C", "mlflow": "kill -9 of make", "play": "closed terminal"},
    ],
    ids=["sigterm-to-make", "ctrl-c-kill-hup"],
)
def test_every_server_frees_its_port_and_leaves_no_process_however_it_is_stopped(tmp_path, stops):
    """make viz, make mlflow and make play (the repository's Makefile, set-up taken as
    done), started as from a terminal (a session of their own) and stopped by a SIGTERM to
    make's pid, a Ctrl-C (SIGINT to the terminal's process group), a closed terminal
    (SIGHUP to it) or a kill -9 of make: within 10 s no process make started is left and
    the port binds again."""
    project = make_project(tmp_path / "project")
    venv = Path(sys.executable).parent.parent
    make = ["make", "-f", str(REPO / "Makefile"), "-o", "setup", f"VENV={venv}"]
    servers = {  # name: (make's target and port variable, the line that says it answers)
        "viz": ("viz", "VIZ_PORT", "Ctrl-C stops it"),
        "mlflow": ("mlflow", "MLFLOW_PORT", "Ctrl-C stops it"),
        "play": ("play", "PLAY_PORT", "Serving the play page at"),
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
            below = _descendants(proc.pid)
            # the server (make's child), and viz's and mlflow's own processes
            assert len(below) >= (1 if name == "play" else 2), name
            exits = _exits(below)
            whom, sig = STOPS[stops[name]]
            stopped = time.monotonic()
            if whom == "make":
                os.kill(proc.pid, sig)
            else:
                os.killpg(proc.pid, sig)  # the terminal's process group
            assert proc.wait(timeout=30) == -sig, (name, proc.stdout.read())
            assert _left_after(exits, deadline=stopped + 10) == [], (name, stops[name])
            assert not port_taken(port), f"{name}: port {port} still taken"
            with socket.socket() as again:  # a new server can start there at once
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
