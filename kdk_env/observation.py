"""KdK observations: one flat float32 vector per seat, read and written by field name.

The fields follow §8.2 of the spec plus the public facts a player with perfect recall keeps
(``recycled``, ``taken``, ``lacks``, see ``rules.State``). Seats are relative to the observer:
row 0 is the observer, row 1 the next seat clockwise, and so on. Per-player fields have 5 rows
whatever the player count (``seats`` marks the rows in play; the others stay 0), so one
network fits every table size. The encoder writes **raw** values (counts, flags, one-hots) by
field name into a zero vector and applies the layout's affine map once, so every value lies
in [0, 1]; ``LAYOUT.decode(obs, raw=True, **params_of(obs))`` gives the raw values back.
Card counts run up to the copies of a figure in one player's deck (3 traitors and 2 of every
other figure in ``one_colour``, 15 and 10 in ``own_decks``), pile sizes up to the deck size
(27 or 135); R is ``num_rounds``.

<!-- layout: kdk_env.observation.LAYOUT -->
| index | field | shape | raw range | content |
|---|---|---|---|---|
| 0–12 | `hand` | 13 | 0–copies of f | own hand, cards per figure |
| 13–25 | `own_draw` | 13 | 0–copies of f | own draw pile, cards per figure (order hidden) |
| 26–30 | `hand_count` | 5 | 0–deck size | hand size |
| 31–35 | `draw_count` | 5 | 0–deck size | draw-pile size |
| 36–40 | `played_count` | 5 | 0–deck size | played-pile size |
| 41–105 | `played` | 5×13 | 0–copies of f | played pile per figure |
| 106–170 | `recycled` | 5×13 | 0–copies of f | last recycled played pile (levels 8–9) [a] |
| 171–235 | `taken` | 5×13 | 0–copies of f | slot figures taken into the hand, not laid [b] |
| 236–300 | `lacks` | 5×13 | 0/1 | 1: no such figure in hand besides `taken` [c] |
| 301–305 | `place` | 5 | 0–5 | place so far this round (0 = none) |
| 306–310 | `announced` | 5 | 0–11 | active announcement N (0 = none) |
| 311–315 | `ann_made` | 5 | 0/1 | announced in this round |
| 316–320 | `combo_len` | 5 | 0–22 | combo length, clipped at 22 |
| 321–325 | `serves_since` | 5 | 0–2 | serves since the announcement |
| 326–330 | `laid_since` | 5 | 0/1 | laid a card since the announcement |
| 331–335 | `picks_left` | 5 | 0–2 | slot picks still granted |
| 336–340 | `score` | 5 | −5R – 10R | game total so far |
| 341–345 | `last_round_score` | 5 | -5–10 | score of the last scored round |
| 346 | `topups` | 1 | 0–3 | free top-ups in the current decision |
| 347 | `round` | 1 | 0–R | round number (1-based) |
| 348 | `num_rounds` | 1 | 0–100 | rounds in the game, at most 100 |
| 349 | `deck_mode` | 1 | 0/1 | 1 = `own_decks` |
| 350 | `auto_pass` | 1 | 0/1 | option `auto_pass` |
| 351 | `solo` | 1 | 0/1 | exactly one player is active (play phases) |
| 352–546 | `slots` | 5×3×13 | 0/1 | slot figures, one-hot per slot (level 10) |
| 547–611 | `box` | 5×13 | 0–copies of f | box cards per owner and figure [d] |
| 612–624 | `top` | 13 | 0/1 | effective top figure, one-hot (zeros = empty box) |
| 625–629 | `top_owner` | 5 | 0/1 | owner of the top card, one-hot |
| 630–634 | `duty` | 5 | 0/1 | duty holder, one-hot |
| 635–639 | `reopener` | 5 | 0/1 | reopener R of the last interruption, one-hot |
| 640–644 | `to_play` | 5 | 0/1 | seat to act, one-hot |
| 645–653 | `phase` | 9 | 0/1 | one-hot, in the order of `rules.Phase` |
| 654–658 | `seats` | 5 | 0/1 | 1 for each seat in play |
| 659–673 | `status` | 5×3 | 0/1 | one-hot: active, finished, eliminated |
| 674–676 | `level` | 3 | 0/1 | one-hot: level 8, 9, 10 |
<!-- end layout -->

[a] The bottom min(draw_count, its size) cards of that draw pile come from it (§3.4 step 1);
recycling a non-empty pile replaces it, an empty one keeps it. [b] A copy leaving the hand
(a lay from the hand, a swap into a slot, WEITER) lowers the count, as observers cannot tell
which copy went; a lay from a slot does not. [c] Set when ``auto_pass`` skips the player in a
window (no hand figure fits the top); cleared when he draws and when his hand leaves (round
end, elimination). [d] WEITER traitors included. The phases
are OPEN, FREE_OPEN, WINDOW, DUTY, FINISH, SP_DECLARE, SLOT_PICK, SWAP, GAME_OVER.

Hidden from an observer: the other hands, every draw-pile order, the other draw-pile
compositions (and so which cards others drew). ``action_mask`` is not part of the vector; the
env returns it beside it.

``STATE_LAYOUT`` (for ``state()``) is the observation of seat 0 (so seats are absolute),
followed by everything else: every hand and draw-pile composition, every draw-pile order, the
decision queue, and the bookkeeping of rounds, tie-breaks and the between-round phases:

<!-- layout: kdk_env.observation.STATE_LAYOUT -->
| index | field | shape | raw range | content |
|---|---|---|---|---|
| 0–676 | (the table above) | 677 | | every field of the table above, in its order |
| 677–741 | `hands` | 5×13 | 0–copies of f | every hand per figure |
| 742–806 | `draw_comp` | 5×13 | 0–copies of f | every draw pile per figure |
| 807–1481 | `draw_order` | 5×135 | 0–13 | draw piles from the top: figure + 1 (0 = none) |
| 1482–1506 | `queue` | 5×5 | 0/1 | decision queue: [position, seat] one-hot |
| 1507–1511 | `combo_pts` | 5 | 0–11 | combo points of this round |
| 1512–1516 | `firsts` | 5 | 0–R | 1st places (tie-break) |
| 1517–1521 | `combo_sum` | 5 | 0–11R | combo points of the game (tie-break) |
| 1522–1526 | `last_place` | 5 | 0–5 | place in the last scored round (tie-break) |
| 1527–1531 | `opener` | 5 | 0/1 | opener of the round, one-hot |
| 1532–1536 | `last_winner` | 5 | 0/1 | place 1 of the last scored round, one-hot |
| 1537–1551 | `slot_old` | 5×3 | 0/1 | slot held before this distribution |
| 1552–1566 | `swapped` | 5×3 | 0/1 | slot swapped in this SWAP phase |
| 1567–1569 | `resume` | 3 | 0/1 | one-hot: what a pending FINISH resumes (none, next, free open) |
| 1570 | `steps` | 1 | 0–max_round_steps | env steps in this round |
| 1571 | `sp_in_round` | 1 | 0/1 | somebody was eliminated by shuffle pressure this round |
<!-- end layout -->
"""

from __future__ import annotations

from array import array
from functools import lru_cache
from itertools import chain
from typing import Any

import numpy as np

from kdk_env.rules import (
    CLOCKWISE,
    DECKS,
    MAX_COMBO_PTS,
    MAX_PLAYERS,
    MAX_ROUNDS,
    MAX_TOPUPS,
    NUM_FIGURES,
    NUM_SLOTS,
    Config,
    Phase,
    State,
)
from tablegym.layout import Field, Layout

P = MAX_PLAYERS
F = NUM_FIGURES
MAX_PILE = max(sum(d) for d in DECKS.values())  # 135
COMBO_CLIP = 22  # CLAIM_LATE reaches 11 points at 22 cards; no longer combo scores more
ROUNDS_SHOWN = MAX_ROUNDS  # num_rounds / ROUNDS_SHOWN is shown; make_config allows no more
COPIES = "0–copies of f"  # range_doc of the per-figure counts


def _copies(deck_mode: str, **_: Any) -> tuple[int, ...]:
    return DECKS[deck_mode]


def _deck_size(deck_mode: str, **_: Any) -> int:
    return sum(DECKS[deck_mode])


def _min_score(num_rounds: int, **_: Any) -> int:
    return -5 * num_rounds  # a round scores combo points - place: -5 .. +10 (§5.2)


def _max_score(num_rounds: int, **_: Any) -> int:
    return 10 * num_rounds


def _rounds(num_rounds: int, **_: Any) -> int:
    return num_rounds


def _combo_sum(num_rounds: int, **_: Any) -> int:
    return MAX_COMBO_PTS * num_rounds


def _steps(max_round_steps: int, **_: Any) -> int:
    return max_round_steps


def _seat(name: str, doc: str, high: Any = 1, **kw: Any) -> Field:
    """A per-seat field (one row per seat, observer first)."""
    return Field(name, P, high, doc, seats=True, **kw)


LAYOUT = Layout(
    [
        Field("hand", F, _copies, "own hand, cards per figure", range_doc=COPIES),
        Field("own_draw", F, _copies, "own draw pile, cards per figure (order hidden)",
              range_doc=COPIES),
        _seat("hand_count", "hand size", _deck_size, range_doc="0–deck size"),
        _seat("draw_count", "draw-pile size", _deck_size, range_doc="0–deck size"),
        _seat("played_count", "played-pile size", _deck_size, range_doc="0–deck size"),
        Field("played", (P, F), _copies, "played pile per figure", seats=True,
              range_doc=COPIES),
        Field("recycled", (P, F), _copies, "last recycled played pile (levels 8–9) [a]",
              seats=True, range_doc=COPIES),
        Field("taken", (P, F), _copies, "slot figures taken into the hand, not laid [b]",
              seats=True, range_doc=COPIES),
        Field("lacks", (P, F), 1, "1: no such figure in hand besides `taken` [c]", seats=True),
        _seat("place", "place so far this round (0 = none)", P),
        _seat("announced", "active announcement N (0 = none)", MAX_COMBO_PTS),
        _seat("ann_made", "announced in this round"),
        _seat("combo_len", f"combo length, clipped at {COMBO_CLIP}", COMBO_CLIP),
        _seat("serves_since", "serves since the announcement", 2),
        _seat("laid_since", "laid a card since the announcement"),
        _seat("picks_left", "slot picks still granted", 2),
        _seat("score", "game total so far", _max_score, low=_min_score,
              range_doc="−5R – 10R"),
        _seat("last_round_score", "score of the last scored round", 10, low=-5),
        Field("topups", 1, MAX_TOPUPS, "free top-ups in the current decision"),
        Field("round", 1, _rounds, "round number (1-based)", range_doc="0–R"),
        Field("num_rounds", 1, ROUNDS_SHOWN, f"rounds in the game, at most {ROUNDS_SHOWN}"),
        Field("deck_mode", 1, 1, "1 = `own_decks`"),
        Field("auto_pass", 1, 1, "option `auto_pass`"),
        Field("solo", 1, 1, "exactly one player is active (play phases)"),
        Field("slots", (P, NUM_SLOTS, F), 1, "slot figures, one-hot per slot (level 10)",
              seats=True),
        Field("box", (P, F), _copies, "box cards per owner and figure [d]", seats=True,
              range_doc=COPIES),
        Field("top", F, 1, "effective top figure, one-hot (zeros = empty box)"),
        _seat("top_owner", "owner of the top card, one-hot"),
        _seat("duty", "duty holder, one-hot"),
        _seat("reopener", "reopener R of the last interruption, one-hot"),
        _seat("to_play", "seat to act, one-hot"),
        Field("phase", len(Phase), 1, "one-hot, in the order of `rules.Phase`"),
        _seat("seats", "1 for each seat in play"),
        Field("status", (P, 3), 1, "one-hot: active, finished, eliminated", seats=True),
        Field("level", 3, 1, "one-hot: level 8, 9, 10"),
    ]
)  # fmt: skip
OBS_SIZE = LAYOUT.size

STATE_LAYOUT = Layout(
    [
        *LAYOUT.fields,
        Field("hands", (P, F), _copies, "every hand per figure", seats=True, range_doc=COPIES),
        Field("draw_comp", (P, F), _copies, "every draw pile per figure", seats=True,
              range_doc=COPIES),
        Field("draw_order", (P, MAX_PILE), F, "draw piles from the top: figure + 1 (0 = none)",
              seats=True),
        Field("queue", (P, P), 1, "decision queue: [position, seat] one-hot"),
        _seat("combo_pts", "combo points of this round", MAX_COMBO_PTS),
        _seat("firsts", "1st places (tie-break)", _rounds, range_doc="0–R"),
        _seat("combo_sum", "combo points of the game (tie-break)", _combo_sum,
              range_doc="0–11R"),
        _seat("last_place", "place in the last scored round (tie-break)", P),
        _seat("opener", "opener of the round, one-hot"),
        _seat("last_winner", "place 1 of the last scored round, one-hot"),
        Field("slot_old", (P, NUM_SLOTS), 1, "slot held before this distribution", seats=True),
        Field("swapped", (P, NUM_SLOTS), 1, "slot swapped in this SWAP phase", seats=True),
        Field("resume", 3, 1, "one-hot: what a pending FINISH resumes (none, next, free open)"),
        Field("steps", 1, _steps, "env steps in this round", range_doc="0–max_round_steps"),
        Field("sp_in_round", 1, 1, "somebody was eliminated by shuffle pressure this round"),
    ]
)  # fmt: skip
STATE_SIZE = STATE_LAYOUT.size

AT = LAYOUT.at
ST = STATE_LAYOUT.at
_NO_SLOTS = (-1,) * NUM_SLOTS


def params(config: Config) -> dict[str, Any]:
    """The layout parameters of a game: ``LAYOUT.decode(obs, raw=True, **params(config))``."""
    return {
        "num_players": config.num_players,
        "num_rounds": config.num_rounds,
        "deck_mode": config.deck_mode,
    }


def params_of(obs: np.ndarray) -> dict[str, Any]:
    """The layout parameters read back from an observation's fixed-range fields."""
    d = LAYOUT.views(np.asarray(obs))
    return {
        "num_players": int(round(float(d["seats"].sum()))),
        "num_rounds": max(1, int(round(float(d["num_rounds"][0]) * ROUNDS_SHOWN))),
        "deck_mode": "own_decks" if d["deck_mode"][0] > 0.5 else "one_colour",
    }


@lru_cache(maxsize=64)
def _affine(num_players: int, num_rounds: int, deck_mode: str) -> tuple[np.ndarray, np.ndarray]:
    return LAYOUT.affine(num_players=num_players, num_rounds=num_rounds, deck_mode=deck_mode)


@lru_cache(maxsize=64)
def _state_affine(config: Config) -> tuple[np.ndarray, np.ndarray]:
    return STATE_LAYOUT.affine(**params(config), max_round_steps=config.max_round_steps)


def encode(state: State, seat: int) -> np.ndarray:
    """The observation of ``seat``: public information plus its own hand and draw pile."""
    hit = _BY_CONFIG.get(id(state.config))
    start, scale, shift = _of_config(state.config) if hit is None else hit[1]
    vec = start.copy()
    _write(memoryview(vec), state, seat)
    vec *= scale  # one affine map from raw values, as LAYOUT.scale does
    vec += shift
    return vec


# Speed (issue 12): what changes on few steps is cached by the identity of the state's parts
# (``rules.apply_action`` passes an unchanged part on as the same object): the options, the
# draw piles and the played piles. Hashing a pile, or the played piles of all seats, would cost
# about as much as counting it. An entry keeps its object alive, so no other object can take
# the id while the entry lives; the oldest entry goes first when a cache is full. Rows are
# array.array objects, not numpy arrays or views: every object that outlives a step lengthens
# the garbage collector's later passes, and a cache should add as few as it can.
_BY_ID_SIZE = 1024
_BY_CONFIG: dict[int, tuple[Config, tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
_DRAW_ROWS: dict[int, tuple[tuple[int, ...], array]] = {}
_PLAYED_ROWS: dict[int, tuple[tuple[tuple[int, ...], ...], Any]] = {}


def _by_id(cache: dict[int, tuple[Any, Any]], obj: Any, value: Any) -> Any:
    """Store ``value`` for ``obj`` by identity (keeping ``obj`` alive); returns ``value``."""
    if len(cache) >= _BY_ID_SIZE:
        cache.pop(next(iter(cache)), None)  # the oldest entry (dicts keep insertion order)
    cache[id(obj)] = (obj, value)
    return value


def _of_config(cfg: Config) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The start vector and the affine map ``(scale, shift)`` of a game (cached by identity)."""
    start = _start(cfg.num_players, cfg.level, cfg.num_rounds, cfg.deck_mode, cfg.auto_pass)
    scale, shift = _affine(cfg.num_players, cfg.num_rounds, cfg.deck_mode)
    return _by_id(_BY_CONFIG, cfg, (start, scale, shift))


@lru_cache(maxsize=64)
def _start(n: int, level: int, num_rounds: int, deck_mode: str, auto_pass: bool) -> np.ndarray:
    """The raw values every position of a game shares (its options; every seat in play still
    active), zeros elsewhere; ``_write`` fills in the rest. Keyed by the options themselves:
    hashing a Config runs Python code."""
    vec = np.zeros(OBS_SIZE, dtype=np.float32)
    vec[AT["seats"] : AT["seats"] + n] = 1
    vec[AT["status"] : AT["status"] + 3 * n : 3] = 1  # status ACTIVE
    vec[AT["level"] + level - 8] = 1
    vec[AT["num_rounds"]] = num_rounds
    vec[AT["deck_mode"]] = deck_mode == "own_decks"
    vec[AT["auto_pass"]] = auto_pass
    vec.flags.writeable = False
    return vec


# Start indices of the fields written for every seat (``LAYOUT.at``, bound once by name).
_STATUS, _HAND_COUNT = AT["status"], AT["hand_count"]
_DRAW_COUNT, _PLAYED_COUNT, _PLAYED = AT["draw_count"], AT["played_count"], AT["played"]
_RECYCLED, _TAKEN, _LACKS, _SLOTS = AT["recycled"], AT["taken"], AT["lacks"], AT["slots"]
_PLACE, _ANNOUNCED, _ANN_MADE = AT["place"], AT["announced"], AT["ann_made"]
_COMBO_LEN, _SERVES_SINCE, _LAID_SINCE = AT["combo_len"], AT["serves_since"], AT["laid_since"]
_PICKS_LEFT, _SCORE, _LAST_SCORE = AT["picks_left"], AT["score"], AT["last_round_score"]
_TOP_OWNER, _DUTY, _REOPENER, _TO_PLAY = AT["top_owner"], AT["duty"], AT["reopener"], AT["to_play"]
_BOX, _TOP, _HAND, _OWN_DRAW = AT["box"], AT["top"], AT["hand"], AT["own_draw"]
_PHASE, _TOPUPS, _ROUND, _SOLO = AT["phase"], AT["topups"], AT["round"], AT["solo"]
_FINISH = Phase.FINISH  # the last phase played within a round


def _write(m: memoryview, s: State, seat: int) -> None:
    """Raw values of ``LAYOUT`` for ``seat`` into the start vector behind ``m`` (``_start``).

    Written element by element through a memoryview: every numpy call on a small piece would
    cost more than the Python work around it. Per-figure counts come from caches of float32
    rows, copied in whole; zeros are not written.
    """
    n = s.config.num_players
    # The own hand is new on most steps: a cached row would mostly be one more object that
    # outlives the step and so one more for every later collection of the garbage collector.
    m[_HAND : _HAND + F] = array("f", s.hand[seat])
    pile = s.draw[seat]
    hit = _DRAW_ROWS.get(id(pile))
    m[_OWN_DRAW : _OWN_DRAW + F] = _draw_row(pile) if hit is None else hit[1]
    hit = _PLAYED_ROWS.get(id(s.played))
    played = _played_rows(s.played) if hit is None else hit[1]
    if played is not None:  # rows by absolute seat, rotated: the observer's first
        counts, rows = played
        k, fs = n - seat, F * seat
        m[_PLAYED_COUNT : _PLAYED_COUNT + k] = counts[seat:]
        m[_PLAYED_COUNT + k : _PLAYED_COUNT + n] = counts[:seat]
        m[_PLAYED : _PLAYED + F * k] = rows[fs:]
        m[_PLAYED + F * k : _PLAYED + F * n] = rows[:fs]
    hand, draw, status = s.hand, s.draw, s.status
    combo_len, score, last_score, ann_made = s.combo_len, s.score, s.last_score, s.ann_made
    announced, serves_since, laid_since = s.announced, s.serves_since, s.laid_since
    place, picks_left, recycled, taken, lacks = s.place, s.picks_left, s.recycled, s.taken, s.lacks
    slots = s.slots
    for r, q in enumerate(CLOCKWISE[n][seat]):
        if status[q]:  # not ACTIVE, the status of the start vector
            m[_STATUS + 3 * r] = 0
            m[_STATUS + 3 * r + status[q]] = 1
        m[_HAND_COUNT + r] = sum(hand[q])
        m[_DRAW_COUNT + r] = len(draw[q])
        if combo_len[q]:
            m[_COMBO_LEN + r] = combo_len[q] if combo_len[q] < COMBO_CLIP else COMBO_CLIP
        if score[q]:
            m[_SCORE + r] = score[q]
        if last_score[q]:
            m[_LAST_SCORE + r] = last_score[q]
        if ann_made[q]:  # the announcement fields are 0 for a player who has not announced
            m[_ANN_MADE + r] = 1
            m[_ANNOUNCED + r] = announced[q]
            m[_SERVES_SINCE + r] = serves_since[q]
            m[_LAID_SINCE + r] = laid_since[q]
        if place[q]:
            m[_PLACE + r] = place[q]
        if picks_left[q]:
            m[_PICKS_LEFT + r] = picks_left[q]
        fr = F * r
        if recycled[q] != _NONE:
            m[_RECYCLED + fr : _RECYCLED + fr + F] = _row(recycled[q])
        if taken[q] != _NONE:
            m[_TAKEN + fr : _TAKEN + fr + F] = _row(taken[q])
        if lacks[q]:
            m[_LACKS + fr : _LACKS + fr + F] = _row(_BITS[lacks[q]])
        if slots[q] != _NO_SLOTS:  # most rows hold no slot figure: one comparison skips them
            for k, f in enumerate(slots[q]):
                if f >= 0:
                    m[_SLOTS + F * (NUM_SLOTS * r + k) + f] = 1
    if s.top_owner >= 0:
        m[_TOP_OWNER + (s.top_owner - seat) % n] = 1
    if s.duty >= 0:
        m[_DUTY + (s.duty - seat) % n] = 1
    if s.reopener >= 0:
        m[_REOPENER + (s.reopener - seat) % n] = 1
    if s.to_play >= 0:
        m[_TO_PLAY + (s.to_play - seat) % n] = 1
    for owner, f, _ in s.box:
        i = _BOX + F * ((owner - seat) % n) + f
        m[i] = m[i] + 1
    if s.top >= 0:
        m[_TOP + s.top] = 1
    m[_PHASE + s.phase] = 1
    m[_TOPUPS] = s.topups
    m[_ROUND] = s.round_idx
    m[_SOLO] = s.phase <= _FINISH and status.count(0) == 1


_NONE = (0,) * F
_BITS = tuple(tuple(b >> f & 1 for f in range(F)) for b in range(1 << F))


@lru_cache(maxsize=4096)
def _row(counts: tuple[int, ...]) -> array:
    """13 counts as a float32 row to copy into a vector (cached: rows repeat)."""
    return array("f", counts)  # made faster than a numpy array, one object for the GC


def _draw_row(pile: tuple[int, ...]) -> array:
    """Cards per figure of a draw pile as a float32 row, its order hidden (cached by identity)."""
    # bytes.count scans raw bytes where tuple.count compares objects: several times faster.
    return _by_id(_DRAW_ROWS, pile, array("f", map(bytes(pile).count, range(F))))


def _played_rows(played: tuple[tuple[int, ...], ...]) -> tuple[array, array] | None:
    """Played-pile sizes and rows by absolute seat as float32, None while every pile is empty
    (cached by identity)."""
    rows = None
    if any(row != _NONE for row in played):
        rows = array("f", map(sum, played)), array("f", chain.from_iterable(played))
    return _by_id(_PLAYED_ROWS, played, rows)


def encode_state(state: State) -> np.ndarray:
    """The whole game, hidden information included, in absolute seats."""
    cfg = state.config
    vec = np.zeros(STATE_SIZE, dtype=np.float32)
    vec[:OBS_SIZE] = _start(
        cfg.num_players, cfg.level, cfg.num_rounds, cfg.deck_mode, cfg.auto_pass
    )
    m = memoryview(vec)
    _write(m, state, 0)
    st = ST
    for q in range(cfg.num_players):
        m[st["hands"] + F * q : st["hands"] + F * q + F] = _row(state.hand[q])
        pile = state.draw[q]
        m[st["draw_comp"] + F * q : st["draw_comp"] + F * q + F] = _draw_row(pile)
        at_pile = st["draw_order"] + MAX_PILE * q
        for i, f in enumerate(reversed(pile)):
            m[at_pile + i] = f + 1
        for name, value in (
            ("combo_pts", state.combo_pts[q]),
            ("firsts", state.firsts[q]),
            ("combo_sum", state.combo_sum[q]),
            ("last_place", state.last_place[q]),
        ):
            m[st[name] + q] = value
        for k in range(NUM_SLOTS):
            m[st["slot_old"] + NUM_SLOTS * q + k] = state.slot_old[q][k]
            m[st["swapped"] + NUM_SLOTS * q + k] = state.swapped[q][k]
    for i, q in enumerate(state.queue):
        m[st["queue"] + P * i + q] = 1
    for name, q in (("opener", state.opener), ("last_winner", state.last_winner)):
        if q >= 0:
            m[st[name] + q] = 1
    m[st["resume"] + state.resume] = 1
    m[st["steps"]] = state.steps
    m[st["sp_in_round"]] = state.sp_in_round
    scale, shift = _state_affine(cfg)
    vec *= scale
    vec += shift
    return vec


def decode(vec: np.ndarray) -> dict[str, np.ndarray]:
    """An observation's raw values by field name (its parameters read from it)."""
    return LAYOUT.decode(vec, raw=True, **params_of(vec))
