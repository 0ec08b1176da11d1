"""Bad input fails before any work; killed parents take their workers with them; bounds hold."""

from __future__ import annotations

import select
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers import (
    IMPORT_TIMES,
    files_under,
    heavy_imports,
    kedro_cli,
    store_untouched,
)

# ---------------------------------------------------------------------------
# Parameters are checked before the first node (and before the MLflow store)
# ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("params", "message"),
    [
        ("selfply.sims=3", "unknown parameter 'selfply'. Did you mean 'selfplay'?"),
        (
            "alphazero.num_generationz=3",
            "unknown parameter 'alphazero.num_generationz'. Did you mean "
            "'alphazero.num_generations'?",
        ),
        ("selfplay.mcts.sims=0", "selfplay.mcts.sims must be an integer >= 1, got 0"),
    ],
)
def test_bad_parameters_exit_non_zero_and_write_nothing(kedro_project, params, message):
    """A real ``kedro run`` for each kind of mistake (an unknown section, an unknown key, a
    bad value), refused before anything heavy is imported; the message of every other bad
    value: tests/test_conf.py, in process."""
    before = files_under(kedro_project)
    res = kedro_cli(kedro_project, "run", "--params", params, env=IMPORT_TIMES)
    assert res.returncode != 0
    assert message in res.stdout + res.stderr
    assert heavy_imports(res.stderr) == set()  # torch, MLflow, pandas ... never loaded
    assert files_under(kedro_project) == before  # no data, no mlruns/
    assert store_untouched(kedro_project)  # nothing in the MLflow store


def test_every_config_is_checked_in_process_too(kedro_project):
    from tests.helpers import run_kedro

    with pytest.raises(ValueError, match=r"selfplay\.mcts\.sims must be an integer, got 'many'"):
        run_kedro(kedro_project, "alphazero", {"selfplay.mcts.sims": "many"})
    assert store_untouched(kedro_project)


# ---------------------------------------------------------------------------
# Bounds
# ---------------------------------------------------------------------------


def test_a_tiny_file_asking_for_a_huge_network_is_refused_before_allocating(tmp_path):
    from connect_zero_pipeline.core.checkpoint import FORMAT, load_model

    path = tmp_path / "huge.pt"
    config = {"arch": "resnet", "blocks": 40, "channels": 4096, "value_hidden": 32}
    torch.save({"format": FORMAT, "config": config, "state_dict": {}, "meta": {}}, path)
    assert path.stat().st_size < 4096
    with pytest.raises(ValueError, match="is above the limit 1024"):
        load_model(path)
    config = {"arch": "resnet", "blocks": 64, "channels": 1000, "value_hidden": 32}
    torch.save({"format": FORMAT, "config": config, "state_dict": {}, "meta": {}}, path)
    with pytest.raises(ValueError, match=r"parameters, above the limit 50,000,000"):
        load_model(path)
    res = subprocess.run(
        [sys.executable, "-m", "connect_zero_pipeline", "play", "--model", str(path)],
        capture_output=True,
        text=True,
        input="q\n",
        timeout=120,
    )
    assert res.returncode != 0 and "above the limit" in res.stderr
    assert "Traceback" not in res.stderr


def test_score_and_solve_refuse_unbounded_input(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "connect_zero_pipeline", "benchmark", "--file", "/dev/zero"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode != 0 and "is larger than 64 MiB" in res.stderr
    late = "664163221317133624532157163764"  # a late position: solved at once
    long_line = "4" * 100_000 + f"\n{late}\n"
    res = subprocess.run(
        [sys.executable, "-m", "connect_zero_pipeline", "solve", "--tt-log2", "16"],
        capture_output=True,
        text=True,
        input=long_line,
        timeout=120,
    )
    assert "line 1: longer than 256 characters" in res.stderr
    assert res.stdout.splitlines()[0] == "" and res.stdout.splitlines()[1].startswith(late + " ")


# ---------------------------------------------------------------------------
# The play server
# ---------------------------------------------------------------------------


def test_the_play_server_times_out_idle_connections_and_survives_bad_paths(tmp_path):
    from connect_zero_pipeline.commands.page import make_server

    (tmp_path / "index.html").write_text("<p>hi</p>")
    server = make_server(tmp_path, 0, idle_timeout=0.5)
    assert server.request_queue_size >= 128
    import threading

    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address
    try:
        with socket.create_connection((host, port), timeout=30) as idle:
            # The server closes the idle connection (a socket.timeout after 30 s if not).
            assert idle.recv(1) == b""
        for path in ("/%00", "/..%2f..%2fetc%2fpasswd", "/index.html"):
            with socket.create_connection((host, port), timeout=10) as conn:
                conn.sendall(f"GET {path} HTTP/1.0\r\n\r\n".encode())
                status = conn.recv(64).split(b"\r\n")[0]
            expected = b"200" if path == "/index.html" else b"40"
            assert expected in status, (path, status)
    finally:
        server.shutdown()
        server.server_close()


def _ask(address, request: bytes) -> tuple[bytes, bytes]:
    """Send ``request`` as is; the answer's status line and body (read to the close)."""
    with socket.create_connection(address, timeout=30) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0], body


def test_every_bad_analyze_request_is_answered_in_json_of_at_most_1_kb(tmp_path):
    """/analyze answers every bad request with a 4xx in JSON of at most 1 KB that quotes at
    most 80 characters of the moves, decoded as UTF-8: an oversized request line (414), a
    long move string, raw UTF-8 and its percent-encoded form, a finished game, another
    method; a page without a solver says so (404), in JSON too."""
    import json
    import threading

    from connect_zero_pipeline.commands.page import make_server

    (tmp_path / "index.html").write_text("<p>hi</p>")
    servers = {nodes: make_server(tmp_path, 0, solver_nodes=nodes) for nodes in (0, 10_000)}
    for server in servers.values():
        threading.Thread(target=server.serve_forever, daemon=True).start()
    solver = servers[10_000].server_address
    long_moves = "4" * 6 + "x" + "4" * 56_000
    cases = [  # (address, request line, status, what the error says)
        (solver, f"GET /analyze?moves={'4' * 100_000} HTTP/1.1", 414, "over 65536 bytes"),
        (solver, f"GET /analyze?moves={long_moves} HTTP/1.1", 400, "(56007 characters)"),
        (solver, "GET /analyze?moves=44é HTTP/1.1", 400, "invalid move 'é' (move 3) in '44é'"),
        (solver, "GET /analyze?moves=%E2%82%AC HTTP/1.1", 400, "invalid move '€'"),
        (solver, "GET /analyze?moves=4141414 HTTP/1.1", 400, "the game is over after '4141414'"),
        (solver, "DELETE /analyze HTTP/1.1", 405, "GET and HEAD only, not DELETE"),
        (solver, "\x16\x03\x01 garbage", 400, "Bad HTTP/0.9 request type"),  # a TLS hello
        (servers[0].server_address, "GET /analyze?moves=4 HTTP/1.1", 404, "no solver"),
    ]
    try:
        for address, line, status, says in cases:
            head, body = _ask(address, line.encode() + b"\r\nHost: x\r\n\r\n")
            assert head.split()[1] == str(status).encode(), (line[:60], head)
            assert len(body) <= 1024, (line[:60], len(body))
            error = json.loads(body.decode("utf-8"))["error"]
            assert says in error, (line[:60], error)
            quoted = error.rsplit(" in ", 1)[-1]
            assert "4" * 81 not in quoted, error  # at most 80 characters of the moves
        # A good one still works after them all; other paths keep http.server's answers.
        head, body = _ask(solver, b"GET /analyze?moves=44 HTTP/1.0\r\n\r\n")
        assert head.split()[1] == b"200" and len(json.loads(body)["scores"]) == 7
        head, body = _ask(solver, b"HEAD /analyze?moves=44 HTTP/1.0\r\n\r\n")  # as GET, no body
        assert head.split()[1] == b"200" and body == b""
        head, body = _ask(solver, b"GET /nosuch HTTP/1.0\r\n\r\n")
        assert head.split()[1] == b"404" and body.lstrip().startswith(b"<!DOCTYPE")
    finally:
        for server in servers.values():
            server.shutdown()
            server.server_close()


def test_the_play_server_cuts_a_trickled_request_and_ignores_clients_that_leave(tmp_path, capsys):
    import threading

    from connect_zero_pipeline.commands.page import make_server

    (tmp_path / "index.html").write_text("<p>hi</p>")
    server = make_server(tmp_path, 0, idle_timeout=0.5)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        # A header line every 0.2 s restarts the socket timeout each time; the whole request
        # still has 0.5 s. The client waits up to 0.2 s for the close between two lines.
        with socket.create_connection(server.server_address, timeout=30) as slow:
            slow.sendall(b"GET /index.html HTTP/1.1\r\n")
            for sent in range(1, 51):
                if select.select([slow], [], [], 0.2)[0]:
                    break
                slow.sendall(f"X-Line-{sent}: trickle\r\n".encode())
            assert slow.recv(64) == b"", "the server answered or kept the connection"
        assert sent < 50  # cut off after a few lines, not after all 50 (10 s)
        # A client that goes away is no error; anything else still is.
        for error, reported in ((BrokenPipeError(), False), (ConnectionResetError(), False),
                                (ValueError("a bug"), True)):  # fmt: skip
            try:
                raise error
            except Exception:
                server.handle_error(None, ("127.0.0.1", 1))
            assert ("Traceback" in capsys.readouterr().err) == reported, error
    finally:
        server.shutdown()
        server.server_close()


def test_play_rejects_a_bad_port_and_a_table_as_a_model(pons_project):
    res = subprocess.run(
        [sys.executable, "-m", "connect_zero_pipeline", "play", "--web", "--port", "99999"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and "must be a port in [0, 65535], got '99999'" in res.stderr
    res = subprocess.run(
        [sys.executable, "-m", "connect_zero_pipeline", "play", "--dataset", "pons_positions"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=pons_project,
        input="q\n",
    )
    assert res.returncode != 0
    assert "catalog entry 'pons_positions' is not a model (it holds a DataFrame)" in res.stderr
    assert "Traceback" not in res.stderr


def test_the_semaphore_cleanup_removes_a_dead_processes_and_never_a_live_ones(tmp_path):
    """A run's start removes the semaphores that dead processes left in /dev/shm (a group
    killed with kill -9: tests/reliability/test_run_identity.py) and none that a live process
    has open, whatever name the C library mapped it under."""
    import glob
    import multiprocessing

    from connect_zero_pipeline.run.liveness import SHARED_MEMORY, remove_dead_semaphores

    before = set(glob.glob(str(SHARED_MEMORY / "sem.mp-*")))
    live = multiprocessing.get_context("spawn").Lock()  # this process made it: it is open
    ours = set(glob.glob(str(SHARED_MEMORY / "sem.mp-*"))) - before
    assert ours, "the lock made no named semaphore"
    # A dead process's: a child makes one, then its process group is killed (it and the
    # resource tracker that would have removed it), as kill -9 of a run's group does.
    code = ("import multiprocessing, os; l = multiprocessing.get_context('spawn').Lock(); "
            "print(l._semlock.name, flush=True); os.killpg(0, 9)")  # fmt: skip
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           start_new_session=True)  # fmt: skip
    dead = SHARED_MEMORY / f"sem.{child.stdout.strip().lstrip('/')}"
    assert child.returncode == -signal.SIGKILL and dead.exists()
    removed = remove_dead_semaphores(min_age_s=0)
    assert dead.name in removed and not dead.exists()
    assert all(Path(name).exists() for name in ours)  # the live lock's file stays
    live.acquire()
    live.release()
