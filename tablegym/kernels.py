"""numba pieces every game's engine and rollout twin share: one xorshift64* generator drawing
uniform numbers, the values a search gives a finished or cut-off play-out, the check of a
batch of actions against its masks, and the OpenMP wait policy of the parallel kernels.

A rollout twin (``<game>_env/rollout.py``) draws its uniform numbers with :func:`uniform` in the
order its Python rollout policy draws them (tests feed that policy :func:`uniforms`), and
values a play-out with :func:`terminal_value` or :func:`cutoff_value`.
"""

from __future__ import annotations

import os

import numpy as np
from numba import njit

# The kernels read nothing of another module (tablegym/numba_cache.py: one rule).
CACHE_FROZEN = ()

# numba's OpenMP threading layer (GNU libgomp) keeps its workers spinning for GOMP_SPINCOUNT
# rounds after a parallel region before they sleep. Sleeping workers wake late at every step
# and spinning ones take the core the Python side needs beside a busy process, so they spin a
# little (measurements: docs/results.md) and tablegym.vector.engine.ThreadTuner runs the
# kernels on one thread while that is faster. A user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT
# wins. libgomp reads them when numba first loads it: every engine imports this module first.
if "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = "10000"

_MULT = np.uint64(0x2545F4914F6CDD1D)
_U11, _U12, _U25, _U27 = (np.uint64(k) for k in (11, 12, 25, 27))
_TWO_TO_MINUS_53 = 1.0 / 9007199254740992.0


@njit(cache=True, inline="always")
def next_bits(rngs: np.ndarray, i: int) -> np.uint64:
    """xorshift64*: advance generator ``rngs[i]`` and return its 64 output bits (the one
    generator of every engine and rollout twin; a state must not be 0)."""
    x = rngs[i]
    x ^= x >> _U12
    x ^= x << _U25
    x ^= x >> _U27
    rngs[i] = x
    return x * _MULT


@njit(cache=True)
def uniform(rngs: np.ndarray) -> float:
    """A uniform number in [0, 1) from the xorshift64* generator ``rngs[0]`` (53 bits)."""
    return float(next_bits(rngs, 0) >> _U11) * _TWO_TO_MINUS_53


def uniforms(seed: int, count: int) -> list[float]:
    """The first ``count`` numbers :func:`uniform` draws from a generator seeded ``seed``
    (for tests that feed the Python rollout policy the compiled twin's numbers)."""
    rngs = np.array([seed], dtype=np.uint64)
    return [uniform(rngs) for _ in range(count)]


@njit(cache=True)
def terminal_value(flags: np.ndarray, n: int, out: np.ndarray) -> None:
    """1/k for each of the k seats flagged in ``flags[:n]``, 0 for the others."""
    k = 0
    for s in range(n):
        k += flags[s]
    share = 1.0 / k if k else 0.0
    for s in range(n):
        out[s] = share if flags[s] else 0.0


@njit(cache=True)
def cutoff_value(scores: np.ndarray, n: int, out: np.ndarray) -> None:
    """``agents.ismcts.cutoff_value``: half a win share by ``scores[:n]``, half the margin."""
    best, low, total = scores[0], scores[0], 0.0
    for s in range(n):
        best = max(best, scores[s])
        low = min(low, scores[s])
        total += scores[s]
    spread = best - low
    leaders = 0
    for s in range(n):
        leaders += scores[s] == best
    for s in range(n):
        margin = 0.0
        if spread > 0:
            margin = (scores[s] - (total - scores[s]) / (n - 1)) / spread
        win = 1.0 / leaders if scores[s] == best else 0.0
        out[s] = 0.5 * win + 0.25 * (1.0 + max(-1.0, min(1.0, margin)))


@njit(cache=True)
def changed(a: np.ndarray, b: np.ndarray, n: int) -> bool:
    """Whether ``a[:n]`` and ``b[:n]`` differ."""
    for s in range(n):
        if a[s] != b[s]:
            return True
    return False


@njit(cache=True)
def first_illegal(mask: np.ndarray, actions: np.ndarray) -> int:
    """The first row whose action is out of range or masked, -1 if none (one pass, no copies)."""
    width = mask.shape[1]
    for i in range(actions.shape[0]):
        a = actions[i]
        if a < 0 or a >= width or not mask[i, a]:
            return i
    return -1
