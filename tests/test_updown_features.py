"""Up & Down's per-card features (``updown_env.features``) against a reading of the state.

The features are computed from an observation with matrix products; the reference here counts
the same things card by card from the full state and the observer's seat, the way "A trick" of
``docs/updown_rules.md`` states them, on positions of random games at every table size.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import make, random_playout

from updown_env import features, observation
from updown_env import rules as R

CARDS = range(R.NUM_CARDS)


def reference(state: R.State, seat: int) -> np.ndarray:
    """The feature vector of ``seat``'s observation, counted card by card from ``state``."""
    n = state.num_players
    hand = set(R.cards_of(state.hands[seat]))
    seen = set(hand)
    for q in range(n):
        seen |= set(R.cards_of(state.played[q]))
    if state.pending[seat] != R.NO_CARD:
        seen.add(state.pending[seat])
    unseen = [c for c in CARDS if c not in seen]
    suits = R.own_suits(state)
    others = {suits[q] for q in range(n) if q != seat}
    value = R.card_value

    def beaten(c: int, side: int) -> float:
        sign = 1 if side == R.UP else -1
        rivals = [x for x in unseen if R.card_suit(x) in others and value(x) != state.trump]
        return sum(sign * (value(x) - value(c)) > 0 for x in rivals) / features.BEATEN_SCALE

    blocks = np.zeros((5, R.NUM_CARDS))
    for c in hand:
        trump = value(c) == state.trump
        blocks[0, c] = trump
        blocks[1, c] = R.card_suit(c) == suits[seat] and not trump
        blocks[2, c] = beaten(c, state.side)
        blocks[3, c] = beaten(c, 1 - state.side)
        blocks[4, c] = sum(1 for x in unseen if value(x) == value(c)) / 3
    trumps_out = sum(1 for x in unseen if value(x) == state.trump) / 4
    suit_out = np.zeros(R.MAX_PLAYERS)
    for rel in range(n):  # rows of the observation are seats relative to the observer
        q = (seat + rel) % n
        suit_out[rel] = sum(1 for x in unseen if R.card_suit(x) == suits[q]) / 11
    return np.concatenate([blocks.ravel(), [trumps_out], suit_out])


@pytest.mark.parametrize("n", [2, 3, 4])
def test_features_count_what_the_state_shows(n: int) -> None:
    checked = 0
    for seed in range(3):
        for step, game in enumerate(random_playout(make("updown", n), seed)):
            if step % 3:
                continue
            state = game.game_state
            for seat in range(n):
                got = features.card_features(observation.encode(state, seat))
                np.testing.assert_allclose(got, reference(state, seat), atol=1e-6)
                checked += 1
    assert checked > 50


def test_rows_and_single_vectors_agree() -> None:
    game = make("updown", 3)
    obs = np.stack(
        [observation.encode(g.game_state, 0) for _, g in zip(range(20), random_playout(game, 7))]
    )
    rows = features.card_features(obs)
    assert rows.shape == (20, features.SIZE) and rows.dtype == np.float32
    for i in range(20):
        np.testing.assert_array_equal(features.card_features(obs[i]), rows[i])
    assert 0 <= rows.min() and rows.max() <= 1
