"""The PettingZoo AEC adapter shared by all tablegym games.

A game package supplies three pure modules and a thin subclass of :class:`TableGameEnv`:

``rules``
    ``make_config(**options)``, ``NUM_ACTIONS``, ``initial_state(config, rng)``,
    ``legal_actions(state)``, ``apply_action(state, action, rng)`` (raises ValueError on an
    illegal action), ``is_terminal(state)``, ``rewards(before, after, config)`` (per seat) and a
    ``state.to_play`` seat. ``config.num_players`` gives the seats.
``observation``
    ``LAYOUT`` and ``encode(state, seat)`` (the observer's view), ``STATE_LAYOUT`` and
    ``encode_state(state)`` (everything, hidden information included).
``render``
    ``to_text(state, viewer=None)``.

Everything that is the same for every game lives here once: agent names, spaces, the reward
bookkeeping of the AEC API, dead steps, seeding, the action log and exact replay, rendering
modes and the standard wrappers.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers


class TableGameEnv(AECEnv):
    """AEC environment over a pure rules core; subclasses set the class attributes below."""

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "is_parallelizable": False}
    rules: ModuleType
    observation: ModuleType
    rendering: ModuleType

    def __init__(self, render_mode: str | None = None, **options: Any):
        super().__init__()
        allowed = (None, *self.metadata["render_modes"])
        if render_mode not in allowed:
            shown = ", ".join(repr(m) for m in allowed)
            raise ValueError(f"render_mode must be one of {shown}; got {render_mode!r}")
        self.render_mode = render_mode
        self.config = self.rules.make_config(**options)
        n = self.config.num_players
        self.possible_agents = [f"player_{i}" for i in range(n)]
        self.agent_name_mapping = {a: i for i, a in enumerate(self.possible_agents)}
        num_actions = self.rules.NUM_ACTIONS
        layout = self.observation.LAYOUT
        obs_space = spaces.Dict(
            {
                "observation": spaces.Box(layout.low, layout.high, dtype=np.float32),
                "action_mask": spaces.Box(0, 1, (num_actions,), dtype=np.int8),
            }
        )
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(num_actions) for a in self.possible_agents}
        st = self.observation.STATE_LAYOUT
        self.state_space = spaces.Box(st.low, st.high, dtype=np.float32)
        self._rng = np.random.default_rng()
        self._seed: int | None = None
        self.game_state = None
        self.action_log: list[int] = []
        self._mask_cache: tuple[Any, np.ndarray] | None = None

    # -- spaces -----------------------------------------------------------------------------
    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    # -- core API ---------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """Start a new game; with a seed the whole game is fixed by it and the actions."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._seed = seed
        self.game_state = self.rules.initial_state(self.config, self._rng)
        self.action_log = []
        self._mask_cache = None
        self.agents = self.possible_agents[:]
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[self.game_state.to_play]

    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if action is None:
            raise ValueError(f"{agent} must act: None is only for finished agents")
        before = self.game_state
        after = self.rules.apply_action(before, int(action), self._rng)
        self.game_state = after
        self.action_log.append(int(action))
        self._cumulative_rewards[agent] = 0.0
        step_rewards = self.rules.rewards(before, after, self.config)
        for a, r in zip(self.possible_agents, step_rewards):
            self.rewards[a] = float(r)
        self._accumulate_rewards()
        if self.rules.is_terminal(after):
            for a in self.agents:
                self.terminations[a] = True
        else:
            self.agent_selection = self.possible_agents[after.to_play]
        if self.render_mode == "human":
            self.render()

    def legal_actions(self) -> tuple[int, ...]:
        """Legal action ids of the agent to act (empty once the game is over)."""
        if self.rules.is_terminal(self.game_state):
            return ()
        return self.rules.legal_actions(self.game_state)

    def action_mask(self) -> np.ndarray:
        """int8 mask of the legal actions of the agent to act."""
        cached = self._mask_cache
        if cached is not None and cached[0] is self.game_state:
            return cached[1]
        mask = np.zeros(self.rules.NUM_ACTIONS, dtype=np.int8)
        mask[list(self.legal_actions())] = 1
        self._mask_cache = (self.game_state, mask)
        return mask

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        seat = self.agent_name_mapping[agent]
        obs = self.observation.encode(self.game_state, seat)
        acting = agent == self.agent_selection and not self.terminations.get(agent, True)
        mask = self.action_mask().copy() if acting else np.zeros(self.rules.NUM_ACTIONS, np.int8)
        return {"observation": obs, "action_mask": mask}

    def state(self) -> np.ndarray:
        """The whole game as a vector, hidden information included (see ``STATE_LAYOUT``)."""
        return self.observation.encode_state(self.game_state)

    def render(self) -> str | None:
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode; pass render_mode='ansi'.")
            return None
        text = self.rendering.to_text(self.game_state)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass

    # -- replay -----------------------------------------------------------------------------
    @classmethod
    def replay(cls, seed: int, actions: list[int], **options: Any) -> TableGameEnv:
        """A raw env at the position reached from ``reset(seed)`` by playing ``actions``."""
        game = cls(**options)
        game.reset(seed=seed)
        for a in actions:
            game.step(a)
        return game


def wrap(raw: AECEnv) -> AECEnv:
    """PettingZoo's standard wrappers, as its classic games apply them."""
    raw = wrappers.TerminateIllegalWrapper(raw, illegal_reward=-1)
    raw = wrappers.AssertOutOfBoundsWrapper(raw)
    return wrappers.OrderEnforcingWrapper(raw)
