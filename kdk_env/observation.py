"""KdK observations: one flat float32 vector per seat, read by name through ``LAYOUT``.

The fields follow §8.2 of the spec. Seats are relative to the observer: index 0 is the
observer, 1 the next seat clockwise, and so on. Per-player fields have 5 entries whatever the
player count (``seats`` marks the ones in play), so one network fits every table size. Every
value lies in [0, 1]: card counts are divided by the number of copies of that figure in one
player's deck (3 traitors / 2 of each other figure in ``one_colour``, 15 / 10 in
``own_decks``), pile sizes by the deck size (27 or 135), seats and figures are one-hot (all
zero = none), and scores are shifted and scaled as listed.

=======  ===================  ==========  ========================================================
index    field                shape       content
=======  ===================  ==========  ========================================================
0-12     ``hand``             13          own hand per figure / copies
13-25    ``own_draw``         13          composition of the own draw pile / copies (order hidden)
26-30    ``hand_count``       5           hand sizes / deck size
31-35    ``draw_count``       5           draw-pile sizes / deck size
36-40    ``played_count``     5           played-pile sizes / deck size
41-105   ``played``           (5, 13)     played piles per figure / copies
106-110  ``place``            5           place so far this round / 5 (0 = none)
111-115  ``announced``        5           active announcement N / 11 (0 = none)
116-120  ``ann_made``         5           announced in this round
121-125  ``combo_len``        5           min(combo length, 22) / 22
126-130  ``serves_since``     5           serves since the announcement / 2
131-135  ``laid_since``       5           laid a card since the announcement
136-140  ``picks_left``       5           slot picks still granted / 2
141-145  ``score``            5           (total + 5·R) / (15·R), R = num_rounds
146-150  ``last_round_score`` 5           (score of the last round + 5) / 15
151      ``topups``           1           top-ups in the current decision / 3
152      ``round``            1           round_idx / num_rounds
153      ``num_rounds``       1           1 / num_rounds
154      ``deck_mode``        1           1 = ``own_decks``
155      ``solo``             1           exactly one player is active
156-350  ``slots``            (5, 3, 13)  slot figures, one-hot per slot (level 10)
351-415  ``box``              (5, 13)     box cards per owner and figure / copies (incl. WEITER
                                          traitors)
416-428  ``top``              13          effective top figure, one-hot (zeros = empty box)
429-433  ``top_owner``        5           owner of the top card, one-hot
434-438  ``duty``             5           duty holder, one-hot
439-443  ``reopener``         5           reopener R of the last interruption, one-hot
444-448  ``to_play``          5           seat to act, one-hot
449-457  ``phase``            9           OPEN, FREE_OPEN, WINDOW, DUTY, FINISH, SP_DECLARE,
                                          SLOT_PICK, SWAP, GAME_OVER
458-462  ``seats``            5           1 for each seat in play
463-477  ``status``           (5, 3)      one-hot active / finished / eliminated
478-480  ``level``            3           one-hot level 8, 9, 10
=======  ===================  ==========  ========================================================

Hidden from an observer: the other hands, every draw-pile order, the other draw-pile
compositions (and so which cards others drew). ``action_mask`` is not part of the vector; the
env returns it beside it.

``STATE_LAYOUT`` (for ``state()``) is the same vector from seat 0 (so seats are absolute),
followed by everything else: every hand and draw-pile composition, every draw-pile order
(``(figure + 1) / 13`` from the top card on, 0 = no card), the decision queue, and the
bookkeeping of rounds, tie-breaks and the between-round phases.
"""

from __future__ import annotations

from functools import cache, lru_cache
from itertools import chain

import numpy as np

from kdk_env.rules import DECKS, MAX_PLAYERS, NUM_FIGURES, NUM_SLOTS, Phase, State
from tablegym.layout import Layout

P = MAX_PLAYERS
F = NUM_FIGURES
MAX_PILE = max(sum(d) for d in DECKS.values())  # 135
COMBO_CLIP = 22  # CLAIM_LATE reaches 11 points at 22 cards; no longer combo scores more

# The vector is built as ints (counts and one-hots) in absolute seats, put into the observer's
# seat order by one index array (``_rotation``) and multiplied by a scale vector (``_scale``).
_PER_SEAT = (
    "place", "announced", "ann_made", "combo_len", "serves_since", "laid_since", "picks_left",
    "score", "last_round_score",
)  # fmt: skip
LAYOUT = Layout(
    [
        ("hand", F, 1),
        ("own_draw", F, 1),
        ("hand_count", P, 1),
        ("draw_count", P, 1),
        ("played_count", P, 1),
        ("played", (P, F), 1),
        *((name, P, 1) for name in _PER_SEAT),
        ("topups", 1, 1),
        ("round", 1, 1),
        ("num_rounds", 1, 1),
        ("deck_mode", 1, 1),
        ("solo", 1, 1),
        ("slots", (P, NUM_SLOTS, F), 1),
        ("box", (P, F), 1),
        ("top", F, 1),
        ("top_owner", P, 1),
        ("duty", P, 1),
        ("reopener", P, 1),
        ("to_play", P, 1),
        ("phase", len(Phase), 1),
        ("seats", P, 1),
        ("status", (P, 3), 1),
        ("level", 3, 1),
    ]
)
OBS_SIZE = LAYOUT.size

STATE_LAYOUT = Layout(
    [
        *LAYOUT.fields,
        ("hands", (P, F), 1),
        ("draw_comp", (P, F), 1),
        ("draw_order", (P, MAX_PILE), 1),
        ("queue", (P, P), 1),  # [position, seat] one-hot
        ("combo_pts", P, 1),  # / 11
        ("firsts", P, 1),  # / num_rounds
        ("combo_sum", P, 1),  # / (11 * num_rounds)
        ("last_place", P, 1),  # / 5
        ("opener", P, 1),
        ("last_winner", P, 1),
        ("slot_old", (P, NUM_SLOTS), 1),
        ("swapped", (P, NUM_SLOTS), 1),
        ("resume", 3, 1),
        ("steps", 1, 1),  # / max_round_steps
        ("sp_in_round", 1, 1),
        ("auto_pass", 1, 1),
    ]
)
STATE_SIZE = STATE_LAYOUT.size

_AT = {name: sl.start for name, sl in LAYOUT.slices.items()}
_ST = {name: sl.start for name, sl in STATE_LAYOUT.slices.items()}
_HEAD_END = LAYOUT.slices["solo"].stop
_SEAT_PAD = {n: (0,) * (P - n) for n in range(2, P + 1)}
_FIGURE_PAD = {n: (0,) * (F * (P - n)) for n in range(2, P + 1)}
_NO_SLOTS = (-1,) * NUM_SLOTS
# Fields with one row per seat: rotated so that the observer comes first.
_SEAT_FIELDS = (
    "hand_count", "draw_count", "played_count", "played", *_PER_SEAT, "slots", "box",
    "top_owner", "duty", "reopener", "to_play", "seats", "status",
)  # fmt: skip


def _rotation(n: int, seat: int) -> np.ndarray:
    """Indices that turn a vector in absolute seats into the view of ``seat``.

    Row r of a seat field is row (seat + r) % n of the absolute vector; rows r >= n (no such
    seat) are zero in both and map to themselves.
    """
    idx = np.arange(OBS_SIZE)
    rows_from = [(seat + r) % n for r in range(n)]
    for name in _SEAT_FIELDS:
        rows = idx[LAYOUT.slices[name]].reshape(P, -1)  # a view into idx, one row per seat
        rows[:n] = rows[rows_from]
    return idx


_ROTATION = {n: tuple(_rotation(n, seat) for seat in range(n)) for n in range(2, P + 1)}


def _blank(n: int) -> bytes:
    """The raw vector before any entry is set: zeros but the seats in play."""
    blank = bytearray(OBS_SIZE)
    blank[_AT["seats"] : _AT["seats"] + n] = b"\x01" * n
    return bytes(blank)


_BLANK = {n: _blank(n) for n in range(2, P + 1)}


@cache
def _scale(deck_mode: str, num_rounds: int, size: int = OBS_SIZE) -> np.ndarray:
    """Multipliers that turn the raw numbers into the documented values (1 elsewhere)."""
    deck = np.asarray(DECKS[deck_mode], dtype=np.float32)
    scale = np.ones(size, dtype=np.float32)
    sl = LAYOUT.slices
    for name in ("hand", "own_draw", "played", "box"):
        scale[sl[name]] = np.tile(1.0 / deck, (sl[name].stop - sl[name].start) // F)
    for name in ("hand_count", "draw_count", "played_count"):
        scale[sl[name]] = 1.0 / deck.sum()
    divisors = {
        "place": 5, "announced": 11, "combo_len": COMBO_CLIP, "serves_since": 2,
        "picks_left": 2, "score": 15 * num_rounds, "last_round_score": 15, "topups": 3,
        "round": num_rounds, "num_rounds": num_rounds,
    }  # fmt: skip
    for name, d in divisors.items():
        scale[sl[name]] = 1.0 / d
    if size > OBS_SIZE:  # the state vector: hidden counts too
        st = STATE_LAYOUT.slices
        scale[st["hands"]] = np.tile(1.0 / deck, P)
        scale[st["draw_comp"]] = np.tile(1.0 / deck, P)
    scale.flags.writeable = False
    return scale


def encode(state: State, seat: int) -> np.ndarray:
    """The observation of ``seat``: public information plus its own hand and draw pile."""
    cfg = state.config
    raw = _absolute(state, seat)[_ROTATION[cfg.num_players][seat]]
    return raw * _scale(cfg.deck_mode, cfg.num_rounds)


def _absolute(s: State, seat: int) -> np.ndarray:
    """The observation of ``seat`` in absolute seats and before scaling: small ints.

    Built in plain Python and turned into an array once at the end: every numpy call on a
    small piece would cost more than the Python work around it. The one-hot fields (and the
    box: at most 15 cards of a figure) are set in a copy of a byte template, then the fields
    up to ``solo``, listed in order, are copied over its start in one go.
    """
    cfg = s.config
    n = cfg.num_players
    pad = _SEAT_PAD[n]
    offset = 5 * cfg.num_rounds
    solo = s.phase <= Phase.FINISH and s.status.count(0) == 1
    head = [
        *s.hand[seat],
        *_composition(s.draw[seat]),
        *map(sum, s.hand), *pad,
        *map(len, s.draw), *pad,
        *_played_fields(s.played),
        *s.place, *pad,
        *s.announced, *pad,
        *s.ann_made, *pad,
        *[c if c < COMBO_CLIP else COMBO_CLIP for c in s.combo_len], *pad,
        *s.serves_since, *pad,
        *s.laid_since, *pad,
        *s.picks_left, *pad,
        *[x + offset for x in s.score], *pad,
        *[x + 5 for x in s.last_score], *pad,
        s.topups, s.round_idx, 1, cfg.deck_mode == "own_decks", solo,
    ]  # fmt: skip
    buf = bytearray(_BLANK[n])
    at = _AT
    buf[at["phase"] + s.phase] = 1
    buf[at["level"] + cfg.level - 8] = 1
    for q, status in enumerate(s.status):
        buf[at["status"] + 3 * q + status] = 1
    for q, row in enumerate(s.slots):
        if row != _NO_SLOTS:  # most rows hold no slot figure: one comparison skips them
            for k, f in enumerate(row):
                if f >= 0:
                    buf[at["slots"] + F * (NUM_SLOTS * q + k) + f] = 1
    for name, q in (
        ("top_owner", s.top_owner),
        ("duty", s.duty),
        ("reopener", s.reopener),
        ("to_play", s.to_play),
    ):
        if q >= 0:
            buf[at[name] + q] = 1
    if s.top >= 0:
        buf[at["top"] + s.top] = 1
    for owner, f, _ in s.box:
        buf[at["box"] + F * owner + f] += 1
    try:
        buf[:_HEAD_END] = head  # about 6x faster than numpy's conversion of a list
    except ValueError:  # beyond a byte: the score of a game of more than 17 rounds
        return np.array([*head, *buf[_HEAD_END:]], dtype=np.float32)
    return np.frombuffer(buf, dtype=np.uint8)


@lru_cache(maxsize=1024)
def _composition(pile: tuple[int, ...]) -> tuple[int, ...]:
    """Cards per figure of a draw pile.

    Cached: a pile changes only when its owner draws, and its 13 counts would be the costliest
    field of the encoding. ``bytes.count`` scans raw bytes where ``tuple.count`` compares
    objects: several times faster on a 135-card pile.
    """
    return tuple(map(bytes(pile).count, range(F)))


@lru_cache(maxsize=1024)
def _played_fields(played: tuple[tuple[int, ...], ...]) -> tuple[int, ...]:
    """``played_count`` and ``played`` in absolute seats, padded to 5 seats.

    Cached: only an interruption, a recycle or a round end changes the played piles.
    """
    n = len(played)
    return (*map(sum, played), *_SEAT_PAD[n], *chain.from_iterable(played), *_FIGURE_PAD[n])


def encode_state(state: State) -> np.ndarray:
    """The whole game, hidden information included, in absolute seats."""
    vec = np.zeros(STATE_SIZE, dtype=np.float32)
    vec[:OBS_SIZE] = _absolute(state, 0)
    st = _ST
    cfg = state.config
    n = cfg.num_players
    counts = [*chain.from_iterable(state.hand), *_FIGURE_PAD[n]]
    for pile in state.draw:
        counts += _composition(pile)
    counts += _FIGURE_PAD[n]
    vec[st["hands"] : st["hands"] + len(counts)] = counts  # hands, then draw_comp
    idx: list[int] = []
    val: list[float] = []
    for q in range(n):
        pile = state.draw[q]
        if pile:
            top_first = (np.asarray(pile[::-1], dtype=np.float32) + 1) / F
            start = st["draw_order"] + MAX_PILE * q
            vec[start : start + len(pile)] = top_first
        idx += (st["combo_pts"] + q, st["firsts"] + q, st["combo_sum"] + q, st["last_place"] + q)
        val += (
            state.combo_pts[q] / 11,
            state.firsts[q] / cfg.num_rounds,
            state.combo_sum[q] / (11 * cfg.num_rounds),
            state.last_place[q] / 5,
        )
        for k in range(NUM_SLOTS):
            idx += (st["slot_old"] + NUM_SLOTS * q + k, st["swapped"] + NUM_SLOTS * q + k)
            val += (float(state.slot_old[q][k]), float(state.swapped[q][k]))
    for i, q in enumerate(state.queue):
        idx.append(st["queue"] + P * i + q)
        val.append(1.0)
    for name, q in (("opener", state.opener), ("last_winner", state.last_winner)):
        if q >= 0:
            idx.append(st[name] + q)
            val.append(1.0)
    idx += (st["resume"] + state.resume, st["steps"], st["sp_in_round"], st["auto_pass"])
    val += (
        1.0,
        min(1.0, state.steps / cfg.max_round_steps),
        float(state.sp_in_round),
        float(cfg.auto_pass),
    )
    vec[idx] = val
    vec *= _scale(cfg.deck_mode, cfg.num_rounds, STATE_SIZE)
    return vec


def decode(vec: np.ndarray) -> dict[str, np.ndarray]:
    """An observation split into its named fields."""
    return LAYOUT.decode(vec)
