"""Up & Down as a PettingZoo AEC environment.

A trick-taking game for 2–4 players where the leader must change the rules before every
trick: UP or DOWN, which suit each player owns, and the trump value. All players then choose a
card at once. Rules: ``shared/rules/updown.md``; in short, with every interpretation we chose,
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
    ``{"observation": float32[501], "action_mask": int8[50]}``, seat-relative (the observer
    first, then clockwise); per-seat fields have 4 rows whatever the player count. All values
    lie in [0, 1]: the layout scales raw values (R is ``num_rounds``, h the hand size; fields
    marked ÷R are divided by R). Read raw values by name with
    ``updown_env.observation.decode(obs)``; ``updown_env.observation`` says what a seat could
    remember that is left out, and why.

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
    <!-- end layout -->

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
"""

from __future__ import annotations

from typing import Any

from tablegym.aec import TableGameEnv, wrap
from updown_env import observation, render, rules


class raw_env(TableGameEnv):
    """Up & Down without wrappers: illegal actions raise ValueError."""

    metadata = {
        "name": "updown_v1",
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
