"""The opening book (core/book.py, common/opening_book.py): read from its source's format,
checked against the project's own solver, made once per machine, and the solver's search
stopping at it."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys

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
    MANIFEST,
    NO_SCORE,
    OpeningBook,
    book_score,
    from_bitbully,
)
from connect_zero_pipeline.core.solver import Solver, SolverSpec

EMPTY_BOARD = [-2, -1, 0, 1, 0, -1, -2]
"""Every move's score from the empty board (Allis 1988; Pons' solver)."""


@pytest.fixture(scope="module")
def book():
    found = opening_book.machine_book()[1]
    assert found is not None, opening_book.MISSING  # make setup installs the book extra
    return found


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


def test_entries_outside_the_format_are_refused_naming_the_entry():
    """A value byte that no position has, and bits after the seventh column: the format's
    contract; a book of one ply only (no ply= to get wrong)."""
    solver = Solver(tt_log2=16)
    (moves,) = _random_positions(1, BOOK_PLY, seed=3)
    good = _encode(moves, solver.solve(moves))
    assert len(from_bitbully(good)) == 1
    code, value = good[:4], good[4]
    for byte, why in [(127, "127"), (DISTANCE_BASE - 31, "69"),  # past the 30 plies left
                      (DISTANCE_BASE - 2, "98"),  # a win at an even distance: the other's
                      (256 - (DISTANCE_BASE - 1), "-99")]:  # a loss at an odd one  # fmt: skip
        with pytest.raises(ValueError, match=rf"entry 1 \(.*\): the value {why} is neither 0"):
            from_bitbully(good + code + bytes([byte]))  # entry 1: the bad one after a good one
    trailing = (int.from_bytes(code, "big") | 1).to_bytes(4, "big")  # the last bit set
    with pytest.raises(ValueError, match=r"entry 0 \(.*\) is not a position of 12 stones"):
        from_bitbully(trailing + bytes([value]))
    with pytest.raises(TypeError):
        from_bitbully(good, ply=11)  # type: ignore[call-arg]


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


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    """A kept book made once for this module (copied by each test: a build takes seconds)."""
    folder = tmp_path_factory.mktemp("kept") / "book"
    src = opening_book.source()
    assert src is not None, opening_book.MISSING
    from_bitbully(np.fromfile(src, dtype=np.uint8)).save(folder, {"test": True})
    return folder


@pytest.fixture
def cache(tmp_path, monkeypatch, kept):
    """``XDG_CACHE_HOME`` in ``tmp_path``, holding a copy of the kept book where this machine
    looks for it; yields that folder. Each process-wide answer is forgotten around it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = opening_book.cache_folder(opening_book.source())
    shutil.copytree(kept, folder)
    opening_book.machine_book.cache_clear()
    yield folder
    opening_book.machine_book.cache_clear()


def _found(caplog) -> tuple[OpeningBook, list[str]]:
    """This machine's book as a new process finds it, and the warning lines it said."""
    opening_book.machine_book.cache_clear()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        where, book = opening_book.machine_book()
    assert book is not None and len(book) == 4_200_899
    return where, [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def _assert_right(book) -> None:
    """The opening's known scores through ``book`` (``44``: the issue that found the damage)."""
    solver = Solver(tt_log2=20, book=book)
    assert solver.analyze("") == EMPTY_BOARD
    assert solver.analyze("44") == [-3, -3, -2, 1, -2, -3, -3]


def test_a_whole_cache_is_found_without_reading_the_source_and_opened_as_it_is(cache, caplog):
    made = {p.name: p.stat().st_mtime_ns for p in cache.iterdir()}
    assert set(made) == {"keys.npy", "scores.npy", MANIFEST}
    where, said = _found(caplog)
    assert where == str(cache) and said == []
    assert {p.name: p.stat().st_mtime_ns for p in cache.iterdir()} == made  # not made again
    assert opening_book.solver_spec(16) == SolverSpec(16, str(cache))
    assert len(SolverSpec(16, str(cache)).make().book) == 4_200_899  # a worker checks it too
    manifest = json.loads((cache / MANIFEST).read_text())
    assert manifest["entries"] == 4_200_899 and manifest["format"] == 2
    assert manifest["files"]["scores.npy"]["bytes"] == (cache / "scores.npy").stat().st_size


def _truncate(folder):
    data = (folder / "keys.npy").read_bytes()
    (folder / "keys.npy").write_bytes(data[: len(data) // 2])


def _empty(folder):
    (folder / "keys.npy").write_bytes(b"")


def _flip(folder):  # the same size, every score's sign flipped: wrong answers, had it been read
    scores = np.load(folder / "scores.npy", mmap_mode="r+")
    scores[:] = -scores
    scores.flush()
    del scores


def _unfinished(folder):  # what a crash during the first build left: no manifest, one array
    (folder / MANIFEST).unlink()
    (folder / "scores.npy").unlink()


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (_truncate, "keys.npy has {size} bytes, its manifest {full}"),
        (_empty, "keys.npy has {size} bytes, its manifest {full}"),
        (_flip, "scores.npy differs from its checksum"),
        (_unfinished, "no manifest: a book left unfinished"),
    ],
    ids=["truncated", "zero-byte", "same-size", "partial"],
)
def test_a_damaged_cache_is_said_in_one_line_made_again_and_answers_right(
    cache, caplog, damage, reason
):
    full = json.loads((cache / MANIFEST).read_text())["files"]["keys.npy"]["bytes"]
    damage(cache)
    size = (cache / "keys.npy").stat().st_size
    assert size < full or damage is not _truncate
    reason = reason.format(size=size, full=full)
    where, said = _found(caplog)
    assert said == [f"The opening book in {cache} was damaged ({reason}): made again"]
    assert where == str(cache)
    _assert_right(OpeningBook.load(cache))  # whole on disk again
    assert [p.name for p in cache.parent.iterdir() if p.name.startswith(".")] == []  # no leftover


def test_an_unwritable_cache_is_one_line_and_the_book_is_read_into_memory(
    tmp_path, monkeypatch, caplog
):
    (tmp_path / "file").write_text("not a folder")  # below a file: no one can write, root too
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file" / "cache"))
    try:
        where, said = _found(caplog)
        assert where == str(opening_book.source())  # workers read the source themselves
        assert len(said) == 1 and said[0].startswith(f"The opening book cannot be kept in "
                                                     f"{tmp_path / 'file' / 'cache'}")  # fmt: skip
        assert "read into memory in each process instead" in said[0]
        assert "XDG_CACHE_HOME moves the cache" in said[0]
        _assert_right(opening_book.book_solver(20).book)
        worker = SolverSpec(20, where).make()  # a worker process's solver
        assert worker.analyze("44") == [-3, -3, -2, 1, -2, -3, -3]
    finally:
        opening_book.machine_book.cache_clear()


def test_two_processes_making_the_book_at_once_both_answer_right_and_leave_it_whole(
    cache, tmp_path
):
    """Two processes find the cache damaged and make it again at once: each moves the damaged
    folder aside or finds the other's whole book."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    code = ("from connect_zero_pipeline.common.opening_book import book_solver\n"
            "print(book_solver(20).analyze('44'))")  # fmt: skip
    _flip(cache)
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(2)]  # fmt: skip
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.strip() == "[-3, -3, -2, 1, -2, -3, -3]", (out, err)
        assert "Traceback" not in err and len(err.strip().splitlines()) <= 1, err
    _assert_right(OpeningBook.load(cache))
    assert sorted(p.name for p in cache.parent.iterdir()) == [cache.name]  # no leftover


def test_without_the_source_the_solver_searches_and_says_so_once(book, monkeypatch, caplog):
    monkeypatch.setattr(opening_book, "source", lambda: None)
    opening_book.machine_book.cache_clear()
    try:
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert opening_book.solver_spec(16) == SolverSpec(16, None)
            assert not opening_book.has_book()
        assert [r.getMessage() for r in caplog.records] == [opening_book.MISSING]
        alone = SolverSpec(16, None).make()
        assert alone.book is None
        assert alone.solve("444444333333") == Solver(16, book).solve("444444333333")
    finally:
        opening_book.machine_book.cache_clear()


def test_a_worker_that_cannot_read_the_book_says_so_and_searches(tmp_path, caplog):
    """A Ray node without the folder, or one damaged since the parent checked it."""
    (tmp_path / "damaged").mkdir()
    for where, reason in [(tmp_path / "none", "No such file or directory"),
                          (tmp_path / "damaged", "no manifest")]:  # fmt: skip
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert SolverSpec(16, str(where)).make().book is None
        assert f"No opening book at {where} in this process" in caplog.text
        assert reason in caplog.text


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
