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
bookkeeping of the AEC API, dead steps, seeding, the checks of action ids, the action log and
exact replay, rendering modes and the standard wrappers.

Masks are handed out read-only: ``observe`` returns the same array for the same state without
copying it (states with the same legal actions share one), and a caller that writes into a
mask gets an error instead of corrupting the masks of later calls. Copy a mask before changing
it.
"""

from __future__ import annotations

from functools import lru_cache
from numbers import Integral
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
        self.game_state = None
        self.action_log: list[int] = []
        self._mask_cache: tuple[Any, np.ndarray] | None = None
        self._no_mask = _read_only(np.zeros(num_actions, dtype=np.int8))
        # Whether self.rewards holds a non-zero value: a step with all-zero rewards then has
        # nothing to reset or accumulate.
        self._rewards_nonzero = False

    # -- spaces -----------------------------------------------------------------------------
    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    # -- core API ---------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """Start a new game; with a seed the whole game is fixed by it and the actions."""
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
                raise ValueError(f"reset(seed=...) takes an integer >= 0 or None; got {seed!r}")
            self._rng = np.random.default_rng(seed)
        self.game_state = self.rules.initial_state(self.config, self._rng)
        self.action_log = []
        self._mask_cache = None
        self.agents = self.possible_agents[:]
        self.rewards = {a: 0.0 for a in self.agents}
        self._rewards_nonzero = False
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = self.possible_agents[self.game_state.to_play]

    def step(self, action: int | None) -> None:
        """Play ``action`` (an int action id, numpy's too) for the agent to act."""
        before = self.game_state
        if before is None:
            raise _not_reset("step()")
        agent = self.agent_selection
        if not self.agents:
            raise ValueError("step(): the game is over and every agent has left; call reset()")
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if action is None:
            raise ValueError(f"{agent} must act: None is only for finished agents")
        if type(action) is not int or not 0 <= action < self.rules.NUM_ACTIONS:
            action = self._action_id(action)  # converts other integers, refuses the rest
        after = self.rules.apply_action(before, action, self._rng)
        self.game_state = after
        self.action_log.append(action)
        self._cumulative_rewards[agent] = 0.0
        step_rewards = self.rules.rewards(before, after, self.config)
        # Most steps reward nobody; adding their zeros would change no total.
        if any(step_rewards):
            for a, r in zip(self.possible_agents, step_rewards):
                self.rewards[a] = float(r)
            self._accumulate_rewards()
            self._rewards_nonzero = True
        elif self._rewards_nonzero:
            for a in self.rewards:
                self.rewards[a] = 0.0
            self._rewards_nonzero = False
        if self.rules.is_terminal(after):
            for a in self.agents:
                self.terminations[a] = True
        else:
            self.agent_selection = self.possible_agents[after.to_play]
        if self.render_mode == "human":
            self.render()

    def legal_actions(self) -> tuple[int, ...]:
        """Legal action ids of the agent to act (empty once the game is over)."""
        state = self.game_state
        if state is None:
            raise _not_reset("legal_actions()")
        if self.rules.is_terminal(state):
            return ()
        return self.rules.legal_actions(state)

    def action_mask(self) -> np.ndarray:
        """Read-only int8 mask of the legal actions of the agent to act."""
        cached = self._mask_cache
        if cached is not None and cached[0] is self.game_state:
            return cached[1]
        mask = _mask(self.rules.NUM_ACTIONS, self.legal_actions())
        self._mask_cache = (self.game_state, mask)
        return mask

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """``agent``'s observation vector and its (read-only) action mask."""
        state = self.game_state
        if state is None:
            raise _not_reset("observe()")
        obs = self.observation.encode(state, self.agent_name_mapping[agent])
        acting = agent == self.agent_selection and not self.terminations.get(agent, True)
        return {"observation": obs, "action_mask": self.action_mask() if acting else self._no_mask}

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """The agent to act: its observation, reward so far, end flags and info."""
        if self.game_state is None:
            raise _not_reset("last()")
        agent = self.agent_selection  # AECEnv.last, one call less on the hot path
        return (
            self.observe(agent) if observe else None,
            self._cumulative_rewards[agent],
            self.terminations[agent],
            self.truncations[agent],
            self.infos[agent],
        )

    def state(self) -> np.ndarray:
        """The whole game as a vector, hidden information included (see ``STATE_LAYOUT``)."""
        self._check_reset("state()")
        return self.observation.encode_state(self.game_state)

    def render(self) -> str | None:
        """The position as text (``ansi``), or printed (``human``)."""
        self._check_reset("render()")
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode; pass render_mode='ansi'.")
            return None
        text = self.rendering.to_text(self.game_state)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release."""

    # -- checks -----------------------------------------------------------------------------
    def _check_reset(self, what: str) -> None:
        if self.game_state is None:
            raise _not_reset(what)

    def _action_id(self, action: Any) -> int:
        """``action`` as a plain int id; ValueError naming the allowed ids otherwise."""
        if type(action) is not int:
            # numpy integers are ids too; bool is an Integral, but True is no action id.
            if not isinstance(action, Integral) or isinstance(action, bool):
                raise ValueError(
                    f"an action must be an integer action id; got {action!r} "
                    f"of type {type(action).__name__}"
                )
            action = int(action)
        if not 0 <= action < self.rules.NUM_ACTIONS:
            raise ValueError(
                f"action {action} is out of range: action ids run from 0 to "
                f"{self.rules.NUM_ACTIONS - 1}"
            )
        return action

    # -- replay -----------------------------------------------------------------------------
    @classmethod
    def replay(cls, seed: int, actions: list[int], **options: Any) -> TableGameEnv:
        """A raw env at the position reached from ``reset(seed)`` by playing ``actions``."""
        game = cls(**options)
        game.reset(seed=seed)
        for a in actions:
            game.step(a)
        return game


def _not_reset(what: str) -> RuntimeError:
    return RuntimeError(f"call reset() before {what}: no game has been started")


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


@lru_cache(maxsize=4096)
def _mask(num_actions: int, legal: tuple[int, ...]) -> np.ndarray:
    """The read-only mask of ``legal``: masks repeat, and building one costs more than a step of
    the rules (issue 12); being read-only, one array serves every state and env that has it."""
    mask = np.zeros(num_actions, dtype=np.int8)
    mask[list(legal)] = 1
    return _read_only(mask)


def wrap(raw: AECEnv) -> AECEnv:
    """PettingZoo's standard wrappers, as its classic games apply them."""
    raw = wrappers.TerminateIllegalWrapper(raw, illegal_reward=-1)
    raw = wrappers.AssertOutOfBoundsWrapper(raw)
    return wrappers.OrderEnforcingWrapper(raw)
