"""Up & Down determinisation: ``rules.sample_state`` redraws exactly what a seat cannot see.

"Hidden information" of ``docs/updown_rules.md``: others' hands, others' unrevealed choices
and the set-aside cards are never observable; everything else, and one's own hand and choice,
is. A sample must keep the latter and may change only the former.
"""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from updown_positions import is_whole, mask, reshuffle_hidden
from updown_positions import positions as _positions

from updown_env import observation
from updown_env import rules as R
from updown_env.rules import NO_CARD, Phase

PLAYER_COUNTS = [2, 3, 4]
HIDDEN = {"hands", "pending", "aside"}


# -- what the seat sees is kept --------------------------------------------------------------


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_sample_keeps_the_observation_and_changes_only_the_hidden(n):
    rng = np.random.default_rng(n)
    positions = changed = 0
    for state in _positions(n, games=8, num_rounds=2):
        for seat in range(n):
            sample = R.sample_state(state, seat, rng)
            assert np.array_equal(
                observation.encode(sample, seat), observation.encode(state, seat)
            ), f"seat {seat} can tell the sample from the position"
            # Public fields are untouched; the seat's own hand and choice too.
            for name in R.State._fields:
                if name not in HIDDEN:
                    assert getattr(sample, name) == getattr(state, name), name
            assert sample.hands[seat] == state.hands[seat]
            assert sample.pending[seat] == state.pending[seat]
            # Public sizes: every hand, who has chosen, the set-aside pile.
            assert [h.bit_count() for h in sample.hands] == [h.bit_count() for h in state.hands]
            assert [c == NO_CARD for c in sample.pending] == [c == NO_CARD for c in state.pending]
            assert sample.aside.bit_count() == state.aside.bit_count()
            assert is_whole(sample)
            positions += 1
            changed += sample != state
    # Nearly every position has something hidden; a uniform redeal rarely lands on the truth.
    assert changed > 0.95 * positions


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_the_observation_names_every_card_the_sample_may_move(n):
    # "Complete public information": the cards a seat cannot place from its observation (its
    # hand, its choice, this round's revealed cards) are exactly the pool sample_state redeals.
    for state in _positions(n, games=2, num_rounds=2):
        for seat in range(n):
            raw = observation.decode(observation.encode(state, seat))
            seen = raw["hand"] + raw["my_choice"] + raw["played"].sum(axis=0)
            others = [s for s in range(n) if s != seat]
            pool = mask(*(state.pending[s] for s in others if state.pending[s] != NO_CARD))
            pool |= state.aside | mask(*(c for s in others for c in R.cards_of(state.hands[s])))
            assert set(np.flatnonzero(seen == 0)) == set(R.cards_of(pool))


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_sample_depends_only_on_what_the_seat_has_seen(n):
    # The strongest no-leak check: two positions the seat cannot tell apart give the very same
    # sample from the same random draws, so nothing of the hidden truth can leak into it.
    shuffler = random.Random(n)
    for state in _positions(n, games=3):
        for seat in range(n):
            twin = reshuffle_hidden(state, seat, shuffler)
            a = R.sample_state(state, seat, np.random.default_rng(7))
            b = R.sample_state(twin, seat, np.random.default_rng(7))
            assert a == b


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_a_sample_is_a_playable_state(n):
    rng = np.random.default_rng(10 + n)
    pick = random.Random(n)
    for i, state in enumerate(_positions(n, games=2, num_rounds=2, seed=n)):
        if i % 7:
            continue  # every seventh position keeps the playouts few
        seat = i % n
        sample = R.sample_state(state, seat, rng)
        if seat == state.to_play:
            # The seat to act sees its own options, so they are the same in the sample.
            assert R.legal_actions(sample) == R.legal_actions(state)
        steps = 0
        while not R.is_terminal(sample):
            legal = R.legal_actions(sample)
            assert legal
            sample = R.apply_action(sample, pick.choice(legal), rng)
            assert is_whole(sample)
            steps += 1
            assert steps < 1000
        assert R.winners(sample)
        assert sum(sample.tricks) + sample.lost == R.tricks_played(sample)


# -- the redeal is uniform -------------------------------------------------------------------


def test_unseen_cards_are_dealt_uniformly():
    # Seat 1 of 3 in mid-trick: seat 0 (the leader) has chosen, seat 2 has not. Each card
    # seat 1 has not seen must land in each unseen place in proportion to its size.
    state = next(
        s
        for s in _positions(3, games=1, seed=4)
        if s.phase is Phase.CHOOSE and s.to_play == (s.leader + 2) % 3 and s.played[0]
    )
    seat = (state.leader + 1) % 3
    assert state.pending[seat] != NO_CARD and state.pending[(seat + 1) % 3] == NO_CARD
    others = [s for s in range(3) if s != seat]
    places = {f"hand{s}": state.hands[s].bit_count() for s in others}
    places["pending"] = 1
    places["aside"] = state.aside.bit_count()
    unseen = sum(places.values())
    rng = np.random.default_rng(0)
    draws = 6000
    counts: Counter[tuple[str, int]] = Counter()
    for _ in range(draws):
        sample = R.sample_state(state, seat, rng)
        for s in others:
            for c in R.cards_of(sample.hands[s]):
                counts[f"hand{s}", c] += 1
        counts["pending", sample.pending[state.leader]] += 1
        for c in R.cards_of(sample.aside):
            counts["aside", c] += 1
    pool = {c for (_, c) in counts}
    assert len(pool) == unseen
    for place, size in places.items():
        expected = draws * size / unseen
        for c in pool:
            # Binomial sd is below sqrt(expected); 5 sd leaves no room for flakiness.
            assert abs(counts[place, c] - expected) < 5 * expected**0.5 + 1, (place, c)


def test_nothing_hidden_is_left_unchanged_at_the_end():
    # With 4 players no card is set aside: once the game is over nothing is hidden.
    end = next(s for s in _positions(4, games=1) if R.is_terminal(s))
    assert R.sample_state(end, 0, np.random.default_rng(0)) == end
