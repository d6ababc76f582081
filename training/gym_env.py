"""One seat against fixed bots, as a single-agent Gymnasium env.

.. code-block:: python

    import gymnasium
    import training.gym_env  # noqa: F401  (registers tablegym/KingUp-v1, UpDown-v2, KdK-v1)

    env = gymnasium.make("tablegym/KingUp-v1", num_players=4, opponents=["heuristic", "random"])
    obs, info = env.reset(seed=0)          # obs: float32 vector of the game's LAYOUT
    obs, reward, terminated, truncated, info = env.step(action)
    info["action_mask"]                    # int8, 1 = legal (sb3-contrib: env.action_masks())

The learner plays one seat (``seat``: fixed, or ``None`` for a seat drawn per episode); every
other seat is played by ``opponents``: one entry for all of them, or one per other seat in
seat order after the learner's, each an agent spec of :func:`training.registry.make_agent`
(``"random"``, ``"heuristic"``, ``"ismcts:200"``, ``"ppo:kingup"``, ``"ppo:PATH"`` ...), an
:class:`agents.base.Agent`, or a callable ``f(observation, action_mask) -> action``. Other
keyword arguments are the game's options (``num_players``, ``num_rounds`` ...).

``step`` plays the learner's action and then the other seats until the learner is to act
again or the game ends. The reward is the learner's own, summed over every move in between
(the AEC env rewards a seat at other seats' moves too: round ends, eliminations), so an
episode's rewards add up to the seat's reward in the game. An illegal action ends the episode
with ``illegal_reward`` (-1, as PettingZoo's ``TerminateIllegalWrapper`` in ``env()``), so
algorithms without masks can learn the rules; ``illegal_reward=None`` raises ValueError
instead. With ``reset(seed=...)`` the deal, the learner's seat and the opponents built from
specs are all seeded from it: same seed and actions, same episode. Agents and callables passed
in as objects keep their own generators.

The ids are ``tablegym/<Game>-vN`` with N the version of the game's AEC env
(``metadata["name"]``); the env lives in ``training`` because ``ppo:`` specs need it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium
import numpy as np

from agents.base import Agent, GameView
from tablegym.games import GAMES, check_game, env_class
from tablegym.registration import metadata_name
from training.registry import make_agent

Opponent = str | Agent | Callable[[np.ndarray, np.ndarray], int]
GYM_NAMES = {"kingup": "KingUp", "updown": "UpDown", "kdk": "KdK"}
# Specs whose agents are expensive to build (a network is loaded): built once and reseeded,
# where the others are rebuilt from their spec at each seeded reset.
LOADED = ("ppo:", "rllib:")


class SingleSeatEnv(gymnasium.Env):
    """One seat of a tablegym game learning against fixed opponents (see the module doc)."""

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 1}

    def __init__(
        self,
        game: str,
        opponents: Opponent | Sequence[Opponent] = "heuristic",
        seat: int | None = 0,
        illegal_reward: float | None = -1.0,
        render_mode: str | None = None,
        **options: Any,
    ):
        self.game_name = check_game(game)
        self.game = env_class(game)(render_mode=render_mode, **options)
        self.options = {**options, "num_players": self.game.config.num_players}
        self.render_mode = render_mode
        n = self.game.config.num_players
        if seat is not None and (isinstance(seat, bool) or seat not in range(n)):
            raise ValueError(f"seat must be None (drawn per episode) or 0..{n - 1}; got {seat!r}")
        self.seat_option = seat
        self.seat = 0 if seat is None else seat
        self.opponent_entries = _opponent_entries(opponents, n)
        self.illegal_reward = illegal_reward
        self.observation_space = self.game.observation_space("player_0")["observation"]
        self.action_space = self.game.action_space("player_0")
        self.num_players = n
        self._agents = [self._build(entry, None) for entry in self.opponent_entries]
        self._mask = np.zeros(self.action_space.n, dtype=np.int8)
        self._done = True

    # -- gymnasium API ----------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[np.ndarray, dict]:
        """A new game; the bots play until the learner is to act."""
        super().reset(seed=seed)
        if seed is not None:  # the bots built from specs are seeded from it too
            seeds = self.np_random.integers(2**63, size=len(self.opponent_entries))
            self._agents = [self._build(e, int(s)) for e, s in zip(self.opponent_entries, seeds)]
        if self.seat_option is None:
            self.seat = int(self.np_random.integers(self.num_players))
        for offset, agent in enumerate(self._agents, start=1):
            if isinstance(agent, Agent):
                agent.reset((self.seat + offset) % self.num_players)
        self._done = True
        # A game the learner only watches (none at the games' table sizes) would give an
        # episode without a decision: deal again instead. Nothing is earned before the
        # learner's first move.
        while self._done:
            self.game.reset(seed=int(self.np_random.integers(2**63)))
            self._done = False
            self._play_others()
        return self._observation(), self._info()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Play the learner's action, then the others until the learner is to act again."""
        if self._done:
            raise ValueError("step(): the episode is over; call reset()")
        action = int(action)
        if not (0 <= action < self._mask.size and self._mask[action]):
            if self.illegal_reward is None:
                self.game.step(action)  # raises ValueError naming the action and the legal set
            self._done = True  # the game is abandoned, as TerminateIllegalWrapper does
            return self._observation(), float(self.illegal_reward), True, False, self._info()
        self.game.step(action)
        reward = self.game.rewards[self._name] + self._play_others()
        return self._observation(), float(reward), self._done, False, self._info()

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions as bools (sb3-contrib's ``ActionMasker`` convention)."""
        return self._mask.astype(bool)

    def render(self) -> str | None:
        """The game as text from everyone's side (``ansi``), or printed (``human``)."""
        return self.game.render()

    # -- internals --------------------------------------------------------------------------
    @property
    def _name(self) -> str:
        return self.game.possible_agents[self.seat]

    def _build(self, entry: Opponent, seed: int | None) -> Any:
        if not isinstance(entry, str):
            return entry
        if seed is not None and entry.startswith(LOADED) and hasattr(self, "_agents"):
            agent = self._agents[self.opponent_entries.index(entry)]
            agent.rng = np.random.default_rng(seed)
            return agent
        return make_agent(entry, self.game_name, seed=seed, **self._agent_options(entry))

    def _agent_options(self, spec: str) -> dict[str, Any]:
        # A trained bot checks the game options it was trained for; the others take none.
        return self.options if spec.startswith(LOADED) else {}

    def _play_others(self) -> float:
        """Move for the other seats until the learner is to act or the game ends; the
        learner's reward over those moves."""
        game, total = self.game, 0.0
        while not game.rules.is_terminal(game.game_state):
            seat = game.game_state.to_play
            if seat == self.seat:
                self._mask = game.action_mask()
                return total
            obs = game.observe(game.agent_selection)
            agent = self._agents[(seat - self.seat) % self.num_players - 1]
            if isinstance(agent, Agent):
                view = GameView(game.rules, game.config, game.game_state, seat)
                action = agent.act(obs["observation"], obs["action_mask"], view)
            else:
                action = agent(obs["observation"], obs["action_mask"])
            game.step(int(action))
            total += game.rewards[self._name]
        self._done = True
        self._mask = np.zeros(self.action_space.n, dtype=np.int8)
        return total

    def _observation(self) -> np.ndarray:
        return self.game.observation.encode(self.game.game_state, self.seat)

    def _info(self) -> dict[str, Any]:
        # A copy: an info must not share an array with the next one (gymnasium's checker).
        return {"action_mask": self._mask.copy(), "seat": self.seat}


def _opponent_entries(opponents: Opponent | Sequence[Opponent], n: int) -> list[Opponent]:
    """One opponent per other seat; ValueError naming what is allowed."""
    if isinstance(opponents, str | Agent) or callable(opponents):
        return [opponents] * (n - 1)
    entries = list(opponents)
    if len(entries) == 1:
        return entries * (n - 1)
    if len(entries) != n - 1:
        raise ValueError(
            f"opponents must be one entry for every other seat or {n - 1} entries "
            f"(one per other seat at {n} players); got {len(entries)}"
        )
    for entry in entries:
        if not (isinstance(entry, str | Agent) or callable(entry)):
            raise ValueError(
                "each opponent must be an agent spec, an Agent or a callable "
                f"f(observation, action_mask) -> action; got {entry!r}"
            )
    return entries


def gym_id(game: str) -> str:
    """Gymnasium id of ``game``'s single-seat env: ``"kingup"`` -> ``"tablegym/KingUp-v1"``."""
    version = metadata_name(GAMES[check_game(game)]).rpartition("_v")[2]
    return f"tablegym/{GYM_NAMES[game]}-v{version}"


def register_gym_envs() -> list[str]:
    """Register every game's :class:`SingleSeatEnv` with Gymnasium; the ids."""
    ids = []
    for game in GAMES:
        env_id = gym_id(game)
        if env_id not in gymnasium.registry:
            gymnasium.register(
                env_id,
                entry_point=f"{__name__}:SingleSeatEnv",
                kwargs={"game": game},
                disable_env_checker=False,
            )
        ids.append(env_id)
    return ids


register_gym_envs()
