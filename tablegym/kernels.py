"""numba pieces every game's engine and rollout twin share: one xorshift64* generator drawing
uniform numbers, the values a search gives a finished or cut-off play-out, the check of a
batch of actions against its masks, random legal actions over a batch of masks, views of a
batch's rows without reference counts, and the OpenMP wait policy of the parallel kernels.

A rollout twin (``<game>_env/rollout.py``) draws its uniform numbers with :func:`uniform` in the
order its Python rollout policy draws them (tests feed that policy :func:`uniforms`), and
values a play-out with :func:`terminal_value` or :func:`cutoff_value`.
"""

from __future__ import annotations

import os

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array

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


@intrinsic
def row_view(typingctx, array, i):
    """``array[i]`` of a C-contiguous 2-D array, as a view without a reference count.

    A view ``array[i]`` holds a reference to its parent: an atomic increment when it is made
    and a decrement when it goes, on a counter every thread of a parallel batch loop shares.
    The batch loops make three or four views a row and the parents outlive the loop, so theirs
    are made without one. Only for views that do not outlive the call that made them.
    """
    if not (isinstance(array, types.Array) and array.ndim == 2 and array.layout == "C"):
        return None
    row_type = array.copy(ndim=1, layout="C")

    def codegen(context, builder, signature, args):
        arrayty, indexty = signature.args
        ary = context.make_array(arrayty)(context, builder, args[0])
        index = context.cast(builder, args[1], indexty, types.intp)
        zero = context.get_constant(types.intp, 0)
        data = cgutils.get_item_pointer(context, builder, arrayty, ary, [index, zero])
        shape = cgutils.unpack_tuple(builder, ary.shape, 2)[1]
        stride = cgutils.unpack_tuple(builder, ary.strides, 2)[1]
        row = context.make_array(signature.return_type)(context, builder)
        populate_array(
            row,
            data=data,
            shape=cgutils.pack_array(builder, [shape]),
            strides=cgutils.pack_array(builder, [stride]),
            itemsize=ary.itemsize,
            meminfo=None,
        )
        return row._getvalue()

    return row_type(array, i), codegen


@intrinsic
def _load_u64(typingctx, array, offset):
    """The 8 bytes of a uint8 array from ``offset`` as one little-endian uint64, at any
    alignment (the mask's rows start wherever their width puts them)."""

    def codegen(context, builder, signature, args):
        arrayty = signature.args[0]
        ary = context.make_array(arrayty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, arrayty, ary, [args[1]])
        return builder.load(builder.bitcast(ptr, ir.IntType(64).as_pointer()), align=1)

    return types.uint64(array, offset), codegen


_LOW_BITS, _U56 = np.uint64(0x0101010101010101), np.uint64(56)
_U1, _U2, _U4 = np.uint64(1), np.uint64(2), np.uint64(4)


@njit(cache=True, inline="always")
def _set_in_word(flags, at):
    """How many of the 8 bytes of ``flags`` from ``at`` are not 0."""
    x = _load_u64(flags, at)
    # Each byte's bits folded into its lowest (a bool array viewed from other bytes may hold
    # any nonzero value for True, as numpy reads it), then the eight 0/1 bytes summed.
    x |= x >> _U4
    x |= x >> _U2
    x |= x >> _U1
    return np.int64(((x & _LOW_BITS) * _LOW_BITS) >> _U56)


@njit(cache=True)
def legal_counts(flags: np.ndarray, width: int, counts: np.ndarray) -> int:
    """``counts[i]``: the legal actions of row i of a C-contiguous bool mask, given as its
    bytes ``flags`` (rows of ``width``); the first row with none, -1 if every row has one."""
    words = width // 8
    for i in range(counts.shape[0]):
        at = i * width
        c = 0
        for w in range(words):
            c += _set_in_word(flags, at + 8 * w)
        for j in range(at + 8 * words, at + width):
            c += flags[j] != 0
        counts[i] = c
        if c == 0:
            return i
    return -1


@njit(cache=True)
def kth_legal(flags: np.ndarray, width: int, counts: np.ndarray, u: np.ndarray, out: np.ndarray):
    """``out[i]``: the k-th legal action of row i (from 0, in id order), k = floor(u[i] *
    counts[i]); whole words of the row are skipped while k is past them."""
    words = width // 8
    for i in range(counts.shape[0]):
        at = i * width
        k = np.int64(u[i] * counts[i])
        j = 0
        for w in range(words):
            c = _set_in_word(flags, at + 8 * w)
            if k < c:
                break
            k -= c
            j += 8
        while True:
            if flags[at + j]:
                if k == 0:
                    break
                k -= 1
            j += 1
        out[i] = j
