"""Self-play: z targets on worked examples, schema, determinism, sharding, end to end."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from connect_zero_pipeline.core.bitboard import State, play, popcount
from connect_zero_pipeline.core.config.selfplay import SelfPlayConfig, games_per_slot
from connect_zero_pipeline.core.models import build_model
from connect_zero_pipeline.core.search.base import win_value
from connect_zero_pipeline.core.selfplay import (
    COLUMNS,
    backward_z,
    merge_shards,
    self_play,
    shard_slots,
    slot_keys,
    slot_uniforms,
)
from tests.helpers import selfplay_config

_W = torch.tensor([[2, -3, 5, 1, -1, 4, -2]]).repeat(6, 1) * torch.arange(1, 7).view(6, 1)


def pure_fn(boards: torch.Tensor):
    """Deterministic row-wise evaluator in integer arithmetic (exactly batch-invariant)."""
    s = boards.long() * _W  # (B, 6, 7)
    return s.sum(1).float() / 6.0, torch.tanh(s.sum((1, 2)).float() / 30.0)


SMALL = selfplay_config(
    num_games=6,
    sims=6,
    moves_per_gen=24,
    temp_cutoff=4,
    random_opening_plies=0,
    seed=7,
    search="puct",  # these invariants are PUCT's (visit-count targets); Gumbel has its own tests
)


def test_backward_z_worked_examples():
    # Three slots recorded over 6 steps (T = 6, G = 3):
    #   slot 0: a 2-ply game won by its 2nd move (steps 0-1), then a 4-ply win (steps 2-5)
    #   slot 1: a draw ending at step 3, then an unfinished game (steps 4-5: dropped)
    #   slot 2: a 5-ply win ending at step 4 (the first mover wins), then an unfinished
    #           game (step 5: dropped)
    done = torch.zeros(6, 3, dtype=torch.bool)
    reward = torch.zeros(6, 3)
    done[1, 0] = done[5, 0] = True
    reward[1, 0] = reward[5, 0] = 1.0
    done[3, 1] = True  # draw: reward 0
    done[4, 2] = True
    reward[4, 2] = 1.0
    z, complete = backward_z(done, reward)
    expected = torch.tensor(
        [
            [-1.0, 0.0, 1.0],  # slot 0: the winner's opponent moved first: -1
            [1.0, 0.0, -1.0],  # the winning move
            [-1.0, 0.0, 1.0],
            [1.0, 0.0, -1.0],
            [-1.0, 0.0, 1.0],
            [1.0, 0.0, 0.0],
        ]
    )
    torch.testing.assert_close(z, expected)
    assert complete.T.tolist() == [
        [True] * 6,
        [True] * 4 + [False] * 2,
        [True] * 5 + [False],
    ]


def test_backward_z_rejects_bad_shapes():
    with pytest.raises(ValueError, match=r"\[T, G\]"):
        backward_z(torch.zeros(3, dtype=torch.bool), torch.zeros(3))


def test_slot_streams_are_uniform_and_keyed():
    keys = slot_keys(5, 0, torch.arange(4))
    u = slot_uniforms(keys, step=3, count=20_000)
    assert bool(((u > 0) & (u < 1)).all())
    assert u.mean().item() == pytest.approx(0.5, abs=0.01)
    assert torch.equal(u, slot_uniforms(slot_keys(5, 0, torch.arange(4)), 3, 20_000))
    assert not torch.equal(u[0], u[1])  # slots differ
    assert not torch.equal(u, slot_uniforms(keys, 4, 20_000))  # steps differ
    assert not torch.equal(keys, slot_keys(5, 1, torch.arange(4)))  # generations differ


def _check_table(df: pd.DataFrame, cfg: SelfPlayConfig, generation: int = 0):
    assert list(df.columns) == list(COLUMNS)
    assert {k: str(v) for k, v in df.dtypes.items()} == COLUMNS
    assert len(df) > 0 and bool((df.generation == generation).all())
    pi = df[[f"pi_{c}" for c in range(1, 8)]].to_numpy()
    assert abs(pi.sum(1) - 1).max() < 1e-5
    if cfg.mcts.search == "puct":  # the targets are visit counts: integers
        sims_grid = pi * cfg.mcts.sims
        assert abs(sims_grid - sims_grid.round()).max() < 1e-4
    assert bool((pi[range(len(df)), df.action.to_numpy()] > 0).all())  # played moves were visited
    assert df.ply.tolist() == [popcount(int(m)) for m in df["mask"]]
    assert bool(df.z.abs().le(1).all())
    assert bool(df.root_value.abs().le(1).all())
    assert not df.duplicated(["game", "ply"]).any()
    assert df.equals(df.sort_values(["game", "ply"], ignore_index=True))
    for _, game in df.groupby("game"):
        assert game.ply.tolist() == list(range(len(game)))  # complete games from the empty board
        z = game.z.to_numpy()
        assert (z[:-1] == -z[1:]).all()  # negamax: the sign flips every ply
        last = game.iloc[-1]
        state = State(
            torch.tensor([int(last.position)]),
            torch.tensor([int(last["mask"])]),
            torch.tensor([int(last.ply)]),
        )
        step = play(state, torch.tensor([int(last.action)]))
        assert bool(step.done[0])
        # The last mover's z: 0 for a draw, else the win's value on the final board.
        won = win_value(step.state.ply, cfg.mcts.win_decay) * step.reward
        assert won.item() == pytest.approx(float(last.z))
        if step.reward[0] > 0:  # a quicker win is worth more, down to 1 - win_decay
            assert 1 - cfg.mcts.win_decay <= last.z <= 1


def test_schema_and_invariants_with_a_pure_evaluator():
    df = self_play(SMALL, pure_fn, generation=3)
    _check_table(df, SMALL, generation=3)
    stride = games_per_slot(SMALL.moves_per_gen)
    assert df.game.floordiv(stride).max() < SMALL.num_games


def test_same_seed_same_table_and_seed_matters():
    a = self_play(SMALL, pure_fn)
    b = self_play(SMALL, pure_fn)
    c = self_play(selfplay_config(**{**SMALL.__dict__, "seed": 8}), pure_fn)
    assert a.equals(b)
    assert not a.equals(c)


@pytest.mark.parametrize("num_shards", [2, 4])
def test_shards_merge_into_the_single_shard_table(num_shards):
    whole = self_play(SMALL, pure_fn)
    parts = [
        self_play(SMALL, pure_fn, shard_index=i, num_shards=num_shards) for i in range(num_shards)
    ]
    assert merge_shards(parts).equals(whole)
    assert [len(shard_slots(6, i, num_shards)) for i in range(num_shards)] == (
        [3, 3] if num_shards == 2 else [1, 2, 1, 2]
    )


def test_finish_games_keeps_every_game_started():
    # One step: every slot starts exactly one game, and finish_games plays it to its end.
    one = selfplay_config(**{**SMALL.__dict__, "moves_per_gen": 1, "finish_games": True})
    df = self_play(one, pure_fn)
    _check_table(df, one)  # complete games from the empty board, terminal last moves
    stride = games_per_slot(1)
    assert sorted(df.game.unique()) == [s * stride for s in range(SMALL.num_games)]
    dropped = selfplay_config(**{**one.__dict__, "finish_games": False})
    assert len(self_play(dropped, pure_fn)) == 0  # no game ends within one ply


@pytest.mark.parametrize("search", ["puct", "gumbel"])
def test_finishing_adds_games_and_changes_none_of_the_others(search):
    base = {**SMALL.__dict__, "search": search}
    cfg = selfplay_config(**{**base, "finish_games": True})
    finished = self_play(cfg, pure_fn)
    dropped = self_play(selfplay_config(**{**base, "finish_games": False}), pure_fn)
    _check_table(finished, cfg)
    # The same streams: the games complete within moves_per_gen are identical rows; the
    # games in progress then (one per slot at most) are added, not dropped.
    merged = finished.merge(dropped, how="inner")
    assert len(merged) == len(dropped) > 0
    added = set(finished.game) - set(dropped.game)
    assert 0 < len(added) <= SMALL.num_games
    assert len({g // games_per_slot(SMALL.moves_per_gen) for g in added}) == len(added)


def test_temperature_cutoff_controls_sampling():
    greedy = selfplay_config(**{**SMALL.__dict__, "temp_cutoff": 0, "dirichlet_eps": 0.0})
    df = self_play(greedy, pure_fn)
    # Without noise and sampling, every slot plays the same deterministic first game.
    first_moves = df[df.ply == 0].action
    assert first_moves.nunique() == 1
    sampled = self_play(SMALL, pure_fn)
    assert sampled[sampled.ply == 0].action.nunique() > 1


def test_tiny_model_end_to_end_with_progress():
    torch.manual_seed(0)
    cfg = selfplay_config(num_games=8, sims=8, moves_per_gen=20, seed=1)
    calls = []
    df = self_play(
        cfg, model=build_model("tiny"), progress=lambda t, total: calls.append((t, total))
    )
    _check_table(df, cfg)
    assert calls[-1] == (20, 20) and len(calls) == 20


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"num_games": 0}, "num_games"),
        ({"sims": -1}, "sims"),
        ({"moves_per_gen": 1.5}, "moves_per_gen"),
        ({"temp_cutoff": -1}, "temp_cutoff"),
        ({"c_puct": 0}, "c_puct"),
        ({"dirichlet_eps": 2}, "dirichlet_eps"),
        ({"seed": "x"}, "seed"),
        ({"finish_games": "yes"}, "finish_games"),
        ({"precision": "float16"}, "precision"),
    ],
)
def test_config_validation(kwargs, field):
    with pytest.raises(ValueError, match=f"^{field} must be"):
        selfplay_config(**kwargs)


def test_needs_exactly_one_evaluator():
    with pytest.raises(ValueError, match="exactly one"):
        self_play(SMALL)
    with pytest.raises(ValueError, match="shard_index"):
        self_play(SMALL, pure_fn, shard_index=2, num_shards=2)


def test_a_bfloat16_search_runs_its_network_in_torch_and_says_what_cannot():
    """``precision: bfloat16`` evaluates with torch under autocast (onnxruntime computes in
    float32): close to float32's figures, not equal; what cannot run in it is refused."""
    from connect_zero_pipeline.core.inference import make_evaluate_fn

    torch.manual_seed(0)
    model = build_model("tiny").eval()
    boards = torch.randint(-1, 2, (64, 6, 7), dtype=torch.int8)
    f32 = make_evaluate_fn(model, "cpu")(boards)
    bf16 = make_evaluate_fn(model, "cpu", dtype=torch.bfloat16)(boards)
    assert bf16[0].dtype == torch.float32  # float32 out, as search reads it
    assert not torch.equal(f32[0], bf16[0])
    torch.testing.assert_close(bf16[0], f32[0], atol=0.05, rtol=0.05)
    with pytest.raises(ValueError, match="backend 'onnxruntime' runs in float32, not "
                                         "torch.bfloat16"):  # fmt: skip
        make_evaluate_fn(model, "cpu", "onnxruntime", dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="compile 'eager' runs the network in float32, but "
                                         "precision is 'bfloat16'"):  # fmt: skip
        self_play(selfplay_config(num_games=2, sims=2, moves_per_gen=2, precision="bfloat16"),
                  model=model, compile="eager")  # fmt: skip


def test_thread_count_is_restored():
    before = torch.get_num_threads()
    self_play(selfplay_config(num_games=2, sims=2, moves_per_gen=2), pure_fn, num_threads=1)
    assert torch.get_num_threads() == before


def test_random_opening_plies_play_uniform_legal_moves():
    import torch

    from connect_zero_pipeline.core.selfplay import self_play

    def prefers_column_4(boards):
        logits = torch.full((boards.shape[0], 7), -5.0)
        logits[:, 3] = 5.0
        return logits, torch.zeros(boards.shape[0])

    base = dict(num_games=64, sims=4, moves_per_gen=30, temp_cutoff=0, dirichlet_eps=0.0, seed=1)
    greedy = self_play(selfplay_config(**base, random_opening_plies=0), prefers_column_4)
    opened = self_play(selfplay_config(**base, random_opening_plies=2), prefers_column_4)
    assert set(greedy.loc[greedy["ply"] == 0, "action"]) == {3}
    first = opened.loc[opened["ply"] < 2, "action"]
    assert len(set(first)) == 7  # every column gets played
    # Later plies follow the search again: column 4 until it is full.
    late = opened[(opened["ply"] == 2)]
    assert (late["action"] == 3).mean() > 0.9
    with pytest.raises(ValueError, match="random_opening_plies must be an integer >= 0, got -1"):
        selfplay_config(random_opening_plies=-1)


def test_gumbel_self_play_trains_on_the_improved_policy_and_shards_alike():
    import dataclasses

    cfg = selfplay_config(**{**SMALL.__dict__, "search": "gumbel", "gumbel_num_actions": 4})
    whole = self_play(cfg, pure_fn, generation=2)
    assert list(whole.columns) == list(COLUMNS) and len(whole) > 0
    pi = whole[[f"pi_{c}" for c in range(1, 8)]].to_numpy()
    assert abs(pi.sum(1) - 1).max() < 1e-5
    assert (pi > 0).sum(1).max() > 4  # the improved policy covers every legal move ...
    played = pi[range(len(whole)), whole.action.to_numpy()]
    assert (played > 0).all()  # ... and the played move is one of them
    parts = [self_play(cfg, pure_fn, generation=2, shard_index=i, num_shards=3) for i in range(3)]
    assert merge_shards(parts).equals(whole)
    # Another seed, other Gumbel noise: other games.
    assert not self_play(dataclasses.replace(cfg, seed=8), pure_fn, generation=2).equals(whole)


@pytest.mark.parametrize("search", ["puct", "gumbel"])
def test_the_restructured_search_plays_the_same_games(search):
    """Generation 1 of a tiny run, as the search before its restructuring played it
    (tests/data/selfplay/README.md): the same games, move for move, the same targets."""
    from tests.helpers import REPO

    cfg = selfplay_config(num_games=16, sims=8, moves_per_gen=12, search=search)
    before = pd.read_parquet(REPO / "tests/data/selfplay" / f"gen_001_{search}.parquet")
    now = self_play(cfg, pure_fn, generation=1)
    games = ["generation", "game", "ply", "position", "mask", "action"]
    pd.testing.assert_frame_equal(now[games], before[games], check_exact=True)
    # Floats: bit-identical on the machine that made the file; a tolerance for another
    # CPU's vectorised exp/tanh, which may round the last bit differently.
    pd.testing.assert_frame_equal(now, before, check_exact=False, rtol=1e-6, atol=1e-7)
