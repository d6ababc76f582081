"""KdK determinisation: ``rules.sample_state`` keeps what a seat sees and re-deals the rest.

What a seat sees is its observation (spec §8.2): everything public plus its own hand and the
composition of its own draw pile. Hidden, and so re-dealt: the other hands and draw piles,
each from its owner's own cards (§2.2), and the order of every draw pile.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from kdk_positions import build, counts, positions

from kdk_env import rules as R
from kdk_env.observation import encode
from kdk_env.rules import Phase

HIDDEN = ("hand", "draw")
CONFIGS = list(itertools.product((2, 3, 4, 5), (8, 9, 10), ("one_colour", "own_decks")))


def owned(s: R.State, p: int) -> tuple[int, ...]:
    """All of p's cards by figure, wherever they are (hand, draw, played, box, slots)."""
    box = [0] * R.NUM_FIGURES
    for owner, f, _ in s.box:
        if owner == p:
            box[f] += 1
    pile = s.draw[p]
    return tuple(
        s.hand[p][f] + s.played[p][f] + pile.count(f) + box[f] + s.slots[p].count(f)
        for f in range(R.NUM_FIGURES)
    )


def hidden(s: R.State, p: int) -> list[int]:
    """p's hand and draw pile together, as a sorted list of figures."""
    return sorted(R._expand(s.hand[p]) + list(s.draw[p]))


def check_sample(s: R.State, sample: R.State, seat: int) -> None:
    """The sample is a valid state that ``seat`` cannot tell from ``s``."""
    assert np.array_equal(encode(sample, seat), encode(s, seat))
    # Only hands and draw piles change; everything public is the same object content.
    assert sample._replace(hand=s.hand, draw=s.draw) == s
    assert sample.hand[seat] == s.hand[seat]
    assert sorted(sample.draw[seat]) == sorted(s.draw[seat])
    for p in range(s.config.num_players):
        assert owned(sample, p) == s.config.deck, f"cards of seat {p} not conserved"
        assert hidden(sample, p) == hidden(s, p), f"seat {p}'s hidden cards changed"
        assert sum(sample.hand[p]) == sum(s.hand[p])
        assert len(sample.draw[p]) == len(s.draw[p])
    if s.to_play == seat:  # the seat's own choices are exactly the same
        assert R.legal_actions(sample) == R.legal_actions(s)
    check_recall(sample, seat)


def check_recall(sample: R.State, seat: int) -> None:
    """The public facts of perfect recall hold in the sample (``rules.State`` comments)."""
    for p in range(sample.config.num_players):
        pile = sample.draw[p]
        bottom = min(len(pile), sum(sample.recycled[p]))
        assert all(pile[:bottom].count(f) <= sample.recycled[p][f] for f in range(R.NUM_FIGURES))
        assert all(h >= t for h, t in zip(sample.hand[p], sample.taken[p]))
        unknown = [h - t for h, t in zip(sample.hand[p], sample.taken[p])]
        assert not any(unknown[f] and sample.lacks[p] >> f & 1 for f in range(R.NUM_FIGURES))


# -- what the seat sees ---------------------------------------------------------------------
@pytest.mark.parametrize("n, level, deck_mode", CONFIGS)
def test_sample_never_changes_what_the_seat_sees(n, level, deck_mode):
    rng = np.random.default_rng(n * 100 + level)
    states = positions(n, level, deck_mode, seed=n * 10 + level)
    phases = {s.phase for s in states}
    assert {Phase.WINDOW, Phase.DUTY, Phase.GAME_OVER} <= phases
    for s in states:
        for seat in range(n):
            check_sample(s, R.sample_state(s, seat, rng), seat)


def test_all_phases_are_covered():
    """The positions above include every phase (the between-round ones at level 10)."""
    seen = set()
    for n, level, mode in CONFIGS:
        if level == 10 or n == 3:
            seen |= {s.phase for s in positions(n, level, mode, seed=n * 10 + level)}
    assert seen == set(Phase)


# -- what the seat does not see ---------------------------------------------------------------
def test_sample_varies_the_hidden_parts():
    rng = np.random.default_rng(7)
    other_hands = own_orders = other_tries = own_tries = 0
    for n, level, mode in CONFIGS[::5]:
        for s in positions(n, level, mode, seed=3 * n + level, every=9):
            seat = int(rng.integers(n))
            sample = R.sample_state(s, seat, rng)
            pile = s.draw[seat]
            if len(set(pile)) > 1:
                own_tries += 1
                own_orders += sample.draw[seat] != pile
            for p in range(n):
                pool = hidden(s, p)
                if p != seat and sum(s.hand[p]) and s.draw[p] and len(set(pool)) > 1:
                    other_tries += 1
                    other_hands += sample.hand[p] != s.hand[p]
    assert own_tries > 50 and other_tries > 50
    # Re-dealt hands of 6-10 cards from 15+ mixed cards almost never come back the same.
    assert other_hands / other_tries > 0.8
    assert own_orders / own_tries > 0.8


def test_each_owner_keeps_his_own_cards():
    # Seat 1 has every 7 and 8 of his colour in his played pile, the box or a slot, while
    # seat 2 still holds his: a re-deal must never give seat 1 a 7 or an 8 (§2.2).
    cfg = R.make_config(num_players=3, level=10, num_rounds=2, first_opener=0)
    s = R.initial_state(cfg, np.random.default_rng(0))
    played1 = [0] * R.NUM_FIGURES
    played1[7] = 2
    deck = list(cfg.deck)
    deck[7] -= 2
    deck[8] -= 2  # one 8 in the box, one in a slot
    deck[12] -= 1  # an ambassador in the box
    rest = R._expand(deck)  # 22 cards: 8 in hand, 14 in the draw pile
    hand1 = [0] * R.NUM_FIGURES
    for f in rest[::3][:8]:
        hand1[f] += 1
    pile1 = list(rest)
    for f in rest[::3][:8]:
        pile1.remove(f)
    s = s._replace(
        hand=(s.hand[0], tuple(hand1), s.hand[2]),
        draw=(s.draw[0], tuple(pile1), s.draw[2]),
        played=(s.played[0], tuple(played1), s.played[2]),
        slots=((-1, -1, -1), (8, -1, -1), (-1, -1, -1)),
        box=((1, 8, False), (1, 12, False)),
        top=12,
        top_owner=1,
        phase=Phase.DUTY,
        to_play=2,
        duty=2,
    )
    assert owned(s, 1) == cfg.deck
    rng = np.random.default_rng(1)
    for _ in range(300):
        sample = R.sample_state(s, 0, rng)
        check_sample(s, sample, 0)
        assert sample.hand[1][7] == sample.hand[1][8] == 0
        assert 7 not in sample.draw[1] and 8 not in sample.draw[1]
        assert sample.hand[1][12] + sample.draw[1].count(12) == 1


def test_the_re_deal_is_uniform():
    # Uniform over the owner's hidden cards: a figure's expected count in a hand of k from
    # m hidden cards is k/m of its copies; the top of a draw pile is any hidden card alike.
    s = positions(4, 9, "one_colour", seed=5, every=1)[40]
    seat, p = 0, 2
    k, m = sum(s.hand[p]), sum(s.hand[p]) + len(s.draw[p])
    assert k >= 3 and m - k >= 3
    pool = np.bincount(hidden(s, p), minlength=R.NUM_FIGURES)
    rng = np.random.default_rng(2)
    trials = 4000
    in_hand = np.zeros(R.NUM_FIGURES)
    on_top = np.zeros(R.NUM_FIGURES)
    for _ in range(trials):
        sample = R.sample_state(s, seat, rng)
        in_hand += sample.hand[p]
        on_top[sample.draw[p][-1]] += 1
    expected = pool * k / m
    # Per figure, the count in hand is hypergeometric; allow 5 standard errors of the mean.
    var = pool * (k / m) * (1 - k / m) * (m - k) / max(m - 1, 1) + 1e-9
    assert np.all(np.abs(in_hand / trials - expected) <= 5 * np.sqrt(var / trials) + 1e-9)
    top_share = pool / m
    se = np.sqrt(top_share * (1 - top_share) / trials) + 1e-9
    assert np.all(np.abs(on_top / trials - top_share) <= 5 * se)


# -- the sample is a game that goes on ---------------------------------------------------------
def greedy(s: R.State, rng: np.random.Generator) -> int:
    """Lay the lowest plain figure when possible, else a random legal action."""
    legal = R.legal_actions(s)
    lays = [a for a in legal if 0 < a < R.PASS]
    if lays and rng.random() < 0.8:
        return lays[0]
    return legal[rng.integers(len(legal))]


@pytest.mark.parametrize(
    "n, level, deck_mode",
    [(2, 8, "one_colour"), (3, 10, "one_colour"), (4, 9, "own_decks"), (5, 10, "own_decks")],
)
def test_play_on_from_a_sample(n, level, deck_mode):
    rng = np.random.default_rng(n + level)
    for s in positions(n, level, deck_mode, seed=40 + n)[::15]:
        seat = s.to_play if s.to_play >= 0 else 0
        t = R.sample_state(s, seat, rng)
        while not R.is_terminal(t):
            t = R.apply_action(t, greedy(t, rng), rng)
            assert all(owned(t, p) == t.config.deck for p in range(n))
        assert R.winners(t)


def test_same_generator_same_sample():
    s = positions(3, 10, "one_colour", seed=8)[30]
    a = R.sample_state(s, 1, np.random.default_rng(9))
    b = R.sample_state(s, 1, np.random.default_rng(9))
    assert a == b
    assert R.sample_state(s, 1, np.random.default_rng(10)) != a


# -- what a player with perfect recall knows -----------------------------------------------------
def test_the_facts_of_recall_occur_in_the_positions():
    """The sampled positions above meet every recall fact, so check_recall is exercised."""
    seen = {"recycled": 0, "taken": 0, "lacks": 0}
    for n, level, mode in CONFIGS:
        for s in positions(n, level, mode, seed=n * 10 + level):
            seen["recycled"] += any(map(any, s.recycled))
            seen["taken"] += any(map(any, s.taken))
            seen["lacks"] += any(s.lacks)
    assert all(v > 20 for v in seen.values()), seen


def settle(s: R.State) -> R.State:
    """``s`` with each played pile holding every card of its owner that is nowhere else."""
    played = []
    for p in range(s.config.num_players):
        elsewhere = [x - y for x, y in zip(owned(s, p), s.played[p])]
        played.append(tuple(d - e for d, e in zip(s.config.deck, elsewhere)))
    return s._replace(played=tuple(played))


def test_a_recycled_pile_stays_at_the_bottom():
    # P1 recycled {4, 6} under one older card: whatever is re-dealt, the bottom two of his
    # three pile cards are the 4 and the 6, and P0's own pile keeps that split too.
    s = settle(build(
        9, 3, phase=Phase.DUTY, to_play=2, duty=2, top=2, top_owner=0, box=((0, 2, False),),
        hands={0: (1, 3), 1: (5, 9), 2: (3, 8)},
        draws={1: (4, 6, 10), 0: (6, 4, 7)}, recycled=(counts(4, 6), counts(4, 6), counts()),
    ))  # fmt: skip
    rng = np.random.default_rng(3)
    tops = set()
    for _ in range(200):
        sample = R.sample_state(s, 0, rng)
        check_recall(sample, 0)
        assert set(sample.draw[1][:2]) <= {4, 6} and sorted(sample.draw[0][:2]) == [4, 6]
        assert sample.draw[0][2] == 7
        tops.add(sample.draw[1][2])
    assert tops == {5, 9, 10}  # the card above the recycled ones is any of his others


def test_a_taken_slot_figure_and_a_shown_lack_stay_in_the_sample():
    s = settle(build(
        10, 3, phase=Phase.WINDOW, to_play=0, duty=1, queue=(0, 2),
        hands={0: (1, 2), 1: (5, 9, 9), 2: (3, 8)}, top=4, top_owner=2,
        box=((2, 4, False),), slots={1: (11, -1, -1)},
        taken=(counts(), counts(9), counts()), lacks=(0, 0, 1 << 4 | 1 << 5),
    ))  # fmt: skip
    rng = np.random.default_rng(4)
    hands1, hands2 = set(), set()
    for _ in range(300):
        sample = R.sample_state(s, 0, rng)
        check_sample(s, sample, 0)
        assert sample.hand[1][9] >= 1 and sample.hand[2][4] == sample.hand[2][5] == 0
        hands1.add(sample.hand[1])
        hands2.add(sample.hand[2])
    assert len(hands1) > 10 and len(hands2) > 10
