"""One generation of AlphaZero self-play: batched MCTS games -> a flat table (``docs/architecture.md``, data contracts).

``num_games`` game *slots* play in parallel for ``moves_per_gen`` env steps
(plies of the whole batch); a slot whose game ends restarts from the empty
board at once. At every step each slot runs one :func:`~.search.loop.search`: by default
Gumbel search (Gumbel-top-k root sampling, Sequential Halving), whose move is the
halving's survivor; with ``search: puct``, PUCT with root Dirichlet noise, whose move
is sampled from the visit distribution (temperature 1) for the first ``temp_cutoff``
plies of its game and is the most visited column afterwards.
With ``finish_games`` (the default) the games still in progress after
``moves_per_gen`` steps then play on to their end, only they searching (the
batch shrinks as they finish); without it their plies are dropped, because
they have no outcome.

Determinism and sharding: every random draw of slot ``s`` (its root noise and
its move samples) comes from a counter-based stream, ``splitmix64`` of a key
derived from ``(seed, generation, s)`` and the step counter, not from a shared
generator. A slot's games therefore depend only on the seed, its global
index and the network, so splitting the slots into shards
(:func:`shard_slots`) and concatenating the shard tables in shard order
(:func:`merge_shards`) reproduces the single-shard table exactly, as long as
``evaluate_fn`` gives each board the same output whatever batch it is in
(true for a pure function, which the tests use). A real network's batched
kernels can differ in the last float bits with the batch size, and a near-tie
in the visit counts could in principle flip a move, so the guarantee for real
networks is "same up to float rounding", not bit-identity (``tests/executors``
compare the shards of a real network).

Game ids are ``slot * games_per_slot + k`` for the ``k``-th game of the slot,
with ``games_per_slot = moves_per_gen // 7 + 1`` (a game lasts >= 7 plies), so
they are unique within a generation and independent of sharding (not dense).

Shapes: G game slots, T = moves_per_gen steps, A = 7 columns.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd
import torch

from .bitboard import BOARD_MASK, State, initial_state, legal_mask, play, reset_done
from .board import NUM_CELLS, WIDTH
from .config.search import MCTSConfig
from .config.selfplay import SelfPlayConfig, games_per_slot
from .device import compute_dtype, torch_threads
from .inference import EvaluateFn, make_evaluate_fn
from .progress import progress_bar
from .search import (
    POLICIES,
    SearchInputs,
    compile_backend,
    compiled_search,
    dirichlet_from_uniforms,
    dirichlet_uniform_shape,
    gumbel_from_uniforms,
    network,
    search,
    use_cache,
    win_value,
)

log = logging.getLogger(__name__)

# Output schema (``docs/architecture.md``, data contracts), in column order.
COLUMNS: dict[str, str] = {
    "generation": "int32",
    "game": "int32",
    "ply": "int8",
    "position": "uint64",
    "mask": "uint64",
    "action": "int8",
    **{f"pi_{c + 1}": "float32" for c in range(WIDTH)},
    "z": "float32",
    "root_value": "float32",
}
DEFAULT_NUM_THREADS = 1  # see play_games(num_threads=...)


# ---------------------------------------------------------------------------
# Per-slot counter-based random streams
# ---------------------------------------------------------------------------

_M64 = (1 << 64) - 1


def _i64(x: int) -> int:
    """A 64-bit pattern as a signed int64 (torch has no uint64 arithmetic)."""
    x &= _M64
    return x - (1 << 64) if x >= 1 << 63 else x


_GOLDEN, _MIX1, _MIX2 = _i64(0x9E3779B97F4A7C15), _i64(0xBF58476D1CE4E5B9), _i64(0x94D049BB133111EB)


def _splitmix64(x: torch.Tensor) -> torch.Tensor:
    """The splitmix64 mixer on int64 tensors (wrapping multiply, logical right shifts)."""
    z = x + _GOLDEN
    z = (z ^ ((z >> 30) & ((1 << 34) - 1))) * _MIX1
    z = (z ^ ((z >> 27) & ((1 << 37) - 1))) * _MIX2
    return z ^ ((z >> 31) & ((1 << 33) - 1))


def slot_keys(seed: int, generation: int, slots: torch.Tensor) -> torch.Tensor:
    """``[G] int64`` stream keys of the global slot indices ``slots [G] int64``."""
    head = _splitmix64(torch.tensor([_i64(seed), _i64(generation)], dtype=torch.int64))
    return _splitmix64(_splitmix64(slots ^ int(head[0])) ^ int(head[1]))


def slot_uniforms(keys: torch.Tensor, step: int, count: int) -> torch.Tensor:
    """``[G, count] float32`` uniforms in (0, 1): draw ``j`` of step ``step`` of each stream."""
    counter = torch.arange(count, dtype=torch.int64, device=keys.device) + step * (1 << 20)
    bits = _splitmix64(keys.unsqueeze(1) ^ counter)  # (G, count)
    return (((bits >> 40) & 0xFFFFFF).float() + 0.5) * (1.0 / (1 << 24))


# ---------------------------------------------------------------------------
# Value targets
# ---------------------------------------------------------------------------


def backward_z(done: torch.Tensor, reward: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Negamax value targets by a backward scan over recorded steps.

    Args:
        done: ``[T, G] bool``, the move at step ``t`` of slot ``g`` ended its game.
        reward: ``[T, G] float32``, the value of that move's win for its mover
            (:func:`~.search.base.win_value`; 0 for a draw or no end).

    Returns:
        ``z [T, G] float32``: the final outcome for the player who moved at
        each step (the win's value, 0 draw, its negation for a loss): the game's last mover gets its
        reward, and the sign flips once per ply going back, restarting at each
        game boundary. ``complete [T, G] bool``: the step belongs to a game that
        finished within the ``T`` steps (others have ``z = 0`` and are dropped).
    """
    if done.shape != reward.shape or done.dim() != 2:
        raise ValueError(
            f"done and reward must both be [T, G], got {done.shape} and {reward.shape}"
        )
    z = torch.zeros(done.shape, dtype=torch.float32, device=done.device)
    complete = torch.zeros(done.shape, dtype=torch.bool, device=done.device)
    carry = torch.zeros(done.shape[1], dtype=torch.float32, device=done.device)
    seen = torch.zeros(done.shape[1], dtype=torch.bool, device=done.device)
    for t in range(done.shape[0] - 1, -1, -1):  # loop over steps, batched over games
        carry = torch.where(done[t], reward[t].float(), -carry)
        seen = seen | done[t]
        z[t], complete[t] = carry * seen, seen
    return z, complete


# ---------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------


def shard_slots(num_games: int, shard_index: int = 0, num_shards: int = 1) -> range:
    """The contiguous range of global slot indices that shard ``shard_index`` plays."""
    if not (isinstance(num_shards, int) and num_shards >= 1):
        raise ValueError(f"num_shards must be an integer >= 1, got {num_shards!r}")
    if not (isinstance(shard_index, int) and 0 <= shard_index < num_shards):
        raise ValueError(f"shard_index must be in [0, {num_shards}), got {shard_index!r}")
    return range(num_games * shard_index // num_shards, num_games * (shard_index + 1) // num_shards)


@dataclass(frozen=True)
class Played:
    """One generation's (or shard's) self-play: its positions and what playing them cost."""

    table: pd.DataFrame
    """:data:`COLUMNS`, sorted by ``(game, ply)``."""
    compile_s: float = 0.0
    """Seconds spent compiling the search (the longest of a generation's processes)."""


def play_games(
    config: SelfPlayConfig | None = None,
    evaluate_fn: EvaluateFn | None = None,
    *,
    model: torch.nn.Module | None = None,
    device: torch.device | str = "cpu",
    generation: int = 0,
    shard_index: int = 0,
    num_shards: int = 1,
    progress: bool | Callable[[int, int], None] = False,
    num_threads: int | None = DEFAULT_NUM_THREADS,
    backend: str = "auto",
    compile: str = "auto",
    compile_cache: str | None = None,
) -> Played:
    """Play one generation (or one shard of it): its positions and what they cost.

    Args:
        config: :class:`SelfPlayConfig` (defaults: the CPU recipe).
        evaluate_fn: ``boards int8 [M, 6, 7] -> (logits [M, 7], value [M])``, or
            give ``model`` instead (moved to ``device`` and wrapped by
            :func:`~.inference.make_evaluate_fn` with ``backend``, in ``config.precision``
            on ``device``: :func:`network_dtype`).
        device: where games and search run.
        generation: written to the ``generation`` column and mixed into the seed.
        shard_index, num_shards: play only the slots of :func:`shard_slots`;
            see the module docstring for why shards merge into the same table.
        progress: ``True`` shows a tqdm bar (env steps/s); a callable is
            called as ``progress(steps_done, moves_per_gen)`` after each of the
            ``moves_per_gen`` steps (the finishing steps that follow are not counted).
        num_threads: torch intra-op threads for the duration of the call
            (restored afterwards); ``None`` keeps torch's setting. The default, 1,
            suits a shared CPU (each network call of several threads waits for a
            descheduled one); scale out with shards instead.
        backend: the network's evaluation for ``model``: ``auto``, ``torch`` or
            ``onnxruntime`` (:data:`~.inference.BACKENDS`).
        compile: run every search compiled (:mod:`.search.compiled`, :data:`~.search.compiled.COMPILE`):
            ``on``, or a tracing backend; ``auto`` and ``off`` never. The network is then
            torch's (``backend`` ``auto`` or ``torch``), and the games that finish after
            ``moves_per_gen`` steps keep their slots (masked, fixed shapes) instead of
            being compacted. The table is the same.
        compile_cache: inductor's on-disk cache folder (:func:`~.search.compiled.use_cache`;
            None: ``TORCHINDUCTOR_CACHE_DIR`` or torch's default).
    Returns:
        :class:`Played`: ``compile_s``, the seconds this call spent compiling the search (0
        when nothing was compiled: eager, or compiled earlier in the process), and
        ``table``, a DataFrame with :data:`COLUMNS` and their dtypes, sorted by
        ``(game, ply)``: ``action`` is the 0-based column played, ``pi_1..pi_7``
        the search's training target (its policy's action weights, normalised: the root
        visit counts under PUCT, the improved policy under Gumbel search), ``z`` the
        final outcome for the side to move, ``root_value`` the search's mean root value
        (side to move).
    """
    cfg = config or SelfPlayConfig()
    if (evaluate_fn is None) == (model is None):
        raise ValueError("play_games needs exactly one of evaluate_fn and model")
    device = torch.device(device)
    compiler = compile_backend(compile)
    slots = shard_slots(cfg.num_games, shard_index, num_shards)
    if len(slots) == 0:
        return Played(empty_games_table())
    program = None
    dtype = network_dtype(cfg, device)  # a given evaluate_fn is the caller's (a Ray actor's)
    if compiler is not None:
        if dtype != torch.float32:  # the compiled steps call a float32 network, given or not
            raise ValueError(f"compile {compile!r} runs the network in float32, but precision "
                             f"is {cfg.precision!r} ({dtype} here): set precision to float32")  # fmt: skip
        if backend not in ("auto", "torch"):
            raise ValueError(f"compile {compile!r} runs the network with torch, but backend is "
                             f"{backend!r}: set backend to auto or torch")  # fmt: skip
        if compiler == "inductor":  # the tracing backends write no cache
            use_cache(compile_cache)
        program = compiled_search(cfg.mcts, compiler)
        if model is not None:
            evaluate_fn = network(model, device)
    elif model is not None:
        evaluate_fn = make_evaluate_fn(model, device, backend, dtype=dtype)
    compiling = program.counters.compile_seconds if program is not None else 0.0
    with torch_threads(num_threads):
        table = _play(cfg, evaluate_fn, slots, generation, device, progress, program)
    return Played(table, (program.counters.compile_seconds - compiling) if program else 0.0)


def network_dtype(config: SelfPlayConfig, device: torch.device | str) -> torch.dtype:
    """The dtype the network of ``config``'s searches computes in on ``device``
    (``config.precision``, :func:`~.device.compute_dtype`)."""
    return compute_dtype(config.precision, torch.device(device))[0]


def self_play(config: SelfPlayConfig | None = None, evaluate_fn: EvaluateFn | None = None,
              **kwargs) -> pd.DataFrame:  # fmt: skip
    """:func:`play_games`'s table alone (the same arguments)."""
    return play_games(config, evaluate_fn, **kwargs).table


_NUM_NOISE = math.prod(dirichlet_uniform_shape(1))  # a slot's Dirichlet uniforms per step


def _draws_per_step(mcts_cfg: MCTSConfig) -> int:
    """Uniforms each slot draws per step: the Dirichlet noise, the move sample, the random
    opening, then (a policy that reads Gumbel noise) 7 Gumbel variates. A draw's index never
    moves, so PUCT runs keep their streams."""
    return _NUM_NOISE + 2 + (WIDTH if "gumbel" in POLICIES[mcts_cfg.search].inputs else 0)


def _choose(state, evaluate_fn, cfg: SelfPlayConfig, search_fn, u: torch.Tensor):
    """One search per game of ``state`` and the move each plays.

    ``search_fn(state, evaluate_fn, inputs=)`` searches with ``cfg.mcts`` and its policy
    (:func:`~.search.loop.search`, or a :class:`~.search.compiled.CompiledSearch`). ``u [B, D]`` are the
    games' uniforms of this step, laid out as :func:`_draws_per_step` says; the policy gets
    the inputs it reads (:attr:`~.search.policies.Policy.inputs`): root noise, Gumbel noise, and a
    uniform with the plies that sample their move (the first ``temp_cutoff`` of a game).
    Returns ``(action [B], target [B, 7], root_value [B])``: the policy's move and action
    weights (the training target).
    """
    mcts_cfg = cfg.mcts
    wanted = POLICIES[mcts_cfg.search].inputs
    inputs = SearchInputs(
        noise=dirichlet_from_uniforms(
            legal_mask(state), mcts_cfg.dirichlet_alpha,
            u[:, :_NUM_NOISE].view(dirichlet_uniform_shape(state.batch_size)),
        ) if "noise" in wanted and mcts_cfg.dirichlet_eps > 0 else None,
        gumbel=gumbel_from_uniforms(u[:, _NUM_NOISE + 2 :]) if "gumbel" in wanted else None,
        uniform=u[:, _NUM_NOISE] if "uniform" in wanted else None,
        sample=state.ply < cfg.temp_cutoff if "sample" in wanted else None,
    )  # fmt: skip
    result = search_fn(state, evaluate_fn, inputs=inputs)
    action = result.action
    if cfg.random_opening_plies:
        legal = legal_mask(state).float()  # (B, 7)
        pick = (u[:, _NUM_NOISE + 1 : _NUM_NOISE + 2] * legal.sum(1, keepdim=True)).floor()
        uniform = (legal.cumsum(1) <= pick).sum(1)  # the pick-th legal column
        action = torch.where(state.ply < cfg.random_opening_plies, uniform, action)
    return action, result.action_weights, result.root_value


def _play(cfg: SelfPlayConfig, evaluate_fn, slots: range, generation: int, device, progress,
          program=None):  # fmt: skip
    G, T = len(slots), cfg.moves_per_gen
    # With finish_games, the games in progress after step T play on (only they search)
    # for at most NUM_CELLS - 1 more steps: no ply is dropped for want of an outcome.
    steps = T + (NUM_CELLS - 1 if cfg.finish_games else 0)
    mcts_cfg = cfg.mcts
    search_fn = partial(search, config=mcts_cfg) if program is None else program
    b_slot = torch.arange(slots.start, slots.stop, dtype=torch.int64, device=device)  # (G,)
    keys = slot_keys(cfg.seed, generation, b_slot)
    state = initial_state(G, device)
    episode = torch.zeros(G, dtype=torch.int64, device=device)
    rec = {
        "position": torch.zeros(steps, G, dtype=torch.int64, device=device),
        "mask": torch.zeros(steps, G, dtype=torch.int64, device=device),
        "ply": torch.zeros(steps, G, dtype=torch.int64, device=device),
        "episode": torch.zeros(steps, G, dtype=torch.int64, device=device),
        "action": torch.zeros(steps, G, dtype=torch.int64, device=device),
        "target": torch.zeros(steps, G, WIDTH, dtype=torch.float32, device=device),
        "root_value": torch.zeros(steps, G, dtype=torch.float32, device=device),
        "done": torch.zeros(steps, G, dtype=torch.bool, device=device),
        "reward": torch.zeros(steps, G, dtype=torch.float32, device=device),
    }
    bar = None
    if progress is True:
        bar = progress_bar(
            total=G * T, unit="step", unit_scale=True, desc=f"self-play gen {generation}"
        )
    start = time.perf_counter()
    searched = 0
    every_slot = torch.arange(G, device=device)
    for t in range(steps):
        # Every slot plays the first T steps; then only the games in progress (a slot
        # reset after its game ended has 0 stones): compacted in an eager search, masked
        # in a compiled one (its shapes are fixed).
        idx, active, playing = every_slot, None, G
        if t >= T:
            active = state.ply > 0  # (G,)
            if program is None:
                idx, active = active.nonzero().squeeze(1), None
            playing = len(idx) if active is None else int(active.sum())  # one host read
            if playing == 0:
                break
        searched += playing
        rows, state = _step(state, idx, active, keys, episode, t, evaluate_fn, cfg, search_fn)
        for name, value in rows.items():
            rec[name][t, idx] = value
        episode[idx] += rows["done"].long()
        if t < T:
            if bar is not None:
                bar.update(G)
            elif callable(progress):
                progress(t + 1, T)
    if bar is not None:
        bar.close()
    elapsed = time.perf_counter() - start
    z, complete = backward_z(rec["done"], rec["reward"])
    table = _to_table(rec, z, complete, b_slot, generation, games_per_slot(T))
    log.info(
        "self-play gen %d slots %d-%d: %d searches in %.1f s (%.0f/s), %d positions kept",
        generation, slots.start, slots.stop - 1, searched, elapsed, searched / elapsed, len(table),
    )  # fmt: skip
    return table


def _step(state: State, idx, active, keys, episode, t: int, evaluate_fn, cfg: SelfPlayConfig,
          search_fn):  # fmt: skip
    """One self-play move of the slots ``idx [B]`` of ``state`` (``keys [G]`` their random
    streams, ``episode [G]`` their game counters): the uniforms of step ``t``, a search
    each, the move played. ``active [G] bool`` (None: all) marks the games in progress in a
    masked step (``idx`` every slot); the others are searched as finished boards (a no-op)
    and record nothing that is kept (``done`` is false). Returns the step's ``[B]`` record
    rows and the next state of every slot (finished games restarted)."""
    sub = before = state.take(idx)
    keys, episode = keys[idx], episode[idx]
    if active is not None:  # a board with every cell taken is finished: its search is a no-op
        sub = State(torch.where(active, sub.position, 0),
                    torch.where(active, sub.mask, BOARD_MASK), sub.ply)  # fmt: skip
    u = slot_uniforms(keys, t, _draws_per_step(cfg.mcts))
    action, target, root_value = _choose(sub, evaluate_fn, cfg, search_fn, u)
    step = play(sub, action, validate=False)
    done = step.done if active is None else step.done & active
    rows = {
        "position": sub.position,
        "mask": sub.mask,
        "ply": sub.ply,
        "episode": episode,
        "action": action,
        "target": target,
        "root_value": root_value,
        "done": done,
        "reward": step.reward * win_value(step.state.ply, cfg.mcts.win_decay),
    }
    after = reset_done(step.state, done)
    if active is not None:
        after = State(*(torch.where(active, a, b) for a, b in zip(after, before, strict=True)))
    return rows, state.put(idx, after)


def _to_table(rec, z, complete, b_slot, generation: int, stride: int) -> pd.DataFrame:
    """Flatten ``[T, G]`` records slot-major (so rows sort by game, then ply) and keep complete ones."""
    keep = complete.T.reshape(-1)  # (G * T,) slot-major

    def flat(x: torch.Tensor) -> np.ndarray:
        return x.transpose(0, 1).reshape(keep.shape[0], *x.shape[2:])[keep].cpu().numpy()

    game = b_slot.unsqueeze(0) * stride + rec["episode"]  # (T, G)
    target = flat(rec["target"])  # (R, 7)
    pi = target / target.sum(1, keepdims=True)
    cols = {
        "generation": np.full(int(keep.sum()), generation),
        "game": flat(game),
        "ply": flat(rec["ply"]),
        "position": flat(rec["position"]).view(np.uint64),
        "mask": flat(rec["mask"]).view(np.uint64),
        "action": flat(rec["action"]),
        **{f"pi_{c + 1}": pi[:, c] for c in range(WIDTH)},
        "z": flat(z),
        "root_value": flat(rec["root_value"]),
    }
    return pd.DataFrame({k: np.asarray(v).astype(COLUMNS[k]) for k, v in cols.items()})


def empty_games_table() -> pd.DataFrame:
    """A games table with no rows (the self-play schema, :data:`COLUMNS`)."""
    return pd.DataFrame({k: np.empty(0, dtype=v) for k, v in COLUMNS.items()})


def merge_shards(tables: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate shard tables into the generation's table, sorted by ``(game, ply)``."""
    if not tables:
        return empty_games_table()
    out = pd.concat(list(tables), ignore_index=True)
    return out.sort_values(["game", "ply"], kind="stable", ignore_index=True)
