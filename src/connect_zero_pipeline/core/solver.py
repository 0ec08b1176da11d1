"""Perfect Connect-4 solver: numba negamax on bitboards (the Pascal Pons family of ideas).

Written from the ideas of Pascal Pons' blog series "Solving Connect 4: how to
build a perfect AI" (blog.gamesolver.org); no code was taken from his (AGPL)
repository. The bit layout is the one of :mod:`.bitboard`.

Scores (Pons' convention, always from the side to move's view):

- ``0`` is a draw;
- a win is ``22 - k`` where ``k`` counts the winner's stones once the four is
  completed, so winning with the next stone at ply ``n`` (``n`` stones on the
  board) is worth ``(43 - n) // 2``; a loss is the negative of the opponent's
  win. Scores lie in ``[-21, 21]``.

How the search works
--------------------

1. **Negamax with alpha-beta.** The value of a position is the maximum over
   moves of minus the value of the resulting position. A window
   ``(alpha, beta)`` says which values still matter: a child that reaches
   ``beta`` cuts the node off (fail high, the returned value is a *lower*
   bound); if no child beats ``alpha`` the returned value is an *upper*
   bound; in between it is exact.
2. **Known score range.** Before looking at the children, a node already knows
   its score lies between "the opponent wins with their next-but-one stone" and
   "we win with our next-but-one stone" (immediate wins are resolved before a
   node is entered). Clamping the window to that range often closes it.
3. **Never search a move that loses at once.** From the opponent's *winning
   cells* (empty cells that would complete one of their fours) we get the
   playable cells we are forced to take; two of them means a loss now. A cell
   directly under an opponent winning cell is never played either. If nothing
   is left, the node is lost and scored without search.
4. **Move order.** Columns are tried centre first, then sorted (a stable
   insertion sort on a 7-entry list) by how many winning cells the move gives
   us: moves that build threats tend to cut off sooner.
5. **Transposition table.** ``position + mask + bottom_row`` is a unique key
   for a position (in each column, the highest set bit marks the height and
   the bits below it are the side to move's stones), below 2**49. Example: a
   column holding (bottom-up) one stone of the side to move then one of the
   opponent has mask bits ``011`` and position bits ``001``; ``001 + 011 +
   001 = 101``: the marker at bit 2 says height 2, and bits ``01`` below it
   say who owns each stone. One
   ``int64`` slot per entry packs ``key << 8 | bound``; the bound byte is
   ``32 + v`` for an upper bound ``v`` and ``96 + v`` for a lower bound, 0 for
   an empty slot. Slots are picked by a multiplicative hash of the key and
   always overwritten. Entries are bounds on the exact score, which depends on
   the position only, so the table stays sound across searches and positions.
6. **Null-window search.** The root never searches with a wide window.
   Instead it keeps an interval ``[lo, hi]`` known to hold the score and asks
   yes/no questions "is the score > m?" with the window ``(m, m + 1)``, each
   answer shrinking the interval, until it is a single value. The questions
   are not plain bisection: while the midpoint is near 0 they go to half the
   bound on that side instead, since "is it a quick win (loss)?" is cheap to
   answer and the table then speeds up the harder questions near 0. The weak
   solver starts from ``[-1, 1]``: "> 0?" and maybe "> -1?", two questions at
   most. (On most middle-game positions that takes fewer nodes than running the
   strong questions until the sign is known; ``bench solver`` measures both.)
7. **Prefetch.** The table slot of every child is requested from memory
   (an LLVM ``prefetch``) when the moves are generated, so that the lookup on
   entering the child rarely waits for RAM. The
   table is a numpy array, which numpy backs with transparent huge pages, so
   table lookups rarely miss the TLB either.

The search runs on an explicit stack (one row of ``frames`` per ply) instead
of recursion, so one compiled function does all the work with no call
overhead per node. Numba compiles everything with ``cache=True``: the first
process pays for the compilation and later processes load it from disk.

All bitboards are ``int64`` inside the kernels (they fit in 49 bits, so
there are no sign problems, and numba's mixed signed/unsigned arithmetic,
which falls back to floats, is avoided). A :class:`Solver` owns its table and
scratch stack, so it is not thread-safe; the batch kernels release the GIL,
so one solver per thread (or per process, as the labelling pipeline does)
runs in parallel.

Node counts: every position entered by the search counts as one node. A node
budget (``max_nodes > 0``) stops the search of one root position cleanly once
exceeded; the result is then reported as not ok. The table is not corrupted
by an abort: only finished sub-searches store entries.

Shapes: N = positions in a batch, A = 7 columns (0-based in code).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .bitboard import BOARD_MASK, BOTTOM_MASK, H1, alignment, four_in_a_row, moves_to_bitboards
from .board import HEIGHT, NUM_CELLS, WIDTH
from .book import BOOK_PLY, EMPTY, NO_SCORE, OpeningBook, book_score, from_bitbully

logger = logging.getLogger(__name__)

#: Score of a full column in :meth:`Solver.analyze_batch` (``int8``).
FULL_COLUMN = -128
#: Default transposition table size: ``2**23`` entries of 8 bytes (64 MiB).
DEFAULT_TT_LOG2 = 23
MIN_SCORE = -(NUM_CELLS // 2)  # -21
MAX_SCORE = (NUM_CELLS + 1) // 2  # 21

# Constants frozen into the compiled code (plain Python ints are compile-time constants).
_BOTTOM = BOTTOM_MASK
_BOARD = BOARD_MASK
_COL0 = (1 << HEIGHT) - 1  # playable bits of column 0
_HASH_MUL = 0x9E3779B97F4A7C15 - (1 << 64)  # 2**64 / golden ratio, as a signed int64
_UPPER_TAG = 32  # bound byte = 32 + v for an upper bound v in [-21, 21]
_LOWER_TAG = 96  # bound byte = 96 + v for a lower bound v
_SPLIT_TAG = 64  # bytes >= 64 are lower bounds
_ORDER = np.array([3, 2, 4, 1, 5, 0, 6], dtype=np.int64)  # centre first

# Layout of one stack frame (one row of the ``frames`` scratch array per ply).
_F_POS, _F_MASK, _F_ALPHA, _F_BETA, _F_COUNT, _F_NEXT = 0, 1, 2, 3, 4, 5
_F_MOVES = 8  # 7 move bits
_F_SCORES = 16  # 7 ordering scores
_FRAME_WIDTH = 24
_NUM_FRAMES = NUM_CELLS + 2

# stats[] slots: nodes so far, node budget (0 = none), aborted flag.
_S_NODES, _S_LIMIT, _S_ABORTED = 0, 1, 2


# ---------------------------------------------------------------------------
# Compiled kernels (unbatched: one position at a time, all ints are int64)
# ---------------------------------------------------------------------------


@intrinsic
def _popcount(typingctx, x):
    """Number of set bits of an int64 (LLVM ``ctpop``, one instruction on x86-64)."""
    sig = types.int64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return sig, codegen


# LLVM names the prefetch intrinsic after its pointer type: opaque ``ptr`` in
# recent llvmlite, ``i8*`` in older ones.
_BYTE_PTR = ir.IntType(8).as_pointer()
_PREFETCH_NAME = "llvm.prefetch.p0" if str(_BYTE_PTR) == "ptr" else "llvm.prefetch.p0i8"


@intrinsic
def _prefetch(typingctx, array, index):
    """Ask the CPU to start loading ``array[index]`` into cache; no effect on any value."""
    sig = types.void(array, types.int64)

    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        arr = context.make_array(array_type)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, array_type, arr, [args[1]])
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [_BYTE_PTR, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, _PREFETCH_NAME)
        # read access, keep in all cache levels, data cache
        builder.call(fn, [builder.bitcast(ptr, _BYTE_PTR), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, inline="always")
def _line_cells(s, k):
    """Cells that would complete four of ``s`` along a line of step ``k`` (both ways)."""
    two_below = (s << k) & (s << (2 * k))  # stones 1 and 2 steps back
    cells = two_below & (s << (3 * k))  # XXX_
    cells |= two_below & (s >> k)  # XX_X
    two_above = (s >> k) & (s >> (2 * k))  # stones 1 and 2 steps ahead
    cells |= two_above & (s << k)  # X_XX
    cells |= two_above & (s >> (3 * k))  # _XXX
    return cells


@njit(cache=True, inline="always")
def _winning_cells(stones, mask):
    """Empty cells (not in ``mask``) where ``stones`` would complete four in a row."""
    cells = (stones << 1) & (stones << 2) & (stones << 3)  # vertical: on top of three
    cells |= _line_cells(stones, H1)  # horizontal
    cells |= _line_cells(stones, H1 - 1)  # diagonal /
    cells |= _line_cells(stones, H1 + 1)  # diagonal \
    return cells & (_BOARD ^ mask)


@njit(cache=True, inline="always")
def _tt_index(key, shift, size_mask):
    return ((key * _HASH_MUL) >> shift) & size_mask


@njit(cache=True, nogil=True)
def _negamax(pos, mask, alpha, beta, tt, shift, frames, bk, bs, bply, stats):
    """Alpha-beta value of one position, iteratively over an explicit stack.

    Preconditions: the game is not over, the side to move cannot win with its
    next stone, and ``alpha < beta``.

    Returns ``v`` with the usual fail-soft meaning: ``v <= alpha`` means the
    score is ``<= v`` (upper bound), ``v >= beta`` means the score is ``>= v``
    (lower bound), otherwise ``v`` is the exact score. If the node budget in
    ``stats`` runs out, sets ``stats[_S_ABORTED]`` and returns 0 (meaningless).
    """
    size_mask = tt.shape[0] - 1
    base_ply = _popcount(mask)
    nodes = stats[_S_NODES]
    limit = stats[_S_LIMIT]
    d = 0
    frames[0, _F_POS] = pos
    frames[0, _F_MASK] = mask
    frames[0, _F_ALPHA] = alpha
    frames[0, _F_BETA] = beta
    while True:
        # ---- enter the node on frame d: settle it at once or generate its moves.
        nodes += 1
        if limit > 0 and nodes > limit:
            stats[_S_NODES] = nodes
            stats[_S_ABORTED] = 1
            return 0
        p = frames[d, _F_POS]
        m = frames[d, _F_MASK]
        a = frames[d, _F_ALPHA]
        b = frames[d, _F_BETA]
        n = base_ply + d
        settled = True
        val = 0
        possible = (m + _BOTTOM) & _BOARD
        opp_win = _winning_cells(p ^ m, m)
        forced = possible & opp_win
        if forced != 0 and (forced & (forced - 1)) != 0:
            val = -((NUM_CELLS - n) // 2)  # two threats to block: the opponent wins next
        else:
            if forced != 0:
                possible = forced
            safe = possible & ~(opp_win >> 1)  # never play right under an opponent threat
            exact = NO_SCORE
            if n == bply:  # the opening book's ply: its exact score, no search below
                exact = book_score(p, m, bk, bs)
            if safe == 0:
                val = -((NUM_CELLS - n) // 2)
            elif n >= NUM_CELLS - 2:
                val = 0  # neither side can win any more
            elif exact != NO_SCORE:
                val = exact
            else:
                lo = -((NUM_CELLS - 2 - n) // 2)  # the opponent wins two stones from now at best
                hi = (NUM_CELLS - 1 - n) // 2  # we win two stones from now at best
                key = p + m + _BOTTOM
                entry = tt[_tt_index(key, shift, size_mask)]
                if (entry >> 8) == key:  # a stored bound narrows the range further
                    tag = entry & 0xFF
                    if tag >= _SPLIT_TAG:
                        lo = max(lo, tag - _LOWER_TAG)
                    else:
                        hi = min(hi, tag - _UPPER_TAG)
                # Clamp the window to [lo, hi]; if it closes, return the bound that closed it.
                b_in = b
                a = max(a, lo)
                b = min(b, hi)
                if a >= b:
                    val = a if a >= b_in else b
                else:
                    settled = False
                    frames[d, _F_ALPHA] = a
                    frames[d, _F_BETA] = b
                    # Centre-first columns, stably sorted by the threats each move makes.
                    count = 0
                    for k in range(WIDTH):
                        mv = safe & (_COL0 << (H1 * _ORDER[k]))
                        if mv != 0:
                            # The child's table slot is a likely cache miss: start
                            # loading it now, it is read when the child is entered.
                            child_key = (p ^ m) + (m | mv) + _BOTTOM
                            _prefetch(tt, _tt_index(child_key, shift, size_mask))
                            score = _popcount(_winning_cells(p | mv, m | mv))
                            j = count
                            while j > 0 and frames[d, _F_SCORES + j - 1] < score:
                                frames[d, _F_MOVES + j] = frames[d, _F_MOVES + j - 1]
                                frames[d, _F_SCORES + j] = frames[d, _F_SCORES + j - 1]
                                j -= 1
                            frames[d, _F_MOVES + j] = mv
                            frames[d, _F_SCORES + j] = score
                            count += 1
                    frames[d, _F_COUNT] = count
                    frames[d, _F_NEXT] = 0

        # ---- unwind finished nodes, then descend into the next child.
        while True:
            if settled:
                if d == 0:
                    stats[_S_NODES] = nodes
                    return val
                d -= 1
                score = -val
                if score >= frames[d, _F_BETA]:  # fail high: score is a lower bound
                    key = frames[d, _F_POS] + frames[d, _F_MASK] + _BOTTOM
                    tt[_tt_index(key, shift, size_mask)] = (key << 8) | (_LOWER_TAG + score)
                    val = score
                    continue
                if score > frames[d, _F_ALPHA]:
                    frames[d, _F_ALPHA] = score
            i = frames[d, _F_NEXT]
            if i < frames[d, _F_COUNT]:
                frames[d, _F_NEXT] = i + 1
                p = frames[d, _F_POS]
                m = frames[d, _F_MASK]
                frames[d + 1, _F_POS] = p ^ m
                frames[d + 1, _F_MASK] = m | frames[d, _F_MOVES + i]
                frames[d + 1, _F_ALPHA] = -frames[d, _F_BETA]
                frames[d + 1, _F_BETA] = -frames[d, _F_ALPHA]
                d += 1
                break
            # All moves fail low (or alpha was reached): alpha is an upper bound.
            a = frames[d, _F_ALPHA]
            key = frames[d, _F_POS] + frames[d, _F_MASK] + _BOTTOM
            tt[_tt_index(key, shift, size_mask)] = (key << 8) | (_UPPER_TAG + a)
            val = a
            settled = True


@njit(cache=True, nogil=True)
def _probe(lo, hi):
    """The next question "score > probe?" when the score is in ``[lo, hi]``: halfway, but
    never closer to 0 than half of the bound on its side (big-magnitude questions, a quick
    win or loss, are cheap and fill the table)."""
    probe = lo + (hi - lo) // 2
    if probe <= 0 and -((-lo) // 2) < probe:
        probe = -((-lo) // 2)
    elif probe >= 0 and hi // 2 > probe:
        probe = hi // 2
    return probe


@njit(cache=True, nogil=True)
def _bounds_one(pos, mask, max_nodes, tt, shift, frames, bk, bs, bply, lo_out, hi_out):
    """Fill ``lo_out``/``hi_out [7]`` with the bounds of each column's score for the side to
    move (both :data:`FULL_COLUMN` for a full one), each column within ``max_nodes`` nodes.

    A win at once, and a move that lets the opponent win at once, are exact always. Else
    the outcome is asked first ("> 0?", "> -1?": win, draw or loss), then the exact score;
    a question the budget cuts short leaves the bounds the answered ones give.
    Precondition: the game is not over.
    """
    n = _popcount(mask)
    stats = np.zeros(4, dtype=np.int64)
    wins = _winning_cells(pos, mask)
    for c in range(WIDTH):
        mv = (mask + _BOTTOM) & (_COL0 << (H1 * c))
        if mv == 0:
            lo_out[c] = FULL_COLUMN
            hi_out[c] = FULL_COLUMN
            continue
        if wins & mv:
            lo_out[c] = (NUM_CELLS + 1 - n) // 2
            hi_out[c] = lo_out[c]
            continue
        if n + 1 == NUM_CELLS:
            lo_out[c] = 0
            hi_out[c] = 0
            continue
        p2 = pos ^ mask  # the opponent to move, after the move
        m2 = mask | mv
        if _winning_cells(p2, m2) & ((m2 + _BOTTOM) & _BOARD):  # it wins at once
            lo_out[c] = -((NUM_CELLS + 1 - (n + 1)) // 2)
            hi_out[c] = lo_out[c]
            continue
        lo = -((NUM_CELLS - n - 1) // 2)  # the opponent's score
        hi = (NUM_CELLS - n - 2) // 2
        stats[_S_NODES] = 0
        stats[_S_LIMIT] = max_nodes
        stats[_S_ABORTED] = 0
        step = 0
        while lo < hi:
            if step == 0 and lo <= 0 < hi:
                probe = 0  # the outcome first: does the opponent win?
            elif step <= 1 and lo <= -1 < hi:
                probe = -1  # does it at least draw?
            else:
                probe = _probe(lo, hi)
            step += 1
            v = _negamax(p2, m2, probe, probe + 1, tt, shift, frames, bk, bs, bply, stats)
            if stats[_S_ABORTED]:
                break
            if v <= probe:
                hi = min(hi, v)
            else:
                lo = max(lo, v)
        lo_out[c] = -hi
        hi_out[c] = -lo


@njit(cache=True, nogil=True)
def _solve_one(pos, mask, weak, tt, shift, frames, bk, bs, bply, stats):
    """Exact score (or its sign if ``weak``) of an unfinished position.

    Precondition: the game is not over (no four of the previous mover, board
    not full). Returns 0 with ``stats[_S_ABORTED]`` set if the budget ran out.
    """
    n = _popcount(mask)
    possible = (mask + _BOTTOM) & _BOARD
    if _winning_cells(pos, mask) & possible:
        val = (NUM_CELLS + 1 - n) // 2
        return (1 if val > 0 else 0) if weak else val
    lo = -((NUM_CELLS - n) // 2)
    hi = (NUM_CELLS - 1 - n) // 2
    if weak:
        # Only the sign is wanted: at most two questions, "> 0?" then "> -1?".
        lo = max(lo, -1)
        hi = min(hi, 1)
    while lo < hi:
        probe = _probe(lo, hi)
        v = _negamax(pos, mask, probe, probe + 1, tt, shift, frames, bk, bs, bply, stats)
        if stats[_S_ABORTED]:
            return 0
        if v <= probe:
            hi = min(hi, v)
        else:
            lo = max(lo, v)
    if weak:  # a fail-soft answer may land outside [-1, 1]
        return 1 if lo > 0 else (-1 if lo < 0 else 0)
    return lo


@njit(cache=True, nogil=True)
def _analyze_one(pos, mask, out, tt, shift, frames, bk, bs, bply, stats):
    """Fill ``out [7]`` with each column's score for the side to move (``FULL_COLUMN`` if full).

    Precondition: the game is not over. Stops early if the budget runs out.
    """
    n = _popcount(mask)
    for c in range(WIDTH):
        col = _COL0 << (H1 * c)
        mv = (mask + _BOTTOM) & col
        if mv == 0:
            out[c] = FULL_COLUMN
        elif _winning_cells(pos, mask) & mv:
            out[c] = (NUM_CELLS + 1 - n) // 2
        elif n + 1 == NUM_CELLS:
            out[c] = 0
        else:
            out[c] = -_solve_one(
                pos ^ mask, mask | mv, False, tt, shift, frames, bk, bs, bply, stats
            )
            if stats[_S_ABORTED]:
                return


@njit(cache=True, nogil=True)
def _solve_batch(
    positions, masks, weak, max_nodes, tt, shift, frames, bk, bs, bply, scores, ok, nodes
):
    """Batched :func:`_solve_one`; ``max_nodes`` is a budget per position (0 = none)."""
    stats = np.zeros(4, dtype=np.int64)
    for i in range(positions.shape[0]):
        stats[_S_NODES] = 0
        stats[_S_LIMIT] = max_nodes
        stats[_S_ABORTED] = 0
        scores[i] = _solve_one(positions[i], masks[i], weak, tt, shift, frames, bk, bs, bply, stats)
        ok[i] = stats[_S_ABORTED] == 0
        nodes[i] = stats[_S_NODES]


@njit(cache=True, nogil=True)
def _analyze_batch(positions, masks, max_nodes, tt, shift, frames, bk, bs, bply, scores, ok, nodes):
    """Batched :func:`_analyze_one`; ``max_nodes`` is a budget per position (0 = none)."""
    stats = np.zeros(4, dtype=np.int64)
    out = np.zeros(WIDTH, dtype=np.int64)
    for i in range(positions.shape[0]):
        stats[_S_NODES] = 0
        stats[_S_LIMIT] = max_nodes
        stats[_S_ABORTED] = 0
        _analyze_one(positions[i], masks[i], out, tt, shift, frames, bk, bs, bply, stats)
        for c in range(WIDTH):
            scores[i, c] = out[c]
        ok[i] = stats[_S_ABORTED] == 0
        nodes[i] = stats[_S_NODES]


# ---------------------------------------------------------------------------
# Python API
# ---------------------------------------------------------------------------


def _check_batch(positions, masks) -> tuple[np.ndarray, np.ndarray]:
    """Validate ``[N]`` bitboards; returns contiguous ``int64 [N]`` copies (views if possible).

    Raises:
        ValueError: naming the first bad index, for mismatched shapes, bits
            outside the board, a floating stone, stones of the side to move
            outside the mask, impossible stone counts, or a finished game.
    """
    pos = np.ascontiguousarray(np.asarray(positions)).astype(np.int64, copy=False)
    msk = np.ascontiguousarray(np.asarray(masks)).astype(np.int64, copy=False)
    if pos.ndim != 1 or pos.shape != msk.shape:
        raise ValueError(f"positions and masks must be [N] arrays, got {pos.shape} and {msk.shape}")
    problems = (
        ((msk & ~BOARD_MASK) != 0, "stones outside the board or on a sentinel bit"),
        (((msk + BOTTOM_MASK) & msk) != 0, "a stone above an empty cell"),
        ((pos & ~msk) != 0, "position has stones outside mask"),
    )
    for bad, what in problems:
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"position {i} is not a legal position: {what}")
    own, total = _popcount_np(pos), _popcount_np(msk)  # [N], [N]
    bad = (total - 2 * own != 0) & (total - 2 * own != 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"position {i} is not a legal position: {int(own[i])} stones for the side to move "
            f"and {int(total[i] - own[i])} for the opponent"
        )
    finished = four_in_a_row(pos ^ msk) | (msk == BOARD_MASK)
    if finished.any():
        i = int(np.flatnonzero(finished)[0])
        raise ValueError(f"position {i} is finished (won or full board): nothing to solve")
    return pos, msk


def _popcount_np(x: np.ndarray) -> np.ndarray:
    """``[N] int64`` bit counts of non-negative ``int64 [N]``."""
    if hasattr(np, "bitwise_count"):  # numpy >= 2
        return np.bitwise_count(x).astype(np.int64)
    as_bytes = x.astype("<i8").view(np.uint8).reshape(-1, 8)  # (N, 8)
    return np.unpackbits(as_bytes, axis=1).sum(1).astype(np.int64)


def _to_bitboards(position) -> tuple[int, int, str]:
    """``(position, mask, label)`` from a move string or a ``(position, mask)`` pair.

    Raises:
        ValueError: invalid move string (from :func:`.moves_to_bitboards`), an
            illegal bitboard pair, or a finished game.
    """
    if isinstance(position, str):
        pos, mask = moves_to_bitboards(position)
        label = f"{position!r}"
        if alignment(pos ^ mask):
            raise ValueError(f"cannot solve {label}: the game is already won by the last move")
        if mask == BOARD_MASK:
            raise ValueError(f"cannot solve {label}: the board is full (draw)")
        return pos, mask, label
    try:
        pos, mask = (int(v) for v in position)
    except (TypeError, ValueError):
        raise TypeError(
            f"expected a move string or a (position, mask) pair, got {position!r}"
        ) from None
    _check_batch(np.array([pos]), np.array([mask]))
    return pos, mask, f"(position={pos:#x}, mask={mask:#x})"


class Solver:
    """Perfect solver owning a transposition table (not thread-safe: one per thread or worker).

    Args:
        tt_log2: the table has ``2**tt_log2`` entries of 8 bytes (default 23,
            64 MiB). Must be in ``[10, 30]``. A bigger table saves nodes on
            hard positions. The memory is committed as the table fills.

    The table is kept between calls (entries are bounds on exact scores, valid
    forever); :meth:`reset` clears it. ``node_count`` holds the number of
    nodes searched by the last :meth:`solve` or :meth:`analyze` call.
    """

    def __init__(self, tt_log2: int = DEFAULT_TT_LOG2, book: OpeningBook | None = None):
        if not isinstance(tt_log2, int) or not 10 <= tt_log2 <= 30:
            raise ValueError(f"tt_log2 must be an int in [10, 30], got {tt_log2!r}")
        self.tt_log2 = tt_log2
        self.book = book
        """The opening book the search stops at (:mod:`.book`), or None: every position is
        searched (the opening then takes minutes or more)."""
        self._shift = 64 - tt_log2
        self._tt = np.zeros(1 << tt_log2, dtype=np.int64)  # [2**tt_log2] key << 8 | bound
        self._frames = np.zeros((_NUM_FRAMES, _FRAME_WIDTH), dtype=np.int64)  # search stack
        # What every kernel searches with: the table, its hash shift, the stack, the book.
        looked_up = book or EMPTY
        self._search = (self._tt, self._shift, self._frames, looked_up.keys, looked_up.scores,
                        looked_up.ply)  # fmt: skip
        self.node_count = 0
        logger.debug(
            "solver transposition table: 2**%d entries (%d MiB)", tt_log2, self._tt.nbytes >> 20
        )

    def reset(self) -> None:
        """Empty the transposition table (touches every page: milliseconds for 64 MiB)."""
        self._tt.fill(0)

    def solve(self, moves_or_bitboards, weak: bool = False) -> int:
        """Exact score of an unfinished position for the side to move.

        Args:
            moves_or_bitboards: a Pons move string (``"4453"``) or a
                ``(position, mask)`` pair of bitboards (see :mod:`.bitboard`).
            weak: return only the sign (-1 loss, 0 draw, +1 win), which is cheaper.

        Returns:
            The exact score in Pons' convention (module docstring), or its sign.

        Raises:
            ValueError: invalid move string, illegal bitboards or a finished game.
        """
        pos, mask, _ = _to_bitboards(moves_or_bitboards)
        scores, _, nodes = self.solve_batch(
            np.array([pos], dtype=np.int64), np.array([mask], dtype=np.int64), weak=weak
        )
        self.node_count = int(nodes[0])
        return int(scores[0])

    def analyze(self, position) -> list[int | None]:
        """Exact score of each of the 7 moves, from the side to move's view.

        A winning move scores the immediate win; other moves score minus the
        exact score of the resulting position. ``max(...)`` over the non-None
        entries equals :meth:`solve`.

        Args:
            position: a move string or a ``(position, mask)`` pair (see :meth:`solve`).

        Returns:
            7 scores, left to right (index 0 = column "1"), ``None`` for a full column.

        Raises:
            ValueError: invalid move string, illegal bitboards or a finished game.
        """
        pos, mask, _ = _to_bitboards(position)
        scores, _, nodes = self.analyze_batch(
            np.array([pos], dtype=np.int64), np.array([mask], dtype=np.int64)
        )
        self.node_count = int(nodes[0])
        return [None if s == FULL_COLUMN else int(s) for s in scores[0]]

    def solve_batch(
        self, positions, masks, weak: bool = False, max_nodes: int = 0
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Score many unfinished positions, one after the other in compiled code.

        Args:
            positions: ``[N]`` int64 or uint64 bitboards of the side to move's stones.
            masks: ``[N]`` int64 or uint64 bitboards of all stones.
            weak: only the sign of each score.
            max_nodes: node budget per position, 0 for none. A position that
                exceeds it is abandoned (``ok`` False) and the next one starts.

        Returns:
            ``scores [N] int8`` (exact, or the sign if ``weak``; meaningless where
            ``ok`` is False), ``ok [N] bool`` and ``nodes [N] int64`` searched.

        Raises:
            ValueError: naming the first illegal or finished position.
        """
        pos, msk = _check_batch(positions, masks)
        n = pos.shape[0]
        scores = np.zeros(n, dtype=np.int8)  # [N]
        ok = np.zeros(n, dtype=np.bool_)  # [N]
        nodes = np.zeros(n, dtype=np.int64)  # [N]
        _solve_batch(pos, msk, bool(weak), int(max_nodes), *self._search, scores, ok, nodes)
        return scores, ok, nodes

    def analyze_batch(
        self, positions, masks, max_nodes: int = 0
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Score every move of many unfinished positions (see :meth:`analyze`).

        Args:
            positions: ``[N]`` int64 or uint64 bitboards of the side to move's stones.
            masks: ``[N]`` int64 or uint64 bitboards of all stones.
            max_nodes: node budget per position (all its moves together), 0 for none.

        Returns:
            ``scores [N, 7] int8`` with :data:`FULL_COLUMN` (-128) for full
            columns (meaningless rows where ``ok`` is False), ``ok [N] bool``
            and ``nodes [N] int64`` searched.

        Raises:
            ValueError: naming the first illegal or finished position.
        """
        pos, msk = _check_batch(positions, masks)
        n = pos.shape[0]
        scores = np.zeros((n, WIDTH), dtype=np.int8)  # [N, 7]
        ok = np.zeros(n, dtype=np.bool_)  # [N]
        nodes = np.zeros(n, dtype=np.int64)  # [N]
        _analyze_batch(pos, msk, int(max_nodes), *self._search, scores, ok, nodes)
        return scores, ok, nodes

    def column_bounds(self, position: int, mask: int, max_nodes: int = 0):
        """What the budget proves about each column's score, for the side to move.

        Args:
            position, mask: an unfinished position's bitboards.
            max_nodes: node budget per column, 0 for none (then every bound is exact).

        Returns:
            7 ``(low, high)`` pairs, the score within them (``low == high``: exact), left to
            right; ``None`` for a full column. A move that wins at once, or that lets the
            opponent win at once, is always exact; otherwise the outcome (``low > 0`` a
            win, ``high < 0`` a loss, ``0`` on one side a draw at least or at most) comes
            before the exact score.

        Raises:
            ValueError: illegal bitboards or a finished game.
        """
        pos, msk = _check_batch([position], [mask])
        lo = np.zeros(WIDTH, dtype=np.int64)
        hi = np.zeros(WIDTH, dtype=np.int64)
        _bounds_one(pos[0], msk[0], int(max_nodes), *self._search, lo, hi)
        return [None if a == FULL_COLUMN else (int(a), int(b)) for a, b in zip(lo, hi, strict=True)]


@dataclass(frozen=True)
class SolverSpec:
    """What makes a :class:`Solver`, small enough to send to a worker process or a Ray task,
    which makes its own (:meth:`make`): its table size, and where its opening book is
    (None: none): a kept book's folder (:meth:`.book.OpeningBook.save`), memory-mapped once
    checked, or the book's source file, read into memory (where no folder could be kept)."""

    tt_log2: int = DEFAULT_TT_LOG2
    book: str | None = None

    def make(self) -> Solver:
        """The solver; without its book where the book cannot be read here (a Ray node that
        lacks the folder, a folder damaged since it was checked): the opening is then
        searched, which one warning line says."""
        book = None
        if self.book:
            path = Path(self.book)
            try:
                book = OpeningBook.load(path) if path.is_dir() else from_bitbully(
                    np.fromfile(path, dtype=np.uint8))  # fmt: skip
            except (OSError, ValueError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                logger.warning("No opening book at %s in this process (%s): positions before "
                               "ply %d are searched (minutes each)", self.book, reason,
                               BOOK_PLY)  # fmt: skip
        return Solver(self.tt_log2, book)
