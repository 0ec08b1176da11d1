"""bench solver's generated classes: the moves-left arithmetic and the class filter."""

from __future__ import annotations

import pytest

from connect_zero_pipeline.bench.solver import CLASSES, generate_class, moves_left
from connect_zero_pipeline.core.solver import Solver


@pytest.mark.parametrize(
    ("stones", "score", "left"),
    [
        (6, 18, 1),  # first player to move, wins with its 4th stone now
        (7, 18, 1),  # second player to move, wins with its 4th stone now
        (7, -17, 2),  # second player to move; the first player wins with its 5th stone
        (10, 0, 32),  # a draw fills the board
        (20, 5, 13),  # 17th stone of the mover, who has 10: 7 own moves and 6 replies
    ],
)
def test_moves_left_follows_pons_scores(stones, score, left):
    assert moves_left(stones, score) == left


def test_generated_positions_belong_to_their_class():
    rows = generate_class("L2_R2", 4, seed=1)
    (lo, hi), (left_lo, left_hi) = CLASSES["L2_R2"]
    assert len({moves for moves, _ in rows}) == 4
    solver = Solver(tt_log2=16)
    for moves, score in rows:
        assert lo <= len(moves) <= hi
        assert solver.solve(moves) == score  # the label is the exact score
        assert left_lo <= moves_left(len(moves), score) <= left_hi
    assert generate_class("L2_R2", 4, seed=1) == rows  # seeded
