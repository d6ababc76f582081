"""The one agent interface shared by random, heuristic, search and trained agents.

An agent acts on what its seat observes, ``(observation, action_mask)``. Search agents also
receive a :class:`GameView`, which gives the rules module and the true state: they must use it
only through ``rules.sample_state(state, seat, rng)``, which replaces everything the seat
cannot see by a sample consistent with what it has seen.

It lives in ``tablegym`` so that each game's own players (``<game>_env/heuristic.py``) can be
agents without a game importing ``agents``; ``agents.base`` re-exports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np


@dataclass(frozen=True)
class GameView:
    """What a search agent may consult: the rules, the options, the state, its own seat."""

    rules: ModuleType
    config: Any
    state: Any
    seat: int


def legal_ids(action_mask: np.ndarray) -> np.ndarray:
    """The legal action ids of a mask; ValueError if there are none (the agent is not to act)."""
    legal = np.flatnonzero(action_mask)
    if legal.size == 0:
        raise ValueError("the action mask allows no action: this agent is not to act")
    return legal


def batch_of(
    obs: np.ndarray, mask: np.ndarray, obs_size: int, num_actions: int
) -> tuple[np.ndarray, np.ndarray]:
    """Rows of observations and masks for a batched agent: contiguous float32 ``(k, obs_size)``
    and bool ``(k, num_actions)``; ValueError naming a wrong shape."""
    obs, mask = np.asarray(obs), np.asarray(mask)
    if obs.ndim != 2 or obs.shape[1] != obs_size:
        raise ValueError(f"obs must have shape (k, {obs_size}); got {obs.shape}")
    if mask.shape != (len(obs), num_actions):
        raise ValueError(
            f"mask must have shape ({len(obs)}, {num_actions}) to match obs; got {mask.shape}"
        )
    return np.ascontiguousarray(obs, dtype=np.float32), np.ascontiguousarray(mask, dtype=bool)


def legal_counts(mask: np.ndarray) -> np.ndarray:
    """Legal actions per row of ``mask``; ValueError naming the first row that has none."""
    counts = np.count_nonzero(mask, axis=1)
    if counts.size and not counts.all():
        raise ValueError(f"mask row {int(np.argmin(counts))} allows no action: nobody is to act")
    return counts


class Agent:
    """Base class: override :meth:`act`; ``spec`` is the string that builds the agent."""

    spec = "agent"

    def reset(self, seat: int) -> None:
        """Called when a new game starts with this agent at ``seat``."""

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, view: GameView | None = None
    ) -> int:
        """A legal action id for the seat that sees ``observation``."""
        raise NotImplementedError

    def __call__(self, obs: dict[str, np.ndarray], view: GameView | None = None) -> int:
        """Act on a PettingZoo observation dict ``{"observation", "action_mask"}``."""
        return self.act(obs["observation"], obs["action_mask"], view)
