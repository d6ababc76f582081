"""KdK – Kampf der Könige as a PettingZoo AEC environment (``kdk_v1``).

A shedding and combo game for 2–5 players, levels 8–10 of the house rules "KdK 4.6" with an
invented base game. Rules: ``docs/kdk_rules.md`` (spec v1.1),
whose section numbers the code cites.

Agents
    ``player_0`` … ``player_{n-1}``, seats in clockwise order. ``agent_selection`` is the
    actor of the rules state: the opener, the window member whose turn it is to throw or pass,
    the duty holder, a finisher deciding how to finish, or a player acting between rounds.
    Free actions (announce, abort, top up, take a slot) keep the same agent selected.

Actions, ``Discrete(114)`` for every agent (§8.1)
    =======  ================================================================
    0..12    ``LAY_HAND(f)``: lay figure f (0 traitor, 1..10, 11 king, 12 ambassador)
    13..15   ``LAY_SLOT(s)``: lay the figure in slot s (level 10)
    16       ``PASS``
    17       ``FAIL``: one penalty card, the box is cleared
    18       ``WEITER``: lay two traitors, forward the duty (``one_colour`` only)
    19..27   ``ANNOUNCE_N``, N = 3..11: ``rules.announce_action(N)``, free
    28       ``ABORT`` (level 9+), free
    29       ``TOP_UP``: free; terminal while finishing
    30..32   ``TAKE_SLOT(s)`` (level 10), free
    33       ``SECURE``
    34       ``CLAIM_LATE``
    35       ``DECLARE_SP`` (level 10, between rounds)
    36..74   ``SLOT_SWAP(s, f)`` = ``rules.slot_action(SLOT_SWAP, s, f)`` = 36 + 13·s + f
    75..113  ``SLOT_PICK(s, f)`` = ``rules.slot_action(SLOT_PICK, s, f)`` = 75 + 13·s + f
    =======  ================================================================
    ``action_mask`` is exact (``kdk_env.rules.legal_actions``); agents not to act get zeros.
    ``raw_env`` raises ValueError on an unmasked action; ``env()`` ends the game with −1 for
    the offender (PettingZoo's ``TerminateIllegalWrapper``).

Observation
    ``{"observation": float32[677], "action_mask": int8[114]}``, seat-relative (the observer
    first), every value in [0, 1]. Read a vector's raw values by name with
    ``kdk_env.observation.decode(obs)`` (= ``LAYOUT.decode(obs, raw=True, **params_of(obs))``).
    Hidden: the other hands, every draw-pile order and the other draw-pile compositions.
    Public facts a player with perfect recall keeps are fields of their own: the last
    recycled played pile (levels 8–9), slot figures taken into a hand, and figures an
    ``auto_pass`` skip showed a player not to hold (notes [a]–[d] in
    ``kdk_env/observation.py``).

    The index table is in ``kdk_env/observation.py`` (generated from ``LAYOUT``).

Rewards (option ``reward``)
    ``"score"`` (default): at each round end every agent receives its round score
    (combo points − place, from −5 to +10); the return is the game total.
    ``"win"``: 0 until the game ends, then +1 to each winner (highest total; ties broken by
    more 1st places, more combo points, a better last place; co-winners all get +1) and −1
    to every other seat.

Options
    ``num_players`` 2..5 (4), ``level`` 8 | 9 | 10 (10), ``deck_mode`` ``"one_colour"`` |
    ``"own_decks"``, ``num_rounds`` 1..100 (6), ``max_round_steps`` ≥ 200 (2000),
    ``first_opener`` None | seat, ``auto_pass`` bool (False; faster, but who is asked then
    reveals hand information), ``reward`` ``"score"`` | ``"win"``, ``render_mode`` None |
    ``"ansi"`` | ``"human"``.

State
    ``state()`` returns the whole game (hands, draw-pile orders included) as ``state_space``;
    ``env.game_state`` is the immutable rules state. A game lasts at most
    ``num_rounds · (max_round_steps + 8n)`` steps.

Version history
    v0: first release (spec v1.1).
    v1: options ``reward`` (was ``reward_mode``); ``"win"`` gives −1 (was 0) to non-winners;
    observation on the shared layout (677 values, every field with its raw range): new
    fields ``recycled``, ``taken``, ``lacks`` (public facts of perfect recall) and
    ``auto_pass``, ``num_rounds`` now R / 100; ``sample_state`` keeps those facts.
"""

from __future__ import annotations

from typing import Any

from kdk_env import observation, render, rules
from tablegym.aec import TableGameEnv, wrap


class raw_env(TableGameEnv):
    """KdK without wrappers: illegal actions raise ValueError."""

    metadata = {
        "name": "kdk_v1",
        "render_modes": ["ansi", "human"],
        "is_parallelizable": False,
        "render_fps": 1,
    }
    rules = rules
    observation = observation
    rendering = render


def env(**kwargs: Any) -> Any:
    """KdK with PettingZoo's standard wrappers."""
    return wrap(raw_env(**kwargs))
