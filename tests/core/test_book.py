"""The opening book (core/book.py, common/opening_book.py): read from its source's format,
checked against the project's own solver, made once per machine, and the solver's search
stopping at it."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from connect_zero_pipeline.common import opening_book
from connect_zero_pipeline.core.bitboard import (
    BOTTOM_MASK,
    alignment,
    column_mask,
    moves_to_bitboards,
)
from connect_zero_pipeline.core.book import (
    BOOK_PLY,
    DISTANCE_BASE,
    NO_SCORE,
    book_score,
    from_bitbully,
)
from connect_zero_pipeline.core.solver import Solver, SolverSpec

EMPTY_BOARD = [-2, -1, 0, 1, 0, -1, -2]
"""Every move's score from the empty board (Allis 1988; Pons' solver)."""


@pytest.fixture(scope="module")
def book():
    folder = opening_book.book_folder()
    assert folder is not None, opening_book.MISSING  # make setup installs the book extra
    return opening_book.solver_spec().make().book


def _encode(moves: str, score: int) -> bytes:
    """One entry of BitBully's format (core/book.py's docstring), written here from the
    format alone: the position's code, then its value for the first player."""
    columns: list[list[int]] = [[] for _ in range(7)]
    for i, move in enumerate(moves):
        columns[int(move) - 1].append(1 if i % 2 == 0 else 2)
    bits = "".join("".join("10" if s == 1 else "11" for s in col) + "0" for col in columns) + "0"
    code = int(bits, 2)
    plies = len(moves)
    if score == 0:
        value = 0
    elif score > 0:  # the side to move (the first player) completes four with stone `last`
        last = 2 * (22 - score) - 1
        value = DISTANCE_BASE - (last - plies)
    else:
        last = 2 * (22 + score)
        value = -(DISTANCE_BASE - (last - plies))
    return code.to_bytes(4, "big") + value.to_bytes(1, "big", signed=True)


def _random_positions(count: int, plies: int, seed: int) -> list[str]:
    """Move strings of ``plies`` random moves, the game not over and the side to move unable
    to win at once (the positions a book holds)."""
    rng = np.random.default_rng(seed)
    found: list[str] = []
    while len(found) < count:
        moves = "".join(str(c) for c in rng.integers(1, 8, size=plies))
        try:
            pos, mask = moves_to_bitboards(moves)  # a full column, a move after a win: refused
        except ValueError:
            continue
        if alignment(pos ^ mask):  # the last move won
            continue
        if not any(_wins_at_once(pos, mask, c) for c in range(7)):
            found.append(moves)
    return found


def _wins_at_once(pos: int, mask: int, column: int) -> bool:
    move = (mask + (1 << (7 * column))) & column_mask(column)
    return move != 0 and alignment(pos | move)


def test_entries_written_from_the_format_read_back_as_the_solvers_scores():
    solver = Solver(tt_log2=16)
    positions = _random_positions(12, BOOK_PLY, seed=1)
    scores = [solver.solve(m) for m in positions]
    assert len(set(scores)) > 2  # wins, losses and draws, at several distances
    made = from_bitbully(b"".join(_encode(m, s) for m, s in zip(positions, scores, strict=True)))
    assert len(made) == len(positions) and np.all(np.diff(made.keys) > 0)
    for moves, score in zip(positions, scores, strict=True):
        assert made.score(*moves_to_bitboards(moves)) == score, moves
        mirrored = "".join(
            str(8 - int(c)) for c in moves
        )  # one entry for a position and its mirror
        assert made.score(*moves_to_bitboards(mirrored)) == score, mirrored
    assert made.score(*moves_to_bitboards("4" * 4)) is None  # another ply: not looked up
    with pytest.raises(ValueError, match="not whole entries"):
        from_bitbully(b"\x00" * 7)
    with pytest.raises(ValueError, match="not a position of 12 stones"):
        from_bitbully(_encode("44", 0))
    with pytest.raises(ValueError, match="one position twice"):
        from_bitbully(_encode(positions[0], scores[0]) * 2)


def test_the_book_agrees_with_the_solver_on_a_sample_of_its_positions(book):
    """Every position of the sample scored by the search alone, as the book scores it."""
    rng = np.random.default_rng(0)
    solver = Solver(tt_log2=20)
    for i in rng.choice(len(book), 25, replace=False):
        key = int(book.keys[i])
        position = mask = 0
        for c in range(7):  # the key's column: the stones below its highest bit, then a marker
            col = (key >> (7 * c)) & 0x7F
            height = col.bit_length() - 1
            mask |= ((1 << height) - 1) << (7 * c)
            position |= (col - (1 << height)) << (7 * c)
        assert position + mask + BOTTOM_MASK == key
        assert solver.solve((position, mask)) == int(book.scores[i]), key


def test_with_the_book_every_move_of_the_opening_is_exact(book):
    """Every move's score a ply before the book's, with its lookups and without; and the
    empty board's known scores."""
    with_book, alone = Solver(book=book), Solver(tt_log2=20)
    for moves in _random_positions(3, BOOK_PLY - 1, seed=2):
        assert with_book.analyze(moves) == alone.analyze(moves), moves
    assert with_book.analyze("") == EMPTY_BOARD
    assert with_book.node_count < 2_000_000  # a search down to ply 12, not the whole game
    assert with_book.analyze("4") == [-4, -2, -2, -1, -2, -2, -4]  # the mirror image holds too


def test_the_book_is_made_once_per_machine_and_its_absence_is_one_line(
    tmp_path, monkeypatch, caplog
):
    book_solve = opening_book.book_solver(16).solve
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    opening_book.book_folder.cache_clear()
    try:
        folder = opening_book.book_folder()
        assert folder is not None and folder.parent == tmp_path / "connect-zero-pipeline"
        made = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
        assert set(made) == {"keys.npy", "scores.npy"}
        opening_book.book_folder.cache_clear()
        assert opening_book.book_folder() == folder  # found, not made again
        assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == made
        spec = opening_book.solver_spec(16)
        assert spec == SolverSpec(16, str(folder)) and len(spec.make().book) == 4_200_899
        # Without the source: one warning, and the solver searches as before.
        opening_book.book_folder.cache_clear()
        monkeypatch.setattr(opening_book, "source", lambda: None)
        caplog.clear()  # the book's "made" line is an INFO record where logging is configured
        with caplog.at_level(logging.WARNING):
            assert opening_book.solver_spec(16) == SolverSpec(16, None)
        assert [r.getMessage() for r in caplog.records] == [opening_book.MISSING]
        alone = SolverSpec(16, None).make()
        assert alone.book is None and alone.solve("444444333333") == book_solve("444444333333")
        # A worker whose machine lacks the folder (a Ray node): it says so and searches.
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert SolverSpec(16, str(tmp_path / "none")).make().book is None
        assert "No opening book at" in caplog.text
    finally:
        opening_book.book_folder.cache_clear()


def test_a_book_lookup_answers_only_its_own_ply(book):
    assert book.score(*moves_to_bitboards("4444")) is None
    pos, mask = moves_to_bitboards("444444333333")  # 12 stones
    found = book_score(np.int64(pos), np.int64(mask), book.keys, book.scores)
    assert found != NO_SCORE and found == Solver(tt_log2=16).solve("444444333333")


def test_the_sets_labelling_budget_is_the_books_where_there_is_one():
    """pons.max_nodes null: every position of the shipped set's games within 100 M nodes with
    the book; without it, the budget of before (positions before ply 12 are skipped)."""
    from connect_zero_pipeline.params.pons import BOOK_BUDGET, SEARCH_BUDGET, PonsConfig

    assert PonsConfig().max_nodes is None
    assert PonsConfig().budget(has_book=True) == BOOK_BUDGET == 100_000_000
    assert PonsConfig().budget(has_book=False) == SEARCH_BUDGET == 1_000_000
    assert PonsConfig(max_nodes=0).budget(has_book=False) == 0  # exact, asked for
    with pytest.raises(ValueError, match="max_nodes must be null or an integer >= 0"):
        PonsConfig(max_nodes=-1)
