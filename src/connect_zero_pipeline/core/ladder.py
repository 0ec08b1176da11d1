"""Ladder matches: seeded random openings, both colours, results as a table, and a cache.

Every pair of players plays the same ``num_openings`` openings (positions
after ``plies`` uniformly random legal moves, no finished one), each opening
twice with the colours swapped. All of a pair's games are played together
(:func:`~.match.play_match`). A game's row: ``player_a``, ``player_b`` (the
players' ids), ``opening`` (Pons move string), ``a_first`` (``a`` moves first
from the opening), ``result`` (+1 ``a`` won, 0 a draw, -1 ``a`` lost) and
``openings`` (the opening set's key, :func:`opening_key`).

:class:`MatchCache` keeps every game ever played under a project folder, so a
ladder that adds one player plays only its new pairs; a pair's games are
looked up in either order.

Shapes: O openings, G = 2 O games.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pandas as pd
import torch

from .bitboard import State, initial_state, play, random_legal_actions
from .files import atomic_path
from .match import play_match
from .players import Player

MATCH_COLUMNS = ["player_a", "player_b", "openings", "opening", "a_first", "result"]


def opening_key(num_openings: int, plies: int, seed: int) -> str:
    """The name of an opening set: ``20x4@0`` (20 openings of 4 random plies, seed 0)."""
    return f"{num_openings}x{plies}@{seed}"


def random_openings(num_openings: int, plies: int, seed: int) -> tuple[State, list[str]]:
    """``num_openings`` unfinished positions after ``plies`` random legal moves, and their
    Pons move strings. A game that ends inside the opening is replayed with new draws."""
    if num_openings < 1 or plies < 0:
        raise ValueError(f"need num_openings >= 1 and plies >= 0, got {num_openings}, {plies}")
    gen = torch.Generator().manual_seed(int(seed))
    states: list[State] = []
    strings: list[str] = []
    while len(strings) < num_openings:
        state = initial_state(num_openings)
        moves = torch.zeros(num_openings, plies, dtype=torch.int64)  # (O, plies)
        ended = torch.zeros(num_openings, dtype=torch.bool)
        for k in range(plies):
            actions = random_legal_actions(state, gen)  # finished games move anywhere legal
            moves[:, k] = actions
            step = play(state, actions, validate=False)
            ended |= step.done
            state = step.state
        keep = (~ended).nonzero().squeeze(1)[: num_openings - len(strings)]  # (K,)
        states.append(state.take(keep))
        strings += ["".join(str(c + 1) for c in row) for row in moves[keep].tolist()]
    return State(*(torch.cat(parts) for parts in zip(*states, strict=True))), strings


def play_pair(
    a: Player, b: Player, ids: tuple[str, str], openings: tuple[State, list[str]], key: str,
    seed: int, device: torch.device | str = "cpu",
) -> pd.DataFrame:  # fmt: skip
    """Both colours of every opening between ``a`` and ``b``: one row per game."""
    state, moves = openings
    doubled = State(*(t.repeat_interleave(2) for t in state))  # opening o -> games 2o, 2o + 1
    result = play_match(a, b, 2 * len(moves), seed=seed, device=device, start=doubled)
    return pd.DataFrame(
        {
            "player_a": ids[0],
            "player_b": ids[1],
            "openings": key,
            "opening": [m for m in moves for _ in range(2)],
            "a_first": result.a_first.cpu().numpy(),
            "result": result.result.cpu().numpy().astype("int8"),
        }
    )


class MatchCache:
    """Every ladder game played in a project: Parquet part files in ``folder``."""

    def __init__(self, folder: str | Path | None):
        self.folder = Path(folder) if folder else None
        self._table = self._read()

    def _read(self) -> pd.DataFrame:
        if self.folder is None or not self.folder.is_dir():
            return pd.DataFrame(columns=MATCH_COLUMNS)
        parts = [pd.read_parquet(p) for p in sorted(self.folder.glob("part-*.parquet"))]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=MATCH_COLUMNS)

    def games(self, a: str, b: str, key: str) -> pd.DataFrame | None:
        """The games of ``a`` against ``b`` on opening set ``key`` (from ``a``'s side), or None."""
        t = self._table
        same = t[(t.player_a == a) & (t.player_b == b) & (t.openings == key)]
        if len(same):
            return same.reset_index(drop=True)
        swapped = t[(t.player_a == b) & (t.player_b == a) & (t.openings == key)]
        if not len(swapped):
            return None
        flipped = swapped.assign(player_a=a, player_b=b, a_first=~swapped.a_first.astype(bool),
                                 result=-swapped.result)  # fmt: skip
        return flipped[MATCH_COLUMNS].reset_index(drop=True)

    def add(self, games: pd.DataFrame) -> None:
        """Keep ``games`` (written at once: a killed ladder keeps the pairs it finished)."""
        self._table = pd.concat([self._table, games[MATCH_COLUMNS]], ignore_index=True)
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
            name = f"part-{pd.Timestamp.now('UTC'):%Y%m%dT%H%M%S%f}-{uuid.uuid4().hex[:8]}.parquet"
            with atomic_path(self.folder / name) as tmp:
                games[MATCH_COLUMNS].to_parquet(tmp, index=False)

    def __len__(self) -> int:
        return len(self._table)
