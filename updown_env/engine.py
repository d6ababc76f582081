"""Up & Down as a batched numba engine: B games in one int64 array, stepped by compiled kernels.

The contract (``setup``, ``deal``, ``refresh``, ``step``, ``observe``, ``to_state``,
``from_state``) is in :mod:`tablegym.vector.engine`; :class:`tablegym.vector.VectorGame` calls
it. This is a second implementation of ``rules.py`` that shares only its constants (card and
action ids, directions, hand sizes, throw orientations); ``tests/test_updown_engine.py`` replays
random games through both and compares masks, observations, rewards and states step by step.
Rules are cited by the section names of ``docs/updown_rules.md``.

State columns (``states[i]`` is one game; ``rngs[i]`` its xorshift64* generator)
    ======  ===============  =====================================================
    column  name             content (the ``rules.State`` field of the same name)
    ======  ===============  =====================================================
    0       ``ROUND``        round, 0-based
    1       ``PHASE``        ``Phase``: 0 change the rules, 1 choose cards, 2 over
    2       ``TO_PLAY``      seat to act; -1 once the game is over
    3       ``LEADER``       trick leader
    4       ``SIDE``         UP 0, DOWN 1
    5       ``ORIENTATION``  0..3: suit (d + r) mod 4 faces direction d
    6       ``TRUMP``        trump value 2..12
    7       ``POT_COL``      tricks in the pot
    8       ``LOST_COL``     tricks lost over all rounds
    9       ``LAST_RESULT``  winner seat of the last trick, POT -1, LOST -2, NO_TRICK -3
    10      ``ASIDE``        bitmask of the set-aside cards
    11–14   ``HANDS``        per seat, bitmask of its cards (0 for seats not in play)
    15–18   ``PENDING``      per seat, the chosen unrevealed card id or NO_CARD -1
    19–22   ``PLAYED``       per seat, bitmask of its cards revealed this round
    23–26   ``LAST_TRICK``   per seat, its card in the last trick or NO_CARD -1
    27–30   ``TRICKS``       per seat, tricks won over all rounds
    31–42   ``CHANGES``      per seat (3 columns each), rule changes by ``CHANGE_KINDS``
    43–58   ``KINDS``        per seat (4 columns each), revealed cards by ``CARD_KINDS``
    ======  ===============  =====================================================

``consts`` (from :func:`setup`) is ``(params, at, values)``: ``params`` int64 the options and
seat tables (``P_*`` offsets below), ``at`` int64 the start index of each observation field
(``O_*`` offsets, from ``LAYOUT.at``), ``values`` float32 ``(4, OBS_SIZE)``: the stored value
of a raw 0 and of a raw 1 at every index, and the layout's affine ``scale`` and ``shift``.
Counts are stored as ``float32(raw) * scale + shift`` (a float32 multiply, then a float32 add,
no fast-math), which is what ``Layout.pack`` computes in numpy, so observations are bit-identical
to ``observation.encode``.

Chance: one uint64 xorshift64* state per game; uniform integers below k by Lemire's
multiply-and-reject method (exact, no modulo bias). A deal gives each card in turn to a hand
or the set-aside pile with probability proportional to the places left there, which is a
uniform deal without a shuffled deck. Same seed, same games; the draws differ from the rules
core's numpy generator, so the two agree in distribution, not game by game.

The per-step batch kernels (``step``, ``observe``) loop over rows serially below
``PARALLEL_FROM`` rows and with ``prange`` from there; ``deal`` and ``refresh`` (reset,
``set_state``) always run serially: a parallel region costs more than a small batch takes
(measurements: docs/results.md). :func:`random_play` (uniformly random legal actions inside
numba, for benchmarks) is one long region per call and uses ``prange`` from
``PLAY_PARALLEL_MIN`` rows.

Per-row API, for the rollout twin (``rollout.py``) and for tests; rows are ``s[i]``, ``prm``
comes from :func:`setup`:

======================================================  ======================================
``step_row(s, rngs, i, prm, action, rewards) -> bool``  ``rules.apply_action`` and
                                                        ``rules.rewards``; True at game over
``write_mask(s, i, prm, mask, k)``                      ``rules.legal_actions`` as
                                                        ``mask[k]``
``own_suit(prm, orientation, seat) -> int``             a seat's own suit
``popcount(m) -> int``, ``lowest_bit(m) -> int``        set bits of a card mask, the lowest
======================================================  ======================================
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np
from llvmlite import ir
from numba.extending import intrinsic

from tablegym import kernels  # also sets OpenMP's wait policy before numba loads it
from tablegym.numba_cache import drop_stale
from updown_env import observation, rules
from updown_env.observation import LAYOUT
from updown_env.rules import (
    CARD_KINDS,
    CHANGE_KINDS,
    DIRECTIONS,
    FLIP,
    HAND_SIZE,
    LOST,
    MIN_VALUE,
    NO_CARD,
    NO_TRICK,
    NUM_CARDS,
    NUM_SUITS,
    NUM_VALUES,
    PLAY,
    POT,
    ROLL,
    ROTATE,
    THROW_ORIENTATIONS,
    UP,
    Phase,
    State,
)

# Modules compiled into this file's cached kernels: one rule (tablegym/numba_cache.py).
CACHE_FROZEN = (kernels, observation, rules)
drop_stale(__file__, *CACHE_FROZEN)

# -- state columns -------------------------------------------------------------------------
ROUND, PHASE, TO_PLAY, LEADER, SIDE, ORIENTATION, TRUMP, POT_COL, LOST_COL, LAST_RESULT = range(10)
ASIDE = 10
HANDS = 11
PENDING = 15
PLAYED = 19
LAST_TRICK = 23
TRICKS = 27
NUM_CHANGES = len(CHANGE_KINDS)
NUM_KINDS = len(CARD_KINDS)
CHANGES = 31
KINDS = CHANGES + rules.MAX_PLAYERS * NUM_CHANGES  # 43
NUM_COLUMNS = KINDS + rules.MAX_PLAYERS * NUM_KINDS  # 59
MAX_SEATS = rules.MAX_PLAYERS

# -- params: options and seat tables -------------------------------------------------------
P_NUM_PLAYERS, P_NUM_ROUNDS, P_HAND, P_TRICKS_REWARD, P_NUM_THROWS = range(5)
P_THROWS = 5  # 4 entries: the orientations the throw may give
P_DIRS = 9  # 4 entries: the direction each seat faces
NUM_PARAMS = 13

# -- observation fields, in the order of ``at`` --------------------------------------------
OBS_FIELDS = (
    "hand",
    "my_choice",
    "played",
    "last_trick",
    "last_result",
    "side",
    "suits",
    "trump",
    "leader",
    "chosen",
    "phase",
    "pot",
    "tricks",
    "hand_sizes",
    "tricks_left",
    "round",
    "rounds_left",
    "num_players",
    "changes",
    "kinds",
)
(
    O_HAND,
    O_MY_CHOICE,
    O_PLAYED,
    O_LAST_TRICK,
    O_LAST_RESULT,
    O_SIDE,
    O_SUITS,
    O_TRUMP,
    O_LEADER,
    O_CHOSEN,
    O_PHASE,
    O_POT,
    O_TRICKS,
    O_HAND_SIZES,
    O_TRICKS_LEFT,
    O_ROUND,
    O_ROUNDS_LEFT,
    O_NUM_PLAYERS,
    O_CHANGES,
    O_KINDS,
) = range(len(OBS_FIELDS))
ZERO, ONE, SCALE, SHIFT = range(4)  # rows of ``values``

CHANGE, CHOOSE, GAME_OVER = int(Phase.CHANGE), int(Phase.CHOOSE), int(Phase.GAME_OVER)

PARALLEL_FROM = 256  # rows; see the module docstring
PLAY_PARALLEL_MIN = 64

_U1 = np.uint64(1)
_LOW32 = np.uint64(0xFFFFFFFF)


def setup(config: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The constant arrays every kernel takes: options, seat tables, the observation's affine."""
    n = config.num_players
    params = np.zeros(NUM_PARAMS, dtype=np.int64)
    params[P_NUM_PLAYERS] = n
    params[P_NUM_ROUNDS] = config.num_rounds
    params[P_HAND] = HAND_SIZE[n]
    params[P_TRICKS_REWARD] = config.reward == "tricks"
    throws = THROW_ORIENTATIONS[n]
    params[P_NUM_THROWS] = len(throws)
    params[P_THROWS : P_THROWS + len(throws)] = throws
    params[P_DIRS : P_DIRS + n] = DIRECTIONS[n]
    at = np.array([LAYOUT.at[name] for name in OBS_FIELDS], dtype=np.int64)
    # Layout.pack scales with these very arrays; the same params as observation.encode.
    scale, shift = LAYOUT.affine(num_players=n, num_rounds=config.num_rounds)
    values = np.empty((4, LAYOUT.size), dtype=np.float32)
    values[ZERO] = np.zeros(LAYOUT.size, dtype=np.float32) * scale + shift
    values[ONE] = np.ones(LAYOUT.size, dtype=np.float32) * scale + shift
    values[SCALE] = scale
    values[SHIFT] = shift
    return params, at, values


# -- bits and chance -----------------------------------------------------------------------


@intrinsic
def lowest_bit(typingctx: Any, m: Any) -> tuple:
    """Index of the lowest set bit of a nonzero int64 card mask: LLVM's cttz, one instruction
    (a de Bruijn table lookup measured 4x slower)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return nb.types.int64(nb.types.int64), codegen


@nb.njit(cache=True, inline="always")
def popcount(m: int) -> int:
    """The number of set bits of a card mask (SWAR: numba has no popcount of its own)."""
    x = np.uint64(m)
    x = x - ((x >> _U1) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@nb.njit(cache=True, inline="always")
def _next32(rngs: np.ndarray, i: int) -> np.uint64:
    """xorshift64*: the next 32 high-quality bits of game i's generator."""
    return kernels.next_bits(rngs, i) >> np.uint64(32)


@nb.njit(cache=True)
def _below(rngs: np.ndarray, i: int, k: int) -> int:
    """Uniform integer in 0..k-1 (1 <= k < 2**32), Lemire's method with exact rejection."""
    bound = np.uint64(k)
    m = _next32(rngs, i) * bound
    low = m & _LOW32
    if low < bound:
        threshold = (np.uint64(1 << 32) - bound) % bound
        while low < threshold:
            m = _next32(rngs, i) * bound
            low = m & _LOW32
    return np.int64(m >> np.uint64(32))


@nb.njit(cache=True, inline="always")
def _roll(rngs: np.ndarray, i: int) -> int:
    """The sum of two dice: one draw of 36 outcomes."""
    q = _below(rngs, i, 36)
    return q // 6 + q % 6 + 2


@nb.njit(cache=True, inline="always")
def _wrap(x: int, n: int) -> int:
    """x mod n for 0 <= x < 2n: seats clockwise without a division (the table size is not a
    compile-time constant, so ``%`` would divide)."""
    return x - n if x >= n else x


@nb.njit(cache=True, inline="always")
def own_suit(prm: np.ndarray, orientation: int, seat: int) -> int:
    """A seat's own suit: the suit facing its direction ("Components")."""
    return (prm[P_DIRS + seat] + orientation) % NUM_SUITS


# -- setup of a round ------------------------------------------------------------------------


@nb.njit(cache=True)
def _start_round(s: np.ndarray, rngs: np.ndarray, i: int, prm: np.ndarray, rnd: int) -> None:
    """Deal, roll the trump, throw the U&D card; clubs leads ("Setup of a round")."""
    n = prm[P_NUM_PLAYERS]
    h = prm[P_HAND]
    # Each card goes to a place with probability (places left there) / (places left): a
    # uniform deal. Seats not in play have no places.
    r0 = h
    r1 = h
    r2 = h if n > 2 else 0
    r3 = h if n > 3 else 0
    h0 = h1 = h2 = h3 = aside = 0
    left = NUM_CARDS
    for c in range(NUM_CARDS):
        u = _below(rngs, i, left)
        left -= 1
        bit = 1 << c
        if u < r0:
            h0 |= bit
            r0 -= 1
            continue
        u -= r0
        if u < r1:
            h1 |= bit
            r1 -= 1
            continue
        u -= r1
        if u < r2:
            h2 |= bit
            r2 -= 1
            continue
        u -= r2
        if u < r3:
            h3 |= bit
            r3 -= 1
            continue
        aside |= bit
    s[i, HANDS] = h0
    s[i, HANDS + 1] = h1
    s[i, HANDS + 2] = h2
    s[i, HANDS + 3] = h3
    s[i, ASIDE] = aside
    s[i, TRUMP] = _roll(rngs, i)
    s[i, SIDE] = _below(rngs, i, 2)
    orientation = prm[P_THROWS + _below(rngs, i, prm[P_NUM_THROWS])]
    s[i, ORIENTATION] = orientation
    # The first leader is the seat facing clubs; the throw makes sure there is one.
    clubs = (NUM_SUITS - orientation) % NUM_SUITS
    leader = 0
    for seat in range(n):
        if prm[P_DIRS + seat] == clubs:
            leader = seat
    s[i, LEADER] = leader
    s[i, TO_PLAY] = leader
    s[i, PHASE] = CHANGE
    s[i, ROUND] = rnd
    s[i, POT_COL] = 0
    for seat in range(MAX_SEATS):
        s[i, PENDING + seat] = NO_CARD
        s[i, PLAYED + seat] = 0
    # Totals, the lost count, the last trick and the habits (public history) carry over
    # between rounds.


@nb.njit(cache=True)
def _deal_row(s: np.ndarray, rngs: np.ndarray, i: int, prm: np.ndarray) -> None:
    """A new game in row i: round 1 set up."""
    for seat in range(MAX_SEATS):
        s[i, TRICKS + seat] = 0
        s[i, LAST_TRICK + seat] = NO_CARD
    for j in range(CHANGES, NUM_COLUMNS):
        s[i, j] = 0
    s[i, LOST_COL] = 0
    s[i, LAST_RESULT] = NO_TRICK
    _start_round(s, rngs, i, prm, 0)


# -- legality ------------------------------------------------------------------------------


@nb.njit(cache=True, inline="always")
def write_mask(s: np.ndarray, i: int, prm: np.ndarray, mask: np.ndarray, k: int) -> None:
    """mask[k] = the legal actions of row i ("A trick" 1-2)."""
    phase = s[i, PHASE]
    if phase == CHOOSE:
        for a in range(PLAY):
            mask[k, a] = False
        # Any card in hand may be played; there is no duty to follow suit. One select per card
        # (rather than a loop over the set bits) lets the compiler vectorise.
        m = s[i, HANDS + s[i, TO_PLAY]]
        for c in range(NUM_CARDS):
            mask[k, PLAY + c] = (m >> c) & 1
        return
    for a in range(mask.shape[1]):
        mask[k, a] = False
    if phase == CHANGE:
        own = own_suit(prm, s[i, ORIENTATION], s[i, LEADER])
        mask[k, FLIP] = True
        mask[k, ROLL] = True
        for suit in range(NUM_SUITS):
            # Rotating to the leader's current suit would leave the rules unchanged.
            mask[k, ROTATE + suit] = suit != own


# -- observation ---------------------------------------------------------------------------


@nb.njit(cache=True, inline="always")
def _write_obs(
    s: np.ndarray,
    i: int,
    seat: int,
    prm: np.ndarray,
    at: np.ndarray,
    values: np.ndarray,
    obs: np.ndarray,
    k: int,
) -> None:
    """obs[k] = what ``seat`` sees of row i, bit for bit ``observation.encode``."""
    n = prm[P_NUM_PLAYERS]
    one = values[ONE]
    scale = values[SCALE]
    shift = values[SHIFT]
    zero = values[ZERO]
    for j in range(zero.shape[0]):  # an explicit loop: numba's slice copy is 4x slower
        obs[k, j] = zero[j]
    orientation = s[i, ORIENTATION]
    # Private: the observer's hand and its own pending choice.
    m = s[i, HANDS + seat]
    base = at[O_HAND]
    while m:
        j = base + lowest_bit(m)
        obs[k, j] = one[j]
        m &= m - 1
    if s[i, PENDING + seat] != NO_CARD:
        j = at[O_MY_CHOICE] + s[i, PENDING + seat]
        obs[k, j] = one[j]
    # Per-seat fields, observer first, then clockwise.
    for r in range(n):
        q = _wrap(seat + r, n)
        m = s[i, PLAYED + q]
        base = at[O_PLAYED] + NUM_CARDS * r
        while m:
            j = base + lowest_bit(m)
            obs[k, j] = one[j]
            m &= m - 1
        if s[i, LAST_TRICK + q] != NO_CARD:
            j = at[O_LAST_TRICK] + NUM_CARDS * r + s[i, LAST_TRICK + q]
            obs[k, j] = one[j]
        j = at[O_SUITS] + NUM_SUITS * r + own_suit(prm, orientation, q)
        obs[k, j] = one[j]
        if s[i, PENDING + q] != NO_CARD:
            j = at[O_CHOSEN] + r
            obs[k, j] = one[j]
        j = at[O_TRICKS] + r
        obs[k, j] = np.float32(s[i, TRICKS + q]) * scale[j] + shift[j]
        j = at[O_HAND_SIZES] + r
        obs[k, j] = np.float32(popcount(s[i, HANDS + q])) * scale[j] + shift[j]
        for c in range(NUM_CHANGES):
            j = at[O_CHANGES] + NUM_CHANGES * r + c
            obs[k, j] = np.float32(s[i, CHANGES + NUM_CHANGES * q + c]) * scale[j] + shift[j]
        for c in range(NUM_KINDS):
            j = at[O_KINDS] + NUM_KINDS * r + c
            obs[k, j] = np.float32(s[i, KINDS + NUM_KINDS * q + c]) * scale[j] + shift[j]
    result = s[i, LAST_RESULT]
    if result >= 0:
        j = at[O_LAST_RESULT] + _wrap(result - seat + n, n)
        obs[k, j] = one[j]
    elif result == POT:
        j = at[O_LAST_RESULT] + MAX_SEATS
        obs[k, j] = one[j]
    elif result == LOST:
        j = at[O_LAST_RESULT] + MAX_SEATS + 1
        obs[k, j] = one[j]
    phase = s[i, PHASE]
    if phase != GAME_OVER:
        j = at[O_LEADER] + _wrap(s[i, LEADER] - seat + n, n)
        obs[k, j] = one[j]
    j = at[O_SIDE] + s[i, SIDE]
    obs[k, j] = one[j]
    j = at[O_TRUMP] + s[i, TRUMP] - MIN_VALUE
    obs[k, j] = one[j]
    j = at[O_PHASE] + phase
    obs[k, j] = one[j]
    j = at[O_NUM_PLAYERS] + n - 2
    obs[k, j] = one[j]
    j = at[O_POT]
    obs[k, j] = np.float32(s[i, POT_COL]) * scale[j] + shift[j]
    j = at[O_TRICKS_LEFT]
    left = prm[P_HAND] - popcount(s[i, PLAYED])
    obs[k, j] = np.float32(left) * scale[j] + shift[j]
    j = at[O_ROUND]
    obs[k, j] = np.float32(s[i, ROUND]) * scale[j] + shift[j]
    j = at[O_ROUNDS_LEFT]
    obs[k, j] = np.float32(prm[P_NUM_ROUNDS] - s[i, ROUND] - 1) * scale[j] + shift[j]


@nb.njit(cache=True, inline="always")
def _refresh_row(
    s: np.ndarray,
    i: int,
    prm: np.ndarray,
    at: np.ndarray,
    values: np.ndarray,
    obs: np.ndarray,
    mask: np.ndarray,
    seat: np.ndarray,
) -> None:
    """obs, mask and seat of row i's player to act."""
    to_play = s[i, TO_PLAY]
    seat[i] = to_play
    # After the game nobody acts; like rules (seat -1 indexes the last seat), observe seat n-1.
    if to_play < 0:
        to_play = prm[P_NUM_PLAYERS] - 1
    _write_obs(s, i, to_play, prm, at, values, obs, i)
    write_mask(s, i, prm, mask, i)


# -- transitions ---------------------------------------------------------------------------


@nb.njit(cache=True)
def _trick_winner(s: np.ndarray, i: int, prm: np.ndarray) -> int:
    """The seat whose pending card wins ("A trick" 3), or -1 if none is eligible."""
    n = prm[P_NUM_PLAYERS]
    trump = s[i, TRUMP]
    up = s[i, SIDE] == UP
    orientation = s[i, ORIENTATION]
    best = -1
    best_value = 0
    for seat in range(n):
        card = s[i, PENDING + seat]
        v = card % NUM_VALUES + MIN_VALUE
        twin = False
        for other in range(n):
            if other != seat and s[i, PENDING + other] % NUM_VALUES + MIN_VALUE == v:
                twin = True
        if twin:
            continue  # 3a: equal values neutralise, trumps included
        if v == trump:
            return seat  # 3c: the one remaining trump beats everything, UP or DOWN
        if card // NUM_VALUES != own_suit(prm, orientation, seat):
            continue  # 3b: not a trump and not the player's own suit
        if best < 0 or (v > best_value if up else v < best_value):
            best = seat
            best_value = v
    return best


@nb.njit(cache=True, inline="always")
def _card_kind(s: np.ndarray, i: int, prm: np.ndarray, seat: int, card: int) -> int:
    """``rules.card_kind`` of ``seat``'s card under row i's rules in force."""
    v = card % NUM_VALUES + MIN_VALUE
    if v == s[i, TRUMP]:
        return 0
    if card // NUM_VALUES == own_suit(prm, s[i, ORIENTATION], seat):
        return 1
    return 3 if v == MIN_VALUE or v == MIN_VALUE + NUM_VALUES - 1 else 2


@nb.njit(cache=True, inline="always")
def step_row(
    s: np.ndarray, rngs: np.ndarray, i: int, prm: np.ndarray, action: int, rewards: np.ndarray
) -> bool:
    """Apply a legal ``action`` to row i; write rewards[i]; True if the game ended."""
    n = prm[P_NUM_PLAYERS]
    for seat in range(n):
        rewards[i, seat] = 0.0
    if s[i, PHASE] == CHANGE:
        # "A trick" 1: FLIP, ROTATE or ROLL; then the leader chooses a card first.
        # The leader's habit, as rules.change_kind: FLIP 0, any ROTATE 1, ROLL 2.
        kind = 0 if action == FLIP else 2 if action == ROLL else 1
        s[i, CHANGES + NUM_CHANGES * s[i, LEADER] + kind] += 1
        if action == FLIP:
            s[i, SIDE] = 1 - s[i, SIDE]  # UP 0 <-> DOWN 1
        elif action == ROLL:
            old = s[i, TRUMP]
            trump = old
            while trump == old:  # re-roll until the value differs
                trump = _roll(rngs, i)
            s[i, TRUMP] = trump
        else:
            # Suit s faces the leader's direction d when (d + r) % 4 == s.
            d = prm[P_DIRS + s[i, LEADER]]
            s[i, ORIENTATION] = (action - ROTATE - d + NUM_SUITS) % NUM_SUITS
        s[i, PHASE] = CHOOSE
        return False
    # "A trick" 2: a face-down choice; the last player's choice resolves the trick.
    p = s[i, TO_PLAY]
    card = action - PLAY
    s[i, HANDS + p] &= ~(1 << card)
    s[i, PENDING + p] = card
    nxt = _wrap(p + 1, n)
    leader = s[i, LEADER]
    if nxt != leader:
        s[i, TO_PLAY] = nxt
        return False
    # "A trick" 3: reveal and resolve.
    winner = _trick_winner(s, i, prm)
    last = s[i, HANDS + leader] == 0
    pot = s[i, POT_COL]
    if winner >= 0:
        # 3d: the winner takes this trick and the pot.
        s[i, TRICKS + winner] += 1 + pot
        if prm[P_TRICKS_REWARD]:
            rewards[i, winner] = np.float32(1 + pot)
        s[i, POT_COL] = 0
        s[i, LAST_RESULT] = winner
    elif last:
        s[i, LOST_COL] += pot + 1  # 3d: the last trick's pot is lost to everyone
        s[i, POT_COL] = 0
        s[i, LAST_RESULT] = LOST
    else:
        s[i, POT_COL] = pot + 1
        s[i, LAST_RESULT] = POT
    for seat in range(n):
        c = s[i, PENDING + seat]
        s[i, KINDS + NUM_KINDS * seat + _card_kind(s, i, prm, seat, c)] += 1
        s[i, PLAYED + seat] |= 1 << c
        s[i, LAST_TRICK + seat] = c
        s[i, PENDING + seat] = NO_CARD
    if not last:
        nxt = _wrap(leader + 1, n)  # 4: the next player clockwise leads
        s[i, PHASE] = CHANGE
        s[i, LEADER] = nxt
        s[i, TO_PLAY] = nxt
        return False
    rnd = s[i, ROUND] + 1
    if rnd < prm[P_NUM_ROUNDS]:
        _start_round(s, rngs, i, prm, rnd)
        return False
    # "Game end": the most tricks over all rounds wins; a tie is a shared win.
    s[i, PHASE] = GAME_OVER
    s[i, TO_PLAY] = -1
    if not prm[P_TRICKS_REWARD]:
        top = 0
        for seat in range(n):
            top = max(top, s[i, TRICKS + seat])
        for seat in range(n):
            rewards[i, seat] = 1.0 if s[i, TRICKS + seat] == top else -1.0
    return True


@nb.njit(cache=True, inline="always")
def _random_action(s: np.ndarray, rngs: np.ndarray, i: int, prm: np.ndarray) -> int:
    """A uniformly random legal action of row i."""
    if s[i, PHASE] == CHANGE:
        r = _below(rngs, i, 5)
        if r == 0:
            return FLIP
        if r == 4:
            return ROLL
        own = own_suit(prm, s[i, ORIENTATION], s[i, LEADER])
        suit = r - 1
        return ROTATE + (suit if suit < own else suit + 1)
    m = s[i, HANDS + s[i, TO_PLAY]]
    for _ in range(_below(rngs, i, popcount(m))):
        m &= m - 1
    return PLAY + lowest_bit(m)


# -- batch kernels -------------------------------------------------------------------------


# ``reset`` and ``set_state`` are rare: dealing and refreshing run serially (a prange variant of
# each cost 3.6 s of cold compile for a millisecond per reset of 1024 rows). The per-step loops
# are written twice, serial and parallel: numba keys its cache by function name and line, so one
# function compiled both ways would share (and overwrite) cache entries.


@nb.njit(cache=True)
def _deal_serial(states: np.ndarray, rngs: np.ndarray, prm: np.ndarray) -> None:
    for i in range(states.shape[0]):
        _deal_row(states, rngs, i, prm)


# A step's row function is inlined into both step loops (about 5 % faster per step than a call
# passing a dozen arrays, for 1.6 s more cold compile); observing calls one row function.


@nb.njit(cache=True)
def _observe_one(states, i, prm, at, values, seats, obs):
    _write_obs(states, i, seats[i], prm, at, values, obs, i)


@nb.njit(cache=True)
def _refresh_serial(states, prm, at, values, obs, mask, seat):
    for i in range(states.shape[0]):
        _refresh_row(states, i, prm, at, values, obs, mask, seat)


@nb.njit(cache=True, inline="always")
def _step_one(states, rngs, i, prm, at, values, actions, obs, mask, seat, rewards, done):
    ended = step_row(states, rngs, i, prm, actions[i], rewards)
    done[i] = ended
    if ended:
        _deal_row(states, rngs, i, prm)  # the slot holds a new game at once
    _refresh_row(states, i, prm, at, values, obs, mask, seat)


@nb.njit(cache=True)
def _step_serial(states, rngs, prm, at, values, actions, obs, mask, seat, rewards, done):
    for i in range(states.shape[0]):
        _step_one(states, rngs, i, prm, at, values, actions, obs, mask, seat, rewards, done)


@nb.njit(cache=True, parallel=True)
def _step_parallel(states, rngs, prm, at, values, actions, obs, mask, seat, rewards, done):
    for i in nb.prange(states.shape[0]):
        _step_one(states, rngs, i, prm, at, values, actions, obs, mask, seat, rewards, done)


@nb.njit(cache=True)
def _observe_serial(states, prm, at, values, seats, obs):
    for i in range(states.shape[0]):
        _observe_one(states, i, prm, at, values, seats, obs)


@nb.njit(cache=True, parallel=True)
def _observe_parallel(states, prm, at, values, seats, obs):
    for i in nb.prange(states.shape[0]):
        _observe_one(states, i, prm, at, values, seats, obs)


@nb.njit(cache=True)
def _play_one(states, rngs, i, prm, num_steps, rewards):
    games = 0
    for _ in range(num_steps):
        if step_row(states, rngs, i, prm, _random_action(states, rngs, i, prm), rewards):
            games += 1
            _deal_row(states, rngs, i, prm)
    return games


@nb.njit(cache=True)
def _play_serial(states, rngs, prm, num_steps):
    rewards = np.zeros((states.shape[0], MAX_SEATS), dtype=np.float32)
    games = 0
    for i in range(states.shape[0]):
        games += _play_one(states, rngs, i, prm, num_steps, rewards)
    return games


@nb.njit(cache=True, parallel=True)
def _play_parallel(states, rngs, prm, num_steps):
    rewards = np.zeros((states.shape[0], MAX_SEATS), dtype=np.float32)
    games = 0
    for i in nb.prange(states.shape[0]):
        games += _play_one(states, rngs, i, prm, num_steps, rewards)
    return games


_SERIAL = {"step": _step_serial, "observe": _observe_serial}
_PARALLEL = {"step": _step_parallel, "observe": _observe_parallel}


def _pick(rows: int) -> dict[str, Any]:
    return _PARALLEL if rows >= PARALLEL_FROM else _SERIAL


def deal(states: np.ndarray, rngs: np.ndarray, consts: tuple) -> None:
    """Deal a new game in every row."""
    _deal_serial(states, rngs, consts[0])


def refresh(
    states: np.ndarray, consts: tuple, obs: np.ndarray, mask: np.ndarray, seat: np.ndarray
) -> None:
    """Observation, legal-action mask and seat of every row's player to act."""
    _refresh_serial(states, *consts, obs, mask, seat)


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
    """Apply legal ``actions``; rewards, done (a finished row is dealt anew), obs, mask, seat."""
    _pick(len(states))["step"](
        states, rngs, *consts, actions, obs, mask, seat, rewards, done
    )  # fmt: skip


def observe(states: np.ndarray, consts: tuple, seats: np.ndarray, obs: np.ndarray) -> None:
    """The observation of ``seats[i]`` in every row i."""
    _pick(len(states))["observe"](states, *consts, seats, obs)


def random_play(states: np.ndarray, rngs: np.ndarray, consts: tuple, num_steps: int) -> int:
    """Play ``num_steps`` uniformly random legal actions in every row inside numba (finished
    games dealt anew, no observations written); the number of decisions made."""
    kernel = _play_parallel if len(states) >= PLAY_PARALLEL_MIN else _play_serial
    kernel(states, rngs, consts[0], num_steps)
    return len(states) * num_steps


# -- conversions ---------------------------------------------------------------------------


def to_state(row: np.ndarray, config: Any) -> State:
    """The readable ``rules.State`` of one row."""
    n = config.num_players
    r = [int(x) for x in row]

    def seats(col: int) -> tuple[int, ...]:
        return tuple(r[col : col + n])

    return State(
        num_players=n,
        num_rounds=config.num_rounds,
        round=r[ROUND],
        phase=Phase(r[PHASE]),
        to_play=r[TO_PLAY],
        leader=r[LEADER],
        side=r[SIDE],
        orientation=r[ORIENTATION],
        trump=r[TRUMP],
        hands=seats(HANDS),
        aside=r[ASIDE],
        pending=seats(PENDING),
        played=seats(PLAYED),
        last_trick=seats(LAST_TRICK),
        last_result=r[LAST_RESULT],
        pot=r[POT_COL],
        tricks=seats(TRICKS),
        lost=r[LOST_COL],
        changes=tuple(tuple(r[CHANGES + NUM_CHANGES * q :][:NUM_CHANGES]) for q in range(n)),
        kinds=tuple(tuple(r[KINDS + NUM_KINDS * q :][:NUM_KINDS]) for q in range(n)),
    )


def from_state(state: State, config: Any) -> np.ndarray:
    """The row of a readable ``rules.State``; ValueError if it is not a game of ``config``."""
    if not isinstance(state, State):
        raise ValueError(f"from_state: expected an updown rules.State, got {type(state)!r}")
    for name in ("num_players", "num_rounds"):
        if getattr(state, name) != getattr(config, name):
            raise ValueError(
                f"from_state: the state has {name}={getattr(state, name)}, "
                f"the engine {getattr(config, name)}"
            )
    n = state.num_players
    row = np.zeros(NUM_COLUMNS, dtype=np.int64)
    row[[ROUND, PHASE, TO_PLAY, LEADER, SIDE, ORIENTATION, TRUMP]] = (
        state.round,
        int(state.phase),
        state.to_play,
        state.leader,
        state.side,
        state.orientation,
        state.trump,
    )
    row[[POT_COL, LOST_COL, LAST_RESULT, ASIDE]] = (
        state.pot,
        state.lost,
        state.last_result,
        state.aside,
    )
    row[PENDING : PENDING + MAX_SEATS] = NO_CARD
    row[LAST_TRICK : LAST_TRICK + MAX_SEATS] = NO_CARD
    row[HANDS : HANDS + n] = state.hands
    row[PENDING : PENDING + n] = state.pending
    row[PLAYED : PLAYED + n] = state.played
    row[LAST_TRICK : LAST_TRICK + n] = state.last_trick
    row[TRICKS : TRICKS + n] = state.tricks
    row[CHANGES : CHANGES + NUM_CHANGES * n] = [k for seat in state.changes for k in seat]
    row[KINDS : KINDS + NUM_KINDS * n] = [k for seat in state.kinds for k in seat]
    return row


__all__ = [
    "NUM_COLUMNS",
    "deal",
    "from_state",
    "observe",
    "random_play",
    "refresh",
    "setup",
    "step",
    "to_state",
]
