"""Labelling at scale: the cache persists, budgets skip, mirrors dedupe, games are legal."""

from __future__ import annotations

import numpy as np
import pandas as pd

from connect_zero_pipeline.core import bitboard as bb
from connect_zero_pipeline.core.labelling import (
    FULL_COLUMN,
    Labeller,
    SolvedCache,
    canonical_keys,
    collect_positions,
    dedupe_decisive,
    generate_games,
    labelled_table,
)
from connect_zero_pipeline.core.solver import Solver
from tests.helpers import bitboard_arrays

analyze = Solver(tt_log2=20).analyze  # late positions: no book needed
# Late-game positions: cheap to solve exactly.
MOVES = ["664163221317133624532157163764", "2577713147446472", "44444433333322222", "1212124"]


def test_labels_match_the_solver_and_persist_across_runs(tmp_path):
    pos, mask = bitboard_arrays(MOVES)
    with Labeller(max_nodes=0, cache=SolvedCache(tmp_path / "cache")) as lab:
        scores, ok, stats = lab.label(pos, mask)
    assert ok.all() and stats.solved == len(MOVES) and stats.cached == 0
    for row, moves in zip(scores, MOVES, strict=True):
        expected = [FULL_COLUMN if s is None else s for s in analyze(moves)]
        assert row.tolist() == expected
    assert len(list((tmp_path / "cache").glob("part-*.parquet"))) == 1
    # A new labeller on the same directory solves nothing again.
    with Labeller(max_nodes=0, cache=SolvedCache(tmp_path / "cache")) as lab:
        again, ok2, stats2 = lab.label(pos[::-1], mask[::-1])
    assert stats2.cached == len(MOVES) and stats2.solved == 0 and ok2.all()
    assert np.array_equal(again, scores[::-1])


def test_duplicates_are_solved_once_and_all_copies_get_labels():
    pos, mask = bitboard_arrays([MOVES[0]] * 3 + [MOVES[1]])
    with Labeller(max_nodes=0) as lab:
        scores, ok, stats = lab.label(pos, mask)
    assert stats.solved == 2 and ok.all()
    assert np.array_equal(scores[0], scores[2])


def test_over_budget_positions_are_skipped_and_counted():
    pos, mask = bitboard_arrays(
        ["4444", MOVES[0]]
    )  # an early position needs far more than 50 nodes
    with Labeller(max_nodes=50) as lab:
        _, ok, stats = lab.label(pos, mask)
    assert ok.tolist() == [False, True]
    assert stats.skipped == 1 and stats.solved == 1


def test_generated_games_are_legal_finished_and_follow_perfect_play():
    with Labeller(max_nodes=0) as lab:
        games = generate_games(6, lab, epsilon=0.0, opening_plies=(30, 30), seed=1)
    assert len(games) == 6
    for g in games:
        position, mask = bb.moves_to_bitboards(g)  # raises on any illegal move
        assert bb.is_terminal(position, mask)
        # After the random opening every move is optimal (epsilon = 0).
        for ply in range(30, len(g)):
            scores = analyze(g[:ply])
            best = max(s for s in scores if s is not None)
            assert scores[int(g[ply]) - 1] == best, (g, ply)


def test_collect_label_and_dedupe_mirrors():
    games = ["664163221317133624532157163764", "2577713147446472334"]
    mirrored = "".join(str(8 - int(c)) for c in games[0])
    positions = collect_positions([*games, mirrored], min_ply=26)
    assert positions["ply"].min() >= 26
    with Labeller(max_nodes=0) as lab:
        scores, ok, _ = lab.label(positions["position"].to_numpy(), positions["mask"].to_numpy())
    table = labelled_table(positions, scores, ok)
    assert table["best_score"].tolist() == [
        max(v for v in r if not pd.isna(v))
        for r in table[[f"score_{c}" for c in range(1, 8)]].values
    ]
    kept = dedupe_decisive(table)
    assert kept["decisive"].all()
    canon = canonical_keys(kept["position"].to_numpy(), kept["mask"].to_numpy())
    assert len(set(canon.tolist())) == len(kept)  # no position together with its mirror
    # Every decisive position of the mirrored game is a mirror of one already kept.
    assert len(kept) == len(dedupe_decisive(table[~table["moves"].str.startswith(mirrored[:26])]))
