"""The numba backend of :class:`tablegym.vector.VectorGame`, and the contract of an engine.

A game's batched engine is the module ``<game>_env/engine.py``. It shares only constants with
the readable ``rules.py`` (it is a second implementation, tested step by step against the
first) and keeps all games in one integer array ``states`` of shape ``(B, NUM_COLUMNS)`` with
named column offsets documented beside its code, plus one uint64 generator state per game in
``rngs`` of shape ``(B,)``. It offers:

``NUM_COLUMNS``
    the width of a row.
``STATE_DTYPE`` (optional)
    the integer type of ``states``, int64 if the engine does not say; a row from
    ``from_state`` may be of another integer type and is converted as it is stored.
``PARALLEL_FROM``
    the rows from which ``step`` and ``observe`` run a parallel (``prange``) kernel.
``setup(config) -> tuple``
    the constant arrays every kernel takes (``consts``): the options, the observation
    layout's ``affine`` scale and shift, lookup tables.
``deal(states, rngs, consts)``
    deal a new game in every row.
``refresh(states, consts, obs, mask, seat)``
    write, for every row, the observation (float32) of the player to act, the legal-action
    mask (bool) and that player's seat.
``step(states, rngs, consts, actions, obs, mask, seat, rewards, done)``
    apply ``actions[i]`` (already checked legal) to row i; write every seat's reward for the
    step (float32, ``(B, num_players)``), ``done[i]`` if the game ended, in which case row i
    holds a newly dealt game; then obs/mask/seat as ``refresh`` does.
``observe(states, consts, seats, obs)``
    the observations of ``seats[i]`` in row i.
``to_state(row, config) -> rules.State`` and ``from_state(state, config) -> row``
    conversions to and from the readable core.
``random_play(states, rngs, consts, num_steps) -> int`` (optional)
    ``num_steps`` uniformly random legal actions in every row chosen inside the engine
    (finished games dealt anew, no observations written); returns the decisions made. It is
    what ``benchmarks/bench_vector.py`` measures as in-engine random play.
"""

from __future__ import annotations

import importlib
import time
from typing import Any

import numba
import numpy as np

from tablegym import kernels  # noqa: F401  (sets OpenMP's wait policy before numba loads it)
from tablegym.games import GAMES, observation_of, rules_of


class ThreadTuner:
    """Runs a batch's step kernel on numba's threads or on one, whichever is faster now.

    The faster choice depends on whether a core is free, which changes while a process runs,
    so it is measured: every step is timed, the choice in use is kept as a running average,
    and every ``every`` steps the other is timed for ``PROBE`` steps (the first not counted:
    a worker that slept wakes late). A probe that confirms the choice doubles ``every``, up to
    ``LONGEST``; one that changes it starts again from ``EVERY``. Results do not depend on the
    choice (one generator per game). ``numba.set_num_threads`` is restored after every call.
    """

    PROBE = 6
    EVERY = 250
    LONGEST = 4000

    def __init__(self) -> None:
        self.cost: list[float | None] = [None, None]  # seconds per step: one thread, all
        self.arm = 1
        self.probe: list[float] | None = []  # the timings of a probe under way
        self.since = 0
        self.every = self.EVERY
        self._restore = 0

    def start(self) -> float:
        """Before a kernel call: set the thread count of the choice; returns the start time."""
        threads = numba.get_num_threads()
        if threads > 1 and self.arm == 0:
            numba.set_num_threads(1)
            self._restore = threads
        return time.perf_counter()

    def stop(self, started: float) -> None:
        """After the kernel call: restore the thread count and learn from the time taken."""
        seconds = time.perf_counter() - started
        if self._restore:
            numba.set_num_threads(self._restore)
            self._restore = 0
        if self.probe is None:
            old = self.cost[self.arm]
            self.cost[self.arm] = seconds if old is None else 0.95 * old + 0.05 * seconds
            self.since += 1
            if self.since >= self.every:
                self.arm, self.probe = 1 - self.arm, []
            return
        self.probe.append(seconds)
        if len(self.probe) <= self.PROBE:
            return
        self.cost[self.arm] = sum(self.probe[1:]) / self.PROBE
        if self.cost[1 - self.arm] is None:  # the first probe of the other choice follows
            self.arm, self.probe = 1 - self.arm, []
            return
        kept = 1 - self.arm  # the choice before this probe
        self.arm = 0 if self.cost[0] <= self.cost[1] else 1
        self.every = min(2 * self.every, self.LONGEST) if self.arm == kept else self.EVERY
        self.probe, self.since = None, 0


def generator_state(seed: np.random.SeedSequence) -> np.uint64:
    """An engine generator's starting state from ``seed`` (xorshift must not start at 0)."""
    return seed.generate_state(1, np.uint64)[0] or np.uint64(1)


class EngineBackend:
    """Buffers and calls of one game's engine for :class:`tablegym.vector.VectorGame`."""

    def __init__(self, game: str, config: Any, seeds: list[np.random.SeedSequence]) -> None:
        self.engine = importlib.import_module(f"{GAMES[game]}.engine")
        self.config = config
        self.consts = self.engine.setup(config)
        size = len(seeds)
        dtype = getattr(self.engine, "STATE_DTYPE", np.int64)
        self.states = np.zeros((size, self.engine.NUM_COLUMNS), dtype=dtype)
        self.rngs = np.array([generator_state(s) for s in seeds], np.uint64)
        self.obs_size = observation_of(game).OBS_SIZE
        self.num_actions = rules_of(game).NUM_ACTIONS
        self.mask = np.zeros((size, self.num_actions), dtype=bool)
        self.tuner = ThreadTuner() if size >= self.engine.PARALLEL_FROM else None

    def _outputs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        size = len(self.states)
        obs = np.empty((size, self.obs_size), dtype=np.float32)
        mask = np.empty((size, self.num_actions), dtype=bool)
        return obs, mask, np.empty(size, dtype=np.int64)

    def reset(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        obs, mask, seat = self._outputs()
        self.engine.deal(self.states, self.rngs, self.consts)
        self.engine.refresh(self.states, self.consts, obs, mask, seat)
        self.mask = mask
        return obs, mask, seat

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, ...]:
        obs, mask, seat = self._outputs()
        rewards = np.zeros((len(self.states), self.config.num_players), dtype=np.float32)
        done = np.zeros(len(self.states), dtype=bool)
        started = self.tuner.start() if self.tuner else 0.0
        self.engine.step(
            self.states, self.rngs, self.consts, actions, obs, mask, seat, rewards, done
        )
        if self.tuner:
            self.tuner.stop(started)
        self.mask = mask
        return obs, mask, seat, rewards, done

    def observe(self, seats: np.ndarray) -> np.ndarray:
        obs = np.empty((len(self.states), self.obs_size), dtype=np.float32)
        self.engine.observe(self.states, self.consts, seats, obs)
        return obs

    def random_play(self, num_steps: int) -> int:
        """Random legal play inside the engine (``random_play`` of the contract); decisions made."""
        return self.engine.random_play(self.states, self.rngs, self.consts, num_steps)

    def get_state(self, i: int) -> Any:
        return self.engine.to_state(self.states[i], self.config)

    def reseed(self, i: int, seed: np.random.SeedSequence) -> None:
        self.rngs[i] = generator_state(seed)

    def snapshot(self) -> np.ndarray:
        return self.states.copy()

    def state_of(self, snapshot: np.ndarray, i: int) -> Any:
        return self.engine.to_state(snapshot[i], self.config)

    def set_state(self, i: int, state: Any) -> None:
        self.states[i] = self.engine.from_state(state, self.config)
        obs, mask, seat = (a[:1] for a in self._outputs())
        self.engine.refresh(self.states[i : i + 1], self.consts, obs, mask, seat)
        self.mask = self.mask.copy()
        self.mask[i] = mask[0]
