"""A uniformly random agent: any legal action with equal chance, from its own generator."""

from __future__ import annotations

import numpy as np

from agents.base import Agent, GameView, legal_ids


class RandomAgent(Agent):
    """Picks uniformly among the actions its ``action_mask`` allows; works with every game."""

    spec = "random"

    def __init__(self, seed: int | None = None):
        self.rng = np.random.default_rng(seed)

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, view: GameView | None = None
    ) -> int:
        """A legal action id; ValueError if the mask allows none."""
        legal = legal_ids(action_mask)
        return int(legal[self.rng.integers(legal.size)])
