"""Players and batched matches."""

from __future__ import annotations

import pytest
import torch

from connect_zero_pipeline.core import bitboard as bb
from connect_zero_pipeline.core.match import play_match
from connect_zero_pipeline.core.players import (
    PolicyPlayer,
    RandomPlayer,
    RandomPunisher,
    SolverPlayer,
    sample_move,
)
from connect_zero_pipeline.core.reference import NaiveGame
from connect_zero_pipeline.core.solver import Solver
from tests.helpers import unfinished_random_games


def _naive_wins(moves: str) -> list[bool]:
    """Columns where the side to move wins at once, by the naive engine."""
    out = []
    for c in range(7):
        g = NaiveGame()
        for ch in moves:
            g.play(int(ch) - 1)
        if not g.legal()[c]:
            out.append(False)
            continue
        mover = g.to_move
        g.play(c)
        out.append(g.winner == mover)
    return out


def random_positions(n: int, seed: int) -> list[str]:
    """Move strings of unfinished random games at random lengths."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    while len(out) < n:
        g, moves = NaiveGame(), ""
        target = int(torch.randint(0, 35, (1,), generator=gen))
        while len(moves) < target and not g.over:
            legal = [c for c, ok in enumerate(g.legal()) if ok]
            c = legal[int(torch.randint(0, len(legal), (1,), generator=gen))]
            g.play(c)
            moves += str(c + 1)
        if not g.over:
            out.append(moves)
    return out


def test_punisher_always_takes_a_win_and_blocks_a_single_threat():
    positions = random_positions(600, seed=1)
    state = bb.state_from_moves(positions)
    gen = torch.Generator().manual_seed(0)
    actions = RandomPunisher().act(state, gen).tolist()
    checked_wins = checked_blocks = 0
    for moves, a in zip(positions, actions, strict=True):
        wins = _naive_wins(moves)
        # Threats: columns where the opponent would win if it were its turn.
        if any(wins):
            assert wins[a], f"{moves}: had a win in {wins}, played {a}"
            checked_wins += 1
            continue
        opp = bb.threat_moves(bb.state_from_moves([moves]))[0].tolist()
        if sum(opp) == 1:
            assert opp[a], f"{moves}: must block column {opp.index(True)}, played {a}"
            checked_blocks += 1
    assert checked_wins > 20 and checked_blocks > 20


def test_threat_moves_agree_with_the_naive_engine():
    for moves in random_positions(200, seed=2):
        state = bb.state_from_moves([moves])
        # Pass the turn by pretending the opponent moves: its wins are our threats.
        g = NaiveGame()
        for ch in moves:
            g.play(int(ch) - 1)
        g.to_move = 3 - g.to_move
        expected = []
        for c in range(7):
            if not g.legal()[c]:
                expected.append(False)
                continue
            saved = [row[:] for row in g.grid]
            r = max(r for r in range(6) if g.grid[r][c] == 0)
            g.grid[r][c] = g.to_move
            expected.append(g._wins_through(r, c))
            g.grid = saved
        assert bb.threat_moves(state)[0].tolist() == expected, moves


def test_sample_move_never_picks_masked_columns():
    logits = torch.tensor([[100.0, 0, 0, 0, 0, 0, 0]]).repeat(1000, 1)
    legal = torch.ones(1000, 7, dtype=torch.bool)
    legal[:, 0] = False
    legal[:, 3] = False
    actions = sample_move(logits, legal, torch.Generator().manual_seed(0))
    assert set(actions.tolist()) <= {1, 2, 4, 5, 6}
    assert len(set(actions.tolist())) == 5
    greedy = sample_move(torch.arange(7.0).repeat(3, 1), legal[:3], temperature=0)
    assert greedy.tolist() == [6, 6, 6]
    with pytest.raises(ValueError, match="no legal column"):
        sample_move(logits[:1], torch.zeros(1, 7, dtype=torch.bool))


def test_match_alternates_colours_and_records_returns_for_the_mover():
    result = play_match(RandomPunisher(), RandomPlayer(), num_games=64, seed=3, record=True)
    assert result.a_first.tolist() == [g % 2 == 0 for g in range(64)]
    assert int(result.length.sum()) == result.moves.shape[0] == result.states.shape[0]
    # Replay every game from the records and check the engine's verdict and the returns.
    for g in range(64):
        sel = result.game == g
        moves = result.moves[sel][result.ply[sel].argsort()].tolist()
        naive = NaiveGame()
        for m in moves:
            naive.play(m)
        assert naive.over
        first_is_a = g % 2 == 0
        if naive.winner == 0:
            assert int(result.result[g]) == 0
        else:
            a_won = (naive.winner == 1) == first_is_a
            assert int(result.result[g]) == (1 if a_won else -1)
        rets = result.returns[sel][result.ply[sel].argsort()]
        movers_a = result.mover_is_a[sel][result.ply[sel].argsort()]
        for ply, (r, is_a) in enumerate(zip(rets.tolist(), movers_a.tolist(), strict=True)):
            assert is_a == ((ply % 2 == 0) == first_is_a)
            assert r == (float(result.result[g]) if is_a else -float(result.result[g]))
    # The recorded states are from the mover's view: the mover never has more stones.
    s = result.states.long()
    assert bool(((s == -1).sum((1, 2)) - (s == 1).sum((1, 2))).ge(0).all())


def test_match_is_reproducible_from_its_seed():
    a = play_match(RandomPlayer(), RandomPlayer(), num_games=50, seed=7)
    b = play_match(RandomPlayer(), RandomPlayer(), num_games=50, seed=7)
    c = play_match(RandomPlayer(), RandomPlayer(), num_games=50, seed=8)
    assert torch.equal(a.result, b.result) and torch.equal(a.length, b.length)
    assert not torch.equal(a.length, c.length)


def test_punisher_beats_random_player():
    rates = play_match(RandomPunisher(), RandomPlayer(), num_games=400, seed=0).rates()
    assert rates["win_rate"] > 0.85
    assert abs(rates["win_rate"] + rates["draw_rate"] + rates["loss_rate"] - 1) < 1e-9


def test_policy_player_follows_the_model_and_masks_illegal_columns():
    class Prefers1(torch.nn.Module):
        def forward(self, boards):
            b = boards.shape[0]
            return torch.tensor([10.0, 0, 0, 0, 0, 0, 0]).repeat(b, 1), torch.zeros(b)

    state = bb.state_from_moves(["", "111111"])
    actions = PolicyPlayer(Prefers1()).act(state)
    assert actions[0] == 0 and actions[1] != 0


def test_match_rejects_bad_game_count():
    with pytest.raises(ValueError, match="num_games must be >= 1, got 0"):
        play_match(RandomPlayer(), RandomPlayer(), num_games=0)


def test_random_opening_randomises_only_the_first_plies():
    class Always1:  # column 1, or the leftmost legal column once it is full
        def act(self, state, generator=None):
            return bb.legal_mask(state).long().argmax(1)

    from connect_zero_pipeline.core.players import RandomOpening

    player = RandomOpening(Always1(), plies=2)
    gen = torch.Generator().manual_seed(0)
    first = player.act(bb.state_from_moves([""] * 500), gen)
    assert len(set(first.tolist())) == 7  # random at ply 0
    later = player.act(bb.state_from_moves(["44", "4455", "1"] * 10), gen)
    assert later.view(10, 3)[:, :2].eq(0).all()  # ply >= 2: the wrapped player
    assert len(set(later.view(10, 3)[:, 2].tolist())) > 1  # ply 1: still random
    result = play_match(
        player, RandomOpening(Always1(), plies=2), num_games=40, seed=1, record=True
    )
    openings = {
        tuple(result.moves[(result.game == g) & (result.ply < 2)].tolist()) for g in range(40)
    }
    assert len(openings) > 10


# ---------------------------------------------------------------------------
# SolverPlayer
# ---------------------------------------------------------------------------

SOLVER = Solver(tt_log2=20)  # late positions: no book needed
analyze = SOLVER.analyze


def test_solver_player_plays_optimal_legal_moves():
    moves = unfinished_random_games(40, 14, 34, seed=5)  # from ply 14 on, the analysis is cheap
    state = bb.state_from_moves(moves)
    gen = torch.Generator().manual_seed(0)
    actions = SolverPlayer(solver=SOLVER).act(state, gen)
    assert actions.shape == (len(moves),) and actions.dtype == torch.int64
    for m, a in zip(moves, actions.tolist(), strict=True):
        scores = analyze(m)
        assert scores[a] is not None and scores[a] == max(s for s in scores if s is not None), m


def test_solver_player_through_a_labeller_plays_the_same_and_solves_each_position_once(tmp_path):
    from connect_zero_pipeline.core.labelling import Labeller, SolvedCache

    moves = unfinished_random_games(40, 14, 34, seed=6)
    state = bb.state_from_moves(moves)
    direct = SolverPlayer(solver=SOLVER).act(state, torch.Generator().manual_seed(0))
    with Labeller(max_nodes=0, cache=SolvedCache(tmp_path), flush_seconds=30) as labeller:
        cached = SolverPlayer(labeller=labeller).act(state, torch.Generator().manual_seed(0))
        assert labeller.totals.solved == len(set(moves)) and len(labeller.cache) == len(set(moves))
    assert torch.equal(direct, cached)
    assert len(list(tmp_path.glob("part-*.parquet"))) == 1  # written once, at close

    def no_solving(chunks, max_nodes, spec):  # a later ladder: every analysis is cached
        assert not chunks, f"{len(chunks)} chunks solved again"
        yield from ()

    again = Labeller(max_nodes=0, cache=SolvedCache(tmp_path), run_chunks=no_solving)
    picks = SolverPlayer(labeller=again).act(state, torch.Generator().manual_seed(0))
    assert torch.equal(picks, direct) and again.totals.cached == len(moves)


def test_solver_player_breaks_ties_randomly_and_reproducibly():
    moves = "1233722555341451114725221333"  # columns 4-7 all score -1, 1-3 are full
    assert analyze(moves) == [None, None, None, -1, -1, -1, -1]
    state = bb.state_from_moves([moves] * 64)
    picks = SolverPlayer(solver=SOLVER).act(state, torch.Generator().manual_seed(1))
    assert set(picks.tolist()) == {3, 4, 5, 6}
    again = SolverPlayer(solver=SOLVER).act(state, torch.Generator().manual_seed(1))
    assert torch.equal(picks, again)


def test_solver_player_epsilon_one_is_random_and_legal():
    state = bb.state_from_moves(["4444441"] * 700)
    picks = SolverPlayer(epsilon=1.0, solver=SOLVER).act(state, torch.Generator().manual_seed(2))
    counts = torch.bincount(picks, minlength=7)
    assert counts[3] == 0 and (counts[[0, 1, 2, 4, 5, 6]] > 60).all()


def test_solver_player_budget_fallback_wins_or_blocks():
    # With a 1-node budget neither analysis finishes (the budget covers all 7
    # moves): the fallback wins at once in the first game, blocks in the second.
    player = SolverPlayer(max_nodes=1, solver=SOLVER)
    state = bb.state_from_moves(["121217", "1212172"])
    picks = player.act(state, torch.Generator().manual_seed(3))
    assert picks.tolist() == [0, 0]
    assert player.num_fallbacks == 2
    with pytest.raises(ValueError):
        SolverPlayer(epsilon=1.5, solver=SOLVER)
    with pytest.raises(ValueError, match="needs a solver or a labeller"):
        SolverPlayer()
