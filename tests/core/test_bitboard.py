"""Bitboard engine: notation, conversions, and the batched engine against the naive reference."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
import torch

from connect_zero_pipeline.core import bitboard as bb
from connect_zero_pipeline.core.reference import NaiveGame


def _board_from_ascii(drawing: str) -> list[str]:
    rows = [line.split() for line in drawing.strip().splitlines()]
    assert len(rows) == 6 and all(len(r) == 7 for r in rows)
    return rows


def _stones(drawing: str) -> int:
    """Bitboard of the 'X' cells of an ASCII board (row 0 at the top)."""
    out = 0
    for r, row in enumerate(_board_from_ascii(drawing)):
        for c, ch in enumerate(row):
            if ch == "X":
                out |= 1 << (7 * c + 5 - r)
    return out


# ---------------------------------------------------------------- notation


def test_worked_example_from_the_docstring():
    position, mask = bb.moves_to_bitboards("44")
    assert mask == 0b11 << 21
    assert position == 1 << 21


@pytest.mark.parametrize(
    "moves, message",
    [
        ("4480", r"invalid move '8' \(move 3\)"),  # moves counted as a person counts them
        ("40", r"invalid move '0' \(move 2\)"),
        ("4a", r"invalid move 'a' \(move 2\)"),
        ("1111111", r"move 7 \('1'\) in '1111111' plays into a full column"),
        ("1212121", None),  # first player wins vertically with the 7th move: valid
        ("12121213", r"move 8 \('3'\) in '12121213' comes after the game is over"),
    ],
)
def test_bad_move_strings_name_the_move_and_index(moves, message):
    if message is None:
        position, mask = bb.moves_to_bitboards(moves)
        assert bb.is_terminal(position, mask)
        return
    with pytest.raises(ValueError, match=message):
        bb.moves_to_bitboards(moves)


def test_a_long_move_string_is_quoted_in_at_most_80_characters_around_the_bad_move():
    for moves, upto in (("44x" + "4" * 56_000, 3), ("4" * 6 + "4" * 56_000, 7)):
        with pytest.raises(ValueError) as info:
            bb.moves_to_bitboards(moves)
        message = str(info.value)
        quoted = message.split(" in ", 1)[1].split(" (", 1)[0]
        shown = eval(quoted).strip("…")  # a Python string literal
        # the first 80 characters hold the bad move (a 43rd move is always bad)
        assert shown == moves[:80] and re.search(rf"move {upto}\b", message), message
        assert quoted.startswith("'44") and quoted.endswith("…'"), quoted
        assert f"({len(moves)} characters)" in message
        assert len(message) < 200
    assert bb.quote_moves("4" * 80) == repr("4" * 80)  # at the limit: whole
    assert bb.quote_moves("12" * 100, upto=150) == repr("…" + ("12" * 100)[70:150] + "…") + (
        " (200 characters)"
    )


def test_bad_strings_in_a_batch_raise_before_anything_is_built():
    with pytest.raises(ValueError, match=r"move 4 \('9'\)|\(move 4\)"):
        bb.state_from_moves(["44", "4449"])


def test_board_round_trip_and_ascii():
    moves = "4453"
    position, mask = bb.moves_to_bitboards(moves)
    board = bb.bitboards_to_board(position, mask)
    # First player (to move again after 4 plies) has stones in columns 4 (bottom) and 5.
    assert board[5, 3] == 1 and board[5, 4] == 1
    assert board[4, 3] == -1 and board[5, 2] == -1
    assert int(np.abs(board).sum()) == 4
    art = bb.board_to_ascii(board)
    assert art.splitlines()[5] == ". . O X X . ."
    state = bb.state_from_moves([moves])
    assert torch.equal(bb.to_boards(state)[0], torch.from_numpy(board))
    back = bb.from_boards(bb.to_boards(state))
    assert int(back.position[0]) == position and int(back.mask[0]) == mask
    assert int(back.ply[0]) == 4


def test_from_boards_rejects_floating_stones_and_bad_counts():
    board = torch.zeros(1, 6, 7, dtype=torch.int8)
    board[0, 4, 3] = 1  # a stone with an empty cell under it
    with pytest.raises(ValueError, match="stone above an empty cell"):
        bb.from_boards(board)
    board = torch.zeros(1, 6, 7, dtype=torch.int8)
    board[0, 5, 0] = board[0, 5, 1] = 1  # two own stones, no opponent stone
    with pytest.raises(ValueError, match="not a position from a legal game"):
        bb.from_boards(board)


def test_mirror_is_an_involution_and_reverses_columns():
    position, mask = bb.moves_to_bitboards("1127")
    m_position, m_mask = bb.moves_to_bitboards("7761")
    assert bb.mirror_bitboard(position) == m_position
    assert bb.mirror_bitboard(mask) == m_mask
    t = torch.tensor([position, mask])
    assert torch.equal(bb.mirror_bitboard(bb.mirror_bitboard(t)), t)
    a = np.array([position, mask], dtype=np.uint64)
    assert bb.mirror_bitboard(a).tolist() == [m_position, m_mask]


# ---------------------------------------------------------------- wins


HORIZONTAL_EDGE = """
. . . . . . .
. . . . . . .
. . . . . . .
. . . . . . .
. . . . . . .
. . . X X X X
"""
VERTICAL_TOP_LEFT = """
X . . . . . .
X . . . . . .
X . . . . . .
X . . . . . .
. . . . . . .
. . . . . . .
"""
DIAGONAL_UP = """
. . . . . . .
. . . . . . .
. . . X . . .
. . X . . . .
. X . . . . .
X . . . . . .
"""
DIAGONAL_DOWN_RIGHT_EDGE = """
. . . X . . .
. . . . X . .
. . . . . X .
. . . . . . X
. . . . . . .
. . . . . . .
"""
# Bits 4,5 of column 1 and 0,1 of column 2 are consecutive integers (5, 6 ... 7, 8) but
# the sentinel at bit 6 separates them: a "vertical" line that wraps is not a win.
WRAP_VERTICAL = """
X . . . . . .
X . . . . . .
. . . . . . .
. . . . . . .
. X . . . . .
. X . . . . .
"""
# Three in the top row of the right edge plus one at the bottom left would align if
# shifts wrapped around the board; they must not.
WRAP_HORIZONTAL = """
. . . . X X X
. . . . . . .
. . . . . . .
. . . . . . .
. . . . . . .
X . . . . . .
"""


@pytest.mark.parametrize(
    "drawing, wins",
    [
        (HORIZONTAL_EDGE, True),
        (VERTICAL_TOP_LEFT, True),
        (DIAGONAL_UP, True),
        (DIAGONAL_DOWN_RIGHT_EDGE, True),
        (WRAP_VERTICAL, False),
        (WRAP_HORIZONTAL, False),
    ],
)
def test_wins_in_every_direction_and_no_wrap(drawing, wins):
    stones = _stones(drawing)
    assert bb.alignment(stones) is wins
    assert bool(bb.has_won(torch.tensor([stones]))[0]) is wins


def test_every_four_line_is_a_win_and_every_three_is_not():
    lines = []
    for r in range(6):
        for c in range(7):
            for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                cells = [(r + k * dr, c + k * dc) for k in range(4)]
                if all(0 <= rr < 6 and 0 <= cc < 7 for rr, cc in cells):
                    lines.append(cells)
    assert len(lines) == 69  # the classic count of winning lines
    bits = [sum(1 << (7 * cc + 5 - rr) for rr, cc in cells) for cells in lines]
    threes = [b & ~(b & -b) for b in bits]  # drop the lowest stone
    t = torch.tensor(bits + threes)
    assert bb.has_won(t).tolist() == [True] * 69 + [False] * 69


# ---------------------------------------------------------------- engine vs reference


def _compare(state: bb.State, games: list[NaiveGame]) -> None:
    boards = bb.to_boards(state)
    legal = bb.legal_mask(state)
    for i, g in enumerate(games):
        assert boards[i].tolist() == g.board()
        # The engine's legal mask is about full columns; game over is the caller's `done`.
        assert legal[i].tolist() == [g.grid[0][c] == 0 for c in range(7)]
        assert int(state.ply[i]) == g.plies


@pytest.mark.parametrize("batch", [1, 64])
def test_batched_engine_matches_naive_engine_on_random_games(batch):
    rng = random.Random(batch)
    gen = torch.Generator().manual_seed(batch)
    state = bb.initial_state(batch)
    games = [NaiveGame() for _ in range(batch)]
    finished = 0
    for _ in range(600):
        actions = bb.random_legal_actions(state, gen)
        if rng.random() < 0.5:  # also exercise the [B, 7] legality path
            actions = torch.tensor(
                [rng.choice([c for c, ok in enumerate(g.legal()) if ok]) for g in games]
            )
        step = bb.play(state, actions)
        for i, g in enumerate(games):
            mover = g.to_move
            g.play(int(actions[i]))
            assert bool(step.done[i]) == g.over
            assert float(step.reward[i]) == (1.0 if g.winner == mover else 0.0)
        _compare(step.state, [g for g in games])  # state before auto-reset
        for i, g in enumerate(games):
            if g.over:
                finished += 1
                games[i] = NaiveGame()
        state = bb.reset_done(step.state, step.done)
        _compare(state, games)
    assert finished > batch  # many games finished and restarted, both ways


def test_draw_on_a_full_board():
    # A known drawn full game (no four in a row for either side).
    moves = "121212343434565656717171" + "232323454545676767"
    assert len(moves) == 42
    game = NaiveGame()
    for ch in moves[:-1]:
        game.play(int(ch) - 1)
    assert not game.over
    state = bb.state_from_moves([moves[:-1]])
    step = bb.play(state, torch.tensor([int(moves[-1]) - 1]))
    game.play(int(moves[-1]) - 1)
    assert game.over and game.winner == 0
    assert bool(step.done[0]) and float(step.reward[0]) == 0.0
    assert int(step.state.mask[0]) == bb.BOARD_MASK


def test_play_rejects_full_columns_and_bad_columns():
    state = bb.state_from_moves(["111111", "2"])
    with pytest.raises(ValueError, match="column 1 is full in game 0"):
        bb.play(state, torch.tensor([0, 0]))
    with pytest.raises(ValueError, match="invalid column 7 in game 1"):
        bb.play(state, torch.tensor([1, 7]))


def test_winning_and_threat_moves():
    assert bb.is_terminal(*bb.moves_to_bitboards("1122334"))  # X: 1, 2, 3, 4 in a row
    state = bb.state_from_moves(["112233"])  # X to move with 1,2,3 in the bottom row
    assert bb.winning_moves(state)[0].tolist() == [False, False, False, True, False, False, False]
    state = bb.state_from_moves(["1122335"])  # O to move, must block column 4
    assert bb.threat_moves(state)[0].tolist() == [False, False, False, True, False, False, False]
    assert not bool(bb.winning_moves(state).any())


def test_legal_pattern_lookup_is_exact_for_every_pattern():
    # Build a mask for every subset of full columns and check the gathered pattern.
    masks = []
    for pattern in range(128):
        m = 0
        for c in range(7):
            if not pattern >> c & 1:  # column c full
                m |= bb.column_mask(c)
        masks.append(m)
    t = torch.tensor(masks)
    state = bb.State(torch.zeros_like(t), t, torch.zeros_like(t))
    assert bb.legal_pattern(state).tolist() == list(range(128))


def test_random_legal_actions_are_legal_and_uniform():
    state = bb.state_from_moves(["111111333333"] * 20000)  # columns 1 and 3 full
    actions = bb.random_legal_actions(state, torch.Generator().manual_seed(0))
    counts = torch.bincount(actions, minlength=7).tolist()
    assert counts[0] == 0 and counts[2] == 0
    for c in (1, 3, 4, 5, 6):
        assert abs(counts[c] / 20000 - 0.2) < 0.015


@pytest.mark.parametrize(
    ("moves", "cells"),
    [
        ("1212121", {(2, 0), (3, 0), (4, 0), (5, 0)}),  # vertical
        ("4455667", {(5, 3), (5, 4), (5, 5), (5, 6)}),  # horizontal, bottom row
        ("12233434474", {(2, 3), (3, 2), (4, 1), (5, 0)}),  # diagonal
        ("445566", set()),  # no four yet
    ],
)
def test_four_cells_are_the_cells_of_the_four(moves, cells):
    position, mask = bb.moves_to_bitboards(moves)
    assert bb.four_cells(position ^ mask) == cells
