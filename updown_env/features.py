"""Per-card features of an Up & Down observation, for networks that read it.

"A trick" of ``docs/updown_rules.md`` decides a trick by products of conditions: a card wins if
its value is unique among the cards played (3a) and it is a trump (3c), or it is of its
player's own suit and the best such card under the side in force (3b). An MLP over the
observation sees each condition as a separate one-hot and must learn every product; these
features compute the products for the cards in the observer's hand, from the observation
alone (nothing hidden is read):

| block | width | content, per card of the hand (0 for cards not in it) |
|---|---|---|
| ``trump`` | 44 | the card's value is the trump value |
| ``own`` | 44 | the card is of the observer's own suit and not a trump |
| ``beaten_now`` | 44 | unseen cards that beat it under the side in force, ÷ 30 (see below) |
| ``beaten_flipped`` | 44 | the same under the other side (what FLIP would make of it), ÷ 30 |
| ``twins`` | 44 | unseen cards of the same value (each would neutralise it), ÷ 3 |
| ``trumps_out`` | 1 | unseen cards of the trump value, ÷ 4 |
| ``suit_out`` | 4 | per seat (relative, as ``suits``), unseen cards of its own suit, ÷ 11 |

The cards that beat one are the unseen non-trump cards of the other seats' own suits with a
higher value (UP) or a lower one (DOWN). "Unseen" is every card not in the hand, not the
observer's chosen card and not revealed this round: the other hands, their pending choices
and the set-aside cards, which the observer cannot tell apart.

:func:`feature_blocks` is written with matrix products, slices and arithmetic only, so the
same code computes the features on numpy arrays and on torch tensors (``constants`` converted
to the tensor type), and the network's two forward passes, torch's and
:class:`training.ppo_agent.NumpyPolicy`'s, cannot drift apart.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from updown_env.observation import LAYOUT
from updown_env.rules import MAX_PLAYERS, MIN_VALUE, NUM_CARDS, NUM_SUITS, card_suit, card_value

SIZE = 5 * NUM_CARDS + 1 + MAX_PLAYERS  # 225
BEATEN_SCALE = 30.0  # three other seats' suits of 10 non-trump values each
_HAND = LAYOUT.slices["hand"]
_UP = LAYOUT.at["side"]  # the side field is one-hot UP, DOWN


def constants() -> dict[str, np.ndarray]:
    """The fixed matrices :func:`feature_blocks` multiplies by (float32, by name)."""
    n = LAYOUT.size
    cards = range(NUM_CARDS)
    suit = np.array([card_suit(c) for c in cards])
    value = np.array([card_value(c) for c in cards])
    trump = np.zeros((n, NUM_CARDS), np.float32)  # trump one-hot -> the cards of that value
    trump[LAYOUT.at["trump"] + value - MIN_VALUE, list(cards)] = 1
    suits = LAYOUT.at["suits"]  # 4 x 4, row = seat, column = suit
    own = np.zeros((n, NUM_CARDS), np.float32)
    own[suits + suit, list(cards)] = 1
    others = np.zeros((n, NUM_CARDS), np.float32)
    for seat in range(1, MAX_PLAYERS):
        others[suits + seat * NUM_SUITS + suit, list(cards)] = 1
    seen = np.zeros((n, NUM_CARDS), np.float32)
    for field, rows in (("hand", 1), ("my_choice", 1), ("played", MAX_PLAYERS)):
        for row in range(rows):
            seen[LAYOUT.at[field] + row * NUM_CARDS + np.arange(NUM_CARDS), list(cards)] = 1
    per_seat_suit = np.zeros((n, MAX_PLAYERS * NUM_CARDS), np.float32)
    for seat in range(MAX_PLAYERS):  # seat's own suit -> the cards of that suit, in seat's block
        per_seat_suit[suits + seat * NUM_SUITS + suit, seat * NUM_CARDS + np.arange(NUM_CARDS)] = 1
    return {
        "trump": trump,
        "own": own,
        "others": others,
        "seen": seen,
        "per_seat_suit": per_seat_suit,
        # [x, c] = 1 where card x beats card c: a higher value under UP, a lower under DOWN.
        "above": (value[:, None] > value[None, :]).astype(np.float32),
        "below": (value[:, None] < value[None, :]).astype(np.float32),
        "twin": ((value[:, None] == value[None, :]) & ~np.eye(NUM_CARDS, dtype=bool)).astype(
            np.float32
        ),
        "sum": np.ones((NUM_CARDS, 1), np.float32),
        "sum_seats": np.kron(np.eye(MAX_PLAYERS), np.ones((NUM_CARDS, 1))).astype(np.float32),
        "repeat": np.tile(np.eye(NUM_CARDS, dtype=np.float32), MAX_PLAYERS),
    }


def feature_blocks(obs: Any, k: dict[str, Any]) -> list[Any]:
    """The feature blocks of rows ``obs`` (the table above, in order), as ``obs``'s array type;
    ``k`` is :func:`constants` in that type. Concatenate them along axis 1."""
    hand = obs[:, _HAND]
    up, down = obs[:, _UP : _UP + 1], obs[:, _UP + 1 : _UP + 2]
    trump = obs @ k["trump"]
    unseen = 1 - obs @ k["seen"]
    rivals = unseen * (obs @ k["others"]) * (1 - trump)
    above, below = rivals @ k["above"], rivals @ k["below"]
    tile = unseen @ k["repeat"]  # unseen, once per seat block
    return [
        hand * trump,
        hand * (obs @ k["own"]) * (1 - trump),
        hand * (up * above + down * below) / BEATEN_SCALE,
        hand * (down * above + up * below) / BEATEN_SCALE,
        hand * (unseen @ k["twin"]) / 3,
        (unseen * trump) @ k["sum"] / 4,
        (tile * (obs @ k["per_seat_suit"])) @ k["sum_seats"] / 11,
    ]


def card_features(obs: np.ndarray) -> np.ndarray:
    """The features of rows of observations (or of one), as float32 numpy."""
    x = np.asarray(obs, dtype=np.float32)
    rows = x.reshape(-1, LAYOUT.size)
    out = np.concatenate(feature_blocks(rows, _numpy_constants()), axis=1)
    return out if x.ndim == 2 else out[0]


_CONSTANTS: dict[str, np.ndarray] = {}


def _numpy_constants() -> dict[str, np.ndarray]:
    if not _CONSTANTS:
        _CONSTANTS.update(constants())
    return _CONSTANTS
