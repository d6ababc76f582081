"""A KdK heuristic that plays the way a good human does, from its observation only.

See :class:`HeuristicKdK` for the strategy in plain words. Rules are cited by the section
numbers of ``docs/kdk_rules.md`` (§x.y).

Its compiled twin, ``heuristic_batch.act_batch``, takes the agent's decisions for many
observations at once (the heuristic seats of self-play training). The module also holds
:func:`rollout_policy`, the same strategy over a full (determinised) state for ISMCTS: it
reads only what the seat to play could see, straight from the state instead of through the
observation vector (a search component, not an agent).
"""

from __future__ import annotations

import math
import random
from functools import lru_cache
from itertools import accumulate, combinations
from typing import Any, NamedTuple

import numpy as np

from kdk_env.observation import LAYOUT, OBS_SIZE, params_of
from kdk_env.rules import (
    AMBASSADOR,
    ANNOUNCE,
    CLAIM_LATE,
    DECLARE_SP,
    FAIL,
    LAY_SLOT,
    MAX_COMBO_PTS,
    MAX_PLAYERS,
    NUM_FIGURES,
    NUM_SLOTS,
    PASS,
    SECURE,
    SERVE_FIT,
    SLOT_PICK,
    SLOT_SWAP,
    TAKE_SLOT,
    THROW_FIT,
    TOP_UP,
    TRAITOR,
    WEITER,
    Phase,
    announce_action,
    combo_points,
    legal_actions,
    slot_of,
)
from tablegym.agent import Agent, GameView, legal_ids

# -- weights ------------------------------------------------------------------------------------
# The numbers were chosen by seeded tournaments against the greedy play-out policy of
# tests/kdk_positions.py (3 players, level 10; mean round score margin over the opponents).
# What a hand costs, in rough "duty turns still needed" (a turn is worth about GROUP_WEIGHT
# points). After my lay I throw on in the window, so a run of consecutive figures (pairs
# included) goes down in one turn; what costs is its entry. On top t a figure c fits under duty
# iff c ≥ t (a redirect for c = t, t + 1, a serve above, §3.2), so a run from lo goes down whole
# only on a top ≤ lo. ENTRY[lo] ≈ 1 / P(a turn lets me enter at lo): the duty tops measured in
# self-play (traitor, king and ambassador tops are the most common), plus the chance of a
# throw window (top lo - 1 or lo) or an open in between.
P_TOP_AT_MOST = (0.11, 0.20, 0.25, 0.32, 0.38, 0.44, 0.50, 0.55, 0.60, 0.66, 0.73, 0.86)
WINDOW_CHANCE = 0.15
ENTRY = tuple(1.0 / min(1.0, p + WINDOW_CHANCE) for p in P_TOP_AT_MOST)
GROUP_WEIGHT = 1.0
PER_CARD = 0.1  # unplayed cards decide the places of the non-finishers (§5.1)
# A traitor needs a turn of its own and comes back as a penalty card (§2.1); it can never be
# the last card, so it is worst in a small hand.
TRAITOR_COST = 4.0
AMB_GROUP = 1.0  # ambassadors serve on anything (§3.2): one sure turn for all of them
# Slot figures (level 10) are not hand cards: they are insurance against a fault, worth most
# as an ambassador (a wild serve without penalty), then as a king.
SLOT_VALUE = (0.0, 0.22, 0.24, 0.26, 0.28, 0.3, 0.32, 0.34, 0.36, 0.38, 0.4, 0.55, 0.9)
# Combo prospects: the best run in hand (slot figures may fill it, §4.7) can be kept for last,
# announced and laid out in one go (§4.2); worth RUN_POTENTIAL per card, discounted by
# RUN_DECAY for each other group of hand cards that must go first (and TRAITOR_DECAY per
# traitor). Once this round's announcement is used up, only a late claim is left: half the
# points (§4.4). The potential is large because combo points (up to 11) dwarf place points
# (1 per place): tournaments preferred 2.5 to 1.0 by about 1.5 points per round.
RUN_POTENTIAL = 2.5
RUN_DECAY = 0.8
TRAITOR_DECAY = 0.8
LATE_SHARE = 0.5
# Announce a hand that is one run of at least EARLY_MIN cards even before I can start it
# (about +0.2 points per round in tournaments). An announced combo still alive is worth its
# N times the chance to complete it: a one-run hand with no serve used since the
# announcement, with the one serve used (§4.3(2)), any other hand.
EARLY_ANNOUNCE = True
EARLY_MIN = 3
ANN_CHANCE = (0.5, 0.25, 0.1)
FAIL_EXTRA = 0.3  # an interruption hands the initiative to the next player (§3.4)
FINISH = 6.0  # finishing is worth more than any hand
ELIMINATION = 10.0  # level 10: a penalty draw from an empty pile is shuffle pressure (§6.4)
# FINISH: a top-up is worth it when the chance of completing the combo pays for the risk of
# being stuck with a card that does not fit.
TOPUP_RISK = 3.0
# SP_DECLARE (level 10): declare when the own draw pile is this small after the deal, since a
# penalty draw from an empty pile eliminates (§6.2, §6.4); otherwise a declaration only gives
# the others slots.
SP_DECLARE_AT = 2
SWAP_MIN = 0.05


class Pos(NamedTuple):
    """My side of the game during a planned sequence of my own lays."""

    hand: tuple[int, ...]  # counts per figure
    slots: tuple[int, ...]  # slot figures, -1 = none
    top: int
    combo: int  # combo length (§4.1)
    ann: int  # active announcement N, 0 = none
    serves: int  # serves since the announcement
    can_ann: bool  # an announcement is still possible this round


class Seen:
    """The decoded observation, as plain Python numbers (seat 0 is me)."""

    def __init__(self, obs: np.ndarray):
        self._fill(_decode(np.asarray(obs)[None])[0])

    def _fill(self, r: list[int]) -> None:
        self.level = 8 + r[_LEVEL]
        self.phase = _PHASES[r[_PHASE]]
        self.hand = tuple(r[_HAND])
        self.own_draw = tuple(r[_OWN_DRAW])
        self.played = tuple(r[_PLAYED])
        self.draw_count = r[_DRAW_COUNT]
        self.top = r[_TOP]
        self.combo = r[_COMBO]
        self.announced = r[_ANNOUNCED]
        self.ann_made = bool(r[_ANN_MADE])
        self.serves = r[_SERVES]
        self.amb_banned = bool(r[_AMB_BANNED])
        self.slots = tuple(r[_SLOTS])


# -- reading observations, many at once ---------------------------------------------------------
# Speed: a numpy call costs about a microsecond whatever its size, as much as a Python
# statement on one value, so the fields the heuristic reads are decoded for a whole batch of
# rows at once, with the arithmetic of ``observation.decode`` (``Layout.decode(raw=True)``),
# reduced to the numbers of a ``Seen`` (one-hot fields to indices, the ambassador ban) and
# handed to Python in one ``tolist``. Only the observer's row (the first) of a per-seat field
# is read, except for the ban, which reads ``announced`` and ``laid_since`` of every seat.
_READ = (  # (field, columns from its start), in the order of a decoded row
    # whole numbers (converted as int() does: truncated)
    ("hand", NUM_FIGURES),
    ("own_draw", NUM_FIGURES),
    ("played", NUM_FIGURES),
    ("draw_count", 1),
    ("combo_len", 1),
    ("serves_since", 1),
    ("announced", MAX_PLAYERS),
    # read as flags
    ("ann_made", 1),
    ("laid_since", MAX_PLAYERS),
    # one-hot: six rows of 13 figures (phase and level padded)
    ("top", NUM_FIGURES),
    ("slots", NUM_SLOTS * NUM_FIGURES),
    ("phase", len(Phase)),
    ("level", 3),
)
_COLS = np.concatenate([np.arange(LAYOUT.at[n], LAYOUT.at[n] + c) for n, c in _READ])
_IN = {n: slice(end - c, end) for (n, c), end in zip(_READ, accumulate(c for _, c in _READ))}
# The one-hot columns, from _HOT on, go to six rows of 13 (top, the slots, phase, level) at
# _HOT_AT; phase and level are padded with -inf, so that one argmax finds every index.
_HOT = _IN["top"].start
_CARD_ROWS = 1 + NUM_SLOTS  # the top and the slots: a figure each, or none
_HOT_ROWS = _CARD_ROWS + 2  # then phase and level
_HOT_AT = np.concatenate(
    [
        np.arange(_CARD_ROWS * NUM_FIGURES),
        _CARD_ROWS * NUM_FIGURES + np.arange(len(Phase)),
        (_CARD_ROWS + 1) * NUM_FIGURES + np.arange(_IN["level"].stop - _IN["level"].start),
    ]
)
# A decoded row: the whole numbers, then ann_made, top, the slots, phase, level, the ban.
_HAND, _OWN_DRAW, _PLAYED = _IN["hand"], _IN["own_draw"], _IN["played"]
_DRAW_COUNT, _COMBO = _IN["draw_count"].start, _IN["combo_len"].start
_SERVES, _ANNOUNCED = _IN["serves_since"].start, _IN["announced"].start
_ANN_MADE = _IN["announced"].stop
_TOP = _ANN_MADE + 1
_SLOTS = slice(_TOP + 1, _TOP + 1 + NUM_SLOTS)
_PHASE, _LEVEL, _AMB_BANNED = range(_SLOTS.stop, _SLOTS.stop + 3)
_PHASES = tuple(Phase)
# The columns that ``observation.params_of`` reads (player count, rounds, deck).
_PARAMS = np.r_[LAYOUT.slices["seats"], LAYOUT.at["num_rounds"], LAYOUT.at["deck_mode"]]
_AFFINE: dict[bytes, np.ndarray] = {}  # their bytes -> (shift, scale) of _COLS


def _affine_of(params: np.ndarray) -> np.ndarray:
    """``(shift, scale)`` of the columns read, for an observation whose ``_PARAMS`` columns
    hold ``params``: float64, as ``Layout.decode`` computes with them."""
    key = params.tobytes()
    hit = _AFFINE.get(key)
    if hit is None:
        if len(_AFFINE) >= 256:
            _AFFINE.clear()
        vec = np.zeros(OBS_SIZE, dtype=params.dtype)
        vec[_PARAMS] = params
        scale, shift = LAYOUT.affine(**params_of(vec))
        hit = _AFFINE[key] = np.stack([shift[_COLS], scale[_COLS]]).astype(np.float64)
    return hit


def _decode(obs: np.ndarray) -> list[list[int]]:
    """The rows of ``obs`` (k ≥ 1 observations) as lists of ints laid out as above."""
    if obs.ndim != 2 or obs.shape[1] != OBS_SIZE:
        raise ValueError(f"expected observations of length {OBS_SIZE}, got shape {obs.shape}")
    k = len(obs)
    params = obs[:, _PARAMS]
    if k == 1 or (params == params[0]).all():  # one game's options, as in a batch of one table
        shift, scale = _affine_of(params[0])[:, None, :]
    else:
        shift, scale = np.stack([_affine_of(p) for p in params], axis=1)
    raw = (obs[:, _COLS] - shift) / scale
    near = np.rint(raw)
    raw = np.where(np.abs(raw - near) < 1e-3, near, raw)
    hot = np.full((k, _HOT_ROWS * NUM_FIGURES), -np.inf)
    hot[:, _HOT_AT] = raw[:, _HOT:]
    hot = hot.reshape(k, _HOT_ROWS, NUM_FIGURES)
    first = hot.argmax(2)  # the index of the (first) largest value, as np.argmax
    # §3.3: my ambassador may not open or serve while another player is announced and (his is
    # the only announcement or some announcer has laid since announcing).
    announced = raw[:, _IN["announced"]] > 0
    banned = (
        (first[:, _CARD_ROWS + 1] >= 1)  # level 9 or 10
        & announced[:, 1:].any(1)
        & ((announced.sum(1) == 1) | (raw[:, _IN["laid_since"]] * announced).any(1))
    )
    out = np.concatenate(
        [
            raw[:, :_ANN_MADE],
            raw[:, _ANN_MADE, None] != 0,
            np.where(hot[:, :_CARD_ROWS].any(2), first[:, :_CARD_ROWS], -1),  # -1: none
            first[:, _CARD_ROWS:],
            banned[:, None],
        ],
        axis=1,
    )
    return out.astype(np.int64).tolist()  # whole numbers truncated, as int() does


# -- hand evaluation ----------------------------------------------------------------------------
def runs(hand: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """The maximal runs of consecutive numbered figures: (lowest, highest figure, cards)."""
    out = []
    f = 1
    while f <= 11:
        if hand[f]:
            lo, k = f, 0
            while f <= 11 and hand[f]:
                k += hand[f]
                f += 1
            out.append((lo, f - 1, k))
        else:
            f += 1
    return out


def hand_cost(hand: tuple[int, ...]) -> float:
    """What the hand still costs me: its runs by their entries, traitors, ambassadors, cards."""
    cost = PER_CARD * sum(hand) + TRAITOR_COST * hand[TRAITOR]
    if hand[AMBASSADOR]:
        cost += GROUP_WEIGHT * AMB_GROUP
    for lo, _, _ in runs(hand):
        cost += GROUP_WEIGHT * ENTRY[lo]
    return cost


def run_prospect(hand: tuple[int, ...], slots: tuple[int, ...] = ()) -> float:
    """Expected combo cards from keeping a run for last: the best run's cards (at most 11,
    §4.4), discounted for the other groups of hand cards that must go first (a traitor comes
    back as a random card). Slot figures may fill or extend the run (§4.7) but need not go."""
    extra = [f for f in slots if f > TRAITOR]
    both = list(hand)
    for f in extra:
        both[f] += 1
    rs = runs(tuple(both))
    with_hand = [any(hand[lo : hi + 1]) for lo, hi, _ in rs]
    groups = sum(with_hand) + (1 if hand[AMBASSADOR] else 0)
    chance = TRAITOR_DECAY ** hand[TRAITOR]
    best = 0.0
    for (_, _, k), mine in zip(rs, with_hand):
        others = groups - (1 if mine else 0)
        best = max(best, min(k, MAX_COMBO_PTS) * RUN_DECAY**others * chance)
    return best


def slot_value(slots: tuple[int, ...]) -> float:
    """What my slot figures are worth kept (level 10)."""
    return sum(SLOT_VALUE[f] for f in slots if f >= 0)


def is_one_run(hand: tuple[int, ...]) -> bool:
    """Whether the hand is one run of consecutive numbered figures (pairs included)."""
    return not hand[TRAITOR] and not hand[AMBASSADOR] and len(runs(hand)) == 1


def add(hand: tuple[int, ...], f: int, k: int = 1) -> tuple[int, ...]:
    """The hand with k more cards of figure f (k < 0: fewer)."""
    h = list(hand)
    h[f] += k
    return tuple(h)


def without_slot(slots: tuple[int, ...], k: int) -> tuple[int, ...]:
    """The slots with slot k emptied."""
    s = list(slots)
    s[k] = -1
    return tuple(s)


# Planning and search meet the same hands again and again. A plain dict, not an lru_cache:
# every full collection of the garbage collector walks an lru_cache's entries one by one
# (about a millisecond per 4,000), while it soon stops tracking a dict of tuples of numbers.
_TERMS: dict[tuple, tuple[float, float, bool]] = {}
_MAX_TERMS = 1 << 16


def card_terms(hand: tuple[int, ...], slots: tuple[int, ...]) -> tuple[float, float, bool]:
    """What a stop value takes from the cards alone: slot value less hand cost, the run
    prospect's worth (at most 11 cards times RUN_POTENTIAL) and whether the hand is one run."""
    key = (hand, slots)
    terms = _TERMS.get(key)
    if terms is None:
        if len(_TERMS) >= _MAX_TERMS:
            _TERMS.clear()
        terms = _TERMS[key] = (
            slot_value(slots) - hand_cost(hand),
            RUN_POTENTIAL * run_prospect(hand, slots),
            is_one_run(hand),
        )
    return terms


def stop_value_of(
    hand: tuple[int, ...],
    slots: tuple[int, ...],
    ann: int,
    serves: int,
    can_ann: bool,
    cap: float = math.inf,
) -> float:
    """What my position is worth when my decision ends with it (the run prospect at most
    ``cap``); ``ann``, ``serves``, ``can_ann`` as in :class:`Pos`."""
    v, prospect, one_run = _TERMS.get((hand, slots)) or card_terms(hand, slots)
    prospect = min(cap, prospect)
    v += prospect if can_ann or ann else LATE_SHARE * prospect
    if ann:
        # The announced combo is still alive: worth its points by the chance to lay the hand
        # out with the one serve left, or with none (§4.3(2)).
        v += (ANN_CHANCE[min(serves, 1)] if one_run else ANN_CHANCE[2]) * ann
    return v


# The numbered figures and ambassadors that may be thrown on top t (§3.2), in figure order;
# indexed like THROW_FIT (t = -1, an empty box, reads the last row as THROW_FIT does).
THROWS_ON = tuple(
    tuple(f for f in range(1, NUM_FIGURES) if THROW_FIT[f][t]) for t in range(NUM_FIGURES)
)


class HeuristicKdK(Agent):
    """Rule-of-thumb KdK player; reads only the observation's raw fields and the mask.

    The strategy in plain words:

    * **Shed in runs.** After my lay I am first in the throw window (§3.4), so a run of
      consecutive figures (pairs included) goes down in one turn: lay its first card, throw
      the rest. A hand costs me its cards, its separate runs (a low run more: on top t only
      figures ≥ t fit under duty, §3.2) and its traitors (each lay draws a penalty card, and a
      traitor can never be the last card). Every lay is judged together with the throws that
      can follow it, and so are passing, faulting and WEITER (by the expected penalty card,
      drawn from my own draw pile, whose composition I see): I take the cheapest result.
    * **Keep the best run for last.** Combo points (up to 11) are worth far more than places
      (1 point each), so the longest run in hand is a prospect: I shed the other groups first
      and keep it whole, even at the price of a fault when the only lay would break a long run.
    * **Announce what I can reach.** When my whole hand can go down in one uninterrupted
      sequence from this decision (nobody acts between my own lays), I announce exactly the
      length it reaches, counting pairs, +1 steps, the cards I laid since my last serve when
      the first lay is no serve (§4.1), and slot figures that fit, taken into the hand first
      (§4.7). When my hand is one run that I cannot start yet, I announce its length at once:
      the others then may not throw (level 8) or serve traitors and ambassadors (level ≥ 9),
      I may open freely after their faults (§4.5), and a failed announcement costs no card.
    * **Save penalty cards.** A fitting lay usually beats FAIL. With nothing else, an
      ambassador or a slot figure serves on anything; two traitors go as WEITER (both are
      gone, the hard top stays for the next player); one traitor at least keeps my hand size.
      A penalty card is never counted as a chance to lengthen my run.
    * **Windows:** throw to run on from my own card or to shed a card, unless it breaks the
      run I keep.
    * **Finishing:** a combo of 3 or more without announcement is claimed late (it always
      pays, §4.4); a short announced finish is topped up only when my draw pile makes the
      missing cards likely. I never need top-ups during play (I announce what I hold) and
      never ABORT (it only costs a card).
    * **Level 10:** slot picks ambassadors, then kings, then high figures; a swap parks a hand
      card in a slot when that makes the hand cheaper (a traitor out, a run completed); shuffle
      pressure is declared only when my own draw pile is nearly empty (a penalty draw would
      eliminate me), since a declaration hands the others the slots.

    The ``view`` argument is ignored: the agent decides on the observation alone.
    """

    spec = "heuristic"

    def __init__(self, seed: int | None = None):
        # Only breaks exact ties, so equal moves are not always taken in id order.
        self.rng = np.random.default_rng(seed)

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, view: GameView | None = None
    ) -> int:
        """A legal action id chosen by the strategy above; ``view`` is ignored."""
        legal = legal_ids(action_mask)
        if legal.size == 1:
            return int(legal[0])
        ids = set(legal.tolist())
        return _checked(Decision(Seen(observation), ids, self.rng).choose(), ids)


def _checked(action: int, legal: set[int]) -> int:
    """``action``, which a bug here must not turn into an illegal move in a game."""
    if action not in legal:
        raise AssertionError(f"heuristic chose illegal action {action}")
    return action


class Decision:
    """One decision: the seen position, the legal actions and the plans built on them."""

    def __init__(
        self, seen: Seen, legal: set[int], rng: np.random.Generator | random.Random
    ) -> None:
        self.s = seen
        self.legal = legal
        self.rng = rng
        self.memo: dict[Pos, float] = {}

    # -- dispatch ------------------------------------------------------------------------------
    def choose(self) -> int:
        """The action for this decision, by phase."""
        choice = self.decide()
        if not isinstance(choice, list):
            return choice
        rng = self.rng
        if isinstance(rng, np.random.Generator):  # one call draws the numbers of many
            return _pick(choice, rng.random(len(choice)).tolist())
        return _pick(choice, [rng.random() for _ in choice])

    def decide(self) -> int | list[tuple[int, float]]:
        """The action for this decision, or candidates for :func:`_pick`: (action, value)
        pairs whose exact ties are left to random numbers."""
        ph = self.s.phase
        if ph == Phase.FINISH:
            return self.finish()
        if ph == Phase.SP_DECLARE:
            return self.sp_declare()
        if ph == Phase.SLOT_PICK:
            return self.slot_pick()
        if ph == Phase.SWAP:
            return self.swap()
        return self.play()

    # -- between rounds (level 10, §6.2–6.5) ---------------------------------------------------
    def sp_declare(self) -> int:
        """§6.2 step 4: declare only with a nearly empty draw pile."""
        if DECLARE_SP in self.legal and self.s.draw_count <= SP_DECLARE_AT:
            return DECLARE_SP
        return PASS

    def slot_pick(self) -> int:
        """§6.3(4): the most valuable figure, replacing an old one only for a better one."""
        best, best_gain = PASS, 0.0
        for a in self.legal:
            if a < SLOT_PICK:
                continue
            k, f = slot_of(a)
            old = self.s.slots[k]
            gain = SLOT_VALUE[f] - (SLOT_VALUE[old] if old >= 0 else 0.0)
            if gain > best_gain:
                best, best_gain = a, gain
        return best

    def swap(self) -> int:
        """§6.5: the swap that most lowers the hand's cost net of the slot values, if any."""
        hand, slots = self.s.hand, self.s.slots
        best, best_gain = PASS, SWAP_MIN
        for a in self.legal:
            if not SLOT_SWAP <= a < SLOT_PICK:
                continue
            k, f = slot_of(a)
            g = slots[k]
            new = add(add(hand, f, -1), g)
            gain = hand_cost(hand) - hand_cost(new) + SLOT_VALUE[f] - SLOT_VALUE[g]
            if gain > best_gain:
                best, best_gain = a, gain
        return best

    # -- finishing (§3.5 FINISH) ---------------------------------------------------------------
    def finish(self) -> int:
        """§3.5 FINISH: claim late if possible, top up by the odds, else secure."""
        if CLAIM_LATE in self.legal:
            return CLAIM_LATE  # min(11, L // 2) ≥ 1 > 0: a late claim always pays
        if TOP_UP in self.legal:
            s = self.s
            need = s.announced - s.combo
            comp = self.draw_source(1)
            total = sum(comp)
            if total and need > 0:
                q = sum(c for f, c in enumerate(comp) if THROW_FIT[f][s.top]) / total
                p = q**need
                if p * s.announced >= (1 - p) * TOPUP_RISK:
                    return TOP_UP
        return SECURE

    # -- play ----------------------------------------------------------------------------------
    def play(self) -> int | list[tuple[int, float]]:
        """OPEN, FREE_OPEN, WINDOW, DUTY: finish if possible, announce, else the best lay."""
        s = self.s
        plan = self.finish_plan()
        if plan is not None:
            points, takes, first, announce = plan
            if takes:  # one free action per call; the plan is made again after it
                return TAKE_SLOT + takes[0]
            if announce and ANNOUNCE in self.legal:
                return announce_action(min(points, MAX_COMBO_PTS))
            return first
        if EARLY_ANNOUNCE and ANNOUNCE in self.legal:
            # My hand is one run that I cannot start in this decision: announce it now. At
            # level 8 the others then may not throw (§3.3 pause); from level 9 they may not
            # serve traitors or ambassadors and I may free-open after their faults (§4.5).
            # A failed announcement costs no extra card (§4.3), only this round's chance.
            k = sum(s.hand)
            if k >= EARLY_MIN and is_one_run(s.hand):
                for i, f in enumerate(s.slots):  # a slot figure that extends the run joins it
                    if f > TRAITOR and is_one_run(add(s.hand, f)):
                        return TAKE_SLOT + i
                return announce_action(min(k, MAX_COMBO_PTS))
        start = Pos(
            hand=s.hand,
            slots=s.slots,
            top=s.top,
            combo=s.combo,
            ann=s.announced,
            serves=s.serves,
            can_ann=not s.ann_made and not s.announced,
        )
        candidates = []
        for a in sorted(self.legal):
            v = self.value_of(start, a)
            if v is not None:
                candidates.append((a, v))
        if not candidates:  # only free actions were judged: take a terminal fallback
            for a in (PASS, FAIL, SECURE):
                if a in self.legal:
                    return a
            return min(self.legal)
        return candidates

    def value_of(self, pos: Pos, a: int) -> float | None:
        """The value of a terminal action, or None for free actions (not used in play)."""
        if a < PASS:
            if a < LAY_SLOT:
                f, hand, slots = a, add(pos.hand, a, -1), pos.slots
            else:
                k = a - LAY_SLOT
                f, hand = pos.slots[k], pos.hand
                slots = without_slot(pos.slots, k)
            pos = Pos(hand, slots, pos.top, pos.combo, pos.ann, pos.serves, pos.can_ann)
            return self.after_first_lay(pos, f)
        if a == PASS:
            return self.stop_value(pos)
        if a == FAIL:
            failed = Pos(pos.hand, pos.slots, pos.top, 0, 0, 0, pos.can_ann)
            return self.penalty_value(failed, 1) - FAIL_EXTRA
        if a == WEITER:
            hand = add(pos.hand, TRAITOR, -2)
            return self.penalty_value(Pos(hand, pos.slots, pos.top, 0, 0, 0, pos.can_ann), 2)
        return None

    def first_kind_is_serve(self, f: int) -> bool:
        """§3.2/§3.5: OPEN counts as a serve, FREE_OPEN and WINDOW lays do not; in DUTY a lay
        is a redirect when it would fit without the duty."""
        ph = self.s.phase
        if ph == Phase.OPEN:
            return True
        if ph == Phase.DUTY:
            return not THROW_FIT[f][self.s.top]
        return False

    def after_first_lay(self, pos: Pos, f: int) -> float:
        """The value of laying f now (already removed from hand or slot), with the best throws
        that can follow it."""
        return self.continue_value(self.lay(pos, f, self.first_kind_is_serve(f)))

    def lay(self, pos: Pos, f: int, serve: bool) -> Pos | float:
        """§3.4 lay: the combo, and a penalty draw (traitor, second serve) as its expectation."""
        serves = pos.serves
        if serve:
            combo = 1
            if pos.ann:
                serves += 1
        else:
            combo = pos.combo + 1
        if f == TRAITOR or (pos.ann and serve and serves == 2):
            # Every traitor draws a penalty card; a second serve is "Strafe Kombo" (§4.3).
            return self.penalty_value(Pos(pos.hand, pos.slots, f, 0, 0, 0, pos.can_ann), 1)
        return Pos(pos.hand, pos.slots, f, combo, pos.ann, serves, pos.can_ann)

    def continue_value(self, pos: Pos | float) -> float:
        """The best of stopping here and throwing on (I am first in the window, §3.4)."""
        if not isinstance(pos, Pos):
            return pos
        v = self.memo.get(pos)
        if v is not None:
            return v
        hand, slots, t = pos.hand, pos.slots, pos.top
        if not any(hand):
            v = FINISH + combo_points(pos.ann, pos.combo) + slot_value(slots)
            self.memo[pos] = v
            return v
        best = self.stop_value(pos)
        for f in THROWS_ON[t]:  # traitors would end the combo with a penalty
            if hand[f]:
                nxt = self.lay(pos._replace(hand=add(hand, f, -1)), f, False)
                best = max(best, self.continue_value(nxt))
        for k, f in enumerate(slots):
            if f > 0 and THROW_FIT[f][t]:
                nxt = self.lay(pos._replace(slots=without_slot(slots, k)), f, False)
                best = max(best, self.continue_value(nxt))
        self.memo[pos] = best
        return best

    def stop_value(self, pos: Pos, cap: float = math.inf) -> float:
        """What a position is worth when my decision ends with it (the run prospect at most
        ``cap``)."""
        return stop_value_of(pos.hand, pos.slots, pos.ann, pos.serves, pos.can_ann, cap)

    def draw_source(self, k: int) -> tuple[int, ...]:
        """What a draw of k cards comes from: my draw pile, or at levels 8–9 with the played
        pile recycled under it (§3.4 step 1); empty at level 10 when it is short (SP)."""
        s = self.s
        if s.draw_count >= k:
            return s.own_draw
        if s.level == 10:
            return ()
        return tuple(a + b for a, b in zip(s.own_draw, s.played))

    def penalty_value(self, pos: Pos, k: int) -> float:
        """The expected stop value after drawing k penalty cards (§3.4 draw)."""
        comp = self.draw_source(k)
        total = sum(comp)
        if not comp:
            return -ELIMINATION
        hand, slots, ann, serves, can_ann = pos.hand, pos.slots, pos.ann, pos.serves, pos.can_ann
        # A penalty card that happens to extend a run is no reason to take one: the run
        # prospect may only shrink (the card delays everything else).
        cap = card_terms(hand, slots)[1]
        if total == 0:
            return stop_value_of(hand, slots, ann, serves, can_ann, cap)
        v = 0.0
        for f, c in enumerate(comp):
            if c:
                drawn = add(hand, f)
                if k == 2:
                    v += c / total * self.second_card(pos._replace(hand=drawn), comp, f, cap)
                else:
                    v += c / total * stop_value_of(drawn, slots, ann, serves, can_ann, cap)
        return v

    def second_card(self, pos: Pos, comp: tuple[int, ...], first: int, cap: float) -> float:
        """The second card of a two-card draw, from the pile without the first."""
        hand, slots, ann, serves, can_ann = pos.hand, pos.slots, pos.ann, pos.serves, pos.can_ann
        total = sum(comp) - 1
        if total <= 0:
            return stop_value_of(hand, slots, ann, serves, can_ann, cap)
        v = 0.0
        for f, c in enumerate(comp):
            c -= f == first
            if c > 0:
                v += c / total * stop_value_of(add(hand, f), slots, ann, serves, can_ann, cap)
        return v

    # -- finishing now -------------------------------------------------------------------------
    def can_lay_first(self, f: int) -> bool:
        """Whether hand figure f could be laid now (§3.5), as the mask would say if I held it."""
        s = self.s
        ph = s.phase
        if ph == Phase.FREE_OPEN:
            return bool(s.announced)
        if ph == Phase.WINDOW:
            return THROW_FIT[f][s.top]
        banned = f == AMBASSADOR and s.amb_banned
        if ph == Phase.OPEN:
            return not banned
        return THROW_FIT[f][s.top] or (SERVE_FIT[f][s.top] and not banned)

    def finish_plan(self) -> tuple[int, list[int], int, bool] | None:
        """The best way to empty my hand in this decision, if there is one.

        Returns (points, slots to take first, first action, announce first). A sequence is
        my first lay as this phase allows, then throws, each on my previous card, until the
        hand is empty; no traitor (its penalty card would refill the hand). Slot figures may
        join it (§4.7): laid from the slot in the middle, or taken into the hand first (the
        last card must be a hand card, and a taken figure also counts for the two hand cards
        an announcement needs). Plans are ranked by their combo points less the slot
        figures they use up.
        """
        s = self.s
        # Quick exits, with the result of the search below: a sequence lays no traitor, and
        # after its first card each card is thrown on the one before (§3.2 throw fit: the same
        # figure or one higher; an ambassador only on an ambassador). So no ambassador goes
        # with numbered cards, and every figure between my lowest and highest numbered hand
        # card must be laid, each one that my hand lacks from a slot.
        if not any(s.hand) or s.hand[TRAITOR]:
            return None
        numbered = [f for f in range(1, AMBASSADOR) if s.hand[f]]
        if numbered and (
            s.hand[AMBASSADOR]
            or numbered[-1] - numbered[0] + 1 - len(numbered) > sum(f > 0 for f in s.slots)
        ):
            return None
        can_ann = not s.ann_made and not s.announced
        takeable = [k for k, f in enumerate(s.slots) if f > TRAITOR and TAKE_SLOT + k in self.legal]
        best = None
        for r in range(len(takeable) + 1):
            for taken in combinations(takeable, r):
                hand = s.hand
                for k in taken:
                    hand = add(hand, s.slots[k])
                slots = tuple(-1 if k in taken else f for k, f in enumerate(s.slots))
                firsts = [(f, f, -1) for f in range(1, NUM_FIGURES) if hand[f]]
                firsts = [x for x in firsts if self.can_lay_first(x[0])]
                firsts += [
                    (LAY_SLOT + k, f, k)
                    for k, f in enumerate(slots)
                    if f > TRAITOR and LAY_SLOT + k in self.legal
                ]
                for action, f, k in firsts:
                    serve = self.first_kind_is_serve(f)
                    if s.announced and serve and s.serves >= 1:
                        continue  # a second serve would fail the combo (§4.3(2))
                    combo = 1 if serve else s.combo + 1
                    rest = add(hand, f, -1) if k < 0 else hand
                    used = (k,) if k >= 0 else ()
                    for length, mid in self._sequences(rest, slots, f, combo, used):
                        if can_ann and sum(hand) >= 2 and length >= 3:
                            points, announce = min(length, MAX_COMBO_PTS), True
                        else:
                            points, announce = combo_points(s.announced, length), False
                        spent = [s.slots[i] for i in taken + mid]
                        key = (points - sum(SLOT_VALUE[g] for g in spent), -len(spent))
                        if best is None or key > best[0]:
                            best = (key, points, list(taken), action, announce)
        if best is None:
            return None
        return best[1:]

    def _sequences(self, hand, slots, top, combo, used):
        """Every way to lay out the rest of the hand by throws from top: (length, slots used)."""
        if not any(hand):
            yield combo, used
            return
        for f in range(1, NUM_FIGURES):
            if hand[f] and THROW_FIT[f][top]:
                yield from self._sequences(add(hand, f, -1), slots, f, combo + 1, used)
                break  # the same figure twice in a row or one higher: the order is forced
        for k, f in enumerate(slots):
            if f > 0 and k not in used and THROW_FIT[f][top]:
                yield from self._sequences(hand, slots, f, combo + 1, used + (k,))


def _pick(candidates: list[tuple[int, float]], noise: list[float]) -> int:
    """The candidate of highest value, each value raised by its random number times 1e-6
    (exact ties are broken at random, so equal moves are not always taken in id order)."""
    best, best_v = candidates[0][0], -1e9
    for (a, v), u in zip(candidates, noise):
        v += u * 1e-6
        if v > best_v:
            best, best_v = a, v
    return best


# -- search support -----------------------------------------------------------------------
@lru_cache(maxsize=4096)
def _composition(pile: tuple[int, ...]) -> tuple[int, ...]:
    # Cached: a pile changes only when its owner draws (as the observation's encoder does).
    return tuple(map(bytes(pile).count, range(NUM_FIGURES)))


def seen_of_state(state: Any) -> Seen:
    """The :class:`Seen` of the seat to play, read from the state's public and own fields.

    The same values ``Seen(observation)`` decodes (a test compares them), without building
    and decoding an observation vector.
    """
    p = state.to_play
    seen = Seen.__new__(Seen)
    seen.level = state.config.level
    seen.phase = state.phase
    seen.hand = state.hand[p]
    seen.own_draw = _composition(state.draw[p])
    seen.played = state.played[p]
    seen.draw_count = len(state.draw[p])
    seen.top = state.top
    seen.combo = min(state.combo_len[p], 22)  # the observation's clip (COMBO_CLIP)
    made = state.ann_made
    # The observation shows announcement fields only for players who have announced.
    announced = [a if m else 0 for a, m in zip(state.announced, made)]
    seen.announced = announced[p]
    seen.ann_made = bool(made[p])
    seen.serves = state.serves_since[p] if made[p] else 0
    others = [a for q, a in enumerate(announced) if q != p and a > 0]
    seen.amb_banned = (
        seen.level >= 9
        and bool(others)
        and (
            sum(a > 0 for a in announced) == 1
            or any(a > 0 and made[q] and state.laid_since[q] for q, a in enumerate(announced))
        )
    )
    seen.slots = state.slots[p]
    return seen


def rollout_policy(state: Any, rand: random.Random) -> int:
    """The heuristic's move for the seat to play in a full state (for ISMCTS).

    Reads only that seat's view (see :func:`seen_of_state`); ``rand`` breaks exact ties.
    """
    legal = legal_actions(state)
    if len(legal) == 1:
        return legal[0]
    seen = seen_of_state(state)
    # A decision is a function of the view and the legal set up to its exact ties, and search
    # meets the same views again and again: remember them (bounded, cleared when full), but
    # not their tie-breaks, which are drawn afresh (as the compiled twin draws them).
    key = (legal, *vars(seen).values())
    choice = _DECISIONS.get(key)
    if choice is None:
        if len(_DECISIONS) >= _MAX_DECISIONS:
            _DECISIONS.clear()
        choice = _DECISIONS[key] = Decision(seen, set(legal), rand).decide()
    if isinstance(choice, list):
        return _pick(choice, [rand.random() for _ in choice])
    return choice


_DECISIONS: dict[tuple, int | list[tuple[int, float]]] = {}
_MAX_DECISIONS = 1 << 15
