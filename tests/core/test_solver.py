"""Perfect solver: public Pons sets, a brute-force reference, invariants, bad input, the player."""

from __future__ import annotations

import numpy as np
import pytest

from connect_zero_pipeline.core.bitboard import (
    BOARD_MASK,
    alignment,
    bottom_mask_col,
    mirror_bitboard,
    moves_to_bitboards,
    popcount,
    top_mask_col,
)
from connect_zero_pipeline.core.solver import FULL_COLUMN, Solver
from tests.helpers import PONS_DIR, unfinished_random_games

SOLVER = Solver()  # one for the module, without the opening book: the search itself
solve, analyze, solve_batch, analyze_batch, column_bounds = (
    SOLVER.solve, SOLVER.analyze, SOLVER.solve_batch, SOLVER.analyze_batch, SOLVER.column_bounds
)  # fmt: skip

# A full board without four in a row (found by random play).
DRAWN_GAME = "472424756645422154157737216635626711335331"


def _read_set(name: str) -> tuple[list[str], np.ndarray]:
    path = PONS_DIR / name  # shipped with the tests: a missing file is a failure, not a skip
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return [m for m, _ in rows], np.array([int(s) for _, s in rows])


def _batch(moves: list[str]) -> tuple[np.ndarray, np.ndarray]:
    pairs = [moves_to_bitboards(m) for m in moves]
    return np.array([p for p, _ in pairs], np.int64), np.array([m for _, m in pairs], np.int64)


def _children(moves: str) -> list[str | None]:
    """The 7 child move strings, ``None`` for a full column."""
    _, mask = moves_to_bitboards(moves)
    return [None if mask >> (7 * c + 5) & 1 else moves + str(c + 1) for c in range(7)]


def _four_of_mover(pos: int, mask: int) -> bool:
    """The player who just moved has four in a row."""
    return alignment(pos ^ mask)


def _brute_force(pos: int, mask: int, memo: dict) -> int:
    """Reference score by plain negamax over every move (no pruning, memoised). Unbatched."""
    if (pos, mask) in memo:
        return memo[pos, mask]
    n = popcount(mask)
    best = -100
    for c in range(7):
        if mask & top_mask_col(c):
            continue
        child_mask = mask | (mask + bottom_mask_col(c))
        child_pos = pos ^ mask  # the opponent's stones: the side to move in the child
        if _four_of_mover(child_pos, child_mask):
            best = max(best, (43 - n) // 2)
        elif child_mask == BOARD_MASK:
            best = max(best, 0)
        else:
            best = max(best, -_brute_force(child_pos, child_mask, memo))
    memo[pos, mask] = best
    return best


# ---------------------------------------------------------------------------
# Exactness on the public Pons sets
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["Test_L3_R1", "Test_L2_R1"])
def test_public_sets_exact_strong_and_weak(name):
    moves, expected = _read_set(name)
    pos, mask = _batch(moves)
    solver = Solver()
    scores, ok, nodes = solver.solve_batch(pos, mask)
    assert ok.all()
    wrong = np.flatnonzero(scores != expected)
    assert wrong.size == 0, [(moves[i], int(scores[i]), int(expected[i])) for i in wrong[:5]]
    assert (nodes >= 0).all() and nodes.sum() > len(moves)
    weak, ok, _ = solver.solve_batch(pos, mask, weak=True)
    assert ok.all() and (weak == np.sign(expected)).all()


def test_public_sets_exact_with_a_fresh_tiny_table_per_position():
    """Exactness does not depend on table size or on reuse (collisions, overwrites)."""
    moves, expected = _read_set("Test_L2_R1")
    solver = Solver(tt_log2=10)
    for m, e in zip(moves[:150], expected[:150], strict=True):
        solver.reset()
        assert solver.solve(m) == e, m


# ---------------------------------------------------------------------------
# Scripted positions
# ---------------------------------------------------------------------------


def test_immediate_win_and_double_threat():
    # . . . . . . .
    # . . . . . . .
    # . . . . . . .
    # X . . . . . .      X (first player) to move has three in column 1:
    # X O . . . . .      the 4th stone wins, 22 - 4 = 18.
    # X O . . . . O
    assert solve("121217") == 18  # (analyze would solve six ply-8 positions: slow)
    # . . . . . . .
    # . O O . . . .      O to move faces two threats (columns 1 and 5):
    # . X X X . . .      X wins with its 4th stone whatever O does, -18 for O.
    assert solve("22334") == -18
    assert analyze("22334") == [-18] * 7
    assert solve("22334", weak=True) == -1 and solve("121217", weak=True) == 1


def test_analyze_scores_immediate_wins():
    for moves in unfinished_random_games(100, 28, 36, seed=6):
        wins = [
            c
            for c, child in enumerate(_children(moves))
            if child is not None and _four_of_mover(*moves_to_bitboards(child))
        ]
        if wins:
            break
    assert wins, "no position with an immediate win among the samples"
    scores = analyze(moves)
    assert [scores[c] for c in wins] == [(43 - len(moves)) // 2] * len(wins)
    assert solve(moves) == (43 - len(moves)) // 2


def test_analyze_none_for_full_columns_and_max_is_solve():
    moves = "1233722555341451114725221333"  # columns 1-3 are full
    scores = analyze(moves)
    assert scores[:3] == [None] * 3 and None not in scores[3:]
    assert max(s for s in scores if s is not None) == solve(moves)
    batch, ok, _ = analyze_batch(*_batch([moves]))
    assert ok.all() and batch.dtype == np.int8 and (batch[0, :3] == FULL_COLUMN).all()


def test_last_empty_cell_is_a_draw():
    before_last = DRAWN_GAME[:-1]
    assert solve(before_last) == 0
    assert analyze(before_last) == [None if c != int(DRAWN_GAME[-1]) - 1 else 0 for c in range(7)]


# ---------------------------------------------------------------------------
# Invariants on random positions
# ---------------------------------------------------------------------------


def test_matches_brute_force_near_the_end():
    memo: dict = {}
    for moves in unfinished_random_games(30, 31, 38, seed=1):
        assert solve(moves) == _brute_force(*moves_to_bitboards(moves), memo), moves


def test_score_is_max_over_children():
    solver = Solver(tt_log2=16)
    for moves in unfinished_random_games(40, 14, 34, seed=2):
        n = len(moves)
        values = []
        for c, child in enumerate(_children(moves)):
            if child is None:
                continue
            pos, mask = moves_to_bitboards(child)
            if _four_of_mover(pos, mask):
                values.append((43 - n) // 2)
            elif mask == BOARD_MASK:
                values.append(0)
            else:
                values.append(-solver.solve(child))
            assert analyze(moves)[c] == values[-1], (moves, c)
        assert solver.solve(moves) == max(values), moves


def test_mirror_and_weak_agree_with_strong():
    mirror = str.maketrans("1234567", "7654321")
    for moves in unfinished_random_games(40, 10, 30, seed=3):
        strong = solve(moves)
        assert solve(moves.translate(mirror)) == strong, moves
        pos, mask = moves_to_bitboards(moves)
        assert solve((mirror_bitboard(pos), mirror_bitboard(mask))) == strong
        assert solve(moves, weak=True) == np.sign(strong), moves


def test_batched_equals_single():
    moves = unfinished_random_games(30, 12, 30, seed=4)
    pos, mask = _batch(moves)
    scores, ok, nodes = solve_batch(pos.astype(np.uint64), mask.astype(np.uint64))
    assert ok.all() and scores.dtype == np.int8 and nodes.dtype == np.int64
    assert scores.tolist() == [solve(m) for m in moves]
    table, ok, _ = analyze_batch(pos, mask)
    assert table.shape == (30, 7) and ok.all()
    for row, m in zip(table, moves, strict=True):
        assert [None if s == FULL_COLUMN else int(s) for s in row] == analyze(m)


# ---------------------------------------------------------------------------
# Node budget
# ---------------------------------------------------------------------------


def test_node_budget_aborts_cleanly_and_keeps_the_table_sound():
    solver = Solver(tt_log2=16)
    pos, mask = _batch(["", "4", "44"])
    scores, ok, nodes = solver.solve_batch(pos, mask, max_nodes=5_000)
    assert not ok.any() and (nodes == 5_001).all()
    _, ok, nodes = solver.analyze_batch(pos, mask, max_nodes=5_000)
    assert not ok.any() and (nodes <= 5_001).all()
    # The aborted searches left only sound bounds behind.
    moves, expected = _read_set("Test_L2_R1")
    scores, ok, _ = solver.solve_batch(*_batch(moves[:200]), max_nodes=10_000_000)
    assert ok.all() and (scores == expected[:200]).all()


def test_column_bounds_hold_the_exact_scores_and_tighten_with_the_budget():
    """Within any budget each column's bounds hold its exact score; without one they are
    the score; a larger budget never proves less."""
    unproved = 0
    for moves in unfinished_random_games(40, 12, 24, seed=11):
        position, mask = moves_to_bitboards(moves)
        exact = analyze(moves)
        widths = []
        for budget in (50, 2_000, 0):
            bounds = Solver(tt_log2=20).column_bounds(position, mask, budget)
            assert [b is None for b in bounds] == [e is None for e in exact], moves
            for e, b in zip(exact, bounds, strict=True):
                if e is not None:
                    assert b[0] <= e <= b[1], (moves, budget, exact, bounds)
            widths.append(sum(b[1] - b[0] for b in bounds if b is not None))
        assert widths[0] >= widths[1] >= widths[2] == 0, (moves, widths)
        unproved += widths[0] > 0
    assert unproved >= 10  # the small budget left many columns open: the test has teeth


def test_column_bounds_a_win_in_one_and_a_move_that_allows_one_are_exact_at_any_budget():
    # 4414742: the side to move wins at once in column 4 (score 18); every other column
    # but 3 leaves the opponent's win in column 4 (-17). A 1-node budget proves no more.
    bounds = column_bounds(*moves_to_bitboards("4414742"), 1)
    assert bounds[3] == (18, 18)
    assert [bounds[c] for c in (0, 1, 4, 5, 6)] == [(-17, -17)] * 5
    assert bounds[2][0] < bounds[2][1]  # column 3: not proved within one node
    # The outcome comes before the exact score: at ply 4 a few million nodes a column prove
    # the outcome of some columns without their score.
    # (That they hold the exact scores: the test above.)
    found = Solver().column_bounds(*moves_to_bitboards("4453"), 5_000_000)
    assert any(lo < hi and (lo >= 0 or hi <= 0) for lo, hi in found), found


def test_node_count_is_reported():
    solver = Solver(tt_log2=16)
    solver.solve("121217")  # an immediate win needs no search
    assert solver.node_count == 0
    solver.solve("52753311433677442422121")
    assert solver.node_count > 1
    solver.analyze("52753311433677442422121")
    assert solver.node_count > 1


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("moves", "words"),
    [
        ("4483", ["'8'", "(move 3)"]),
        ("44a", ["'a'", "(move 3)"]),
        ("4444444", ["full column", "move 7"]),
        ("12121212", ["after the game is over", "move 8"]),
    ],
)
def test_invalid_move_strings(moves, words):
    for fn in (solve, analyze):
        with pytest.raises(ValueError) as info:
            fn(moves)
        for word in words:
            assert word in str(info.value)


@pytest.mark.parametrize(("moves", "word"), [("1212121", "won"), (DRAWN_GAME, "full")])
def test_finished_games_are_rejected(moves, word):
    for fn in (solve, analyze):
        with pytest.raises(ValueError, match=word):
            fn(moves)
    with pytest.raises(ValueError, match="position 0 is finished"):
        solve_batch(*_batch([moves]))


def test_illegal_bitboards_are_rejected():
    floating = 1 << 1  # a stone on row 1 of column 1 with nothing under it
    with pytest.raises(ValueError, match="above an empty cell"):
        solve((0, floating))
    with pytest.raises(ValueError, match="outside mask"):
        solve((1, 0))
    with pytest.raises(ValueError, match="sentinel"):
        solve_batch(np.zeros(2, np.int64), np.array([0, 1 << 6]))
    with pytest.raises(ValueError, match="stones for the side to move"):
        solve((0b11, 0b11))  # two stones, both of the side to move
    with pytest.raises(ValueError, match=r"\[N\]"):
        solve_batch(np.zeros(2, np.int64), np.zeros(3, np.int64))
    with pytest.raises(TypeError):
        solve(44)


def test_table_size_is_validated():
    for bad in (9, 31, 23.0):
        with pytest.raises(ValueError, match="tt_log2"):
            Solver(tt_log2=bad)
