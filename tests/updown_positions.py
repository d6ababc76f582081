"""Shared by the Up & Down test modules: random positions, hand-built cards, card bookkeeping."""

from __future__ import annotations

import random
from collections.abc import Iterator

import numpy as np

from updown_env import rules as R
from updown_env.rules import NO_CARD

ALL_CARDS = (1 << R.NUM_CARDS) - 1
C, S, H, D = range(R.NUM_SUITS)  # clubs, spades, hearts, diamonds


def positions(n: int, games: int = 6, num_rounds: int = 1, seed: int = 1) -> Iterator[R.State]:
    """Every state of ``games`` random games: every phase and, with num_rounds > 1, a new deal."""
    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    cfg = R.make_config(num_players=n, num_rounds=num_rounds)
    for _ in range(games):
        state = R.initial_state(cfg, rng)
        while True:
            yield state
            if R.is_terminal(state):
                break
            state = R.apply_action(state, pick.choice(R.legal_actions(state)), rng)


def card(suit: int, value: int) -> int:
    """Card id of ``value`` of ``suit`` (C, S, H, D)."""
    return R.card_id(suit, value)


def mask(*cards: int) -> int:
    """Bitmask of card ids."""
    return sum(1 << c for c in cards)


def is_whole(state: R.State) -> bool:
    """Every card in exactly one place ("Invariants"): hand, finished trick or pot, current
    trick, set aside. The masks are disjoint and cover the deck."""
    places = [*state.hands, *state.played, state.aside]
    places += [1 << c for c in state.pending if c != NO_CARD]
    union = 0
    for m in places:
        union |= m
    return sum(m.bit_count() for m in places) == R.NUM_CARDS and union == ALL_CARDS


def reshuffle_hidden(state: R.State, seat: int, rng: random.Random) -> R.State:
    """The same position with every card ``seat`` cannot see dealt anew among the places it
    cannot see (the other hands, the other pending choices, the set-aside cards) by a simple
    method of its own (a Python shuffle), independent of ``rules.sample_state``."""
    others = [s for s in range(state.num_players) if s != seat]
    pool = [c for s in others for c in R.cards_of(state.hands[s])]
    pool += [state.pending[s] for s in others if state.pending[s] != NO_CARD]
    pool += list(R.cards_of(state.aside))
    rng.shuffle(pool)
    hands, pending = list(state.hands), list(state.pending)
    for s in others:
        if pending[s] != NO_CARD:
            pending[s], pool = pool[0], pool[1:]
        k = state.hands[s].bit_count()
        hands[s], pool = mask(*pool[:k]), pool[k:]
    return state._replace(hands=tuple(hands), pending=tuple(pending), aside=mask(*pool))
