"""King Up! determinisation: ``rules.sample_state`` keeps what a seat sees, redraws the rest."""

from __future__ import annotations

import numpy as np
import pytest

from kingup_env import rules as R
from kingup_env.observation import encode
from kingup_env.rules import NO, NOT_VOTED, VOTED_NO, VOTED_YES, YES, Phase
from tests.kingup_positions import crown_round, election, new_game, random_positions


@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_sample_never_changes_the_observation(n):
    rng = np.random.default_rng(n)
    positions = random_positions(n, games=6, seed=n)
    assert any(s.phase is Phase.VOTE for s in positions)
    for s in positions:
        for seat in range(n):
            sample = R.sample_state(s, seat, rng)
            assert np.array_equal(encode(sample, seat), encode(s, seat))


@pytest.mark.parametrize("n", [3, 6])
def test_sample_is_a_consistent_state(n):
    rng = np.random.default_rng(1)
    for s in random_positions(n, games=3, seed=10 + n):
        seat = int(rng.integers(n))
        sample = R.sample_state(s, seat, rng)
        # The same cards, none duplicated; the seat's own card and vote stay.
        assert sorted(sample.favourites + sample.deck) == sorted(s.favourites + s.deck)
        assert len(set(sample.favourites)) == n
        assert sample.favourites[seat] == s.favourites[seat]
        assert sample.votes[seat] == s.votes[seat]
        for p in range(n):
            assert (sample.votes[p] == NOT_VOTED) == (s.votes[p] == NOT_VOTED)
            if sample.votes[p] == VOTED_NO:
                assert s.no_left[p] > 0  # a NO needs a NO card
        # Public fields are untouched, and no card revealed at a round end is dealt again.
        keep = ("floors", "no_left", "round_scores", "revealed", "to_play", "crown", "no_voters")
        assert all(getattr(sample, f) == getattr(s, f) for f in keep)
        shown = {card for row in s.revealed[: s.round] for card in row}  # earlier rounds
        assert shown.isdisjoint(sample.favourites[:seat] + sample.favourites[seat + 1 :])
        assert shown.isdisjoint(sample.deck)


def test_sample_can_be_played_to_the_end():
    rng = np.random.default_rng(2)
    for s in random_positions(4, games=2, seed=3)[::5]:
        t = R.sample_state(s, max(s.to_play, 0), rng)
        while not R.is_terminal(t):
            legal = R.legal_actions(t)
            t = R.apply_action(t, legal[rng.integers(len(legal))])
        assert R.winners(t)


def test_sample_varies_the_hidden_parts():
    s = random_positions(4, games=1, seed=5)[3]
    assert s.phase is not Phase.GAME_OVER
    rng = np.random.default_rng(0)
    samples = [R.sample_state(s, 0, rng) for _ in range(200)]
    for p in (1, 2, 3):
        # Each other card is drawn from the 22 cards seat 0 has not seen.
        seen = {x.favourites[p] for x in samples}
        assert len(seen) >= 15 and s.favourites[0] not in seen
    assert len({x.deck for x in samples}) > 150


def test_cards_of_earlier_rounds_are_never_redrawn():
    s = crown_round(crown_round(new_game(6)))  # 12 cards revealed, 6 dealt, 8 in the deck
    rng = np.random.default_rng(0)
    pools = {c for _ in range(100) for c in R.sample_state(s, 0, rng).favourites[1:]}
    assert pools == set(s.favourites[1:] + s.deck)  # the 13 cards seat 0 has not seen


def test_unrevealed_votes_are_resampled_but_own_vote_kept():
    # Seat 0 voted YES, seat 1 voted NO; seat 2 is to vote and cannot tell how they voted.
    s = election(mover=0, votes=(YES, NO))
    rng = np.random.default_rng(0)
    samples = [R.sample_state(s, 2, rng) for _ in range(200)]
    assert {x.votes[:2] for x in samples} == {
        (a, b) for a in (VOTED_YES, VOTED_NO) for b in (VOTED_YES, VOTED_NO)
    }
    assert all(x.votes[2:] == (NOT_VOTED, NOT_VOTED) for x in samples)
    # Seat 1 knows its own NO.
    assert all(R.sample_state(s, 1, rng).votes[1] == VOTED_NO for _ in range(50))


def test_a_seat_without_no_cards_has_voted_yes():
    s = election(mover=0, votes=(YES,))
    s = s._replace(no_left=(0,) + s.no_left[1:])
    rng = np.random.default_rng(0)
    assert all(R.sample_state(s, 1, rng).votes[0] == VOTED_YES for _ in range(50))


def test_finished_game_is_returned_unchanged():
    s = random_positions(3, games=1, seed=0)[-1]
    assert R.is_terminal(s)
    assert R.sample_state(s, 0, np.random.default_rng(0)) is s
