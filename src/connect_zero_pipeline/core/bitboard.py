"""Connect-4 rules on bitboards: notation, conversions and a batched torch engine.

Bit layout (Pascal Pons' layout). A position is two 64-bit integers. Each
column owns 7 bits, bottom-up; the 7th bit of every column is a sentinel that
is never set, so shifting a line of stones never wraps into the next column::

      col:   1   2   3   4   5   6   7      (notation, 1-based)
    sentinel 6  13  20  27  34  41  48
    row 5    5  12  19  26  33  40  47      <- top row (board row 0)
    row 4    4  11  18  25  32  39  46
    row 3    3  10  17  24  31  38  45
    row 2    2   9  16  23  30  37  44
    row 1    1   8  15  22  29  36  43
    row 0    0   7  14  21  28  35  42      <- bottom row (board row 5)

- ``position``: stones of the side to move; ``mask``: all stones.
- Playing column ``c`` adds the bit ``(mask + bottom(c)) & column(c)``, i.e. the
  lowest empty cell. After a move the roles swap: ``position ^= mask`` (before
  adding the stone) turns the opponent's stones into the new side to move.
- Worked example: after ``"44"`` (two stones in the centre column),
  ``mask = 0b11 << 21`` and ``position = 1 << 21`` (the first player's stone:
  it is the first player's turn again).
- Four in a row along direction ``s`` (1 vertical, 7 horizontal, 6 and 8 the
  diagonals): ``m = p & (p >> s); m & (m >> 2s) != 0``.

Boards for people and models are ``int8 [6, 7]`` with row 0 at the top,
+1 for the side to move, -1 for the opponent and 0 for empty.

Shapes: B = batch of games, A = 7 actions (columns, 0-based in code).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from .board import HEIGHT, WIDTH

H1 = HEIGHT + 1  # bits per column, including the sentinel

BOTTOM_MASK = sum(1 << (H1 * c) for c in range(WIDTH))
BOARD_MASK = BOTTOM_MASK * ((1 << HEIGHT) - 1)
_COLUMN_MASKS = [((1 << HEIGHT) - 1) << (H1 * c) for c in range(WIDTH)]
_BOTTOM_COLS = [1 << (H1 * c) for c in range(WIDTH)]
_TOP_COLS = [1 << (H1 * c + HEIGHT - 1) for c in range(WIDTH)]
_DIRECTIONS = (1, H1, H1 - 1, H1 + 1)  # vertical, horizontal, two diagonals

# Board cell (r, c) with r = 0 at the top <-> bit index H1 * c + (HEIGHT - 1 - r).
_CELL_BITS = np.array(
    [[H1 * c + (HEIGHT - 1 - r) for c in range(WIDTH)] for r in range(HEIGHT)], dtype=np.int64
)


# ---------------------------------------------------------------------------
# Unbatched helpers on Python ints (notation, tests, CLI)
# ---------------------------------------------------------------------------


def bottom_mask_col(col: int) -> int:
    """Bit of the bottom cell of 0-based column ``col``."""
    return _BOTTOM_COLS[col]


def top_mask_col(col: int) -> int:
    """Bit of the top cell of 0-based column ``col``."""
    return _TOP_COLS[col]


def column_mask(col: int) -> int:
    """The 6 playable bits of 0-based column ``col``."""
    return _COLUMN_MASKS[col]


def four_in_a_row(stones):
    """Four in a row in one player's bitboard(s): the one win rule of the project.

    Generic: a Python int gives a ``bool``; a numpy or torch integer array
    (``int64``, or numpy ``uint64``) gives a ``bool`` array of its shape. The
    batched torch engine uses its tuned copy, :func:`has_won`, which the tests
    check against this one.
    """
    won = False
    for s in _DIRECTIONS:
        m = stones & (stones >> s)
        won = won | ((m & (m >> (2 * s))) != 0)
    return won


def alignment(stones: int) -> bool:
    """True if ``stones`` (one player's bitboard) holds four in a row. Unbatched."""
    return bool(four_in_a_row(stones))


def play_move(position, mask, bottom):
    """The position after the side to move drops a stone: ``(position, mask)`` of the next mover.

    Generic over Python ints and numpy / torch integer arrays: ``bottom`` is
    the bottom bit of the column played (:func:`bottom_mask_col` for an int,
    ``1 << (H1 * col)`` for arrays). The stone lands in the lowest empty cell
    (``mask + bottom`` carries up the column); the returned ``position`` holds
    the stones of the opponent, who moves next. The column must not be full.
    """
    return position ^ mask, mask | (mask + bottom)


def four_cells(stones: int) -> set[tuple[int, int]]:
    """The ``(row, col)`` cells (row 0 at the top) of every four in a row in ``stones``, one
    player's bitboard (:func:`four_in_a_row`'s rule, cell by cell). Unbatched."""
    cells = set()
    for s in _DIRECTIONS:
        m = stones & (stones >> s)
        starts = m & (m >> (2 * s))  # the lowest bit of each four
        while starts:
            bit = (starts & -starts).bit_length() - 1
            starts &= starts - 1
            cells.update((HEIGHT - 1 - b % H1, b // H1) for b in range(bit, bit + 4 * s, s))
    return cells


def legal_columns(mask: int) -> list[int]:
    """0-based columns whose top cell is empty. Unbatched."""
    return [c for c in range(WIDTH) if not mask & _TOP_COLS[c]]


def popcount(x: int) -> int:
    return bin(x).count("1")


QUOTE_LIMIT = 80
"""The most characters of a move string an error message quotes."""


def quote_moves(moves: str, upto: int | None = None, limit: int = QUOTE_LIMIT) -> str:
    """``moves`` quoted for a message: whole when it has at most ``limit`` characters, else
    the ``limit`` characters that end at character ``upto`` (the move at fault; default the
    end), ``…`` where cut, and the whole length. A message stays short whatever it quotes."""
    if len(moves) <= limit:
        return repr(moves)
    end = len(moves) if upto is None else min(max(upto, limit), len(moves))
    part = ("…" if end > limit else "") + moves[end - limit : end]
    part += "…" if end < len(moves) else ""
    return f"{part!r} ({len(moves)} characters)"


def moves_to_bitboards(moves: str) -> tuple[int, int]:
    """Play a Pons move string (``"4453"``, 1-based columns) from the empty board.

    Returns ``(position, mask)`` as Python ints, ``position`` being the stones
    of the side to move after the last move. A string whose last move wins is
    accepted (the game is then over, see :func:`is_terminal`).

    Raises:
        ValueError: naming the offending move and its number (counted from 1, as a
            person counts moves), for a character outside 1-7, a move into a full column,
            or any move after the game is over; it quotes at most :data:`QUOTE_LIMIT`
            characters of ``moves`` (:func:`quote_moves`).
    """
    if not isinstance(moves, str):
        raise TypeError(f"moves must be a string like '4453', got {type(moves).__name__}")
    position, mask = 0, 0
    for i, ch in enumerate(moves):
        if not "1" <= ch <= "7":
            quoted = quote_moves(moves, i + 1)
            raise ValueError(f"invalid move {ch!r} (move {i + 1}) in {quoted}: columns are 1-7")
        col = ord(ch) - ord("1")
        if alignment(position ^ mask):  # the previous mover has already won
            quoted = quote_moves(moves, i + 1)
            raise ValueError(f"move {i + 1} ({ch!r}) in {quoted} comes after the game is over")
        if mask & _TOP_COLS[col]:
            quoted = quote_moves(moves, i + 1)
            raise ValueError(f"move {i + 1} ({ch!r}) in {quoted} plays into a full column")
        position, mask = play_move(position, mask, _BOTTOM_COLS[col])
    return position, mask


def is_terminal(position: int, mask: int) -> bool:
    """True if the previous mover has four in a row or the board is full. Unbatched."""
    return alignment(position ^ mask) or mask == BOARD_MASK


def bitboards_to_board(position: int, mask: int) -> np.ndarray:
    """``int8 [6, 7]`` board (row 0 at the top, +1 side to move). Unbatched."""
    bits = (np.uint64(position) >> _CELL_BITS.astype(np.uint64)) & np.uint64(1)
    occupied = (np.uint64(mask) >> _CELL_BITS.astype(np.uint64)) & np.uint64(1)
    return (bits.astype(np.int8) * 2 - 1) * occupied.astype(np.int8)


def board_to_ascii(board: np.ndarray, symbols: str = ".XO") -> str:
    """Draw an ``int8 [6, 7]`` board. ``X`` marks the side to move by default."""
    rows = ["".join(symbols[int(v)] if v >= 0 else symbols[2] for v in row) for row in board]
    return "\n".join(" ".join(r) for r in rows) + "\n1 2 3 4 5 6 7"


def mirror_bitboard(x):
    """Reflect a bitboard left-right. Works on Python ints, numpy and torch integer arrays."""
    out = (x & 0x7F) << (H1 * (WIDTH - 1))
    for c in range(1, WIDTH):
        out = out | (((x >> (H1 * c)) & 0x7F) << (H1 * (WIDTH - 1 - c)))
    return out


# ---------------------------------------------------------------------------
# Batched torch engine
# ---------------------------------------------------------------------------


class State(NamedTuple):
    """A batch of positions. All fields are ``[B]`` tensors on one device."""

    position: torch.Tensor  # [B] int64, stones of the side to move
    mask: torch.Tensor  # [B] int64, all stones
    ply: torch.Tensor  # [B] int64, number of stones on the board

    @property
    def batch_size(self) -> int:
        return self.position.shape[0]

    @property
    def device(self) -> torch.device:
        return self.position.device

    def take(self, index: torch.Tensor) -> State:
        """Select games by boolean mask or integer index."""
        return State(self.position[index], self.mask[index], self.ply[index])

    def put(self, index: torch.Tensor, sub: State) -> State:
        """A copy with the games at ``index`` replaced by the sub-batch ``sub``."""
        out = State(self.position.clone(), self.mask.clone(), self.ply.clone())
        for dst, src in zip(out, sub, strict=True):
            dst[index] = src
        return out


class StepResult(NamedTuple):
    state: State  # next state, from the new mover's view
    done: torch.Tensor  # [B] bool, the move ended the game (win or full board)
    reward: torch.Tensor  # [B] float32, +1 if the player who moved won, else 0


_CONST_CACHE: dict[torch.device, dict[str, torch.Tensor]] = {}


def _consts(device: torch.device) -> dict[str, torch.Tensor]:
    c = _CONST_CACHE.get(device)
    if c is None:
        c = {
            "bottom": torch.tensor(_BOTTOM_COLS, dtype=torch.int64, device=device),  # [A]
            "top": torch.tensor(_TOP_COLS, dtype=torch.int64, device=device),  # [A]
            "column": torch.tensor(_COLUMN_MASKS, dtype=torch.int64, device=device),  # [A]
            "shift": torch.tensor(_DIRECTIONS, dtype=torch.int64, device=device),  # [4]
            "shift2": torch.tensor(_DIRECTIONS, dtype=torch.int64, device=device) * 2,  # [4]
            "shift_col": torch.tensor(_DIRECTIONS, dtype=torch.int64, device=device).view(4, 1),
            "shift2_col": torch.tensor(_DIRECTIONS, dtype=torch.int64, device=device).view(4, 1)
            * 2,
            "one": torch.ones((), dtype=torch.int64, device=device),
            "legal_lut": torch.from_numpy(_LEGAL_LUT).to(device),  # [128 * 420]
            "cell_bits": torch.from_numpy(_CELL_BITS).to(device),  # [6, 7]
        }
        _CONST_CACHE[device] = c
    return c


def initial_state(num_games: int, device: torch.device | str = "cpu") -> State:
    """``num_games`` empty boards."""
    z = torch.zeros(num_games, dtype=torch.int64, device=device)
    return State(z, z.clone(), z.clone())


def state_from_moves(moves: list[str], device: torch.device | str = "cpu") -> State:
    """Batch of positions from Pons move strings (validated, see :func:`moves_to_bitboards`)."""
    pairs = [moves_to_bitboards(m) for m in moves]
    pos = torch.tensor([p for p, _ in pairs], dtype=torch.int64, device=device)
    mask = torch.tensor([m for _, m in pairs], dtype=torch.int64, device=device)
    ply = torch.tensor([len(m) for m in moves], dtype=torch.int64, device=device)
    return State(pos, mask, ply)


def legal_mask(state: State) -> torch.Tensor:
    """``[B, 7] bool``: columns whose top cell is empty."""
    top = _consts(state.device)["top"]
    return (state.mask.unsqueeze(1) & top) == 0


def has_won(stones: torch.Tensor) -> torch.Tensor:
    """Four in a row in ``stones`` (int64 of any shape) -> bool of the same shape."""
    # The four directions ride on a new leading axis: (4, ...) with the data
    # contiguous inside, which is several times faster on CPU than four passes.
    c = _consts(stones.device)
    if stones.dim() == 1:  # the engine's hot path: (B,) -> (4, B), no per-call reshapes
        s = stones.expand(4, stones.shape[0])
        m = s >> c["shift_col"]
        m &= s
        w = m >> c["shift2_col"]
    else:
        view = (4,) + (1,) * stones.dim()
        s = stones.unsqueeze(0).expand(4, *stones.shape)  # (4, ...)
        m = s >> c["shift"].view(view)
        m &= s
        w = m >> c["shift2"].view(view)
    w &= m
    return w.amax(0) != 0  # bitboards are non-negative: any bit set <=> max > 0


def _move_cells(state: State) -> torch.Tensor:
    """``[B, 7] int64``: the bit each column's move would fill (0 for a full column)."""
    c = _consts(state.device)
    return (state.mask.unsqueeze(1) + c["bottom"]) & c["column"]


def winning_moves(state: State) -> torch.Tensor:
    """``[B, 7] bool``: legal columns where the side to move completes four in a row."""
    cells = _move_cells(state)  # (B, 7)
    return has_won(state.position.unsqueeze(1) | cells) & (cells != 0)


def threat_moves(state: State) -> torch.Tensor:
    """``[B, 7] bool``: legal columns where the *opponent* would complete four in a row."""
    cells = _move_cells(state)  # (B, 7)
    opponent = (state.position ^ state.mask).unsqueeze(1)
    return has_won(opponent | cells) & (cells != 0)


def play(state: State, actions: torch.Tensor, validate: bool = True) -> StepResult:
    """Play one move in every game.

    Args:
        state: ``[B]`` positions; none may be finished.
        actions: ``[B] int64`` 0-based columns.
        validate: raise on a move into a full column. Hot loops that only pick
            legal moves pass ``False`` to skip the check (and its device sync).

    Returns:
        The next state from the new mover's view, ``done [B] bool`` and
        ``reward [B] float32`` (+1 if the player who moved won, 0 otherwise).
    """
    c = _consts(state.device)
    col_shift = actions.long() * H1  # (B,) bit index of each column's bottom cell
    if validate:
        if actions.shape != state.position.shape:
            raise ValueError(f"actions shape {tuple(actions.shape)} != batch {state.batch_size}")
        bad = (actions < 0) | (actions >= WIDTH)
        if bool(bad.any()):
            i = int(bad.nonzero()[0])
            raise ValueError(f"invalid column {int(actions[i])} in game {i}: must be 0-6")
        full = ((state.mask >> (col_shift + (HEIGHT - 1))) & 1) != 0
        if bool(full.any()):
            i = int(full.nonzero()[0])
            raise ValueError(f"illegal move: column {int(actions[i]) + 1} is full in game {i}")
    new_mask = c["one"] << col_shift  # bottom cell of the column
    new_mask += state.mask  # carries up to the lowest empty cell
    new_mask |= state.mask
    mover = new_mask ^ state.mask  # the new stone
    mover |= state.position  # the mover's stones after the move
    won = has_won(mover)
    done = won | (new_mask == BOARD_MASK)
    mover ^= new_mask  # now the opponent's stones: the side to move next
    next_state = State(mover, new_mask, state.ply + 1)
    return StepResult(next_state, done, won.float())


# Uniform random legal moves by table look-up. The 7 top-cell bits of ``mask``
# (bits 7c + 5) are gathered into a 7-bit "legal pattern" L by one multiply:
# bit 7c times 2^(42 - 6c) lands on bit 42 + c, and no two partial products
# share a bit, so nothing carries (products past bit 63 wrap away harmlessly).
# _LEGAL_LUT[L * 420 + r] is the (r mod k)-th legal column of pattern L with k
# legal columns; 420 = lcm(1..7), so r uniform in [0, 420) gives a uniform column.
_TOP_ROW_MASK = sum(_TOP_COLS)
_GATHER_MUL = sum(1 << (42 - 6 * c) for c in range(WIDTH))
_LUT_PERIOD = 420
_LEGAL_LUT = np.array(
    [
        ([c for c in range(WIDTH) if pattern >> c & 1] or [-1])[r % max(1, bin(pattern).count("1"))]
        for pattern in range(1 << WIDTH)
        for r in range(_LUT_PERIOD)
    ],
    dtype=np.int64,
)


def legal_pattern(state: State) -> torch.Tensor:
    """``[B] int64`` 7-bit pattern of legal columns: bit ``c`` set if column ``c`` is playable."""
    full = (state.mask & _TOP_ROW_MASK) >> (HEIGHT - 1)  # (B,) bits at 7c
    full *= _GATHER_MUL  # bit 7c -> bit 42 + c
    full >>= 42
    return (full & 0x7F) ^ 0x7F


def random_legal_actions(state: State, generator: torch.Generator | None = None) -> torch.Tensor:
    """``[B] int64``: a uniformly random legal column per game, without a ``[B, 7]`` pass.

    Games with a full board get ``-1`` (callers only ask for unfinished games).
    """
    lut = _consts(state.device)["legal_lut"]
    r = torch.randint(
        0, _LUT_PERIOD, state.position.shape, generator=generator, device=state.device
    )
    r += legal_pattern(state) * _LUT_PERIOD
    return lut[r]


def random_states(num: int, max_plies: int, seed: int = 0) -> State:
    """``num`` unfinished positions after a uniformly random number (0 to ``max_plies``) of
    uniformly random legal moves each, seeded (self-play-like roots for tests and benches)."""
    gen = torch.Generator().manual_seed(seed)
    state = initial_state(num)
    plies = torch.randint(0, max_plies + 1, (num,), generator=gen)
    for t in range(max_plies):
        step = play(state, random_legal_actions(state, gen), validate=False)
        keep = (plies > t) & ~step.done
        state = State(*(torch.where(keep, n, o) for n, o in zip(step.state, state, strict=True)))
    return state


def reset_done(state: State, done: torch.Tensor) -> State:
    """Auto-reset: games flagged in ``done [B] bool`` restart from the empty board."""
    keep = (~done).long()
    return State(state.position * keep, state.mask * keep, state.ply * keep)


def to_boards(state: State) -> torch.Tensor:
    """``int8 [B, 6, 7]`` boards, row 0 at the top, +1 side to move, -1 opponent."""
    bits = _consts(state.device)["cell_bits"]  # (6, 7)
    own = (state.position.view(-1, 1, 1) >> bits) & 1  # (B, 6, 7)
    occ = (state.mask.view(-1, 1, 1) >> bits) & 1  # (B, 6, 7)
    return ((own * 2 - 1) * occ).to(torch.int8)


def from_boards(boards: torch.Tensor) -> State:
    """Inverse of :func:`to_boards` for ``int8 [B, 6, 7]`` boards obeying gravity.

    Raises:
        ValueError: a board with a floating stone (an empty cell under a stone)
            or with stone counts that no legal game produces.
    """
    if boards.dim() != 3 or tuple(boards.shape[1:]) != (HEIGHT, WIDTH):
        raise ValueError(f"boards must be [B, 6, 7], got {tuple(boards.shape)}")
    bits = _consts(boards.device)["cell_bits"]
    weights = torch.ones_like(bits) << bits  # (6, 7)
    b = boards.long()
    occupied = b != 0
    # Gravity: going down a column (row r -> r + 1), an occupied cell needs one below.
    floating = occupied[:, :-1, :] & ~occupied[:, 1:, :]
    if bool(floating.any()):
        i = int(floating.flatten(1).any(1).nonzero()[0])
        raise ValueError(f"board {i} has a stone above an empty cell")
    own_count = (b == 1).sum((1, 2))
    opp_count = (b == -1).sum((1, 2))
    diff = opp_count - own_count  # the side to move has as many stones, or one fewer
    if bool(((diff != 0) & (diff != 1)).any()):
        i = int(((diff != 0) & (diff != 1)).nonzero()[0])
        raise ValueError(
            f"board {i} has {int(own_count[i])} stones for the side to move and "
            f"{int(opp_count[i])} for the opponent: not a position from a legal game"
        )
    position = ((b == 1).long() * weights).sum((1, 2))
    mask = (occupied.long() * weights).sum((1, 2))
    return State(position, mask, occupied.sum((1, 2)))
