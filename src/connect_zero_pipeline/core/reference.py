"""Naive per-game Connect-4 on a list of lists: the reference for tests and benchmarks.

Deliberately written the obvious way (scan every line through the last stone)
so that the batched bitboard engine can be checked against it. Never used in a
hot path. Unbatched.
"""

from __future__ import annotations

from .board import HEIGHT, WIDTH


class NaiveGame:
    """One game. ``grid[r][c]`` with r = 0 at the top; 1 = first player, 2 = second, 0 empty."""

    def __init__(self) -> None:
        self.grid = [[0] * WIDTH for _ in range(HEIGHT)]
        self.to_move = 1
        self.plies = 0
        self.winner = 0  # 0 none yet, else 1 or 2
        self.over = False

    def legal(self) -> list[bool]:
        return [not self.over and self.grid[0][c] == 0 for c in range(WIDTH)]

    def play(self, col: int) -> None:
        if self.over or self.grid[0][col] != 0:
            raise ValueError(f"illegal move {col}")
        r = max(r for r in range(HEIGHT) if self.grid[r][col] == 0)
        self.grid[r][col] = self.to_move
        self.plies += 1
        if self._wins_through(r, col):
            self.winner, self.over = self.to_move, True
        elif self.plies == WIDTH * HEIGHT:
            self.over = True
        self.to_move = 3 - self.to_move

    def _wins_through(self, r: int, c: int) -> bool:
        me = self.grid[r][c]
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            count = 1
            for sign in (1, -1):
                rr, cc = r + sign * dr, c + sign * dc
                while 0 <= rr < HEIGHT and 0 <= cc < WIDTH and self.grid[rr][cc] == me:
                    count += 1
                    rr, cc = rr + sign * dr, cc + sign * dc
            if count >= 4:
                return True
        return False

    def board(self) -> list[list[int]]:
        """Rows top-first, +1 for the side to move, -1 for the opponent."""
        me = self.to_move
        return [[0 if v == 0 else (1 if v == me else -1) for v in row] for row in self.grid]
