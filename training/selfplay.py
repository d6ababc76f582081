"""A Gymnasium single-agent view of a tablegym AEC game for self-play training.

One seat learns; it is drawn anew every episode, so the policy sees every position at the
table. The other seats are played by an opponent pool: frozen snapshots of the learner (saved
by the trainer every K steps), the game's heuristic agent and the random agent, drawn per seat
and episode with the probabilities of ``mix``. The learner's reward for one of its steps is
the sum of the game's rewards to its seat from that action until its next turn (or the end),
so rewards earned while others act are not lost.

Action masks reach sb3-contrib's MaskablePPO through its standard interface, the
``action_masks()`` method. An action outside the mask is never replaced by a legal one: it
ends the episode with reward -1 and ``info["illegal_action"]`` set, as PettingZoo's
``TerminateIllegalWrapper`` does, and ``illegal_actions`` counts it (training asserts zero).
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from agents.base import Agent, GameView
from agents.random_agent import RandomAgent
from tablegym.games import env_class
from training.ppo_agent import load_ppo_agent
from training.registry import make_agent

OPPONENT_KINDS = ("snapshot", "heuristic", "random")


def parse_mix(text: str) -> dict[str, float]:
    """``"snapshot=0.5,heuristic=0.3,random=0.2"`` -> normalised probabilities."""
    mix: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        if name not in OPPONENT_KINDS:
            raise ValueError(
                f"unknown opponent kind {name!r}; allowed: {', '.join(OPPONENT_KINDS)}"
            )
        try:
            mix[name] = float(value)
        except ValueError:
            raise ValueError(f"opponent mix {part!r} needs a number, e.g. {name}=0.5") from None
        if mix[name] < 0:
            raise ValueError(f"opponent mix weight of {name} must be >= 0; got {mix[name]}")
    total = sum(mix.values())
    if total <= 0:
        raise ValueError(f"opponent mix {text!r} gives no opponent a positive weight")
    return {k: v / total for k, v in mix.items()}


class SelfPlayEnv(gymnasium.Env):
    """One learning seat of ``game``; the others drawn from snapshots, heuristic and random."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        game: str,
        options: dict[str, Any] | None = None,
        mix: dict[str, float] | None = None,
        snapshots: list[str] | None = None,
    ):
        self.game = game
        self.options = dict(options or {})
        self.aec = env_class(game)(**self.options)
        self.n = len(self.aec.possible_agents)
        layout = self.aec.observation.LAYOUT
        self.observation_space = spaces.Box(layout.low, layout.high, dtype=np.float32)
        self.action_space = spaces.Discrete(self.aec.rules.NUM_ACTIONS)
        self.mix = mix or {"random": 1.0}
        self.snapshots: list[str] = list(snapshots or [])
        self._snapshot_agents: dict[str, Agent] = {}
        self._heuristic: Agent | None = None
        self.seat = 0
        self.opponents: dict[int, Agent] = {}
        self.illegal_actions = 0
        self._ended = False

    # -- opponent pool ----------------------------------------------------------------------
    def set_snapshots(self, paths: list[str]) -> None:
        """Replace the snapshot pool (called by the trainer in every worker)."""
        self.snapshots = list(paths)
        for path in list(self._snapshot_agents):
            if path not in self.snapshots:
                del self._snapshot_agents[path]

    def _opponent(self, kind: str, rng: np.random.Generator) -> Agent:
        if kind == "snapshot" and self.snapshots:
            path = self.snapshots[int(rng.integers(len(self.snapshots)))]
            if path not in self._snapshot_agents:
                self._snapshot_agents[path] = load_ppo_agent(
                    path, self.game, self.options, deterministic=False
                )
            agent = self._snapshot_agents[path]
            agent.rng = np.random.default_rng(int(rng.integers(2**31)))
            return agent
        if kind == "heuristic":
            if self._heuristic is None:
                self._heuristic = make_agent("heuristic", self.game)
            return self._heuristic
        # "random", and "snapshot" before the first snapshot exists
        return RandomAgent(int(rng.integers(2**31)))

    def _draw_opponents(self, rng: np.random.Generator) -> dict[int, Agent]:
        kinds = list(self.mix)
        probs = np.array([self.mix[k] for k in kinds])
        return {
            s: self._opponent(kinds[int(rng.choice(len(kinds), p=probs))], rng)
            for s in range(self.n)
            if s != self.seat
        }

    # -- gymnasium API ----------------------------------------------------------------------
    def reset(
        self, seed: int | None = None, options: dict | None = None
    ) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        rng = self.np_random
        self.seat = int(rng.integers(self.n))
        self.opponents = self._draw_opponents(rng)
        for seat, agent in self.opponents.items():
            agent.reset(seat)
        self.aec.reset(seed=int(rng.integers(2**31)))
        self._ended = False
        self._play_others()  # rewards before the learner's first turn are zero in our games
        return self._observe(), {"seat": self.seat}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        learner = self.aec.possible_agents[self.seat]
        if self.aec.agent_selection != learner or self._done():
            raise RuntimeError("step() called while the learning seat is not to act; reset()")
        if not self.aec.action_mask()[int(action)]:
            self.illegal_actions += 1
            self._ended = True
            info = {"seat": self.seat, "illegal_action": int(action)}
            return self._observe(), -1.0, True, False, info
        self.aec.step(int(action))
        reward = self.aec.rewards[learner] + self._play_others()
        done = self._done()
        return self._observe(), float(reward), done, False, {"seat": self.seat}

    def action_masks(self) -> np.ndarray:
        """Boolean mask of the learner's legal actions (all True once the game is over)."""
        if self._done():
            return np.ones(self.action_space.n, dtype=bool)
        return self.aec.action_mask().astype(bool)

    # -- internals --------------------------------------------------------------------------
    def _done(self) -> bool:
        return self._ended or self.aec.rules.is_terminal(self.aec.game_state)

    def _observe(self) -> np.ndarray:
        return self.aec.observation.encode(self.aec.game_state, self.seat)

    def _play_others(self) -> float:
        """Let the other seats act until the learner is to act or the game ends."""
        learner = self.aec.possible_agents[self.seat]
        reward = 0.0
        while not self._done() and self.aec.agent_selection != learner:
            agent_name = self.aec.agent_selection
            seat = self.aec.agent_name_mapping[agent_name]
            obs = self.aec.observe(agent_name)
            view = GameView(self.aec.rules, self.aec.config, self.aec.game_state, seat)
            self.aec.step(self.opponents[seat](obs, view))
            reward += self.aec.rewards[learner]
        return reward
