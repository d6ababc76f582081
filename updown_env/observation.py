"""Up & Down observations: one flat float32 vector per seat, read by name through ``LAYOUT``.

Seats are relative to the observer: index 0 is the observer, 1 the next seat clockwise, and so
on. Per-player fields have 4 entries whatever the player count (``num_players`` tells how many
are in play), so one network fits every table size. Cards are indexed by id
``suit * 11 + (value - 2)``, suits clubs, spades, hearts, diamonds. All values lie in [0, 1].

=========  ================  =======  =========================================================
index      field             shape    content
=========  ================  =======  =========================================================
0–43       ``hand``          44       1 for each card in the observer's hand
44–87      ``my_choice``     44       one-hot card the observer has chosen in this trick
88–263     ``played``        (4, 44)  per seat, the cards it revealed in this round's finished
                                      tricks
264–439    ``last_trick``    (4, 44)  per seat, one-hot card it played in the last resolved
                                      trick (all 0 before the first trick of the game)
440–445    ``last_result``   6        one-hot: winner seat 0..3, pot, lost (all 0 before the
                                      first trick)
446–447    ``side``          2        one-hot: UP, DOWN
448–463    ``suits``         (4, 4)   per seat, one-hot own suit
464–474    ``trump``         11       one-hot trump value 2..12
475–478    ``leader``        4        one-hot trick leader
479–482    ``chosen``        4        seats that have chosen a card in this trick (not which)
483–485    ``phase``         3        one-hot: change the rules, choose cards, game over
486        ``pot``           1        tricks in the pot / 15
487–490    ``tricks``        4        tricks won over all rounds / tricks in the game
491–494    ``hand_sizes``    4        cards in hand / 15
495        ``tricks_left``   1        tricks of this round not yet resolved / 15
496        ``rounds_left``   1        rounds after this one / rounds in the game
497–499    ``num_players``   3        one-hot: 2, 3, 4 players
=========  ================  =======  =========================================================

``STATE_LAYOUT`` (for ``state()``) describes the whole game in absolute seats, hidden
information included: every hand, every pending choice and the set-aside cards.
"""

from __future__ import annotations

import numpy as np

from tablegym.layout import Layout
from updown_env.rules import (
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

# The card-mask fields come first and in a block, so one unpacking of bitmasks fills them all.
LAYOUT = Layout(
    [
        ("hand", C, 1),
        ("my_choice", C, 1),
        ("played", (P, C), 1),
        ("last_trick", (P, C), 1),
        ("last_result", P + 2, 1),
        ("side", 2, 1),
        ("suits", (P, NUM_SUITS), 1),
        ("trump", NUM_VALUES, 1),
        ("leader", P, 1),
        ("chosen", P, 1),
        ("phase", 3, 1),
        ("pot", 1, 1),
        ("tricks", P, 1),
        ("hand_sizes", P, 1),
        ("tricks_left", 1, 1),
        ("rounds_left", 1, 1),
        ("num_players", 3, 1),
    ]
)
OBS_SIZE = LAYOUT.size

STATE_LAYOUT = Layout(
    [
        ("hands", (P, C), 1),
        ("pending", (P, C), 1),
        ("aside", C, 1),
        ("played", (P, C), 1),
        ("last_trick", (P, C), 1),
        ("last_result", P + 2, 1),
        ("side", 2, 1),
        ("orientation", NUM_SUITS, 1),
        ("suits", (P, NUM_SUITS), 1),
        ("trump", NUM_VALUES, 1),
        ("leader", P, 1),
        ("to_play", P, 1),
        ("phase", 3, 1),
        ("pot", 1, 1),
        ("tricks", P, 1),
        ("lost", 1, 1),
        ("hand_sizes", P, 1),
        ("tricks_left", 1, 1),
        ("rounds_left", 1, 1),
        ("num_players", 3, 1),
    ]
)
STATE_SIZE = STATE_LAYOUT.size

_O = {name: s.start for name, s in LAYOUT.slices.items()}
_S = {name: s.start for name, s in STATE_LAYOUT.slices.items()}
_OBS_MASK_ROWS = 2 + 2 * P  # hand, my_choice, played x4, last_trick x4
_STATE_MASK_ROWS = 4 * P + 1  # hands, pending, aside, played, last_trick
# Seat order seen from each observer: _ORDER[n][seat][j] is the seat j places clockwise.
_ORDER = {n: tuple(tuple((s + j) % n for j in range(n)) for s in range(n)) for n in DIRECTIONS}


def _unpack(masks: list[int], out: np.ndarray) -> None:
    """Write 44-card bitmasks as rows of 0/1 into ``out`` (a flat view, rows * 44 long)."""
    raw = np.array(masks, dtype="<u8").view(np.uint8)
    bits = np.unpackbits(raw, bitorder="little").reshape(len(masks), 64)
    out.reshape(len(masks), C)[:] = bits[:, :C]


def _card_bit(card: int) -> int:
    return 0 if card == NO_CARD else 1 << card


def encode(state: State, seat: int) -> np.ndarray:
    """The observation of ``seat``: public information plus its own hand and pending choice."""
    vec = np.zeros(OBS_SIZE, dtype=np.float32)
    order = _ORDER[state.num_players][seat]
    pad = [0] * (P - len(order))
    masks = [state.hands[seat], _card_bit(state.pending[seat])]
    masks += [state.played[s] for s in order] + pad
    masks += [_card_bit(state.last_trick[s]) for s in order] + pad
    _unpack(masks, vec[: _OBS_MASK_ROWS * C])
    ones = _public_ones(state, order, _O)
    ones += [_O["chosen"] + j for j, s in enumerate(order) if state.pending[s] != NO_CARD]
    where, values = _counts(state, order, _O)
    vec[ones + where] = [1.0] * len(ones) + values  # one scatter: numpy calls cost more
    return vec


def _public_ones(state: State, order: tuple[int, ...], at: dict[str, int]) -> list[int]:
    """Indices of the one-hot public fields that are 1, seats listed in ``order``."""
    n = state.num_players
    dirs = DIRECTIONS[n]
    ones = [
        at["side"] + state.side,
        at["trump"] + state.trump - MIN_VALUE,
        at["phase"] + int(state.phase),
        at["num_players"] + n - 2,
    ]
    ones += [
        at["suits"] + NUM_SUITS * j + (dirs[s] + state.orientation) % NUM_SUITS
        for j, s in enumerate(order)
    ]
    if state.phase is not Phase.GAME_OVER:
        ones.append(at["leader"] + order.index(state.leader))
    result = state.last_result
    if result >= 0:
        ones.append(at["last_result"] + order.index(result))
    elif result == POT:
        ones.append(at["last_result"] + P)
    elif result == LOST:
        ones.append(at["last_result"] + P + 1)
    return ones


def _counts(
    state: State, order: tuple[int, ...], at: dict[str, int]
) -> tuple[list[int], list[float]]:
    """Indices and values of the normalised counts: pot, tricks, hand sizes, what is left."""
    n = len(order)
    per_game = state.num_rounds * HAND_SIZE[n]
    where = [at["pot"], at["tricks_left"], at["rounds_left"]]
    values = [
        state.pot / MAX_HAND,
        (HAND_SIZE[n] - state.played[0].bit_count()) / MAX_HAND,
        (state.num_rounds - state.round - 1) / state.num_rounds,
    ]
    where += range(at["tricks"], at["tricks"] + n)
    values += [state.tricks[s] / per_game for s in order]
    where += range(at["hand_sizes"], at["hand_sizes"] + n)
    values += [state.hands[s].bit_count() / MAX_HAND for s in order]
    return where, values


def encode_state(state: State) -> np.ndarray:
    """The whole game, hidden information included, in absolute seats."""
    vec = np.zeros(STATE_SIZE, dtype=np.float32)
    n = state.num_players
    order = _ORDER[n][0]
    pad = [0] * (P - n)
    masks = list(state.hands) + pad + [_card_bit(c) for c in state.pending] + pad
    masks += [state.aside, *state.played, *pad]
    masks += [_card_bit(c) for c in state.last_trick] + pad
    _unpack(masks, vec[: _STATE_MASK_ROWS * C])
    ones = _public_ones(state, order, _S)
    ones.append(_S["orientation"] + state.orientation)
    if state.to_play >= 0:
        ones.append(_S["to_play"] + state.to_play)
    where, values = _counts(state, order, _S)
    vec[ones + where] = [1.0] * len(ones) + values
    vec[_S["lost"]] = state.lost / (state.num_rounds * HAND_SIZE[n])
    return vec


def decode(vec: np.ndarray) -> dict[str, np.ndarray]:
    """An observation split into its named fields."""
    return LAYOUT.decode(vec)
