"""King Up! observations: one flat float32 vector per seat, read by name through ``LAYOUT``.

Seats are relative to the observer: row 0 is the observer, 1 the next seat clockwise, and so
on. Per-seat fields have 6 rows whatever the player count (``seats`` marks the ones in play),
so one network fits every table size. The encoder writes raw values (flags, counts, points) by
field name and ``LAYOUT`` maps them to [0, 1] with one affine map; no bound depends on the
options, so ``LAYOUT.decode(obs, raw=True)`` needs no parameters and returns the raw values.

Everything public that matters for the rest of the game is here (``docs/kingup_rules.md``,
interpretation choice 10 says what is left out and why), and ``rules.sample_state`` (ISMCTS)
keeps exactly these fixed:

* ``castle``: each candidate's position, eliminated candidates included.
* ``no_votes[c, seat]``: the seat voted NO when ``c`` was on the throne this round (a candidate
  is voted on at most once a round, and every other seat of that election voted YES);
  ``no_cards_left`` follows from them but is given outright.
* ``revealed_cards[r, seat]``: the candidates on the card the seat revealed at the end of
  finished round ``r``; none of these cards can be dealt again.
* ``round_scores``, ``totals``, ``crown``, ``starter``, ``to_play``, ``has_voted`` (who has
  voted, never how, until the last vote reveals all).

Speed: the raw entries fixed for a whole round (scores, revealed cards, the observer's card…)
come from a small cache per seat and round; the others are written with one scatter, then
``LAYOUT.scale`` applies the affine map. The result is the same as writing every raw value
afresh, which is what a batched engine has to reproduce.

<!-- layout: kingup_env.observation.LAYOUT -->
| index | field | shape | raw range | content |
|---|---|---|---|---|
| 0–116 | `castle` | 13×9 | 0/1 | one-hot: unplaced, floor 0..5, throne, eliminated |
| 117–129 | `my_favourites` | 13 | 0/1 | candidates on my favourite card |
| 130–135 | `no_cards_left` | 6 | 0–4 | NO cards in hand |
| 136–141 | `placements_left` | 6 | 0–4 | placements to make |
| 142–147 | `seats` | 6 | 0/1 | seats in play |
| 148–151 | `phase` | 4 | 0/1 | one-hot: place, climb, vote, game over |
| 152–154 | `round` | 3 | 0/1 | one-hot round 1..3 |
| 155 | `num_rounds` | 1 | 1–3 | rounds in this game (1 or 3) |
| 156–161 | `to_play` | 6 | 0/1 | seat to act (none at game over) |
| 162–167 | `starter` | 6 | 0/1 | starting player of the round |
| 168–173 | `crown` | 6 | 0/1 | crown holder (none before an election) |
| 174–179 | `has_voted` | 6 | 0/1 | voted in the open election |
| 180–257 | `no_votes` | 13×6 | 0/1 | revealed NO votes of this round |
| 258–270 | `last_candidate` | 13 | 0/1 | last eliminated candidate |
| 271–288 | `round_scores` | 3×6 | 0–33 | points per finished round |
| 289–294 | `totals` | 6 | 0–99 | game totals |
| 295–528 | `revealed_cards` | 3×6×13 | 0/1 | cards revealed at round ends |
<!-- end layout -->

``STATE_LAYOUT`` (for ``state()``) is the same vector from seat 0 (so seats are absolute),
followed by what no single player sees:

<!-- layout: kingup_env.observation.STATE_LAYOUT -->
| index | field | shape | raw range | content |
|---|---|---|---|---|
| 0–528 | (the table above) | 529 | | every field of the table above, in its order |
| 529–606 | `favourites` | 6×13 | 0/1 | every seat's favourite card |
| 607–618 | `pending_votes` | 6×2 | 0/1 | unrevealed votes: YES, NO |
| 619–644 | `deck_position` | 26 | 0–26 | place in the deck (1 = top, 0 dealt) |
<!-- end layout -->
"""

from __future__ import annotations

from functools import lru_cache
from operator import add

import numpy as np

from kingup_env.rules import (
    FAVOURITE_CARDS,
    MAX_PLAYERS,
    MAX_ROUND_SCORE,
    NO_CARDS,
    NUM_CANDIDATES,
    NUM_CARDS,
    PLACEMENTS,
    Phase,
    State,
)
from tablegym.layout import Field, Layout

P = MAX_PLAYERS
C = NUM_CANDIDATES
ROUNDS = 3  # the most rounds a game has
LAYOUT = Layout(
    [
        Field("castle", (C, 9), 1, "one-hot: unplaced, floor 0..5, throne, eliminated"),
        Field("my_favourites", C, 1, "candidates on my favourite card"),
        Field("no_cards_left", P, max(NO_CARDS.values()), "NO cards in hand", seats=True),
        Field("placements_left", P, max(PLACEMENTS.values()), "placements to make", seats=True),
        Field("seats", P, 1, "seats in play", seats=True),
        Field("phase", 4, 1, "one-hot: place, climb, vote, game over"),
        Field("round", ROUNDS, 1, "one-hot round 1..3"),
        Field("num_rounds", 1, ROUNDS, "rounds in this game (1 or 3)", low=1),
        Field("to_play", P, 1, "seat to act (none at game over)", seats=True),
        Field("starter", P, 1, "starting player of the round", seats=True),
        Field("crown", P, 1, "crown holder (none before an election)", seats=True),
        Field("has_voted", P, 1, "voted in the open election", seats=True),
        Field("no_votes", (C, P), 1, "revealed NO votes of this round"),
        Field("last_candidate", C, 1, "last eliminated candidate"),
        Field("round_scores", (ROUNDS, P), MAX_ROUND_SCORE, "points per finished round"),
        Field("totals", P, ROUNDS * MAX_ROUND_SCORE, "game totals", seats=True),
        Field("revealed_cards", (ROUNDS, P, C), 1, "cards revealed at round ends"),
    ]
)
OBS_SIZE = LAYOUT.size

STATE_LAYOUT = Layout(
    [
        *LAYOUT.fields,
        Field("favourites", (P, C), 1, "every seat's favourite card", seats=True),
        Field("pending_votes", (P, 2), 1, "unrevealed votes: YES, NO", seats=True),
        Field("deck_position", NUM_CARDS, NUM_CARDS, "place in the deck (1 = top, 0 dealt)"),
    ]
)
STATE_SIZE = STATE_LAYOUT.size

at = LAYOUT.at
# castle index of candidate c at position p is _CASTLE_AT[c] + p: UNPLACED (-1) is column 0,
# floors 0..5 columns 1..6, THRONE (6) column 7, ELIMINATED (7) column 8.
_CASTLE_AT = tuple(at["castle"] + 9 * c + 1 for c in range(C))
_COUNTS_AT = {
    n: [*range(at["no_cards_left"], at["no_cards_left"] + n)]
    + [*range(at["placements_left"], at["placements_left"] + n)]
    for n in range(1, P + 1)
}
_PHASE_AT, _TO_PLAY_AT, _CROWN_AT = at["phase"], at["to_play"], at["crown"]
_VOTED_AT, _LAST_AT = at["has_voted"], at["last_candidate"]
_NO_VOTES_AT = tuple(at["no_votes"] + P * c for c in range(C))
_SEAT_BITS = tuple(tuple(s for s in range(P) if m >> s & 1) for m in range(1 << P))
_VOTE = Phase.VOTE


def encode(state: State, seat: int) -> np.ndarray:
    """The observation of ``seat``: public information plus its own favourite card."""
    return LAYOUT.scale(_raw(state, seat))


def encode_state(state: State) -> np.ndarray:
    """The whole game, hidden information included, in absolute seats (seat 0 first)."""
    st = STATE_LAYOUT.at
    idx = [
        st["favourites"] + C * s + c
        for s, card in enumerate(state.favourites)
        for c in FAVOURITE_CARDS[card]
    ]
    idx += [st["pending_votes"] + 2 * s + v for s, v in enumerate(state.votes) if v >= 0]
    ones = len(idx)
    idx += [st["deck_position"] + card for card in state.deck]
    raw = np.zeros(STATE_SIZE, dtype=np.float32)
    raw[:OBS_SIZE] = _raw(state, 0)
    raw[idx] = [*(1,) * ones, *range(1, len(state.deck) + 1)]
    return STATE_LAYOUT.scale(raw)


def _raw(state: State, seat: int) -> np.ndarray:
    """The raw observation of ``seat``: the round's cached entries plus one scatter."""
    vec = _round_raw(
        state.num_players,
        seat,
        state.favourites[seat],
        state.num_rounds,
        state.round,
        state.starter,
        state.round_scores,
        state.revealed,
    ).copy()
    idx, raw = _step_entries(state, seat)
    vec[idx] = raw
    return vec


def _step_entries(state: State, seat: int) -> tuple[list[int], list[int]]:
    """Indices and raw values of the entries that change within a round, seen from ``seat``."""
    n = state.num_players
    ones = list(map(add, _CASTLE_AT, state.floors))
    ones.append(_PHASE_AT + state.phase)
    if state.to_play >= 0:
        ones.append(_TO_PLAY_AT + (state.to_play - seat) % n)
    if state.crown >= 0:
        ones.append(_CROWN_AT + (state.crown - seat) % n)
    if state.phase is _VOTE:
        ones += [_VOTED_AT + (s - seat) % n for s, v in enumerate(state.votes) if v >= 0]
    if state.last_candidate >= 0:
        ones.append(_LAST_AT + state.last_candidate)
        for row, mask in zip(_NO_VOTES_AT, state.no_voters):
            if mask:
                ones += [row + (s - seat) % n for s in _SEAT_BITS[mask]]
    counts = _rotate(state.no_left, seat) + _rotate(state.placements_left, seat)
    return ones + _COUNTS_AT[n], [*(1,) * len(ones), *counts]


@lru_cache(maxsize=1024)
def _round_raw(
    n: int,
    seat: int,
    card: int,
    num_rounds: int,
    round_idx: int,
    starter: int,
    round_scores: tuple[tuple[int, ...], ...],
    revealed: tuple[tuple[int, ...], ...],
) -> np.ndarray:
    """Raw vector of the entries fixed for a whole round (cached, read-only)."""
    idx = [at["my_favourites"] + c for c in FAVOURITE_CARDS[card]]
    idx += range(at["seats"], at["seats"] + n)
    idx += [at["round"] + round_idx, at["starter"] + (starter - seat) % n]
    raw = [1] * len(idx)
    idx.append(at["num_rounds"])
    raw.append(num_rounds)
    for i, (points, cards) in enumerate(zip(round_scores, revealed)):
        idx += range(at["round_scores"] + P * i, at["round_scores"] + P * i + n)
        raw += _rotate(points, seat)
        for r, k in enumerate(_rotate(cards, seat)):
            idx += [at["revealed_cards"] + C * (P * i + r) + c for c in FAVOURITE_CARDS[k]]
            raw += (1,) * 6
    if round_scores:
        idx += range(at["totals"], at["totals"] + n)
        raw += _rotate(tuple(map(sum, zip(*round_scores))), seat)
    vec = np.zeros(OBS_SIZE, dtype=np.float32)
    vec[idx] = raw
    vec.flags.writeable = False
    return vec


def _rotate(values: tuple[int, ...], seat: int) -> tuple[int, ...]:
    """Per-seat values in relative order: ``seat`` first, then clockwise."""
    return values[seat:] + values[:seat]
