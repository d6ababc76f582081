"""King Up! as a PettingZoo AEC environment.

Bluff and voting for 3–6 players: place candidates in a six-floor castle, push them up, and
vote on whoever reaches the throne. Rules and our interpretation choices:
``docs/kingup_rules.md``.

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

    The index table is in ``kingup_env/observation.py`` (generated from ``LAYOUT``).

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
