"""The terminal analysis board: the grid and, per column, what the agent and the solver think.

Pure text functions, used by :mod:`.play`: :func:`grid` draws the board (colours, the last
move and the winning four on a colour terminal; plain text elsewhere), :func:`analysis`
tabulates the network's policy, the search's visits and Q and the solver's verdict on every
column (:func:`verdict`), and :func:`value_words` says what a value means without overstating it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.bitboard import bitboards_to_board, four_cells, moves_to_bitboards
from ..core.board import HEIGHT, WIDTH

RESET, BOLD, UNDERLINE, REVERSE = "\033[0m", "\033[1m", "\033[4m", "\033[7m"
COLOURS = {"X": "\033[31m", "O": "\033[33m"}  # the first player red, the second yellow
SOLVER_LEGEND = (
    "solver: each move's score for the side to move, +N a win (the higher, the sooner), +0 a "
    "draw, -N a loss; where its node budget ends first, what it proved: win, loss, >=0 (at "
    "least a draw), <=0 (at most a draw), ? (not yet known)"
)
"""What the solver row's symbols mean (the terminal prints it; the page shows it too)."""


def verdict(bounds: tuple[int, int] | None) -> str:
    """A column's solver cell from the bounds of its score (:func:`..core.solver.column_bounds`):
    the exact score, else the strongest outcome they prove (:data:`SOLVER_LEGEND`); ``""``
    for a full column."""
    if bounds is None:
        return ""
    low, high = bounds
    if low == high:
        return f"{low:+d}"
    if low > 0:
        return "win"
    if high < 0:
        return "loss"
    if low == 0:
        return ">=0"
    if high == 0:
        return "<=0"
    return "?"


@dataclass
class Analysis:
    """What the agent thought of one position (side to move's view); ``None``: not computed."""

    column: int
    """The 0-based column it plays."""
    policy: list[float]
    """The network's move probabilities over the 7 columns (0 for a full one)."""
    value: float
    """The value the agent reports: the search's root value, else the network's."""
    visits: list[int] | None = None
    """The search's visits per column."""
    q: list[float | None] | None = None
    """The search's mean value per visited column."""
    solver: list[tuple[int, int] | None] | None = None
    """The bounds the perfect solver proved of each column's score (equal: exact; None: a
    full column)."""


def grid(moves: str, colour: bool = False) -> str:
    """The board after ``moves``: X for the first player, O for the second, column numbers
    below. With ``colour``: the stones in colour, the last move underlined and the winning
    four in reverse video."""
    position, mask = moves_to_bitboards(moves)
    board = bitboards_to_board(position, mask)  # +1: the side to move
    first = 1 if len(moves) % 2 == 0 else -1  # the first player's sign on it
    four = four_cells(position ^ mask)  # the last mover's four, if any
    last = None
    if moves:
        col = int(moves[-1]) - 1
        last = (int(np.flatnonzero(board[:, col])[0]), col)  # the top stone of its column
    lines = []
    for r in range(HEIGHT):
        shown = []
        for c in range(WIDTH):
            mark = "." if board[r, c] == 0 else "X" if board[r, c] == first else "O"
            if colour and mark != ".":
                style = COLOURS[mark] + BOLD
                if (r, c) in four:
                    style += REVERSE
                elif (r, c) == last:
                    style += UNDERLINE
                mark = f"{style}{mark}{RESET}"
            shown.append(mark)
        lines.append(" ".join(shown))
    lines.append(" ".join(str(c + 1) for c in range(WIDTH)))
    return "\n".join(lines)


def value_words(value: float) -> str:
    """A value in [-1, 1] (side to move's view) in words that do not overstate it."""
    size = abs(value)
    if size < 0.1:
        words = "about even"
    elif size < 0.3:
        words = "slightly ahead" if value > 0 else "slightly behind"
    elif size < 0.6:
        words = "ahead" if value > 0 else "behind"
    else:
        words = "winning, it thinks" if value > 0 else "losing, it thinks"
    return f"{words} ({value:+.2f})"


def analysis(a: Analysis) -> str:
    """A table, one column per board column: policy, visits, Q and solver rows (those
    computed), then the value in words."""

    def row(name: str, values: list[str]) -> str:
        return f"{name:<7}" + "".join(f"{v:>7}" for v in values)

    lines = [row("", [str(c + 1) for c in range(WIDTH)])]
    lines.append(row("policy", [f"{p:.2f}" for p in a.policy]))
    if a.visits is not None:
        lines.append(row("visits", [str(n) for n in a.visits]))
    if a.q is not None:
        lines.append(row("Q", ["" if q is None else f"{q:+.2f}" for q in a.q]))
    if a.solver is not None:
        lines.append(row("solver", [verdict(b) for b in a.solver]))
    lines.append(f"The agent's view: {value_words(a.value)}.")
    return "\n".join(lines)
