"""AEC wrappers that give tablegym's observations the form some RL libraries require.

A tablegym env observes ``{"observation": float32 Box, "action_mask": int8}``, the form of
PettingZoo's classic games, which SB3's masking tutorial and Tianshou read as they are. AgileRL,
SuperSuit's observation wrappers and most single-file training scripts want a plain array
observation with the mask beside it in ``info`` instead: :func:`mask_in_info` gives that form.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.wrappers import BaseWrapper

from tablegym.aec import TableGameEnv

__all__ = ["MaskInInfoWrapper", "check_tablegym_aec", "mask_in_info"]

_ALLOWED = "a tablegym AEC env: kingup_env.env(), updown_env.env(), kdk_env.env() or raw_env()"


def check_tablegym_aec(env: Any, wrapper: str) -> None:
    """Raise TypeError/ValueError unless ``env`` is a tablegym AEC env with dict observations."""
    if isinstance(env, ParallelEnv):
        raise TypeError(
            f"{wrapper} wraps {_ALLOWED}; got a ParallelEnv ({env}): wrap the AEC env, "
            "then convert it with turn_based_aec_to_parallel"
        )
    if not isinstance(env, AECEnv):
        raise TypeError(f"{wrapper} wraps {_ALLOWED}; got {type(env).__name__}")
    if not isinstance(env.unwrapped, TableGameEnv):
        raise ValueError(f"{wrapper} wraps {_ALLOWED}; got {env.unwrapped.metadata.get('name')}")
    space = env.observation_space(env.possible_agents[0])
    if not (isinstance(space, spaces.Dict) and set(space) == {"observation", "action_mask"}):
        raise ValueError(
            f"{wrapper} needs the {{'observation', 'action_mask'}} dict observation of {_ALLOWED}; "
            f"got {space} (already wrapped?)"
        )


class MaskInInfoWrapper(BaseWrapper):
    """Plain float32 observations; ``infos[agent]["action_mask"]`` carries each agent's mask."""

    def __init__(self, env: AECEnv):
        check_tablegym_aec(env, "mask_in_info")
        super().__init__(env)
        num_actions = env.observation_space(env.possible_agents[0])["action_mask"].shape[0]
        # Read-only like the masks TableGameEnv hands out, so one array serves every agent.
        self._no_mask = np.zeros(num_actions, dtype=np.int8)
        self._no_mask.flags.writeable = False

    def observation_space(self, agent: str) -> spaces.Box:
        """The float32 Box of the observation vector (the mask is in ``infos``)."""
        return self.env.observation_space(agent)["observation"]

    def observe(self, agent: str) -> np.ndarray:
        """The agent's observation vector."""
        return self.env.observe(agent)["observation"]

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """Reset the wrapped env and put the first mask into ``infos``."""
        self.env.reset(seed=seed, options=options)
        self._update_infos()

    def step(self, action: int | None) -> None:
        """Step the wrapped env and put the new masks into ``infos``."""
        self.env.step(action)
        self._update_infos()

    def _update_infos(self) -> None:
        # Every live agent gets a mask (all zeros when not to act, as in the dict observation)
        # because clients such as AgileRL stack the masks of all agents and refuse missing ones.
        acting = self.env.agent_selection
        can_act = acting in self.env.terminations and not (
            self.env.terminations[acting] or self.env.truncations[acting]
        )
        mask = self.env.unwrapped.action_mask() if can_act else self._no_mask
        self.infos = {
            agent: {**info, "action_mask": mask if agent == acting else self._no_mask}
            for agent, info in self.env.infos.items()
        }


def mask_in_info(env: AECEnv) -> MaskInInfoWrapper:
    """Wrap a tablegym AEC env: Box observations, the action mask in ``infos[agent]``."""
    return MaskInInfoWrapper(env)
