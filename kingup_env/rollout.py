"""King Up!'s rollout module for search on the batched engine (see ``agents/engine_rollout.py``).

:func:`policy` is the compiled twin of ``kingup_env.heuristic.rollout_policy``: every seat
plays by its own card (votes NO at the measured rates, places and pushes its favourites), on
one row of ``kingup_env/engine.py`` instead of a ``rules.State``. It draws its uniform numbers
with ``engine_rollout.uniform`` where the readable policy calls ``rand.random()``, in the same
order, so given the same numbers both choose the same move
(``tests/test_engine_rollout.py``). The other functions adapt the engine's own per-row code.

Measured (``python benchmarks/bench_search.py --parts policy``): see the README's search table.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kingup_env import engine as E
from kingup_env import heuristic as H
from kingup_env.heuristic import P_CLIMB_OWN, P_PLACE_OWN, P_PUSH_OTHER, P_ROLLOUT_NO
from tablegym import kernels as G
from tablegym.kernels import uniform
from tablegym.numba_cache import drop_stale

ENGINE = E
# Modules compiled into this file's cached kernels: one rule (tablegym/numba_cache.py).
CACHE_FROZEN = (E, G, H)
drop_stale(__file__, *CACHE_FROZEN)

# ON_CARD[k, c]: candidate c is on favourite card k.
ON_CARD = np.zeros((E.NUM_CARDS, E.C), dtype=np.bool_)
for _k in range(E.NUM_CARDS):
    ON_CARD[_k, E.CARDS[_k]] = True
# By NO cards held (0 never asks): the chance of a NO on a candidate not on one's card.
NO_RATE = np.array([0.0, P_ROLLOUT_NO[1], P_ROLLOUT_NO[2]])
PUSH_UNTIL = P_CLIMB_OWN + P_PUSH_OTHER  # the readable policy's sum, rounded as it rounds it
SCRATCH = 2 * E.NUM_POSITIONS


@njit(cache=True)
def policy(st, consts, rngs):
    """The rollout policy's move for the seat to play (``kingup_env.heuristic.rollout_policy``)."""
    p = st[E.TO_PLAY]
    own = ON_CARD[st[E.FAVOURITES + p]]
    no_left = st[E.NO_LEFT + p]
    if st[E.PHASE] == E.VOTE_PHASE:
        if own[st[E.CANDIDATE]] or no_left == 0:
            return E.YES
        return E.NO if uniform(rngs) < NO_RATE[min(no_left, 2)] else E.YES
    legal = np.empty(E.NUM_ACTIONS, dtype=np.int64)
    count = E.legal_row(st, consts[0], legal, np.empty(SCRATCH, dtype=np.int64))
    r = uniform(rngs)
    group = np.empty(count, dtype=np.int64)
    k = 0
    if st[E.PHASE] == E.PLACE_PHASE:
        if r < P_PLACE_OWN:
            for j in range(count):
                a = legal[j]  # own favourites onto floors 2..4
                c, floor = E.place_of(a)
                if own[c] and floor > 1:
                    group[k] = a
                    k += 1
    elif r < PUSH_UNTIL:
        mine = r < P_CLIMB_OWN  # push own low favourites, else others' high ones
        for j in range(count):
            c = legal[j] - E.CLIMB
            if own[c] == mine and (st[E.FLOORS + c] < 4) == mine:
                group[k] = legal[j]
                k += 1
    if k == 0:
        group, k = legal, count
    return group[int(uniform(rngs) * k)]


@njit(cache=True)
def apply(st, consts, action, rngs):
    """Play a legal action (the engine's ``apply_row``; King Up! draws no chance after the deal)."""
    E.apply_row(st, action, consts[0], consts[1], consts[3], consts[4])


@njit(cache=True)
def is_over(st):
    """``rules.is_terminal``."""
    return st[E.PHASE] == E.OVER_PHASE


@njit(cache=True)
def to_play(st):
    """``state.to_play``."""
    return st[E.TO_PLAY]


@njit(cache=True)
def legal(st, consts, out):
    """``rules.legal_actions`` into ``out``; their number."""
    return E.legal_row(st, consts[0], out, np.empty(SCRATCH, dtype=np.int64))


@njit(cache=True)
def scores(st, consts, out):
    """``rules.scores``: points per seat over the finished rounds."""
    for s in range(consts[0]):
        t = 0
        for r in range(st[E.ROUNDS_DONE]):
            t += st[E.ROUND_SCORES + E.P * r + s]
        out[s] = t


@njit(cache=True)
def winners(st, consts, out):
    """``rules.winners`` as 0/1 flags (the engine's win reward is +1 for exactly those)."""
    n = consts[0]
    reward = np.empty(n)
    E.rewards_row(st, st[E.ROUNDS_DONE], n, E.WIN, reward)
    k = 0
    for s in range(n):
        out[s] = reward[s] > 0
        k += out[s]
    return k


# -- the search's kernels (agents/engine_rollout.py) ------------------------------------------


@njit(cache=True)
def play_out(st, consts, rngs, n, cutoff, out):
    """Play on by the policy to the end, or (``cutoff``) until the scores change; values."""
    start, now = np.empty(n), np.empty(n)
    scores(st, consts, start)
    while not is_over(st):
        apply(st, consts, policy(st, consts, rngs), rngs)
        if cutoff:
            scores(st, consts, now)
            if not is_over(st) and G.changed(start, now, n):
                G.cutoff_value(now, n, out)
                return
    flags = np.zeros(n, dtype=np.int64)
    winners(st, consts, flags)
    G.terminal_value(flags, n, out)


@njit(cache=True)
def race(row, consts, moves, seed, n, cutoff, out):
    """Each move played in a copy of ``row`` and then played out, from the same generator."""
    st, rngs = np.empty_like(row), np.empty(1, dtype=np.uint64)
    for j in range(moves.shape[0]):
        st[:] = row
        rngs[0] = seed
        apply(st, consts, moves[j], rngs)
        play_out(st, consts, rngs, n, cutoff, out[j])


@njit(cache=True)
def advance(st, consts, rngs, seat):
    """The policy's moves for the other seats until ``seat`` is to play or the game ends."""
    while not is_over(st) and to_play(st) != seat:
        apply(st, consts, policy(st, consts, rngs), rngs)
