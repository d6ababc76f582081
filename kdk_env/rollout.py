"""KdK's rollout module for the compiled search rollouts (``agents/engine_rollout.py``).

:func:`policy` is the numba twin of :func:`kdk_env.heuristic.rollout_policy` on one row of
the batched engine (``kdk_env/engine.py``) instead of a ``rules.State``: the same seen position
(``seen_of_state``: the seat to play reads its own hand, draw-pile composition, played pile and
slots, and what is public), the same ``Decision`` (``choose`` with ``play``, ``finish``,
``sp_declare``, ``slot_pick``, ``swap``; the finishing plans and the valued lays, passes,
faults and WEITERs), the weights and tables imported from the readable module, the same
arithmetic in the same order, and a uniform number from ``engine_rollout.uniform`` wherever
the readable policy calls ``rand.random()`` (one per candidate of ``_pick``, none with one
legal action). Given the same numbers both take the same decision and draw as many numbers,
and ``decide`` values every candidate to the last bit (``tests/test_rollout_kdk.py``).

Functions (compiled, over one engine row ``st``, the engine's ``consts`` from
``engine.setup(config)`` and a generator ``rngs``, uint64 of shape ``(1,)``):

=========================================  ===================================================
``policy(st, consts, rngs) -> int``        ``rollout_policy(state, rand)``
``decide(st, consts, actions, values)``    ``Decision.decide()``: 0 and the action in
                                           ``actions[0]``, or m candidates in
                                           ``actions[:m]``, ``values[:m]`` (for tests)
``decide_seen(w, count, values)``          the same on a seen position already written in
                                           ``w`` (``heuristic_batch.py`` reads it from an
                                           observation)
``apply(st, consts, action, rngs)``        the engine's ``apply_row`` (chance from ``rngs[0]``)
``is_over(st) -> bool``                    ``rules.is_terminal``
``to_play(st) -> int``                     ``state.to_play``
``legal(st, consts, out) -> int``          ``rules.legal_actions`` ascending into ``out``
                                           (length ``NUM_ACTIONS``), their number returned
``scores(st, consts, out)``                ``rules.scores`` into ``out[:n]`` (float64)
``winners(st, consts, out) -> int``        1 in ``out[s]`` for each seat of ``rules.winners``
                                           (§5.4 keys, the engine's ``better_row``), else 0;
                                           their number
``play_out``, ``race``, ``advance``        the search's kernels, as ``engine_rollout`` says
=========================================  ===================================================

The readable names, here: ``seen_of_state`` is :func:`_seen`, writing the head (``SN_*``) of
one int64 work array per decision (the rest is the planner's scratch); ``Decision.X`` is
``_X`` (``lay``, ``draw_source`` and ``sp_declare`` are written out where they are used);
``_pick``, ``hand_cost``, ``run_prospect``, ``slot_value``, ``is_one_run``, ``combo_points``,
``card_terms`` and ``stop_value_of`` keep their names. Written differently, to the same result:

* A ``Pos`` is the arrays ``hand`` and ``slots``, changed in place and restored, and plain
  numbers; the generator ``_sequences`` is a recursion that hands each sequence to
  :func:`_consider`, in the order it would yield them; ``itertools.combinations`` is the table
  ``COMBOS``.
* No memo: ``Decision.memo`` never hit on the positions of the benchmark below, and within one
  decision the ``card_terms`` of ``_TERMS`` are almost all distinct; across decisions this
  signature has nowhere to keep one.
* ``run_prospect`` takes one pass over the runs (see there); float powers are taken as Python
  takes them (C's ``pow``, see ``RUN_DECAY_POW``).
* ``slot_pick`` and ``swap`` iterate the legal *set* and keep the first of equal gains, so
  CPython's set order decides their exact ties: :func:`set_order` reproduces it.

numba caches the kernels beside this file, and ``tablegym.numba_cache`` drops them when a
module compiled into them changes.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from numba import njit

from kdk_env import engine as E
from kdk_env import heuristic as H
from kdk_env import observation as O
from kdk_env import rules as R
from tablegym import kernels as G
from tablegym.kernels import uniform
from tablegym.numba_cache import drop_stale

ENGINE = E
# Modules compiled into this file's cached kernels: one rule (tablegym/numba_cache.py).
CACHE_FROZEN = (E, G, H, O, R)
drop_stale(__file__, *CACHE_FROZEN)

F, S, NUM_ACTIONS = R.NUM_FIGURES, R.NUM_SLOTS, R.NUM_ACTIONS
TRAITOR, KING, AMBASSADOR = R.TRAITOR, R.KING, R.AMBASSADOR
LAY_SLOT, PASS, FAIL, WEITER, ANNOUNCE = R.LAY_SLOT, R.PASS, R.FAIL, R.WEITER, R.ANNOUNCE
TOP_UP, TAKE_SLOT, SECURE, CLAIM_LATE, DECLARE_SP = (
    R.TOP_UP, R.TAKE_SLOT, R.SECURE, R.CLAIM_LATE, R.DECLARE_SP,
)  # fmt: skip
SLOT_SWAP, SLOT_PICK = R.SLOT_SWAP, R.SLOT_PICK
MIN_ANNOUNCE, MAX_COMBO_PTS = R.MIN_ANNOUNCE, R.MAX_COMBO_PTS
THROW_FIT, SERVE_FIT = E.THROW_FIT, E.SERVE_FIT  # [figure, top]; top -1 reads the last column
PH_OPEN, PH_FREE_OPEN, PH_WINDOW, PH_DUTY = E.PH_OPEN, E.PH_FREE_OPEN, E.PH_WINDOW, E.PH_DUTY
PH_FINISH, PH_SP_DECLARE, PH_PICKING, PH_SWAP = (
    E.PH_FINISH, E.PH_SP_DECLARE, E.PH_PICKING, E.PH_SWAP,
)  # fmt: skip

# The heuristic's weights and tables.
ENTRY = np.array(H.ENTRY)
SLOT_VALUE = np.array(H.SLOT_VALUE)
ANN_CHANCE = np.array(H.ANN_CHANCE)
GROUP_WEIGHT, PER_CARD, TRAITOR_COST, AMB_GROUP = (
    H.GROUP_WEIGHT, H.PER_CARD, H.TRAITOR_COST, H.AMB_GROUP,
)  # fmt: skip
RUN_POTENTIAL, LATE_SHARE, FAIL_EXTRA = H.RUN_POTENTIAL, H.LATE_SHARE, H.FAIL_EXTRA
EARLY_ANNOUNCE, EARLY_MIN = H.EARLY_ANNOUNCE, H.EARLY_MIN
FINISH_VALUE, ELIMINATION, TOPUP_RISK = H.FINISH, H.ELIMINATION, H.TOPUP_RISK
SP_DECLARE_AT, SWAP_MIN = H.SP_DECLARE_AT, H.SWAP_MIN
# Python raises a float to an int power with C's pow(); numba's ``x ** k`` and ``math.pow(x, k)``
# with an integer k multiply instead, which rounds otherwise in about half the cases (a float
# exponent calls pow()). The powers of the decays are taken here, as Python takes them.
_MOST = max(max(d) for d in R.DECKS.values()) + 1  # more than any count of one figure
RUN_DECAY_POW = np.array([H.RUN_DECAY**k for k in range(_MOST)])
TRAITOR_DECAY_POW = np.array([H.TRAITOR_DECAY**k for k in range(_MOST)])
# itertools.combinations(range(m), r) for r = 0..m, as bit masks, in the order it yields them.
COMBOS = np.zeros((S + 1, 1 << S), dtype=np.int64)
for _m in range(S + 1):
    _masks = [sum(1 << i for i in c) for r in range(_m + 1)
              for c in itertools.combinations(range(_m), r)]  # fmt: skip
    COMBOS[_m, : len(_masks)] = _masks
INF = math.inf

# -- the work array of one decision: the seen position, then scratch ----------------------------
# One int64 array, allocated once per decision (an allocation costs about 30 ns, a decision
# about 2 µs): first kdk_env.heuristic.seen_of_state's fields, which the Decision functions read
# as ``sn``, then the scratch of the planner, the candidates and the legal actions.
(SN_LEVEL, SN_PHASE, SN_DRAW_COUNT, SN_TOP, SN_COMBO, SN_ANNOUNCED, SN_ANN_MADE, SN_SERVES,
 SN_AMB_BANNED) = range(9)  # fmt: skip
SN_HAND = 9  # F counts
SN_OWN_DRAW = SN_HAND + F  # F counts: the composition of my draw pile
SN_PLAYED = SN_OWN_DRAW + F  # F counts
SN_SLOTS = SN_PLAYED + F  # S figures, -1 = none
SN_COMP = SN_SLOTS + S  # F counts: what a penalty draw comes from (draw_source)
W_HAND = SN_COMP + F  # F, S: the planner's position, changed in place and restored
W_SLOTS = W_HAND + F
W_HAND2 = W_SLOTS + S  # F, S: finish_plan's hand and slots after taking slot figures
W_SLOTS2 = W_HAND2 + F
W_TAKEABLE = W_SLOTS2 + S  # S each: finish_plan's slot indices
W_TAKEN = W_TAKEABLE + S
W_USED = W_TAKEN + S
W_PLAN = W_USED + S  # the best plan of finish_plan, B_* fields
B_FOUND, B_KEY, B_POINTS, B_TAKE, B_ACTION, B_ANNOUNCE = range(6)
W_IS_LEGAL = W_PLAN + 6  # NUM_ACTIONS flags
W_LEGAL = W_IS_LEGAL + NUM_ACTIONS  # NUM_ACTIONS: the legal actions, ascending
W_ACTIONS = W_LEGAL + NUM_ACTIONS  # NUM_ACTIONS: the decided action or the candidates
W_SIZE = W_ACTIONS + NUM_ACTIONS
# The float64 companion: the candidates' values, then the best plan's first key.
V_KEY = NUM_ACTIONS
V_SIZE = V_KEY + 1


@njit(cache=True)
def _seen(st, cfg, sn):
    """``seen_of_state``: what the seat to play sees of row ``st``, into ``sn``."""
    p = st[E.TO_PLAY]
    level = cfg[E.C_LEVEL]
    sn[SN_LEVEL] = level
    sn[SN_PHASE] = st[E.PHASE]
    for f in range(F):
        sn[SN_HAND + f] = st[E.HAND + F * p + f]
        sn[SN_OWN_DRAW + f] = st[E.DRAW_CNT + F * p + f]
        sn[SN_PLAYED + f] = st[E.PLAYED + F * p + f]
    sn[SN_DRAW_COUNT] = st[E.DRAW_LEN + p]
    sn[SN_TOP] = st[E.TOP]
    sn[SN_COMBO] = min(st[E.COMBO_LEN + p], O.COMBO_CLIP)  # the observation's clip
    # The observation shows announcement fields only for players who have announced.
    made = st[E.ANN_MADE + p] != 0
    sn[SN_ANNOUNCED] = st[E.ANNOUNCED + p] if made else 0
    sn[SN_ANN_MADE] = made
    sn[SN_SERVES] = st[E.SERVES_SINCE + p] if made else 0
    count, others, laid = 0, False, False
    for q in range(cfg[E.C_N]):
        if st[E.ANN_MADE + q] and st[E.ANNOUNCED + q] > 0:
            count += 1
            others |= q != p
            laid |= st[E.LAID_SINCE + q] != 0
    sn[SN_AMB_BANNED] = level >= 9 and others and (count == 1 or laid)
    for k in range(S):
        sn[SN_SLOTS + k] = st[E.SLOTS + S * p + k]


# -- hand evaluation (kdk_env.heuristic's functions of the same names) -----------------------------
@njit(cache=True)
def _cost_and_runs(hand):
    """``hand_cost(hand)`` and the number of runs of numbered figures in the hand."""
    total = 0
    for f in range(F):
        total += hand[f]
    cost = PER_CARD * total + TRAITOR_COST * hand[TRAITOR]
    if hand[AMBASSADOR]:
        cost += GROUP_WEIGHT * AMB_GROUP
    runs, before = 0, 0
    for f in range(1, KING + 1):  # each run by its entry, lowest first
        if hand[f] and not before:
            cost += GROUP_WEIGHT * ENTRY[f]
            runs += 1
        before = hand[f]
    return cost, runs


@njit(cache=True)
def hand_cost(hand):
    """What the hand still costs me: its runs by their entries, traitors, ambassadors, cards."""
    return _cost_and_runs(hand)[0]


@njit(cache=True)
def run_prospect(hand, slots):
    """Expected combo cards from keeping a run for last: the best run's cards (at most 11),
    discounted for the other groups of hand cards that must go first. Slot figures may fill or
    extend the run but need not go."""
    s0, s1, s2 = slots[0], slots[1], slots[2]
    # One pass over the runs of hand and slot figures together: how many hold hand cards
    # (groups), and the most cards in a run with hand cards and in one without. The Python
    # takes the best of every run's min(k, 11) * RUN_DECAY ** others * chance; a product by a
    # positive factor never rounds a smaller k above a larger one, so the best run of each
    # kind gives the same value.
    groups, most_mine, most_other = 0, 0, 0
    k, mine = 0, False
    for f in range(1, KING + 2):
        c = 0
        if f <= KING:
            c = hand[f] + (s0 == f) + (s1 == f) + (s2 == f)
        if c:
            k += c
            mine |= hand[f] > 0
        elif k:  # a run ends below f
            if mine:
                groups += 1
                most_mine = max(most_mine, k)
            else:
                most_other = max(most_other, k)
            k, mine = 0, False
    if hand[AMBASSADOR]:
        groups += 1
    chance = TRAITOR_DECAY_POW[hand[TRAITOR]]
    best = 0.0
    if most_mine:
        best = max(best, min(most_mine, MAX_COMBO_PTS) * RUN_DECAY_POW[groups - 1] * chance)
    if most_other:
        best = max(best, min(most_other, MAX_COMBO_PTS) * RUN_DECAY_POW[groups] * chance)
    return best


@njit(cache=True)
def slot_value(slots):
    """What my slot figures are worth kept (level 10)."""
    v = 0.0
    for k in range(S):
        if slots[k] >= 0:
            v += SLOT_VALUE[slots[k]]
    return v


@njit(cache=True)
def is_one_run(hand):
    """Whether the hand is one run of consecutive numbered figures (pairs included)."""
    return not hand[TRAITOR] and not hand[AMBASSADOR] and _cost_and_runs(hand)[1] == 1


@njit(cache=True)
def combo_points(ann, length):
    """§4.4: announced and reached, or a late claim, or nothing."""
    if ann:
        return min(MAX_COMBO_PTS, ann + (length - ann) // 2) if length >= ann else 0
    return min(MAX_COMBO_PTS, length // 2) if length >= 3 else 0


@njit(cache=True)
def card_terms(hand, slots):
    """Slot value less hand cost, the run prospect's worth, whether the hand is one run."""
    cost, runs = _cost_and_runs(hand)
    one_run = not hand[TRAITOR] and not hand[AMBASSADOR] and runs == 1
    return slot_value(slots) - cost, RUN_POTENTIAL * run_prospect(hand, slots), one_run


@njit(cache=True)
def stop_value_of(hand, slots, ann, serves, can_ann, cap):
    """What my position is worth when my decision ends with it (the prospect at most cap)."""
    v, prospect, one_run = card_terms(hand, slots)
    prospect = min(cap, prospect)
    v += prospect if can_ann or ann else LATE_SHARE * prospect
    if ann:
        v += (ANN_CHANCE[min(serves, 1)] if one_run else ANN_CHANCE[2]) * ann
    return v


# -- the decision (kdk_env.heuristic.Decision; ``sn`` is its seen position) ------------------------
@njit(cache=True, inline="always")
def _empty(hand):
    """Whether the hand holds no card."""
    for f in range(F):
        if hand[f]:
            return False
    return True


# A position of the planner (``Pos``) is the arrays ``hand`` and ``slots``, changed in place
# and restored, and the numbers top, combo, ann, serves, can_ann.
@njit(cache=True)
def _first_kind_is_serve(sn, f):
    """§3.2/§3.5: OPEN counts as a serve; in DUTY a lay is a redirect when it fits anyway."""
    ph = sn[SN_PHASE]
    if ph == PH_OPEN:
        return True
    if ph == PH_DUTY:
        return not THROW_FIT[f, sn[SN_TOP]]
    return False


@njit(cache=True)
def _second_card(sn, hand, slots, ann, serves, can_ann, first, cap):
    """The second card of a two-card draw (``hand`` holds the first), from SN_COMP."""
    total = -1
    for f in range(F):
        total += sn[SN_COMP + f]
    if total <= 0:
        return stop_value_of(hand, slots, ann, serves, can_ann, cap)
    v = 0.0
    for f in range(F):
        c = sn[SN_COMP + f] - (f == first)
        if c > 0:
            hand[f] += 1
            v += c / total * stop_value_of(hand, slots, ann, serves, can_ann, cap)
            hand[f] -= 1
    return v


@njit(cache=True)
def _penalty_value(sn, hand, slots, ann, serves, can_ann, k):
    """The expected stop value after drawing k penalty cards (§3.4 draw)."""
    # draw_source(k): my draw pile, or at levels 8–9 with the played pile under it.
    if sn[SN_DRAW_COUNT] >= k:
        for f in range(F):
            sn[SN_COMP + f] = sn[SN_OWN_DRAW + f]
    elif sn[SN_LEVEL] == 10:
        return -ELIMINATION
    else:
        for f in range(F):
            sn[SN_COMP + f] = sn[SN_OWN_DRAW + f] + sn[SN_PLAYED + f]
    total = 0
    for f in range(F):
        total += sn[SN_COMP + f]
    cap = card_terms(hand, slots)[1]
    if total == 0:
        return stop_value_of(hand, slots, ann, serves, can_ann, cap)
    v = 0.0
    for f in range(F):
        c = sn[SN_COMP + f]
        if c:
            hand[f] += 1
            if k == 2:
                x = _second_card(sn, hand, slots, ann, serves, can_ann, f, cap)
            else:
                x = stop_value_of(hand, slots, ann, serves, can_ann, cap)
            hand[f] -= 1
            v += c / total * x
    return v


@njit(cache=True)
def _continue_value(sn, hand, slots, top, combo, ann, serves, can_ann):
    """The best of stopping here and throwing on (I am first in the window, §3.4)."""
    if _empty(hand):
        return FINISH_VALUE + combo_points(ann, combo) + slot_value(slots)
    best = stop_value_of(hand, slots, ann, serves, can_ann, INF)
    for f in range(1, F):  # a thrown traitor would end the combo with a penalty
        if hand[f] and THROW_FIT[f, top]:
            hand[f] -= 1
            v = _continue_value(sn, hand, slots, f, combo + 1, ann, serves, can_ann)
            hand[f] += 1
            if v > best:
                best = v
    for k in range(S):
        f = slots[k]
        if f > 0 and THROW_FIT[f, top]:
            slots[k] = -1
            v = _continue_value(sn, hand, slots, f, combo + 1, ann, serves, can_ann)
            slots[k] = f
            if v > best:
                best = v
    return best


@njit(cache=True)
def _after_first_lay(sn, hand, slots, f, combo, ann, serves, can_ann):
    """The value of laying f now (already out of hand or slot), with the best throws after."""
    serve = _first_kind_is_serve(sn, f)
    if serve:
        combo = 1
        if ann:
            serves += 1
    else:
        combo += 1
    if f == TRAITOR or (ann and serve and serves == 2):
        # Every traitor draws a penalty card; a second serve is "Strafe Kombo" (§4.3).
        return _penalty_value(sn, hand, slots, 0, 0, can_ann, 1)
    return _continue_value(sn, hand, slots, f, combo, ann, serves, can_ann)


@njit(cache=True)
def _value_of(sn, hand, slots, a):
    """(True, value) of a terminal action from the seen position, (False, 0) for a free one."""
    combo, ann, serves = sn[SN_COMBO], sn[SN_ANNOUNCED], sn[SN_SERVES]
    can_ann = not sn[SN_ANN_MADE] and not ann
    if a < PASS:
        if a < LAY_SLOT:
            hand[a] -= 1
            v = _after_first_lay(sn, hand, slots, a, combo, ann, serves, can_ann)
            hand[a] += 1
        else:
            k = a - LAY_SLOT
            f = slots[k]
            slots[k] = -1
            v = _after_first_lay(sn, hand, slots, f, combo, ann, serves, can_ann)
            slots[k] = f
        return True, v
    if a == PASS:
        return True, stop_value_of(hand, slots, ann, serves, can_ann, INF)
    if a == FAIL:
        return True, _penalty_value(sn, hand, slots, 0, 0, can_ann, 1) - FAIL_EXTRA
    if a == WEITER:
        hand[TRAITOR] -= 2
        v = _penalty_value(sn, hand, slots, 0, 0, can_ann, 2)
        hand[TRAITOR] += 2
        return True, v
    return False, 0.0


# -- finishing now (Decision.finish_plan) --------------------------------------------------------
# The best plan so far is kept in ``best`` (B_*: its second key, fewer slots spent, and what
# play() reads of it) and ``key[0]`` (its first key, the points less the slot values spent).


@njit(cache=True)
def _can_lay_first(sn, f):
    """Whether hand figure f could be laid now (§3.5), as the mask would say if I held it."""
    ph = sn[SN_PHASE]
    if ph == PH_FREE_OPEN:
        return sn[SN_ANNOUNCED] != 0
    if ph == PH_WINDOW:
        return THROW_FIT[f, sn[SN_TOP]] != 0
    banned = f == AMBASSADOR and sn[SN_AMB_BANNED]
    if ph == PH_OPEN:
        return not banned
    return THROW_FIT[f, sn[SN_TOP]] or (SERVE_FIT[f, sn[SN_TOP]] and not banned)


@njit(cache=True)
def _consider(sn, length, used, nused, taken, ntaken, hand_size, can_ann, action, best, key):
    """One finishing sequence of ``length`` cards that lays the slots ``used``: the new best
    plan if its key beats the best one's (``best``, ``key[0]``)."""
    if can_ann and hand_size >= 2 and length >= 3:
        points, announce = min(length, MAX_COMBO_PTS), True
    else:
        points, announce = combo_points(sn[SN_ANNOUNCED], length), False
    spent = 0.0  # the slot values spent: taken first, then laid, in order
    for i in range(ntaken):
        spent += SLOT_VALUE[sn[SN_SLOTS + taken[i]]]
    for i in range(nused):
        spent += SLOT_VALUE[sn[SN_SLOTS + used[i]]]
    k0, k1 = points - spent, -(ntaken + nused)
    if not best[B_FOUND] or k0 > key[0] or (k0 == key[0] and k1 > best[B_KEY]):
        key[0] = k0
        best[B_FOUND], best[B_KEY], best[B_POINTS] = 1, k1, points
        best[B_TAKE] = taken[0] if ntaken else -1
        best[B_ACTION], best[B_ANNOUNCE] = action, announce


@njit(cache=True)
def _sequences(sn, hand, slots, top, combo, used, nused, taken, ntaken, hand_size, can_ann,
               action, best, key):  # fmt: skip
    """Every way to lay out the rest of the hand by throws from top, in the order of
    ``Decision._sequences``, each handed to :func:`_consider`."""
    if _empty(hand):
        _consider(sn, combo, used, nused, taken, ntaken, hand_size, can_ann, action, best, key)
        return
    for f in range(1, F):
        if hand[f] and THROW_FIT[f, top]:
            hand[f] -= 1
            _sequences(sn, hand, slots, f, combo + 1, used, nused, taken, ntaken, hand_size,
                       can_ann, action, best, key)  # fmt: skip
            hand[f] += 1
            break  # the same figure twice in a row or one higher: the order is forced
    for k in range(S):
        f = slots[k]
        if f > 0 and THROW_FIT[f, top]:
            fresh = True
            for i in range(nused):
                fresh &= used[i] != k
            if fresh:
                used[nused] = k
                _sequences(sn, hand, slots, f, combo + 1, used, nused + 1, taken, ntaken,
                           hand_size, can_ann, action, best, key)  # fmt: skip


@njit(cache=True)
def _finish_plan(sn, is_legal, best, key):
    """``Decision.finish_plan``: whether there is a way to empty my hand in this decision;
    the best one in ``best`` (B_POINTS, B_TAKE the first slot to take or -1, B_ACTION,
    B_ANNOUNCE; scratch from ``sn``)."""
    hand = sn[SN_HAND : SN_HAND + F]
    slots = sn[SN_SLOTS : SN_SLOTS + S]
    size = 0
    for f in range(F):
        size += hand[f]
    if not size or hand[TRAITOR]:
        return False
    # Quick exits (see the Python): no ambassador with numbered cards, and every gap between my
    # lowest and highest numbered figure filled from a slot.
    lo, hi, numbered, filled = -1, -1, 0, 0
    for f in range(1, AMBASSADOR):
        if hand[f]:
            if lo < 0:
                lo = f
            hi = f
            numbered += 1
    for k in range(S):
        filled += slots[k] > 0
    if numbered and (hand[AMBASSADOR] or hi - lo + 1 - numbered > filled):
        return False
    can_ann = not sn[SN_ANN_MADE] and not sn[SN_ANNOUNCED]
    takeable = sn[W_TAKEABLE : W_TAKEABLE + S]
    m = 0
    for k in range(S):
        if slots[k] > TRAITOR and is_legal[TAKE_SLOT + k]:
            takeable[m] = k
            m += 1
    best[B_FOUND] = 0
    taken, used = sn[W_TAKEN : W_TAKEN + S], sn[W_USED : W_USED + S]
    hand2, slots2 = sn[W_HAND2 : W_HAND2 + F], sn[W_SLOTS2 : W_SLOTS2 + S]
    for j in range(1 << m):  # itertools.combinations(takeable, r) for r = 0..m
        combo_mask = COMBOS[m, j]
        hand2[:] = hand
        slots2[:] = slots
        ntaken = 0
        for i in range(m):
            if combo_mask >> i & 1:
                k = takeable[i]
                taken[ntaken] = k
                ntaken += 1
                hand2[slots[k]] += 1
                slots2[k] = -1
        hand_size = 0
        for f in range(F):
            hand_size += hand2[f]
        # The first lay: a hand figure as this phase allows, else a slot figure.
        for a in range(1, F + S):
            if a < F:
                f, k = a, -1
                if not (hand2[f] and _can_lay_first(sn, f)):
                    continue
                action = f
            else:
                k = a - F
                f = slots2[k]
                action = LAY_SLOT + k
                if not (f > TRAITOR and is_legal[action]):
                    continue
            serve = _first_kind_is_serve(sn, f)
            if sn[SN_ANNOUNCED] and serve and sn[SN_SERVES] >= 1:
                continue  # a second serve would fail the combo (§4.3(2))
            combo = 1 if serve else sn[SN_COMBO] + 1
            nused = 0
            if k < 0:
                hand2[f] -= 1
            else:
                used[0] = k
                nused = 1
            _sequences(sn, hand2, slots2, f, combo, used, nused, taken, ntaken, hand_size,
                       can_ann, action, best, key)  # fmt: skip
            if k < 0:
                hand2[f] += 1
    return best[B_FOUND] != 0


# -- the phases (Decision.play, finish, sp_declare, slot_pick, swap) ----------------------------
@njit(cache=True)
def _play(sn, is_legal, legal, count, actions, values):
    """``Decision.play``: 0 and the action in ``actions[0]``, or the number of candidates,
    (action, value) in ``actions`` and ``values``, ascending."""
    best, key = sn[W_PLAN : W_PLAN + 6], values[V_KEY:]
    if _finish_plan(sn, is_legal, best, key):
        if best[B_TAKE] >= 0:  # one free action per call; the plan is made again after it
            actions[0] = TAKE_SLOT + best[B_TAKE]
        elif best[B_ANNOUNCE] and is_legal[ANNOUNCE]:
            actions[0] = ANNOUNCE + min(best[B_POINTS], MAX_COMBO_PTS) - MIN_ANNOUNCE
        else:
            actions[0] = best[B_ACTION]
        return 0
    hand, slots = sn[W_HAND : W_HAND + F], sn[W_SLOTS : W_SLOTS + S]
    hand[:] = sn[SN_HAND : SN_HAND + F]
    slots[:] = sn[SN_SLOTS : SN_SLOTS + S]
    if EARLY_ANNOUNCE and is_legal[ANNOUNCE]:
        # My hand is one run that I cannot start in this decision: announce it now.
        size = 0
        for f in range(F):
            size += hand[f]
        if size >= EARLY_MIN and is_one_run(hand):
            for i in range(S):  # a slot figure that extends the run joins it
                f = slots[i]
                if f > TRAITOR:
                    hand[f] += 1
                    joins = is_one_run(hand)
                    hand[f] -= 1
                    if joins:
                        actions[0] = TAKE_SLOT + i
                        return 0
            actions[0] = ANNOUNCE + min(size, MAX_COMBO_PTS) - MIN_ANNOUNCE
            return 0
    m = 0
    for j in range(count):
        judged, v = _value_of(sn, hand, slots, legal[j])
        if judged:
            actions[m] = legal[j]
            values[m] = v
            m += 1
    if m == 0:  # only free actions were judged: take a terminal fallback
        actions[0] = legal[0]
        for a in (PASS, FAIL, SECURE):
            if is_legal[a]:
                actions[0] = a
                break
    return m


@njit(cache=True)
def _finish(sn, is_legal):
    """§3.5 FINISH: claim late if possible, top up by the odds, else secure."""
    if is_legal[CLAIM_LATE]:
        return CLAIM_LATE  # min(11, L // 2) >= 1 > 0: a late claim always pays
    if is_legal[TOP_UP]:
        ann = sn[SN_ANNOUNCED]
        need = ann - sn[SN_COMBO]
        total, fit = 0, 0  # of draw_source(1): none at level 10 on an empty pile
        if sn[SN_DRAW_COUNT] >= 1 or sn[SN_LEVEL] != 10:
            for f in range(F):
                c = sn[SN_OWN_DRAW + f]
                if sn[SN_DRAW_COUNT] < 1:
                    c += sn[SN_PLAYED + f]
                total += c
                if THROW_FIT[f, sn[SN_TOP]]:
                    fit += c
        if total and need > 0:
            p = math.pow(fit / total, float(need))  # C's pow (see RUN_DECAY_POW)
            if p * ann >= (1 - p) * TOPUP_RISK:
                return TOP_UP
    return SECURE


LINEAR_PROBES, PERTURB_SHIFT = 9, 5  # CPython's setobject.c


@njit(cache=True)
def _set_insert(table, mask, key):
    """setobject.c's probe sequence for a new key whose hash is itself (a small int)."""
    i = key & mask
    perturb = key
    while True:
        if table[i] < 0:
            table[i] = key
            return
        if i + LINEAR_PROBES <= mask:
            for j in range(i + 1, i + LINEAR_PROBES + 1):
                if table[j] < 0:
                    table[j] = key
                    return
        perturb >>= PERTURB_SHIFT
        i = (i * 5 + 1 + perturb) & mask


@njit(cache=True)
def set_order(items, count, out):
    """The order in which CPython 3 iterates ``set(items[:count])`` (distinct ints >= 0, added
    in that order) into ``out[:count]``: ``Decision`` iterates its legal set so in slot_pick
    and swap, where the first of equal gains wins."""
    size = 8  # PySet_MINSIZE
    table = np.full(size, -1, dtype=np.int64)
    for j in range(count):
        _set_insert(table, size - 1, items[j])
        if (j + 1) * 5 >= (size - 1) * 3:  # set_table_resize(so, used * 4), in table order
            old = table
            size = 8
            while size <= (j + 1) * 4:
                size <<= 1
            table = np.full(size, -1, dtype=np.int64)
            for key in old:
                if key >= 0:
                    _set_insert(table, size - 1, key)
    k = 0
    for key in table:
        if key >= 0:
            out[k] = key
            k += 1


@njit(cache=True)
def _slot_pick(sn, legal, count):
    """§6.3(4): the most valuable figure, replacing an old one only for a better one."""
    order = np.empty(count, dtype=np.int64)
    set_order(legal, count, order)
    best, best_gain = PASS, 0.0
    for a in order:
        if a < SLOT_PICK:
            continue
        k, f = divmod(a - SLOT_PICK, F)
        old = sn[SN_SLOTS + k]
        gain = SLOT_VALUE[f] - (SLOT_VALUE[old] if old >= 0 else 0.0)
        if gain > best_gain:
            best, best_gain = a, gain
    return best


@njit(cache=True)
def _swap(sn, legal, count):
    """§6.5: the swap that most lowers the hand's cost net of the slot values, if any."""
    order = np.empty(count, dtype=np.int64)
    set_order(legal, count, order)
    hand, new = sn[SN_HAND : SN_HAND + F], sn[W_HAND : W_HAND + F]
    new[:] = hand
    cost = hand_cost(hand)
    best, best_gain = PASS, SWAP_MIN
    for a in order:
        if not SLOT_SWAP <= a < SLOT_PICK:
            continue
        k, f = divmod(a - SLOT_SWAP, F)
        g = sn[SN_SLOTS + k]
        new[f] -= 1
        new[g] += 1
        gain = cost - hand_cost(new) + SLOT_VALUE[f] - SLOT_VALUE[g]
        new[f] += 1
        new[g] -= 1
        if gain > best_gain:
            best, best_gain = a, gain
    return best


@njit(cache=True)
def _decide(st, cfg, w, count, values):
    """``Decision.decide`` for the seat to play in ``st``, whose ``count`` legal actions are in
    ``w[W_LEGAL:]``: 0 and the action in ``w[W_ACTIONS]``, or the number of candidates for
    :func:`_pick` in ``w[W_ACTIONS:]`` and ``values``."""
    _seen(st, cfg, w)
    return decide_seen(w, count, values)


@njit(cache=True)
def decide_seen(w, count, values):
    """``Decision.decide`` on the seen position already in the head of ``w`` (``SN_*``, as
    :func:`_seen` writes it; ``kdk_env/heuristic_batch.py`` reads it from an observation),
    the ``count`` legal actions in ``w[W_LEGAL:]``: as :func:`_decide`."""
    legal, actions = w[W_LEGAL : W_LEGAL + count], w[W_ACTIONS : W_ACTIONS + NUM_ACTIONS]
    is_legal = w[W_IS_LEGAL : W_IS_LEGAL + NUM_ACTIONS]
    is_legal[:] = 0
    for a in legal:
        is_legal[a] = 1
    ph = w[SN_PHASE]
    if ph == PH_FINISH:
        actions[0] = _finish(w, is_legal)
    elif ph == PH_SP_DECLARE:  # §6.2 step 4: declare only with a nearly empty draw pile
        declare = is_legal[DECLARE_SP] and w[SN_DRAW_COUNT] <= SP_DECLARE_AT
        actions[0] = DECLARE_SP if declare else PASS
    elif ph == PH_PICKING:
        actions[0] = _slot_pick(w, legal, count)
    elif ph == PH_SWAP:
        actions[0] = _swap(w, legal, count)
    else:
        return _play(w, is_legal, legal, count, actions, values)
    return 0


@njit(cache=True)
def _pick(actions, values, m, rngs):
    """The candidate of highest value, each value raised by its random number times 1e-6."""
    best, best_v = actions[0], -1e9
    for j in range(m):
        v = values[j] + uniform(rngs) * 1e-6
        if v > best_v:
            best, best_v = actions[j], v
    return best


# -- the rollout module's functions (agents/engine_rollout.py) -----------------------------------
@njit(cache=True)
def decide(st, consts, actions, values):
    """``Decision(seen_of_state(state), set(legal), rand).decide()`` on row ``st``: 0 and the
    action in ``actions[0]``, or the number m of candidates in ``actions[:m]``, ``values[:m]``
    (for tests)."""
    cfg = consts[0]
    w, v = np.empty(W_SIZE, dtype=np.int64), np.empty(V_SIZE)
    m = _decide(st, cfg, w, E.legal_row(st, cfg, w[W_LEGAL : W_LEGAL + NUM_ACTIONS]), v)
    actions[: max(m, 1)] = w[W_ACTIONS : W_ACTIONS + max(m, 1)]
    values[:m] = v[:m]
    return m


@njit(cache=True)
def policy(st, consts, rngs):
    """``kdk_env.heuristic.rollout_policy`` on row ``st``: the same move, drawing the same uniform
    numbers from ``rngs`` (none with one legal action)."""
    cfg = consts[0]
    w = np.empty(W_SIZE, dtype=np.int64)
    count = E.legal_row(st, cfg, w[W_LEGAL : W_LEGAL + NUM_ACTIONS])
    if count == 1:
        return w[W_LEGAL]
    if count == 0:  # as the Python policy, which fails on an empty legal set
        raise ValueError("policy: no legal action (the game is over)")
    values = np.empty(V_SIZE)
    m = _decide(st, cfg, w, count, values)
    if m == 0:
        return w[W_ACTIONS]
    return _pick(w[W_ACTIONS : W_ACTIONS + m], values, m, rngs)


@njit(cache=True)
def apply(st, consts, action, rngs):
    """Play legal ``action`` (the engine's ``apply_row``; chance from ``rngs[0]``)."""
    E.apply_row(st, consts[0], consts[1], action, rngs, 0)


@njit(cache=True)
def is_over(st):
    """``rules.is_terminal``."""
    return st[E.PHASE] == E.PH_GAME_OVER


@njit(cache=True)
def to_play(st):
    """``state.to_play`` (-1 at game over)."""
    return st[E.TO_PLAY]


@njit(cache=True)
def legal(st, consts, out):
    """``rules.legal_actions`` into ``out`` (ascending); their number."""
    return E.legal_row(st, consts[0], out)


@njit(cache=True)
def scores(st, consts, out):
    """``rules.scores`` into ``out[:n]``."""
    for q in range(consts[0][E.C_N]):
        out[q] = float(st[E.SCORE + q])


@njit(cache=True)
def winners(st, consts, out):
    """``rules.winners`` (§5.4 keys): 1 in ``out[s]`` for each of them, 0 for the others;
    their number."""
    n = consts[0][E.C_N]
    best = 0
    for q in range(1, n):
        if E.better_row(st, q, best) > 0:
            best = q
    count = 0
    for q in range(n):
        out[q] = E.better_row(st, q, best) == 0
        count += out[q]
    return count


# -- the search's kernels (agents/engine_rollout.py) ---------------------------------------------
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
