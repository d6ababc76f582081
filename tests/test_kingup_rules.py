"""King Up! rules core against docs/kingup_rules.md, section by section."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kingup_env import rules as R
from kingup_env.rules import ELIMINATED, NO, THRONE, UNPLACED, YES, Phase
from tests.kingup_positions import (
    N,
    climb,
    climbing_state,
    crown_round,
    election,
    new_game,
    place,
    play,
    random_positions,
)

# -- components --------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "total"), [(3, 12), (4, 12), (5, 10), (6, 12)])
def test_total_no_cards(n, total):
    assert sum(new_game(n).no_left) == total


def test_favourite_cards_form_a_balanced_design():
    cards = R.FAVOURITE_CARDS
    assert len(cards) == 26 and len(set(cards)) == 26
    assert all(len(set(card)) == 6 for card in cards)
    for c in range(13):
        assert sum(c in card for card in cards) == 12
    for a, b in itertools.combinations(range(13), 2):
        assert sum(a in card and b in card for card in cards) == 5


@pytest.mark.parametrize(
    ("n", "no_cards", "placements"), [(3, 4, 4), (4, 3, 3), (5, 2, 2), (6, 2, 2)]
)
def test_setup_per_player_count(n, no_cards, placements):
    s = new_game(n)
    assert s.no_left == (no_cards,) * n
    assert s.placements_left == (placements,) * n
    assert s.phase is Phase.PLACE and s.to_play == 0 and s.starter == 0
    assert all(f == UNPLACED for f in s.floors)
    # every player holds a distinct favourite card; the rest of the deck is undealt
    assert len(set(s.favourites)) == n and len(s.deck) == 26 - n
    assert sorted(s.favourites + s.deck) == list(range(26))


def test_action_ids_encode_and_decode():
    ids = [R.place_action(c, f) for c in range(13) for f in range(1, 5)]
    assert ids == list(range(R.PLACE, R.CLIMB))  # the placements fill 0..51 in order
    assert [R.place_of(a) for a in ids] == [(c, f) for c in range(13) for f in range(1, 5)]
    assert [R.climb_action(c) for c in range(13)] == list(range(R.CLIMB, R.YES))
    assert all(R.climb_of(R.climb_action(c)) == c for c in range(13))
    cs, floors = R.place_of(np.array(ids))  # the heuristic decodes whole masks at once
    assert R.place_action(cs, floors).tolist() == ids


def test_deck_order_comes_from_the_generator():
    assert new_game(seed=1).deck != new_game(seed=2).deck
    assert new_game(seed=3) == new_game(seed=3)


# -- placement ---------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "left_over"), [(3, 1), (4, 1), (5, 3), (6, 1)])
def test_placement_then_left_over_candidates_go_to_floor_0(n, left_over):
    s = new_game(n)
    placed = 0
    while s.phase is Phase.PLACE:
        seat = s.to_play
        assert seat == placed % n  # clockwise from the starting player
        s = R.apply_action(s, R.legal_actions(s)[0])
        placed += 1
    assert placed == n * R.PLACEMENTS[n]
    assert sum(f == 0 for f in s.floors) == left_over
    assert s.phase is Phase.CLIMB and s.to_play == 0  # climbing continues with the starter


def test_placement_mask_only_unplaced_candidates_on_floors_with_room():
    s = new_game(4)
    s = play(s, place("Alighiero", 1), place("Beatrice", 1), place("Clemente", 1))
    s = play(s, place("Dario", 1))  # floor 1 is now full
    legal = R.legal_actions(s)
    assert all(R.place_of(a)[1] != 1 for a in legal)  # no floor 1
    assert place("Erisco", 2) in legal and place("Alighiero", 2) not in legal
    assert len(legal) == 9 * 3  # 9 unplaced candidates x floors 2..4
    with pytest.raises(ValueError, match="floor 1"):
        R.apply_action(s, place("Erisco", 1))


# -- climbing ----------------------------------------------------------------------------


def test_climb_needs_room_on_the_floor_above_and_never_goes_down():
    s = climbing_state(Alighiero=2, Beatrice=3, Clemente=3, Dario=3, Erisco=3, Fiorello=5)
    legal = R.legal_actions(s)
    assert climb("Alighiero") not in legal  # floor 3 is full
    assert climb("Beatrice") in legal and climb("Fiorello") in legal  # 5 -> throne always
    s2 = R.apply_action(s, climb("Beatrice"))
    assert s2.floors[N["Beatrice"]] == 4 and s2.to_play == 1
    assert all(b >= a for a, b in zip(s.floors, s2.floors))


def test_the_highest_candidate_can_always_move():
    s = climbing_state(Alighiero=4, Beatrice=4, Clemente=4, Dario=4)
    assert set(R.legal_actions(s)) >= {climb(c) for c in ("Alighiero", "Beatrice")}


# -- elections ---------------------------------------------------------------------------


def test_reaching_the_throne_opens_an_election_and_gives_the_crown():
    s = election(mover=1)
    assert s.phase is Phase.VOTE and s.crown == 1 and s.candidate == N["Fiorello"]
    assert s.floors[N["Fiorello"]] == THRONE
    assert s.to_play == 1  # votes are asked from the crown holder clockwise
    assert R.legal_actions(s) == (YES, NO)


def test_all_yes_crowns_the_king_and_ends_the_round():
    s = play(election(mover=1), YES, YES, YES, YES)
    assert s.round == 1 and len(s.round_scores) == 1
    assert s.starter == 2 and s.to_play == 2  # left of the crown holder starts round 2
    assert s.phase is Phase.PLACE and s.king == N["Fiorello"]
    assert s.no_left == (3,) * 4  # NO cards are taken back


def test_a_no_eliminates_and_costs_each_no_voter_one_card():
    s = play(election(mover=1), NO, YES, NO, YES)  # seats 1, 2, 3, 0 vote in turn
    assert s.floors[N["Fiorello"]] == ELIMINATED
    assert s.no_left == (3, 2, 3, 2)
    assert s.no_voters[N["Fiorello"]] == 0b1010 and s.last_candidate == N["Fiorello"]
    assert s.phase is Phase.CLIMB and s.to_play == 2  # the player left of the crown holder


def test_votes_stay_pending_until_all_have_voted():
    s = play(election(mover=1), NO, YES)
    assert s.phase is Phase.VOTE and s.no_left == (3, 3, 3, 3)
    assert s.no_voters == (0,) * 13 and s.last_candidate == -1


def test_without_no_cards_a_player_must_vote_yes():
    s = election(mover=0)._replace(no_left=(0, 1, 0, 0))
    assert R.legal_actions(s) == (YES,)
    with pytest.raises(ValueError, match="vote NO"):
        R.apply_action(s, NO)
    s = R.apply_action(s, YES)
    assert R.legal_actions(s) == (YES, NO)


def test_no_cards_run_out_over_eliminations():
    s = climbing_state(3, Alighiero=5, Beatrice=5, Clemente=5, Dario=5)
    s = s._replace(no_left=(1, 0, 0))
    s = play(s, climb("Alighiero"), NO, YES, YES)  # seat 0 spends its last NO card
    assert s.no_left == (0, 0, 0)
    s = play(s, climb("Beatrice"))
    assert R.legal_actions(s) == (YES,)
    s = play(s, YES, YES, YES)
    assert s.king == N["Beatrice"] and s.round == 1


# -- scoring -----------------------------------------------------------------------------


# "Worked example": the castle after Fiorello's election; the five candidates the rulebook
# leaves "on floor 0 or eliminated" score 0 either way, so both are checked. (These cards are
# the rulebook's, not of our invented card table, so they are scored directly.)
WORKED_CASTLE = {"Fiorello": THRONE, "Beatrice": 5, "Odessa": 4, "Erisco": 3, "Iris": 3,
                 "Dario": 2, "Piero": 2}  # fmt: skip
WORKED_CARDS = [
    (("Beatrice", "Clemente", "Dario", "Erisco", "Iris", "Odessa"), 17),
    (("Alighiero", "Dario", "Erisco", "Fiorello", "Gasparo", "Merlino"), 15),
    (("Erisco", "Fiorello", "Iris", "Merlino", "Odessa", "Piero"), 22),
    (("Alighiero", "Clemente", "Erisco", "Fiorello", "Natale", "Odessa"), 17),
]


@pytest.mark.parametrize("rest", [0, ELIMINATED])
@pytest.mark.parametrize(("card", "points"), WORKED_CARDS)
def test_worked_example_scores(rest, card, points):
    floors = tuple(WORKED_CASTLE.get(name, rest) for name in R.NAMES)
    assert R.score_card(floors, tuple(N[c] for c in card), 0) == points


def test_maximum_round_score_is_33():
    floors = [0] * 13
    floors[0], floors[1], floors[2], floors[3], floors[4], floors[5] = THRONE, 5, 5, 5, 4, 4
    assert R.score_card(tuple(floors), (0, 1, 2, 3, 4, 5), 0) == 33


def test_round_three_zero_scores_33_only_in_round_three():
    floors = tuple([ELIMINATED] * 6 + [THRONE] + [5] * 6)
    card = (0, 1, 2, 3, 4, 5)
    assert R.score_card(floors, card, 0) == 0
    assert R.score_card(floors, card, 1) == 0
    assert R.score_card(floors, card, 2) == 33


def test_a_one_round_game_has_no_33_point_rule():
    # "Third round only": a 1-round game ends after round 1, where 0 points stay 0.
    s = new_game(3, num_rounds=1)
    card = R.FAVOURITE_CARDS[s.favourites[0]]
    king = next(c for c in range(13) if c not in card)
    floors = tuple(5 if c == king else ELIMINATED if c in card else 0 for c in range(13))
    s = s._replace(phase=Phase.CLIMB, floors=floors, placements_left=(0,) * 3)
    s = play(s, R.climb_action(king), YES, YES, YES)
    assert R.is_terminal(s) and s.round_scores[0][0] == 0


def finished_game(round_scores, floors, favourites, n=3) -> R.State:
    s = new_game(n)
    return s._replace(
        phase=Phase.GAME_OVER, to_play=-1, round=2, round_scores=round_scores,
        revealed=(favourites,) * len(round_scores), floors=floors, favourites=favourites,
    )  # fmt: skip


def test_highest_total_wins():
    s = finished_game(((10, 5, 5), (5, 5, 5), (5, 5, 4)), tuple([0] * 13), (0, 1, 2))
    assert R.winners(s) == (0,)
    assert R.scores(s) == (20.0, 15.0, 14.0)


def test_tie_break_most_round_three_favourites_still_in_the_castle():
    # cards 0 = {0,1,2,3,5,9} and 13 = {0,1,3,6,7,11}; eliminate 2 and 5 (only on card 0)
    floors = [0] * 13
    floors[2] = floors[5] = ELIMINATED
    floors[12] = THRONE
    s = finished_game(((10, 10, 1), (5, 5, 1), (5, 5, 1)), tuple(floors), (0, 13, 1))
    assert R.in_castle(s, 0) == 4 and R.in_castle(s, 1) == 6
    assert R.winners(s) == (1,)


def test_still_tied_is_a_shared_win():
    s = finished_game(((10, 10, 1),), tuple([0] * 13), (0, 13, 1))
    assert R.winners(s) == (0, 1)


def test_next_rounds_start_left_of_the_crown_holder():
    s = new_game(4)
    for expected_round, mover in ((1, 2), (2, 3)):
        s = crown_round(s, mover)
        assert s.round == expected_round and s.starter == (mover + 1) % 4 == s.to_play


def test_the_deck_is_dealt_on_without_reshuffling_and_cards_are_revealed():
    s = new_game(6)
    deck = s.favourites + s.deck
    for r in range(3):
        assert s.favourites == deck[6 * r : 6 * r + 6]
        assert s.revealed == tuple(deck[6 * k : 6 * k + 6] for k in range(r))
        s = crown_round(s)
    assert s.phase is Phase.GAME_OVER and s.to_play == -1
    assert s.revealed == (deck[:6], deck[6:12], deck[12:18])


# -- rewards -----------------------------------------------------------------------------


def test_reward_modes():
    cfg = {m: R.make_config(num_players=3, reward=m) for m in R.REWARDS}
    before = new_game(3)
    after = before._replace(round_scores=((33, 0, 3),))
    assert R.rewards(before, after, cfg["win"]) == (0.0, 0.0, 0.0)
    assert R.rewards(before, after, cfg["score"]) == (1.0, 0.0, 3 / 33)
    rel = R.rewards(before, after, cfg["relative"])
    assert rel == pytest.approx(((33 - 1.5) / 33, (0 - 18) / 33, (3 - 16.5) / 33))
    end = finished_game(((10, 10, 1),), tuple([0] * 13), (0, 13, 1))
    assert R.rewards(before, end, cfg["win"]) == (1.0, 1.0, -1.0)


# -- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"num_players": 2}, "num_players must be one of 3, 4, 5, 6; got 2"),
        ({"num_players": 7}, "num_players"),
        ({"num_players": True}, "num_players"),
        ({"num_rounds": 2}, "num_rounds must be one of 1, 3; got 2"),
        ({"reward": "points"}, "reward must be one of 'win', 'score', 'relative'"),
        ({"rounds": 3}, "option 'rounds' is now called 'num_rounds'"),
        ({"reward_mode": "win"}, "option 'reward_mode' is now called 'reward'"),
        ({"players": 4}, "option 'players' is now called 'num_players'"),
        ({"colour": "red"}, "unknown option 'colour'; allowed options: num_players, num_rounds"),
    ],
)
def test_bad_options_name_the_option(options, message):
    with pytest.raises(ValueError, match=message):
        R.make_config(**options)


def test_numpy_integers_are_stored_as_plain_ints():
    cfg = R.make_config(num_players=np.int64(5), num_rounds=np.int32(1))
    assert cfg == R.Config(num_players=5, num_rounds=1)
    assert type(cfg.num_players) is int and type(cfg.num_rounds) is int


def test_illegal_action_names_action_and_legal_ones():
    s = election(mover=0)
    with pytest.raises(
        ValueError, match=r"illegal action 3 \(place Alighiero on floor 4\).*\[65, 66\]"
    ):
        R.apply_action(s, 3)


# -- is_legal is legal_actions -------------------------------------------------------------


@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_is_legal_agrees_with_legal_actions_everywhere(n):
    positions = random_positions(n, games=8, seed=20 + n, every=1)
    assert {s.phase for s in positions} == set(Phase)
    for s in positions:
        assert tuple(a for a in range(R.NUM_ACTIONS) if R.is_legal(s, a)) == R.legal_actions(s)
    # Hand-built corners: full floors, an empty NO hand, every floor of a placement.
    full = climbing_state(n, Alighiero=4, Beatrice=4, Clemente=4, Dario=4, Erisco=3, Iris=5)
    broke = election(n, mover=0)._replace(no_left=(0,) * n)
    for s in (full, broke, new_game(n)):
        assert tuple(a for a in range(R.NUM_ACTIONS) if R.is_legal(s, a)) == R.legal_actions(s)


# -- invariants over random games ---------------------------------------------------------


def random_game(n: int, seed: int) -> tuple[R.State, dict]:
    """Play a random game on the rules core, checking the invariants after every step."""
    r = np.random.default_rng(seed)
    s = R.initial_state(R.make_config(num_players=n), r)
    stats = {"placements": 0, "moves": 0, "failed": 0}
    per_round = dict(stats)
    while not R.is_terminal(s):
        legal = R.legal_actions(s)
        assert legal, "the player to act always has a legal action"
        a = legal[int(r.integers(len(legal)))]
        nxt = R.apply_action(s, a)
        check_step(s, nxt, a, per_round)
        if nxt.round != s.round or R.is_terminal(nxt):
            assert per_round["placements"] <= 13 and per_round["moves"] <= 78
            assert per_round["failed"] <= 12
            per_round = dict.fromkeys(stats, 0)
        s = nxt
    return s, stats


def check_step(s: R.State, nxt: R.State, a: int, per_round: dict) -> None:
    counts = [nxt.floors.count(f) for f in range(R.NUM_FLOORS)]
    assert max(counts) <= R.CAPACITY
    assert sum(f == THRONE for f in nxt.floors) <= 1
    if nxt.round == s.round and not R.is_terminal(nxt):
        for before, after in zip(s.floors, nxt.floors):
            assert after >= before  # never down (ELIMINATED sorts above the throne)
    per_round["placements"] += s.phase is Phase.PLACE
    per_round["moves"] += s.phase is Phase.CLIMB
    if nxt.round == s.round:
        per_round["failed"] += nxt.floors.count(ELIMINATED) - s.floors.count(ELIMINATED)
        # each elimination spends at least one NO card
        spent = sum(R.NO_CARDS[s.num_players] - k for k in nxt.no_left)
        assert nxt.floors.count(ELIMINATED) <= spent
    assert all(k >= 0 for k in nxt.no_left)


@pytest.mark.slow
@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_invariants_over_2000_random_games(n):
    for seed in range(2000):
        end, _ = random_game(n, seed)
        assert len(end.round_scores) == 3
        for row in end.round_scores:
            assert all(0 <= p <= 33 for p in row)
        assert all(0 <= t <= 99 for t in R.totals(end))
        assert R.winners(end)


def test_invariants_over_a_few_random_games():
    for n in (3, 4, 5, 6):
        for seed in range(20):
            random_game(n, seed)
