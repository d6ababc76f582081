"""States met in random Up & Down games, shared by the Up & Down test modules."""

from __future__ import annotations

import random
from collections.abc import Iterator

import numpy as np

from updown_env import rules as R


def positions(n: int, games: int = 6, rounds: int = 1, seed: int = 1) -> Iterator[R.State]:
    """Every state of ``games`` random games: every phase and, with rounds > 1, a new deal."""
    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    cfg = R.make_config(num_players=n, rounds=rounds)
    for _ in range(games):
        state = R.initial_state(cfg, rng)
        while True:
            yield state
            if R.is_terminal(state):
                break
            state = R.apply_action(state, pick.choice(R.legal_actions(state)), rng)
