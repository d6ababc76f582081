"""King Up! batched engine: B games in one int64 array, stepped by numba kernels.

The contract (``setup``, ``deal``, ``refresh``, ``step``, ``observe``, ``to_state``,
``from_state``, ``random_play``) is in :mod:`tablegym.vector.engine`; use it through
``tablegym.vector.VectorGame("kingup", ..., backend="numba")``. This is a second
implementation of ``rules.py``: it shares only constants with it (card table, action ids,
positions, the observation layout's offsets and affine map), and ``tests/test_kingup_engine.py``
replays games through both and compares masks, observations, rewards and states at every step.
Rules are cited by the section names of ``docs/kingup_rules.md``.

State of one game: one row of ``NUM_COLUMNS`` int64 columns (seats beyond ``num_players`` and
finished-round slots not yet played hold 0). Per-game generator: one uint64 xorshift64* state.

=======  ==================  =====  ================================================
columns  name                width  content (``rules.State`` field)
=======  ==================  =====  ================================================
0        ``ROUND``           1      round, 0-based (``round``)
1        ``PHASE``           1      0 place, 1 climb, 2 vote, 3 game over (``phase``)
2        ``TO_PLAY``         1      seat to act, -1 at game over (``to_play``)
3        ``STARTER``         1      starting player of the round (``starter``)
4        ``CROWN``           1      crown holder or -1 (``crown``)
5        ``CANDIDATE``       1      candidate on the throne being voted on, or -1
6        ``LAST``            1      candidate of the round's last failed election, or -1
7        ``KING``            1      king of the last finished round, or -1 (``king``)
8        ``DECK_TOP``        1      index in ``DECK`` of the top undealt card
9        ``ROUNDS_DONE``     1      finished rounds (length of ``round_scores``)
10–22    ``FLOORS``          13     per candidate: -1 unplaced, 0..5, 6 throne, 7 eliminated
23–28    ``FAVOURITES``      6      favourite card id per seat, this round (private)
29–34    ``NO_LEFT``         6      NO cards in hand per seat
35–40    ``PLACEMENTS_LEFT`` 6      placements still to make per seat
41–46    ``VOTES``           6      pending vote per seat: -1 none, 0 YES, 1 NO (private)
47–59    ``NO_VOTERS``       13     per candidate, bitmask of seats that voted NO on it
60–77    ``ROUND_SCORES``    3×6    points per finished round and seat
78–95    ``REVEALED``        3×6    card revealed per finished round and seat
96–121   ``DECK``            26     the shuffled deck; ``DECK[DECK_TOP:]`` is undealt (``deck``)
=======  ==================  =====  ================================================

Kernels: per-row ``@njit`` functions, and batch loops over rows; ``step``, ``observe`` and
``random_play`` run serially below ``PARALLEL_FROM`` rows and with ``prange`` from there (a
parallel region costs microseconds, more than a small batch takes).

Per-row API, for the rollout twin (``rollout.py``) and for tests; ``st`` is one row:

=================================================================  ==========================
``legal_row(st, n, out, scratch) -> int``                          ``rules.legal_actions``
                                                                   into ``out``, the count
``apply_row(st, action, n, num_rounds, no_cards, placements)``     ``rules.apply_action``;
                                                                   True if the game ended
``rewards_row(st, rounds_before, n, reward, out)``                 ``rules.rewards`` of the
                                                                   step that led to ``st``
``place_action(c, floor)``, ``place_of(action)``                   ``rules.place_action`` and
                                                                   ``rules.place_of``, compiled
=================================================================  ==========================
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, prange

from kingup_env import observation as O
from kingup_env import rules as R
from kingup_env.observation import LAYOUT
from tablegym import kernels  # also sets OpenMP's wait policy before numba loads it
from tablegym.kernels import row_view
from tablegym.numba_cache import drop_stale

# Modules compiled into this file's cached kernels: one rule (tablegym/numba_cache.py).
CACHE_FROZEN = (kernels, O, R)
drop_stale(__file__, *CACHE_FROZEN)

# -- the column layout (see the module docstring) ------------------------------------------
ROUND, PHASE, TO_PLAY, STARTER, CROWN, CANDIDATE, LAST, KING, DECK_TOP, ROUNDS_DONE = range(10)
C = R.NUM_CANDIDATES  # 13
P = R.MAX_PLAYERS  # 6
MAX_ROUNDS = 3
FLOORS = 10
FAVOURITES = FLOORS + C
NO_LEFT = FAVOURITES + P
PLACEMENTS_LEFT = NO_LEFT + P
VOTES = PLACEMENTS_LEFT + P
NO_VOTERS = VOTES + P
ROUND_SCORES = NO_VOTERS + C
REVEALED = ROUND_SCORES + MAX_ROUNDS * P
DECK = REVEALED + MAX_ROUNDS * P
NUM_CARDS = R.NUM_CARDS  # 26
NUM_COLUMNS = DECK + NUM_CARDS  # 122

# -- constants shared with rules.py ----------------------------------------------------------
UNPLACED, THRONE, ELIMINATED = R.UNPLACED, R.THRONE, R.ELIMINATED
TOP_FLOOR = R.NUM_FLOORS - 1
CAPACITY = R.CAPACITY
PLACE_PHASE, CLIMB_PHASE, VOTE_PHASE, OVER_PHASE = (int(p) for p in R.Phase)
CLIMB, YES, NO = R.CLIMB, R.YES, R.NO
NUM_ACTIONS = R.NUM_ACTIONS
MAX_ROUND_SCORE = R.MAX_ROUND_SCORE
CARDS = np.array(R.FAVOURITE_CARDS, dtype=np.int64)  # (26, 6)
CARD_SIZE = CARDS.shape[1]
REWARD_CODES = {name: k for k, name in enumerate(R.REWARDS)}  # win 0, score 1, relative 2
WIN, SCORE, RELATIVE = (REWARD_CODES[m] for m in ("win", "score", "relative"))

# -- observation offsets (kingup_env/observation.py's LAYOUT) ----------------------------------
_at = LAYOUT.at
OBS_SIZE = LAYOUT.size
O_CASTLE = _at["castle"] + 1  # + 9 * c + position: column 0 is UNPLACED (-1)
O_MY_FAV = _at["my_favourites"]
O_NO_LEFT = _at["no_cards_left"]
O_PLACEMENTS = _at["placements_left"]
O_SEATS = _at["seats"]
O_PHASE = _at["phase"]
O_ROUND = _at["round"]
O_NUM_ROUNDS = _at["num_rounds"]
O_TO_PLAY = _at["to_play"]
O_STARTER = _at["starter"]
O_CROWN = _at["crown"]
O_VOTED = _at["has_voted"]
O_NO_VOTES = _at["no_votes"]  # + P * c + relative seat
O_LAST = _at["last_candidate"]
O_ROUND_SCORES = _at["round_scores"]  # + P * round + relative seat
O_TOTALS = _at["totals"]
O_REVEALED = _at["revealed_cards"]  # + P * C * round + C * relative seat + candidate

NUM_POSITIONS = ELIMINATED - UNPLACED + 1  # unplaced, floors 0..5, throne, eliminated
CHUNK = 16  # rows per prange piece
PARALLEL_FROM = 64  # rows; below this a serial loop beats a prange region (measured)

U32 = np.uint64(32)


def setup(config: Any) -> tuple:
    """``consts`` for the kernels: options, per-count card numbers, the observation's affine map."""
    n = config.num_players
    # encode() calls LAYOUT.scale without parameters: the same (scale, shift) here.
    scale, shift = LAYOUT.affine()
    scale = np.ascontiguousarray(scale, dtype=np.float32)
    shift = np.ascontiguousarray(shift, dtype=np.float32)
    # The stored value of a raw 0, computed as numpy does (0 * scale + shift), so that even the
    # sign of a zero matches encode() bit for bit.
    base = np.zeros(OBS_SIZE, dtype=np.float32)
    base *= scale
    base += shift
    # Where that is not +0.0 (here only num_rounds, whose raw range starts at 1): a row is
    # zeroed and then these are written, cheaper than copying the whole of ``base``.
    base_at = np.flatnonzero(base.view(np.uint32)).astype(np.int64)
    # The stored value of a raw 1 (1 * scale + shift = scale + shift exactly), for one-hots.
    one = scale + shift
    return (
        np.int64(n),
        np.int64(config.num_rounds),
        np.int64(REWARD_CODES[config.reward]),
        np.int64(R.NO_CARDS[n]),
        np.int64(R.PLACEMENTS[n]),
        scale,
        shift,
        base,
        base_at,
        one,
    )


# -- per-game generator ------------------------------------------------------------------------


@njit(cache=True)
def _below(rngs, i, bound):
    """A random int in 0..bound-1 (multiply-shift on the high 32 bits)."""
    return np.int64(((kernels.next_bits(rngs, i) >> U32) * np.uint64(bound)) >> U32)


# -- per-row rules -----------------------------------------------------------------------------

# The rules' own encode/decode pair of placement ids, compiled into the kernels: the ids have
# one definition (rules.place_action), here as in the readable core.
place_action = njit(inline="always")(R.place_action)
place_of = njit(inline="always")(R.place_of)


@njit(cache=True)
def _left(seat, n):
    """The seat to the left (seat + 1 mod n) without a division: divisions cost more than the
    rest of a step's bookkeeping."""
    return 0 if seat + 1 == n else seat + 1


@njit(cache=True)
def _relative(s, seat, n):
    """Seat ``s`` as seen from ``seat`` (observer first, then clockwise), without a division."""
    r = s - seat
    return r + n if r < 0 else r


@njit(cache=True)
def _start_round(st, round_idx, starter, n, no_cards, placements):
    """A round step 1: favourites from the top of the deck, NO cards back, castle emptied."""
    st[ROUND] = round_idx
    st[PHASE] = PLACE_PHASE
    st[TO_PLAY] = starter
    st[STARTER] = starter
    for c in range(C):
        st[FLOORS + c] = UNPLACED
        st[NO_VOTERS + c] = 0
    # Cards are not reshuffled between rounds: each round deals the next n from the top.
    top = st[DECK_TOP]
    for s in range(n):
        st[FAVOURITES + s] = st[DECK + top + s]
        st[NO_LEFT + s] = no_cards
        st[PLACEMENTS_LEFT + s] = placements
        st[VOTES + s] = -1
    st[DECK_TOP] = top + n
    st[CROWN] = -1
    st[CANDIDATE] = -1
    st[LAST] = -1


@njit(cache=True)
def _deal_row(st, rngs, i, n, no_cards, placements):
    """Setup: shuffle the favourite deck (Fisher-Yates), round 1 started by seat 0."""
    for k in range(NUM_COLUMNS):
        st[k] = 0
    for k in range(NUM_CARDS):
        st[DECK + k] = k
    for k in range(NUM_CARDS - 1, 0, -1):
        j = _below(rngs, i, k + 1)
        t = st[DECK + k]
        st[DECK + k] = st[DECK + j]
        st[DECK + j] = t
    st[DECK_TOP] = 0
    st[ROUNDS_DONE] = 0
    st[KING] = -1
    _start_round(st, 0, 0, n, no_cards, placements)


ROOM = NUM_POSITIONS - UNPLACED  # scratch[ROOM + position]: may a candidate there climb


@njit(cache=True, inline="always")
def _count_positions(st, scratch):
    """``scratch`` (``2 * NUM_POSITIONS`` ints): candidates per position, then whether a
    candidate there may climb (up one floor into a floor with room; from floor 5 onto the
    empty throne). Returns whether floors 1..4 have room for a placement."""
    for j in range(NUM_POSITIONS):
        scratch[j] = 0
    for c in range(C):
        scratch[st[FLOORS + c] - UNPLACED] += 1
    for f in range(TOP_FLOOR):
        scratch[ROOM + f] = scratch[f + 1 - UNPLACED] < CAPACITY
    scratch[ROOM + TOP_FLOOR] = 1
    scratch[ROOM + THRONE] = 0
    scratch[ROOM + ELIMINATED] = 0
    return (scratch[ROOM], scratch[ROOM + 1], scratch[ROOM + 2], scratch[ROOM + 3])


@njit(cache=True, inline="always")
def legal_row(st, n, out, scratch):
    """Write the sorted legal action ids of the seat to act into ``out``; return how many.

    Ids are written unconditionally and kept by advancing ``k`` by a 0/1 flag: random play
    makes the branches unpredictable, and this is half its step.
    """
    phase = st[PHASE]
    if phase == VOTE_PHASE:
        out[0] = YES
        out[1] = NO
        return 2 if st[NO_LEFT + st[TO_PLAY]] > 0 else 1  # NO only while holding a NO card
    if phase == OVER_PHASE:
        return 0
    r1, r2, r3, r4 = _count_positions(st, scratch)
    k = 0
    if phase == PLACE_PHASE:
        # Placement: an unplaced candidate onto floor 1..4 holding fewer than 4.
        for c in range(C):
            u = st[FLOORS + c] == UNPLACED
            out[k] = place_action(c, 1)
            k += u & r1
            out[k] = place_action(c, 2)
            k += u & r2
            out[k] = place_action(c, 3)
            k += u & r3
            out[k] = place_action(c, 4)
            k += u & r4
        return k
    for c in range(C):
        out[k] = CLIMB + c
        k += scratch[ROOM + st[FLOORS + c]]
    return k


@njit(cache=True)
def score_card(floors, card, round_idx):
    """Scoring: king 10, floor f f points, eliminated 0; in round 3 exactly 0 becomes 33."""
    points = 0
    for j in range(card.shape[0]):
        f = floors[card[j]]
        if f == THRONE:
            points += 10
        elif 0 <= f <= TOP_FLOOR:
            points += f
    if round_idx == 2 and points == 0:
        return MAX_ROUND_SCORE
    return points


@njit(cache=True)
def _crown_king(st, n, num_rounds, no_cards, placements):
    """All YES: score and reveal every card, then the next round or the end; True at the end."""
    done = st[ROUNDS_DONE]
    floors = st[FLOORS : FLOORS + C]
    for s in range(n):
        card = st[FAVOURITES + s]
        st[ROUND_SCORES + P * done + s] = score_card(floors, CARDS[card], st[ROUND])
        st[REVEALED + P * done + s] = card
        st[VOTES + s] = -1
    st[ROUNDS_DONE] = done + 1
    st[KING] = st[CANDIDATE]
    if st[ROUND] + 1 >= num_rounds:
        st[PHASE] = OVER_PHASE
        st[TO_PLAY] = -1
        return True
    # The next round is started by the player to the left of the crown holder.
    _start_round(st, st[ROUND] + 1, _left(st[CROWN], n), n, no_cards, placements)
    return False


@njit(cache=True)
def apply_row(st, action, n, num_rounds, no_cards, placements):
    """Play ``action`` (legal) for the seat to act; True if the game ended."""
    p = st[TO_PLAY]
    phase = st[PHASE]
    if phase == PLACE_PHASE:
        c, floor = place_of(action)
        st[FLOORS + c] = floor
        st[PLACEMENTS_LEFT + p] -= 1
        st[TO_PLAY] = _left(p, n)
        for s in range(n):
            if st[PLACEMENTS_LEFT + s] > 0:
                return False
        # Every still unplaced candidate goes to floor 0; climbing continues clockwise.
        for c in range(C):
            if st[FLOORS + c] == UNPLACED:
                st[FLOORS + c] = 0
        st[PHASE] = CLIMB_PHASE
        return False
    if phase == CLIMB_PHASE:
        c = action - CLIMB
        st[FLOORS + c] += 1
        if st[FLOORS + c] != THRONE:
            st[TO_PLAY] = _left(p, n)
            return False
        # Election: the mover takes the crown; votes are asked from the crown holder clockwise.
        st[PHASE] = VOTE_PHASE
        st[CROWN] = p
        st[CANDIDATE] = c
        for s in range(n):
            st[VOTES + s] = -1
        return False
    # Vote: hidden until the last one, then revealed at once.
    st[VOTES + p] = 1 if action == NO else 0
    nxt = _left(p, n)
    if nxt != st[CROWN]:
        st[TO_PLAY] = nxt
        return False
    mask = 0
    for s in range(n):
        if st[VOTES + s] == 1:
            mask |= 1 << s
    if mask == 0:
        return _crown_king(st, n, num_rounds, no_cards, placements)
    # At least one NO: the candidate leaves the round and each NO voter spends a NO card.
    c = st[CANDIDATE]
    st[FLOORS + c] = ELIMINATED
    for s in range(n):
        if st[VOTES + s] == 1:
            st[NO_LEFT + s] -= 1
        st[VOTES + s] = -1
    st[NO_VOTERS + c] = mask
    st[LAST] = c
    st[CANDIDATE] = -1
    st[PHASE] = CLIMB_PHASE
    st[TO_PLAY] = _left(st[CROWN], n)
    return False


@njit(cache=True)
def rewards_row(st, rounds_before, n, reward, out):
    """Every seat's reward for the step that led to ``st`` (rules.rewards)."""
    for s in range(n):
        out[s] = 0.0
    if reward == WIN:
        if st[PHASE] != OVER_PHASE:
            return
        # Highest total wins; among the tied, most round-3 favourites not eliminated.
        best = -1
        for s in range(n):
            t = 0
            for r in range(st[ROUNDS_DONE]):
                t += st[ROUND_SCORES + P * r + s]
            best = max(best, t)
        kept = np.full(P, -1, dtype=np.int64)
        most = -1
        for s in range(n):
            t = 0
            for r in range(st[ROUNDS_DONE]):
                t += st[ROUND_SCORES + P * r + s]
            if t == best:
                k = 0
                card = st[FAVOURITES + s]
                for j in range(CARD_SIZE):
                    if st[FLOORS + CARDS[card, j]] != ELIMINATED:
                        k += 1
                kept[s] = k
                most = max(most, k)
        for s in range(n):
            out[s] = 1.0 if kept[s] == most else -1.0
        return
    done = st[ROUNDS_DONE]
    if done == rounds_before:
        return
    total = 0
    for s in range(n):
        total += st[ROUND_SCORES + P * (done - 1) + s]
    for s in range(n):
        p = st[ROUND_SCORES + P * (done - 1) + s]
        if reward == SCORE:
            out[s] = p / MAX_ROUND_SCORE
        else:
            out[s] = (p - (total - p) / (n - 1)) / MAX_ROUND_SCORE


# Observation indices are made unsigned in the two store helpers: numba then drops the
# negative-index wraparound it adds to every signed index (none is negative), a third of the
# cost of a store.


@njit(cache=True, inline="always")
def _put(obs, j, raw, scale, shift):
    """Store raw value ``raw`` at index j: float32 multiply, then float32 add, as numpy does."""
    u = np.uint64(j)
    obs[u] = np.float32(raw) * scale[u] + shift[u]


@njit(cache=True, inline="always")
def _put_one(obs, j, one):
    """Store a raw 1 at index j (``one`` = scale + shift, what _put would store)."""
    u = np.uint64(j)
    obs[u] = one[u]


@njit(cache=True)
def _observe_row(st, seat, n, num_rounds, scale, shift, base, base_at, one, obs):
    """observation.encode(state, seat): raw values by field, then the layout's affine map."""
    # The stored value of raw 0 everywhere: zero the row, then the few entries where that
    # is not +0.0 (explicit loops: numba's slice assignment is 5x slower).
    for j in range(OBS_SIZE):
        obs[j] = 0.0
    for j in base_at:
        obs[j] = base[j]
    for c in range(C):
        _put_one(obs, O_CASTLE + 9 * c + st[FLOORS + c], one)
    card = st[FAVOURITES + seat]
    for j in range(CARD_SIZE):
        _put_one(obs, O_MY_FAV + CARDS[card, j], one)
    for r in range(n):
        s = seat + r - n if seat + r >= n else seat + r
        _put(obs, O_NO_LEFT + r, st[NO_LEFT + s], scale, shift)
        _put(obs, O_PLACEMENTS + r, st[PLACEMENTS_LEFT + s], scale, shift)
        _put_one(obs, O_SEATS + r, one)
    phase = st[PHASE]
    _put_one(obs, O_PHASE + phase, one)
    _put_one(obs, O_ROUND + st[ROUND], one)
    _put(obs, O_NUM_ROUNDS, num_rounds, scale, shift)
    if st[TO_PLAY] >= 0:
        _put_one(obs, O_TO_PLAY + _relative(st[TO_PLAY], seat, n), one)
    _put_one(obs, O_STARTER + _relative(st[STARTER], seat, n), one)
    if st[CROWN] >= 0:
        _put_one(obs, O_CROWN + _relative(st[CROWN], seat, n), one)
    if phase == VOTE_PHASE:
        # Who has voted, never how, until the last vote reveals all.
        for s in range(n):
            if st[VOTES + s] >= 0:
                _put_one(obs, O_VOTED + _relative(s, seat, n), one)
    if st[LAST] >= 0:
        _put_one(obs, O_LAST + st[LAST], one)
        for c in range(C):
            m = st[NO_VOTERS + c]
            if m:  # most candidates have no NO voters
                for s in range(n):
                    if m >> s & 1:
                        _put_one(obs, O_NO_VOTES + P * c + _relative(s, seat, n), one)
    done = st[ROUNDS_DONE]
    for r in range(n):
        s = seat + r - n if seat + r >= n else seat + r
        total = 0
        for k in range(done):
            points = st[ROUND_SCORES + P * k + s]
            total += points
            _put(obs, O_ROUND_SCORES + P * k + r, points, scale, shift)
            card = st[REVEALED + P * k + s]
            for j in range(CARD_SIZE):
                _put_one(obs, O_REVEALED + P * C * k + C * r + CARDS[card, j], one)
        if done:
            _put(obs, O_TOTALS + r, total, scale, shift)


@njit(cache=True, inline="always")
def _mask_row(st, n, scratch, mask):
    """The legal-action mask of the seat to act: legal_row's set, written straight into the mask
    (through legal_row's list of ids it cost 30 ns more of a 245 ns step, measured serially)."""
    phase = st[PHASE]
    for j in range(NUM_ACTIONS):
        mask[j] = False
    if phase == VOTE_PHASE:
        mask[YES] = True
        mask[NO] = st[NO_LEFT + st[TO_PLAY]] > 0
        return
    if phase == OVER_PHASE:
        return
    r1, r2, r3, r4 = _count_positions(st, scratch)
    if phase == PLACE_PHASE:
        for c in range(C):
            u = st[FLOORS + c] == UNPLACED
            mask[place_action(c, 1)] = u & r1
            mask[place_action(c, 2)] = u & r2
            mask[place_action(c, 3)] = u & r3
            mask[place_action(c, 4)] = u & r4
        return
    for c in range(C):
        mask[CLIMB + c] = scratch[ROOM + st[FLOORS + c]] != 0


# -- batch kernels -----------------------------------------------------------------------------
# Each kernel works on rows lo..hi-1 with its own scratch; the serial twin runs all rows, the
# parallel one splits them into CHUNK-row pieces under prange (scratch allocated per piece).
# The constants are unpacked once per call, not per row: per row it cost a fifth of a step.
# legal_row and _mask_row are inlined: as calls, their array arguments cost an atomic
# reference-count increment and decrement each per row, half of the mask's time. (Inlining
# _observe_row, rewards_row or apply_row as well measured slower.) Random play uses legal_row's
# list of ids (it draws one of them); the other kernels only need the mask.


@njit(cache=True)
def _deal_rows(lo, hi, states, rngs, consts):
    n, _, _, no_cards, placements = consts[:5]
    for i in range(lo, hi):
        _deal_row(row_view(states, i), rngs, i, n, no_cards, placements)


@njit(cache=True)
def _refresh_rows(lo, hi, states, consts, obs, mask, seat):
    n, num_rounds, _, _, _, scale, shift, base, base_at, one = consts
    scratch = np.empty(2 * NUM_POSITIONS, dtype=np.int64)
    for i in range(lo, hi):
        st = row_view(states, i)
        seat[i] = st[TO_PLAY]
        _mask_row(st, n, scratch, row_view(mask, i))
        _observe_row(
            st, st[TO_PLAY], n, num_rounds, scale, shift, base, base_at, one, row_view(obs, i)
        )


@njit(cache=True)
def _step_rows(lo, hi, states, rngs, consts, actions, obs, mask, seat, rewards, done):
    """Step games lo..hi-1, redeal those that ended, then write what their next players see."""
    n, num_rounds, reward, no_cards, placements, scale, shift, base, base_at, one = consts
    scratch = np.empty(2 * NUM_POSITIONS, dtype=np.int64)
    for i in range(lo, hi):
        st = row_view(states, i)
        before = st[ROUNDS_DONE]
        over = apply_row(st, actions[i], n, num_rounds, no_cards, placements)
        rewards_row(st, before, n, reward, row_view(rewards, i))
        if over:
            done[i] = True
            _deal_row(st, rngs, i, n, no_cards, placements)
        seat[i] = st[TO_PLAY]
        _mask_row(st, n, scratch, row_view(mask, i))
        _observe_row(
            st, st[TO_PLAY], n, num_rounds, scale, shift, base, base_at, one, row_view(obs, i)
        )


@njit(cache=True)
def _observe_rows(lo, hi, states, consts, seats, obs):
    n, num_rounds, _, _, _, scale, shift, base, base_at, one = consts
    for i in range(lo, hi):
        st, out = row_view(states, i), row_view(obs, i)
        _observe_row(st, seats[i], n, num_rounds, scale, shift, base, base_at, one, out)


@njit(cache=True)
def _random_rows(lo, hi, states, rngs, consts, num_steps):
    """``num_steps`` uniformly random legal actions in games lo..hi-1, redealing finished ones."""
    n, num_rounds, reward, no_cards, placements = consts[:5]
    legal = np.empty(NUM_ACTIONS, dtype=np.int64)
    scratch = np.empty(2 * NUM_POSITIONS, dtype=np.int64)
    out = np.zeros(P, dtype=np.float32)
    for i in range(lo, hi):
        st = row_view(states, i)
        for _ in range(num_steps):
            k = legal_row(st, n, legal, scratch)
            before = st[ROUNDS_DONE]
            over = apply_row(st, legal[_below(rngs, i, k)], n, num_rounds, no_cards, placements)
            rewards_row(st, before, n, reward, out)
            if over:
                _deal_row(st, rngs, i, n, no_cards, placements)


@njit(cache=True)
def _deal_serial(states, rngs, consts):
    _deal_rows(0, states.shape[0], states, rngs, consts)


@njit(cache=True)
def _refresh_serial(states, consts, obs, mask, seat):
    _refresh_rows(0, states.shape[0], states, consts, obs, mask, seat)


@njit(cache=True)
def _step_serial(states, rngs, consts, actions, obs, mask, seat, rewards, done):
    _step_rows(0, states.shape[0], states, rngs, consts, actions, obs, mask, seat, rewards, done)


@njit(cache=True, parallel=True)
def _step_parallel(states, rngs, consts, actions, obs, mask, seat, rewards, done):
    size = states.shape[0]
    for k in prange((size + CHUNK - 1) // CHUNK):
        lo, hi = k * CHUNK, min(size, k * CHUNK + CHUNK)
        _step_rows(lo, hi, states, rngs, consts, actions, obs, mask, seat, rewards, done)


@njit(cache=True)
def _observe_serial(states, consts, seats, obs):
    _observe_rows(0, states.shape[0], states, consts, seats, obs)


@njit(cache=True, parallel=True)
def _observe_parallel(states, consts, seats, obs):
    size = states.shape[0]
    for k in prange((size + CHUNK - 1) // CHUNK):
        _observe_rows(k * CHUNK, min(size, k * CHUNK + CHUNK), states, consts, seats, obs)


@njit(cache=True)
def _random_serial(states, rngs, consts, num_steps):
    _random_rows(0, states.shape[0], states, rngs, consts, num_steps)


@njit(cache=True, parallel=True)
def _random_parallel(states, rngs, consts, num_steps):
    size = states.shape[0]
    for k in prange((size + CHUNK - 1) // CHUNK):
        _random_rows(k * CHUNK, min(size, k * CHUNK + CHUNK), states, rngs, consts, num_steps)


# -- the contract (tablegym/vector/engine.py) --------------------------------------------------


def _parallel(states: np.ndarray) -> bool:
    return states.shape[0] >= PARALLEL_FROM


def deal(states: np.ndarray, rngs: np.ndarray, consts: tuple) -> None:
    """Deal a new game in every row (serial: it runs once per reset, and a parallel twin is
    more compile time than it saves)."""
    _deal_serial(states, rngs, consts)


def refresh(
    states: np.ndarray, consts: tuple, obs: np.ndarray, mask: np.ndarray, seat: np.ndarray
) -> None:
    """Write every row's observation of the seat to act, its legal-action mask and that seat
    (serial: after a reset or a set_state only; step refreshes the rows it steps)."""
    _refresh_serial(states, consts, obs, mask, seat)


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
    kernel = _step_parallel if _parallel(states) else _step_serial
    kernel(states, rngs, consts, actions, obs, mask, seat, rewards, done)


def observe(states: np.ndarray, consts: tuple, seats: np.ndarray, obs: np.ndarray) -> None:
    """The observation of ``seats[i]`` in every row i."""
    (_observe_parallel if _parallel(states) else _observe_serial)(states, consts, seats, obs)


def random_play(states: np.ndarray, rngs: np.ndarray, consts: tuple, num_steps: int) -> int:
    """``num_steps`` uniformly random legal actions in every row, inside numba; steps taken."""
    kernel = _random_parallel if _parallel(states) else _random_serial
    kernel(states, rngs, consts, np.int64(num_steps))
    return states.shape[0] * num_steps


def to_state(row: np.ndarray, config: Any) -> R.State:
    """The readable ``rules.State`` of one row."""
    n = config.num_players
    row = [int(x) for x in row]
    done = row[ROUNDS_DONE]

    def seats(at: int) -> tuple[int, ...]:
        return tuple(row[at : at + n])

    return R.State(
        num_players=n,
        num_rounds=config.num_rounds,
        round=row[ROUND],
        phase=R.Phase(row[PHASE]),
        to_play=row[TO_PLAY],
        starter=row[STARTER],
        floors=tuple(row[FLOORS : FLOORS + C]),
        favourites=seats(FAVOURITES),
        deck=tuple(row[DECK + row[DECK_TOP] : DECK + NUM_CARDS]),
        no_left=seats(NO_LEFT),
        placements_left=seats(PLACEMENTS_LEFT),
        crown=row[CROWN],
        candidate=row[CANDIDATE],
        votes=seats(VOTES),
        no_voters=tuple(row[NO_VOTERS : NO_VOTERS + C]),
        last_candidate=row[LAST],
        round_scores=tuple(seats(ROUND_SCORES + P * r) for r in range(done)),
        revealed=tuple(seats(REVEALED + P * r) for r in range(done)),
        king=row[KING],
    )


def from_state(state: R.State, config: Any) -> np.ndarray:
    """The row of a readable ``rules.State`` (ValueError if it does not fit these options)."""
    n = config.num_players
    if not isinstance(state, R.State):
        raise ValueError(f"from_state: expected a kingup rules.State, got {type(state).__name__}")
    if state.num_players != n or state.num_rounds != config.num_rounds:
        raise ValueError(
            f"from_state: the state has num_players={state.num_players}, "
            f"num_rounds={state.num_rounds}; this engine {n}, {config.num_rounds}"
        )
    per_seat = ("favourites", "no_left", "placements_left", "votes")
    bad = [name for name in per_seat if len(getattr(state, name)) != n]
    if len(state.floors) != C or len(state.no_voters) != C:
        bad.append("floors/no_voters")
    done = len(state.round_scores)
    if len(state.revealed) != done or done > MAX_ROUNDS:
        bad.append("round_scores/revealed")
    if len(state.deck) > NUM_CARDS - n:
        bad.append("deck")
    if bad:
        raise ValueError(f"from_state: fields of the wrong length: {', '.join(bad)}")
    row = np.zeros(NUM_COLUMNS, dtype=np.int64)
    row[[ROUND, PHASE, TO_PLAY, STARTER, CROWN, CANDIDATE, LAST, KING, ROUNDS_DONE]] = (
        state.round, int(state.phase), state.to_play, state.starter, state.crown,
        state.candidate, state.last_candidate, state.king, done,
    )  # fmt: skip
    row[FLOORS : FLOORS + C] = state.floors
    row[NO_VOTERS : NO_VOTERS + C] = state.no_voters
    for at, values in zip(
        (FAVOURITES, NO_LEFT, PLACEMENTS_LEFT, VOTES),
        (state.favourites, state.no_left, state.placements_left, state.votes),
    ):
        row[at : at + n] = values
    for r in range(done):
        row[ROUND_SCORES + P * r : ROUND_SCORES + P * r + n] = state.round_scores[r]
        row[REVEALED + P * r : REVEALED + P * r + n] = state.revealed[r]
    # Only the undealt part of the deck is state; it sits at the end of DECK.
    top = NUM_CARDS - len(state.deck)
    row[DECK_TOP] = top
    row[DECK + top : DECK + NUM_CARDS] = state.deck
    return row
