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

:func:`feature_blocks` is written with slices, index arrays, matrix products and arithmetic
only, so the same code computes the features on numpy arrays and on torch tensors
(``constants`` converted to the tensor type), and the network's two forward passes, torch's and
:class:`training.ppo_agent.NumpyPolicy`'s, cannot drift apart.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from updown_env.observation import LAYOUT
from updown_env.rules import MAX_PLAYERS, MIN_VALUE, NUM_CARDS, NUM_SUITS, card_suit, card_value

SIZE = 5 * NUM_CARDS + 1 + MAX_PLAYERS  # 225
BEATEN_SCALE = 30.0  # three other seats' suits of 10 non-trump values each
_UP = LAYOUT.at["side"]  # the side field is one-hot UP, DOWN


def constants() -> dict[str, np.ndarray]:
    """The fixed arrays :func:`feature_blocks` reads by (int64 indices into the observation,
    float32 matrices to multiply by)."""
    suit = np.array([card_suit(c) for c in range(NUM_CARDS)])
    value = np.array([card_value(c) for c in range(NUM_CARDS)])
    seats = np.arange(MAX_PLAYERS)[:, None]
    return {
        # Per card: where the observation says its value is the trump value, and where it says
        # that seat j (row j) owns its suit (``suits`` is 4 x 4, row = seat, column = suit).
        "trump_at": (LAYOUT.at["trump"] + value - MIN_VALUE).astype(np.int64),
        "suit_at": (LAYOUT.at["suits"] + seats * NUM_SUITS + suit).astype(np.int64),
        # [x, c] = 1 where card x beats card c: a higher value under UP, a lower under DOWN.
        "above": (value[:, None] > value[None, :]).astype(np.float32),
        "below": (value[:, None] < value[None, :]).astype(np.float32),
        "twin": ((value[:, None] == value[None, :]) & ~np.eye(NUM_CARDS, dtype=bool)).astype(
            np.float32
        ),
        "sum": np.ones((NUM_CARDS, 1), np.float32),
    }


def _cards(obs: Any, field: str, row: int = 0) -> Any:
    start = LAYOUT.at[field] + row * NUM_CARDS
    return obs[:, start : start + NUM_CARDS]


def feature_blocks(obs: Any, k: dict[str, Any]) -> list[Any]:
    """The feature blocks of rows ``obs`` (the table above, in order; ``suit_out`` one column
    per seat), as ``obs``'s array type; ``k`` is :func:`constants` in that type. Concatenate
    them along axis 1."""
    hand = _cards(obs, "hand")
    up, down = obs[:, _UP : _UP + 1], obs[:, _UP + 1 : _UP + 2]
    seen = hand + _cards(obs, "my_choice")
    for seat in range(MAX_PLAYERS):
        seen = seen + _cards(obs, "played", seat)
    unseen = 1 - seen
    trump = obs[:, k["trump_at"]]
    owner = [obs[:, k["suit_at"][seat]] for seat in range(MAX_PLAYERS)]
    rivals = unseen * (owner[1] + owner[2] + owner[3]) * (1 - trump)
    above, below = rivals @ k["above"], rivals @ k["below"]
    return [
        hand * trump,
        hand * owner[0] * (1 - trump),
        hand * (up * above + down * below) / BEATEN_SCALE,
        hand * (down * above + up * below) / BEATEN_SCALE,
        hand * (unseen @ k["twin"]) / 3,
        (unseen * trump) @ k["sum"] / 4,
        *((unseen * owned) @ k["sum"] / 11 for owned in owner),
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
