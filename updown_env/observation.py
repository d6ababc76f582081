"""Up & Down observations: one flat float32 vector per seat, read by name through ``LAYOUT``.

Seats are relative to the observer: row 0 of a per-seat field is the observer, row 1 the next
seat clockwise, and so on; per-seat fields have 4 rows whatever the player count (rows of seats
not in play stay 0), so one network fits every table size. Cards are indexed by id
``suit * 11 + (value - 2)``, suits clubs, spades, hearts, diamonds.

The encoder writes raw values (flags, counts, indices of one-hots) by field name and lets the
layout scale them: the vector stores ``(raw - low) / (high - low)``, so every value lies in
[0, 1]. Two bounds depend on the options, which are the layout's parameters ``num_players``
and ``num_rounds`` (R below; h is the hand size: 15, 14, 11 for 2, 3, 4 players). A reader
that does not know the options gets them back from the vector with :func:`params_of`, and raw
values by name with :func:`decode`. One-hot fields are all 0 when there is nothing to show:
``my_choice`` before the observer has chosen, ``last_trick`` and ``last_result`` before the
first trick of the game (they carry over into a new deal), ``leader`` once the game is over.

<!-- layout: updown_env.observation.LAYOUT -->
| index | field | shape | raw range | content |
|---|---|---|---|---|
| 0–43 | `hand` | 44 | 0/1 | cards in the observer's hand |
| 44–87 | `my_choice` | 44 | 0/1 | card the observer chose in this trick |
| 88–263 | `played` | 4×44 | 0/1 | per seat, cards revealed this round |
| 264–439 | `last_trick` | 4×44 | 0/1 | per seat, its card in the last trick |
| 440–445 | `last_result` | 6 | 0/1 | last trick: winner seat 0..3, pot, lost |
| 446–447 | `side` | 2 | 0/1 | UP, DOWN |
| 448–463 | `suits` | 4×4 | 0/1 | per seat, its own suit |
| 464–474 | `trump` | 11 | 0/1 | trump value 2..12 |
| 475–478 | `leader` | 4 | 0/1 | trick leader |
| 479–482 | `chosen` | 4 | 0/1 | per seat, has chosen a card (not which) |
| 483–485 | `phase` | 3 | 0/1 | change the rules, choose cards, game over |
| 486 | `pot` | 1 | 0–15 | tricks in the pot |
| 487–490 | `tricks` | 4 | 0–R·h | per seat, tricks won over all rounds |
| 491–494 | `hand_sizes` | 4 | 0–15 | per seat, cards in hand |
| 495 | `tricks_left` | 1 | 0–15 | tricks of this round still to resolve |
| 496 | `round` | 1 | 0–R−1 (÷R) | rounds before this one |
| 497 | `rounds_left` | 1 | 0–R−1 (÷R) | rounds after this one |
| 498–500 | `num_players` | 3 | 0/1 | 2, 3, 4 players |
| 501–512 | `changes` | 4×3 | 0–R·h | per seat, its rule changes as leader: FLIP, ROTATE, ROLL |
| 513–528 | `kinds` | 4×4 | 0–R·h | per seat, cards revealed: trump, own suit, other 3–J, 2 or Q |
<!-- end layout -->

What a seat could remember but is not here ("Hidden information" of
``docs/updown_rules.md``), and why: which cards fell together in each earlier trick, the
rules in force then and who won it, and each earlier round's result. None of it changes what
can happen next: the cards still out follow from ``hand``, ``my_choice`` and ``played``, the
standings from ``tricks`` and ``pot`` (the tricks lost so far are the tricks played less these),
and the rules in force are ``side``, ``suits`` and ``trump``. A policy with memory can still
collect the history trick by trick from ``last_trick`` and ``last_result``. What the history
says about how each seat plays is kept in counts (interpretation choice 10, "Habits"):
``changes`` and ``kinds`` (``rules.card_kind``), over the whole game. The cards of
earlier rounds are irrelevant after the new deal; the set-aside cards are never seen.
``rules.sample_state`` keeps exactly this information and redraws the rest.

``STATE_LAYOUT`` (for ``state()``) describes the whole game in absolute seats (row 0 is seat
0), hidden information included: every hand, every pending choice and the set-aside cards.

<!-- layout: updown_env.observation.STATE_LAYOUT -->
| index | field | shape | raw range | content |
|---|---|---|---|---|
| 0–175 | `hands` | 4×44 | 0/1 | per seat, its cards |
| 176–351 | `pending` | 4×44 | 0/1 | per seat, its chosen unrevealed card |
| 352–395 | `aside` | 44 | 0/1 | set-aside cards (never seen) |
| 396–571 | `played` | 4×44 | 0/1 | per seat, cards revealed this round |
| 572–747 | `last_trick` | 4×44 | 0/1 | per seat, its card in the last trick |
| 748–753 | `last_result` | 6 | 0/1 | last trick: winner seat 0..3, pot, lost |
| 754–755 | `side` | 2 | 0/1 | UP, DOWN |
| 756–759 | `orientation` | 4 | 0/1 | r: suit (d + r) mod 4 faces direction d |
| 760–775 | `suits` | 4×4 | 0/1 | per seat, its own suit |
| 776–786 | `trump` | 11 | 0/1 | trump value 2..12 |
| 787–790 | `leader` | 4 | 0/1 | trick leader |
| 791–794 | `to_play` | 4 | 0/1 | seat to act |
| 795–797 | `phase` | 3 | 0/1 | change the rules, choose cards, game over |
| 798 | `pot` | 1 | 0–15 | tricks in the pot |
| 799–802 | `tricks` | 4 | 0–R·h | per seat, tricks won over all rounds |
| 803 | `lost` | 1 | 0–R·h | tricks lost over all rounds |
| 804–807 | `hand_sizes` | 4 | 0–15 | per seat, cards in hand |
| 808 | `tricks_left` | 1 | 0–15 | tricks of this round still to resolve |
| 809 | `round` | 1 | 0–R−1 (÷R) | rounds before this one |
| 810 | `rounds_left` | 1 | 0–R−1 (÷R) | rounds after this one |
| 811–813 | `num_players` | 3 | 0/1 | 2, 3, 4 players |
| 814–825 | `changes` | 4×3 | 0–R·h | per seat, its rule changes as leader: FLIP, ROTATE, ROLL |
| 826–841 | `kinds` | 4×4 | 0–R·h | per seat, cards revealed: trump, own suit, other 3–J, 2 or Q |
<!-- end layout -->
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tablegym.layout import Field, Layout
from updown_env.rules import (
    CARD_KINDS,
    CHANGE_KINDS,
    DIRECTIONS,
    HAND_SIZE,
    LOST,
    MAX_HAND,
    MAX_PLAYERS,
    MIN_VALUE,
    NO_CARD,
    NUM_CARDS,
    NUM_SUITS,
    NUM_VALUES,
    POT,
    Phase,
    State,
)

P = MAX_PLAYERS
C = NUM_CARDS


def _game_tricks(num_players: int, num_rounds: int, **_: Any) -> int:
    return num_rounds * HAND_SIZE[num_players]


def _rounds(num_rounds: int, **_: Any) -> int:
    # R, not R - 1: a one-round game needs a nonzero range; the value never reaches 1.
    return num_rounds


# Fields shared by both layouts, by name. One-hot fields are all 0 when there is nothing to
# show: no trick resolved yet, no choice made, the game over.
_F = {
    f.name: f
    for f in [
        Field("played", (P, C), doc="per seat, cards revealed this round", seats=True),
        Field("last_trick", (P, C), doc="per seat, its card in the last trick", seats=True),
        Field("last_result", P + 2, doc="last trick: winner seat 0..3, pot, lost"),
        Field("side", 2, doc="UP, DOWN"),
        Field("suits", (P, NUM_SUITS), doc="per seat, its own suit", seats=True),
        Field("trump", NUM_VALUES, doc="trump value 2..12"),
        Field("leader", P, doc="trick leader"),
        Field("phase", 3, doc="change the rules, choose cards, game over"),
        Field("pot", 1, MAX_HAND, "tricks in the pot"),
        Field(
            "tricks",
            P,
            _game_tricks,
            "per seat, tricks won over all rounds",
            seats=True,
            range_doc="0–R·h",
        ),
        Field("hand_sizes", P, MAX_HAND, "per seat, cards in hand", seats=True),
        Field("tricks_left", 1, MAX_HAND, "tricks of this round still to resolve"),
        Field("round", 1, _rounds, "rounds before this one", range_doc="0–R−1 (÷R)"),
        Field("rounds_left", 1, _rounds, "rounds after this one", range_doc="0–R−1 (÷R)"),
        Field("num_players", 3, doc="2, 3, 4 players"),
        Field(
            "changes",
            (P, len(CHANGE_KINDS)),
            _game_tricks,
            "per seat, its rule changes as leader: FLIP, ROTATE, ROLL",
            seats=True,
            range_doc="0–R·h",
        ),
        Field(
            "kinds",
            (P, len(CARD_KINDS)),
            _game_tricks,
            "per seat, cards revealed: trump, own suit, other 3–J, 2 or Q",
            seats=True,
            range_doc="0–R·h",
        ),
    ]
}
_RULES = ("side", "suits", "trump", "leader")
_COUNTS = ("hand_sizes", "tricks_left", "round", "rounds_left", "num_players")
_HABITS = ("changes", "kinds")

LAYOUT = Layout(
    [
        Field("hand", C, doc="cards in the observer's hand"),
        Field("my_choice", C, doc="card the observer chose in this trick"),
        *(_F[name] for name in ("played", "last_trick", "last_result", *_RULES)),
        Field("chosen", P, doc="per seat, has chosen a card (not which)", seats=True),
        *(_F[name] for name in ("phase", "pot", "tricks", *_COUNTS, *_HABITS)),
    ]
)
OBS_SIZE = LAYOUT.size

STATE_LAYOUT = Layout(
    [
        Field("hands", (P, C), doc="per seat, its cards", seats=True),
        Field("pending", (P, C), doc="per seat, its chosen unrevealed card", seats=True),
        Field("aside", C, doc="set-aside cards (never seen)"),
        *(_F[name] for name in ("played", "last_trick", "last_result", "side")),
        Field("orientation", NUM_SUITS, doc="r: suit (d + r) mod 4 faces direction d"),
        *(_F[name] for name in _RULES[1:]),
        Field("to_play", P, doc="seat to act"),
        *(_F[name] for name in ("phase", "pot", "tricks")),
        Field("lost", 1, _game_tricks, "tricks lost over all rounds", range_doc="0–R·h"),
        *(_F[name] for name in (*_COUNTS, *_HABITS)),
    ]
)
STATE_SIZE = STATE_LAYOUT.size

_AT = LAYOUT.at
_SAT = STATE_LAYOUT.at
# Seat order seen from each observer: _ORDER[n][seat][j] is the seat j places clockwise.
_ORDER = {n: tuple(tuple((s + j) % n for j in range(n)) for s in range(n)) for n in DIRECTIONS}
# The ``suits`` field's flags as one int (bit 4j + suit), per player count, orientation and
# observer ("Components": the suit facing direction d is (d + r) mod 4).
_SUIT_ROWS = {
    n: tuple(
        tuple(
            sum(1 << (NUM_SUITS * j + (dirs[s] + r) % NUM_SUITS) for j, s in enumerate(order))
            for order in _ORDER[n]
        )
        for r in range(NUM_SUITS)
    )
    for n, dirs in DIRECTIONS.items()
}
# Index of each last-trick result in ``last_result`` after the four seats.
_RESULT = {POT: P, LOST: P + 1}


def _count_index(at: dict[str, int], n: int) -> np.ndarray:
    """Indices of the counts, in the order :func:`_public` lists their raw values."""
    pot, left, rnd, rounds_left, tricks, sizes = (
        at[name] for name in ("pot", "tricks_left", "round", "rounds_left", "tricks", "hand_sizes")
    )
    changes = range(at["changes"], at["changes"] + n * len(CHANGE_KINDS))
    kinds = range(at["kinds"], at["kinds"] + n * len(CARD_KINDS))
    return np.array(
        [
            pot,
            left,
            rnd,
            rounds_left,
            *range(tricks, tricks + n),
            *range(sizes, sizes + n),
            *changes,
            *kinds,
        ]
    )


# Fixed per player count: index arrays scatter faster than lists.
_OBS_COUNTS = {n: _count_index(_AT, n) for n in DIRECTIONS}
_STATE_COUNTS = {n: np.append(_count_index(_SAT, n), _SAT["lost"]) for n in DIRECTIONS}


def _public(state: State, order: tuple[int, ...], at: dict[str, int]) -> tuple[int, list[int]]:
    """The public fields, seats in ``order``: the flags as one int (bit i set: index i is 1),
    and the raw values of the counts (pot, tricks left, round, rounds left, tricks, hand
    sizes, changes, kinds)."""
    n = state.num_players
    first = order[0]
    bits = (
        1 << (at["side"] + state.side)
        | 1 << (at["trump"] + state.trump - MIN_VALUE)
        | 1 << (at["phase"] + state.phase)
        | 1 << (at["num_players"] + n - 2)
        | _SUIT_ROWS[n][state.orientation][first] << at["suits"]
    )
    for j, s in enumerate(order):
        bits |= state.played[s] << (at["played"] + C * j)  # a card mask is a row of flags
        if state.last_trick[s] != NO_CARD:
            bits |= 1 << (at["last_trick"] + C * j + state.last_trick[s])
    if state.phase is not Phase.GAME_OVER:
        bits |= 1 << (at["leader"] + (state.leader - first) % n)
    result = state.last_result
    if result >= 0:
        bits |= 1 << (at["last_result"] + (result - first) % n)
    elif result in _RESULT:
        bits |= 1 << (at["last_result"] + _RESULT[result])
    raw = [
        state.pot,
        HAND_SIZE[n] - state.played[0].bit_count(),
        state.round,
        state.num_rounds - state.round - 1,
    ]
    raw += [state.tricks[s] for s in order]
    raw += [state.hands[s].bit_count() for s in order]
    raw += [k for s in order for k in state.changes[s]]
    raw += [k for s in order for k in state.kinds[s]]
    return bits, raw


def _vector(
    layout: Layout, bits: int, where: np.ndarray, raw: list[int], **params: int
) -> np.ndarray:
    """The raw vector (the flags of ``bits``, the counts at ``where``), scaled by the layout."""
    flags = np.frombuffer(bits.to_bytes(-(-layout.size // 8), "little"), dtype=np.uint8)
    vec = np.unpackbits(flags, count=layout.size, bitorder="little").astype(np.float32)
    vec[where] = raw
    return layout.scale(vec, **params)


def encode(state: State, seat: int) -> np.ndarray:
    """The observation of ``seat``: public information plus its own hand and pending choice."""
    n = state.num_players
    order = _ORDER[n][seat]
    bits, raw = _public(state, order, _AT)
    bits |= state.hands[seat] << _AT["hand"]
    if state.pending[seat] != NO_CARD:
        bits |= 1 << (_AT["my_choice"] + state.pending[seat])
    for j, s in enumerate(order):
        if state.pending[s] != NO_CARD:
            bits |= 1 << (_AT["chosen"] + j)
    return _vector(LAYOUT, bits, _OBS_COUNTS[n], raw, num_players=n, num_rounds=state.num_rounds)


def encode_state(state: State) -> np.ndarray:
    """The whole game, hidden information included, in absolute seats."""
    n = state.num_players
    bits, raw = _public(state, _ORDER[n][0], _SAT)
    for s in range(n):
        bits |= state.hands[s] << (_SAT["hands"] + C * s)
        if state.pending[s] != NO_CARD:
            bits |= 1 << (_SAT["pending"] + C * s + state.pending[s])
    bits |= state.aside << _SAT["aside"]
    bits |= 1 << (_SAT["orientation"] + state.orientation)
    if state.to_play >= 0:
        bits |= 1 << (_SAT["to_play"] + state.to_play)
    raw.append(state.lost)
    counts = _STATE_COUNTS[n]
    return _vector(STATE_LAYOUT, bits, counts, raw, num_players=n, num_rounds=state.num_rounds)


def params_of(obs: np.ndarray) -> dict[str, int]:
    """The layout parameters ``num_players`` and ``num_rounds`` of one observation, read back.

    ``round`` and ``rounds_left`` are both stored divided by R and add up to R - 1, so their
    stored sum is 1 - 1/R.
    """
    num_players = int(np.argmax(obs[LAYOUT.slices["num_players"]])) + 2
    elapsed = float(obs[_AT["round"]]) + float(obs[_AT["rounds_left"]])
    return {"num_players": num_players, "num_rounds": round(1.0 / (1.0 - elapsed))}


def decode(obs: np.ndarray) -> dict[str, np.ndarray]:
    """One observation's raw values by field name (counts, flags, seats), options read back."""
    return LAYOUT.decode(obs, raw=True, **params_of(obs))
