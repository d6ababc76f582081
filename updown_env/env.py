"""Up & Down as a PettingZoo AEC environment.

A trick-taking game for 2–4 players where the leader must change the rules before every
trick: UP or DOWN, which suit each player owns, and the trump value. All players then choose a
card at once. Rules, with every interpretation we chose:
``docs/updown_rules.md``.

Agents
    ``player_0`` … ``player_{n-1}``, seats in clockwise order. With 4 players every seat faces
    one edge of the U&D card, with 3 one edge faces nobody, with 2 the players sit opposite.
    The first leader of each round is the player whose own suit is clubs; the lead then
    passes clockwise after every trick.

Actions, ``Discrete(50)`` for every agent
    =======  ==================================================================
    0        FLIP the U&D card (UP <-> DOWN)
    1..4     ROTATE the card so that suit ``id - 1`` (clubs, spades, hearts, diamonds)
             faces the leader; every other player's suit turns with it
    5        ROLL the dice: a new trump value, never the old one
    6..49    play card ``id - 6`` = ``suit * 11 + (value - 2)``, values 2..12
             (11 jack, 12 queen)
    =======  ==================================================================
    ``rules.play_action(card)`` / ``rules.played_card(action)`` and
    ``rules.rotate_action(suit)`` / ``rules.rotated_suit(action)`` make and read these ids.
    ``action_mask`` is exact: the leader has exactly five rule changes (rotating to the suit
    that already faces them is not one); choosing a card allows exactly the cards in hand.
    Agents not to act get all zeros.

Simultaneous choice
    After the rule change every player, the leader first and then clockwise, chooses a card.
    A choice stays hidden from every other observation until all have chosen; then the trick
    is revealed (``last_trick``) and resolved.

Observation
    ``{"observation": float32[529], "action_mask": int8[50]}``, seat-relative (the observer
    first, then clockwise); per-seat fields have 4 rows whatever the player count. All values
    lie in [0, 1]: the layout scales raw values (R is ``num_rounds``, h the hand size; fields
    marked ÷R are divided by R). Read raw values by name with
    ``updown_env.observation.decode(obs)``; ``updown_env.observation`` says what a seat could
    remember that is left out, and why.

    The index table is in ``updown_env/observation.py`` (generated from ``LAYOUT``).

Rewards (option ``reward``)
    ``"win"`` (default): 0 until the game ends, then +1 to each winner (the most tricks over
    all rounds; co-winners of a tie all get +1) and -1 to every other seat, as in every
    tablegym game.
    ``"tricks"``: +1 for every trick a player takes, when the trick is resolved (tricks won
    from the pot included; lost tricks give nothing).

Options
    ``num_players`` 2..4 (default 4), ``num_rounds`` an integer >= 1 (default 1; the
    rulebook suggests one round per player), ``reward`` as above, ``render_mode`` None |
    ``"ansi"`` | ``"human"``.

State
    ``state()`` returns the whole game (all hands, pending choices, set-aside cards) as
    ``state_space``; ``env.game_state`` is the immutable rules state.

Version history
    v0: first release.
    v1: option ``rounds`` renamed ``num_rounds``; observation field ``round`` added (501
    values: the options can be read back from a vector) and every field scaled by the layout
    from raw values (same scales as v0 up to float32 rounding).
    v2: observation fields ``changes`` and ``kinds`` added (529 values): each seat's rule
    changes as leader and its revealed cards by kind, counted over the game, so a policy
    without memory can tell how each opponent plays. The first 501 values are v1's.
"""

from __future__ import annotations

from typing import Any

from tablegym.aec import TableGameEnv, wrap
from updown_env import observation, render, rules


class raw_env(TableGameEnv):
    """Up & Down without wrappers: illegal actions raise ValueError."""

    metadata = {
        "name": "updown_v2",
        "render_modes": ["ansi", "human"],
        "is_parallelizable": False,
        "render_fps": 1,
    }
    rules = rules
    observation = observation
    rendering = render


def env(**kwargs: Any) -> Any:
    """Up & Down with PettingZoo's standard wrappers."""
    return wrap(raw_env(**kwargs))
