"""KdK batched engine: B games in one int32 array, stepped by numba kernels.

The contract (``setup``, ``deal``, ``refresh``, ``step``, ``observe``, ``to_state``,
``from_state``, ``random_play``) is in :mod:`tablegym.vector.engine`; use it through
``tablegym.vector.VectorGame("kdk", ..., backend="numba")``. This is a second implementation
of ``rules.py`` (spec v1.1, ``docs/kdk_rules.md``; comments cite its sections): it shares
only constants with it (figures, decks, action ids, fit tables, the observation layout's
offsets and affine map), and ``tests/test_kdk_engine.py`` replays games through both and
compares masks, observations, rewards and states at every step. Every level (8, 9, 10) and
deck mode is implemented.

State of one game: one row of ``NUM_COLUMNS`` int32 columns (``STATE_DTYPE``; the per-row
functions take int64 rows too, as ``from_state`` makes them); seats beyond ``num_players`` hold
0. Flags are 0/1. A pile or stack is a length column plus fixed-size storage, bottom
first (a draw pile's top card is its last one, as in ``rules.State.draw``). Per-game
generator: one uint64 xorshift64* state in ``rngs``; every shuffle is Fisher-Yates on it.

==========  ==================  =======  =====================================================
columns     name                width    content (``rules.State`` field)
==========  ==================  =======  =====================================================
0           ``PHASE``           1        ``rules.Phase`` value (``phase``)
1           ``TO_PLAY``         1        seat to act, -1 at GAME_OVER (``to_play``)
2           ``ROUND_IDX``       1        round, 1-based (``round_idx``)
3           ``ROUNDS_DONE``     1        rounds scored (``rounds_done``)
4           ``OPENER``          1        opener of the round (``opener``)
5           ``LAST_WINNER``     1        place 1 of the last scored round or -1
6           ``TOP``             1        effective top figure, -1 = empty box (``top``)
7           ``TOP_OWNER``       1        owner of the top card or -1 (``top_owner``)
8           ``DUTY``            1        duty holder or -1 (``duty``)
9           ``REOPENER``        1        R of the last interruption or -1 (``reopener``)
10          ``RESUME``          1        ``RESUME_*`` while a FINISH is pending (``resume``)
11          ``SP_IN_ROUND``     1        flag (``sp_in_round``)
12          ``STEPS``           1        env steps in this round (``steps``)
13          ``TOPUPS``          1        free top-ups in this decision (``topups``)
14          ``QLEN``            1        length of ``QUEUE``
15          ``FIN_LEN``         1        length of ``FINISH_ORDER``
16          ``ELIM_LEN``        1        length of ``ELIM_ORDER``
17          ``BOX_LEN``         1        length of ``BOX``
18          ``OVER``            1        scratch of one action: the round ended (§3.7)
19          ``SOLO_START``      1        scratch of one action: solo when it began (E3)
20–24       ``QUEUE``           5        decision queue, first to act first (``queue``)
25–29       ``FINISH_ORDER``    5        seats (``finish_order``)
30–34       ``ELIM_ORDER``      5        seats (``elim_order``)
35–39       ``STATUS``          5        ACTIVE / FINISHED / ELIMINATED per seat
40–44       ``PLACE``           5        per seat (``place``)
45–49       ``ANNOUNCED``       5        per seat (``announced``)
50–54       ``ANN_MADE``        5        per seat (``ann_made``)
55–59       ``SERVES_SINCE``    5        per seat (``serves_since``)
60–64       ``LAID_SINCE``      5        per seat (``laid_since``)
65–69       ``COMBO_LEN``       5        per seat (``combo_len``)
70–74       ``COMBO_PTS``       5        per seat (``combo_pts``)
75–79       ``SCORE``           5        per seat (``score``)
80–84       ``LAST_SCORE``      5        per seat (``last_score``)
85–89       ``FIRSTS``          5        per seat (``firsts``)
90–94       ``COMBO_SUM``       5        per seat (``combo_sum``)
95–99       ``LAST_PLACE``      5        per seat (``last_place``)
100–104     ``PICKS_LEFT``      5        per seat (``picks_left``)
105–109     ``LACKS``           5        per seat, bit f (``lacks``)
110–114     ``DRAW_LEN``        5        draw-pile size per seat
115–179     ``HAND``            5×13     cards per seat and figure (``hand``)
180–244     ``DRAW_CNT``        5×13     draw-pile cards per seat and figure (derived)
245–309     ``PLAYED``          5×13     per seat and figure (``played``)
310–374     ``RECYCLED``        5×13     per seat and figure (``recycled``)
375–439     ``TAKEN``           5×13     per seat and figure (``taken``)
440–504     ``BOX_CNT``         5×13     box cards per owner and figure (derived)
505–519     ``SLOTS``           5×3      slot figure or -1 (``slots``)
520–534     ``SLOT_OLD``        5×3      flags (``slot_old``)
535–549     ``SWAPPED``         5×3      flags (``swapped``)
550–1224    ``DRAW``            5×135    draw piles, bottom first (``draw``)
1225–1899   ``BOX``             675      box, bottom first: 32·owner + 2·figure + transparent
==========  ==================  =======  =====================================================

The box holds at most every card of the table (5 × 135); a pile at most one deck (135).
Kernels: per-row ``@njit`` functions, and one batch loop over rows for every operation (deal,
refresh, step, observe, random play) that runs serially below ``PARALLEL_FROM`` rows and with
``prange`` from there (a parallel region costs microseconds, more than a small batch takes).
The loops prefetch the columns before ``DRAW`` of the row ``PREFETCH_AHEAD`` rows ahead.

Per-row API, for the rollout twin (``rollout.py``) and for tests; ``st`` is one row, ``cfg``
and ``deck`` come from :func:`setup`:

===================================================  ========================================
``legal_row(st, cfg, out) -> int``                   ``rules.legal_actions`` into ``out``,
                                                     the count
``apply_row(st, cfg, deck, a, rngs, i) -> bool``     ``rules.apply_action`` drawing chance
                                                     from ``rngs[i]``; True at game over
``better_row(st, a, b) -> int``                      > 0 if seat ``a`` ranks above ``b``
                                                     (``rules.winners``' order), 0 if tied
``observe_row(st, seat, cfg, scale, shift, base,``   ``observation.encode(state, seat)``
``obs)``                                             into ``obs``
===================================================  ========================================
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from kdk_env import observation as O
from kdk_env import rules as R
from tablegym import kernels  # also sets OpenMP's wait policy before numba loads it
from tablegym.kernels import row_view
from tablegym.numba_cache import drop_stale

# Modules compiled into this file's cached kernels: one rule (tablegym/numba_cache.py).
CACHE_FROZEN = (kernels, O, R)
drop_stale(__file__, *CACHE_FROZEN)

# -- the column layout (see the module docstring) ------------------------------------------
P = R.MAX_PLAYERS  # 5
F = R.NUM_FIGURES  # 13
S = R.NUM_SLOTS  # 3
MAX_PILE = max(sum(d) for d in R.DECKS.values())  # 135
MAX_BOX = P * MAX_PILE
(
    PHASE, TO_PLAY, ROUND_IDX, ROUNDS_DONE, OPENER, LAST_WINNER, TOP, TOP_OWNER, DUTY, REOPENER,
    RESUME, SP_IN_ROUND, STEPS, TOPUPS, QLEN, FIN_LEN, ELIM_LEN, BOX_LEN, OVER, SOLO_START,
) = range(20)  # fmt: skip
QUEUE = 20
FINISH_ORDER = QUEUE + P
ELIM_ORDER = FINISH_ORDER + P
STATUS = ELIM_ORDER + P
PLACE = STATUS + P
ANNOUNCED = PLACE + P
ANN_MADE = ANNOUNCED + P
SERVES_SINCE = ANN_MADE + P
LAID_SINCE = SERVES_SINCE + P
COMBO_LEN = LAID_SINCE + P
COMBO_PTS = COMBO_LEN + P
SCORE = COMBO_PTS + P
LAST_SCORE = SCORE + P
FIRSTS = LAST_SCORE + P
COMBO_SUM = FIRSTS + P
LAST_PLACE = COMBO_SUM + P
PICKS_LEFT = LAST_PLACE + P
LACKS = PICKS_LEFT + P
DRAW_LEN = LACKS + P
HAND = DRAW_LEN + P
DRAW_CNT = HAND + P * F
PLAYED = DRAW_CNT + P * F
RECYCLED = PLAYED + P * F
TAKEN = RECYCLED + P * F
BOX_CNT = TAKEN + P * F
SLOTS = BOX_CNT + P * F
SLOT_OLD = SLOTS + P * S
SWAPPED = SLOT_OLD + P * S
DRAW = SWAPPED + P * S
BOX = DRAW + P * MAX_PILE
NUM_COLUMNS = BOX + MAX_BOX  # 1900
# The batch keeps its rows as int32 (every value fits: counts, seats, scores, box codes): a step
# reads a quarter of a row, and halving it made the Python-driven loop faster (see _at).
STATE_DTYPE = np.int32

# -- constants shared with rules.py ----------------------------------------------------------
TRAITOR, AMBASSADOR = R.TRAITOR, R.AMBASSADOR
ACTIVE, FINISHED, ELIMINATED = R.ACTIVE, R.FINISHED, R.ELIMINATED
PH_OPEN, PH_FREE_OPEN, PH_WINDOW, PH_DUTY, PH_FINISH = 0, 1, 2, 3, 4
PH_SP_DECLARE, PH_PICKING, PH_SWAP, PH_GAME_OVER = 5, 6, 7, 8
assert [int(p) for p in R.Phase] == list(range(9))
K_OPEN, K_SERVE, K_REDIRECT, K_THROW, K_FREE_OPEN = (int(k) for k in R.LayKind)
RESUME_NONE, RESUME_NEXT, RESUME_FREE_OPEN = R.RESUME_NONE, R.RESUME_NEXT, R.RESUME_FREE_OPEN
LAY_SLOT, PASS, FAIL, WEITER, ANNOUNCE, ABORT = (
    R.LAY_SLOT,
    R.PASS,
    R.FAIL,
    R.WEITER,
    R.ANNOUNCE,
    R.ABORT,
)
TOP_UP, TAKE_SLOT, SECURE, CLAIM_LATE, DECLARE_SP = (
    R.TOP_UP, R.TAKE_SLOT, R.SECURE, R.CLAIM_LATE, R.DECLARE_SP,
)  # fmt: skip
SLOT_SWAP, SLOT_PICK, NUM_ACTIONS = R.SLOT_SWAP, R.SLOT_PICK, R.NUM_ACTIONS
MIN_ANNOUNCE, MAX_ANNOUNCE = R.MIN_ANNOUNCE, R.MAX_ANNOUNCE
MAX_COMBO_PTS, MAX_TOPUPS, SP_THRESHOLD = R.MAX_COMBO_PTS, R.MAX_TOPUPS, R.SP_THRESHOLD
THROW_FIT = np.array(R.THROW_FIT, dtype=np.int64)  # [figure, top]
SERVE_FIT = np.array(R.SERVE_FIT, dtype=np.int64)
FIT_BITS = np.array(R.FIT_BITS, dtype=np.int64)  # bit f of [t]: f can be thrown onto t
SERVE_BITS = np.array(  # bit f of [t]: f fits t only under duty
    [sum(1 << f for f in range(R.NUM_FIGURES) if R.SERVE_FIT[f][t]) for t in range(R.NUM_FIGURES)],
    dtype=np.int64,
)
REWARD_CODES = {name: k for k, name in enumerate(R.REWARDS)}  # score 0, win 1
WIN = REWARD_CODES["win"]

# cfg: one int64 array of the options (``setup``)
C_N, C_LEVEL, C_ONE_COLOUR, C_AUTO, C_ROUNDS, C_MAX_STEPS, C_H, C_FS, C_REWARD, C_OPENER = range(10)
C_ROUNDS_SHOWN = 10
CFG_SIZE = 11

# -- observation offsets (kdk_env/observation.py's LAYOUT) -------------------------------------
_at = O.LAYOUT.at
OBS_SIZE = O.OBS_SIZE
O_HAND, O_OWN_DRAW = _at["hand"], _at["own_draw"]
O_HAND_COUNT, O_DRAW_COUNT, O_PLAYED_COUNT = (
    _at["hand_count"],
    _at["draw_count"],
    _at["played_count"],
)
O_PLAYED, O_RECYCLED, O_TAKEN, O_LACKS = _at["played"], _at["recycled"], _at["taken"], _at["lacks"]
O_PLACE, O_ANNOUNCED, O_ANN_MADE = _at["place"], _at["announced"], _at["ann_made"]
O_COMBO_LEN, O_SERVES_SINCE, O_LAID_SINCE = _at["combo_len"], _at["serves_since"], _at["laid_since"]
O_PICKS_LEFT, O_SCORE, O_LAST_SCORE = _at["picks_left"], _at["score"], _at["last_round_score"]
O_TOPUPS, O_ROUND, O_NUM_ROUNDS = _at["topups"], _at["round"], _at["num_rounds"]
O_DECK_MODE, O_AUTO_PASS, O_SOLO = _at["deck_mode"], _at["auto_pass"], _at["solo"]
O_SLOTS, O_BOX, O_TOP, O_TOP_OWNER = _at["slots"], _at["box"], _at["top"], _at["top_owner"]
O_DUTY, O_REOPENER, O_TO_PLAY, O_PHASE = _at["duty"], _at["reopener"], _at["to_play"], _at["phase"]
O_SEATS, O_STATUS, O_LEVEL = _at["seats"], _at["status"], _at["level"]
COMBO_CLIP, ROUNDS_SHOWN = O.COMBO_CLIP, O.ROUNDS_SHOWN

PARALLEL_FROM = 32  # rows; below this a serial loop beats a prange region (measured: 16-32)
CHUNK = 16  # rows per prange piece
PREFETCH_AHEAD = 2  # rows: the batch loops prefetch row i + 2 while working on row i

U32 = np.uint64(32)


def setup(config: Any) -> tuple:
    """``consts`` for the kernels: the options, the deck, the observation's affine map."""
    n = config.num_players
    cfg = np.zeros(CFG_SIZE, dtype=np.int64)
    cfg[C_N] = n
    cfg[C_LEVEL] = config.level
    cfg[C_ONE_COLOUR] = config.deck_mode == "one_colour"
    cfg[C_AUTO] = bool(config.auto_pass)
    cfg[C_ROUNDS] = config.num_rounds
    cfg[C_MAX_STEPS] = config.max_round_steps
    cfg[C_H] = config.hand_size
    cfg[C_FS] = config.finish_slots
    cfg[C_REWARD] = REWARD_CODES[config.reward]
    cfg[C_OPENER] = -1 if config.first_opener is None else config.first_opener
    cfg[C_ROUNDS_SHOWN] = min(config.num_rounds, ROUNDS_SHOWN)
    deck = np.array(config.deck, dtype=np.int64)
    # encode() maps raw values with LAYOUT.affine(**params(config)): the same (scale, shift).
    scale, shift = O.LAYOUT.affine(**O.params(config))
    scale = np.ascontiguousarray(scale, dtype=np.float32)
    shift = np.ascontiguousarray(shift, dtype=np.float32)
    # The stored value of a raw 0, computed as numpy does (0 * scale + shift), so that even the
    # sign of a zero matches encode() bit for bit.
    base = np.zeros(OBS_SIZE, dtype=np.float32)
    base *= scale
    base += shift
    return cfg, deck, scale, shift, base


# -- per-game generator ------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _below(rngs, i, bound):
    """A random int in 0..bound-1 (multiply-shift on the high 32 bits)."""
    return np.int64(((kernels.next_bits(rngs, i) >> U32) * np.uint64(bound)) >> U32)


@njit(cache=True)
def _shuffle(st, start, m, rngs, i):
    """Fisher-Yates on columns start..start+m-1."""
    for k in range(m - 1, 0, -1):
        j = _below(rngs, i, k + 1)
        t = st[start + k]
        st[start + k] = st[start + j]
        st[start + j] = t


# -- queries -----------------------------------------------------------------------------------


# Hot paths index with unsigned ints (``_at``, ``_put``, ``_set``): numba wraps a negative signed
# index around, two or three instructions per access, and seats read from the row (``p``) are
# signed. observe_row makes about 300 accesses: unsigned, with its figure blocks in one loop
# each, the Python-driven loop ran 1.10-1.17x faster per CPU second (bench_vector.py, B = 1024).
@njit(cache=True, inline="always")
def _at(st, j):
    """``st[j]`` for an index j >= 0."""
    return st[np.uint64(j)]


@njit(cache=True, inline="always")
def _set(out, j, value):
    """``out[j] = value`` for an index j >= 0."""
    out[np.uint64(j)] = value


@njit(cache=True, inline="always")
def _hand_len(st, p):
    s = 0
    for f in range(F):
        s += _at(st, HAND + F * p + f)
    return s


@njit(cache=True, inline="always")
def _num_active(st, n):
    c = 0
    for q in range(n):
        if _at(st, STATUS + q) == ACTIVE:
            c += 1
    return c


@njit(cache=True, inline="always")
def _any_announced(st, n):
    for q in range(n):
        if _at(st, ANNOUNCED + q) > 0:
            return True
    return False


@njit(cache=True, inline="always")
def _drawable(st, cfg, p):
    """§3.4 drawable(p): the draw pile at level 10, draw + played pile at levels 8–9."""
    d = _at(st, DRAW_LEN + p)
    if cfg[C_LEVEL] < 10:
        for f in range(F):
            d += _at(st, PLAYED + F * p + f)
    return d


@njit(cache=True, inline="always")
def _clockwise(p, k, n):
    """The seat ``k`` places clockwise of ``p`` (0 <= p < n, 0 <= k <= n) without a division:
    a division costs more than the rest of a seat lookup."""
    q = p + k
    return q - n if q >= n else q


@njit(cache=True, inline="always")
def _next_active(st, n, p):
    """§3.4 next_active(p): first ACTIVE seat after p, p itself last; -1 if none."""
    for k in range(1, n):
        q = _clockwise(p, k, n)
        if _at(st, STATUS + q) == ACTIVE:
            return q
    return p if _at(st, STATUS + p) == ACTIVE else -1


@njit(cache=True, inline="always")
def _ban_bits(st, cfg, p):
    """§3.3 level ≥ 9: bits of the figures p may not lay as OPEN or SERVE (traitor and
    ambassador bans); 0 without an active announcement."""
    if cfg[C_LEVEL] < 9:
        return 0
    count = 0
    other = False
    laid = False
    for q in range(cfg[C_N]):
        if _at(st, ANNOUNCED + q) > 0:
            count += 1
            if q != p:
                other = True
            if _at(st, LAID_SINCE + q):
                laid = True
    if count == 0:
        return 0
    if other and (count == 1 or laid):
        return (1 << TRAITOR) | (1 << AMBASSADOR)
    return 1 << TRAITOR


@njit(cache=True, inline="always")
def _lay_bits(st, cfg, p, ph, figures):
    """Of the figure bits ``figures``, those p may lay in a play phase (§3.5, bans §3.3)."""
    if ph == PH_OPEN:  # any hand figure, except what a ban forbids
        return figures & ~_ban_bits(st, cfg, p)
    if ph == PH_FREE_OPEN:  # any hand figure, only while still announced
        return figures if _at(st, ANNOUNCED + p) > 0 else 0
    t = st[TOP]
    if ph == PH_WINDOW:  # throws only
        return figures & FIT_BITS[t]
    # DUTY: a redirect, or a serve that no ban forbids
    return figures & (FIT_BITS[t] | (SERVE_BITS[t] & ~_ban_bits(st, cfg, p)))


@njit(cache=True)
def legal_row(st, cfg, out):
    """Write the sorted legal action ids of the seat to act into ``out``; return how many."""
    ph = st[PHASE]
    p = st[TO_PLAY]
    n = cfg[C_N]
    k = 0
    if ph == PH_GAME_OVER:
        return 0
    if ph == PH_FINISH:  # §3.5 FINISH
        target = _at(st, ANNOUNCED + p)
        if (
            target > 0
            and _at(st, COMBO_LEN + p) < target
            and _num_active(st, n) != 1
            and _drawable(st, cfg, p) >= 1
        ):
            _set(out, k, TOP_UP)
            k += 1
        _set(out, k, SECURE)
        k += 1
        if target == 0 and _at(st, COMBO_LEN + p) >= 3:
            _set(out, k, CLAIM_LATE)
            k += 1
        return k
    if ph == PH_SP_DECLARE:
        _set(out, 0, PASS)
        _set(out, 1, DECLARE_SP)
        return 2
    if ph == PH_PICKING:  # §6.3(4): the lowest empty slot first, else exchange an old figure
        _set(out, 0, PASS)
        k = 1
        empty = -1
        for s in range(S):
            if _at(st, SLOTS + S * p + s) < 0:
                empty = s
                break
        for s in range(S):
            if (empty >= 0 and s == empty) or (empty < 0 and _at(st, SLOT_OLD + S * p + s)):
                for f in range(F):
                    if _at(st, DRAW_CNT + F * p + f) > 0:
                        _set(out, k, SLOT_PICK + F * s + f)
                        k += 1
        return k
    if ph == PH_SWAP:  # §6.5
        _set(out, 0, PASS)
        k = 1
        for s in range(S):
            g = _at(st, SLOTS + S * p + s)
            if g >= 0 and not _at(st, SWAPPED + S * p + s):
                for f in range(F):
                    if _at(st, HAND + F * p + f) > 0 and f != g:
                        _set(out, k, SLOT_SWAP + F * s + f)
                        k += 1
        return k
    # play phases: OPEN, FREE_OPEN, WINDOW, DUTY (§3.5) and the free actions (§3.6)
    held = 0
    nhand = 0
    for f in range(F):
        c = _at(st, HAND + F * p + f)
        if c > 0:
            held |= 1 << f
            nhand += c
    lay = _lay_bits(st, cfg, p, ph, held)
    for f in range(F):
        if (lay >> f) & 1:
            _set(out, k, f)
            k += 1
    level10 = cfg[C_LEVEL] == 10
    if level10 and (ph == PH_WINDOW or ph == PH_DUTY):  # slots: level 10, never to open
        for s in range(S):
            f = _at(st, SLOTS + S * p + s)
            if f >= 0 and _lay_bits(st, cfg, p, ph, 1 << f):
                _set(out, k, LAY_SLOT + s)
                k += 1
    if ph == PH_FREE_OPEN or ph == PH_WINDOW:
        _set(out, k, PASS)
        k += 1
    else:
        _set(out, k, FAIL)
        k += 1
        if (
            ph == PH_DUTY
            and cfg[C_ONE_COLOUR]
            and _at(st, HAND + F * p + TRAITOR) >= 2
            and not (cfg[C_LEVEL] >= 9 and _any_announced(st, n))  # the traitor ban
        ):
            _set(out, k, WEITER)
            k += 1
    target = _at(st, ANNOUNCED + p)
    if target == 0 and not _at(st, ANN_MADE + p) and nhand >= 2:
        for a in range(ANNOUNCE, ABORT):
            _set(out, k, a)
            k += 1
    if target > 0 and cfg[C_LEVEL] >= 9:
        _set(out, k, ABORT)
        k += 1
    if (
        target > 0
        and st[TOPUPS] < MAX_TOPUPS
        and _at(st, COMBO_LEN + p) + nhand < target
        and _num_active(st, n) != 1
        and _drawable(st, cfg, p) >= 1
    ):
        _set(out, k, TOP_UP)
        k += 1
    if level10:
        for s in range(S):
            if _at(st, SLOTS + S * p + s) >= 0:
                _set(out, k, TAKE_SLOT + s)
                k += 1
    return k


@njit(cache=True)
def _has_throw(st, cfg, p):
    """Whether p holds a hand card or (level 10) slot figure that can be thrown (auto_pass)."""
    t = st[TOP]
    if t < 0:
        return False
    for f in range(F):
        if _at(st, HAND + F * p + f) > 0 and THROW_FIT[f, t]:
            return True
    if cfg[C_LEVEL] == 10:
        for s in range(S):
            f = _at(st, SLOTS + S * p + s)
            if f >= 0 and THROW_FIT[f, t]:
                return True
    return False


# -- procedures (§3.4) -------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _pop_queue(st):
    m = st[QLEN] - 1
    for j in range(m):
        st[QUEUE + j] = st[QUEUE + j + 1]
    st[QUEUE + m] = 0
    st[QLEN] = m


@njit(cache=True)
def _take(st, p, k):
    """Move up to k cards from the top of p's draw pile into the hand; the number moved."""
    m = st[DRAW_LEN + p]
    if k > m:
        k = m
    if k == 0:
        return 0
    at = DRAW + MAX_PILE * p
    for _ in range(k):
        m -= 1
        f = st[at + m]
        st[at + m] = 0
        st[HAND + F * p + f] += 1
        st[DRAW_CNT + F * p + f] -= 1
    st[DRAW_LEN + p] = m
    st[LACKS + p] = 0  # an unseen card may be any figure
    return k


@njit(cache=True)
def _empty_hand(st, p):
    """p's hand is gone: nothing is known about it any more."""
    for f in range(F):
        st[HAND + F * p + f] = 0
        st[TAKEN + F * p + f] = 0
    st[LACKS + p] = 0


@njit(cache=True, inline="always")
def _fail_combo(st, p):
    st[ANNOUNCED + p] = 0
    st[SERVES_SINCE + p] = 0
    st[LAID_SINCE + p] = 0


@njit(cache=True)
def _recycle(st, p, rngs, i):
    """§3.4 step 1: the played pile, shuffled, goes under the draw pile."""
    total = 0
    for f in range(F):
        total += st[PLAYED + F * p + f]
    if total == 0:
        return
    at = DRAW + MAX_PILE * p
    m = st[DRAW_LEN + p]
    for j in range(m - 1, -1, -1):
        st[at + j + total] = st[at + j]
    k = 0
    for f in range(F):
        c = st[PLAYED + F * p + f]
        st[RECYCLED + F * p + f] = c  # public: the bottom of the pile is this multiset
        st[DRAW_CNT + F * p + f] += c
        st[PLAYED + F * p + f] = 0
        for _ in range(c):
            st[at + k] = f
            k += 1
    _shuffle(st, at, total, rngs, i)
    st[DRAW_LEN + p] = m + total


@njit(cache=True)
def _sp_eliminate(st, cfg, p):
    """§3.4 / §6.4: hand and slots to the played pile; out of the round, lowest free place."""
    n = cfg[C_N]
    for f in range(F):
        st[PLAYED + F * p + f] += st[HAND + F * p + f]
    for s in range(S):
        f = st[SLOTS + S * p + s]
        if f >= 0:
            st[PLAYED + F * p + f] += 1
        st[SLOTS + S * p + s] = -1
    _empty_hand(st, p)
    _fail_combo(st, p)
    st[STATUS + p] = ELIMINATED
    st[ELIM_ORDER + st[ELIM_LEN]] = p
    st[ELIM_LEN] += 1
    st[PLACE + p] = n - st[ELIM_LEN] + 1
    st[SP_IN_ROUND] = 1
    if _num_active(st, n) == 0:
        st[OVER] = 1  # E2


@njit(cache=True)
def _draw(st, cfg, p, k, penalty, rngs, i):
    """§3.4 draw(p, k, penalty): recycle (levels 8–9) or shuffle pressure (level 10)."""
    if st[DRAW_LEN + p] < k:
        if cfg[C_LEVEL] == 10:
            _sp_eliminate(st, cfg, p)
            return
        _recycle(st, p, rngs, i)
    moved = _take(st, p, k)
    if penalty:  # also after a short draw (§3.4 step 3, inv. 41)
        st[COMBO_LEN + p] = 0
        if st[ANNOUNCED + p] > 0:
            _fail_combo(st, p)
    if moved > 0 and st[SOLO_START]:
        st[OVER] = 1  # E3: the solo player drew a card


@njit(cache=True)
def _box_to_played(st):
    """Every box card back to its owner's played pile (§3.4 interrupt, §5.3); the box empty."""
    for j in range(st[BOX_LEN]):
        e = st[BOX + j]
        st[PLAYED + F * (e >> 5) + ((e >> 1) & 15)] += 1
        st[BOX + j] = 0
    st[BOX_LEN] = 0
    for j in range(P * F):
        st[BOX_CNT + j] = 0
    st[TOP] = -1
    st[TOP_OWNER] = -1


@njit(cache=True, inline="always")
def _push_box(st, p, f, transparent):
    st[BOX + st[BOX_LEN]] = 32 * p + 2 * f + transparent
    st[BOX_LEN] += 1
    st[BOX_CNT + F * p + f] += 1


@njit(cache=True)
def _finish(st, cfg, p):
    """§3.4 finish(p); the F-th finish ends the round at once (E1)."""
    st[STATUS + p] = FINISHED
    st[FINISH_ORDER + st[FIN_LEN]] = p
    st[FIN_LEN] += 1
    st[PLACE + p] = st[FIN_LEN]
    _fail_combo(st, p)
    if st[FIN_LEN] >= cfg[C_FS] or _num_active(st, cfg[C_N]) == 0:
        st[OVER] = 1  # E1, E2


@njit(cache=True)
def _finish_check(st, cfg, p, resume):
    """§3.4 finish_check; True if play goes on (False: paused in FINISH or the round over)."""
    length = st[COMBO_LEN + p]
    target = st[ANNOUNCED + p]
    if target > 0 and length >= target:
        st[COMBO_PTS + p] = min(MAX_COMBO_PTS, target + (length - target) // 2)
        _finish(st, cfg, p)
        return st[OVER] == 0
    late = target == 0 and length >= 3
    topup = target > 0 and _num_active(st, cfg[C_N]) != 1 and _drawable(st, cfg, p) >= 1
    if not late and not topup:
        _finish(st, cfg, p)  # SECURE is the only option: automatic
        return st[OVER] == 0
    st[PHASE] = PH_FINISH
    st[TO_PLAY] = p
    st[RESUME] = resume
    return False


@njit(cache=True)
def _advance_window(st, cfg):
    """§3.4 advance_window: level-8 pause and auto_pass skips, then WINDOW or DUTY."""
    n = cfg[C_N]
    pause = cfg[C_LEVEL] == 8 and _any_announced(st, n)
    auto = cfg[C_AUTO] != 0
    while st[QLEN] > 0:
        q = st[QUEUE]
        if pause and st[ANNOUNCED + q] == 0:
            _pop_queue(st)
        elif auto and not _has_throw(st, cfg, q):
            # Public: q holds no hand figure that fits the top (§8.2 auto_pass).
            st[LACKS + q] |= FIT_BITS[st[TOP]]
            _pop_queue(st)
        else:
            break
    if st[QLEN] > 0:
        st[PHASE] = PH_WINDOW
        st[TO_PLAY] = st[QUEUE]
    else:
        st[PHASE] = PH_DUTY
        st[TO_PLAY] = st[DUTY]


@njit(cache=True)
def _open_window(st, cfg, p):
    """§3.4 open_window(p): the layer first, then clockwise; the duty holder excluded."""
    n = cfg[C_N]
    m = 0
    for k in range(n):
        q = _clockwise(p, k, n)
        if st[STATUS + q] == ACTIVE and q != st[DUTY]:
            st[QUEUE + m] = q
            m += 1
    for j in range(m, P):
        st[QUEUE + j] = 0
    st[QLEN] = m
    _advance_window(st, cfg)


@njit(cache=True)
def _continue(st, cfg, p, free_open):
    """§3.4 continue_after_lay: move the duty (it stays with R after a free open), open a window."""
    if not free_open:
        d = _next_active(st, cfg[C_N], p)
        if d < 0:
            st[OVER] = 1  # E2
            return
        st[DUTY] = d
    _open_window(st, cfg, p)


@njit(cache=True)
def _next_free_opener(st):
    """FREE_OPEN: the next candidate, else OPEN with R (§3.5)."""
    if st[QLEN] > 0:
        st[PHASE] = PH_FREE_OPEN
        st[TO_PLAY] = st[QUEUE]
    else:
        st[PHASE] = PH_OPEN
        st[TO_PLAY] = st[DUTY]


@njit(cache=True)
def _interrupt(st, cfg, e):
    """§3.4 interrupt(E): clear the box; R reopens; level ≥ 9 announcers may free-open."""
    n = cfg[C_N]
    _box_to_played(st)
    r = _next_active(st, n, e)
    if r < 0:
        st[OVER] = 1  # E2
        return
    st[DUTY] = r
    st[REOPENER] = r
    m = 0
    if cfg[C_LEVEL] >= 9:
        for k in range(1, n):
            q = _clockwise(r, k, n)
            if st[STATUS + q] == ACTIVE and st[ANNOUNCED + q] > 0:
                st[QUEUE + m] = q
                m += 1
    for j in range(m, P):
        st[QUEUE + j] = 0
    st[QLEN] = m
    _next_free_opener(st)


@njit(cache=True)
def _lay(st, cfg, p, f, src, kind, rngs, i):
    """§3.4 lay(p, f, src, kind); src = -1 for the hand, else the slot index."""
    if src < 0:
        st[HAND + F * p + f] -= 1
        if st[TAKEN + F * p + f] > 0:  # observers cannot tell which copy went
            st[TAKEN + F * p + f] -= 1
    else:
        st[SLOTS + S * p + src] = -1
    _push_box(st, p, f, 0)
    st[TOP] = f
    st[TOP_OWNER] = p
    announced = st[ANNOUNCED + p] > 0
    serve = kind == K_OPEN or kind == K_SERVE
    if serve:  # the serve itself is the first combo card (§4.1, inv. 15)
        st[COMBO_LEN + p] = 1
        if announced:
            st[SERVES_SINCE + p] += 1
    else:
        st[COMBO_LEN + p] += 1
    if announced:
        st[LAID_SINCE + p] = 1
    if f == TRAITOR:  # every traitor lay costs a penalty card (inv. 6)
        _draw(st, cfg, p, 1, True, rngs, i)
    elif announced and serve and st[SERVES_SINCE + p] == 2:  # "Strafe Kombo" (§4.3(2))
        _draw(st, cfg, p, 1, True, rngs, i)
    if st[OVER]:
        return
    free_open = kind == K_FREE_OPEN
    if st[STATUS + p] == ACTIVE and src < 0 and _hand_len(st, p) == 0:
        resume = RESUME_FREE_OPEN if free_open else RESUME_NEXT
        if not _finish_check(st, cfg, p, resume):
            return  # paused in FINISH, or the round is over
    _continue(st, cfg, p, free_open)


@njit(cache=True)
def _weiter(st, cfg, d, rngs, i):
    """§3.5 WEITER: two transparent traitors, two penalty cards, the duty moves on."""
    st[HAND + F * d + TRAITOR] -= 2
    t = st[TAKEN + F * d + TRAITOR]
    if t > 0:
        st[TAKEN + F * d + TRAITOR] = max(0, t - 2)
    _push_box(st, d, TRAITOR, 1)
    _push_box(st, d, TRAITOR, 1)
    _draw(st, cfg, d, 2, True, rngs, i)
    if st[OVER]:
        return
    if st[STATUS + d] == ACTIVE and _hand_len(st, d) == 0:
        if not _finish_check(st, cfg, d, RESUME_NEXT):
            return
    _continue(st, cfg, d, False)


@njit(cache=True)
def _after_free_elimination(st, cfg, p):
    """§3.6: an actor eliminated by a free action (ABORT at level 10)."""
    st[TOPUPS] = 0
    ph = st[PHASE]
    if ph == PH_WINDOW:
        _pop_queue(st)
        _advance_window(st, cfg)
    elif ph == PH_FREE_OPEN:
        _pop_queue(st)
        _next_free_opener(st)
    elif ph == PH_DUTY:  # the duty moves on; box kept, no new window
        d = _next_active(st, cfg[C_N], p)
        if d < 0:
            st[OVER] = 1  # E2
            return
        st[DUTY] = d
        st[TO_PLAY] = d
    else:
        _interrupt(st, cfg, p)


@njit(cache=True)
def _round_action(st, cfg, a, rngs, i):
    """One action of OPEN, FREE_OPEN, WINDOW, DUTY or FINISH (§3.5, §3.6)."""
    p = st[TO_PLAY]
    ph = st[PHASE]
    if ph == PH_FINISH:  # §3.5 FINISH, then resume the interrupted procedure
        resume = st[RESUME]
        st[RESUME] = RESUME_NONE
        st[TOPUPS] = 0
        if a == TOP_UP:
            _draw(st, cfg, p, 1, False, rngs, i)  # not a penalty: the combo stays alive
        else:
            if a == CLAIM_LATE:
                st[COMBO_PTS + p] = min(MAX_COMBO_PTS, st[COMBO_LEN + p] // 2)
            _finish(st, cfg, p)
        if not st[OVER]:
            _continue(st, cfg, p, resume == RESUME_FREE_OPEN)
    elif ANNOUNCE <= a < ABORT:  # free actions keep the decision (§3.6)
        st[ANNOUNCED + p] = a - ANNOUNCE + MIN_ANNOUNCE
        st[ANN_MADE + p] = 1
        st[SERVES_SINCE + p] = 0
        st[LAID_SINCE + p] = 0
    elif a == ABORT:
        _draw(st, cfg, p, 1, True, rngs, i)
        if not st[OVER] and st[STATUS + p] != ACTIVE:
            _after_free_elimination(st, cfg, p)
    elif a == TOP_UP:
        _draw(st, cfg, p, 1, False, rngs, i)
        st[TOPUPS] += 1
    elif TAKE_SLOT <= a < SECURE:
        s = a - TAKE_SLOT
        f = st[SLOTS + S * p + s]
        st[HAND + F * p + f] += 1
        st[TAKEN + F * p + f] += 1  # public: this figure is in the hand until laid
        st[SLOTS + S * p + s] = -1
    else:
        st[TOPUPS] = 0  # a terminal action ends the decision
        if a == FAIL:  # §3.5 OPEN/DUTY
            _draw(st, cfg, p, 1, True, rngs, i)
            if not st[OVER]:
                _interrupt(st, cfg, p)
        elif a == PASS:
            _pop_queue(st)
            if ph == PH_WINDOW:
                _advance_window(st, cfg)
            else:
                _next_free_opener(st)
        elif a == WEITER:
            _weiter(st, cfg, p, rngs, i)
        else:
            src = -1
            f = a
            if a >= LAY_SLOT:
                src = a - LAY_SLOT
                f = st[SLOTS + S * p + src]
            if ph == PH_OPEN:  # §3.2 classification
                kind = K_OPEN
            elif ph == PH_FREE_OPEN:
                kind = K_FREE_OPEN
            elif ph == PH_WINDOW:
                kind = K_THROW
            elif THROW_FIT[f, st[TOP]]:
                kind = K_REDIRECT
            else:
                kind = K_SERVE
            _lay(st, cfg, p, f, src, kind, rngs, i)


# -- rounds (§3.4 start_round, §5, §6) ---------------------------------------------------------


@njit(cache=True)
def _reset_round_state(st, n):
    """§5.3 / §3.4 start_round: per-round fields back to their start values."""
    for q in range(P):
        st[STATUS + q] = ACTIVE if q < n else 0
        st[PLACE + q] = 0
        st[ANNOUNCED + q] = 0
        st[ANN_MADE + q] = 0
        st[SERVES_SINCE + q] = 0
        st[LAID_SINCE + q] = 0
        st[COMBO_LEN + q] = 0
        st[COMBO_PTS + q] = 0
        st[PICKS_LEFT + q] = 0
        st[QUEUE + q] = 0
        st[FINISH_ORDER + q] = 0
        st[ELIM_ORDER + q] = 0
    st[FIN_LEN] = 0
    st[ELIM_LEN] = 0
    _box_to_played(st)  # the box is already empty here; this clears top and top_owner
    st[DUTY] = -1
    st[REOPENER] = -1
    st[QLEN] = 0
    st[RESUME] = RESUME_NONE
    st[SP_IN_ROUND] = 0
    st[STEPS] = 0
    st[TOPUPS] = 0


@njit(cache=True)
def _start_round(st, n):
    """§3.4 start_round: the opener opens."""
    _reset_round_state(st, n)
    st[PHASE] = PH_OPEN
    st[DUTY] = st[OPENER]
    st[TO_PLAY] = st[OPENER]


@njit(cache=True)
def _fill_pile(st, p, counts_p, deck, rngs, i):
    """p's draw pile = the deck minus ``counts_p`` (slot figures), shuffled."""
    at = DRAW + MAX_PILE * p
    k = 0
    for f in range(F):
        c = deck[f] - counts_p[f]
        st[DRAW_CNT + F * p + f] = c
        for _ in range(c):
            st[at + k] = f
            k += 1
    for j in range(k, MAX_PILE):
        st[at + j] = 0
    _shuffle(st, at, k, rngs, i)
    st[DRAW_LEN + p] = k


@njit(cache=True)
def _deal_row(st, rngs, i, cfg, deck):
    """§2.5 reset: shuffle every pile, pick the round-1 opener, deal h cards each, round 1."""
    n = cfg[C_N]
    for k in range(NUM_COLUMNS):
        st[k] = 0
    for q in range(P):
        for s in range(S):
            st[SLOTS + S * q + s] = -1
    none = np.zeros(F, dtype=np.int64)
    for p in range(n):
        _fill_pile(st, p, none, deck, rngs, i)
    opener = cfg[C_OPENER]
    st[OPENER] = _below(rngs, i, n) if opener < 0 else opener
    st[ROUND_IDX] = 1
    st[LAST_WINNER] = -1
    for p in range(n):
        _take(st, p, cfg[C_H])
    _start_round(st, n)


@njit(cache=True)
def _hands_back(st, n):
    """Dealt hand cards go back onto the draw piles, in figure order (§6.2)."""
    for p in range(n):
        at = DRAW + MAX_PILE * p
        m = st[DRAW_LEN + p]
        for f in range(F):
            c = st[HAND + F * p + f]
            st[DRAW_CNT + F * p + f] += c
            for _ in range(c):
                st[at + m] = f
                m += 1
        st[DRAW_LEN + p] = m
        _empty_hand(st, p)


@njit(cache=True)
def _reset_piles(st, cfg, deck, rngs, i):
    """§6.3(5) RESET: every card but the slot figures forms a new shuffled pile; deal h."""
    n = cfg[C_N]
    held = np.zeros(F, dtype=np.int64)
    for p in range(n):
        for f in range(F):
            held[f] = 0
        for s in range(S):
            f = st[SLOTS + S * p + s]
            if f >= 0:
                held[f] += 1
        _fill_pile(st, p, held, deck, rngs, i)
        _empty_hand(st, p)
        for f in range(F):
            st[PLAYED + F * p + f] = 0
    for p in range(n):
        _take(st, p, cfg[C_H])
    for j in range(P * S):
        st[SLOT_OLD + j] = 0
    _start_round(st, n)


@njit(cache=True)
def _next_picker(st, cfg, deck, rngs, i):
    if st[QLEN] > 0:
        st[PHASE] = PH_PICKING
        st[TO_PLAY] = st[QUEUE]
    else:
        _reset_piles(st, cfg, deck, rngs, i)


@njit(cache=True)
def _distribute(st, cfg, excluded, deck, rngs, i):
    """§6.3 steps 1–3: counts, grants (2 for the highest count, 1 for the second), pick order."""
    n = cfg[C_N]
    counts = np.empty(P, dtype=np.int64)
    none = -(1 << 40)  # below any count (a count may be negative: slots are subtracted)
    v1 = none
    for p in range(n):
        c = st[DRAW_LEN + p]
        for s in range(S):
            if st[SLOTS + S * p + s] >= 0:
                c -= 1
        counts[p] = c
        if not excluded[p] and c > v1:
            v1 = c
    v2 = none
    for p in range(n):
        if not excluded[p] and v2 < counts[p] < v1:
            v2 = counts[p]
    m = 0
    opener = st[OPENER]
    for g in range(2):
        value = v1 if g == 0 else v2
        if value == none:
            continue  # fewer than two distinct counts (or nobody eligible)
        for k in range(n):
            p = (opener + k) % n
            if not excluded[p] and counts[p] == value:
                st[PICKS_LEFT + p] = 2 - g
                st[QUEUE + m] = p
                m += 1
    st[QLEN] = m
    for p in range(P):
        for s in range(S):
            st[SLOT_OLD + S * p + s] = 1 if p < n and st[SLOTS + S * p + s] >= 0 else 0
    _next_picker(st, cfg, deck, rngs, i)


@njit(cache=True)
def _start_swaps(st, cfg):
    """§6.2 step 5 / §6.5: slot holders swap, clockwise from the opener."""
    n = cfg[C_N]
    m = 0
    for k in range(n):
        p = (st[OPENER] + k) % n
        for s in range(S):
            if st[SLOTS + S * p + s] >= 0:
                st[QUEUE + m] = p
                m += 1
                break
    st[QLEN] = m
    for j in range(P * S):
        st[SWAPPED + j] = 0
    if m > 0:
        st[PHASE] = PH_SWAP
        st[TO_PLAY] = st[QUEUE]
    else:
        _start_round(st, n)


@njit(cache=True)
def _deal_level10(st, cfg, deck, rngs, i):
    """§6.2 steps 2–4: deal attempt (T2), automatic SP (T3a), else SP_DECLARE."""
    n = cfg[C_N]
    h = cfg[C_H]
    excluded = np.zeros(P, dtype=np.int64)
    shorts = 0
    for p in range(n):
        if st[DRAW_LEN + p] < h:
            excluded[p] = 1
            shorts += 1
    if shorts > 0:  # T2 (nobody is dealt: dealt hands would go straight back)
        if shorts == n:
            excluded[:] = 0
        _distribute(st, cfg, excluded, deck, rngs, i)
        return
    for p in range(n):
        _take(st, p, h)
    low = 0
    for p in range(n):
        if st[DRAW_LEN + p] < SP_THRESHOLD:
            low += 1
    if low == n:  # T3a
        _hands_back(st, n)
        _distribute(st, cfg, excluded, deck, rngs, i)
        return
    st[PHASE] = PH_SP_DECLARE
    for k in range(n):
        st[QUEUE + k] = (st[OPENER] + k) % n
    st[QLEN] = n
    st[TO_PLAY] = st[QUEUE]


@njit(cache=True)
def _end_round(st, cfg, deck, rngs, i):
    """§5: places, scores, cleanup; then the next round (§6) or GAME_OVER."""
    n = cfg[C_N]
    st[SOLO_START] = 0
    # §5.1: finishers and the eliminated are placed; active players by fewer hand cards, ties
    # clockwise from the opener.
    place = np.empty(P, dtype=np.int64)
    keys = np.empty(P, dtype=np.int64)
    rest = np.empty(P, dtype=np.int64)
    m = 0
    for q in range(n):
        place[q] = st[PLACE + q]
        if st[STATUS + q] == ACTIVE:
            key = _hand_len(st, q) * 8 + (q - st[OPENER] + n) % n
            j = m
            while j > 0 and keys[j - 1] > key:  # insertion sort by key
                keys[j] = keys[j - 1]
                rest[j] = rest[j - 1]
                j -= 1
            keys[j] = key
            rest[j] = q
            m += 1
    for j in range(m):
        place[rest[j]] = st[FIN_LEN] + 1 + j
    winner = -1
    for q in range(n):
        pts = st[COMBO_PTS + q] if st[STATUS + q] == FINISHED else 0
        st[LAST_SCORE + q] = pts - place[q]
        st[SCORE + q] += pts - place[q]
        st[COMBO_SUM + q] += pts
        if place[q] == 1:
            st[FIRSTS + q] += 1
            if winner < 0:
                winner = q
        st[LAST_PLACE + q] = place[q]
    st[LAST_WINNER] = winner
    st[ROUNDS_DONE] += 1
    _box_to_played(st)  # §5.3 cleanup
    for q in range(n):
        for f in range(F):
            st[PLAYED + F * q + f] += st[HAND + F * q + f]
        _empty_hand(st, q)
    eliminated = np.zeros(P, dtype=np.int64)
    for q in range(n):
        eliminated[q] = st[STATUS + q] == ELIMINATED
    sp_in_round = st[SP_IN_ROUND]
    _reset_round_state(st, n)
    if st[ROUND_IDX] >= cfg[C_ROUNDS]:
        st[PHASE] = PH_GAME_OVER
        st[TO_PLAY] = -1
        return
    st[ROUND_IDX] += 1
    st[OPENER] = st[LAST_WINNER]
    if cfg[C_LEVEL] < 10:  # §6.1 recycling levels
        for q in range(n):
            _draw(st, cfg, q, cfg[C_H], False, rngs, i)
        _start_round(st, n)
    elif sp_in_round:  # §6.2 T1
        _distribute(st, cfg, eliminated, deck, rngs, i)
    else:
        _deal_level10(st, cfg, deck, rngs, i)


@njit(cache=True)
def _between_action(st, cfg, a, deck, rngs, i):
    """SP_DECLARE, SLOT_PICK and SWAP actions (§6.2–6.5)."""
    p = st[TO_PLAY]
    ph = st[PHASE]
    n = cfg[C_N]
    if ph == PH_SP_DECLARE:
        if a == DECLARE_SP:  # T3v: the first declaration ends the phase
            _hands_back(st, n)
            excluded = np.zeros(P, dtype=np.int64)
            excluded[p] = 1
            _distribute(st, cfg, excluded, deck, rngs, i)
            return
        _pop_queue(st)
        if st[QLEN] > 0:
            st[TO_PLAY] = st[QUEUE]
        else:
            _start_swaps(st, cfg)
    elif ph == PH_PICKING:
        if a == PASS:
            st[PICKS_LEFT + p] = 0
        else:  # §6.3(4) SLOT_PICK(s, f): f leaves the pile; an old figure goes back on top
            s = (a - SLOT_PICK) // F
            f = (a - SLOT_PICK) % F
            at = DRAW + MAX_PILE * p
            m = st[DRAW_LEN + p]
            j = 0
            while st[at + j] != f:  # the lowest copy, as list.remove takes
                j += 1
            for k in range(j, m - 1):
                st[at + k] = st[at + k + 1]
            m -= 1
            st[DRAW_CNT + F * p + f] -= 1
            old = st[SLOTS + S * p + s]
            if old >= 0:
                st[at + m] = old
                m += 1
                st[DRAW_CNT + F * p + old] += 1
            else:
                st[at + m] = 0
            st[DRAW_LEN + p] = m
            st[SLOTS + S * p + s] = f
            st[SLOT_OLD + S * p + s] = 0
            st[PICKS_LEFT + p] -= 1
        if st[PICKS_LEFT + p] == 0:
            _pop_queue(st)
        _next_picker(st, cfg, deck, rngs, i)
    elif a == PASS:  # SWAP
        _pop_queue(st)
        if st[QLEN] > 0:
            st[TO_PLAY] = st[QUEUE]
        else:
            _start_round(st, n)
    else:  # SLOT_SWAP(s, f): slot figure and hand card change places
        s = (a - SLOT_SWAP) // F
        f = (a - SLOT_SWAP) % F
        g = st[SLOTS + S * p + s]
        st[HAND + F * p + f] -= 1
        st[HAND + F * p + g] += 1
        if st[TAKEN + F * p + f] > 0:  # as for a lay: one known copy fewer
            st[TAKEN + F * p + f] -= 1
        st[TAKEN + F * p + g] += 1
        st[SLOTS + S * p + s] = f
        st[SWAPPED + S * p + s] = 1


@njit(cache=True)
def apply_row(st, cfg, deck, a, rngs, i):
    """Apply legal action a to the row; True if the game is over."""
    if st[PHASE] <= PH_FINISH:
        st[STEPS] += 1
        st[OVER] = 0
        st[SOLO_START] = _num_active(st, cfg[C_N]) == 1
        _round_action(st, cfg, a, rngs, i)
        if st[OVER] or (st[PHASE] <= PH_FINISH and st[STEPS] >= cfg[C_MAX_STEPS]):
            _end_round(st, cfg, deck, rngs, i)  # E1–E3, or the step cap E4
        st[OVER] = 0
        st[SOLO_START] = 0
    else:
        _between_action(st, cfg, a, deck, rngs, i)
    return st[PHASE] == PH_GAME_OVER


@njit(cache=True)
def _rewards_row(st, cfg, before_done, before_over, out):
    """rules.rewards: round scores when a round is scored, or ±1 at the game's end (win)."""
    n = cfg[C_N]
    if cfg[C_REWARD] != WIN:
        if st[ROUNDS_DONE] > before_done:
            for q in range(n):
                out[q] = st[LAST_SCORE + q]
        return
    if st[PHASE] == PH_GAME_OVER and not before_over:
        # §5.4: highest total; then more 1st places, more combo points, a better last place.
        best = 0
        for q in range(n):
            if q == 0 or better_row(st, q, best) > 0:
                best = q
        for q in range(n):
            out[q] = 1.0 if better_row(st, q, best) == 0 else -1.0


@njit(cache=True)
def better_row(st, a, b):
    """Compare the §5.4 keys of seats a and b: >0 if a ranks higher, 0 if tied."""
    if st[SCORE + a] != st[SCORE + b]:
        return st[SCORE + a] - st[SCORE + b]
    if st[FIRSTS + a] != st[FIRSTS + b]:
        return st[FIRSTS + a] - st[FIRSTS + b]
    if st[COMBO_SUM + a] != st[COMBO_SUM + b]:
        return st[COMBO_SUM + a] - st[COMBO_SUM + b]
    return st[LAST_PLACE + b] - st[LAST_PLACE + a]


# -- observation (kdk_env/observation.py encode) -----------------------------------------------


@njit(cache=True, inline="always")
def _put(obs, j, raw, scale, shift):
    """Store raw value ``raw`` at index j: float32 multiply, then float32 add, as numpy does."""
    k = np.uint64(j)
    obs[k] = np.float32(raw) * scale[k] + shift[k]


@njit(cache=True, inline="always")
def _put_figures(obs, o, st, at, scale, shift):
    """The F raw counts ``st[at : at + F]`` stored at ``obs[o : o + F]``; nothing to store
    when they are all 0, as ``obs`` holds the stored value of a raw 0 already (``base``)."""
    # Recycled, taken and lacked figures are usually none: a branch per block of 13 (well
    # predicted, unlike one per value) skips their puts.
    nonzero = 0
    for f in range(F):
        nonzero |= _at(st, at + f)
    if nonzero:
        for f in range(F):
            _put(obs, o + f, _at(st, at + f), scale, shift)


@njit(cache=True)
def observe_row(st, seat, cfg, scale, shift, base, obs):
    """observation.encode(state, seat): raw values by field, then the layout's affine map."""
    n = cfg[C_N]
    for j in range(OBS_SIZE):  # an explicit loop: numba's slice assignment is slower
        obs[j] = base[j]
    _put_figures(obs, O_HAND, st, HAND + F * seat, scale, shift)
    _put_figures(obs, O_OWN_DRAW, st, DRAW_CNT + F * seat, scale, shift)
    active = 0
    for r in range(n):
        q = _clockwise(seat, r, n)
        status = _at(st, STATUS + q)
        if status == ACTIVE:
            active += 1
        _put(obs, O_STATUS + 3 * r + status, 1, scale, shift)
        _put(obs, O_SEATS + r, 1, scale, shift)
        held = 0
        played = 0
        for f in range(F):
            held += _at(st, HAND + F * q + f)
            c = _at(st, PLAYED + F * q + f)
            played += c
            _put(obs, O_PLAYED + F * r + f, c, scale, shift)
        lacks = _at(st, LACKS + q)
        if lacks:
            for f in range(F):
                _put(obs, O_LACKS + F * r + f, (lacks >> f) & 1, scale, shift)
        _put_figures(obs, O_RECYCLED + F * r, st, RECYCLED + F * q, scale, shift)
        _put_figures(obs, O_TAKEN + F * r, st, TAKEN + F * q, scale, shift)
        _put_figures(obs, O_BOX + F * r, st, BOX_CNT + F * q, scale, shift)
        _put(obs, O_HAND_COUNT + r, held, scale, shift)
        _put(obs, O_DRAW_COUNT + r, _at(st, DRAW_LEN + q), scale, shift)
        _put(obs, O_PLAYED_COUNT + r, played, scale, shift)
        _put(obs, O_COMBO_LEN + r, min(_at(st, COMBO_LEN + q), COMBO_CLIP), scale, shift)
        _put(obs, O_SCORE + r, _at(st, SCORE + q), scale, shift)
        _put(obs, O_LAST_SCORE + r, _at(st, LAST_SCORE + q), scale, shift)
        # The announcement fields are 0 for a player who has not announced.
        if _at(st, ANN_MADE + q):
            _put(obs, O_ANN_MADE + r, 1, scale, shift)
            _put(obs, O_ANNOUNCED + r, _at(st, ANNOUNCED + q), scale, shift)
            _put(obs, O_SERVES_SINCE + r, _at(st, SERVES_SINCE + q), scale, shift)
            _put(obs, O_LAID_SINCE + r, _at(st, LAID_SINCE + q), scale, shift)
        _put(obs, O_PLACE + r, _at(st, PLACE + q), scale, shift)
        _put(obs, O_PICKS_LEFT + r, _at(st, PICKS_LEFT + q), scale, shift)
        for s in range(S):
            f = _at(st, SLOTS + S * q + s)
            if f >= 0:
                _put(obs, O_SLOTS + F * (S * r + s) + f, 1, scale, shift)
    if st[TOP_OWNER] >= 0:
        _put(obs, O_TOP_OWNER + _clockwise(st[TOP_OWNER], n - seat, n), 1, scale, shift)
    if st[DUTY] >= 0:
        _put(obs, O_DUTY + _clockwise(st[DUTY], n - seat, n), 1, scale, shift)
    if st[REOPENER] >= 0:
        _put(obs, O_REOPENER + _clockwise(st[REOPENER], n - seat, n), 1, scale, shift)
    if st[TO_PLAY] >= 0:
        _put(obs, O_TO_PLAY + _clockwise(st[TO_PLAY], n - seat, n), 1, scale, shift)
    if st[TOP] >= 0:
        _put(obs, O_TOP + st[TOP], 1, scale, shift)
    ph = st[PHASE]
    _put(obs, O_PHASE + ph, 1, scale, shift)
    _put(obs, O_TOPUPS, st[TOPUPS], scale, shift)
    _put(obs, O_ROUND, st[ROUND_IDX], scale, shift)
    _put(obs, O_NUM_ROUNDS, cfg[C_ROUNDS_SHOWN], scale, shift)
    _put(obs, O_DECK_MODE, 1 - cfg[C_ONE_COLOUR], scale, shift)
    _put(obs, O_AUTO_PASS, cfg[C_AUTO], scale, shift)
    _put(obs, O_SOLO, 1 if ph <= PH_FINISH and active == 1 else 0, scale, shift)
    _put(obs, O_LEVEL + cfg[C_LEVEL] - 8, 1, scale, shift)


@njit(cache=True)
def _mask_row(st, cfg, legal, mask):
    """The legal-action mask of the seat to act (``legal``: scratch of NUM_ACTIONS)."""
    for j in range(NUM_ACTIONS):
        mask[j] = False
    k = legal_row(st, cfg, legal)
    for j in range(k):
        _set(mask, legal[j], True)


@njit(cache=True, inline="always")
def _step_row(i, states, rngs, consts, actions, rewards, done):
    """Step game i and redeal it if it ended (what its next player sees: :func:`_row_op`)."""
    cfg, deck = consts[0], consts[1]
    st = row_view(states, i)
    before_done = st[ROUNDS_DONE]
    before_over = st[PHASE] == PH_GAME_OVER
    over = apply_row(st, cfg, deck, actions[i], rngs, i)
    _rewards_row(st, cfg, before_done, before_over, row_view(rewards, i))
    if over:
        done[i] = True
        _deal_row(st, rngs, i, cfg, deck)


# -- batch kernels: one serial and one parallel loop over rows, for every operation -----------
# One pair of loops dispatching on ``op`` rather than a pair per operation: numba compiles a
# parallel loop for seconds each, and five of them doubled the cold compile time. The dispatch
# (``_row_op``) and the step (``_step_row``) are inlined into the loops: as calls, each of their
# dozen array arguments cost an atomic reference-count increment and decrement per row (the
# step kernel was 1.4x slower). The mask and the observation stay calls (one call site each):
# inlined, they made the loop 1.03-1.05x faster per CPU second and the cold compile 40% longer
# (28 to 40 s of CPU).


@intrinsic
def _prefetch(typingctx, array, i, j):
    """Ask the CPU to fetch the cache line of ``array[i, j]`` (llvm.prefetch: read, keep)."""

    def codegen(context, builder, signature, args):
        arrayty = signature.args[0]
        ary = context.make_array(arrayty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, arrayty, ary, args[1:])
        i32 = ir.IntType(32)
        voidptr = cgutils.voidptr_t
        fnty = ir.FunctionType(ir.VoidType(), [voidptr, i32, i32, i32])
        fn = builder.module.declare_intrinsic("llvm.prefetch", [voidptr], fnty)
        flags = [ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)]
        builder.call(fn, [builder.bitcast(ptr, voidptr), *flags])
        return context.get_dummy_value()

    return types.none(array, i, j), codegen


@njit(cache=True, inline="always")
def _prefetch_row(states, i):
    """Start fetching the columns before the piles of row i (if any): a step reads most of
    them, and at B = 1024 the rows (15 KB each) are in L3 or memory, not in L2."""
    if i < states.shape[0]:
        for j in range(0, DRAW, 64 // states.itemsize):  # one cache line each
            _prefetch(states, i, j)


OP_DEAL, OP_REFRESH, OP_STEP, OP_OBSERVE, OP_RANDOM = range(5)


@njit(cache=True)
def _random_row(i, states, rngs, consts, num_steps, legal):
    """``num_steps`` uniformly random legal actions in game i, redealing finished games."""
    cfg, deck = consts[0], consts[1]
    out = np.zeros(P, dtype=np.float32)
    st = row_view(states, i)
    for _ in range(num_steps):
        k = legal_row(st, cfg, legal)
        before_done = st[ROUNDS_DONE]
        over = apply_row(st, cfg, deck, legal[_below(rngs, i, k)], rngs, i)
        _rewards_row(st, cfg, before_done, False, out)
        if over:
            _deal_row(st, rngs, i, cfg, deck)


@njit(cache=True, inline="always")
def _row_op(
    op, i, states, rngs, consts, actions, obs, mask, seat, rewards, done, seats, num_steps, legal
):
    """Operation ``op`` on row i (``legal``: scratch of NUM_ACTIONS)."""
    _prefetch_row(states, i + PREFETCH_AHEAD)  # the step kernel 1.3x faster at B = 1024
    cfg, deck, scale, shift, base = consts
    st = row_view(states, i)
    if op == OP_DEAL:
        _deal_row(st, rngs, i, cfg, deck)
    elif op == OP_RANDOM:
        _random_row(i, states, rngs, consts, num_steps, legal)
    else:  # one call site each for the mask and the observation
        if op == OP_STEP:
            _step_row(i, states, rngs, consts, actions, rewards, done)
        observer = seats[i] if op == OP_OBSERVE else st[TO_PLAY]
        if op != OP_OBSERVE:
            seat[i] = observer
            _mask_row(st, cfg, legal, row_view(mask, i))
        observe_row(st, observer, cfg, scale, shift, base, row_view(obs, i))


@njit(cache=True)
def _serial(op, states, rngs, consts, actions, obs, mask, seat, rewards, done, seats, num_steps):
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    for i in range(states.shape[0]):
        _row_op(op, i, states, rngs, consts, actions, obs, mask, seat, rewards, done, seats,
                num_steps, legal)  # fmt: skip


@njit(cache=True, parallel=True)
def _parallel(op, states, rngs, consts, actions, obs, mask, seat, rewards, done, seats, num_steps):
    size = states.shape[0]
    for k in prange((size + CHUNK - 1) // CHUNK):
        legal = np.empty(NUM_ACTIONS, dtype=np.int64)  # scratch per piece, not per row
        for i in range(k * CHUNK, min(size, k * CHUNK + CHUNK)):
            _row_op(op, i, states, rngs, consts, actions, obs, mask, seat, rewards, done, seats,
                    num_steps, legal)  # fmt: skip


# Stand-ins for the arguments an operation does not use (never read or written).
_NO_INT = np.zeros(0, dtype=np.int64)
_NO_RNG = np.ones(1, dtype=np.uint64)
_NO_OBS = np.zeros((0, OBS_SIZE), dtype=np.float32)
_NO_MASK = np.zeros((0, NUM_ACTIONS), dtype=bool)
_NO_REWARDS = np.zeros((0, P), dtype=np.float32)
_NO_DONE = np.zeros(0, dtype=bool)


def _run(op, states, rngs=_NO_RNG, consts=None, actions=_NO_INT, obs=_NO_OBS, mask=_NO_MASK,
         seat=_NO_INT, rewards=_NO_REWARDS, done=_NO_DONE, seats=_NO_INT, num_steps=0):  # fmt: skip
    kernel = _parallel if states.shape[0] >= PARALLEL_FROM else _serial
    kernel(op, states, rngs, consts, actions, obs, mask, seat, rewards, done, seats,
           np.int64(num_steps))  # fmt: skip


# -- the contract (tablegym/vector/engine.py) --------------------------------------------------


def deal(states: np.ndarray, rngs: np.ndarray, consts: tuple) -> None:
    """Deal a new game in every row."""
    _run(OP_DEAL, states, rngs, consts)


def refresh(
    states: np.ndarray, consts: tuple, obs: np.ndarray, mask: np.ndarray, seat: np.ndarray
) -> None:
    """Write every row's observation of the seat to act, its legal-action mask and that seat."""
    _run(OP_REFRESH, states, consts=consts, obs=obs, mask=mask, seat=seat)


def step(
    states: np.ndarray,
    rngs: np.ndarray,
    consts: tuple,
    actions: np.ndarray,
    obs: np.ndarray,
    mask: np.ndarray,
    seat: np.ndarray,
    rewards: np.ndarray,
    done: np.ndarray,
) -> None:
    """Apply ``actions`` (legal), write rewards and done, redeal finished games, refresh."""
    _run(OP_STEP, states, rngs, consts, actions, obs, mask, seat, rewards, done)


def observe(states: np.ndarray, consts: tuple, seats: np.ndarray, obs: np.ndarray) -> None:
    """The observation of ``seats[i]`` in every row i."""
    _run(OP_OBSERVE, states, consts=consts, obs=obs, seats=seats)


def random_play(states: np.ndarray, rngs: np.ndarray, consts: tuple, num_steps: int) -> int:
    """``num_steps`` uniformly random legal actions in every row, inside numba; steps taken."""
    _run(OP_RANDOM, states, rngs, consts, num_steps=num_steps)
    return states.shape[0] * num_steps


# -- conversions to and from the readable core -------------------------------------------------


def to_state(row: np.ndarray, config: Any) -> R.State:
    """The readable ``rules.State`` of one row."""
    n = config.num_players
    v = np.asarray(row).tolist()  # Python ints, at C speed

    def seats(at: int, kind: type = int) -> tuple:
        return tuple(kind(x) for x in v[at : at + n])

    def per_seat(at: int, width: int, kind: type = int) -> tuple:
        return tuple(
            tuple(kind(x) for x in v[at + width * q : at + width * (q + 1)]) for q in range(n)
        )

    box = []
    for e in v[BOX : BOX + v[BOX_LEN]]:
        box.append((e >> 5, (e >> 1) & 15, bool(e & 1)))
    draw = tuple(
        tuple(v[DRAW + MAX_PILE * q : DRAW + MAX_PILE * q + v[DRAW_LEN + q]]) for q in range(n)
    )
    return R.State(
        config=config,
        phase=R.Phase(v[PHASE]),
        to_play=v[TO_PLAY],
        round_idx=v[ROUND_IDX],
        rounds_done=v[ROUNDS_DONE],
        opener=v[OPENER],
        last_winner=v[LAST_WINNER],
        hand=per_seat(HAND, F),
        draw=draw,
        played=per_seat(PLAYED, F),
        slots=per_seat(SLOTS, S),
        box=tuple(box),
        top=v[TOP],
        top_owner=v[TOP_OWNER],
        status=seats(STATUS),
        place=seats(PLACE),
        finish_order=tuple(v[FINISH_ORDER : FINISH_ORDER + v[FIN_LEN]]),
        elim_order=tuple(v[ELIM_ORDER : ELIM_ORDER + v[ELIM_LEN]]),
        announced=seats(ANNOUNCED),
        ann_made=seats(ANN_MADE, bool),
        serves_since=seats(SERVES_SINCE),
        laid_since=seats(LAID_SINCE, bool),
        combo_len=seats(COMBO_LEN),
        combo_pts=seats(COMBO_PTS),
        duty=v[DUTY],
        reopener=v[REOPENER],
        queue=tuple(v[QUEUE : QUEUE + v[QLEN]]),
        resume=v[RESUME],
        sp_in_round=bool(v[SP_IN_ROUND]),
        steps=v[STEPS],
        topups=v[TOPUPS],
        score=seats(SCORE),
        last_score=seats(LAST_SCORE),
        firsts=seats(FIRSTS),
        combo_sum=seats(COMBO_SUM),
        last_place=seats(LAST_PLACE),
        picks_left=seats(PICKS_LEFT),
        slot_old=per_seat(SLOT_OLD, S, bool),
        swapped=per_seat(SWAPPED, S, bool),
        recycled=per_seat(RECYCLED, F),
        taken=per_seat(TAKEN, F),
        lacks=seats(LACKS),
    )


def from_state(state: R.State, config: Any) -> np.ndarray:
    """The row of a readable ``rules.State`` (ValueError if it does not fit these options)."""
    if not isinstance(state, R.State):
        raise ValueError(f"from_state: expected a kdk rules.State, got {type(state).__name__}")
    if state.config != config:
        raise ValueError(f"from_state: the state's options {state.config} differ from {config}")
    n = config.num_players
    per_seat = ("hand", "draw", "played", "slots", "status", "place", "announced", "ann_made",
                "serves_since", "laid_since", "combo_len", "combo_pts", "score", "last_score",
                "firsts", "combo_sum", "last_place", "picks_left", "slot_old", "swapped",
                "recycled", "taken", "lacks")  # fmt: skip
    bad = [name for name in per_seat if len(getattr(state, name)) != n]
    if len(state.box) > MAX_BOX or any(len(pile) > MAX_PILE for pile in state.draw):
        bad.append("box/draw")
    if max(len(state.queue), len(state.finish_order), len(state.elim_order)) > n:
        bad.append("queue/finish_order/elim_order")
    if bad:
        raise ValueError(f"from_state: fields of the wrong size: {', '.join(bad)}")
    row = np.zeros(NUM_COLUMNS, dtype=np.int64)
    scalars = {
        PHASE: int(state.phase), TO_PLAY: state.to_play, ROUND_IDX: state.round_idx,
        ROUNDS_DONE: state.rounds_done, OPENER: state.opener, LAST_WINNER: state.last_winner,
        TOP: state.top, TOP_OWNER: state.top_owner, DUTY: state.duty,
        REOPENER: state.reopener, RESUME: state.resume, SP_IN_ROUND: int(state.sp_in_round),
        STEPS: state.steps, TOPUPS: state.topups, QLEN: len(state.queue),
        FIN_LEN: len(state.finish_order), ELIM_LEN: len(state.elim_order),
        BOX_LEN: len(state.box),
    }  # fmt: skip
    for col, value in scalars.items():
        row[col] = value
    for at, values in ((QUEUE, state.queue), (FINISH_ORDER, state.finish_order),
                       (ELIM_ORDER, state.elim_order)):  # fmt: skip
        row[at : at + len(values)] = values
    for at, values in (
        (STATUS, state.status), (PLACE, state.place), (ANNOUNCED, state.announced),
        (ANN_MADE, state.ann_made), (SERVES_SINCE, state.serves_since),
        (LAID_SINCE, state.laid_since), (COMBO_LEN, state.combo_len),
        (COMBO_PTS, state.combo_pts), (SCORE, state.score), (LAST_SCORE, state.last_score),
        (FIRSTS, state.firsts), (COMBO_SUM, state.combo_sum), (LAST_PLACE, state.last_place),
        (PICKS_LEFT, state.picks_left), (LACKS, state.lacks),
    ):  # fmt: skip
        row[at : at + n] = [int(x) for x in values]
    row[SLOTS : SLOTS + P * S] = -1
    for q in range(n):
        for at, values in ((HAND, state.hand[q]), (PLAYED, state.played[q]),
                           (RECYCLED, state.recycled[q]), (TAKEN, state.taken[q])):  # fmt: skip
            row[at + F * q : at + F * (q + 1)] = values
        for at, values in ((SLOTS, state.slots[q]), (SLOT_OLD, state.slot_old[q]),
                           (SWAPPED, state.swapped[q])):  # fmt: skip
            row[at + S * q : at + S * (q + 1)] = [int(x) for x in values]
        pile = state.draw[q]
        row[DRAW_LEN + q] = len(pile)
        row[DRAW + MAX_PILE * q : DRAW + MAX_PILE * q + len(pile)] = pile
        row[DRAW_CNT + F * q : DRAW_CNT + F * (q + 1)] = np.bincount(
            np.asarray(pile, dtype=np.int64), minlength=F
        )
    for j, (owner, f, transparent) in enumerate(state.box):
        row[BOX + j] = 32 * owner + 2 * f + int(transparent)
        row[BOX_CNT + F * owner + f] += 1
    return row
