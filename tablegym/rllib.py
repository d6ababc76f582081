"""The tablegym games as Ray RLlib ``MultiAgentEnv``\\ s (new API stack).

    from ray.rllib.algorithms.ppo import PPOConfig
    from tablegym.rllib import ENVS, action_masking_spec

    config = PPOConfig().environment(ENVS["kingup"], env_config={"num_players": 4}) ...

Agents
    Every seat is an agent, ``player_0`` … ``player_{n-1}``, as in the AEC envs. The game is
    turn-based, so (as in RLlib's own turn-based examples) ``reset`` and ``step`` return an
    observation only for the seat to act next; at the end of the game every seat that is still
    in it gets a last observation and ``terminateds["__all__"]`` is True.

Observations
    ``{"observations": float32[OBS_SIZE], "action_mask": float32[NUM_ACTIONS]}``: the keys that
    RLlib's ``ActionMaskingTorchRLModule`` reads (PettingZoo's classic convention is
    ``"observation"``). The vector is the game's ``observation.encode(state, seat)``: what that
    seat may see, nothing more. The mask is float so the module can take its log.

Rewards
    Every seat's reward from ``rules.rewards`` at every step; RLlib adds up the rewards of the
    seats not acting until their next observation.

Illegal actions
    RLlib's environment pre-check steps one unmasked random action. As PettingZoo's
    ``TerminateIllegalWrapper`` (which ``env()`` applies) does, an illegal action ends the game
    with reward -1 for its seat and 0 for the others, and sets ``infos[seat]["illegal_action"]``;
    the action is never replaced by a legal one. With the masking module it never happens in
    training: ``training/train_rllib.py`` counts such moves in its metrics.

Options and seeding
    ``env_config`` holds the game's options (``num_players``, ``reward``, ...) and optionally
    ``seed``. ``reset(seed=s)`` fixes the whole game by ``s`` and the actions; without a seed a
    reset continues the env's generator, which is made from ``env_config["seed"]`` plus RLlib's
    worker and vector index (so env runners deal different games), or from fresh entropy.
    RLlib's pre-check resets with ``seed=42`` once: set ``config.debugging(seed=...)`` (as
    ``train_rllib.py`` does) so that RLlib reseeds each env runner after it; otherwise every
    runner's env goes on from that same generator state and deals the same first game.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from ray.rllib.env.multi_agent_env import MultiAgentEnv

from tablegym.games import GAMES, check_game, observation_of, rules_of, spec_of

ILLEGAL_REWARD = -1.0  # what PettingZoo's TerminateIllegalWrapper gives in env()


class TableMultiAgentEnv(MultiAgentEnv):
    """One tablegym game as a turn-based RLlib MultiAgentEnv; subclasses set ``game``."""

    game: str = ""

    def __init__(self, config: Mapping[str, Any] | None = None):
        super().__init__()
        options = dict(config or {})
        game = options.pop("game", self.game)
        self.game = check_game(game)
        seed = options.pop("seed", None)
        self.rules = rules_of(game)
        self.encoder = observation_of(game)
        self.config = self.rules.make_config(**options)
        n = self.config.num_players
        self.agents = self.possible_agents = [f"player_{i}" for i in range(n)]
        layout = self.encoder.LAYOUT
        num_actions = self.rules.NUM_ACTIONS
        obs_space = gym.spaces.Dict(
            {
                "observations": gym.spaces.Box(layout.low, layout.high, dtype=np.float32),
                "action_mask": gym.spaces.Box(0.0, 1.0, (num_actions,), dtype=np.float32),
            }
        )
        self.observation_spaces = {a: obs_space for a in self.agents}
        self.action_spaces = {a: gym.spaces.Discrete(num_actions) for a in self.agents}
        # RLlib's EnvContext tells which env runner and which of its envs this is.
        worker = int(getattr(config, "worker_index", 0) or 0)
        vector = int(getattr(config, "vector_index", 0) or 0)
        entropy = None if seed is None else (int(seed), worker, vector)
        self._rng = np.random.default_rng(entropy)
        self.game_state = None
        self.illegal_moves = 0

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, dict]]:
        """A new game; only the seat to act is observed."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.game_state = self.rules.initial_state(self.config, self._rng)
        self.agents = self.possible_agents[:]
        actor = self.possible_agents[self.game_state.to_play]
        return {actor: self._observe(self.game_state.to_play)}, {}

    def step(self, action_dict: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """Apply the acting seat's action; the next seat to act is observed."""
        seat = self.game_state.to_play
        actor = self.possible_agents[seat]
        if set(action_dict) != {actor}:
            raise ValueError(f"{actor} is to act; got actions for {sorted(action_dict)}")
        action = int(action_dict[actor])
        if action not in self.rules.legal_actions(self.game_state):
            return self._illegal(seat, action)
        before = self.game_state
        self.game_state = self.rules.apply_action(before, action, self._rng)
        rewards = dict(
            zip(
                self.possible_agents,
                map(float, self.rules.rewards(before, self.game_state, self.config)),
            )
        )
        if self.rules.is_terminal(self.game_state):
            return self._finish(rewards, {})
        nxt = self.game_state.to_play
        obs = {self.possible_agents[nxt]: self._observe(nxt)}
        return obs, rewards, {"__all__": False}, {"__all__": False}, {}

    def _illegal(self, seat: int, action: int) -> tuple[dict, dict, dict, dict, dict]:
        """End the game as TerminateIllegalWrapper does: -1 to the offender, 0 to the rest."""
        self.illegal_moves += 1
        rewards = {a: 0.0 for a in self.possible_agents}
        actor = self.possible_agents[seat]
        rewards[actor] = ILLEGAL_REWARD
        return self._finish(rewards, {actor: {"illegal_action": action}})

    def _finish(self, rewards: dict, infos: dict) -> tuple[dict, dict, dict, dict, dict]:
        obs = {a: self._observe(i) for i, a in enumerate(self.possible_agents)}
        done = {a: True for a in self.possible_agents}
        return obs, rewards, {**done, "__all__": True}, {"__all__": False}, infos

    def _observe(self, seat: int) -> dict[str, np.ndarray]:
        mask = np.zeros(self.rules.NUM_ACTIONS, dtype=np.float32)
        if not self.rules.is_terminal(self.game_state) and seat == self.game_state.to_play:
            mask[list(self.rules.legal_actions(self.game_state))] = 1.0
        return {"observations": self.encoder.encode(self.game_state, seat), "action_mask": mask}


def _env_class(game: str) -> type[TableMultiAgentEnv]:
    """``game``'s own subclass, named after its title (``King Up!``: ``KingUpMultiAgentEnv``).

    Each is also an attribute of this module, so that Ray pickles it by reference.
    """
    spec = spec_of(game)
    stem = "".join(w[0].upper() + w[1:] for w in re.findall(r"\w+", spec.title.split(" – ")[0]))
    sizes = f"{min(spec.player_counts)}-{max(spec.player_counts)}"
    doc = f"{spec.title} ({sizes} players)."
    namespace = {"game": game, "__doc__": doc, "__module__": __name__}
    return type(f"{stem}MultiAgentEnv", (TableMultiAgentEnv,), namespace)


# One env class per game, for ``PPOConfig().environment(ENVS[game], env_config=options)``.
ENVS: dict[str, type[TableMultiAgentEnv]] = {game: _env_class(game) for game in GAMES}
globals().update({cls.__name__: cls for cls in ENVS.values()})


def action_masking_spec(
    game: str, options: Mapping[str, Any], hidden: tuple[int, ...] = (256, 256)
) -> Any:
    """An RLModuleSpec of RLlib's ``ActionMaskingTorchRLModule`` for ``game`` with ``options``."""
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
        ActionMaskingTorchRLModule,
    )

    env = ENVS[check_game(game)](dict(options))
    agent = env.possible_agents[0]
    return RLModuleSpec(
        module_class=ActionMaskingTorchRLModule,
        observation_space=env.observation_spaces[agent],
        action_space=env.action_spaces[agent],
        model_config=DefaultModelConfig(fcnet_hiddens=list(hidden), vf_share_layers=False),
    )
