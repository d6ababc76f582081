"""Up & Down as a PettingZoo AEC environment.

A trick-taking game for 2–4 players where the leader must change the rules before every
trick: UP or DOWN, which suit each player owns, and the trump value. All players then choose a
card at once. Rules: ``shared/rules/updown.md``.

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
    ``action_mask`` is exact: the leader has exactly five rule changes (rotating to the suit
    that already faces them is not one); choosing a card allows exactly the cards in hand.
    Agents not to act get all zeros.

Simultaneous choice
    After the rule change every player, the leader first and then clockwise, chooses a card.
    A choice stays hidden from every other observation until all have chosen; then the trick
    is revealed (``last_trick``) and resolved.

Observation
    ``{"observation": float32[500], "action_mask": int8[50]}``, seat-relative (the observer
    first, then clockwise); per-seat fields have 4 entries whatever the player count. Read a
    vector by name with ``updown_env.observation.decode(obs)``. All values lie in [0, 1].

    =========  ================  =======================================================
    index      field             content
    =========  ================  =======================================================
    0–43       ``hand``          the observer's cards
    44–87      ``my_choice``     the card the observer has chosen in this trick
    88–263     ``played``        per seat, cards revealed in this round's finished tricks
    264–439    ``last_trick``    per seat, its card in the last resolved trick
    440–445    ``last_result``   winner seat 0..3, pot, lost
    446–447    ``side``          UP, DOWN
    448–463    ``suits``         per seat, its own suit
    464–474    ``trump``         trump value 2..12
    475–478    ``leader``        the trick leader
    479–482    ``chosen``        seats that have chosen a card in this trick
    483–485    ``phase``         change the rules, choose cards, game over
    486        ``pot``           tricks in the pot / 15
    487–490    ``tricks``        tricks won / tricks in the game
    491–494    ``hand_sizes``    cards in hand / 15
    495        ``tricks_left``   tricks of this round not yet resolved / 15
    496        ``rounds_left``   rounds after this one / rounds in the game
    497–499    ``num_players``   2, 3, 4 players
    =========  ================  =======================================================

Rewards (option ``reward``)
    ``"win"`` (default): 0 until the game ends, then +1 to each player with the most tricks
    (a tie is a shared win), -1 to every other.
    ``"tricks"``: +1 for every trick a player takes, when the trick is resolved (tricks won
    from the pot included; lost tricks give nothing).

Options
    ``num_players`` 2..4 (default 4), ``num_rounds`` an integer >= 1 (default 1; the
    rulebook suggests one round per player), ``reward`` as above, ``render_mode`` None | ``"ansi"`` |
    ``"human"``.

State
    ``state()`` returns the whole game (all hands, pending choices, set-aside cards) as
    ``state_space``; ``env.game_state`` is the immutable rules state.

Version history
    v0: first release.
"""

from __future__ import annotations

from typing import Any

from tablegym.aec import TableGameEnv, wrap
from updown_env import observation, render, rules


class raw_env(TableGameEnv):
    """Up & Down without wrappers: illegal actions raise ValueError."""

    metadata = {
        "name": "updown_v0",
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
