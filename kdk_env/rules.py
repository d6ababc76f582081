"""KdK – Kampf der Könige: the pure rules core (spec v1.1, ``docs/kdk_rules.md``).

No PettingZoo, no printing, no global random state: every shuffle, the round-1 opener and
every recycle of a played pile use the generator passed in. Comments cite the spec (§x.y).

The state idiom (the same in all three games): :class:`State` is an immutable
``typing.NamedTuple`` of ints and tuples, the cheapest value to build on every step.
:func:`apply_action` never changes the state it is given. It copies the fields an action
touches into a small local working object (:class:`_Work`), runs the spec's procedures (§3.4)
on it and builds the next ``State`` from it; a round end that cuts an action short (§3.7) is a
flag on that object, checked by the callers, not an exception.

Actions (``NUM_ACTIONS = 114``, the same ids for every agent, §8.1):

=======  ==========================================================================
0..12    ``LAY_HAND(f)``: lay hand figure f (0 traitor, 1..10, 11 king, 12 ambassador)
13..15   ``LAY_SLOT(s)``: lay the figure in slot s (level 10)
16       ``PASS``
17       ``FAIL``: take one penalty card, the box is cleared (interruption)
18       ``WEITER``: two traitors forward the duty (one-colour deck only)
19..27   ``ANNOUNCE_N``: announce a combo of N cards (3..11), ``announce_action(N)``
28       ``ABORT``: end the own combo with a penalty card (level 9+)
29       ``TOP_UP``: draw one card towards the announced size
30..32   ``TAKE_SLOT(s)``: take the slot figure into the hand (level 10)
33       ``SECURE``: finish without combo points
34       ``CLAIM_LATE``: finish with a late, unannounced combo (half points)
35       ``DECLARE_SP``: declare shuffle pressure between rounds (level 10)
36..74   ``SLOT_SWAP(s, f)`` = ``slot_action(SLOT_SWAP, s, f)`` (level 10, start of a round)
75..113  ``SLOT_PICK(s, f)`` = ``slot_action(SLOT_PICK, s, f)`` (level 10, slot distribution)
=======  ==========================================================================

``slot_of(action)`` and ``announce_size(action)`` decode these ids; nothing else in the
project does the arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

import numpy as np

from tablegym.options import check_choice, check_int, check_options

# -- figures and decks (§2.1, §2.2, §2.3) ------------------------------------------------------
TRAITOR, KING, AMBASSADOR = 0, 11, 12
NUM_FIGURES = 13
MAX_PLAYERS = 5
NUM_SLOTS = 3
FIGURE_NAMES = ("T", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "K", "A")
DECKS = {
    "one_colour": (3,) + (2,) * 11 + (2,),  # 27 cards: one colour + 2 ambassadors
    "own_decks": (15,) + (10,) * 11 + (10,),  # 135 cards: 5 colours + 10 ambassadors
}
HAND_SIZE = {2: 10, 3: 8, 4: 8, 5: 6}
FINISH_SLOTS = {2: 1, 3: 2, 4: 2, 5: 2}
_NO_CARDS = (0,) * 13  # an empty multiset of figures
_NO_SLOTS = (-1, -1, -1)
SP_THRESHOLD = 6  # T3a: "fewer than 6 draw cards" (§6.2)
MAX_COMBO_PTS = 11
MAX_TOPUPS = 3
# The observation shows num_rounds as num_rounds / MAX_ROUNDS, and the round and score fields
# scale with it: more rounds could not be decoded from an observation, so they are refused.
MAX_ROUNDS = 100

# -- action ids (§8.1) -------------------------------------------------------------------------
LAY_HAND = 0
LAY_SLOT = 13
PASS = 16
FAIL = 17
WEITER = 18
ANNOUNCE = 19  # ANNOUNCE_N = 16 + N
ABORT = 28
TOP_UP = 29
TAKE_SLOT = 30
SECURE = 33
CLAIM_LATE = 34
DECLARE_SP = 35
SLOT_SWAP = 36
SLOT_PICK = 75
NUM_ACTIONS = 114
ANNOUNCE_IDS = tuple(range(ANNOUNCE, ABORT))
MIN_ANNOUNCE, MAX_ANNOUNCE = 3, 11


def announce_action(size: int) -> int:
    """The id of ``ANNOUNCE_N`` for N = ``size`` (3..11)."""
    return ANNOUNCE + size - MIN_ANNOUNCE


def announce_size(action: int) -> int:
    """The N of an ``ANNOUNCE_N`` id."""
    return action - ANNOUNCE + MIN_ANNOUNCE


def slot_action(base: int, slot: int, figure: int) -> int:
    """The id of ``SLOT_SWAP(slot, figure)`` or ``SLOT_PICK(slot, figure)`` (``base``)."""
    return base + NUM_FIGURES * slot + figure


def slot_of(action: int) -> tuple[int, int]:
    """``(slot, figure)`` of a ``SLOT_SWAP`` or ``SLOT_PICK`` id."""
    base = SLOT_PICK if action >= SLOT_PICK else SLOT_SWAP
    return divmod(action - base, NUM_FIGURES)


class Phase(IntEnum):
    OPEN = 0
    FREE_OPEN = 1
    WINDOW = 2
    DUTY = 3
    FINISH = 4
    SP_DECLARE = 5
    SLOT_PICK = 6
    SWAP = 7
    GAME_OVER = 8


# The phases under module names for the hot paths: a global is read 4x faster than an Enum
# member.
_OPEN, _FREE_OPEN, _WINDOW, _DUTY, _FINISH = (
    Phase.OPEN,
    Phase.FREE_OPEN,
    Phase.WINDOW,
    Phase.DUTY,
    Phase.FINISH,
)
_SP_DECLARE, _PICKING, _SWAP, _GAME_OVER = (
    Phase.SP_DECLARE,
    Phase.SLOT_PICK,
    Phase.SWAP,
    Phase.GAME_OVER,
)

# status[p] (§3.1)
ACTIVE, FINISHED, ELIMINATED = 0, 1, 2


class LayKind(IntEnum):
    OPEN = 0
    SERVE = 1
    REDIRECT = 2
    THROW = 3
    FREE_OPEN = 4


# What to do after a paused FINISH decision (§3.5 FINISH "resume the procedure").
RESUME_NONE, RESUME_NEXT, RESUME_FREE_OPEN = 0, 1, 2


# -- fit (§3.2), as tables indexed [figure][top] ----------------------------------------------
def _throw_fit(f: int, t: int) -> bool:
    return t >= 0 and (f == t or (1 <= f <= 11 and f == t + 1))


def _serve_fit(f: int, t: int) -> bool:
    if t < 0 or _throw_fit(f, t):
        return False
    return f in (TRAITOR, AMBASSADOR) or (1 <= f <= 11 and f >= t + 2)


THROW_FIT = tuple(tuple(_throw_fit(f, t) for t in range(NUM_FIGURES)) for f in range(NUM_FIGURES))
SERVE_FIT = tuple(tuple(_serve_fit(f, t) for t in range(NUM_FIGURES)) for f in range(NUM_FIGURES))
# The figures that may be thrown onto top t, and those that fit it under duty (§3.2).
THROWS_ON = tuple(
    tuple(f for f in range(NUM_FIGURES) if THROW_FIT[f][t]) for t in range(NUM_FIGURES)
)
FITS_ON = tuple(
    tuple(f for f in range(NUM_FIGURES) if THROW_FIT[f][t] or SERVE_FIT[f][t])
    for t in range(NUM_FIGURES)
)
# Bit f of FIT_BITS[t] is set iff figure f can be thrown onto top t.
FIT_BITS = tuple(
    sum(1 << f for f in range(NUM_FIGURES) if THROW_FIT[f][t]) for t in range(NUM_FIGURES)
)


def throw_fit(f: int, t: int) -> bool:
    """§3.2: f may be thrown onto top t (same figure or one higher; t = -1 is an empty box)."""
    return t >= 0 and THROW_FIT[f][t]


def serve_fit(f: int, t: int) -> bool:
    """§3.2: f fits t only under duty (two or more higher, or a traitor/ambassador)."""
    return t >= 0 and SERVE_FIT[f][t]


# -- options -----------------------------------------------------------------------------------
OPTIONS = (
    "num_players",
    "level",
    "deck_mode",
    "num_rounds",
    "max_round_steps",
    "first_opener",
    "auto_pass",
    "reward",
)
REWARDS = ("score", "win")


@dataclass(frozen=True, slots=True)
class Config:
    """Game options (spec "Options" table)."""

    num_players: int = 4
    level: int = 10
    deck_mode: str = "one_colour"
    num_rounds: int = 6
    max_round_steps: int = 2000
    first_opener: int | None = None
    auto_pass: bool = False
    reward: str = "score"  # "score": round scores; "win": +1 each winner, -1 the others

    @property
    def hand_size(self) -> int:
        return HAND_SIZE[self.num_players]

    @property
    def finish_slots(self) -> int:
        return FINISH_SLOTS[self.num_players]

    @property
    def deck(self) -> tuple[int, ...]:
        return DECKS[self.deck_mode]


def make_config(**options: object) -> Config:
    """Validated options; unknown names or bad values raise ValueError naming what is allowed.

    The Config holds the values the checks return (plain ints, so numpy integers pass).
    """
    check_options(options, OPTIONS)
    base = Config()
    o = {name: options.get(name, getattr(base, name)) for name in OPTIONS}
    n = check_int("num_players", o["num_players"], 2, MAX_PLAYERS)
    opener = o["first_opener"]
    if opener is not None:
        try:
            opener = check_int("first_opener", opener, 0, n - 1)
        except ValueError:
            raise ValueError(
                f"first_opener must be None or an integer from 0 to {n - 1}; got {opener!r}"
            ) from None
    return Config(
        num_players=n,
        level=check_choice("level", o["level"], (8, 9, 10)),
        deck_mode=check_choice("deck_mode", o["deck_mode"], tuple(DECKS)),
        num_rounds=check_int("num_rounds", o["num_rounds"], 1, MAX_ROUNDS),
        max_round_steps=check_int("max_round_steps", o["max_round_steps"], 200),
        first_opener=opener,
        auto_pass=check_choice("auto_pass", o["auto_pass"], (False, True)),
        reward=check_choice("reward", o["reward"], REWARDS),
    )


# -- state -------------------------------------------------------------------------------------
class State(NamedTuple):
    """Immutable game state (§3.1). A NamedTuple: cheaper to build on every step than a dataclass.

    Per-player fields are tuples indexed by absolute seat. A draw pile is ordered with its top
    card last; hands and played piles are counts per figure. The last three fields are public
    bookkeeping of what a player with perfect recall knows (``sample_state`` keeps it).
    """

    config: Config
    phase: Phase
    to_play: int  # actor seat; -1 at GAME_OVER
    round_idx: int  # 1-based
    rounds_done: int  # rounds scored so far
    opener: int  # opener of the current round
    last_winner: int  # place 1 of the last scored round, -1 before
    hand: tuple[tuple[int, ...], ...]  # private: counts per figure
    draw: tuple[tuple[int, ...], ...]  # private: pile, top card last
    played: tuple[tuple[int, ...], ...]  # public: counts per figure
    slots: tuple[tuple[int, ...], ...]  # public: figure per slot, -1 = none
    box: tuple[tuple[int, int, bool], ...]  # (owner, figure, transparent), bottom first
    top: int  # effective top figure, -1 = empty box
    top_owner: int  # owner of the top card, -1 = empty box
    status: tuple[int, ...]  # ACTIVE / FINISHED / ELIMINATED
    place: tuple[int, ...]  # place so far this round, 0 = none
    finish_order: tuple[int, ...]
    elim_order: tuple[int, ...]
    announced: tuple[int, ...]  # 0 or the active announcement N
    ann_made: tuple[bool, ...]
    serves_since: tuple[int, ...]
    laid_since: tuple[bool, ...]
    combo_len: tuple[int, ...]
    combo_pts: tuple[int, ...]
    duty: int  # duty holder, -1 = none
    reopener: int  # R of the last interruption, -1 = none
    queue: tuple[int, ...]  # window / free-open / declare / pick / swap order
    resume: int  # RESUME_* while a FINISH decision is pending
    sp_in_round: bool
    steps: int  # env steps in this round (E4)
    topups: int  # free top-ups in the current decision
    score: tuple[int, ...]  # totals
    last_score: tuple[int, ...]  # score of the last scored round
    firsts: tuple[int, ...]  # 1st places (tie-break, §5.4)
    combo_sum: tuple[int, ...]  # sum of combo points (tie-break)
    last_place: tuple[int, ...]  # places of the last scored round (tie-break)
    picks_left: tuple[int, ...]  # SLOT_PICK grants (§6.3)
    slot_old: tuple[tuple[bool, ...], ...]  # slot held before this distribution
    swapped: tuple[tuple[bool, ...], ...]  # slot already swapped in this SWAP phase
    # Public facts a player with perfect recall knows (spec `sample_state` note, §8.2):
    recycled: tuple[tuple[int, ...], ...]  # last recycled played pile per figure (levels 8–9):
    # the bottom min(len(draw), its size) cards of the draw pile are drawn from it (§3.4)
    taken: tuple[tuple[int, ...], ...]  # slot figures taken into the hand and not laid since
    lacks: tuple[int, ...]  # bit f: no figure f in hand besides ``taken`` (auto_pass skips)


_FIELDS = State._fields
_NESTED = frozenset(("hand", "draw", "played", "slots", "slot_old", "swapped", "recycled", "taken"))


class _Work:
    """The mutable working copy of one :func:`apply_action` call (never kept, never shared).

    It starts as the state's fields, all still tuples. A procedure that changes a field asks
    for it as a list first: :meth:`mut` (a per-seat or per-card field) or :meth:`row` (row p of
    a per-seat field of tuples), which copy it once and mark it for :meth:`freeze`; a field
    is assigned whole as a tuple. So a step copies only what it changes. ``over`` is set when
    a round end (§3.7 E1–E3) cuts the action short: every procedure that can end the round
    sets it, and its callers stop.

    Speed (issue 12): the fields are slots, filled by one unpacking of the state and read back
    in one tuple (both in ``State`` field order). Copying the state into an instance dict cost a
    third of a step, and slots are also read faster.
    """

    __slots__ = (*_FIELDS, "cfg", "n", "rng", "solo_start", "over", "changed")

    def __init__(self, s: State, rng: np.random.Generator):
        (
            self.config, self.phase, self.to_play, self.round_idx, self.rounds_done,
            self.opener, self.last_winner, self.hand, self.draw, self.played, self.slots,
            self.box, self.top, self.top_owner, self.status, self.place, self.finish_order,
            self.elim_order, self.announced, self.ann_made, self.serves_since, self.laid_since,
            self.combo_len, self.combo_pts, self.duty, self.reopener, self.queue, self.resume,
            self.sp_in_round, self.steps, self.topups, self.score, self.last_score,
            self.firsts, self.combo_sum, self.last_place, self.picks_left, self.slot_old,
            self.swapped, self.recycled, self.taken, self.lacks,
        ) = s  # fmt: skip
        self.cfg = s.config
        self.n = s.config.num_players
        self.rng = rng
        self.solo_start = False
        self.over = False
        self.changed: tuple[str, ...] = ()  # the fields made lists; most steps make none

    def mut(self, name: str) -> list:
        """Field ``name`` as a list, copied on the first call."""
        value = getattr(self, name)
        if type(value) is not list:
            value = list(value)
            setattr(self, name, value)
            self.changed += (name,)
        return value

    def row(self, name: str, p: int) -> list:
        """Row ``p`` of the per-seat field ``name`` as a list, copied on the first call."""
        rows = self.mut(name)
        value = rows[p]
        if type(value) is not list:
            value = rows[p] = list(value)
        return value

    def freeze(self) -> State:
        """The next State: every field as now, the changed ones back to tuples."""
        for name in self.changed:
            value = getattr(self, name)
            if type(value) is list:  # else replaced by a tuple since
                value = tuple(map(tuple, value)) if name in _NESTED else tuple(value)
                setattr(self, name, value)
        return tuple.__new__(
            State,
            (
                self.config, self.phase, self.to_play, self.round_idx, self.rounds_done,
                self.opener, self.last_winner, self.hand, self.draw, self.played, self.slots,
                self.box, self.top, self.top_owner, self.status, self.place, self.finish_order,
                self.elim_order, self.announced, self.ann_made, self.serves_since, self.laid_since,
                self.combo_len, self.combo_pts, self.duty, self.reopener, self.queue, self.resume,
                self.sp_in_round, self.steps, self.topups, self.score, self.last_score,
                self.firsts, self.combo_sum, self.last_place, self.picks_left, self.slot_old,
                self.swapped, self.recycled, self.taken, self.lacks,
            ),
        )  # fmt: skip


def _blank(config: Config) -> State:
    """A state with empty zones, used to build the first round."""
    n = config.num_players
    zero13 = (0,) * NUM_FIGURES
    return State(
        config=config,
        phase=_OPEN,
        to_play=0,
        round_idx=1,
        rounds_done=0,
        opener=0,
        last_winner=-1,
        hand=(zero13,) * n,
        draw=((),) * n,
        played=(zero13,) * n,
        slots=((-1,) * NUM_SLOTS,) * n,
        box=(),
        top=-1,
        top_owner=-1,
        status=(ACTIVE,) * n,
        place=(0,) * n,
        finish_order=(),
        elim_order=(),
        announced=(0,) * n,
        ann_made=(False,) * n,
        serves_since=(0,) * n,
        laid_since=(False,) * n,
        combo_len=(0,) * n,
        combo_pts=(0,) * n,
        duty=-1,
        reopener=-1,
        queue=(),
        resume=RESUME_NONE,
        sp_in_round=False,
        steps=0,
        topups=0,
        score=(0,) * n,
        last_score=(0,) * n,
        firsts=(0,) * n,
        combo_sum=(0,) * n,
        last_place=(0,) * n,
        picks_left=(0,) * n,
        slot_old=((False,) * NUM_SLOTS,) * n,
        swapped=((False,) * NUM_SLOTS,) * n,
        recycled=(zero13,) * n,
        taken=(zero13,) * n,
        lacks=(0,) * n,
    )


def _expand(counts: list[int] | tuple[int, ...]) -> list[int]:
    """A multiset of figure counts as a sorted list of figures."""
    return [f for f, c in enumerate(counts) for _ in range(c)]


def initial_state(config: Config, rng: np.random.Generator) -> State:
    """§2.5: shuffle every pile, pick the round-1 opener, deal h cards each, start round 1."""
    w = _Work(_blank(config), rng)
    deck = _expand(config.deck)
    for p in range(w.n):
        w.mut("draw")[p] = rng.permutation(deck).tolist()
    opener = config.first_opener
    w.opener = int(rng.integers(w.n)) if opener is None else opener
    for p in range(w.n):
        _take(w, p, config.hand_size)
    _start_round(w)
    return w.freeze()


# -- queries (work on a State or a _Work alike) ------------------------------------------------
def _solo(s: State | _Work) -> bool:
    return s.status.count(ACTIVE) == 1


def _drawable(s: State | _Work, p: int) -> int:
    """§3.4 drawable(p): the draw pile at level 10, draw + played pile at levels 8–9."""
    if s.config.level == 10:
        return len(s.draw[p])
    return len(s.draw[p]) + sum(s.played[p])


# CLOCKWISE[n][p]: the seats p, p + 1, ..., p + n - 1 (mod n) of an n-player table.
CLOCKWISE = {
    n: tuple(tuple((p + i) % n for i in range(n)) for p in range(n))
    for n in range(2, MAX_PLAYERS + 1)
}


def _next_active(s: State | _Work, p: int) -> int:
    """§3.4 next_active(p): first ACTIVE seat after p, p itself last; -1 if none."""
    status = s.status
    order = CLOCKWISE[len(status)][p]
    for q in order[1:]:
        if status[q] == ACTIVE:
            return q
    return p if status[p] == ACTIVE else -1


def _traitor_ban(s: State | _Work) -> bool:
    """§3.3 level ≥ 9: no traitor OPEN/SERVE and no WEITER while an announcement is active."""
    return s.config.level >= 9 and any(s.announced)


def _amb_ban(s: State | _Work, p: int) -> bool:
    """§3.3 level ≥ 9: p may not OPEN/SERVE an ambassador (see the exact condition there)."""
    if s.config.level < 9:
        return False
    ann = [q for q, a in enumerate(s.announced) if a]
    if not any(q != p for q in ann):
        return False
    return len(ann) == 1 or any(s.laid_since[q] for q in ann)


def _banned(s: State, p: int) -> tuple[int, ...]:
    """The figures p may not lay as OPEN or SERVE now (§3.3 bans; none without announcements)."""
    if s.config.level < 9 or not any(s.announced):
        return ()
    return (TRAITOR,) + ((AMBASSADOR,) if _amb_ban(s, p) else ())


def _has_throw(s: State | _Work, p: int) -> bool:
    """Whether p holds a hand card or (level 10) slot figure that can be thrown (auto_pass)."""
    t = s.top
    if t < 0:
        return False
    hand = s.hand[p]
    if any(hand[f] and THROW_FIT[f][t] for f in range(NUM_FIGURES)):
        return True
    return s.config.level == 10 and any(f >= 0 and THROW_FIT[f][t] for f in s.slots[p])


# -- legality (§3.5, §3.6, §6) -----------------------------------------------------------------
# legal_actions lists what the predicates below allow; is_legal asks the one predicate an
# action needs (apply_action checks every action, so it must not build the whole list again).
def legal_actions(state: State) -> tuple[int, ...]:
    """Sorted action ids open to ``state.to_play``; empty at GAME_OVER."""
    ph = state.phase
    p = state.to_play
    if ph > _DUTY:  # FINISH and the phases between rounds (most steps are in WINDOW or DUTY)
        if ph == _GAME_OVER:
            return ()
        if ph == _FINISH:
            return _finish_options(state, p)
        if ph == _SP_DECLARE:
            return (PASS, DECLARE_SP)
        if ph == _PICKING:
            return _pick_options(state, p)
        return _swap_options(state, p)
    hand = state.hand[p]
    t = state.top
    if ph == _WINDOW:
        out = [f for f in THROWS_ON[t] if hand[f]]
    elif ph == _OPEN:
        banned = _banned(state, p)
        out = [f for f in range(NUM_FIGURES) if hand[f] and f not in banned]
    elif ph == _FREE_OPEN:
        out = [f for f in range(NUM_FIGURES) if hand[f]] if state.announced[p] else []
    else:
        banned = _banned(state, p)
        out = [f for f in FITS_ON[t] if hand[f] and (f not in banned or THROW_FIT[f][t])]
    slots = state.slots[p] if state.config.level == 10 else _NO_SLOTS  # level 10 only (inv. 27)
    if slots != _NO_SLOTS and (ph == _WINDOW or ph == _DUTY):
        out.extend(LAY_SLOT + k for k in range(NUM_SLOTS) if _slot_lay_ok(state, p, ph, k))
    if ph == _FREE_OPEN or ph == _WINDOW:
        out.append(PASS)
    else:
        out.append(FAIL)
        if ph == _DUTY and _weiter_ok(state, p):
            out.append(WEITER)
    nhand = sum(hand)
    if state.announced[p]:  # ABORT and TOP_UP need an active announcement, ANNOUNCE_N none
        if _abort_ok(state, p):
            out.append(ABORT)
        if _topup_ok(state, p, nhand):
            out.append(TOP_UP)
    elif _announce_ok(state, p, nhand):
        out.extend(ANNOUNCE_IDS)
    if slots != _NO_SLOTS:
        out.extend(TAKE_SLOT + k for k, f in enumerate(slots) if f >= 0)
    return tuple(out)


def is_legal(state: State, action: int) -> bool:
    """Whether ``action`` is in ``legal_actions(state)``, asking only what that action needs."""
    ph = state.phase
    if ph >= _FINISH or not 0 <= action < NUM_ACTIONS:
        return action in legal_actions(state)  # short lists, or nothing to ask
    p = state.to_play
    a = action
    if a < LAY_SLOT:
        return state.hand[p][a] > 0 and _lay_ok(state, p, ph, a)
    if a < PASS:
        level10 = state.config.level == 10
        return (
            level10 and (ph == _WINDOW or ph == _DUTY) and _slot_lay_ok(state, p, ph, a - LAY_SLOT)
        )
    if a == PASS:
        return ph == _FREE_OPEN or ph == _WINDOW
    if a == FAIL:
        return ph == _OPEN or ph == _DUTY
    if a == WEITER:
        return ph == _DUTY and _weiter_ok(state, p)
    if a < ABORT:
        return _announce_ok(state, p, sum(state.hand[p]))
    if a == ABORT:
        return _abort_ok(state, p)
    if a == TOP_UP:
        return _topup_ok(state, p, sum(state.hand[p]))
    if a < SECURE:
        return state.config.level == 10 and state.slots[p][a - TAKE_SLOT] >= 0
    return False


def _lay_ok(s: State, p: int, ph: Phase, f: int) -> bool:
    """Whether a held hand figure f may be laid in a play phase (§3.5, bans §3.3)."""
    if ph == _OPEN:  # any hand figure, except what a ban forbids
        return f not in _banned(s, p)
    if ph == _FREE_OPEN:  # any hand figure, only while still announced
        return s.announced[p] > 0
    t = s.top
    if THROW_FIT[f][t]:  # a throw in WINDOW, a redirect in DUTY
        return True
    return ph == _DUTY and SERVE_FIT[f][t] and f not in _banned(s, p)


def _slot_lay_ok(s: State, p: int, ph: Phase, k: int) -> bool:
    """Whether slot k may be laid in WINDOW or DUTY at level 10 (§6.4; never to open, inv. 38)."""
    f = s.slots[p][k]
    return f >= 0 and _lay_ok(s, p, ph, f)


def _weiter_ok(s: State, p: int) -> bool:
    """§3.5 WEITER: one-colour deck, two traitors in hand, no traitor ban."""
    return s.config.deck_mode == "one_colour" and s.hand[p][TRAITOR] >= 2 and not _traitor_ban(s)


def _announce_ok(s: State, p: int, nhand: int) -> bool:
    """§3.6 ANNOUNCE_N: once per round, with at least two hand cards."""
    return not s.announced[p] and not s.ann_made[p] and nhand >= 2


def _abort_ok(s: State, p: int) -> bool:
    """§3.6 ABORT: the own active announcement, level 9+."""
    return s.announced[p] > 0 and s.config.level >= 9


def _topup_ok(s: State, p: int, nhand: int) -> bool:
    """§3.6 / §4.6 free TOP_UP."""
    n_ann = s.announced[p]
    return (
        n_ann > 0
        and s.topups < MAX_TOPUPS
        and s.combo_len[p] + nhand < n_ann
        and not _solo(s)
        and _drawable(s, p) >= 1
    )


def combo_points(announced: int, length: int) -> int:
    """§4.4: the combo points of a player who finishes with a combo of ``length`` cards.

    An announced combo that was reached scores the announcement and half of what it ran over;
    one not reached scores nothing. Without an announcement, a late claim (3 cards or more)
    scores half its length. Never more than ``MAX_COMBO_PTS``.
    """
    if announced:
        if length < announced:
            return 0
        return min(MAX_COMBO_PTS, announced + (length - announced) // 2)
    return min(MAX_COMBO_PTS, length // 2) if length >= 3 else 0


def _finish_options(s: State, p: int) -> tuple[int, ...]:
    """§3.5 FINISH: TOP_UP, SECURE, CLAIM_LATE."""
    out = []
    n_ann = s.announced[p]
    if n_ann and s.combo_len[p] < n_ann and not _solo(s) and _drawable(s, p) >= 1:
        out.append(TOP_UP)
    out.append(SECURE)
    if not n_ann and s.combo_len[p] >= 3:
        out.append(CLAIM_LATE)
    return tuple(out)


def _pick_options(s: State, p: int) -> tuple[int, ...]:
    """§6.3(4): the lowest empty slot first; at the maximum, exchange an old figure."""
    figures = sorted(set(s.draw[p]))
    slots = s.slots[p]
    if -1 in slots:
        targets = [slots.index(-1)]
    else:
        targets = [k for k in range(NUM_SLOTS) if s.slot_old[p][k]]
    return (PASS,) + tuple(slot_action(SLOT_PICK, k, f) for k in targets for f in figures)


def _swap_options(s: State, p: int) -> tuple[int, ...]:
    """§6.5: an unswapped slot and a different hand figure change places."""
    hand = s.hand[p]
    out = [PASS]
    for k, g in enumerate(s.slots[p]):
        if g >= 0 and not s.swapped[p][k]:
            out.extend(
                slot_action(SLOT_SWAP, k, f) for f in range(NUM_FIGURES) if hand[f] and f != g
            )
    return tuple(out)


def is_terminal(state: State) -> bool:
    """True once the last round has been scored (§6.6)."""
    return state.phase == _GAME_OVER


# -- transitions -------------------------------------------------------------------------------
def apply_action(state: State, action: int, rng: np.random.Generator) -> State:
    """The state after ``state.to_play`` takes ``action``; ValueError if it is illegal."""
    if not is_legal(state, action):
        raise ValueError(
            f"illegal action {action} ({describe_action(action)}) for seat {state.to_play} "
            f"in phase {Phase(state.phase).name}; legal actions: {list(legal_actions(state))}"
        )
    w = _Work(state, rng)
    if state.phase <= _FINISH:
        w.steps += 1
        w.solo_start = _solo(w)
        _round_action(w, action)
        if w.over or (w.phase <= _FINISH and w.steps >= w.cfg.max_round_steps):
            _end_round(w)  # E1–E3, or the step cap E4
    else:
        _between_action(w, action)
    return w.freeze()


def _round_action(w: _Work, a: int) -> None:
    """One action of OPEN, FREE_OPEN, WINDOW, DUTY or FINISH (§3.5, §3.6)."""
    p = w.to_play
    ph = w.phase
    if ph == _FINISH:
        _finish_action(w, p, a)
    elif ANNOUNCE <= a < ABORT:  # free actions keep the decision (§3.6)
        w.mut("announced")[p] = announce_size(a)
        w.mut("ann_made")[p] = True
        w.mut("serves_since")[p] = 0
        w.mut("laid_since")[p] = False
    elif a == ABORT:
        _draw(w, p, 1, True)
        if not w.over and w.status[p] != ACTIVE:
            _after_free_elimination(w, p)
    elif a == TOP_UP:
        _draw(w, p, 1, False)
        w.topups += 1
    elif TAKE_SLOT <= a < SECURE:
        k = a - TAKE_SLOT
        f = w.slots[p][k]
        w.row("hand", p)[f] += 1
        w.row("taken", p)[f] += 1  # public: this figure is in the hand until laid
        w.row("slots", p)[k] = -1
    else:
        w.topups = 0  # a terminal action ends the decision
        _terminal_action(w, p, ph, a)


def _terminal_action(w: _Work, p: int, ph: Phase, a: int) -> None:
    if a == FAIL:  # §3.5 OPEN/DUTY
        _draw(w, p, 1, True)
        if not w.over:
            _interrupt(w, p)
    elif a == PASS:
        w.queue = w.queue[1:]
        if ph == _WINDOW:
            _advance_window(w)
        else:
            _next_free_opener(w)
    elif a == WEITER:
        _weiter(w, p)
    elif a < LAY_SLOT:
        _lay(w, p, a, -1, _kind(w, ph, a))
    else:
        k = a - LAY_SLOT
        f = w.slots[p][k]
        _lay(w, p, f, k, _kind(w, ph, f))


def _kind(w: _Work, ph: Phase, f: int) -> LayKind:
    """§3.2 classification of a lay in phase ph."""
    if ph == _OPEN:
        return LayKind.OPEN
    if ph == _FREE_OPEN:
        return LayKind.FREE_OPEN
    if ph == _WINDOW:
        return LayKind.THROW
    return LayKind.REDIRECT if THROW_FIT[f][w.top] else LayKind.SERVE


def _finish_action(w: _Work, p: int, a: int) -> None:
    """§3.5 FINISH: TOP_UP, SECURE or CLAIM_LATE, then resume the interrupted procedure."""
    resume = w.resume
    w.resume = RESUME_NONE
    w.topups = 0
    if a == TOP_UP:
        _draw(w, p, 1, False)  # not a penalty: the combo stays alive
    else:
        if a == CLAIM_LATE:
            w.mut("combo_pts")[p] = combo_points(0, w.combo_len[p])
        _finish(w, p)
    if not w.over:
        _continue(w, p, resume == RESUME_FREE_OPEN)


def _after_free_elimination(w: _Work, p: int) -> None:
    """§3.6: an actor eliminated by a free action (ABORT at level 10)."""
    w.topups = 0
    ph = w.phase
    if ph == _WINDOW:
        w.queue = w.queue[1:]
        _advance_window(w)
    elif ph == _FREE_OPEN:
        w.queue = w.queue[1:]
        _next_free_opener(w)
    elif ph == _DUTY:  # the duty moves on; box kept, no new window
        d = _next_active(w, p)
        if d < 0:
            w.over = True  # E2
            return
        w.duty = w.to_play = d
    else:
        _interrupt(w, p)


# -- procedures (§3.4) -------------------------------------------------------------------------
def _take(w: _Work, p: int, k: int) -> int:
    """Move up to k cards from the top of p's draw pile into the hand; the number moved."""
    k = min(k, len(w.draw[p]))
    if not k:
        return 0
    pile = w.row("draw", p)
    hand = w.row("hand", p)
    for _ in range(k):
        hand[pile.pop()] += 1
    if w.lacks[p]:
        w.mut("lacks")[p] = 0  # an unseen card may be any figure
    return k


def _draw(w: _Work, p: int, k: int, penalty: bool) -> None:
    """§3.4 draw(p, k, penalty): recycle (levels 8–9) or shuffle pressure (level 10)."""
    if len(w.draw[p]) < k:
        if w.cfg.level == 10:
            _sp_eliminate(w, p)
            return
        _recycle(w, p)
    moved = _take(w, p, k)
    if penalty:  # also after a short draw (§3.4 step 3, inv. 41)
        w.mut("combo_len")[p] = 0
        if w.announced[p]:
            _fail_combo(w, p)
    if moved and w.solo_start:
        w.over = True  # E3: the solo player drew a card


def _recycle(w: _Work, p: int) -> None:
    """§3.4 step 1: the played pile, shuffled, goes under the draw pile."""
    cards = _expand(w.played[p])
    if cards:
        w.row("draw", p)[:0] = w.rng.permutation(cards).tolist()
        w.mut("recycled")[p] = w.played[p]  # public: the bottom of the pile is this multiset
        w.mut("played")[p] = _NO_CARDS


def _empty_hand(w: _Work, p: int) -> None:
    """p's hand is gone (to the played or draw pile): nothing is known about it any more."""
    w.mut("hand")[p] = _NO_CARDS
    w.mut("taken")[p] = _NO_CARDS
    w.mut("lacks")[p] = 0


def _box_to_played(w: _Work) -> None:
    """Every box card back to its owner's played pile (§3.4 interrupt, §5.3); the box empty."""
    for owner, f, _ in w.box:
        w.row("played", owner)[f] += 1
    w.box = ()
    w.top = w.top_owner = -1


def _fail_combo(w: _Work, p: int) -> None:
    w.mut("announced")[p] = 0
    w.mut("serves_since")[p] = 0
    w.mut("laid_since")[p] = False


def _sp_eliminate(w: _Work, p: int) -> None:
    """§3.4 / §6.4: hand and slots to the played pile; out of the round, lowest free place."""
    played = w.row("played", p)
    for f, c in enumerate(w.hand[p]):
        played[f] += c
    for f in w.slots[p]:
        if f >= 0:
            played[f] += 1
    _empty_hand(w, p)
    w.mut("slots")[p] = _NO_SLOTS
    _fail_combo(w, p)
    w.mut("status")[p] = ELIMINATED
    w.elim_order += (p,)
    w.mut("place")[p] = w.n - len(w.elim_order) + 1
    w.sp_in_round = True
    if ACTIVE not in w.status:
        w.over = True  # E2


def _lay(w: _Work, p: int, f: int, src: int, kind: LayKind) -> None:
    """§3.4 lay(p, f, src, kind); src = -1 for the hand, else the slot index."""
    if src < 0:
        w.row("hand", p)[f] -= 1
        if w.taken[p][f]:  # observers cannot tell which copy went: one fewer is known
            w.row("taken", p)[f] -= 1
    else:
        w.row("slots", p)[src] = -1
    w.box += ((p, f, False),)
    w.top = f
    w.top_owner = p
    announced = w.announced[p] > 0
    serve = kind == LayKind.OPEN or kind == LayKind.SERVE
    combo_len = w.mut("combo_len")
    if serve:  # the serve itself is the first combo card (§4.1, inv. 15)
        combo_len[p] = 1
        if announced:
            w.mut("serves_since")[p] += 1
    else:
        combo_len[p] += 1
    if announced:
        w.mut("laid_since")[p] = True
    if f == TRAITOR:  # every traitor lay costs a penalty card (inv. 6)
        _draw(w, p, 1, True)
    elif announced and serve and w.serves_since[p] == 2:  # "Strafe Kombo" (§4.3(2))
        _draw(w, p, 1, True)
    if w.over:
        return
    free_open = kind == LayKind.FREE_OPEN
    if w.status[p] == ACTIVE and src < 0 and not any(w.hand[p]):
        resume = RESUME_FREE_OPEN if free_open else RESUME_NEXT
        if not _finish_check(w, p, resume):
            return  # paused in FINISH
    _continue(w, p, free_open)


def _continue(w: _Work, p: int, free_open: bool) -> None:
    """§3.4 continue_after_lay: move the duty (it stays with R after a free open), open a window."""
    if not free_open:
        d = _next_active(w, p)
        if d < 0:
            w.over = True  # E2
            return
        w.duty = d
    _open_window(w, p)


def _open_window(w: _Work, p: int) -> None:
    """§3.4 open_window(p): the layer first, then clockwise; the duty holder excluded."""
    n, status, duty = w.n, w.status, w.duty
    w.queue = tuple([q for q in CLOCKWISE[n][p] if status[q] == ACTIVE and q != duty])
    _advance_window(w)


def _advance_window(w: _Work) -> None:
    """§3.4 advance_window: level-8 pause and auto_pass skips, then WINDOW or DUTY."""
    queue = w.queue
    pause = w.cfg.level == 8 and any(w.announced)
    auto = w.cfg.auto_pass
    if pause or auto:
        skip = 0
        for q in queue:
            if pause and not w.announced[q]:
                skip += 1
            elif auto and not _has_throw(w, q):
                # Public: q holds no hand figure that fits the top (§8.2 auto_pass).
                w.mut("lacks")[q] |= FIT_BITS[w.top]
                skip += 1
            else:
                break
        if skip:
            queue = w.queue = queue[skip:]
    if queue:
        w.phase = _WINDOW
        w.to_play = queue[0]
    else:
        w.phase = _DUTY
        w.to_play = w.duty


def _next_free_opener(w: _Work) -> None:
    """FREE_OPEN: the next candidate, else OPEN with R (§3.5)."""
    if w.queue:
        w.phase = _FREE_OPEN
        w.to_play = w.queue[0]
    else:
        w.phase = _OPEN
        w.to_play = w.duty


def _finish_check(w: _Work, p: int, resume: int) -> bool:
    """§3.4 finish_check; True if play goes on (False: paused in FINISH or the round over)."""
    length, target = w.combo_len[p], w.announced[p]
    if target and length >= target:
        w.mut("combo_pts")[p] = combo_points(target, length)
        _finish(w, p)
        return not w.over
    late = not target and length >= 3
    topup = target and not _solo(w) and _drawable(w, p) >= 1
    if not late and not topup:
        _finish(w, p)  # SECURE is the only option: automatic
        return not w.over
    w.phase = _FINISH
    w.to_play = p
    w.resume = resume
    return False


def _finish(w: _Work, p: int) -> None:
    """§3.4 finish(p); the F-th finish ends the round at once (E1)."""
    w.mut("status")[p] = FINISHED
    w.finish_order += (p,)
    w.mut("place")[p] = len(w.finish_order)
    _fail_combo(w, p)
    if len(w.finish_order) >= w.cfg.finish_slots or ACTIVE not in w.status:
        w.over = True  # E1, E2


def _weiter(w: _Work, d: int) -> None:
    """§3.5 WEITER: two transparent traitors, two penalty cards, the duty moves on."""
    w.row("hand", d)[TRAITOR] -= 2
    if w.taken[d][TRAITOR]:
        w.row("taken", d)[TRAITOR] = max(0, w.taken[d][TRAITOR] - 2)
    w.box += ((d, TRAITOR, True), (d, TRAITOR, True))
    _draw(w, d, 2, True)
    if w.over:
        return
    if w.status[d] == ACTIVE and not any(w.hand[d]):
        if not _finish_check(w, d, RESUME_NEXT):
            return
    _continue(w, d, False)


def _interrupt(w: _Work, e: int) -> None:
    """§3.4 interrupt(E): clear the box; R reopens; level ≥ 9 announcers may free-open."""
    _box_to_played(w)
    r = _next_active(w, e)
    if r < 0:
        w.over = True  # E2
        return
    w.duty = w.reopener = r
    if w.cfg.level >= 9:
        cands = CLOCKWISE[w.n][r][1:]
        w.queue = tuple([q for q in cands if w.status[q] == ACTIVE and w.announced[q]])
    else:
        w.queue = ()
    _next_free_opener(w)


def _reset_round_state(w: _Work) -> None:
    """§5.3 / §3.4 start_round: per-round fields back to their start values."""
    n = w.n
    w.status = (ACTIVE,) * n
    w.place = (0,) * n
    w.finish_order = ()
    w.elim_order = ()
    w.announced = (0,) * n
    w.ann_made = (False,) * n
    w.serves_since = (0,) * n
    w.laid_since = (False,) * n
    w.combo_len = (0,) * n
    w.combo_pts = (0,) * n
    w.box = ()
    w.top = w.top_owner = -1
    w.duty = w.reopener = -1
    w.queue = ()
    w.resume = RESUME_NONE
    w.sp_in_round = False
    w.steps = 0
    w.topups = 0
    w.picks_left = (0,) * n


def _start_round(w: _Work) -> None:
    """§3.4 start_round: the opener opens."""
    _reset_round_state(w)
    w.phase = _OPEN
    w.duty = w.to_play = w.opener


# -- round end (§5) ----------------------------------------------------------------------------
def _places(w: _Work) -> list[int]:
    """§5.1: finishers, then active players by fewer hand cards (ties clockwise from the
    opener), then the eliminated (already placed from the bottom)."""
    place = list(w.place)
    n = w.n
    rest = [q for q in range(n) if w.status[q] == ACTIVE]
    rest.sort(key=lambda q: (sum(w.hand[q]), (q - w.opener) % n))
    for i, q in enumerate(rest):
        place[q] = len(w.finish_order) + 1 + i
    return place


def _end_round(w: _Work) -> None:
    """§5: places, scores, cleanup; then the next round (§6) or GAME_OVER."""
    w.solo_start = False
    place = _places(w)
    n = w.n
    last_score, score = w.mut("last_score"), w.mut("score")
    combo_sum, firsts = w.mut("combo_sum"), w.mut("firsts")
    for p in range(n):
        pts = w.combo_pts[p] if w.status[p] == FINISHED else 0
        last_score[p] = pts - place[p]
        score[p] += pts - place[p]
        combo_sum[p] += pts
        firsts[p] += place[p] == 1
    w.last_place = tuple(place)
    w.last_winner = place.index(1)
    w.rounds_done += 1
    _box_to_played(w)  # §5.3 cleanup
    for p in range(n):
        played = w.row("played", p)
        for f, c in enumerate(w.hand[p]):
            played[f] += c
        _empty_hand(w, p)
    eliminated = [s == ELIMINATED for s in w.status]
    sp_in_round = w.sp_in_round
    _reset_round_state(w)
    if w.round_idx >= w.cfg.num_rounds:
        w.phase = _GAME_OVER
        w.to_play = -1
        return
    w.round_idx += 1
    w.opener = w.last_winner
    if w.cfg.level < 10:  # §6.1 recycling levels
        for p in range(n):
            _draw(w, p, w.cfg.hand_size, False)
        _start_round(w)
    elif sp_in_round:  # §6.2 T1
        _distribute(w, eliminated)
    else:
        _deal_level10(w)


# -- between rounds at level 10 (§6.2–6.5) -----------------------------------------------------


def _deal_level10(w: _Work) -> None:
    """§6.2 steps 2–4: deal attempt (T2), automatic SP (T3a), else SP_DECLARE."""
    h = w.cfg.hand_size
    short = [len(pile) < h for pile in w.draw]
    if any(short):  # T2 (nobody is dealt: dealt hands would go straight back)
        _distribute(w, short if not all(short) else [False] * w.n)
        return
    for p in range(w.n):
        _take(w, p, h)
    if all(len(pile) < SP_THRESHOLD for pile in w.draw):  # T3a
        _hands_back(w)
        _distribute(w, [False] * w.n)
        return
    w.phase = _SP_DECLARE
    w.queue = CLOCKWISE[w.n][w.opener]
    w.to_play = w.queue[0]


def _hands_back(w: _Work) -> None:
    """Dealt hand cards go back onto the draw piles (§6.2)."""
    for p in range(w.n):
        w.row("draw", p).extend(_expand(w.hand[p]))
        _empty_hand(w, p)


def _distribute(w: _Work, excluded: list[bool]) -> None:
    """§6.3 steps 1–3: counts, grants (2 for the highest count, 1 for the second), pick order."""
    counts = {
        p: len(w.draw[p]) - sum(f >= 0 for f in w.slots[p]) for p in range(w.n) if not excluded[p]
    }
    values = sorted(set(counts.values()), reverse=True)[:2]
    order = CLOCKWISE[w.n][w.opener]
    queue = []
    for value, grant in zip(values, (2, 1)):
        for p in order:
            if counts.get(p) == value:
                w.mut("picks_left")[p] = grant
                queue.append(p)
    w.slot_old = tuple(tuple(f >= 0 for f in slots) for slots in w.slots)
    w.queue = tuple(queue)
    _next_picker(w)


def _next_picker(w: _Work) -> None:
    if w.queue:
        w.phase = _PICKING
        w.to_play = w.queue[0]
    else:
        _reset_piles(w)


def _reset_piles(w: _Work) -> None:
    """§6.3(5) RESET: every card but the slot figures forms a new shuffled pile; deal h."""
    deck = w.cfg.deck
    for p in range(w.n):
        counts = list(deck)
        for f in w.slots[p]:
            if f >= 0:
                counts[f] -= 1
        w.mut("draw")[p] = w.rng.permutation(_expand(counts)).tolist()
        _empty_hand(w, p)
        w.mut("played")[p] = _NO_CARDS
    for p in range(w.n):
        _take(w, p, w.cfg.hand_size)
    w.slot_old = ((False,) * NUM_SLOTS,) * w.n
    _start_round(w)


def _start_swaps(w: _Work) -> None:
    """§6.2 step 5 / §6.5: slot holders swap, clockwise from the opener."""
    w.queue = tuple(p for p in CLOCKWISE[w.n][w.opener] if any(f >= 0 for f in w.slots[p]))
    w.swapped = ((False,) * NUM_SLOTS,) * w.n
    if w.queue:
        w.phase = _SWAP
        w.to_play = w.queue[0]
    else:
        _start_round(w)


def _between_action(w: _Work, a: int) -> None:
    """SP_DECLARE, SLOT_PICK and SWAP actions (§6.2–6.5)."""
    p = w.to_play
    ph = w.phase
    if ph == _SP_DECLARE:
        if a == DECLARE_SP:  # T3v: the first declaration ends the phase
            _hands_back(w)
            _distribute(w, [q == p for q in range(w.n)])
            return
        w.queue = w.queue[1:]
        if w.queue:
            w.to_play = w.queue[0]
        else:
            _start_swaps(w)
    elif ph == _PICKING:
        if a == PASS:
            w.mut("picks_left")[p] = 0
        else:
            _pick(w, p, *slot_of(a))
        if w.picks_left[p] == 0:
            w.queue = w.queue[1:]
        _next_picker(w)
    elif a == PASS:  # SWAP
        w.queue = w.queue[1:]
        if w.queue:
            w.to_play = w.queue[0]
        else:
            _start_round(w)
    else:
        k, f = slot_of(a)
        g = w.slots[p][k]
        hand = w.row("hand", p)
        hand[f] -= 1
        hand[g] += 1
        taken = w.row("taken", p)
        if taken[f]:  # as for a lay: one known copy fewer
            taken[f] -= 1
        taken[g] += 1
        w.row("slots", p)[k] = f
        w.row("swapped", p)[k] = True


def _pick(w: _Work, p: int, k: int, f: int) -> None:
    """§6.3(4) SLOT_PICK(k, f): f leaves the draw pile; an old figure in k goes back to it."""
    pile = w.row("draw", p)
    pile.remove(f)
    old = w.slots[p][k]
    if old >= 0:
        pile.append(old)
    w.row("slots", p)[k] = f
    w.row("slot_old", p)[k] = False
    w.mut("picks_left")[p] -= 1


# -- scores, winners, rewards (§5.4) -----------------------------------------------------------
def scores(state: State) -> tuple[float, ...]:
    """Total score per seat."""
    return tuple(float(x) for x in state.score)


def winners(state: State) -> tuple[int, ...]:
    """§5.4: highest total; then more 1st places, more combo points, a better last place."""
    keys = [
        (state.score[p], state.firsts[p], state.combo_sum[p], -state.last_place[p])
        for p in range(len(state.score))
    ]
    best = max(keys)
    return tuple(p for p, k in enumerate(keys) if k == best)


def rewards(before: State, after: State, config: Config) -> tuple[float, ...]:
    """Per-seat reward of the transition (§5.4, inv. 40).

    ``"score"``: each round's score at its end. ``"win"``: 0 until the game ends, then +1 to
    each winner (co-winners too) and -1 to every other seat.
    """
    n = config.num_players
    if config.reward == "score":
        if after.rounds_done > before.rounds_done:
            return tuple(float(x) for x in after.last_score)
        return (0.0,) * n
    if after.phase == _GAME_OVER and before.phase != _GAME_OVER:
        won = winners(after)
        return tuple(1.0 if p in won else -1.0 for p in range(n))
    return (0.0,) * n


def describe_action(action: int) -> str:
    """Plain words for an action id, e.g. ``LAY_HAND(K)``."""
    a = action
    if 0 <= a < LAY_SLOT:
        return f"LAY_HAND({FIGURE_NAMES[a]})"
    if a < PASS:
        return f"LAY_SLOT({a - LAY_SLOT})"
    simple = {PASS: "PASS", FAIL: "FAIL", WEITER: "WEITER", ABORT: "ABORT", TOP_UP: "TOP_UP"}
    simple.update({SECURE: "SECURE", CLAIM_LATE: "CLAIM_LATE", DECLARE_SP: "DECLARE_SP"})
    if a in simple:
        return simple[a]
    if ANNOUNCE <= a < ABORT:
        return f"ANNOUNCE_{announce_size(a)}"
    if TAKE_SLOT <= a < SECURE:
        return f"TAKE_SLOT({a - TAKE_SLOT})"
    if SLOT_SWAP <= a < NUM_ACTIONS:
        k, f = slot_of(a)
        name = "SLOT_SWAP" if a < SLOT_PICK else "SLOT_PICK"
        return f"{name}({k}, {FIGURE_NAMES[f]})"
    return f"unknown action {a}"


# -- determinisation for search (information-set MCTS) -----------------------------------------
def sample_state(state: State, seat: int, rng: np.random.Generator) -> State:
    """A full state that ``seat`` cannot tell from ``state``: the hidden cards dealt anew.

    What is public (§2.4, §8.2) stays as it is: the box, every played pile and slot, every
    hand and draw-pile size, the combo and announcement state, scores, phase, actor, queue
    and all bookkeeping. Only ``hand`` and ``draw`` change:

    * ``seat`` keeps its hand and the composition of its own draw pile (both in its
      observation); the pile's order is hidden even from its owner, so it is reshuffled,
      except that at levels 8–9 the bottom cards that came from the last recycled played
      pile (``recycled``, public) stay below the cards that were on the pile before.
    * Every other player p keeps his own cards (§2.2: "every card keeps its owner"), and of
      them only those in p's hand or draw pile are hidden. Which cards these are is public:
      p's deck minus his played pile, his box cards and his slot figures. How they split
      between hand and pile is not, so they are dealt anew uniformly within what every
      player who remembers the game knows: the slot figures p took into his hand and has not
      laid (``taken``) are in his hand; with ``auto_pass`` his hand holds no other figure he
      was seen to lack (``lacks``); at levels 8–9 the bottom ``min(len(draw), |recycled|)``
      cards of his pile come from his last recycled played pile (§3.4 step 1).

    Nothing is inferred from how the others chose to play; that is the searcher's business.
    After a second recycle the (fewer than k) cards left above it count as unknown.
    """
    n = len(state.hand)
    deck = state.config.deck
    # Box cards per owner; WEITER's transparent traitors are box cards too (§3.5).
    in_box = [[0] * NUM_FIGURES for _ in range(n)]
    for owner, f, _ in state.box:
        in_box[owner][f] += 1
    hands = list(state.hand)
    draws = list(state.draw)
    for p in range(n):
        pile = state.draw[p]
        bottom = min(len(pile), sum(state.recycled[p]))
        if p == seat:
            draws[p] = tuple(
                _shuffled(list(pile[:bottom]), rng) + _shuffled(list(pile[bottom:]), rng)
            )
            continue
        size = sum(state.hand[p])
        if size + len(pile) == 0:
            continue
        played, slots, box = state.played[p], state.slots[p], in_box[p]
        hidden = [deck[f] - played[f] - box[f] - slots.count(f) for f in range(NUM_FIGURES)]
        hand, rest = _deal_hidden(state, p, hidden, size, bottom, rng)
        hands[p] = tuple(hand)
        draws[p] = tuple(rest)
    return state._replace(hand=tuple(hands), draw=tuple(draws))


def _shuffled(cards: list[int], rng: np.random.Generator) -> list[int]:
    """``cards`` in a random order (a permutation of indices is cheaper than of the cards)."""
    if len(cards) < 2:
        return cards
    return [cards[i] for i in rng.permutation(len(cards)).tolist()]


def _deal_hidden(
    s: State, p: int, hidden: list[int], size: int, bottom: int, rng: np.random.Generator
) -> tuple[list[int], list[int]]:
    """p's hidden cards split anew into a hand of ``size`` (counts) and a draw pile (top last).

    The hand holds ``taken[p]`` plus cards of figures not in ``lacks[p]``; the pile's
    ``bottom`` lowest cards come from ``recycled[p]``. Without ``lacks`` the bottom is chosen
    first (always possible); with both constraints (auto_pass at levels 8–9) the hand is
    chosen first and redrawn while the bottom cannot be filled, up to a bound after which the
    true split is kept.
    """
    known = s.taken[p]
    free = [h - k for h, k in zip(hidden, known)]
    lacks = s.lacks[p]
    recycled = s.recycled[p]
    need = size - sum(known)
    for _ in range(20 if lacks and bottom else 1):
        cards = _shuffled(_expand(free), rng)
        if lacks:
            hand_part, cards = _take_first(cards, need, lambda f: not lacks >> f & 1)
            low, top = _take_first(cards, bottom, _within(recycled))
        else:
            low, cards = _take_first(cards, bottom, _within(recycled))
            hand_part, top = cards[:need], cards[need:]
        if len(low) == bottom and len(hand_part) == need:
            hand = list(known)
            for f in hand_part:
                hand[f] += 1
            return hand, low + top
    return list(s.hand[p]), list(s.draw[p])


def _within(limit: tuple[int, ...]):
    """A filter that accepts figures while fewer than ``limit[f]`` of f were accepted."""
    used = [0] * NUM_FIGURES

    def ok(f: int) -> bool:
        if used[f] < limit[f]:
            used[f] += 1
            return True
        return False

    return ok


def _take_first(cards: list[int], k: int, ok) -> tuple[list[int], list[int]]:
    """The first ``k`` cards (in order) that ``ok`` accepts, and all the others in order."""
    chosen, others = [], []
    for f in cards:
        if len(chosen) < k and ok(f):
            chosen.append(f)
        else:
            others.append(f)
    return chosen, others
