"""King Up! observations: one flat float32 vector per seat, read by name through ``LAYOUT``.

Seats are relative to the observer: index 0 is the observer, 1 the next seat clockwise, and
so on. Per-player fields have 6 entries whatever the player count (``seats`` marks the ones in
play), so one network fits every table size. All values lie in [0, 1].

=====================  =========  ===========================================================
field                  shape      content
=====================  =========  ===========================================================
``castle``             (13, 9)    per candidate, one-hot position: unplaced, floor 0..5,
                                  throne, eliminated
``my_favourites``      13         1 for each candidate on the observer's favourite card
``no_cards_left``      6          NO cards in hand / 4 (public: every NO vote is revealed)
``placements_left``    6          placements still to make / 4
``seats``              6          1 for each seat in play
``phase``              4          one-hot: place, climb, vote, game over
``round``              3          one-hot round 1..3
``three_rounds``       1          1 in a 3-round game
``to_play``            6          one-hot seat to act (all 0 once the game is over)
``starter``            6          one-hot starting player of the round
``crown``              6          one-hot crown holder (all 0 before the first election)
``has_voted``          6          seats that have voted in the open election (not how)
``no_votes``           (13, 6)    1 where a seat voted NO on a candidate this round (revealed
                                  votes; a YES is every other seat of an election)
``last_candidate``     13         one-hot candidate of the round's last failed election
``round_scores``       (3, 6)     points of each finished round / 33
``totals``             6          game total / 99
=====================  =========  ===========================================================

``STATE_LAYOUT`` (for ``state()``) is the same vector from seat 0 (so seats are absolute),
followed by what no single player sees: every seat's favourites, pending votes, and the
position of each favourite card in the undealt deck.
"""

from __future__ import annotations

import numpy as np

from kingup_env.rules import (
    FAVOURITE_CARDS,
    MAX_PLAYERS,
    MAX_ROUND_SCORE,
    NUM_CANDIDATES,
    NUM_CARDS,
    UNPLACED,
    State,
)
from tablegym.layout import Layout

P = MAX_PLAYERS
LAYOUT = Layout(
    [
        ("castle", (NUM_CANDIDATES, 9), 1),
        ("my_favourites", NUM_CANDIDATES, 1),
        ("no_cards_left", P, 1),
        ("placements_left", P, 1),
        ("seats", P, 1),
        ("phase", 4, 1),
        ("round", 3, 1),
        ("three_rounds", 1, 1),
        ("to_play", P, 1),
        ("starter", P, 1),
        ("crown", P, 1),
        ("has_voted", P, 1),
        ("no_votes", (NUM_CANDIDATES, P), 1),
        ("last_candidate", NUM_CANDIDATES, 1),
        ("round_scores", (3, P), 1),
        ("totals", P, 1),
    ]
)
OBS_SIZE = LAYOUT.size

STATE_LAYOUT = Layout(
    [
        *LAYOUT.fields,
        ("favourites", (P, NUM_CANDIDATES), 1),
        ("pending_votes", (P, 2), 1),  # YES, NO of votes cast but not yet revealed
        ("deck_position", NUM_CARDS, 1),  # (index in undealt deck + 1) / 26; 0 = dealt
    ]
)
STATE_SIZE = STATE_LAYOUT.size

_S = LAYOUT.slices
_CASTLE = _S["castle"].start
_FAV = _S["my_favourites"].start
_NO_VOTES = _S["no_votes"].start
_SCORES = _S["round_scores"].start
_NO_LEFT = _S["no_cards_left"].start
_PLACEMENTS = _S["placements_left"].start
_SEATS = _S["seats"].start
_VOTED = _S["has_voted"].start
_PHASE = _S["phase"].start
_ROUND = _S["round"].start
_STARTER = _S["starter"].start
_TO_PLAY = _S["to_play"].start
_CROWN = _S["crown"].start
_LAST = _S["last_candidate"].start
_TOTALS = _S["totals"].start
_THREE = _S["three_rounds"].start
# castle column of each position: 0 unplaced, 1..6 floors 0..5, 7 throne, 8 eliminated
_COLUMN = {UNPLACED: 0, **{f: f + 1 for f in range(8)}}
_SEATS_OF = [[s for s in range(P) if m >> s & 1] for m in range(1 << P)]  # bitmask -> seats


def encode(state: State, seat: int) -> np.ndarray:
    """The observation of ``seat``: public information plus its own favourite card."""
    idx, val = _public_entries(state, seat)
    idx.extend(_FAV + c for c in FAVOURITE_CARDS[state.favourites[seat]])
    val.extend((1.0,) * 6)
    vec = np.zeros(OBS_SIZE, dtype=np.float32)
    # One scatter instead of many small writes: this runs on every observe().
    vec[idx] = val
    return vec


def _public_entries(state: State, seat: int) -> tuple[list[int], list[float]]:
    """(index, value) pairs of every non-zero public entry, seen from ``seat``."""
    n = state.num_players
    rel = [(s - seat) % n for s in range(n)]  # absolute seat -> relative seat
    col = _COLUMN
    idx = [_CASTLE + 9 * c + col[f] for c, f in enumerate(state.floors)]
    idx += [_SEATS + r for r in range(n)]
    idx += [_NO_LEFT + r for r in rel]
    idx += [_PLACEMENTS + r for r in rel]
    val = [1.0] * (NUM_CANDIDATES + n)
    val += [k / 4 for k in state.no_left]
    val += [k / 4 for k in state.placements_left]
    ones = [_PHASE + state.phase, _ROUND + state.round, _STARTER + rel[state.starter]]
    ones += [_VOTED + rel[s] for s, v in enumerate(state.votes) if v >= 0]
    if state.num_rounds == 3:
        ones.append(_THREE)
    if state.to_play >= 0:
        ones.append(_TO_PLAY + rel[state.to_play])
    if state.crown >= 0:
        ones.append(_CROWN + rel[state.crown])
    if state.last_candidate >= 0:
        ones.append(_LAST + state.last_candidate)
        for c, mask in enumerate(state.no_voters):
            ones += [_NO_VOTES + P * c + rel[s] for s in _SEATS_OF[mask]]
    idx += ones
    val += [1.0] * len(ones)
    if state.round_scores:
        for i, row in enumerate(state.round_scores):
            idx += [_SCORES + P * i + r for r in rel]
            val += [pts / MAX_ROUND_SCORE for pts in row]
        idx += [_TOTALS + r for r in rel]
        val += [sum(col) / (3 * MAX_ROUND_SCORE) for col in zip(*state.round_scores)]
    return idx, val


def encode_state(state: State) -> np.ndarray:
    """The whole game, hidden information included, in absolute seats."""
    vec = np.zeros(STATE_SIZE, dtype=np.float32)
    vec[:OBS_SIZE] = encode(state, 0)
    v = STATE_LAYOUT.views(vec)
    for s, card in enumerate(state.favourites):
        v["favourites"][s, list(FAVOURITE_CARDS[card])] = 1
        if state.votes[s] >= 0:
            v["pending_votes"][s, state.votes[s]] = 1
    for i, card in enumerate(state.deck):
        v["deck_position"][card] = (i + 1) / NUM_CARDS
    return vec


def decode(vec: np.ndarray) -> dict[str, np.ndarray]:
    """An observation split into its named fields."""
    return LAYOUT.decode(vec)
