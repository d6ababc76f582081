"""The compiled twin of :class:`kdk_env.heuristic.HeuristicKdK`: its decisions, by batch.

Why it exists: self-play training, the evaluation in batch and the warm start seat heuristic
players in many games at once, and the readable agent plans in Python (30-50 µs a decision,
docs/results.md). :func:`act_batch` takes all their decisions of a tick in two calls of numba
kernels.

The readable agent is the reference (its class docstring gives the strategy in words). The
decision itself is already compiled: ``kdk_env/rollout.py`` is the numba twin of
``Decision`` for the search, over a *seen position* (``rollout.SN_*``, the fields of
``heuristic.Seen``) that it reads from an engine row. This module reads the same seen
position from an observation instead, as ``heuristic.Seen(obs)`` decodes it, and hands it to
``rollout.decide_seen``. ``tests/test_heuristic_kdk_batch.py`` compares the two agents on
thousands of recorded positions and step by step in games that the twin plays, action for
action and generator state for generator state.

Reading the observation: raw values straight from the float32 vector, with the layout's affine
map undone as ``heuristic._decode`` does (float64 ``(stored - shift) / scale``, snapped to the
nearest integer within 1e-3, whole numbers truncated; one-hot fields to the index of their
first largest value, -1 where a figure field is all zero). The map depends on the table
(players, rounds, deck), read from each row by ``observation.params_of``: one map per distinct
table in the batch, computed in Python and handed to the kernel with each row's index.
Field offsets and rules' ids are this module's globals, taken from ``kdk_env.observation`` and
``kdk_env.rules``: the cache guard below drops the compiled kernels when those change.

Ties: like the readable agent, a decision left to :func:`heuristic._pick` draws one number per
candidate, rows in order; the kernel first values every row, then the numbers of all rows
are drawn in one call (the same numbers as one call per row) and a second kernel picks. A row
with one legal action takes it and draws nothing.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kdk_env import observation as O
from kdk_env import rollout as RO
from kdk_env import rules as R
from tablegym import agent
from tablegym.agent import batch_of, legal_counts
from tablegym.numba_cache import drop_stale

# Modules compiled into this file's cached kernels: one rule (tablegym/numba_cache.py).
CACHE_FROZEN = (agent, O, RO, R)
drop_stale(__file__, *CACHE_FROZEN)

F, S, P, NUM_ACTIONS = R.NUM_FIGURES, R.NUM_SLOTS, R.MAX_PLAYERS, R.NUM_ACTIONS
NUM_PHASES, NUM_LEVELS = len(R.Phase), 3
_at = O.LAYOUT.at
O_HAND, O_OWN_DRAW, O_PLAYED = _at["hand"], _at["own_draw"], _at["played"]
O_DRAW_COUNT, O_COMBO_LEN, O_SERVES = _at["draw_count"], _at["combo_len"], _at["serves_since"]
O_ANNOUNCED, O_ANN_MADE, O_LAID_SINCE = _at["announced"], _at["ann_made"], _at["laid_since"]
O_TOP, O_SLOTS, O_PHASE, O_LEVEL = _at["top"], _at["slots"], _at["phase"], _at["level"]
# The columns observation.params_of reads: the seats in play, the rounds, the deck mode.
PARAMS = np.r_[O.LAYOUT.slices["seats"], _at["num_rounds"], _at["deck_mode"]]
W_LEGAL, W_ACTIONS, W_SIZE, V_SIZE = RO.W_LEGAL, RO.W_ACTIONS, RO.W_SIZE, RO.V_SIZE


@njit(cache=True, inline="always")
def _raw(obs, j, shift, scale):
    """The raw value at index j, as ``Layout.decode(raw=True)`` computes it."""
    x = (np.float64(obs[j]) - shift[j]) / scale[j]
    near = np.rint(x)
    return near if abs(x - near) < 1e-3 else x


@njit(cache=True, inline="always")
def _whole(obs, j, shift, scale):
    """The raw value at index j as a whole number (truncated, as ``int()``)."""
    return np.int64(_raw(obs, j, shift, scale))


@njit(cache=True)
def _index(obs, start, size, shift, scale, figure):
    """The index of the first largest raw value of a one-hot field; for a ``figure`` field
    (the top, a slot), -1 where it is all zero (no figure)."""
    best, best_x, nonzero = 0, -np.inf, False
    for k in range(size):
        x = _raw(obs, start + k, shift, scale)
        nonzero |= x != 0
        if x > best_x:
            best, best_x = k, x
    return -1 if figure and not nonzero else best


@njit(cache=True)
def _seen(obs, shift, scale, sn):
    """``heuristic.Seen(obs)``: the seen position of the observer, into ``sn`` (``RO.SN_*``)."""
    sn[RO.SN_LEVEL] = 8 + _index(obs, O_LEVEL, NUM_LEVELS, shift, scale, False)
    sn[RO.SN_PHASE] = _index(obs, O_PHASE, NUM_PHASES, shift, scale, False)
    for f in range(F):
        sn[RO.SN_HAND + f] = _whole(obs, O_HAND + f, shift, scale)
        sn[RO.SN_OWN_DRAW + f] = _whole(obs, O_OWN_DRAW + f, shift, scale)
        sn[RO.SN_PLAYED + f] = _whole(obs, O_PLAYED + f, shift, scale)  # my row: the first
    sn[RO.SN_DRAW_COUNT] = _whole(obs, O_DRAW_COUNT, shift, scale)
    sn[RO.SN_TOP] = _index(obs, O_TOP, F, shift, scale, True)
    sn[RO.SN_COMBO] = _whole(obs, O_COMBO_LEN, shift, scale)
    sn[RO.SN_ANNOUNCED] = _whole(obs, O_ANNOUNCED, shift, scale)
    sn[RO.SN_ANN_MADE] = _raw(obs, O_ANN_MADE, shift, scale) != 0
    sn[RO.SN_SERVES] = _whole(obs, O_SERVES, shift, scale)
    # §3.3: my ambassador may not open or serve while another player is announced and (his is
    # the only announcement or some announcer has laid since announcing).
    count, others, laid = 0, False, False
    for r in range(P):
        if _raw(obs, O_ANNOUNCED + r, shift, scale) > 0:
            count += 1
            others |= r > 0
            laid |= _raw(obs, O_LAID_SINCE + r, shift, scale) != 0
    sn[RO.SN_AMB_BANNED] = sn[RO.SN_LEVEL] >= 9 and others and (count == 1 or laid)
    for k in range(S):
        sn[RO.SN_SLOTS + k] = _index(obs, O_SLOTS + F * k, F, shift, scale, True)


@njit(cache=True)
def _decide_rows(obs, mask, affine, table, out, actions, values, counts):
    """Every row's decision: the action in ``out[i]`` (``counts[i]`` = 0), or ``counts[i]``
    candidates in ``actions[i]`` and ``values[i]`` for :func:`_pick_rows`."""
    w, v = np.empty(W_SIZE, dtype=np.int64), np.empty(V_SIZE)
    for i in range(obs.shape[0]):
        count = 0
        for a in range(NUM_ACTIONS):
            if mask[i, a]:
                w[W_LEGAL + count] = a
                count += 1
        counts[i] = 0
        if count == 1:  # the agent takes it without looking
            out[i] = w[W_LEGAL]
            continue
        shift, scale = affine[table[i], 0], affine[table[i], 1]
        _seen(obs[i], shift, scale, w)
        m = RO.decide_seen(w, count, v)
        if m == 0:
            out[i] = w[W_ACTIONS]
        else:
            counts[i] = m
            for j in range(m):
                actions[i, j] = w[W_ACTIONS + j]
                values[i, j] = v[j]


@njit(cache=True)
def _pick_rows(actions, values, counts, noise, out):
    """``heuristic._pick`` on the rows with candidates, taking their numbers in row order."""
    used = 0
    for i in range(counts.shape[0]):
        best, best_v = actions[i, 0], -1e9
        for j in range(counts[i]):
            x = values[i, j] + noise[used] * 1e-6
            used += 1
            if x > best_v:
                best, best_v = actions[i, j], x
        if counts[i]:
            out[i] = best


_MAPS: dict[bytes, np.ndarray] = {}  # the PARAMS columns' bytes -> their (shift, scale)


def _map_of(params: np.ndarray) -> np.ndarray:
    """Float64 ``(2, OBS_SIZE)``: the shift and scale of an observation whose PARAMS columns
    hold ``params`` (remembered: a batch has a table or two, and this costs 0.1 ms)."""
    key = params.tobytes()
    found = _MAPS.get(key)
    if found is None:
        if len(_MAPS) >= 256:
            _MAPS.clear()
        vec = np.zeros(O.OBS_SIZE, dtype=params.dtype)
        vec[PARAMS] = params
        scale, shift = O.LAYOUT.affine(**O.params_of(vec))
        found = _MAPS[key] = np.stack([shift, scale]).astype(np.float64)
    return found


def _affine(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Float64 ``(tables, 2, OBS_SIZE)`` shift and scale, one per distinct table of the rows,
    and each row's index into it."""
    params = obs[:, PARAMS]
    if (params == params[0]).all():  # one table, as in a batch of one game's options
        return _map_of(params[0])[None], np.zeros(len(obs), dtype=np.int64)
    unique, table = np.unique(params, axis=0, return_inverse=True)
    maps = np.stack([_map_of(row) for row in unique])
    return maps, table.astype(np.int64).ravel()


def act_batch(obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Int64 ``(k,)``: the action ``HeuristicKdK`` takes in each row of ``obs`` (k, OBS_SIZE)
    and ``mask`` (k, NUM_ACTIONS), drawing from ``rng`` what it would draw, rows in order."""
    obs, mask = batch_of(obs, mask, O.OBS_SIZE, NUM_ACTIONS)
    out = np.empty(len(obs), dtype=np.int64)
    if not len(obs):
        return out
    legal_counts(mask)  # a row with nothing to choose from is a caller's mistake
    affine, table = _affine(obs)
    actions = np.empty((len(obs), NUM_ACTIONS), dtype=np.int64)
    values = np.empty((len(obs), NUM_ACTIONS))
    counts = np.empty(len(obs), dtype=np.int64)
    _decide_rows(obs, mask, affine, table, out, actions, values, counts)
    noise = rng.random(int(counts.sum()))
    _pick_rows(actions, values, counts, noise, out)
    if not mask[np.arange(len(obs)), out].all():  # a bug here must not make an illegal move
        raise AssertionError(f"heuristic_batch chose an illegal action: {out.tolist()}")
    return out
