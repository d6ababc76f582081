"""Up & Down's rollout module for the compiled search rollouts (``agents/engine_rollout.py``).

It mirrors :func:`updown_env.heuristic.rollout_policy` on one row of the batched engine
(``updown_env/engine.py``): the same plan on the same bitmask counts, with the same tables
(imported from the readable module), the same arithmetic and the same uniform draws in the same
order, so that given the same numbers both take the same decision. The seat to play reads only
its own hand and what is public (the revealed cards, side, orientation, trump, pot), never the
other hands or face-down choices that the determinised row holds.

Functions (compiled, over one engine row ``st``, the engine's ``consts`` from
``engine.setup(config)`` and a generator ``rngs``, uint64 of shape ``(1,)``), the contract of
``agents/engine_rollout.py``:

==================================================  ==============================================
``policy(st, consts, rngs) -> int``                 ``rollout_policy(state, rand)``: every
                                                    ``rand.random()`` there is an
                                                    ``engine_rollout.uniform(rngs)`` here
``apply(st, consts, action, rngs)``                 the engine's ``step_row`` (ROLL and a new
                                                    deal draw from ``rngs[0]``)
``is_over(st) -> bool``                             ``rules.is_terminal``
``to_play(st) -> int``                              ``state.to_play``
``legal(st, consts, out) -> int``                   ``rules.legal_actions`` ascending into ``out``
                                                    (length ``NUM_ACTIONS``), their number
``scores(st, consts, out)``                         ``rules.scores`` into ``out[:n]``
``winners(st, consts, out) -> int``                 1 in ``out[s]`` for each seat of
                                                    ``rules.winners``, else 0; their number
``play_out(st, consts, rngs, n, cutoff, out)``      play on by ``policy``; values into ``out``
``race(row, consts, moves, seed, n, cutoff, out)``  each move in a copy of ``row``, played out
``advance(st, consts, rngs, seat)``                 the others' moves until ``seat`` is to play
==================================================  ==============================================

and ``ENGINE``, the engine module. The last three are the search's kernels
(``engine_rollout.EngineRollouts`` calls them; its docstring says what they do).

Where the twin is written differently, to the same result: a rule set is a side, an
orientation and a trump (ROTATE's turned suits are the suits of the orientation the engine
would set), and the opponents' own-suit masks are three ints, 0 for an absent seat (which adds
no threat), instead of a list.

``tests/test_rollout_updown.py`` compares the decisions in about 6,800 positions (2-4
players, 1-3 rounds) with the Python policy's when fed the same numbers, and the other
functions with the rules at every step of games played on a row.

numba caches the kernels beside this file.
"""

from __future__ import annotations

from math import exp

import numpy as np
from numba import njit

from tablegym import kernels as G
from tablegym.kernels import uniform
from tablegym.numba_cache import drop_stale
from updown_env import engine as E
from updown_env import heuristic as H
from updown_env import rules as R
from updown_env.engine import (
    CHOOSE,
    GAME_OVER,
    HANDS,
    MAX_SEATS,
    ORIENTATION,
    P_NUM_PLAYERS,
    PHASE,
    PLAYED,
    POT_COL,
    SIDE,
    TO_PLAY,
    TRICKS,
    TRUMP,
    lowest_bit,
    own_suit,
    popcount,
    step_row,
    write_mask,
)
from updown_env.heuristic import ROLLOUT_AGGRESSION, ROLLOUT_DENY, ROLLOUT_KEEP
from updown_env.rules import (
    DOWN,
    FLIP,
    MIN_VALUE,
    NUM_ACTIONS,
    NUM_SUITS,
    NUM_VALUES,
    PLAY,
    ROLL,
    ROTATE,
    UP,
)

ENGINE = E

# -- the readable policy's tables, as arrays ---------------------------------------------------

ALL_CARDS = H.ALL_CARDS
SUIT_BITS = H.SUIT_BITS
BETTER = np.zeros((2, NUM_VALUES), dtype=np.int64)  # [side, value index]
BETTER[UP], BETTER[DOWN] = H.BETTER[UP], H.BETTER[DOWN]
VALUE_CARDS = np.array(H.VALUE_CARDS, dtype=np.int64)
CARD = np.array(H.CARD, dtype=np.int64)  # [card, 0]: value index, [card, 1]: suit
FUTURE = np.array(H.FUTURE)  # [value index, is the trump]

# Modules compiled into this file's cached kernels: one rule (tablegym/numba_cache.py).
CACHE_FROZEN = (E, G, H, R)
drop_stale(__file__, *CACHE_FROZEN)


# -- the policy --------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _rules(prm, p, side, orientation, trump, unseen, hold):
    """What ``_unseen_counts`` counts once per rule set: the trump's value index, the unseen
    trumps, seat p's suit, the opponents' unseen own-suit cards that are not trumps (one mask
    per opponent, 0 for absent seats), the side and the exponent's scale."""
    t = trump - MIN_VALUE
    trumps = popcount(unseen & VALUE_CARDS[t])
    no_trump = SUIT_BITS & ~(1 << t)
    o0 = o1 = o2 = 0
    j = 0
    for q in range(prm[P_NUM_PLAYERS]):
        if q != p:
            m = unseen >> (own_suit(prm, orientation, q) * NUM_VALUES) & no_trump
            if j == 0:
                o0 = m
            elif j == 1:
                o1 = m
            else:
                o2 = m
            j += 1
    scale = -ROLLOUT_AGGRESSION / hold
    return t, trumps, own_suit(prm, orientation, p), o0, o1, o2, side, scale


@njit(cache=True, inline="always")
def _win_chance(c, unseen, rules):
    """A card's rough chance to take the trick under ``rules`` (``_win_chances``, one card):
    spoiled by each unseen card of its value (3a), trump (3c) and better card of an
    opponent's own suit; 0 for a card that is neither a trump nor of my suit (3b)."""
    t, trumps, mine, o0, o1, o2, side, scale = rules
    i = CARD[c, 0]
    if i == t:
        threats = trumps  # another trump neutralises mine
    elif CARD[c, 1] != mine:
        return 0.0
    else:
        b = BETTER[side, i]
        threats = popcount(unseen & VALUE_CARDS[i]) + trumps
        threats += popcount(o0 & b) + popcount(o1 & b) + popcount(o2 & b)
    return exp(scale * threats)


@njit(cache=True, inline="always")
def _spoiled(i, rules):
    """How many unseen cards a card of value index ``i`` would spoil for the others: every
    unseen trump for my trump, else those of its value in the opponents' own suits."""
    t, trumps, mine, o0, o1, o2, side, scale = rules
    if i == t:
        return trumps
    return (o0 >> i & 1) + (o1 >> i & 1) + (o2 >> i & 1)


@njit(cache=True)
def _best_chance(hand, unseen, rules):
    """``max(_win_chances(...))`` over the cards of ``hand`` (not empty)."""
    best = -1.0
    m = hand
    while m:
        best = max(best, _win_chance(lowest_bit(m), unseen, rules))
        m &= m - 1
    return best


@njit(cache=True)
def policy(st, consts, rngs):
    """The move of the seat to play by ``rollout_policy``'s plan, drawing from ``rngs``."""
    prm = consts[0]
    p = st[TO_PLAY]
    hand = st[HANDS + p]
    seen = hand
    for q in range(prm[P_NUM_PLAYERS]):
        seen |= st[PLAYED + q]
    unseen = ALL_CARDS & ~seen
    hold = popcount(hand)  # about the others' hand size
    side, orientation, trump = st[SIDE], st[ORIENTATION], st[TRUMP]
    if st[PHASE] == CHOOSE:
        rules = _rules(prm, p, side, orientation, trump, unseen, hold)
        t = trump - MIN_VALUE
        keep = ROLLOUT_KEEP if hold > 1 else 0.0
        stake = 1.0 + st[POT_COL]
        best, best_v = 0, -1e9
        m = hand
        while m:  # ascending card ids, one draw each, as the readable loop
            c = lowest_bit(m)
            m &= m - 1
            i = CARD[c, 0]
            chance = _win_chance(c, unseen, rules)
            spoiled = _spoiled(i, rules)
            v = (
                stake * chance
                - keep * FUTURE[i, 1 if i == t else 0]
                + ROLLOUT_DENY * spoiled / hold
            )
            v += uniform(rngs) * 1e-9
            if v > best_v:
                best, best_v = c, v
        return PLAY + best
    new_trump = trump
    while new_trump == trump:  # ROLL: one sample of the conditioned 2d6
        new_trump = 2 + int(uniform(rngs) * 6) + int(uniform(rngs) * 6)
    mine = own_suit(prm, orientation, p)
    best, best_v = FLIP, -1e9
    # The readable order: FLIP, ROLL, then each ROTATE to a suit other than mine.
    for j in range(2 + NUM_SUITS):
        side2, orientation2, trump2 = side, orientation, trump
        if j == 0:
            a = FLIP
            side2 = side ^ 1
        elif j == 1:
            a = ROLL
            trump2 = new_trump
        else:
            suit = j - 2
            if suit == mine:
                continue
            a = ROTATE + suit  # rules.rotate_action(suit)
            # Every seat's suit turns by suit - mine: the suits of this orientation.
            orientation2 = (orientation + suit - mine + NUM_SUITS) % NUM_SUITS
        rules = _rules(prm, p, side2, orientation2, trump2, unseen, hold)
        v = _best_chance(hand, unseen, rules) + uniform(rngs) * 1e-9
        if v > best_v:
            best, best_v = a, v
    return best


# -- the game ----------------------------------------------------------------------------------


@njit(cache=True)
def apply(st, consts, action, rngs):
    """Play a legal ``action`` on the row (``rules.apply_action``); chance from ``rngs[0]``."""
    # The engine's step works on row i of a batch and writes that row's rewards: here a
    # one-row view of ``st`` and a throw-away rewards row (search values come from the scores).
    rewards = np.empty((1, MAX_SEATS), dtype=np.float32)
    step_row(st.reshape((1, st.shape[0])), rngs, 0, consts[0], action, rewards)


@njit(cache=True)
def is_over(st):
    """``rules.is_terminal``."""
    return st[PHASE] == GAME_OVER


@njit(cache=True)
def to_play(st):
    """``state.to_play`` (-1 once the game is over)."""
    return st[TO_PLAY]


@njit(cache=True)
def legal(st, consts, out):
    """``rules.legal_actions`` ascending into ``out[:k]``; returns k."""
    # The engine's mask of row 0 written into ``out`` as 0/1, then packed in place (the k-th
    # legal id is read at an index >= k before index k is written).
    write_mask(st.reshape((1, st.shape[0])), 0, consts[0], out.reshape((1, out.shape[0])), 0)
    k = 0
    for a in range(NUM_ACTIONS):
        if out[a]:
            out[k] = a
            k += 1
    return k


@njit(cache=True)
def scores(st, consts, out):
    """``rules.scores``: tricks per seat over all rounds, into ``out[:n]``."""
    for s in range(consts[0][P_NUM_PLAYERS]):
        out[s] = st[TRICKS + s]


@njit(cache=True)
def winners(st, consts, out):
    """1 in ``out[s]`` for the seats with the most tricks at game over ("Game end"), else 0;
    returns their number (0 before the end, as ``rules.winners`` is empty)."""
    # The engine finds the top inside its step, for the rewards; it has no helper to reuse.
    n = consts[0][P_NUM_PLAYERS]
    top = st[TRICKS]
    for s in range(n):
        out[s] = 0
        top = max(top, st[TRICKS + s])
    if st[PHASE] != GAME_OVER:
        return 0
    k = 0
    for s in range(n):
        if st[TRICKS + s] == top:
            out[s] = 1
            k += 1
    return k


# -- the search's kernels (agents/engine_rollout.py) ------------------------------------------
# Written out over this module's functions, as every game's are: numba cannot cache a kernel
# that takes compiled functions as arguments (see agents/engine_rollout.py).


@njit(cache=True)
def play_out(st, consts, rngs, n, cutoff, out):
    """Play on by the policy to the end, or (``cutoff``) until the scores change; values."""
    start, now = np.empty(n), np.empty(n)
    scores(st, consts, start)
    while not is_over(st):
        apply(st, consts, policy(st, consts, rngs), rngs)
        if cutoff:
            scores(st, consts, now)
            if not is_over(st) and G.changed(start, now, n):
                G.cutoff_value(now, n, out)
                return
    flags = np.zeros(n, dtype=np.int64)
    winners(st, consts, flags)
    G.terminal_value(flags, n, out)


@njit(cache=True)
def race(row, consts, moves, seed, n, cutoff, out):
    """Each move played in a copy of ``row`` and then played out, from the same generator."""
    st, rngs = np.empty_like(row), np.empty(1, dtype=np.uint64)
    for j in range(moves.shape[0]):
        st[:] = row
        rngs[0] = seed
        apply(st, consts, moves[j], rngs)
        play_out(st, consts, rngs, n, cutoff, out[j])


@njit(cache=True)
def advance(st, consts, rngs, seat):
    """The policy's moves for the other seats until ``seat`` is to play or the game ends."""
    while not is_over(st) and to_play(st) != seat:
        apply(st, consts, policy(st, consts, rngs), rngs)
