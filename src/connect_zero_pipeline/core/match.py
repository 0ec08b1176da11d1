"""Batched matches between two players.

All games advance together: at every ply each unfinished game asks the player
whose turn it is, and the two players are called once each on their share of
the batch. Player ``a`` moves first in even-numbered games, ``b`` in odd ones.

Shapes: G = games, N = recorded moves (sum of game lengths).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .bitboard import State, initial_state, play, to_boards
from .board import NUM_CELLS
from .players import Player


@dataclass(frozen=True)
class MatchResult:
    """Outcome of :func:`play_match`. Per-game tensors are ``[G]``; records are ``[N]``."""

    result: torch.Tensor  # [G] int8: +1 a won, 0 draw, -1 a lost
    length: torch.Tensor  # [G] int16: plies played
    a_first: torch.Tensor  # [G] bool: a made the first move
    # Recorded with record=True, in move order (game-major within each ply):
    states: torch.Tensor | None = None  # [N, 6, 7] int8 boards from the mover's view
    moves: torch.Tensor | None = None  # [N] int64 columns played
    returns: torch.Tensor | None = None  # [N] float32: +1/0/-1 final result for the mover
    game: torch.Tensor | None = None  # [N] int64 game index
    ply: torch.Tensor | None = None  # [N] int64 ply of the move (0 = first move)
    mover_is_a: torch.Tensor | None = None  # [N] bool

    @property
    def num_games(self) -> int:
        return int(self.result.shape[0])

    def rates(self) -> dict[str, float]:
        """Win, draw and loss rates of player ``a`` (and of ``a`` as first and second player)."""
        r = self.result.double()
        out = {
            "win_rate": float((r > 0).double().mean()),
            "draw_rate": float((r == 0).double().mean()),
            "loss_rate": float((r < 0).double().mean()),
            "mean_length": float(self.length.double().mean()),
        }
        for name, sel in (("first", self.a_first), ("second", ~self.a_first)):
            if bool(sel.any()):
                out[f"win_rate_{name}"] = float((r[sel] > 0).double().mean())
        return out


def play_match(
    a: Player,
    b: Player,
    num_games: int,
    seed: int = 0,
    record: bool = False,
    device: torch.device | str = "cpu",
    start: State | None = None,
) -> MatchResult:
    """Play ``num_games`` games between ``a`` and ``b``, alternating who starts.

    Args:
        a, b: players (see :class:`~.players.Player`).
        num_games: number of games, >= 1. Game ``g`` starts with ``a`` if ``g`` is even.
        seed: seeds the one ``torch.Generator`` both players draw from.
        record: also return every state, move and the mover's final return.
        device: where the games are played.
        start: ``num_games`` unfinished positions to start from (an opening per
            game; default the empty board). "Starts" then means "moves first
            from the opening"; ``length`` and ``ply`` count from it.

    Returns:
        A :class:`MatchResult`.
    """
    if num_games < 1:
        raise ValueError(f"num_games must be >= 1, got {num_games}")
    device = torch.device(device)
    gen = torch.Generator(device=device).manual_seed(int(seed))
    if start is None:
        state = initial_state(num_games, device)
    elif start.batch_size != num_games:
        raise ValueError(f"start holds {start.batch_size} positions for {num_games} games")
    else:
        state = State(*(t.to(device) for t in start))
    games = torch.arange(num_games, device=device)
    a_first = games % 2 == 0
    a_to_move = a_first.clone()
    done = torch.zeros(num_games, dtype=torch.bool, device=device)
    result = torch.zeros(num_games, dtype=torch.int8, device=device)
    length = torch.zeros(num_games, dtype=torch.int16, device=device)
    rec: dict[str, list[torch.Tensor]] = {k: [] for k in ("states", "moves", "game", "ply", "a")}

    for ply in range(NUM_CELLS):
        active = (~done).nonzero().squeeze(1)  # (G_active,)
        if active.numel() == 0:
            break
        sub = state.take(active)
        actions = torch.empty(active.numel(), dtype=torch.int64, device=device)
        by_a = a_to_move[active]
        for player, sel in ((a, by_a), (b, ~by_a)):
            if bool(sel.any()):
                actions[sel] = player.act(sub.take(sel), gen)
        if record:
            rec["states"].append(to_boards(sub))
            rec["moves"].append(actions)
            rec["game"].append(active)
            rec["ply"].append(torch.full_like(active, ply))
            rec["a"].append(by_a)
        step = play(sub, actions)
        state = state.put(active, step.state)
        finished = active[step.done]
        done[finished] = True
        length[finished] = ply + 1
        # The mover won (+1 for a if a moved) or the board filled up (draw, 0).
        won = step.reward[step.done] > 0
        sign = torch.where(by_a[step.done], 1, -1).to(torch.int8)
        result[finished] = torch.where(won, sign, torch.zeros_like(sign))
        a_to_move[active] = ~a_to_move[active]

    out = MatchResult(result=result, length=length, a_first=a_first)
    if not record:
        return out
    game = torch.cat(rec["game"])
    mover_is_a = torch.cat(rec["a"])
    res_a = result[game].float()
    returns = torch.where(mover_is_a, res_a, -res_a)
    return MatchResult(
        result=result,
        length=length,
        a_first=a_first,
        states=torch.cat(rec["states"]),
        moves=torch.cat(rec["moves"]),
        returns=returns,
        game=game,
        ply=torch.cat(rec["ply"]),
        mover_is_a=mover_is_a,
    )
