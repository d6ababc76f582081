"""Search simulations on the batched engines: a determinisation as one engine row, played out
by a compiled twin of the game's rollout policy.

ISMCTS (``agents/ismcts.py``) spends almost all its time in rollouts: the readable rules build
a new ``State`` at every move and the rollout policy runs in Python, 100-700 µs a rollout.
Here a determinisation is loaded into one row of the game's batched engine
(``<game>_env/engine.py``, ``engine.from_state``) and played in numba, where a move costs
about a microsecond.

A game takes part through a *rollout module* ``<game>_env/rollout.py``, named by its Python
rollout policy's ``engine`` attribute. It holds compiled functions over one engine row ``st``
(int64, ``NUM_COLUMNS``), the engine's ``consts`` and a generator ``rngs`` (uint64, shape
``(1,)``: the engine's xorshift64* state of row 0, which also draws the rules' chance):

=========================================  ===================================================
``policy(st, consts, rngs) -> int``        the move of the seat to play: the same function
                                           as the Python rollout policy, drawing its uniform
                                           numbers with ``kernels.uniform`` in the same order
``apply(st, consts, action, rngs)``        play a legal action (the engine's own ``_apply``)
``is_over(st) -> bool``                    ``rules.is_terminal``
``to_play(st) -> int``                     ``state.to_play``
``legal(st, consts, out) -> int``          ``rules.legal_actions`` written into ``out``
                                           (ascending), their number returned
``scores(st, consts, out)``                ``rules.scores`` into ``out[:n]`` (float64)
``winners(st, consts, out) -> int``        at game over, 1 in ``out[s]`` for every seat of
                                           ``rules.winners`` and 0 for the others; the count
=========================================  ===================================================

(a module finds the table size in ``consts``), its engine module as ``ENGINE``, and three
kernels built from them that :class:`EngineRollouts` calls:

=================================================  ==========================================
``play_out(st, consts, rngs, n, cutoff, out)``     play on by ``policy`` to the end of the
                                                   game, or (``cutoff``) until ``scores``
                                                   change; every seat's value into
                                                   ``out[:n]`` (``kernels.terminal_value``,
                                                   ``kernels.cutoff_value``)
``race(row, consts, moves, seed, n, cutoff, out)`` for each of ``moves``: play it in a copy
                                                   of ``row``, then ``play_out``, each from a
                                                   generator seeded ``seed``; ``out[j, :n]``
``advance(st, consts, rngs, seat)``                ``policy``'s moves for the other seats
                                                   until ``seat`` is to play or the end
=================================================  ==========================================

Each game writes these three out over its own functions. A generic kernel taking the game's
functions as arguments would be shorter, but numba cannot cache it: the type of a compiled
function carries its address, so every process compiled it anew (4 s for King Up!), and a
call from Python that passes compiled functions costs 30 µs of type resolution.

``kernels`` is :mod:`tablegym.kernels`. Values, as in ``agents/ismcts.py``: at the end of the
game each of the ``k`` winners gets ``1/k``; at a score cutoff, half of that on the current
scores plus half the seat's margin over the others' mean, scaled by the score range to [0, 1].
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np


class EngineRollouts:
    """A game's rollout module bound to one table (``config``): engine rows from readable
    states, and the game's kernels called with the table's constants.
    """

    def __init__(self, module: str, config: Any, num_actions: int, cutoff: bool) -> None:
        self.module = importlib.import_module(module)
        self.engine = self.module.ENGINE
        self.config = config
        self.consts = self.engine.setup(config)
        self.n = config.num_players
        self.cutoff = cutoff
        self.buffer = np.empty(num_actions, dtype=np.int64)

    def row(self, state: Any) -> np.ndarray:
        """The engine row of a readable state."""
        return self.engine.from_state(state, self.config)

    def value(self, row: np.ndarray, rngs: np.ndarray) -> list[float]:
        """Every seat's value of playing ``row`` out (the row is played on in place)."""
        out = np.empty(self.n)
        self.module.play_out(row, self.consts, rngs, self.n, self.cutoff, out)
        return out.tolist()

    def race(self, row: np.ndarray, moves: list[int], seed: int) -> np.ndarray:
        """(len(moves), n) values: each move played in a copy of ``row``, then played out,
        all from a generator seeded ``seed``."""
        out = np.empty((len(moves), self.n))
        seed = np.uint64(seed or 1)  # xorshift must not start at 0
        moves = np.array(moves, dtype=np.int64)
        self.module.race(row, self.consts, moves, seed, self.n, self.cutoff, out)
        return out

    def advance(self, row: np.ndarray, rngs: np.ndarray, seat: int) -> None:
        """The policy's moves for the other seats until ``seat`` is to play or the game ends."""
        self.module.advance(row, self.consts, rngs, seat)

    def observe(self, row: np.ndarray, seat: int, out: np.ndarray) -> None:
        """What ``seat`` sees in ``row`` (the engine's ``observe``, as ``raw_env`` shows it)
        into ``out``, float32 of shape ``(1, obs_size)``."""
        self.engine.observe(row[None], self.consts, np.array([seat], dtype=np.int64), out)

    def legal(self, row: np.ndarray) -> list[int]:
        """``rules.legal_actions`` of the row."""
        count = self.module.legal(row, self.consts, self.buffer)
        return self.buffer[:count].tolist()
