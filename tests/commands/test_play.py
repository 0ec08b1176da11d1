"""``python -m connect_zero_pipeline play``: the terminal game through stdin, and the page server."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pexpect
import pytest
import torch

from connect_zero_pipeline.commands.model_source import PRETRAINED
from connect_zero_pipeline.core.bitboard import (
    alignment,
    is_terminal,
    moves_to_bitboards,
    state_from_moves,
)
from connect_zero_pipeline.core.checkpoint import save_model
from connect_zero_pipeline.core.config.search import MCTSConfig
from connect_zero_pipeline.core.export import OnnxNetwork
from connect_zero_pipeline.core.models import build_model
from connect_zero_pipeline.core.players import PolicyPlayer
from connect_zero_pipeline.core.search.loop import MCTSPlayer
from connect_zero_pipeline.params.alphazero import AlphaZeroConfig
from tests.helpers import PONS_DIR, REPO

PLAY = [sys.executable, "-m", "connect_zero_pipeline", "play"]


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    torch.manual_seed(1)
    model = build_model("mlp").eval()
    path = tmp_path_factory.mktemp("model") / "model.pt"
    save_model(model, path)
    return path, model


def test_bad_input_reprompts_and_eof_exits_cleanly(model_file):
    path, model = model_file
    # "111111": column 1 is full and the first player (the person) is to move.
    child = pexpect.spawn(
        sys.executable,
        [
            "-m",
            "connect_zero_pipeline",
            "play",
            "--model",
            str(path),
            "--first",
            "--moves",
            "111111",
        ],
        encoding="utf-8",
        timeout=60,
    )
    try:
        prompt = r"Your move \(1-7, u to undo, q to quit\): "
        child.expect(prompt)
        for bad in ("0", "8", "x", "", "12"):
            child.sendline(bad)
            child.expect(re.escape(f"Please enter a column from 1 to 7 (got {bad!r})."))
            child.expect(prompt)
        child.sendline("1")
        child.expect(r"Column 1 is full; choose another\.")
        child.expect(prompt)
        child.sendline("4")
        child.expect(r"Agent plays (\d)")
        reply = child.match.group(1)
        child.expect(prompt)
        # The agent's reply is legal and is the greedy policy move.
        moves_to_bitboards("1111114" + reply)
        expected = PolicyPlayer(model).act(state_from_moves(["1111114"]))
        assert int(reply) == int(expected[0]) + 1
        child.sendeof()
        child.expect(r"Bye\. Moves so far: (\d+)")
        assert child.match.group(1) == "1111114" + reply
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    assert "Traceback" not in (child.before or "")


def _handles_signals(pid: int) -> bool:
    """The command's own signal handlers are installed (``commands.interrupts.install``), so
    from here on Ctrl-C must end the process cleanly: SIGTERM is caught (Python alone leaves
    it at its default) and the signal wake-up pipe is open. The pipe tells them apart from a
    tool that catches SIGTERM from the interpreter's start (coverage.py's ``sigterm``)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(re.search(r"SigCgt:\s*([0-9a-f]+)", status).group(1), 16)
    fds = Path(f"/proc/{pid}/fd")
    pipes = sum(_readlink(fd).startswith("pipe:") for fd in fds.iterdir())
    return bool(caught >> (signal.SIGTERM - 1) & 1) and pipes >= 2


def _readlink(path: Path) -> str:
    try:
        return os.readlink(path)
    except FileNotFoundError:  # closed while listed
        return ""


def _torch_loaded(pid: int) -> bool:
    return "libtorch" in Path(f"/proc/{pid}/maps").read_text()


def _cpu_seconds(pid: int) -> float:
    """CPU time ``pid`` has used (``/proc/<pid>/stat`` utime + stime): how far its start-up
    has got, whatever the load on the machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


PROMPT = r"Your move \(1-7, u to undo, q to quit\): "


def _wait_until(check, child) -> None:
    """Until ``check(pid)`` holds for ``child``'s process, or it shows its prompt (then
    nothing more happens without input): read its output in 5 ms slices between checks."""
    while not check(child.pid):
        try:
            child.expect(PROMPT, timeout=0.005)
            return
        except pexpect.TIMEOUT:
            continue


def _spawn_play(model_path) -> pexpect.spawn:
    return pexpect.spawn(PLAY[0], [*PLAY[1:], "--model", str(model_path)], encoding="utf-8",
                         timeout=60)  # fmt: skip


def _interrupt_at(model_path, check) -> str:
    """Start ``play``, send Ctrl-C once ``check(pid)`` holds (or at the prompt); the
    process's whole output. It must end within a few seconds, printing ``Interrupted.``,
    with status 130."""
    child = _spawn_play(model_path)
    try:
        _wait_until(_handles_signals, child)
        _wait_until(check, child)
        child.sendintr()
        child.expect(pexpect.EOF, timeout=10)  # a hang fails here
        output = child.before
    finally:
        child.close(force=True)
    assert child.exitstatus == 130, (child.exitstatus, child.signalstatus, output)
    assert "Interrupted." in output, output
    assert "Traceback" not in output and "terminate called" not in output, output
    return output


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_at_any_moment_of_start_up_exits_130_without_a_traceback(model_file):
    path, _ = model_file
    # Observed points: as soon as the handlers are in (before torch is imported), once
    # torch's library is loaded, and at the prompt (where readline once lost the signal).
    _interrupt_at(path, lambda pid: True)
    _interrupt_at(path, _torch_loaded)
    at_prompt = _interrupt_at(path, lambda pid: False)
    assert at_prompt.rstrip().endswith("Interrupted.")
    # And points in between: the CPU time a start-up takes, split in eight (a process state,
    # so the points spread over the start-up whatever the load; one past the prompt's is
    # the prompt itself).
    child = _spawn_play(path)
    child.expect(PROMPT)
    startup = _cpu_seconds(child.pid)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    for k in range(1, 8):
        _interrupt_at(path, lambda pid, k=k: _cpu_seconds(pid) >= startup * k / 8)


def _play_to_the_end(path, flags: list[str]) -> tuple[subprocess.CompletedProcess, str, str]:
    # The person cycles through the columns; full columns are refused and re-asked.
    lines = "\n".join("4172635" * 20) + "\n"
    proc = subprocess.run(
        [*PLAY, "--model", str(path), *flags],
        input=lines,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    match = re.search(r"Game over\. (.*) Moves: (\d+)", proc.stdout)
    assert match, proc.stdout[-2000:]
    return proc, match.group(2), match.group(1)


def _check_result(moves: str, verdict: str, human_first: bool) -> None:
    position, mask = moves_to_bitboards(moves)
    assert is_terminal(position, mask)
    if alignment(position ^ mask):  # the last mover won
        human_last = (len(moves) % 2 == 1) == human_first
        assert verdict == ("You win!" if human_last else "The agent wins.")
    else:
        assert verdict == "Draw: the board is full."


def test_a_full_game_with_mcts_as_second_player(model_file):
    path, model = model_file
    proc, moves, verdict = _play_to_the_end(
        path, ["--second", "--sims", "8", "--solver-nodes", "0"]
    )
    _check_result(moves, verdict, human_first=False)
    # Every agent move (even plies) is what MCTSPlayer picks with the same search.
    player = MCTSPlayer(model, MCTSConfig(sims=8))
    for ply in range(0, len(moves), 2):
        expected = player.act(state_from_moves([moves[:ply]]))
        assert int(moves[ply]) == int(expected[0]) + 1, f"agent move at ply {ply} of {moves}"
    assert "MCTS with 8 simulations" in proc.stdout
    assert proc.stdout.count("Agent plays") == (len(moves) + 1) // 2


def test_a_full_game_with_the_raw_policy_as_first_player(model_file):
    path, model = model_file
    proc, moves, verdict = _play_to_the_end(path, ["--first", "--sims", "0", "--solver-nodes", "0"])
    _check_result(moves, verdict, human_first=True)
    for ply in range(1, len(moves), 2):
        expected = PolicyPlayer(model).act(state_from_moves([moves[:ply]]))
        assert int(moves[ply]) == int(expected[0]) + 1
    # The board is drawn with X for the first player.
    assert "X . . . . . ." in proc.stdout or ". . . X . . ." in proc.stdout


@pytest.mark.slow
def test_the_default_model_is_the_latest_catalog_version(kedro_project):
    # Nothing trained yet: the shipped model plays, and says so.
    proc = subprocess.run(PLAY, input="", capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "No model trained in this project yet: playing the shipped pretrained model" in (
        proc.stderr
    )
    # The shipped model is the default recipe's last generation (pretrained/README.md).
    shipped = OnnxNetwork(PRETRAINED.read_bytes()).meta["generation"]
    assert shipped == AlphaZeroConfig().num_generations  # conf/base's value (tests/test_conf.py)
    assert f"Model: the shipped pretrained model (generation {shipped} of the default recipe" in (
        proc.stdout
    )
    # Another entry has no fallback: a clear error.
    proc = subprocess.run([*PLAY, "--dataset", "gen_003.model"], input="", capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2
    assert "no model trained yet" in proc.stderr and "gen_003.model" in proc.stderr
    assert "--model PATH" in proc.stderr
    assert "Traceback" not in proc.stderr

    folder = kedro_project / "data/06_models/latest_model.pt"
    for version, preset in (
        ("2026-01-01T00.00.00.000Z", "mlp"),
        ("2026-01-02T00.00.00.000Z", "tiny"),
    ):
        (folder / version).mkdir(parents=True)
        save_model(build_model(preset), folder / version / "latest_model.pt")
    proc = subprocess.run(PLAY, input="", capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    # Its newest version, named (no manifest here, so no run to name).
    assert "Model: latest_model version 2026-01-02T00.00.00.000Z [" in proc.stdout
    assert "ResNet" in proc.stdout  # the newer version (tiny) was loaded, not the mlp


@pytest.mark.slow
def test_any_file_that_is_not_a_model_is_one_line_of_error(tmp_path, model_file, capsys):
    """play --model (and benchmark, through the same resolution) with a text file, an empty
    file, a cut-off .pt, a .onnx that is not ONNX, an empty or cut-off .onnx: exit 2 and
    one line that names the file and says what it is; torch's eight lines of
    ``weights_only`` advice never show."""
    from connect_zero_pipeline.commands import invoke

    path, _ = model_file
    checkpoint, onnx = path.read_bytes(), PRETRAINED.read_bytes()
    files = {  # name: (content, what the line says)
        "README.md": ((REPO / "README.md").read_bytes(), "not a PyTorch checkpoint"),
        "empty.pt": (b"", "it is empty (0 bytes)"),
        "cut.pt": (checkpoint[: len(checkpoint) // 2], "a zip archive cut short or damaged"),
        "junk.onnx": (bytes(range(256)) * 8, "is not an ONNX model"),
        "empty.onnx": (b"", "it is empty (0 bytes)"),
        "cut.onnx": (onnx[: len(onnx) // 2], "is not an ONNX model"),
    }
    for name, (content, says) in files.items():
        (tmp_path / name).write_bytes(content)
        status = invoke(["play", "--model", str(tmp_path / name), "--moves", "4"])
        err = capsys.readouterr().err
        assert status == 2, (name, err)
        assert err.count("\n") == 1 and err.startswith(f"Error: {tmp_path / name} "), (name, err)
        assert says in err and len(err) < 300, (name, err)
    # The command line itself: the same line, no traceback (and benchmark the same way).
    positions = tmp_path / "positions.txt"
    positions.write_text("".join((PONS_DIR / "Test_L3_R1").read_text().splitlines(True)[:5]))
    for command in (PLAY, [*PLAY[:-1], "benchmark", "--file", str(positions)]):
        proc = subprocess.run([*command, "--model", str(tmp_path / "README.md")],
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "not a PyTorch checkpoint" in proc.stderr


@pytest.mark.slow
def test_a_missing_model_and_bad_moves_are_clear_errors(tmp_path, model_file):
    # A model that is not there: the forms --model takes, each of them.
    missing = tmp_path / "nosuch.onnx"
    proc = subprocess.run([*PLAY, "--model", str(missing)], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert proc.returncode == 2 and f"--model {missing}: no such file or folder." in proc.stderr
    for form in ("model file (.pt or .onnx)", "versioned folder", "models:/connect-zero@champion",
                 "models:/connect-zero/<N>", "a run id"):  # fmt: skip
        assert form in proc.stderr, form
    path, _ = model_file
    proc = subprocess.run(
        [*PLAY, "--model", str(path), "--moves", "1111111"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "plays into a full column" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_solver_cell_is_the_strongest_statement_its_bounds_prove():
    from connect_zero_pipeline.commands.board import SOLVER_LEGEND, verdict

    cases = {(3, 3): "+3", (0, 0): "+0", (-2, -2): "-2", (1, 18): "win", (-18, -1): "loss",
             (0, 5): ">=0", (-5, 0): "<=0", (-3, 4): "?", None: ""}  # fmt: skip
    assert {b: verdict(b) for b in cases} == cases
    for symbol in ("win", "loss", ">=0", "<=0", "?"):  # the legend explains every symbol
        assert f" {symbol} " in SOLVER_LEGEND or f" {symbol}," in SOLVER_LEGEND


def test_web_serves_the_page_on_loopback(tmp_path):
    (tmp_path / "index.html").write_text("<!doctype html><title>t</title>")
    (tmp_path / "x.wasm").write_bytes(b"\0asm")
    (tmp_path / "x.mjs").write_text("export {};")
    server = subprocess.Popen(
        [*PLAY, "--web", "--port", "0", "--dir", str(tmp_path), "--solver-nodes", "100000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        line = server.stdout.readline()
        match = re.search(r"(http://127\.0\.0\.1:(\d+)/)", line)
        assert match, line
        url = match.group(1)
        with urllib.request.urlopen(url) as resp:
            assert resp.status == 200 and b"<title>t</title>" in resp.read()
        with urllib.request.urlopen(url + "x.wasm") as resp:
            assert resp.headers["Content-Type"] == "application/wasm"
        with urllib.request.urlopen(url + "x.mjs") as resp:
            assert resp.headers["Content-Type"].startswith("text/javascript")
        with urllib.request.urlopen(url + "analyze?moves=44") as resp:
            assert len(json.loads(resp.read())["scores"]) == 7
        # 4414742: column 4 wins at once, proved at any budget; the legend comes along.
        with urllib.request.urlopen(url + "analyze?moves=4414742") as resp:
            answer = json.loads(resp.read())
        assert answer["verdicts"][3] == "+18" and answer["bounds"][3] == [18, 18]
        assert answer["scores"][3] == 18 and ">=0 (at least a draw)" in answer["legend"]
        # A bad position, in any script: 400 with the reason in a UTF-8 body, and the
        # server goes on (the reason never reaches the Latin-1 status line).
        for moves, reason in [("%E2%82%AC", "moves: invalid move '€'"),
                              ("9", "moves: invalid move '9'")]:  # fmt: skip
            with pytest.raises(urllib.error.HTTPError) as bad:
                urllib.request.urlopen(url + f"analyze?moves={moves}")
            assert bad.value.code == 400 and bad.value.reason == "Bad Request"
            assert json.loads(bad.value.read().decode())["error"].startswith(reason)
        # Moves count from 1 in the reasons, as a person counts them.
        with pytest.raises(urllib.error.HTTPError) as bad:
            urllib.request.urlopen(url + "analyze?moves=44444444")
        assert "move 7 ('4')" in json.loads(bad.value.read().decode())["error"]
        # Another method, announcing a 10 MB body: 405 in JSON at once, naming what the
        # address answers; the body is not read, and the connection closes.
        port = int(match.group(2))
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(b"POST /analyze?moves=44 HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Length: 10000000\r\n\r\n" + b"x" * 1000)  # fmt: skip
            answer = b""
            while chunk := conn.recv(4096):
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.0 405") and b"Allow: GET, HEAD\r\n" in head + b"\r\n"
        assert json.loads(body) == {"error": "/analyze answers GET and HEAD only, not POST"}
        with urllib.request.urlopen(url) as resp:
            assert resp.status == 200
    finally:
        server.send_signal(signal.SIGINT)  # Ctrl-C: how a server is stopped, not an error
        _, err = server.communicate(timeout=10)
    assert server.returncode == 0
    assert "Traceback" not in err, err


def test_web_without_a_page_is_a_clear_error(tmp_path):
    proc = subprocess.run(
        [*PLAY, "--web", "--dir", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and "has no index.html" in proc.stderr


def test_web_before_any_export_serves_the_shipped_model(kedro_project):
    from connect_zero_pipeline.commands.model_source import PRETRAINED

    server = subprocess.Popen(
        [*PLAY, "--web", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        line = server.stdout.readline()
        match = re.search(r"(http://127\.0\.0\.1:(\d+)/)", line)
        assert match, line + server.stderr.read()
        url = match.group(1)
        with urllib.request.urlopen(url + "model.onnx") as resp:
            assert resp.read() == PRETRAINED.read_bytes()
        with urllib.request.urlopen(url) as resp:
            assert b"Connect-Zero" in resp.read()
        folder = Path(re.search(r"\(from (.*)\); Ctrl-C", line).group(1))
        assert (folder / "index.html").is_file()  # a temporary page of the shipped model
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert server.returncode == 143  # SIGTERM, handled: the temporary page is removed
    assert not folder.exists()
    assert "serving the shipped pretrained model" in server.stderr.read()


def test_the_analysis_board_in_a_real_terminal(model_file):
    """A pty, as a person's terminal: colours, the agent's analysis of its move (policy,
    visits, Q, the solver's scores, its value in words), undo, the winning four highlighted,
    and a rematch with the colours swapped."""
    path, _ = model_file
    child = pexpect.spawn(
        sys.executable,
        ["-m", "connect_zero_pipeline", "play", "--model", str(path), "--sims", "8",
         "--moves", "445566"],
        encoding="utf-8", timeout=60, env={**os.environ, "TERM": "xterm"},
    )  # fmt: skip
    try:
        child.expect(PROMPT)
        child.sendline("1")  # not the win: the agent replies
        child.expect(r"Agent plays (\d)")
        child.expect(PROMPT)
        shown = child.before
        for row in ("policy", "visits", "Q     ", "solver"):
            assert f"\n{row}" in shown, shown
        # The person threatens 3 and 7: every reply loses at once, and the solver proves it.
        (solver_row,) = [line for line in shown.splitlines() if line.startswith("solver ")]
        assert all(re.fullmatch(r"-\d+", cell) for cell in solver_row.split()[1:]), solver_row
        assert re.search(r"The agent's view: [a-z ,]+ \([+-]\d\.\d\d\)\.", shown), shown
        assert "\033[31m\033[1m" in shown and "\033[33m\033[1m" in shown  # X red, O yellow
        assert "\033[4m" in shown  # the last move underlined
        child.sendline("u")  # undo: back to before the person's move
        child.expect(r"Moves: 445566\r?\n")
        child.expect(PROMPT)
        child.sendline("7")  # four in a row on the bottom row
        child.expect(r"Game over\. You win! Moves: 4455667")
        assert child.before.count("\033[7m") == 4  # the four, in reverse video
        child.expect(r"Play again, colours swapped\? \(y/n\): ")
        child.sendline("y")
        child.expect(r"you are O \(second\), the agent is X")
        child.expect(r"Agent plays \d")
        child.sendeof()
        child.expect(r"Bye\.")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
