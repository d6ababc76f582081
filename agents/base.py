"""The one agent interface shared by random, heuristic, search and trained agents.

An agent acts on what its seat observes, ``(observation, action_mask)``. Search agents also
receive a :class:`GameView`, which gives the rules module and the true state: they must use it
only through ``rules.sample_state(state, seat, rng)``, which replaces everything the seat
cannot see by a sample consistent with what it has seen.
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


class PolicyAgent(Agent):
    """An agent that acts from a network's action logits: the most likely legal action
    (``deterministic``), or a sample from the distribution restricted to the mask.
    Subclasses give :meth:`logits`."""

    def __init__(self, spec: str, deterministic: bool = True, seed: int = 0):
        self.spec = spec
        self.deterministic = deterministic
        self.rng = np.random.default_rng(seed)

    def logits(self, observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """Action logits for one observation."""
        raise NotImplementedError

    def probabilities(self, observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """The policy's distribution over actions, restricted to the mask."""
        logits = np.asarray(self.logits(observation, action_mask), dtype=np.float64).copy()
        logits[np.asarray(action_mask) == 0] = -np.inf
        logits -= logits.max()
        probs = np.exp(logits)
        return probs / probs.sum()

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, view: GameView | None = None
    ) -> int:
        """A legal action id chosen by the policy under the mask."""
        legal_ids(action_mask)  # ValueError if this agent is not to act
        probs = self.probabilities(observation, action_mask)
        if self.deterministic:
            return int(np.argmax(probs))
        return int(self.rng.choice(probs.size, p=probs))

    def batch_logits(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """Action logits for rows of observations; subclasses whose network takes a batch
        override this one logits() call per row."""
        return np.stack([self.logits(o, m) for o, m in zip(observations, action_masks)])

    def act_batch(
        self,
        observations: np.ndarray,
        action_masks: np.ndarray,
        rng: np.random.Generator | None = None,
    ) -> np.ndarray:
        """:meth:`act` for every row (a ``BatchPolicy``): the most likely legal action, or a
        sample under the mask drawn with ``rng`` (default: the agent's own)."""
        action_masks = np.asarray(action_masks, dtype=bool)
        legal_counts(action_masks)  # ValueError naming a row where nobody is to act
        logits = np.asarray(self.batch_logits(observations, action_masks), dtype=np.float64)
        logits = np.where(action_masks, logits, -np.inf)
        if not self.deterministic:
            # Gumbel-max: argmax of logits plus Gumbel noise samples the softmax.
            logits = logits + (self.rng if rng is None else rng).gumbel(size=logits.shape)
        return logits.argmax(axis=1)
