"""King Up! as a PettingZoo AEC environment.

Bluff and voting for 3–6 players: place candidates in a six-floor castle, push them up, and
vote on whoever reaches the throne. Rules and our interpretation choices:
``docs/kingup_rules.md`` (from ``shared/rules/kingup.md``).

Agents
    ``player_0`` … ``player_{n-1}``, seats in clockwise order. Seat 0 starts round 1; each
    later round is started by the player to the left of the last crown holder. ``reset(seed)``
    does not rotate seats: rotate them in your evaluation (``training/evaluate.py`` does).

Actions, ``Discrete(67)`` for every agent
    =======  ==================================================================
    0..51    place candidate ``c`` on floor ``f`` (1..4): ``rules.place_action(c, f)``
    52..64   move candidate ``c`` up one floor: ``rules.climb_action(c)``
    65       vote YES
    66       vote NO (only while holding a NO card)
    =======  ==================================================================
    ``rules.place_of`` and ``rules.climb_of`` read an id back. ``action_mask`` is exact:
    floors hold at most 4, only unplaced candidates are placed, a climb needs room on the floor
    above, NO needs a NO card. Agents not to act get all zeros.

Simultaneous votes
    Every player votes in turn, from the crown holder clockwise. A vote stays hidden from
    every observation until all have voted; then all votes are revealed (``no_votes``).

Observation
    ``{"observation": float32[529], "action_mask": int8[67]}``, seat-relative (the observer
    first), every value in [0, 1]. Read it by name with ``LAYOUT.decode(obs, raw=True)``
    (raw counts and flags); ``kingup_env/observation.py`` explains the fields.

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

Rewards (option ``reward``)
    ``"win"`` (default): 0 until the game ends, then +1 to each winner (co-winners of a
    shared win all get +1) and -1 to every other seat.
    ``"score"``: at each round end, that round's points / 33.
    ``"relative"``: at each round end, (own points - mean of the others' points) / 33.

Options
    ``num_players`` 3..6 (default 4), ``num_rounds`` 1 or 3 (default 3), ``reward`` as above,
    ``render_mode`` None | ``"ansi"`` | ``"human"``. Earlier names (``rounds``) are refused
    with the new name.

State
    ``state()`` returns the whole game (favourites, pending votes, deck order included) as
    ``state_space`` (``observation.STATE_LAYOUT``); ``env.game_state`` is the immutable rules
    state.

Version history
    v0: first release.
    v1: observations by name with raw ranges (``LAYOUT.decode(obs, raw=True)``); new field
    ``revealed_cards`` (the favourite cards shown at the end of each finished round);
    ``three_rounds`` became ``num_rounds``; option ``rounds`` renamed ``num_rounds``.
"""

from __future__ import annotations

from typing import Any

from kingup_env import observation, render, rules
from tablegym.aec import TableGameEnv, wrap


class raw_env(TableGameEnv):
    """King Up! without wrappers: illegal actions raise ValueError."""

    metadata = {
        "name": "kingup_v1",
        "render_modes": ["ansi", "human"],
        "is_parallelizable": False,
        "render_fps": 1,
    }
    rules = rules
    observation = observation
    rendering = render


def env(**kwargs: Any) -> Any:
    """King Up! with PettingZoo's standard wrappers."""
    return wrap(raw_env(**kwargs))
