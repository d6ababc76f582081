"""Batched games: ``VectorGame`` steps B games of one kind in one call.

.. code-block:: python

    vg = VectorGame("kingup", num_games=1024, seed=0, num_players=4)  # any game option
    obs, mask, seat = vg.reset()  # float32 (B, OBS_SIZE) of the seat to act; bool (B, A); int (B,)
    obs, mask, seat, rewards, done = vg.step(actions)
    # rewards float32 (B, n): every seat's reward for this step; done bool (B,): the game in
    # slot i ended at this step, and slot i already holds a new game (obs/mask/seat are its)
    vg.observe(seats)                 # float32 (B, OBS_SIZE): what the given seats see
    vg.get_state(i)                   # the readable rules State of game i
    vg.set_state(i, state)            # load a rules State into slot i
    vg.set_state(i, state, seed=s)    # ... and reseed slot i's generator (chance from there on)
    vg.final_state(i)                 # with keep_final=True: the last State of the game that
                                      # ended in slot i at the last step (scores, winners)

Observations and masks are those of ``observation.encode(state, seat)`` and
``rules.legal_actions(state)`` of the game's readable core, bit for bit, and rewards those of
``rules.rewards``. Two backends give them:

``"numba"``
    the game's batched engine (``<game>_env/engine.py``): the state of all games in one int
    array, compiled kernels. Thousands of games per call.
``"rules"``
    the readable core itself, one ``rules.State`` per slot stepped in Python: every game has
    it, it is the oracle the engines are tested against, and it lets code written against this
    interface run before an engine exists.

``backend="auto"`` (default) takes the engine where the game has one. Same seed, same games
(within a backend: the engines draw from their own per-game generators).
``keep_final=True`` keeps every slot's state before each step, so that the final state of a
game that just ended (gone from its slot, which holds a new deal) can be rebuilt with the
readable core: a tournament needs its scores and winners, the rewards alone do not give them.
It costs a copy of the state array per step, hence off by default.

``random_actions(mask, rng)`` draws a uniformly random legal action per row of a mask
(random players, benchmarks).
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from tablegym.games import GAMES, check_game, observation_of, rules_of
from tablegym.kernels import first_illegal, kth_legal, legal_counts
from tablegym.options import check_choice, check_int

BACKENDS = ("auto", "numba", "rules")


def has_engine(game: str) -> bool:
    """Whether ``game`` has a batched engine (``<package>/engine.py``)."""
    return importlib.util.find_spec(f"{GAMES[check_game(game)]}.engine") is not None


def random_actions(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random legal action per row of ``mask``: the k-th legal id, k uniform
    (k = floor(u * count) for one ``rng.random()`` draw u per row, drawn once for all rows)."""
    mask = np.ascontiguousarray(mask, dtype=bool)
    rows, width = mask.shape
    flags = mask.reshape(-1).view(np.uint8)
    counts = np.empty(rows, dtype=np.int64)
    empty = legal_counts(flags, width, counts)
    if empty >= 0:
        raise ValueError(f"row {empty} of the mask allows no action")
    actions = np.empty(rows, dtype=np.intp)
    kth_legal(flags, width, counts, rng.random(rows), actions)
    return actions


class VectorGame:
    """B games of ``game`` stepped together; see the module docstring."""

    def __init__(
        self,
        game: str,
        num_games: int,
        seed: int | None = None,
        backend: str = "auto",
        keep_final: bool = False,
        **options: Any,
    ):
        check_game(game)
        self.num_games = check_int("num_games", num_games, 1)
        check_choice("backend", backend, BACKENDS)
        if seed is not None:
            seed = check_int("seed", seed, 0)
        self.game = game
        self.rules = rules_of(game)
        self.observation = observation_of(game)
        self.config = self.rules.make_config(**options)
        self.num_players = self.config.num_players
        self.num_actions = self.rules.NUM_ACTIONS
        self.obs_size = self.observation.OBS_SIZE
        if backend == "auto":
            backend = "numba" if has_engine(game) else "rules"
        elif backend == "numba" and not has_engine(game):
            raise ValueError(f"backend 'numba': {game!r} has no batched engine yet; use 'rules'")
        self.backend = backend
        seeds = np.random.SeedSequence(seed).spawn(self.num_games)
        if backend == "numba":
            from tablegym.vector.engine import EngineBackend

            self._impl: Any = EngineBackend(game, self.config, seeds)
        else:
            self._impl = RulesBackend(self.rules, self.observation, self.config, seeds)
        self.keep_final = bool(keep_final)
        self._before: Any = None  # per slot, what step() started from (keep_final)
        self._actions: np.ndarray | None = None
        self._done: np.ndarray | None = None
        self._mask: np.ndarray | None = None

    # -- the interface -----------------------------------------------------------------
    def reset(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Deal a new game in every slot: (obs, mask, seat) of the seats to act."""
        obs, mask, seat = self._impl.reset()
        self._mask = mask
        return obs, mask, seat

    def step(
        self, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Play ``actions[i]`` in game i: (obs, mask, seat, rewards, done)."""
        if self._mask is None:
            raise RuntimeError("call reset() before step()")
        actions = self._check_actions(actions)
        if self.keep_final:
            self._before = self._impl.snapshot()
        obs, mask, seat, rewards, done = self._impl.step(actions)
        self._mask = mask
        self._actions, self._done = actions, done
        return obs, mask, seat, rewards, done

    def observe(self, seats: np.ndarray) -> np.ndarray:
        """float32 (B, OBS_SIZE): the observation of ``seats[i]`` in game i."""
        if self._mask is None:
            raise RuntimeError("call reset() before observe()")
        seats = np.asarray(seats)
        if seats.shape != (self.num_games,) or seats.dtype.kind not in "iu":
            raise ValueError(
                f"seats must be an integer array of shape ({self.num_games},); "
                f"got {seats.dtype} {seats.shape}"
            )
        if seats.size and (seats.min() < 0 or seats.max() >= self.num_players):
            raise ValueError(f"seats must lie in 0..{self.num_players - 1}")
        return self._impl.observe(seats.astype(np.int64))

    def get_state(self, i: int) -> Any:
        """The readable ``rules.State`` of the game in slot ``i``."""
        return self._impl.get_state(self._slot(i))

    def final_state(self, i: int) -> Any:
        """The readable final ``rules.State`` of the game that ended in slot ``i`` at the last
        step (``done[i]``); needs ``keep_final=True``."""
        i = self._slot(i)
        if not self.keep_final:
            raise ValueError("final_state needs VectorGame(..., keep_final=True)")
        if self._done is None or not self._done[i]:
            raise ValueError(f"final_state: no game ended in slot {i} at the last step")
        before = self._impl.state_of(self._before, i)
        # The final action is replayed by the readable core; the rules draw no chance once a
        # game is over, so the generator given here is never used for the result.
        after = self.rules.apply_action(before, int(self._actions[i]), np.random.default_rng(0))
        if not self.rules.is_terminal(after):
            raise RuntimeError(f"final_state: replaying slot {i}'s last action did not end it")
        return after

    def set_state(self, i: int, state: Any, seed: int | None = None) -> None:
        """Load a ``rules.State`` of this game and options into slot ``i``; with ``seed``, also
        reseed that slot's generator, which draws the game's chance from here on."""
        i = self._slot(i)
        if seed is not None:
            seed = check_int("seed", seed, 0)
        if type(state) is not self.rules.State:
            raise ValueError(
                f"set_state: expected a {self.game} rules.State, got {type(state).__module__}."
                f"{type(state).__qualname__}"
            )
        if self.rules.is_terminal(state):
            raise ValueError("set_state: the state is a finished game; load one still in play")
        players = len(self.rules.scores(state))
        if players != self.num_players:
            raise ValueError(
                f"set_state: the state has {players} players, this batch {self.num_players}"
            )
        if self._mask is None:
            self.reset()
        self._impl.set_state(i, state)
        if seed is not None:
            self._impl.reseed(i, np.random.SeedSequence(seed))
        self._mask = self._impl.mask
        if self._done is not None and self._done[i]:
            self._done = self._done.copy()
            self._done[i] = False  # the finished game is no longer the slot's last one

    @property
    def mask(self) -> np.ndarray:
        """bool (B, NUM_ACTIONS): the legal actions of the seats to act."""
        if self._mask is None:
            raise RuntimeError("call reset() first")
        return self._mask

    # -- checks ------------------------------------------------------------------------
    def _slot(self, i: Any) -> int:
        return check_int("slot", i, 0, self.num_games - 1)

    def _check_actions(self, actions: Any) -> np.ndarray:
        actions = np.asarray(actions)
        if actions.shape != (self.num_games,) or actions.dtype.kind not in "iu":
            raise ValueError(
                f"actions must be an integer array of shape ({self.num_games},); "
                f"got {actions.dtype} {actions.shape}"
            )
        actions = actions.astype(np.int64, copy=False)
        i = first_illegal(self._mask, actions)
        if i >= 0:
            allowed = np.flatnonzero(self._mask[i]).tolist()
            raise ValueError(
                f"illegal action {int(actions[i])} in slot {i}; legal actions: {allowed}"
            )
        return actions


class RulesBackend:
    """The readable rules core behind :class:`VectorGame`: one State per slot, in Python."""

    def __init__(self, rules: Any, observation: Any, config: Any, seeds: list) -> None:
        self.rules, self.encode, self.config = rules, observation.encode, config
        self.rngs = [np.random.default_rng(s) for s in seeds]
        size = len(seeds)
        self.states: list[Any] = [None] * size
        self.obs = np.zeros((size, observation.OBS_SIZE), dtype=np.float32)
        self.mask = np.zeros((size, rules.NUM_ACTIONS), dtype=bool)
        self.seat = np.zeros(size, dtype=np.int64)

    def reset(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        for i, rng in enumerate(self.rngs):
            self._load(i, self.rules.initial_state(self.config, rng))
        return self.obs.copy(), self.mask.copy(), self.seat.copy()

    def _load(self, i: int, state: Any) -> None:
        self.states[i] = state
        self.seat[i] = state.to_play
        self.obs[i] = self.encode(state, state.to_play)
        self.mask[i] = False
        self.mask[i, list(self.rules.legal_actions(state))] = True

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, ...]:
        rules, config = self.rules, self.config
        rewards = np.zeros((len(self.states), config.num_players), dtype=np.float32)
        done = np.zeros(len(self.states), dtype=bool)
        for i, action in enumerate(actions.tolist()):
            before = self.states[i]
            after = rules.apply_action(before, action, self.rngs[i])
            rewards[i] = rules.rewards(before, after, config)
            if rules.is_terminal(after):
                done[i] = True
                after = rules.initial_state(config, self.rngs[i])
            self._load(i, after)
        return self.obs.copy(), self.mask.copy(), self.seat.copy(), rewards, done

    def observe(self, seats: np.ndarray) -> np.ndarray:
        return np.stack([self.encode(s, int(q)) for s, q in zip(self.states, seats)])

    def get_state(self, i: int) -> Any:
        return self.states[i]

    def set_state(self, i: int, state: Any) -> None:
        self._load(i, state)

    def reseed(self, i: int, seed: np.random.SeedSequence) -> None:
        self.rngs[i] = np.random.default_rng(seed)

    def snapshot(self) -> list[Any]:
        return list(self.states)  # states are immutable: the list is the copy

    def state_of(self, snapshot: list[Any], i: int) -> Any:
        return snapshot[i]
