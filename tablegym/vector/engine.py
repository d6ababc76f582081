"""The numba backend of :class:`tablegym.vector.VectorGame`, and the contract of an engine.

A game's batched engine is the module ``<game>_env/engine.py``. It shares only constants with
the readable ``rules.py`` (it is a second implementation, tested step by step against the
first) and keeps all games in one int64 array ``states`` of shape ``(B, NUM_COLUMNS)`` with
named column offsets documented beside its code, plus one uint64 generator state per game in
``rngs`` of shape ``(B,)``. It offers:

``NUM_COLUMNS``
    the width of a row.
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
import os
from typing import Any

import numpy as np

from tablegym.games import GAMES, observation_of, rules_of

# numba's OpenMP threading layer (GNU libgomp) keeps its workers spinning after every parallel
# region. Whether that pays depends on the machine (measured with bench_vector.py, B = 1024):
# - cores to spare: a sleeping worker takes tens of µs to wake on these VMs, so spinning is
#   1.3x faster at B = 1024 and 3x at B = 64 (King Up! 5.6-6.0M decisions/s against 4.1-4.5M);
# - another process busy on a core: the spinning worker takes the core the Python side needs,
#   and everything runs 2-3x slower (King Up! 1.6M against 3.6M passive).
# Passive waiting is the default, as it degrades gracefully on a shared machine. A user's own
# OMP_WAIT_POLICY or GOMP_SPINCOUNT wins (e.g. GOMP_SPINCOUNT=100000, a few ms of spinning, on a
# machine of one's own). libgomp reads them when numba first loads it; engines import this
# module before their first parallel region.
if "GOMP_SPINCOUNT" not in os.environ:
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")


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
        self.states = np.zeros((size, self.engine.NUM_COLUMNS), dtype=np.int64)
        self.rngs = np.array([generator_state(s) for s in seeds], np.uint64)
        self.obs_size = observation_of(game).OBS_SIZE
        self.num_actions = rules_of(game).NUM_ACTIONS
        self.mask = np.zeros((size, self.num_actions), dtype=bool)

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
        self.engine.step(
            self.states, self.rngs, self.consts, actions, obs, mask, seat, rewards, done
        )
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
