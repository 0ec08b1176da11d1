"""Batched MCTS: a hand-computed bandit, tactics, batch independence, a slow
reference and a brute-force negamax oracle on near-end positions."""

from __future__ import annotations

import functools

import pytest
import torch
from torch._dynamo.utils import counters
from torch.overrides import TorchFunctionMode

from connect_zero_pipeline.bench.selfplay import count_ops
from connect_zero_pipeline.core.bitboard import (
    BOARD_MASK,
    State,
    alignment,
    bottom_mask_col,
    has_won,
    initial_state,
    legal_mask,
    moves_to_bitboards,
    random_states,
    state_from_moves,
    to_boards,
    top_mask_col,
)
from connect_zero_pipeline.core.board import WIDTH
from connect_zero_pipeline.core.config.search import MCTSConfig
from connect_zero_pipeline.core.inference import torch_evaluate_fn
from connect_zero_pipeline.core.models import build_model
from connect_zero_pipeline.core.search import SearchInputs
from connect_zero_pipeline.core.search.base import ROOT_INDEX, win_value
from connect_zero_pipeline.core.search.compiled import CompiledSearch
from connect_zero_pipeline.core.search.loop import MCTSPlayer, search
from connect_zero_pipeline.core.search.noise import sample_dirichlet
from connect_zero_pipeline.core.search.policies import (
    Policy,
    most_visited,
    puct_rule,
    visit_weights,
)
from connect_zero_pipeline.core.search.reference import reference_mcts


def uniform_fn(boards: torch.Tensor):
    """Uniform prior, value 0: pure tree search."""
    return torch.zeros(boards.shape[0], 7), torch.zeros(boards.shape[0])


_W = torch.tensor([[3, -1, 4, 1, -5, 9, 2]]).repeat(6, 1) * torch.arange(1, 7).view(6, 1)  # (6, 7)


def pure_fn(boards: torch.Tensor):
    """A deterministic, row-wise evaluator computed in integers: batch-invariant exactly."""
    s = boards.long() * _W  # (B, 6, 7)
    logits = s.sum(1).float() / 8.0  # (B, 7)
    value = torch.tanh(s.sum((1, 2)).float() / 40.0)  # (B,)
    return logits, value


# ---------------------------------------------------------------------------
# Hand-computed bandit
# ---------------------------------------------------------------------------

PRIOR = torch.tensor([0.1, 0.4, 0.1, 0.1, 0.1, 0.1, 0.1])


def bandit_fn(boards: torch.Tensor):
    """Prior PRIOR everywhere. Value (side to move's view): empty board 0; one stone in
    column 2 +0.6, one stone elsewhere -0.2; two stones 0.1."""
    stones = (boards != 0).sum((1, 2))  # (B,)
    in_col2 = (boards[:, :, 1] != 0).sum(1) == 1
    value = torch.where(stones == 2, 0.1, torch.where(in_col2, 0.6, -0.2))
    value = torch.where(stones == 0, 0.0, value)
    return PRIOR.log().expand(boards.shape[0], 7), value


def test_bandit_by_hand():
    # c_puct = 1, root = empty board, root N = 1 after its own evaluation (value 0).
    # sim 1: scores = P * sqrt(1) / 1 -> column 2 (0.4). Leaf value +0.6 for the
    #        opponent = -0.6 for the root player.
    # sim 2: col 2: -0.6 + 0.4 * sqrt(2) / 2 = -0.317; others 0.1 * sqrt(2) = 0.141
    #        -> column 1 (ties go to the lowest). Leaf -0.2 for the opponent = +0.2.
    # sim 3: col 1: 0.2 + 0.1 * sqrt(3) / 2 = 0.287 beats 0.173 and -0.254 -> descend
    #        into column 1's node (N = 1): scores = P -> its column 2. Two stones: 0.1
    #        for the root player's side to move again = +0.1 for the root player.
    # visits [2, 1, 0, ...]; root value = (0 - 0.6 + 0.2 + 0.1) / 4 = -0.075.
    cfg = MCTSConfig(sims=3, c_puct=1.0)
    result = search(initial_state(1), bandit_fn, cfg)
    assert result.visit_counts.tolist() == [[2, 1, 0, 0, 0, 0, 0]]
    assert result.root_value.item() == pytest.approx(-0.075, abs=1e-6)
    tree = result.tree
    assert tree.action[0, 1:4].tolist() == [1, 0, 1]  # node i was created by simulation i
    assert tree.local(tree.parent[0, 1:4]).tolist() == [ROOT_INDEX, ROOT_INDEX, 2]
    assert tree.visits[0, :4].tolist() == [4, 1, 2, 1]
    # value sums from the view of the player who moved into each node
    torch.testing.assert_close(tree.value_sum[0, 1:4], torch.tensor([-0.6, 0.3, -0.1]))
    counts, value = reference_mcts(0, 0, bandit_fn, cfg)
    assert counts == [2, 1, 0, 0, 0, 0, 0] and value == pytest.approx(-0.075, abs=1e-6)


# ---------------------------------------------------------------------------
# Tactics
# ---------------------------------------------------------------------------


def test_mate_in_one_and_forced_block():
    # "232323": X (to move) has three in column 2 and wins there (0-based 1).
    #   . . . . . . .
    #   . . . . . . .
    #   . . . . . . .
    #   . X O . . . .
    #   . X O . . . .
    #   . X O . . . .
    # "41414": O to move must block the vertical three in column 4 (0-based 3).
    # "16263": O to move must block the horizontal three at column 4 (0-based 3).
    #   . . . . . . .
    #   . . . . . . .
    #   . . . . . . .
    #   . . . . . . .
    #   . . . . . X .
    #   O O O . . X .      (O = the side that made the last move, X to move)
    state = state_from_moves(["232323", "41414", "16263"])
    result = search(state, uniform_fn, MCTSConfig(sims=64))
    assert result.visit_counts.argmax(1).tolist() == [1, 3, 3]
    assert result.root_value[0].item() > 0.8


def test_visit_counts_sum_to_sims_and_finished_games_are_no_ops():
    state = state_from_moves(["", "4453", "1212121", "4444"])  # game 2 is won by X
    result = search(state, pure_fn, MCTSConfig(sims=25))
    assert result.visit_counts.sum(1).tolist() == [25, 25, 0, 25]
    assert result.root_value[2].item() == 0.0
    assert result.visit_counts.dtype == torch.int32


def test_full_columns_are_never_visited():
    state = state_from_moves(["444444", "444444111111", "444444111111777777"])
    result = search(state, uniform_fn, MCTSConfig(sims=300))
    counts = result.visit_counts
    assert counts[:, 3].sum() == 0 and counts[1:, 0].sum() == 0 and counts[2, 6] == 0
    assert counts.sum(1).tolist() == [300] * 3
    # No node anywhere in the tree was reached through a full column:
    tree = result.tree
    real = tree.visits[:, 1:] > 0  # (B, N - 1) created nodes
    parent_mask = tree.mask.view(-1)[tree.parent[:, 1:]]  # (B, N - 1)
    top = torch.tensor([top_mask_col(c) for c in range(WIDTH)])[tree.action[:, 1:].clamp(0)]
    assert bool(((parent_mask & top) == 0)[real].all())


def test_mixed_plies_batch_independence():
    positions = random_states(12, 30, seed=3)
    finished = state_from_moves(["1212121"])
    batch = State(*(torch.cat([a, b]) for a, b in zip(positions, finished, strict=True)))
    cfg = MCTSConfig(sims=40)
    together = search(batch, pure_fn, cfg)
    for i in range(12):
        alone = search(positions.take(torch.tensor([i])), pure_fn, cfg)
        assert torch.equal(alone.visit_counts[0], together.visit_counts[i])
        assert alone.root_value[0].item() == together.root_value[i].item()


def test_matches_the_slow_reference():
    torch.manual_seed(0)
    model = build_model({"arch": "mlp", "hidden": [64, 64]})  # random weights: varied outputs
    evaluate_fn = torch_evaluate_fn(model)
    state = random_states(16, 32, seed=5)
    cfg = MCTSConfig(sims=40, c_puct=1.25)
    result = search(state, evaluate_fn, cfg)
    for i in range(16):
        counts, value = reference_mcts(int(state.position[i]), int(state.mask[i]), evaluate_fn, cfg)
        assert counts == result.visit_counts[i].tolist()
        assert value == pytest.approx(result.root_value[i].item(), abs=1e-4)


# ---------------------------------------------------------------------------
# Brute-force negamax oracle on near-end positions
# ---------------------------------------------------------------------------


@functools.cache
def negamax(position: int, mask: int) -> int:
    """Game value (+1 win, 0 draw, -1 loss) for the side to move. Unbatched, brute force."""
    if alignment(position ^ mask):
        return -1
    if mask == BOARD_MASK:
        return 0
    best = -1
    for c in range(WIDTH):
        if mask & top_mask_col(c):
            continue
        new_mask = mask | (mask + bottom_mask_col(c))
        best = max(best, -negamax((position | (new_mask ^ mask)) ^ new_mask, new_mask))
        if best == 1:
            break
    return best


def move_values(position: int, mask: int) -> dict[int, int]:
    out = {}
    for c in range(WIDTH):
        if not mask & top_mask_col(c):
            new_mask = mask | (mask + bottom_mask_col(c))
            out[c] = -negamax((position | (new_mask ^ mask)) ^ new_mask, new_mask)
    return out


def near_end_positions(count: int, empty: int, seed: int) -> list[str]:
    """Random unfinished games with ``empty`` empty cells where the move choice matters."""
    gen = torch.Generator().manual_seed(seed)
    found: list[str] = []
    while len(found) < count:
        moves = ""
        pos, mask = 0, 0
        while len(moves) < 42 - empty:
            legal = [c for c in range(WIDTH) if not mask & top_mask_col(c)]
            c = legal[int(torch.randint(len(legal), (1,), generator=gen))]
            nxt = moves + str(c + 1)
            pos, mask = moves_to_bitboards(nxt)
            if alignment(pos ^ mask):
                break
            moves = nxt
        if (
            len(moves) == 42 - empty
            and len(set(move_values(*moves_to_bitboards(moves)).values())) > 1
        ):
            found.append(moves)
    return found


def test_uniform_prior_search_is_solver_optimal_near_the_end():
    games = near_end_positions(12, empty=8, seed=11)
    state = state_from_moves(games)
    result = search(state, uniform_fn, MCTSConfig(sims=1500))
    chosen = result.visit_counts.argmax(1).tolist()
    for moves, col in zip(games, chosen, strict=True):
        values = move_values(*moves_to_bitboards(moves))
        assert values[col] == max(values.values()), (moves, values, col)


@functools.cache
def decayed_negamax(position: int, mask: int, decay: float) -> float:
    """Exact value for the side to move when a win with n stones is worth win_value(n)."""
    if alignment(position ^ mask):
        return -float(win_value(torch.tensor(bin(mask).count("1")), decay))
    if mask == BOARD_MASK:
        return 0.0
    return max(
        -decayed_negamax((position | (new ^ mask)) ^ new, new, decay)
        for c in range(WIDTH)
        if not mask & top_mask_col(c)
        for new in [mask | (mask + bottom_mask_col(c))]
    )


def test_win_value_rewards_quicker_wins():
    ply = torch.arange(0, 43)
    v = win_value(ply, 0.5)
    assert v[7].item() == 1.0 and v[42].item() == pytest.approx(0.5)
    assert bool((v[7:].diff() < 0).all())  # strictly decreasing from the quickest win
    assert bool((win_value(ply, 0.0) == 1).all())  # no decay: every win is +1


@pytest.mark.parametrize("decay", [0.0, 0.5])
def test_terminal_values_follow_win_value(decay):
    moves = "53174531455621663436"  # 20 stones; the side to move wins at once in column 3
    state = state_from_moves([moves])
    result = search(state, uniform_fn, MCTSConfig(sims=64, win_decay=decay))
    tree = result.tree
    col = int(result.visit_counts.argmax(1))
    assert col == 2
    node = tree.local(tree.children[0, ROOT_INDEX, col]).item()
    assert not tree.expandable[0, node]  # the winning move ends the game
    stones = len(moves) + 1
    assert tree.raw_value[0, node].item() == pytest.approx(-(1 - decay * (stones - 7) / 35))


def test_decayed_search_finds_the_quickest_win_and_slowest_loss_near_the_end():
    # With win_decay > 0 the exact values rank moves like the solver's scores: a
    # uniform-prior search at 1,500 simulations picks the best-scoring move.
    games = near_end_positions(12, empty=8, seed=11)
    state = state_from_moves(games)
    result = search(state, uniform_fn, MCTSConfig(sims=1500, win_decay=0.5))
    chosen = result.visit_counts.argmax(1).tolist()
    for moves, col in zip(games, chosen, strict=True):
        pos, mask = moves_to_bitboards(moves)
        values = {}
        for c in range(WIDTH):
            if not mask & top_mask_col(c):
                new = mask | (mask + bottom_mask_col(c))
                values[c] = -decayed_negamax((pos | (new ^ mask)) ^ new, new, 0.5)
        assert values[col] == max(values.values()), (moves, values, col)


# ---------------------------------------------------------------------------
# Noise, config, player
# ---------------------------------------------------------------------------


def test_dirichlet_noise_is_seeded_and_legal():
    legal = torch.tensor([[True] * 7, [False, True, True, False, True, False, False]]).repeat(
        500, 1
    )
    a = sample_dirichlet(legal, 0.5, torch.Generator().manual_seed(0))
    b = sample_dirichlet(legal, 0.5, torch.Generator().manual_seed(0))
    assert torch.equal(a, b)
    torch.testing.assert_close(a.sum(1), torch.ones(1000))
    assert bool((a[~legal] == 0).all()) and bool((a[legal] >= 0).all())
    # mean 1/k per legal column; variance of Dir(alpha) component: (1/k)(1-1/k)/(k*alpha+1)
    torch.testing.assert_close(a[1::2, 1].mean(), torch.tensor(1 / 3), atol=0.04, rtol=0)
    var = (1 / 3) * (2 / 3) / (3 * 0.5 + 1)
    assert a[1::2, 1].var().item() == pytest.approx(var, rel=0.2)


def test_noise_changes_the_search_deterministically():
    state = initial_state(4)
    cfg = MCTSConfig(sims=30, dirichlet_eps=0.5, dirichlet_alpha=0.3)
    runs = [search(state, pure_fn, cfg, torch.Generator().manual_seed(s)) for s in (1, 1, 2)]
    assert torch.equal(runs[0].visit_counts, runs[1].visit_counts)
    assert not torch.equal(runs[0].visit_counts, runs[2].visit_counts)
    assert runs[0].visit_counts.sum().item() == 120


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"sims": 0}, "sims"),
        ({"sims": 2.5}, "sims"),
        ({"c_puct": 0}, "c_puct"),
        ({"dirichlet_alpha": -1}, "dirichlet_alpha"),
        ({"dirichlet_eps": 1.5}, "dirichlet_eps"),
        ({"win_decay": 1.0}, "win_decay"),
        ({"win_decay": -0.1}, "win_decay"),
        ({"win_decay": True}, "win_decay"),
    ],
)
def test_config_validation(kwargs, field):
    with pytest.raises(ValueError, match=field):
        MCTSConfig(**kwargs)


def test_mcts_player_wins_and_accepts_a_model():
    state = state_from_moves(["232323", "16263"])
    player = MCTSPlayer(uniform_fn, MCTSConfig(sims=64))
    assert player.act(state).tolist() == [1, 3]
    model_player = MCTSPlayer(build_model("tiny"), MCTSConfig(sims=4), temperature=1.0)
    actions = model_player.act(state, torch.Generator().manual_seed(0))
    assert actions.shape == (2,) and bool(((actions >= 0) & (actions < 7)).all())


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu_and_its_device_path_never_synchronises():
    state = random_states(8, 20, seed=2)
    cuda_state = State(*(x.cuda() for x in state))

    def cuda_fn(boards):
        logits, value = pure_fn(boards.cpu())
        return logits.cuda(), value.cuda()

    cpu = search(state, pure_fn, MCTSConfig(sims=30))
    gpu = search(cuda_state, cuda_fn, MCTSConfig(sims=30))
    assert torch.equal(cpu.visit_counts, gpu.visit_counts.cpu())
    weights = _W.cuda()

    def on_gpu(boards):  # pure_fn on the GPU: no copy to the host
        s = boards.long() * weights
        return s.sum(1).float() / 8.0, torch.tanh(s.sum((1, 2)).float() / 40.0)

    for kind in ("puct", "gumbel"):
        cfg = MCTSConfig(sims=16, search=kind)
        search(cuda_state, on_gpu, cfg, host_sync=False)  # warm-up: cached tables, kernels
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")  # any synchronising call raises
        try:
            result = search(cuda_state, on_gpu, cfg, host_sync=False)
        finally:
            torch.cuda.set_sync_debug_mode("default")
        assert torch.equal(result.visit_counts.cpu(), search(state, pure_fn, cfg).visit_counts)


def test_torch_evaluate_fn_runs_in_eval_mode():
    model = build_model("tiny").train()
    evaluate_fn = torch_evaluate_fn(model)
    boards = state_from_moves(["4", "44"])
    logits, value = evaluate_fn(to_boards(boards))
    assert not model.training and logits.shape == (2, 7) and value.shape == (2,)
    again, _ = evaluate_fn(to_boards(boards))  # BN running stats untouched: same output
    assert torch.equal(logits, again)


def test_terminal_leaves_get_exact_values_and_no_network_call():
    seen = []

    def counting_fn(boards):
        seen.append(boards.shape[0])
        return uniform_fn(boards)

    result = search(state_from_moves(["232323"]), counting_fn, MCTSConfig(sims=64))
    tree = result.tree
    win = tree.local(tree.children[0, ROOT_INDEX, 1]).item()  # the node after the winning move
    assert tree.raw_value[0, win].item() == -1.0  # exact: the side to move there has lost
    assert not tree.expandable[0, win]
    assert tree.visits[0, win].item() == result.visit_counts[0, 1].item() > 50
    created = tree.visits[0, 1:65] > 0  # (64,) nodes created by the 64 simulations
    terminal = created & ~tree.expandable[0, 1:65]
    assert int(terminal.sum()) >= 1
    # The network saw the root plus every non-terminal new node, nothing else:
    assert sum(seen) == 1 + int(created.sum()) - int(terminal.sum())
    assert int(created.sum()) < 15  # most simulations re-visit the terminal node


# ---------------------------------------------------------------------------
# The search without host synchronisation (the default off the CPU)
# ---------------------------------------------------------------------------


def host_syncs(fn) -> int:
    """Host reads of ``fn()``: the CPU's own (``item``, ``nonzero``: torch.profiler), plus
    each Python number assigned into a tensor by indexing, which on CUDA only becomes a CPU
    tensor that the copy reads on the host (torch's ``__setitem__`` makes the number's
    tensor on the CPU for a CUDA tensor)."""
    with _NumberWrites() as writes:
        syncs = count_ops(fn)[0]
    return syncs + writes.count


class _NumberWrites(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.Tensor.__setitem__ and not isinstance(args[2], torch.Tensor):
            self.count += 1
        return func(*args, **(kwargs or {}))


def _mixed_batch() -> State:
    positions = random_states(24, 34, seed=8)
    finished = state_from_moves(["1212121"])
    return State(*(torch.cat([a, b]) for a, b in zip(positions, finished, strict=True)))


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_without_host_sync_the_tree_is_the_same(kind):
    state = _mixed_batch()
    cfg = MCTSConfig(sims=40, search=kind, dirichlet_eps=0.25 if kind == "puct" else 0.0)
    gumbel = -torch.log(-torch.log(torch.rand(25, 7, generator=torch.Generator().manual_seed(1))))
    runs = [
        search(state, pure_fn, cfg, torch.Generator().manual_seed(2),
               inputs=SearchInputs(gumbel=gumbel), host_sync=host_sync)
        for host_sync in (True, False)
    ]  # fmt: skip
    synced, free = runs
    assert torch.equal(synced.visit_counts, free.visit_counts)
    assert torch.equal(synced.root_value, free.root_value)
    if kind == "gumbel":
        assert torch.equal(synced.action_weights, free.action_weights) and torch.equal(
            synced.action, free.action
        )
    n = synced.tree.num_nodes  # every real node and UNVISITED, ILLEGAL (TRASH takes extras)
    for field in ("visits", "parent", "action", "children", "prior", "position", "expandable"):
        a, b = getattr(synced.tree, field)[:, :n], getattr(free.tree, field)[:, :n]
        assert torch.equal(a, b), field
    assert torch.equal(synced.tree.value_sum[:, :n], free.tree.value_sum[:, :n])


@pytest.mark.parametrize("kind", ["puct", "gumbel"])
def test_without_host_sync_the_search_never_reads_the_device(kind):
    state = _mixed_batch()
    for sims in (8, 16):  # 16: sequential halving goes through several rounds
        cfg = MCTSConfig(sims=sims, search=kind)
        assert host_syncs(lambda cfg=cfg: search(state, pure_fn, cfg, host_sync=False)) == 0
    # The counter sees them: the CPU's default reads at every level and compacts leaves.
    assert host_syncs(lambda: search(state, pure_fn, MCTSConfig(sims=8, search=kind))) > 8


def test_puct_plays_the_most_visited_column_and_learns_the_visit_distribution():
    from connect_zero_pipeline.core.search.policies import PUCT

    legal = torch.ones(2, 7, dtype=torch.bool)
    visits = torch.tensor([[0, 3, 9, 9, 1, 0, 0], [5, 0, 0, 0, 0, 0, 6]])
    weights, action = PUCT().output(None, None, legal, visits.float(), SearchInputs(), None)
    assert action.tolist() == [2, 6]  # PUCT: the most visited; ties go to the lowest column
    assert torch.allclose(weights, visits / visits.sum(1, keepdim=True))


def test_the_root_q_is_each_visited_child_s_mean_value():
    """``Tree.root_q``, which the play command shows, against the children's own stats: the
    mean value where a column was visited, NaN for a full column, an unvisited one and a
    finished root."""
    state = _mixed_batch()
    result = search(state, pure_fn, MCTSConfig(sims=5))
    tree, q = result.tree, result.tree.root_q()
    checked = 0
    for b in range(state.batch_size):
        for c in range(WIDTH):
            node = int(tree.local(tree.children[b, ROOT_INDEX, c]))
            n = float(tree.visits[b, node]) if node < tree.num_nodes else 0.0
            assert (n > 0) == (int(result.visit_counts[b, c]) > 0)
            if n > 0:
                assert float(q[b, c]) == pytest.approx(float(tree.value_sum[b, node]) / n)
                checked += 1
            else:
                assert torch.isnan(q[b, c])
    assert checked > 0 and torch.isnan(q[-1]).all()  # the finished game: no column


class RoundRobinRoot(Policy):
    """A third policy, written here alone: at the root, the legal columns in turn (simulation
    ``s`` takes the ``(s - 1) mod n``-th of ``n``: a uniform spread), PUCT below; it plays
    the most visited column and learns from the visit distribution."""

    def root(self, t, legal, live, inputs, cfg):
        return legal

    def rule(self, t, legal, cfg):
        below = puct_rule(t, cfg.c_puct)

        def select(level):
            k = (level.sim - 1) % legal.sum(1).clamp(min=1)  # (B,)
            turn = (legal.cumsum(1) <= k.unsqueeze(1)).sum(1).clamp(max=6)  # the k-th legal
            return torch.where(t.is_root(level.node), turn, below(level))

        return select

    def output(self, t, legal, legal_again, counts, inputs, cfg):
        return visit_weights(counts), most_visited(counts, legal_again)


def test_a_third_policy_plugs_into_the_one_loop_eager_and_compiled():
    state = _mixed_batch()
    cfg = MCTSConfig(sims=20)
    policy = RoundRobinRoot()
    result = search(state, pure_fn, cfg, policy=policy)
    legal = legal_mask(state) & ~has_won(state.position ^ state.mask).unsqueeze(1)
    live = legal.any(1)
    for b in range(state.batch_size):
        visits = result.visit_counts[b][legal[b]]
        if live[b]:  # the root's visits spread over its legal columns, within one
            assert int(visits.sum()) == 20 and int(visits.max() - visits.min()) <= 1
        else:
            assert int(result.visit_counts[b].sum()) == 0
    assert torch.equal(result.action, most_visited(result.visit_counts.float(), legal))
    assert torch.allclose(result.action_weights[live].sum(1), torch.ones(int(live.sum())))
    real = result.tree.visits[:, 1 : result.tree.num_nodes]  # the nodes below the root
    assert int(real.gt(0).sum(1).max()) > 7  # more than the root's children: PUCT went deeper
    # The same policy compiled: its own three graphs, the eager tree, no edit anywhere.
    graphs = counters["stats"]["unique_graphs"]
    compiled = CompiledSearch(cfg, backend="aot_eager", policy=policy)(state, pure_fn)
    assert counters["stats"]["unique_graphs"] - graphs == 3
    eager = search(state, pure_fn, cfg, policy=policy, host_sync=False)
    assert torch.equal(compiled.visit_counts, eager.visit_counts)
    assert torch.equal(compiled.visit_counts, result.visit_counts)
    assert torch.equal(compiled.action, eager.action)


def test_the_names_the_configuration_takes_are_the_policies_of_the_registry():
    from connect_zero_pipeline.core.config.search import SEARCHES
    from connect_zero_pipeline.core.search.policies import POLICIES

    assert sorted(POLICIES) == sorted(SEARCHES)
    assert all(isinstance(policy, Policy) for policy in POLICIES.values())
