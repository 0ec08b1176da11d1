"""Solver-set metrics: a perfect policy scores 1, a uniform one scores the analytic ce."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from connect_zero_pipeline.core import bitboard as bb
from connect_zero_pipeline.core.evaluation import SCORE_COLUMNS, solver_labels, solver_set_metrics


def _labelled(rows: list[tuple[str, list[int | None]]]) -> pd.DataFrame:
    """A table in the pons_positions schema; labels are given (the metric doesn't re-solve)."""
    pairs = [bb.moves_to_bitboards(m) for m, _ in rows]
    df = pd.DataFrame(
        {
            "moves": [m for m, _ in rows],
            "ply": np.array([len(m) for m, _ in rows], dtype=np.int8),
            "position": np.array([p for p, _ in pairs], dtype=np.uint64),
            "mask": np.array([k for _, k in pairs], dtype=np.uint64),
        }
    )
    for c, name in enumerate(SCORE_COLUMNS):
        df[name] = pd.array([s[c] for _, s in rows], dtype="Int8")
    df["best_score"] = np.array(
        [max(v for v in s if v is not None) for _, s in rows], dtype=np.int8
    )
    return df


ROWS = [
    ("", [-2, -1, 0, 1, 0, -1, -2]),  # begin; one optimal move of 7
    ("4444", [2, 2, -3, -4, -3, 2, 2]),  # begin; four optimal moves
    (
        "664163221317133624532157163764",
        [None, 5, None, -1, -1, None, -1],
    ),  # end; columns 1, 3, 6 full
    ("2577713147446472", [0, 0, 0, 0, -1, -1, -1]),  # middle; draw (no val_signacc)
]


def _perfect_fn(table: pd.DataFrame):
    scores = torch.tensor(
        table[SCORE_COLUMNS].astype("float64").fillna(-100).to_numpy(), dtype=torch.float32
    )
    best = torch.tensor(table["best_score"].to_numpy(np.float32))
    keys = {b.tobytes(): i for i, b in enumerate(bb.to_boards(solver_labels(table)[0]).numpy())}

    def fn(boards):
        idx = [keys[b.tobytes()] for b in boards.numpy()]
        return scores[idx] * 10, torch.sign(best[idx])

    return fn


def test_perfect_policy_scores_one():
    table = _labelled(ROWS)
    m = solver_set_metrics(_perfect_fn(table), table)
    assert m["acc"] == 1.0 and m["val_signacc"] == 1.0 and m["weak_acc"] == 1.0
    assert m["ce"] < 1e-3  # nearly all the policy mass sits on optimal moves
    assert (
        m["count"] == 4 and m["count_begin"] == 2 and m["count_middle"] == 1 and m["count_end"] == 1
    )
    # The finer buckets (plies 0 and 4, 16, 30): an empty one is left out.
    assert (m["count_ply00_06"], m["count_ply13_20"], m["count_ply21_42"]) == (2, 1, 1)
    assert "count_ply07_12" not in m and m["acc_ply00_06"] == 1.0


def test_uniform_policy_ce_is_analytic_and_illegal_columns_are_masked():
    table = _labelled(ROWS)

    def uniform(boards):
        return torch.zeros(boards.shape[0], 7), torch.full((boards.shape[0],), -0.5)

    m = solver_set_metrics(uniform, table)
    # optimal / legal: 1/7, 4/7, 1/4 (three columns full), 4/7
    expected = [-math.log(1 / 7), -math.log(4 / 7), -math.log(1 / 4), -math.log(4 / 7)]
    assert m["ce"] == pytest.approx(np.mean(expected), rel=1e-6)
    assert m["ce_end"] == pytest.approx(-math.log(1 / 4), rel=1e-6)
    # The argmax of equal logits is the first legal column: optimal in rows 2, 3 and 4
    # (in row 3 column 1 is full, so the masked argmax is column 2).
    assert m["acc"] == pytest.approx(3 / 4)
    assert m["weak_acc"] == pytest.approx(3 / 4) and m["weak_acc_end"] == 1.0
    # By outcome class: rows 1-3 are won (row 1 missed), row 4 is a draw, none is lost.
    assert m["count_win"] == 3 and m["count_draw"] == 1 and "count_loss" not in m
    assert m["acc_win"] == pytest.approx(2 / 3) and m["acc_draw"] == 1.0
    # Value -0.5 everywhere; decided rows have best 1, 2, 5: all positive -> sign wrong.
    assert m["val_signacc"] == 0.0
    assert "val_signacc_middle" not in m  # only a draw there


def test_weak_accuracy_counts_the_outcome_class_not_the_exact_score():
    # Row 0 (best 1): column 5 scores 0, a draw where a win was best: a strict miss and a
    # weak mistake. Rows 1 and 2: columns 1 and 2 are optimal.
    table = _labelled(ROWS[:3])
    picks = {0: 4, 1: 0, 2: 1}  # a draw where a win was best; optimal; optimal
    keys = {b.tobytes(): i for i, b in enumerate(bb.to_boards(solver_labels(table)[0]).numpy())}

    def fn(boards):
        logits = torch.zeros(boards.shape[0], 7)
        for j, b in enumerate(boards.numpy()):
            logits[j, picks[keys[b.tobytes()]]] = 5.0
        return logits, torch.zeros(boards.shape[0])

    m = solver_set_metrics(fn, table)
    assert m["acc"] == pytest.approx(2 / 3) and m["weak_acc"] == pytest.approx(2 / 3)
    # A non-optimal move of the best class is a strict miss but no weak mistake.
    table2 = _labelled([("4444", [2, 2, -3, -4, -3, 2, 3])])  # column 7 best (3), 1 wins too
    m2 = solver_set_metrics(
        lambda b: (torch.tensor([[5.0, 0, 0, 0, 0, 0, 0]]), torch.zeros(1)), table2
    )
    assert m2["acc"] == 0.0 and m2["weak_acc"] == 1.0


def test_the_mcts_agent_is_scored_on_its_most_visited_move():
    from connect_zero_pipeline.core.config.search import MCTSConfig
    from connect_zero_pipeline.core.evaluation import search_agent_metrics

    def prefers(column: int, strength: float = 4.0):
        def fn(boards):
            logits = torch.full((boards.shape[0], 7), -strength)
            logits[:, column] = strength
            return logits, torch.zeros(boards.shape[0])

        return fn

    end, draw = _labelled([ROWS[2]]), _labelled([ROWS[3]])  # see ROWS for their scores
    ply30 = {"strict_acc": 1.0, "weak_acc": 1.0, "count": 1.0}  # ply 30: end and ply21_42
    assert search_agent_metrics(prefers(1), end, MCTSConfig(sims=16)) == {
        **ply30,
        **{f"{k}_{b}": v for k, v in ply30.items() for b in ("end", "ply21_42")},
    }
    assert (
        search_agent_metrics(prefers(3), end, MCTSConfig(sims=16))["weak_acc"] == 0.0
    )  # -1: a loss
    assert search_agent_metrics(prefers(0), draw, MCTSConfig(sims=16))["strict_acc"] == 1.0
    # Gumbel search plays its survivor: a prior gap beyond sigma(q)'s range (|q| <= 1,
    # (c_visit + max N) * q <= 66 here) decides it.
    gumbel = MCTSConfig(sims=16, search="gumbel")
    assert search_agent_metrics(prefers(1, 50.0), end, gumbel)["strict_acc"] == 1.0
    assert search_agent_metrics(prefers(3, 50.0), end, gumbel)["weak_acc"] == 0.0
    both = search_agent_metrics(prefers(4), _labelled(ROWS[2:]), MCTSConfig(sims=16), batch_size=1)
    assert {k: both[k] for k in ("strict_acc", "weak_acc", "count")} == {
        "strict_acc": 0.0, "weak_acc": 0.0, "count": 2.0}  # fmt: skip
    # Per bucket (plies 30 and 16), and the agent that keeps both positions' outcome class:
    assert (both["count_ply13_20"], both["count_ply21_42"], both["count_middle"]) == (1, 1, 1)
    mixed = search_agent_metrics(prefers(1), _labelled(ROWS[1:]), MCTSConfig(sims=16))
    assert mixed["count_ply00_06"] == 1 and mixed["weak_acc_ply00_06"] == 1.0  # "4444": 2 wins
    assert mixed["strict_acc_ply13_20"] == 1.0 and "count_ply07_12" not in mixed


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_network_on_cuda_searches_the_sets_positions_on_the_cpu():
    # A scorecard's search tree is on the CPU and its network may be on the GPU (the first
    # H200's run failed here: a mask on the CPU, logits on CUDA).
    from connect_zero_pipeline.core.config.search import MCTSConfig
    from connect_zero_pipeline.core.evaluation import search_agent_metrics

    def prefers(device):
        def fn(boards):
            logits = torch.full((boards.shape[0], 7), -4.0, device=device)
            logits[:, 1] = 4.0
            return logits, torch.zeros(boards.shape[0], device=device)

        return fn

    table = _labelled(ROWS[2:])
    for search in ("puct", "gumbel"):
        cfg = MCTSConfig(sims=16, search=search)
        on_cuda = search_agent_metrics(prefers(torch.device("cuda")), table, cfg)
        assert on_cuda == search_agent_metrics(prefers(torch.device("cpu")), table, cfg)


def test_missing_columns_are_named():
    with pytest.raises(ValueError, match="lacks column"):
        solver_set_metrics(
            lambda b: (torch.zeros(len(b), 7), torch.zeros(len(b))), pd.DataFrame({"x": [1]})
        )
