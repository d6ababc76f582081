"""The agent interface (:mod:`tablegym.agent`, re-exported here) and :class:`PolicyAgent`, the
base of every agent that acts from a network's logits."""

from __future__ import annotations

import numpy as np

from tablegym.agent import Agent, GameView, batch_of, legal_counts, legal_ids

__all__ = ["Agent", "GameView", "PolicyAgent", "batch_of", "legal_counts", "legal_ids"]


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
