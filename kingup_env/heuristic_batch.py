"""The compiled twin of :class:`kingup_env.heuristic.HeuristicKingUp`: its decisions, by batch.

Why it exists: self-play training (``training/collector.py``) seats heuristic opponents in many
games at once, and the readable agent took most of the wall time (measurements:
docs/results.md). :func:`act_batch` takes all their decisions of a tick in one call of numba
kernels.

The readable agent is the reference: its module docstring gives the strategy in words, and each
kernel here mirrors the ``Board`` method or helper of the same name step by step (``_board`` is
``Board.__init__``), one observation at a time, in a serial loop over the rows (batches are
10–300 rows, too few for ``prange``). ``tests/test_heuristic_kingup_batch.py`` replays thousands
of positions of 3 to 6 players through both and compares the value of every legal action and
the action chosen wherever the best value is not tied. Change the readable agent first, then
this twin, then run that test.

Where the twin computes differently, to the same result: the value of a placement or a climb
is the sums of the castle before the move plus the change at the moved candidate (one
candidate's work instead of thirteen's); the opponent model adds up each candidate's cards
instead of multiplying by the incidence matrix; only the revealed cards of finished rounds and
seats in play are read (the other rows are zero). Sums run in other orders than numpy's, so
values agree to about 1e-13, not bit for bit.

Reading the observation: the kernels read raw field values straight from the float32 vector and
undo the layout's affine map as ``LAYOUT.decode(obs, raw=True)`` does (float64
``(stored - shift) / scale``, snapped to the nearest integer within 1e-3). Field offsets and
shapes come from ``LAYOUT``, the rules' ids from ``kingup_env.rules`` and the heuristic's
parameters from the readable module, all handed to the kernels in the small arrays of
``CONSTS``, built at import: numba's cache is keyed on this file alone, so a number of another
module frozen into a cached kernel would go stale when that module changed.

Ties: like the readable agent, a row with more than one legal action adds
``rng.random(number of legal actions) * 1e-6`` to their values, rows in order (drawn in one
call, which gives the same numbers as one call per row), so :func:`act_batch` chooses as one
``HeuristicKingUp`` with that generator would on the rows in turn. A row with one legal action
takes it and draws nothing.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from kingup_env import heuristic as H
from kingup_env import observation, rules
from kingup_env.observation import LAYOUT, OBS_SIZE
from kingup_env.rules import (
    CLIMB,
    ELIMINATED,
    FAVOURITE_CARDS,
    MAX_ROUND_SCORE,
    NO,
    NUM_ACTIONS,
    NUM_CANDIDATES,
    THRONE,
    UNPLACED,
    YES,
    candidate_points,
    climb_of,
    place_of,
)
from tablegym import agent
from tablegym.agent import batch_of, legal_counts
from tablegym.numba_cache import drop_stale

# Modules compiled into this file's cached kernels: one rule (tablegym/numba_cache.py).
CACHE_FROZEN = (agent, H, observation, rules)
drop_stale(__file__, *CACHE_FROZEN)

# -- constants, as arrays for the kernels ------------------------------------------------------

# ``ints`` (CONSTS[0]): where the observation fields read here start, their sizes, rules' ids.
(
    I_CASTLE, I_MINE, I_NO_LEFT, I_SEATS, I_ROUND, I_NO_VOTES, I_TOTALS, I_REVEALED,
    I_CANDIDATES, I_CASTLE_COLS, I_SEAT_ROWS, I_ROUNDS,
    I_UNPLACED, I_THRONE, I_ELIMINATED, I_CLIMB, I_YES, I_NO, I_ZERO_SCORES_ROUND, I_CARDS,
    NUM_INTS,
) = range(21)  # fmt: skip
# ``floats`` (CONSTS[1]): the heuristic's parameters and the points of the scorer.
(
    F_NO_ON_HELD, F_YES_ON_HELD, F_P_NO_IF_NOT_HELD, F_CARRY_ON, F_MAX_ROUND_SCORE,
    F_KING_POINTS, F_EXPOSURE,  # F_EXPOSURE + floor: the weight of EXPOSURE, 0 for other floors
) = range(7)  # fmt: skip
NUM_FLOATS = F_EXPOSURE + THRONE + 1
# ``actions`` (CONSTS[4]): per action id, its candidate (placements and climbs, else -1) and,
# for placements, its floor (else -1), as rules.place_of and rules.climb_of unpack them.
A_CANDIDATE, A_FLOOR = range(2)


def _consts() -> tuple[np.ndarray, ...]:
    """``(ints, floats, scale, shift, actions, holders, card_of)`` for the kernels."""
    at, shapes = LAYOUT.at, LAYOUT.shapes
    ints = np.zeros(NUM_INTS, dtype=np.int64)
    fields = ("castle", "my_favourites", "no_cards_left", "seats", "round", "no_votes",
              "totals", "revealed_cards")  # fmt: skip
    for i, name in enumerate(fields):
        ints[I_CASTLE + i] = at[name]
    ints[I_CANDIDATES], ints[I_CASTLE_COLS] = shapes["castle"]
    ints[I_SEAT_ROWS] = shapes["seats"][0]
    ints[I_ROUNDS] = shapes["round"][0]
    ints[I_UNPLACED], ints[I_THRONE], ints[I_ELIMINATED] = UNPLACED, THRONE, ELIMINATED
    ints[I_CLIMB], ints[I_YES], ints[I_NO] = CLIMB, YES, NO
    # Scoring: "third round only: exactly 0 scores 33" (Board.values, rules.score_card).
    ints[I_ZERO_SCORES_ROUND] = 2
    ints[I_CARDS] = len(H.CARDS)
    assert shapes["no_votes"] == (NUM_CANDIDATES, ints[I_SEAT_ROWS])
    assert shapes["revealed_cards"] == (ints[I_ROUNDS], ints[I_SEAT_ROWS], NUM_CANDIDATES)
    assert H.CARDS.shape[1] == NUM_CANDIDATES

    floats = np.zeros(NUM_FLOATS, dtype=np.float64)
    floats[F_NO_ON_HELD], floats[F_YES_ON_HELD] = H.NO_ON_HELD, H.YES_ON_HELD
    floats[F_P_NO_IF_NOT_HELD], floats[F_CARRY_ON] = H.P_NO_IF_NOT_HELD, H.CARRY_ON
    floats[F_MAX_ROUND_SCORE] = MAX_ROUND_SCORE
    floats[F_KING_POINTS] = candidate_points(THRONE)
    for floor, weight in H.EXPOSURE.items():
        floats[F_EXPOSURE + floor] = weight

    # decode(raw=True) computes in float64 from the float32 affine map; so do the kernels.
    scale, shift = (x.astype(np.float64) for x in LAYOUT.affine())

    actions = np.full((2, NUM_ACTIONS), -1, dtype=np.int64)
    for a in range(CLIMB):
        actions[A_CANDIDATE, a], actions[A_FLOOR, a] = place_of(a)
    for a in range(CLIMB, YES):
        actions[A_CANDIDATE, a] = climb_of(a)

    # The card id of a card's set of candidates, by the 13-bit mask of that set (-1: no card).
    card_of = np.full(1 << NUM_CANDIDATES, -1, dtype=np.int64)
    for k, card in enumerate(FAVOURITE_CARDS):
        card_of[sum(1 << c for c in card)] = k
    # The cards each candidate is on (H.CARDS by columns), in card order, padded with -1.
    on = [np.flatnonzero(column) for column in H.CARDS.T]
    holders = np.full((NUM_CANDIDATES, max(map(len, on))), -1, dtype=np.int64)
    for c, cards in enumerate(on):
        holders[c, : len(cards)] = cards
    assert set(np.unique(H.CARDS)) <= {0.0, 1.0}  # an incidence matrix: w @ CARDS adds up w
    return ints, floats, scale, shift, actions, holders, card_of


CONSTS = _consts()


# -- reading the observation ---------------------------------------------------------------------


@nb.njit(cache=True, inline="always")
def _raw(row: np.ndarray, consts: tuple, i: int) -> float:
    """Entry ``i`` of ``row`` as ``LAYOUT.decode(raw=True)`` gives it."""
    scale, shift = consts[2], consts[3]
    x = (np.float64(row[i]) - shift[i]) / scale[i]
    near = np.rint(x)
    return near if abs(x - near) < 1e-3 else x


@nb.njit(cache=True)
def _argmax(row: np.ndarray, consts: tuple, start: int, size: int) -> int:
    """``np.argmax`` of the raw entries ``start .. start + size - 1`` (the first maximum)."""
    best, best_x = 0, _raw(row, consts, start)
    for j in range(1, size):
        x = _raw(row, consts, start + j)
        if x > best_x:
            best, best_x = j, x
    return best


@nb.njit(cache=True)
def _card_id(row: np.ndarray, consts: tuple, start: int) -> int:
    """The card whose candidates are the raw nonzero entries from ``start``; -1 if none is."""
    ints, card_of = consts[0], consts[6]
    bits = 0
    for c in range(ints[I_CANDIDATES]):
        if _raw(row, consts, start + c) != 0:
            bits |= 1 << c
    if bits == 0:
        return -1
    k = card_of[bits]
    if k < 0:
        raise ValueError("the observation shows a set of candidates that is no favourite card")
    return k


# -- the board: Board.__init__ and the opponent model ---------------------------------------------


@nb.njit(cache=True)
def _scratch(consts: tuple) -> tuple:
    """The arrays one board and its action values are worked out in, reused row after row."""
    ints = consts[0]
    c, p, k = ints[I_CANDIDATES], ints[I_SEAT_ROWS], ints[I_CARDS]
    return (
        np.zeros(c, dtype=np.int64),  # pos
        np.zeros(c),  # mine
        np.zeros(p, dtype=np.int64),  # no_left
        np.zeros(p),  # totals
        np.zeros((p - 1, c)),  # held, row r - 1 for relative seat r
        np.zeros(c),  # p_killed
        np.zeros(k),  # prior over the cards
        np.zeros(k),  # w
        np.zeros(c, dtype=np.int64),  # after: a castle after one move
        np.zeros(c, dtype=np.int64),  # base: the castle the moves start from
        np.zeros(p - 1),  # opp: the opponents' expected points in ``base``
    )


@nb.njit(cache=True)
def _board(row: np.ndarray, consts: tuple, scratch: tuple) -> tuple:
    """Board.__init__: ``(n, round, pos, mine, no_left, totals, held, p_killed)`` of ``row``."""
    ints, floats = consts[0], consts[1]
    pos, mine, no_left, totals, held, p_killed, prior, w = scratch[:8]
    num_c, cols = ints[I_CANDIDATES], ints[I_CASTLE_COLS]
    seats = 0.0
    for s in range(ints[I_SEAT_ROWS]):
        seats += _raw(row, consts, ints[I_SEATS] + s)
    n = int(seats)
    rnd = _argmax(row, consts, ints[I_ROUND], ints[I_ROUNDS])
    for c in range(num_c):
        mine[c] = _raw(row, consts, ints[I_MINE] + c)
        # Positions: castle column 0 unplaced, 1..6 floors 0..5, 7 throne, 8 eliminated.
        pos[c] = _argmax(row, consts, ints[I_CASTLE] + cols * c, cols) - 1
    for s in range(n):
        no_left[s] = int(_raw(row, consts, ints[I_NO_LEFT] + s))
        totals[s] = _raw(row, consts, ints[I_TOTALS] + s)
    _dealt_cards(row, consts, n, rnd, prior)
    _opponent_model(row, consts, n, pos, prior, w, held)
    # Chance per candidate that some opponent holding a NO card votes NO on it.
    p_no = floats[F_P_NO_IF_NOT_HELD]
    for c in range(num_c):
        spared = 1.0
        for r in range(1, n):
            if no_left[r] > 0:
                spared *= 1.0 - p_no * (1.0 - held[r - 1, c])
        p_killed[c] = 1.0 - spared
    return n, rnd, pos, mine, no_left, totals, held, p_killed


@nb.njit(cache=True)
def _dealt_cards(row: np.ndarray, consts: tuple, n: int, rnd: int, prior: np.ndarray) -> None:
    """_dealt_cards as the prior of the opponent model: 0 for mine and every card revealed at
    an earlier round end (nobody else can hold them now), 1 for the others."""
    ints = consts[0]
    num_c, p = ints[I_CANDIDATES], ints[I_SEAT_ROWS]
    prior[:] = 1.0
    prior[_card_id(row, consts, ints[I_MINE])] = 0.0
    # Only the rounds before this one and the seats in play have revealed cards: the rows the
    # readable agent also reads are all zero, and skipping them halves the reading.
    for i in range(rnd):
        for s in range(n):
            card = _card_id(row, consts, ints[I_REVEALED] + num_c * (p * i + s))
            if card >= 0:
                prior[card] = 0.0


@nb.njit(cache=True)
def _opponent_model(
    row: np.ndarray,
    consts: tuple,
    n: int,
    pos: np.ndarray,
    prior: np.ndarray,
    w: np.ndarray,
    held: np.ndarray,
) -> None:
    """Board._opponent_model into ``held``: chance that opponent r (row r - 1) holds each
    candidate."""
    ints, floats, holders = consts[0], consts[1], consts[5]
    num_c, p = ints[I_CANDIDATES], ints[I_SEAT_ROWS]
    for r in range(1, n):
        w[:] = prior
        for c in range(num_c):
            if pos[c] != ints[I_ELIMINATED]:
                continue
            # Every seat voted in a failed election: NO is revealed, the rest were YES.
            voted_no = _raw(row, consts, ints[I_NO_VOTES] + p * c + r) != 0
            likelihood = floats[F_NO_ON_HELD] if voted_no else floats[F_YES_ON_HELD]
            for k in holders[c]:
                if k >= 0:
                    w[k] *= likelihood
        # w @ CARDS / w.sum(): per candidate, the weights of the cards it is on.
        total = w.sum()
        for c in range(num_c):
            on = 0.0
            for k in holders[c]:
                if k >= 0:
                    on += w[k]
            held[r - 1, c] = on / total


# -- values ----------------------------------------------------------------------------------------


@nb.njit(cache=True)
def _values(board: tuple, pos: np.ndarray, final: bool, consts: tuple) -> float:
    """Board.values of one castle ``pos``: my lead over the others if the round were scored so."""
    ints, floats = consts[0], consts[1]
    n, rnd, _, mine, _, totals, held, _ = board
    throne, king = ints[I_THRONE], floats[F_KING_POINTS]
    my = 0.0
    for c in range(pos.size):
        my += _points(pos[c], throne, king) * mine[c]
    if final and rnd == ints[I_ZERO_SCORES_ROUND] and my == 0:
        my = floats[F_MAX_ROUND_SCORE]
    opp_sum, opp_max = 0.0, -np.inf
    for r in range(1, n):
        opp = 0.0
        for c in range(pos.size):
            opp += _points(pos[c], throne, king) * held[r - 1, c]
        opp += totals[r]
        opp_sum += opp
        opp_max = max(opp_max, opp)
    return totals[0] + my - 0.5 * (opp_sum / (n - 1)) - 0.5 * opp_max


@nb.njit(cache=True)
def _base_points(board: tuple, base: np.ndarray, opp: np.ndarray, consts: tuple) -> float:
    """My points in castle ``base`` (returned) and each opponent's expected points (``opp``,
    row r - 1 for relative seat r), the sums of Board.values before the totals."""
    ints, floats = consts[0], consts[1]
    n, mine, held = board[0], board[3], board[6]
    throne, king = ints[I_THRONE], floats[F_KING_POINTS]
    my = 0.0
    for c in range(base.size):
        my += _points(base[c], throne, king) * mine[c]
    for r in range(1, n):
        opp[r - 1] = 0.0
        for c in range(base.size):
            opp[r - 1] += _points(base[c], throne, king) * held[r - 1, c]
    return my


@nb.njit(cache=True)
def _moved_values(
    board: tuple,
    base: np.ndarray,
    my: float,
    opp: np.ndarray,
    c: int,
    floor: int,
    consts: tuple,
) -> float:
    """Board.values of ``base`` with candidate ``c`` moved to ``floor`` (below the throne),
    from the sums of ``base`` (:func:`_base_points`) plus the change at ``c``: the same number
    up to rounding, with one candidate's work instead of all thirteen's."""
    ints, floats = consts[0], consts[1]
    n, mine, totals, held = board[0], board[3], board[5], board[6]
    throne, king = ints[I_THRONE], floats[F_KING_POINTS]
    change = _points(floor, throne, king) - _points(base[c], throne, king)
    my += change * mine[c]
    opp_sum, opp_max = 0.0, -np.inf
    for r in range(1, n):
        theirs = opp[r - 1] + change * held[r - 1, c] + totals[r]
        opp_sum += theirs
        opp_max = max(opp_max, theirs)
    return totals[0] + my - 0.5 * (opp_sum / (n - 1)) - 0.5 * opp_max


@nb.njit(cache=True, inline="always")
def _points(p: int, throne: int, king: float) -> float:
    """Points of a candidate at position ``p``: the floor, the king's, or 0 (out or unplaced)."""
    if 0 <= p < throne:
        return float(p)
    return king if p == throne else 0.0


@nb.njit(cache=True)
def _exposure(board: tuple, c: int, floor: int, consts: tuple) -> float:
    """Board.exposure of my favourite ``c`` at ``floor``: its floor lost to a push and a NO."""
    mine, p_killed = board[3], board[7]
    return mine[c] * consts[1][F_EXPOSURE + floor] * p_killed[c] * floor


@nb.njit(cache=True)
def _no_card_cost(board: tuple) -> float:
    """Board.no_card_cost: little while I have spares, more for the last."""
    return 1.0 if board[4][0] >= 2 else 2.5


@nb.njit(cache=True)
def _vote_value(board: tuple, c: int, vote_no: bool, after: np.ndarray, consts: tuple) -> float:
    """Board.vote_value: crowned, the round ends as it stands; out, the lead is discounted."""
    ints, floats = consts[0], consts[1]
    pos, p_killed = board[2], board[7]
    after[:] = pos
    after[c] = ints[I_THRONE]
    crowned = _values(board, after, True, consts)
    after[c] = ints[I_ELIMINATED]
    out = floats[F_CARRY_ON] * _values(board, after, False, consts)
    if vote_no:
        return out - _no_card_cost(board)
    p_pass = 1.0 - p_killed[c]
    return p_pass * crowned + (1.0 - p_pass) * out


@nb.njit(cache=True)
def _my_vote_is_no(board: tuple, c: int, after: np.ndarray, consts: tuple) -> bool:
    """Board.my_vote_is_no: never NO on my own favourite, else by vote_value."""
    mine, no_left = board[3], board[4]
    if mine[c] != 0 or no_left[0] == 0:
        return False
    no = _vote_value(board, c, True, after, consts)
    return no > _vote_value(board, c, False, after, consts)


# -- actions ---------------------------------------------------------------------------------------


@nb.njit(cache=True)
def _action_values(
    board: tuple, legal: np.ndarray, scratch: tuple, consts: tuple, out: np.ndarray
) -> None:
    """Board.action_values into ``out[a]`` for each legal ``a`` (all of one phase)."""
    ints, actions = consts[0], consts[4]
    pos = board[2]
    after, base, opp = scratch[8], scratch[9], scratch[10]
    throne = ints[I_THRONE]
    first = 0
    while not legal[first]:
        first += 1
    if first >= ints[I_YES]:
        king = 0
        while pos[king] != throne:
            king += 1  # the vote phase always has a candidate on the throne
        for a in range(first, legal.size):
            if legal[a]:
                out[a] = _vote_value(board, king, a == ints[I_NO], after, consts)
        return
    climbing = first >= ints[I_CLIMB]
    for c in range(pos.size):
        # Moving up: the castle as it is. Placing: the candidates nobody places will go to
        # floor 0.
        base[c] = 0 if not climbing and pos[c] == ints[I_UNPLACED] else pos[c]
    my = _base_points(board, base, opp, consts)
    for a in range(first, legal.size):
        if not legal[a]:
            continue
        c = actions[A_CANDIDATE, a]
        # Moving up: one floor more, or, from floor 5, an election I can foresee.
        floor = pos[c] + 1 if climbing else actions[A_FLOOR, a]
        if floor == throne:
            no = _my_vote_is_no(board, c, after, consts)
            out[a] = _vote_value(board, c, no, after, consts)
        else:
            values = _moved_values(board, base, my, opp, c, floor, consts)
            out[a] = values - _exposure(board, c, floor, consts)


@nb.njit(cache=True)
def _action_values_batch(obs: np.ndarray, mask: np.ndarray, consts: tuple, out: np.ndarray) -> None:
    """Board(row).action_values of every row into ``out`` (left as it is at illegal actions)."""
    scratch = _scratch(consts)
    for i in range(obs.shape[0]):
        board = _board(obs[i], consts, scratch)
        _action_values(board, mask[i], scratch, consts, out[i])


@nb.njit(cache=True)
def _act_batch(
    obs: np.ndarray, mask: np.ndarray, noise: np.ndarray, consts: tuple, out: np.ndarray
) -> None:
    """HeuristicKingUp.act on every row: the best legal value plus its tie-breaking noise."""
    scratch = _scratch(consts)
    values = np.empty(mask.shape[1])
    used = 0
    for i in range(obs.shape[0]):
        legal = mask[i]
        count, best = 0, -1
        for a in range(legal.size):
            if legal[a]:
                count += 1
                best = a if best < 0 else best
        if count > 1:
            _action_values(_board(obs[i], consts, scratch), legal, scratch, consts, values)
            best_value = -np.inf
            for a in range(legal.size):
                if legal[a]:
                    v = values[a] + noise[used] * 1e-6
                    used += 1
                    if v > best_value:  # the first maximum, as np.argmax
                        best, best_value = a, v
        out[i] = best


# -- the public functions -------------------------------------------------------------------------


def action_values(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Float64 ``(k, NUM_ACTIONS)``: ``Board.action_values`` per row, -inf at illegal actions."""
    obs, mask = batch_of(obs, mask, OBS_SIZE, NUM_ACTIONS)
    legal_counts(mask)  # a row with nothing to value is a caller's mistake
    out = np.full(mask.shape, -np.inf)
    _action_values_batch(obs, mask, CONSTS, out)
    return out


def act_batch(obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Int64 ``(k,)``: the action ``HeuristicKingUp`` takes in each row; ``rng`` breaks ties."""
    obs, mask = batch_of(obs, mask, OBS_SIZE, NUM_ACTIONS)
    counts = legal_counts(mask)
    # One noise per legal action of the rows that have a choice, in row order.
    noise = rng.random(int(counts.sum() - (counts == 1).sum()))
    out = np.empty(len(obs), dtype=np.int64)
    _act_batch(obs, mask, noise, CONSTS, out)
    return out
