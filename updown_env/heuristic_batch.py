"""The compiled twin of :class:`updown_env.heuristic.HeuristicUpDown`: many decisions per call.

Why it exists: in self-play training (``training/collector.py``) and in the evaluation during
training, heuristic seats are taken many at once, and the readable agent (most of its time in
``Table.card_scores`` and ``Table.opponent_cards``) took most of the wall time (measurements:
docs/results.md). :func:`act_batch` decides a whole batch of rows in one call of numba kernels.

The readable agent is the reference: its docstring states the strategy in words, and this
module repeats its computation step by step under the same names: ``read_table`` is
``Table.__init__``; ``opponent_cards``, ``card_scores``, ``future``, ``rules_value``,
``action_value`` and ``beats`` are the methods and the function of the same name; ``act_row``
is ``HeuristicUpDown.act``. The weights are the agent's class attributes and the tables its own
(``best_weights``, ``DICE``), read at import. Nothing here is an idea of its own: a change of
strategy is made in the readable agent first and copied here, and
``tests/test_heuristic_updown_batch.py`` compares the value of every legal action in thousands
of positions (to 1e-9) and the actions chosen.

Reading: the kernels take raw values straight from the observation vector: ``LAYOUT.at`` gives
each field's start and ``LAYOUT.affine`` its scale and shift, and a value is decoded as
``Layout.decode(raw=True)`` does it. The fields read here have bounds that do not depend on
the options (checked at import), so one affine fits every table size and number of rounds.

Ties: as in the readable agent, a row with more than one legal action adds ``1e-9`` times a
uniform draw to each legal action's value. The draws come from the generator passed in, in row
order, so ``act_batch(obs, mask, np.random.default_rng(s))`` draws exactly what
``HeuristicUpDown(s).act`` draws when called on the rows one after another (a row with one
legal action draws nothing there either).

numba caches the kernels beside this file.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from tablegym import agent
from tablegym.agent import batch_of
from tablegym.numba_cache import drop_stale
from updown_env import heuristic, observation, rules
from updown_env.heuristic import DICE, VALUES, HeuristicUpDown, best_weights
from updown_env.observation import LAYOUT, OBS_SIZE
from updown_env.rules import (
    DOWN,
    FLIP,
    MAX_PLAYERS,
    MIN_VALUE,
    NUM_ACTIONS,
    NUM_CARDS,
    NUM_SUITS,
    NUM_VALUES,
    PLAY,
    ROLL,
    ROTATE,
    UP,
)

# Modules compiled into this file's cached kernels: one rule (tablegym/numba_cache.py).
CACHE_FROZEN = (agent, heuristic, observation, rules)
drop_stale(__file__, *CACHE_FROZEN)

# -- what the kernels read, computed once ----------------------------------------------------

# Observation fields read, in the order of ``AT`` (the start index of each).
FIELDS = ("hand", "my_choice", "played", "side", "suits", "trump", "chosen", "pot", "hand_sizes",
          "num_players")  # fmt: skip
(A_HAND, A_MY_CHOICE, A_PLAYED, A_SIDE, A_SUITS, A_TRUMP, A_CHOSEN, A_POT, A_HAND_SIZES,
 A_N) = range(len(FIELDS))  # fmt: skip
AT = np.array([LAYOUT.at[name] for name in FIELDS], dtype=np.int64)


def _affine() -> tuple[np.ndarray, np.ndarray]:
    """The layout's ``(scale, shift)`` as float64 (``decode`` computes in float64), the same
    for every option on the fields read (ImportError if not)."""
    scale, shift = LAYOUT.affine(num_players=MAX_PLAYERS, num_rounds=1)
    read = np.concatenate([np.arange(OBS_SIZE)[LAYOUT.slices[name]] for name in FIELDS])
    for n in range(2, MAX_PLAYERS + 1):
        for num_rounds in (1, 2, 5):
            s, b = LAYOUT.affine(num_players=n, num_rounds=num_rounds)
            if not (np.array_equal(s[read], scale[read]) and np.array_equal(b[read], shift[read])):
                raise ImportError(
                    f"a field read by {__name__} scales differently with {n} players and "
                    f"{num_rounds} rounds: read its affine per row"
                )
    return scale.astype(np.float64), shift.astype(np.float64)


SCALE, SHIFT = _affine()
# The shapes the kernels index the fields by.
_SHAPES = {
    "hand": (NUM_CARDS,),
    "my_choice": (NUM_CARDS,),
    "played": (MAX_PLAYERS, NUM_CARDS),
    "side": (2,),
    "suits": (MAX_PLAYERS, NUM_SUITS),
    "trump": (NUM_VALUES,),
    "chosen": (MAX_PLAYERS,),
    "pot": (1,),
    "hand_sizes": (MAX_PLAYERS,),
    "num_players": (MAX_PLAYERS - 1,),
}
if {name: LAYOUT.shapes[name] for name in FIELDS} != _SHAPES:
    raise ImportError(f"{__name__} reads the observation fields as shaped {_SHAPES}")

# The agent's weights, in the order of ``WEIGHTS``.
W_STRONG, W_KEEP, W_DENY, W_HAND = range(4)
WEIGHTS = np.array(
    [HeuristicUpDown.strong, HeuristicUpDown.keep, HeuristicUpDown.deny, HeuristicUpDown.hand]
)
# BEST[u, k, i] = best_weights(u, k)[i] (0 for k = 0, which no opponent has: they always hold
# a card while someone still chooses).
BEST = np.zeros((NUM_CARDS + 1, NUM_CARDS + 1, NUM_CARDS))
for _u in range(1, NUM_CARDS + 1):
    for _k in range(1, _u + 1):
        BEST[_u, _k, :_u] = best_weights(_u, _k)
# DICE_BY_VALUE[t - MIN_VALUE] = DICE[t].
DICE_BY_VALUE = np.array([DICE[t] for t in VALUES])

# -- the kernels' working arrays ---------------------------------------------------------------

# A decision's table (``Table``): one int64 row with named columns.
T_N, T_SIDE, T_TRUMP, T_POT, T_NUM_HAND, T_NUM_OUT = range(6)
T_SUITS = 6  # MAX_PLAYERS entries: per seat its own suit, relative (0 is me, then clockwise)
T_HELD = T_SUITS + MAX_PLAYERS  # per seat, cards held when the trick began (0 unused)
T_HAND = T_HELD + MAX_PLAYERS  # NUM_CARDS entries: my cards ascending, T_NUM_HAND of them
T_IS_OUT = T_HAND + NUM_CARDS  # NUM_CARDS entries: 1 if the card id is still out, else 0
T_OUT_OF_VALUE = T_IS_OUT + NUM_CARDS  # NUM_VALUES entries: cards still out per value
TABLE_SIZE = T_OUT_OF_VALUE + NUM_VALUES
# ``opp[j, P_*]``: opponent j's (0 the next seat) list of ``Table.opponent_cards``. Its ranked
# (eligible) cards come first, trumps then the own suit: their values and chances are kept in
# order. The idle cards that follow all have one chance, and their values are those of the
# cards still out that are neither trumps nor of the opponent's suit: the chance is kept, the
# values are counted from the table when needed.
P_TRUMPS, P_RANKED, P_IDLE = range(3)  # how many trumps, how many ranked, the idle chance
# Working space of ``card_scores``, for the card being scored: the chance that this opponent
# plays a trump, and that they play another card that spoils mine.
P_TRUMP, P_OTHER = 3, 4
P_VALUE = 5  # NUM_CARDS entries: values of the ranked cards
P_CHANCE = P_VALUE + NUM_CARDS  # NUM_CARDS entries: their chances
OPP_SIZE = P_CHANCE + NUM_CARDS
# ``scores[h, S_*]``: the ``(score, p_win)`` of my h-th card (``Table.card_scores``).
S_SCORE, S_P_WIN = range(2)


# -- the kernels: one row ----------------------------------------------------------------------


@nb.njit(cache=True, inline="always")
def card_id(suit: int, value: int) -> int:
    """Card id of ``value`` (2..12) of ``suit`` (``rules.card_id``)."""
    return suit * NUM_VALUES + value - MIN_VALUE


@nb.njit(cache=True, inline="always")
def card_suit(card: int) -> int:
    """Suit index of a card id (``rules.card_suit``)."""
    return card // NUM_VALUES


@nb.njit(cache=True, inline="always")
def card_value(card: int) -> int:
    """Value 2..12 of a card id (``rules.card_value``)."""
    return card % NUM_VALUES + MIN_VALUE


@nb.njit(cache=True, inline="always")
def raw(obs: np.ndarray, i: int, scale: np.ndarray, shift: np.ndarray) -> float:
    """The raw value at index ``i``, as ``Layout.decode(raw=True)`` computes it."""
    x = (np.float64(obs[i]) - shift[i]) / scale[i]
    near = np.rint(x)
    return near if abs(x - near) < 1e-3 else x


@nb.njit(cache=True)
def raw_argmax(obs: np.ndarray, start: int, size: int, scale: np.ndarray, shift: np.ndarray) -> int:
    """``np.argmax`` of the raw values at ``start .. start + size - 1`` (the first maximum)."""
    best, best_x = 0, raw(obs, start, scale, shift)
    for i in range(1, size):
        x = raw(obs, start + i, scale, shift)
        if x > best_x:
            best, best_x = i, x
    return best


@nb.njit(cache=True)
def read_table(
    obs: np.ndarray, at: np.ndarray, scale: np.ndarray, shift: np.ndarray, table: np.ndarray
) -> None:
    """``table`` = the decision point of one observation row (``Table.__init__``)."""
    n = raw_argmax(obs, at[A_N], MAX_PLAYERS - 1, scale, shift) + 2
    table[T_N] = n
    num_hand = num_out = 0
    for i in range(NUM_VALUES):
        table[T_OUT_OF_VALUE + i] = 0
    for c in range(NUM_CARDS):
        mine = raw(obs, at[A_HAND] + c, scale, shift)
        if mine != 0:
            table[T_HAND + num_hand] = c
            num_hand += 1
        seen = mine + raw(obs, at[A_MY_CHOICE] + c, scale, shift)
        for j in range(MAX_PLAYERS):
            seen += raw(obs, at[A_PLAYED] + j * NUM_CARDS + c, scale, shift)
        out = seen == 0
        table[T_IS_OUT + c] = out
        table[T_OUT_OF_VALUE + card_value(c) - MIN_VALUE] += out
        num_out += out
    table[T_NUM_HAND] = num_hand
    table[T_NUM_OUT] = num_out
    for j in range(n):
        table[T_SUITS + j] = raw_argmax(obs, at[A_SUITS] + j * NUM_SUITS, NUM_SUITS, scale, shift)
    table[T_SIDE] = raw_argmax(obs, at[A_SIDE], 2, scale, shift)
    table[T_TRUMP] = raw_argmax(obs, at[A_TRUMP], NUM_VALUES, scale, shift) + MIN_VALUE
    table[T_POT] = int(raw(obs, at[A_POT], scale, shift))
    # Cards an opponent held when the trick began: a chosen card is one of them.
    for j in range(1, n):
        size = raw(obs, at[A_HAND_SIZES] + j, scale, shift)
        table[T_HELD + j] = int(size + raw(obs, at[A_CHOSEN] + j, scale, shift))


@nb.njit(cache=True)
def opponent_cards(
    table: np.ndarray,
    side: int,
    suits: np.ndarray,
    trump: int,
    weights: np.ndarray,
    best: np.ndarray,
    opp: np.ndarray,
) -> None:
    """``opp[j]``: opponent j's chances to play each card still out in this trick under the
    given rules (``Table.opponent_cards``, whose docstring gives the model; see ``P_*`` for
    how its list is kept)."""
    u = table[T_NUM_OUT]
    strong = weights[W_STRONG]
    plain = (1.0 - strong) / u if u else 0.0
    for j in range(1, table[T_N]):
        cards = opp[j - 1]
        if u == 0:  # nothing unseen: no opponent card can interfere
            cards[P_TRUMPS] = cards[P_RANKED] = cards[P_IDLE] = 0.0
            continue
        sj = suits[j]
        bw = best[u, min(table[T_HELD + j], u)]
        # Ranked: the trumps (by suit, as card ids go), then the own suit from the best value
        # down (UP: highest first).
        m = 0
        for suit in range(NUM_SUITS):
            if table[T_IS_OUT + card_id(suit, trump)]:
                cards[P_VALUE + m] = trump
                cards[P_CHANCE + m] = strong * bw[m] + plain
                m += 1
        cards[P_TRUMPS] = m
        for y in range(NUM_VALUES):
            v = MIN_VALUE + NUM_VALUES - 1 - y if side == UP else MIN_VALUE + y
            if v != trump and table[T_IS_OUT + card_id(sj, v)]:
                cards[P_VALUE + m] = v
                cards[P_CHANCE + m] = strong * bw[m] + plain
                m += 1
        cards[P_RANKED] = m
        idle = u - m
        cards[P_IDLE] = 0.0
        if idle:
            # Holding nothing eligible (the chance the last ranked card is not reached), they
            # throw any of their cards.
            reached = 0.0
            for i in range(m):
                reached += bw[i]
            p_none = 1.0 - reached
            cards[P_IDLE] = strong * p_none / idle + plain


@nb.njit(cache=True, inline="always")
def beats(w: float, v: int, side: int, trump: int) -> bool:
    """Whether an eligible value ``w`` beats my eligible ``v`` (different values; "A trick" 3c)."""
    if v == trump:
        return False  # my trump beats everything that does not match it
    if w == trump:
        return True
    return w > v if side == UP else w < v


@nb.njit(cache=True, inline="always")
def future(card: int, trump: int) -> float:
    """What keeping ``card`` is worth later: extreme values and the trump value."""
    v = card_value(card)
    return abs(v - 7) / 5 + (0.5 if v == trump else 0.0)


@nb.njit(cache=True)
def card_scores(
    table: np.ndarray,
    side: int,
    suits: np.ndarray,
    trump: int,
    weights: np.ndarray,
    best: np.ndarray,
    opp: np.ndarray,
    scores: np.ndarray,
) -> None:
    """``scores[h]``: (score to play it now, chance it wins) per card in hand under the given
    rules (``Table.card_scores``: the trick and pot I may take, less those an opponent may
    take, less what the card is worth kept)."""
    opponent_cards(table, side, suits, trump, weights, best, opp)
    num_opp = table[T_N] - 1
    num_hand = table[T_NUM_HAND]
    stake = 1.0 + table[T_POT]
    deny = weights[W_DENY] / num_opp
    keep = weights[W_KEEP] if num_hand > 1 else 0.0  # the last card has no future
    for h in range(num_hand):
        card = table[T_HAND + h]
        v = card_value(card)
        mine = v == trump or card_suit(card) == suits[0]  # 3b: a trump or my own suit
        threat = 0.0
        # The loops below add, in the order of each opponent's list, exactly the chances that
        # the readable loop adds (it adds nothing for the other cards), so the sums are the
        # same to the last bit.
        for j in range(num_opp):
            cards = opp[j]
            t = o = 0.0
            num_trumps, num_ranked = int(cards[P_TRUMPS]), int(cards[P_RANKED])
            for i in range(num_trumps):
                chance = cards[P_CHANCE + i]
                if v == trump:
                    o += chance  # 3a: equal values neutralise, trumps too
                else:
                    t += chance
                    threat += chance
            for i in range(num_trumps, num_ranked):
                w = cards[P_VALUE + i]
                chance = cards[P_CHANCE + i]
                if w == v:
                    o += chance
                elif not mine or beats(w, v, side, trump):
                    o += chance
                    threat += chance  # their card would win if no one else interferes
                else:
                    break  # ranked best first: no later card beats mine
            if v != trump:
                # The idle cards of my value: the ones out that are not of their suit.
                same = (
                    table[T_OUT_OF_VALUE + v - MIN_VALUE]
                    - table[T_IS_OUT + card_id(suits[j + 1], v)]
                )
                for _ in range(same):
                    o += cards[P_IDLE]
            # Per opponent, the chance of a trump and of any other card that spoils mine.
            cards[P_TRUMP] = t
            cards[P_OTHER] = o
        p_win = 0.0
        if mine:
            # No spoiler at all, less the cases where exactly one trump is played.
            p_win = 1.0
            for j in range(num_opp):
                p_win *= 1.0 - opp[j, P_OTHER]
            for j in range(num_opp):
                if opp[j, P_TRUMP] != 0.0:
                    rest = 1.0
                    for i in range(num_opp):
                        if i != j:
                            rest *= 1.0 - opp[i, P_TRUMP] - opp[i, P_OTHER]
                    p_win -= opp[j, P_TRUMP] * rest
        scores[h, S_SCORE] = stake * (p_win - deny * threat) - keep * future(card, trump)
        scores[h, S_P_WIN] = p_win


@nb.njit(cache=True)
def rules_value(
    table: np.ndarray,
    side: int,
    suits: np.ndarray,
    trump: int,
    weights: np.ndarray,
    best: np.ndarray,
    opp: np.ndarray,
    scores: np.ndarray,
) -> float:
    """How good rules are for me: my best play now, plus my hand's winning chances."""
    card_scores(table, side, suits, trump, weights, best, opp, scores)
    top = scores[0, S_SCORE]
    total = 0.0
    for h in range(table[T_NUM_HAND]):
        top = max(top, scores[h, S_SCORE])
        total += scores[h, S_P_WIN]
    return top + weights[W_HAND] * total


@nb.njit(cache=True)
def action_value(
    a: int,
    table: np.ndarray,
    now: np.ndarray,
    weights: np.ndarray,
    best: np.ndarray,
    dice: np.ndarray,
    opp: np.ndarray,
    scores: np.ndarray,
    turned: np.ndarray,
) -> float:
    """Heuristic value of a legal action; ``now``: the card scores under the current rules,
    filled by the caller before the first card action (``Table.action_value``)."""
    side = table[T_SIDE]
    trump = table[T_TRUMP]
    suits = table[T_SUITS : T_SUITS + MAX_PLAYERS]
    if a > ROLL:  # a card
        card = a - PLAY
        for h in range(table[T_NUM_HAND]):
            if table[T_HAND + h] == card:
                return now[h, S_SCORE]
        return -np.inf  # not in my hand: the readable agent raises (the mask is not this row's)
    if a == FLIP:
        flipped = DOWN if side == UP else UP
        return rules_value(table, flipped, suits, trump, weights, best, opp, scores)
    if a == ROLL:
        # "A trick" 1: re-rolled until it differs, so 2d6 conditioned on a new value.
        rest = 1.0 - dice[trump - MIN_VALUE]
        total = 0.0
        for t in range(MIN_VALUE, MIN_VALUE + NUM_VALUES):
            if t != trump:
                value = rules_value(table, side, suits, t, weights, best, opp, scores)
                total += dice[t - MIN_VALUE] / rest * value
        return total
    # ROTATE: the suit comes to me and every seat's suit turns by the same step.
    step = (a - ROTATE - suits[0]) % NUM_SUITS
    for j in range(table[T_N]):
        turned[j] = (suits[j] + step) % NUM_SUITS
    return rules_value(table, side, turned, trump, weights, best, opp, scores)


@nb.njit(cache=True)
def action_values_row(
    obs: np.ndarray,
    mask: np.ndarray,
    at: np.ndarray,
    scale: np.ndarray,
    shift: np.ndarray,
    weights: np.ndarray,
    best: np.ndarray,
    dice: np.ndarray,
    work: tuple,
    values: np.ndarray,
) -> None:
    """``values[a]`` = the value of each legal action of one row, -inf for illegal ones."""
    table, now, opp, scores, turned = work
    read_table(obs, at, scale, shift, table)
    scored = False
    for a in range(NUM_ACTIONS):
        if not mask[a]:
            values[a] = -np.inf
            continue
        if a > ROLL and not scored:  # one pass scores every card under the current rules
            suits = table[T_SUITS : T_SUITS + MAX_PLAYERS]
            card_scores(table, table[T_SIDE], suits, table[T_TRUMP], weights, best, opp, now)
            scored = True
        values[a] = action_value(a, table, now, weights, best, dice, opp, scores, turned)


@nb.njit(cache=True)
def act_row(
    obs: np.ndarray,
    mask: np.ndarray,
    noise: np.ndarray,
    at: np.ndarray,
    scale: np.ndarray,
    shift: np.ndarray,
    weights: np.ndarray,
    best: np.ndarray,
    dice: np.ndarray,
    work: tuple,
    values: np.ndarray,
) -> int:
    """The legal action of one row with the best value plus ``1e-9 * noise`` (one draw per
    legal action, in id order; ``HeuristicUpDown.act``)."""
    count = 0
    only = -1
    for a in range(NUM_ACTIONS):
        if mask[a]:
            count += 1
            only = a
    if count == 1:
        return only
    action_values_row(obs, mask, at, scale, shift, weights, best, dice, work, values)
    chosen, top = -1, -np.inf
    i = 0
    for a in range(NUM_ACTIONS):
        if mask[a]:
            v = values[a] + noise[i] * 1e-9
            i += 1
            if chosen < 0 or v > top:  # np.argmax: the first maximum
                chosen, top = a, v
    return chosen


@nb.njit(cache=True)
def _work() -> tuple:
    """The working arrays of one row, reused from row to row."""
    return (
        np.zeros(TABLE_SIZE, dtype=np.int64),
        np.zeros((NUM_CARDS, 2)),  # now: the card scores under the current rules
        np.zeros((MAX_PLAYERS - 1, OPP_SIZE)),  # opp
        np.zeros((NUM_CARDS, 2)),  # scores under rules being tried
        np.zeros(MAX_PLAYERS, dtype=np.int64),  # turned suits
    )


# -- the kernels: a batch, one row after another -----------------------------------------------


@nb.njit(cache=True)
def _act_rows(
    obs: np.ndarray,
    mask: np.ndarray,
    noise: np.ndarray,
    start: np.ndarray,
    at: np.ndarray,
    scale: np.ndarray,
    shift: np.ndarray,
    weights: np.ndarray,
    best: np.ndarray,
    dice: np.ndarray,
    actions: np.ndarray,
) -> None:
    """``actions[r]`` = :func:`act_row` of each row; row r's draws start at ``noise[start[r]]``."""
    work = _work()
    values = np.empty(NUM_ACTIONS)
    for r in range(obs.shape[0]):
        row_noise = noise[start[r] :]
        actions[r] = act_row(
            obs[r], mask[r], row_noise, at, scale, shift, weights, best, dice, work, values
        )


@nb.njit(cache=True)
def _values_rows(
    obs: np.ndarray,
    mask: np.ndarray,
    at: np.ndarray,
    scale: np.ndarray,
    shift: np.ndarray,
    weights: np.ndarray,
    best: np.ndarray,
    dice: np.ndarray,
    values: np.ndarray,
) -> None:
    """``values[r]`` = :func:`action_values_row` of each row."""
    work = _work()
    for r in range(obs.shape[0]):
        action_values_row(obs[r], mask[r], at, scale, shift, weights, best, dice, work, values[r])


# -- the public functions ------------------------------------------------------------------------


@nb.njit(cache=True)
def _draw_starts(mask: np.ndarray, start: np.ndarray) -> int:
    """``start[r]``: the index of row r's first tie-breaking draw, ``start[k]`` the number of
    draws (one per legal action of each row that has a choice); returns the first row with no
    legal action, or -1."""
    start[0] = 0
    for r in range(mask.shape[0]):
        count = 0
        for a in range(mask.shape[1]):
            count += mask[r, a]
        if count == 0:
            return r
        start[r + 1] = start[r] + (count if count > 1 else 0)
    return -1


def action_values(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Float64 ``(k, NUM_ACTIONS)``: the readable agent's value of each legal action, -inf
    for illegal ones."""
    obs, mask = batch_of(obs, mask, OBS_SIZE, NUM_ACTIONS)
    values = np.empty((len(obs), NUM_ACTIONS))
    _values_rows(obs, mask, AT, SCALE, SHIFT, WEIGHTS, BEST, DICE_BY_VALUE, values)
    return values


def act_batch(obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Int64 ``(k,)``: per row the action ``HeuristicUpDown.act`` takes; ties broken by ``rng``."""
    obs, mask = batch_of(obs, mask, OBS_SIZE, NUM_ACTIONS)
    start = np.empty(len(obs) + 1, dtype=np.int64)
    empty = _draw_starts(mask, start)
    if empty >= 0:
        raise ValueError(f"mask row {empty} allows no action: that seat is not to act")
    noise = rng.random(start[-1])  # in row order: see the module docstring
    actions = np.empty(len(obs), dtype=np.int64)
    _act_rows(obs, mask, noise, start, AT, SCALE, SHIFT, WEIGHTS, BEST, DICE_BY_VALUE, actions)
    return actions
