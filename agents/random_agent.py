"""A uniformly random agent: any legal action with equal chance, from its own generator."""

from __future__ import annotations

import numpy as np


class RandomAgent:
    """Picks uniformly among the actions its ``action_mask`` allows; works with every game."""

    name = "random"

    def __init__(self, seed: int | None = None):
        self.rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """A legal action id; ValueError if the mask allows none."""
        legal = np.flatnonzero(action_mask)
        if legal.size == 0:
            raise ValueError("the action mask allows no action: this agent is not to act")
        return int(legal[self.rng.integers(legal.size)])

    def __call__(self, obs: dict[str, np.ndarray]) -> int:
        """Act on a PettingZoo observation dict ``{"observation", "action_mask"}``."""
        return self.act(obs["observation"], obs["action_mask"])
