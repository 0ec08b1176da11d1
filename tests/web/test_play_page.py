"""The offline play page in a real browser (Debian's chromium, driven by Playwright).

The page is built from a tiny random model exactly as the export pipeline builds
it, served by the project's own server (``play --web``) on a free loopback port,
and played by clicking. Chromium must be installed (``.ci/run`` installs it);
without it the tests fail, unless ``CZ_SKIP_BROWSER=1`` asks to skip them.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from connect_zero_pipeline import web
from connect_zero_pipeline.core.bitboard import (
    alignment,
    is_terminal,
    legal_mask,
    moves_to_bitboards,
    state_from_moves,
    to_boards,
)
from connect_zero_pipeline.core.export import export_onnx, onnx_info
from connect_zero_pipeline.core.models import build_model

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
# One browser and one page server for the module (make test: pytest -n --dist loadfile
# runs a module's tests in one worker).

# The person's turn or the game's end, with every search and analysis answered (the person's
# position is analysed at their move), or an error.
TURN_SETTLED = (
    "(b => b.turn === 'error' || (['human', 'over'].includes(b.turn) && b.searches === '0'))"
    "(document.querySelector('#board').dataset)"
)


def _chromium() -> str:
    path = (
        os.environ.get("CZ_CHROMIUM")
        or shutil.which("chromium")
        or shutil.which("chromium-browser")
    )
    if path:
        return path
    if os.environ.get("CZ_SKIP_BROWSER") == "1":
        pytest.skip("chromium not installed and CZ_SKIP_BROWSER=1")
    pytest.fail(
        "chromium is not installed: apt-get install -y chromium (as make test does when it may), "
        "or set CZ_CHROMIUM=/path/to/chromium; CZ_SKIP_BROWSER=1 skips these tests explicitly"
    )


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(7)
    return build_model("tiny").eval()


@pytest.fixture(scope="module")
def page_url(model, tmp_path_factory):
    """The page of ``model``, served by ``python -m connect_zero_pipeline play --web``: a page
    exported where onnxruntime-web was not fetched (an offline GPU machine), which the server
    makes whole with this machine's."""
    folder = tmp_path_factory.mktemp("play")
    data = export_onnx(model)
    for name, content in web.page_files(data, onnx_info(data), None).items():
        (folder / name).write_bytes(content)
    assert not any((folder / name).exists() for name in web.ORT_FILES)
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "connect_zero_pipeline",
            "play",
            "--web",
            "--port",
            "0",
            "--dir",
            str(folder),
            "--solver-nodes",  # what the tests read is proved within it (wins in one, ...)
            "200000",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert match, f"no address in the server's first line: {line!r}"
        yield match.group(0)
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    executable = _chromium()
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 900, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    requested: list[str] = []
    pg.on("request", lambda req: requested.append(req.url))
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("requestfailed", lambda req: errors.append(f"request failed: {req.url}"))
    pg.on(
        "response", lambda r: errors.append(f"HTTP {r.status} {r.url}") if r.status >= 400 else None
    )
    yield pg
    context.close()
    assert errors == [], errors
    # Offline: every request went to the page's own server (or is inline data).
    foreign = [u for u in requested if not u.startswith(("http://127.0.0.1:", "data:"))]
    assert requested and foreign == [], foreign


def _settle(page) -> tuple[str, str]:
    page.wait_for_function(TURN_SETTLED, timeout=30_000)
    board = page.locator("#board")
    turn, moves = board.get_attribute("data-turn"), board.get_attribute("data-moves")
    assert turn != "error", page.text_content("#status")
    return turn, moves


def _assert_greedy_legal(model, moves: str, ply: int) -> None:
    """The agent's move at ``ply`` is legal and the argmax of torch's masked logits."""
    moves_to_bitboards(moves[: ply + 1])  # raises on an illegal move
    state = state_from_moves([moves[:ply]])
    with torch.inference_mode():
        logits, _ = model(to_boards(state))
    masked = logits[0].masked_fill(~legal_mask(state)[0], float("-inf"))
    chosen = int(moves[ply]) - 1
    # onnxruntime-web (wasm) and torch agree to ~1e-6; allow a near-tie either way.
    assert float(masked[chosen]) >= float(masked.max()) - 1e-4, (moves, ply, masked.tolist())


def _expected_result(moves: str, human_first: bool) -> str:
    position, mask = moves_to_bitboards(moves)
    assert is_terminal(position, mask)
    if not alignment(position ^ mask):
        return "draw"
    human_last = (len(moves) % 2 == 1) == human_first
    return "win" if human_last else "loss"


@pytest.mark.parametrize("colour", ["second", "first"])
def test_a_full_game_by_clicking(page, page_url, model, colour):
    human_first = colour == "first"
    page.goto(page_url + "?agent=policy")
    page.wait_for_selector("#board[data-ready=true]", timeout=30_000)
    page.check(f"input[name=colour][value={colour}]")  # starts a new game with that colour
    page.click("#new-game")
    rng = random.Random(3 if human_first else 4)
    checked = 0  # agent moves verified so far (plies < checked)
    first_turn = True
    while True:
        turn, moves = _settle(page)
        agent_parity = 1 if human_first else 0
        for ply in range(checked, len(moves)):
            if ply % 2 == agent_parity:
                _assert_greedy_legal(model, moves, ply)
        checked = len(moves)
        if turn == "over":
            break
        legal = [c + 1 for c in legal_mask(state_from_moves([moves]))[0].nonzero()[:, 0].tolist()]
        col = rng.choice(legal)
        if first_turn and len(legal) >= 2:
            # A second click in the same task lands while the agent is thinking: ignored.
            other = next(c for c in legal if c != col)
            page.evaluate(
                "([a, b]) => { for (const c of [a, b]) "
                "document.querySelector(`.column[data-col='${c}']`).click(); }",
                [col, other],
            )
            first_turn = False
            turn, after = _settle(page)
            assert after[: len(moves) + 1] == moves + str(col)
            assert len(after) == len(moves) + 2 or turn == "over", (moves, after)
            continue
        page.click(f".column[data-col='{col}']")
    result = page.get_attribute("#board", "data-result")
    assert result == _expected_result(moves, human_first)
    banner = page.locator("#banner")
    assert banner.is_visible() and banner.get_attribute("data-result") == result
    assert {"win": "You win!", "loss": "The agent wins.", "draw": "Draw"}[
        result
    ] in banner.text_content()
    probs = [float(page.get_attribute(f".prob[data-col='{c}']", "data-p")) for c in range(1, 8)]
    assert abs(sum(probs) - 1) < 1e-2
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"play_page_game_{colour}.png"), full_page=True)


def test_a_click_on_a_full_column_says_so_and_plays_nothing(page, page_url):
    page.goto(page_url + "?moves=111111&colour=first&agent=policy")
    turn, moves = _settle(page)
    assert (turn, moves) == ("human", "111111")
    page.click(".column[data-col='1']")
    page.wait_for_selector("#status[data-notice=full-column]")
    assert page.text_content("#status") == "Column 1 is full: choose another column."
    assert page.get_attribute("#board", "data-moves") == "111111"
    assert page.get_attribute("#board", "data-turn") == "human"
    page.click(".column[data-col='2']")
    page.wait_for_function("document.querySelector('#board').dataset.moves.length === 8")
    _settle(page)
    assert page.get_attribute("#status", "data-notice") == ""  # the notice is gone


def test_the_winning_four_is_highlighted(page, page_url):
    # The person (first) has three in column 1 (rows 5, 4, 3 from the top); a click wins.
    page.goto(page_url + "?moves=121212&colour=first&agent=policy")
    assert _settle(page) == ("human", "121212")
    page.click(".column[data-col='1']")
    turn, moves = _settle(page)
    assert (turn, moves) == ("over", "1212121")
    assert page.get_attribute("#board", "data-win") == "2,0;3,0;4,0;5,0"
    won = page.locator(".column[data-col='1'] .cell.win")
    assert won.count() == 4 and page.locator(".cell.win").count() == 4
    assert [won.nth(i).get_attribute("data-row") for i in range(4)] == ["2", "3", "4", "5"]
    # A diagonal, replayed from ?moves: columns 1-4, rows 5 up to 2.
    page.goto(page_url + "?moves=12233434474&colour=first&agent=policy")
    assert _settle(page)[0] == "over"
    cells = sorted(page.get_attribute("#board", "data-win").split(";"))
    assert cells == ["2,3", "3,2", "4,1", "5,0"] and page.locator(".cell.win").count() == 4
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "play_page_win.png"), full_page=True)


def test_the_mcts_agent_takes_a_win_and_blocks_a_threat(page, page_url):
    # Whatever the (random) network thinks, the search sees the win in column 1 ...
    page.goto(page_url + "?moves=121212&colour=second&agent=mcts&sims=64")
    turn, moves = _settle(page)
    assert (turn, moves) == ("over", "1212121")
    assert page.get_attribute("#banner", "data-result") == "loss"
    info = page.locator("#search-info").text_content()
    assert info.startswith("MCTS, 64 simulations; visits 1: ")
    visits = [int(part.split(": ")[1]) for part in info.split("visits ")[1].split("  ")]
    assert sum(visits) == 64 and visits[0] == max(visits)
    # ... and the person's threat in column 1.
    page.goto(page_url + "?moves=12121&colour=first&agent=mcts&sims=200")
    assert _settle(page) == ("human", "121211")
    assert page.locator("#agent-mode option[value=mcts]").text_content() == "MCTS (200 simulations)"


def test_lookahead_takes_a_win_and_blocks_a_threat(page, page_url):
    # The agent (first player) has three in column 1: it wins there at once.
    page.goto(page_url + "?moves=121212&colour=second&agent=lookahead")
    turn, moves = _settle(page)
    assert (turn, moves) == ("over", "1212121")
    assert page.get_attribute("#banner", "data-result") == "loss"
    assert (
        page.locator("#search-info").text_content().startswith("2-ply lookahead scores: 1: +1.00")
    )
    # The person (first) threatens column 1; the agent must block it.
    page.goto(page_url + "?moves=12121&colour=first&agent=lookahead")
    turn, moves = _settle(page)
    assert (turn, moves) == ("human", "121211")


def test_keys_play_columns_and_choosing_a_colour_restarts(page, page_url):
    page.goto(page_url + "?moves=44")
    turn, moves = _settle(page)
    assert (turn, moves) == ("human", "44")
    page.keyboard.press("3")
    page.wait_for_function("document.querySelector('#board').dataset.moves.length === 4")
    assert page.get_attribute("#board", "data-moves").startswith("443")
    page.check("input[name=colour][value=second]")  # a new game: the agent opens
    turn, moves = _settle(page)
    assert turn == "human" and len(moves) == 1


def test_new_games_while_the_agent_thinks_leave_one_clean_game(page, page_url):
    page.goto(page_url + "?colour=second&agent=lookahead")
    page.wait_for_selector("#board[data-ready=true]", timeout=30_000)
    # The agent is searching its opening; restart three times before it answers.
    page.evaluate("for (let i = 0; i < 3; i++) document.querySelector('#new-game').click()")
    turn, moves = _settle(page)
    # Every search has answered, the abandoned games' too: a stale reply has landed by now.
    page.wait_for_function("document.querySelector('#board').dataset.searches === '0'")
    assert (turn, len(moves)) == ("human", 1)
    assert page.get_attribute("#board", "data-moves") == moves
    assert page.locator(".cell.first, .cell.second").count() == 1


def test_a_bad_moves_parameter_is_reported_and_ignored(page, page_url):
    page.goto(page_url + "?moves=1111111")
    turn, moves = _settle(page)
    assert (turn, moves) == ("human", "")
    assert "plays into a full column" in page.text_content("#status")


def test_the_solver_row_is_exact_from_the_empty_board(page, page_url):
    """The opening book answers the first move (ply 0) exactly, within the page's budget:
    Connect-4's known scores, the centre the one win."""
    page.goto(page_url + "?colour=first&agent=mcts&sims=16")
    assert _settle(page) == ("human", "")
    page.wait_for_selector("#value[data-yours='true']")
    solver = [c.text_content() for c in
              page.locator("#analysis-table tr[data-row='solver'] td").all()]  # fmt: skip
    assert solver == ["-2", "-1", "+0", "+1", "+0", "-1", "-2"]


def test_the_analysis_board_shows_policy_visits_q_and_the_solver_and_undoes(page, page_url):
    """After the agent's move: per column its policy, the search's visits (the bars too) and
    Q, and the perfect solver's scores (the page is served by `play --web`); the value in
    words; the move list; undo takes back the person's move and the agent's reply."""
    page.goto(page_url + "?moves=445566&colour=first&agent=mcts&sims=16")
    assert _settle(page) == ("human", "445566")
    assert page.text_content("#moves") == "Moves: 1. 4 4  2. 5 5  3. 6 6"
    # The person's move, and no move of the agent's yet: the agent's network on the
    # person's position, with the solver's verdicts (3 and 7 win for the person), not "-".
    page.wait_for_selector("#value[data-yours='true']")
    assert page.text_content("#value").startswith("The agent's view at your move: ")
    assert page.text_content("#bars-caption").startswith("Your move: ")
    yours = {row.get_attribute("data-row"): [c.text_content() for c in row.locator("td").all()]
             for row in page.locator("#analysis-table tr[data-row]").all()}  # fmt: skip
    assert list(yours) == ["policy", "solver"]
    assert abs(sum(float(p) for p in yours["policy"]) - 1) < 0.02
    assert yours["solver"][2].startswith("+") and yours["solver"][6].startswith("+")
    assert "no search" in page.text_content("#search-info")
    assert page.locator("#undo").is_disabled()  # the opening is not the person's to undo
    page.click(".column[data-col='1']")
    turn, moves = _settle(page)
    assert turn == "human" and moves.startswith("4455661") and len(moves) == 8
    rows = {
        row.get_attribute("data-row"): [c.text_content() for c in row.locator("td").all()]
        for row in page.locator("#analysis-table tr[data-row]").all()
    }
    assert list(rows) == ["policy", "visits", "Q", "solver"]
    assert abs(sum(float(p) for p in rows["policy"]) - 1) < 0.02
    assert sum(int(n) for n in rows["visits"]) == 16
    assert all(q == "" or -1.0 <= float(q) <= 1.0 for q in rows["Q"])
    # The person threatens 3 and 7 at once: every agent move loses at once, which the
    # solver proves whatever its budget; its legend explains the symbols.
    assert all(re.fullmatch(r"-\d+", s) for s in rows["solver"]), rows["solver"]
    assert page.is_visible("#solver-legend")
    assert ">=0 (at least a draw)" in page.text_content("#solver-legend")
    bars = [int(page.get_attribute(f".prob[data-col='{c}']", "data-visits")) for c in range(1, 8)]
    assert bars == [int(n) for n in rows["visits"]]  # the bars are the search's visits
    assert page.text_content("#value").startswith("The agent's view: ")
    assert page.get_attribute("#value", "data-yours") == "false"  # its decision stays shown
    assert page.text_content("#moves").startswith(f"Moves: 1. 4 4  2. 5 5  3. 6 6  4. 1 {moves[7]}")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "play_page_analysis.png"), full_page=True)
    page.click("#undo")
    assert _settle(page) == ("human", "445566")
    assert page.locator("#undo").is_disabled()
