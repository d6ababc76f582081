"""Up & Down rules core: scripted tricks from hand-built states, setup, rule changes, invariants.

Rules are cited by the section names of ``docs/updown_rules.md``. Cards are written as
``card(suit, value)`` with suits C, S, H, D = clubs, spades, hearts, diamonds.
"""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from updown_positions import ALL_CARDS, C, D, H, S, card, is_whole, mask

from updown_env import rules as R
from updown_env.rules import DOWN, FLIP, LOST, POT, ROLL, UP, Phase, play_action, rotate_action


def new_state(n: int = 3, seed: int = 0, **config) -> R.State:
    return R.initial_state(R.make_config(num_players=n, **config), np.random.default_rng(seed))


def choosing(n: int, hands: list[tuple[int, ...]], **fields) -> R.State:
    """A hand-built state at the card choice of a trick, leader seat 0 unless given.

    The hands are given per seat; every other card is set aside so the state stays whole.
    """
    held = mask(*(c for h in hands for c in h))
    base = dict(
        phase=Phase.CHOOSE,
        leader=0,
        to_play=0,
        side=UP,
        orientation=0,
        trump=2,
        hands=tuple(mask(*h) for h in hands),
        aside=ALL_CARDS & ~held,
        played=(0,) * n,
        pot=0,
    )
    base.update(fields)
    if "to_play" not in fields:
        base["to_play"] = base["leader"]
    return new_state(n)._replace(**base)


def play_trick(state: R.State, cards: dict[int, int], seed: int = 0) -> R.State:
    """Each seat, from the one to play, chooses its card in ``cards`` (seat -> card id)."""
    rng = np.random.default_rng(seed)
    for _ in range(state.num_players):
        state = R.apply_action(state, play_action(cards[state.to_play]), rng)
    return state


# -- options ---------------------------------------------------------------------------------


def test_make_config_defaults_and_values():
    assert R.make_config() == R.Config(num_players=4, num_rounds=1, reward="win")
    cfg = R.make_config(num_players=2, num_rounds=3, reward="tricks")
    assert (cfg.num_players, cfg.num_rounds, cfg.reward) == (2, 3, "tricks")
    # Numpy integers are accepted and stored as plain ints.
    cfg = R.make_config(num_players=np.int64(3), num_rounds=np.int32(2))
    assert type(cfg.num_players) is int and type(cfg.num_rounds) is int


@pytest.mark.parametrize(
    "options, name",
    [
        ({"num_players": 1}, "num_players"),
        ({"num_players": 5}, "num_players"),
        ({"num_players": True}, "num_players"),
        ({"num_players": "4"}, "num_players"),
        ({"num_rounds": 0}, "num_rounds"),
        ({"num_rounds": 1.5}, "num_rounds"),
        ({"rounds": 2}, "'rounds' is now called 'num_rounds'"),
        ({"reward": "score"}, "reward"),
        ({"players": 4}, "players"),
    ],
)
def test_bad_options_name_the_option(options, name):
    with pytest.raises(ValueError, match=name):
        R.make_config(**options)


def test_unknown_option_lists_the_allowed_ones():
    with pytest.raises(ValueError, match="num_players, num_rounds, reward"):
        R.make_config(seats=3)


# -- components and setup --------------------------------------------------------------------


def test_card_ids_and_action_ids():
    # "Components": card id = suit * 11 + (value - 2); play action = 6 + card id.
    assert card(C, 2) == 0 and card(D, 12) == 43
    assert (R.card_suit(card(H, 11)), R.card_value(card(H, 11))) == (H, 11)
    assert R.NUM_ACTIONS == 50
    assert play_action(card(S, 9)) == 6 + 1 * 11 + 7
    assert rotate_action(H) == 3
    for c in range(R.NUM_CARDS):
        assert R.played_card(play_action(c)) == c
    for s in range(R.NUM_SUITS):
        assert R.rotated_suit(rotate_action(s)) == s
    assert R.describe_action(FLIP) == "FLIP the U&D card"
    assert R.describe_action(rotate_action(H)) == "ROTATE: hearts to the leader"
    assert R.describe_action(ROLL) == "ROLL the dice"
    assert R.describe_action(play_action(card(H, 12))) == "play queen of hearts"
    assert R.describe_action(play_action(card(C, 11))) == "play jack of clubs"


@pytest.mark.parametrize(
    "n, orientation, suits",
    [
        (4, 0, (C, S, H, D)),
        (4, 1, (S, H, D, C)),
        (3, 0, (C, S, H)),  # direction 3 (diamonds) faces nobody
        (3, 3, (D, C, S)),
        (2, 0, (C, H)),  # two players sit opposite: directions 0 and 2
        (2, 2, (H, C)),
    ],
)
def test_seat_directions(n, orientation, suits):
    # "Components": with orientation r the suit facing direction d is order[(d + r) % 4].
    state = new_state(n)._replace(orientation=orientation)
    assert R.own_suits(state) == suits
    assert tuple(R.seat_suit(n, orientation, s) for s in range(n)) == suits


@pytest.mark.parametrize("n", [2, 3, 4])
def test_setup_deal(n):
    # "Setup of a round": 11 / 14 / 15 cards each; the rest (0 / 2 / 14) set aside.
    state = new_state(n, seed=5)
    size = {4: 11, 3: 14, 2: 15}[n]
    assert [h.bit_count() for h in state.hands] == [size] * n
    assert state.aside.bit_count() == R.NUM_CARDS - n * size
    assert is_whole(state)
    assert state.phase is Phase.CHANGE and state.to_play == state.leader
    assert state.tricks == (0,) * n and state.pot == 0 and state.last_result == R.NO_TRICK


@pytest.mark.parametrize("n, throws", [(2, {0, 2}), (3, {0, 2, 3}), (4, {0, 1, 2, 3})])
def test_throw_faces_clubs_to_a_seat_and_clubs_leads(n, throws):
    # "Setup of a round": the throw is uniform among orientations where some seat faces
    # clubs, and the player whose own suit is clubs leads the first trick.
    seen_orient, seen_side = Counter(), Counter()
    for seed in range(400):
        state = new_state(n, seed=seed)
        assert R.clubs_seat(n, state.orientation) >= 0
        assert R.seat_suit(n, state.orientation, state.leader) == R.CLUBS
        seen_orient[state.orientation] += 1
        seen_side[state.side] += 1
    assert set(seen_orient) == throws
    assert min(seen_orient.values()) > 400 / len(throws) * 0.6
    assert set(seen_side) == {UP, DOWN}


def test_first_trick_of_every_round_led_by_clubs():
    # "Round end and game end": each round repeats the whole setup.
    rng = np.random.default_rng(3)
    pick = random.Random(3)
    for n in (2, 3, 4):
        state = R.initial_state(R.make_config(num_players=n, num_rounds=4), rng)
        starts = 0
        while not R.is_terminal(state):
            before = state
            state = R.apply_action(state, pick.choice(R.legal_actions(state)), rng)
            if state.round != before.round:
                starts += 1
                size = R.HAND_SIZE[n]
                assert [h.bit_count() for h in state.hands] == [size] * n
                assert state.played == (0,) * n and state.pot == 0
                assert R.seat_suit(n, state.orientation, state.leader) == R.CLUBS
                assert state.phase is Phase.CHANGE and state.to_play == state.leader
        assert starts == 3


# -- changing the rules ----------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 4])
def test_rule_change_mask_is_exactly_five(n):
    # "A trick" 1: FLIP, ROLL and the three rotations to another suit.
    for seed in range(20):
        state = new_state(n, seed=seed)
        own = R.seat_suit(n, state.orientation, state.leader)
        legal = R.legal_actions(state)
        assert len(legal) == 5
        rotations = {rotate_action(s) for s in range(4) if s != own}
        assert legal == tuple(sorted({FLIP, ROLL} | rotations))
        assert rotate_action(own) not in legal


def test_flip_turns_the_card_only():
    state = new_state(4, seed=1)
    after = R.apply_action(state, FLIP, np.random.default_rng(0))
    assert after.side == 1 - state.side
    assert (after.orientation, after.trump) == (state.orientation, state.trump)
    assert after.phase is Phase.CHOOSE and after.to_play == state.leader


@pytest.mark.parametrize("n", [2, 3, 4])
def test_rotate_brings_the_suit_to_the_leader_and_turns_everyone(n):
    for seed in range(8):
        state = new_state(n, seed=seed)
        for action in R.legal_actions(state):
            if action in (FLIP, ROLL):
                continue
            after = R.apply_action(state, action, np.random.default_rng(0))
            assert R.seat_suit(n, after.orientation, after.leader) == R.rotated_suit(action)
            # The card turns as a whole: every seat's suit moves by the same step.
            steps = {(a - b) % 4 for a, b in zip(R.own_suits(after), R.own_suits(state))}
            assert len(steps) == 1 and steps != {0}
            assert (after.side, after.trump) == (state.side, state.trump)


def test_rotation_may_leave_clubs_facing_nobody_with_three():
    # Only the throw must face clubs to a seat; a later rotation may turn it to the empty edge.
    state = new_state(3)._replace(orientation=0, leader=0, phase=Phase.CHANGE, to_play=0)
    after = R.apply_action(state, rotate_action(S), np.random.default_rng(0))
    assert R.own_suits(after) == (S, H, D)
    assert R.clubs_seat(3, after.orientation) == -1


def test_roll_never_keeps_the_trump_value():
    # "A trick" 1: re-roll while the dice show the old value -> 2d6 conditioned on differing.
    state = new_state(4)._replace(trump=7)
    rng = np.random.default_rng(11)
    counts = Counter(R.apply_action(state, ROLL, rng).trump for _ in range(3000))
    assert 7 not in counts and set(counts) == set(range(2, 13)) - {7}
    for value in (2, 6, 12):
        expected = (6 - abs(value - 7)) / 30  # P(sum = value) / P(sum != 7)
        assert abs(counts[value] / 3000 - expected) < 0.03
    for seed in range(200):
        for old in range(2, 13):
            s = state._replace(trump=old)
            assert R.apply_action(s, ROLL, np.random.default_rng(seed)).trump != old


# -- choosing and resolving ------------------------------------------------------------------


def test_choice_mask_is_exactly_the_hand():
    # "A trick" 2: any card in hand, no duty to follow suit.
    rng = np.random.default_rng(2)
    pick = random.Random(2)
    state = new_state(4, seed=2)
    while not R.is_terminal(state):
        if state.phase is Phase.CHOOSE:
            hand = state.hands[state.to_play]
            in_hand = tuple(play_action(c) for c in range(44) if hand >> c & 1)
            assert R.legal_actions(state) == in_hand
        state = R.apply_action(state, pick.choice(R.legal_actions(state)), rng)


def test_choices_stay_pending_until_all_have_chosen():
    hands = [(card(C, 9), card(C, 3)), (card(S, 5), card(S, 4)), (card(C, 10), card(H, 2))]
    state = choosing(3, hands)
    rng = np.random.default_rng(0)
    state = R.apply_action(state, play_action(card(C, 9)), rng)  # Kim chooses face down
    assert state.pending == (card(C, 9), R.NO_CARD, R.NO_CARD)
    assert state.hands[0] == mask(card(C, 3)) and state.to_play == 1
    state = R.apply_action(state, play_action(card(S, 5)), rng)  # Lea
    assert state.last_result == R.NO_TRICK and state.to_play == 2
    state = R.apply_action(state, play_action(card(C, 10)), rng)  # Alex: all revealed now
    assert state.pending == (R.NO_CARD,) * 3
    assert state.last_trick == (card(C, 9), card(S, 5), card(C, 10))


def test_example_a_own_suit_beats_a_higher_foreign_card():
    # Example A (UP): Kim 9 of her suit, Lea 5 of hers, Alex 10 of clubs, not his suit.
    hands = [(card(C, 9), card(C, 3)), (card(S, 5), card(S, 4)), (card(C, 10), card(H, 2))]
    state = choosing(3, hands, side=UP, orientation=0)  # Kim clubs, Lea spades, Alex hearts
    after = play_trick(state, {0: card(C, 9), 1: card(S, 5), 2: card(C, 10)})
    assert after.last_result == 0 and after.tricks == (1, 0, 0)
    assert after.phase is Phase.CHANGE and after.leader == 1 == after.to_play  # "A trick" 4


def test_example_b_two_queens_neutralise_and_the_jack_wins():
    # Example B (UP): two queens, one in its player's own suit, cancel; the own-suit jack wins.
    hands = [(card(C, 12), card(C, 3)), (card(H, 12), card(S, 4)), (card(H, 11), card(H, 2))]
    state = choosing(3, hands, side=UP, orientation=0)
    after = play_trick(state, {0: card(C, 12), 1: card(H, 12), 2: card(H, 11)})
    assert after.last_result == 2 and after.tricks == (0, 0, 1)


def test_example_c_two_trumps_neutralise_and_the_trick_goes_to_the_pot():
    # Example C: trump 7; Kim's and Lea's 7s cancel; Alex's card is not his suit -> pot.
    hands = [(card(C, 7), card(C, 3)), (card(H, 7), card(S, 4)), (card(C, 10), card(H, 2))]
    state = choosing(3, hands, trump=7, orientation=0)
    after = play_trick(state, {0: card(C, 7), 1: card(H, 7), 2: card(C, 10)})
    assert after.last_result == POT and after.pot == 1 and after.tricks == (0, 0, 0)
    # The next winner takes this trick and the pot (3d): under DOWN Alex's own-suit 2 wins.
    after = R.apply_action(after, FLIP, np.random.default_rng(0))
    after = play_trick(after, {1: card(S, 4), 2: card(H, 2), 0: card(C, 3)})
    assert after.last_result == 2 and after.tricks == (0, 0, 2) and after.pot == 0


def test_pot_goes_to_the_next_winner():
    hands = [(card(C, 5), card(C, 3)), (card(S, 5), card(S, 4)), (card(H, 9), card(H, 2))]
    state = choosing(3, hands, pot=2, side=DOWN, trump=12)
    after = play_trick(state, {0: card(C, 5), 1: card(S, 5), 2: card(H, 9)})
    # The 5s cancel; Alex's 9 is his own suit (hearts) and the only eligible card.
    assert after.last_result == 2 and after.tricks == (0, 0, 3) and after.pot == 0


def test_last_trick_without_winner_loses_the_pot():
    # "A trick" 3d: if the last trick of a round has no winner, the pot is lost to everyone.
    hands = [(card(S, 5),), (card(H, 5),), (card(C, 9),)]
    state = choosing(3, hands, pot=2)
    after = play_trick(state, {0: card(S, 5), 1: card(H, 5), 2: card(C, 9)})
    assert after.last_result == LOST and after.lost == 3 and after.pot == 0
    assert after.tricks == (0, 0, 0)
    assert R.is_terminal(after) and after.to_play == -1 and R.legal_actions(after) == ()


def test_three_equal_values_all_neutralise():
    hands = [(card(C, 8),), (card(S, 8),), (card(D, 8),), (card(D, 3),)]
    state = choosing(4, hands, side=UP)
    after = play_trick(state, {0: card(C, 8), 1: card(S, 8), 2: card(D, 8), 3: card(D, 3)})
    assert after.last_result == 3  # the 3 in its own suit is the only eligible card


def test_two_trumps_neutralise_each_other():
    # "A trick" 3a: the trump value is neutralised like any other.
    cards = (card(S, 7), card(C, 7), card(H, 3), card(D, 12))
    assert R.trick_winner(cards, UP, 0, 7, 4) == 3
    assert R.trick_winner(cards, DOWN, 0, 7, 4) == 2


@pytest.mark.parametrize("side", [UP, DOWN])
def test_a_trump_beats_everything_under_up_and_down(side):
    # "A trick" 3c: one remaining trump wins, whatever its suit, under UP and DOWN; a 2 even
    # under UP and a queen even under DOWN. Seat 2 owns hearts, so its diamond wins as trump.
    for trump in (2, 7, 12):
        cards = (card(C, 3), card(S, 11), card(D, trump))
        assert R.trick_winner(cards, side, 0, trump, 3) == 2
        assert R.trick_winner(cards, side, 0, 8, 3) == (1 if side == UP else 0)


def test_up_takes_the_highest_and_down_the_lowest_eligible():
    cards = (card(C, 4), card(S, 10), card(H, 6), card(C, 12))  # seat 3 owns diamonds
    assert R.trick_winner(cards, UP, 0, 2, 4) == 1
    assert R.trick_winner(cards, DOWN, 0, 2, 4) == 0


def test_two_players_own_suits_are_opposite():
    # Two players face directions 0 and 2: with orientation 1, spades and diamonds.
    cards = (card(S, 4), card(D, 3))
    assert R.trick_winner(cards, UP, 1, 12, 2) == 0
    assert R.trick_winner(cards, DOWN, 1, 12, 2) == 1
    assert R.trick_winner((card(H, 4), card(S, 3)), UP, 1, 12, 2) == -1


# -- errors ----------------------------------------------------------------------------------


def test_illegal_actions_raise_naming_the_action_and_the_legal_set():
    rng = np.random.default_rng(0)
    state = new_state(4, seed=4)
    own = R.seat_suit(4, state.orientation, state.leader)
    own_rotation = rotate_action(own)
    with pytest.raises(ValueError, match=rf"illegal action {own_rotation} .*legal actions: \["):
        R.apply_action(state, own_rotation, rng)
    with pytest.raises(ValueError, match="illegal action 6 "):
        R.apply_action(state, 6, rng)  # a card before the rules were changed
    state = R.apply_action(state, FLIP, rng)
    absent = next(c for c in range(44) if not state.hands[state.to_play] >> c & 1)
    with pytest.raises(ValueError, match=f"illegal action {play_action(absent)} "):
        R.apply_action(state, play_action(absent), rng)
    for bad in (-1, 50, FLIP, ROLL):
        with pytest.raises(ValueError, match=f"illegal action {bad} "):
            R.apply_action(state, bad, rng)


def test_no_action_after_the_game():
    hands = [(card(S, 5),), (card(H, 5),), (card(C, 9),)]
    state = play_trick(choosing(3, hands), {0: card(S, 5), 1: card(H, 5), 2: card(C, 9)})
    with pytest.raises(ValueError, match="legal actions: \\[\\]"):
        R.apply_action(state, FLIP, np.random.default_rng(0))


# -- rewards and scores ----------------------------------------------------------------------


def test_win_rewards_only_at_the_end_and_ties_share():
    cfg = R.make_config(num_players=3, reward="win")
    hands = [(card(C, 9), card(C, 3)), (card(S, 5), card(S, 4)), (card(C, 10), card(H, 2))]
    state = choosing(3, hands)
    mid = play_trick(state, {0: card(C, 9), 1: card(S, 5), 2: card(C, 10)})
    assert R.rewards(state, mid, cfg) == (0.0, 0.0, 0.0)
    assert R.winners(mid) == ()
    end = R.apply_action(mid, FLIP, np.random.default_rng(0))  # now DOWN
    end = play_trick(end, {1: card(S, 4), 2: card(H, 2), 0: card(C, 3)})
    assert end.tricks == (1, 0, 1) and R.is_terminal(end)
    assert R.rewards(mid, end, cfg) == (1.0, -1.0, 1.0)
    assert R.winners(end) == (0, 2) and R.scores(end) == (1.0, 0.0, 1.0)


def test_trick_rewards_include_the_pot():
    cfg = R.make_config(num_players=3, reward="tricks")
    hands = [(card(C, 5), card(C, 3)), (card(S, 5), card(S, 4)), (card(H, 9), card(H, 2))]
    state = choosing(3, hands, pot=2)
    after = play_trick(state, {0: card(C, 5), 1: card(S, 5), 2: card(H, 9)})
    assert R.rewards(state, after, cfg) == (0.0, 0.0, 3.0)


def test_multi_round_totals():
    # "Round end and game end": tricks add up over rounds; the game has num_rounds * hand tricks.
    pick = random.Random(9)
    for n in (2, 3, 4):
        rng = np.random.default_rng(9)
        cfg = R.make_config(num_players=n, num_rounds=3, reward="tricks")
        state = R.initial_state(cfg, rng)
        earned = [0.0] * n
        while not R.is_terminal(state):
            after = R.apply_action(state, pick.choice(R.legal_actions(state)), rng)
            earned = [e + r for e, r in zip(earned, R.rewards(state, after, cfg))]
            state = after
        assert state.round == 2
        assert sum(state.tricks) + state.lost == 3 * R.HAND_SIZE[n] == R.tricks_played(state)
        assert tuple(earned) == R.scores(state)


# -- habits ("Observation", interpretation choice 10) ----------------------------------------


def test_card_kinds_follow_the_rules_of_their_trick():
    # Trump 7, Kim owns clubs: a 7 is a trump whatever its suit, then own suit, then the value.
    assert R.card_kind(card(H, 7), trump=7, own=C) == 0
    assert R.card_kind(card(C, 7), trump=7, own=C) == 0
    assert R.card_kind(card(C, 12), trump=7, own=C) == 1
    assert R.card_kind(card(C, 2), trump=7, own=C) == 1
    assert [R.card_kind(card(S, v), trump=7, own=C) for v in (2, 3, 11, 12)] == [3, 2, 2, 3]
    assert [R.change_kind(a) for a in (FLIP, rotate_action(S), ROLL)] == [0, 1, 2]


def test_habits_count_each_seats_changes_and_revealed_cards():
    # Example A's trick: Kim (clubs) an own 9, Lea (spades) an own 5, Alex (hearts) a club 10.
    hands = [(card(C, 9), card(C, 3)), (card(S, 5), card(D, 12)), (card(C, 10), card(H, 7))]
    state = choosing(3, hands, side=UP, orientation=0, trump=7)
    state = state._replace(changes=((0, 0, 0),) * 3, kinds=((0, 0, 0, 0),) * 3)
    after = play_trick(state, {0: card(C, 9), 1: card(S, 5), 2: card(C, 10)})
    assert after.kinds == ((0, 1, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0))
    # Lea leads and flips; then the last cards: Kim's 3 is hers, a foreign queen, Alex's trump.
    after = R.apply_action(after, FLIP, np.random.default_rng(0))
    assert after.changes == ((0, 0, 0), (1, 0, 0), (0, 0, 0))
    after = play_trick(after, {1: card(D, 12), 2: card(H, 7), 0: card(C, 3)})
    assert after.kinds == ((0, 2, 0, 0), (0, 1, 0, 1), (1, 0, 1, 0))
    assert after.changes == ((0, 0, 0), (1, 0, 0), (0, 0, 0))


@pytest.mark.parametrize("n", [2, 3, 4])
def test_habits_add_up_over_the_game_and_stay_public(n):
    rng = np.random.default_rng(7)
    pick = random.Random(7)
    cfg = R.make_config(num_players=n, num_rounds=2)
    state = R.initial_state(cfg, rng)
    leads = [0] * n
    while not R.is_terminal(state):
        if state.phase is Phase.CHANGE:
            leads[state.leader] += 1
        state = R.apply_action(state, pick.choice(R.legal_actions(state)), rng)
        # A determinisation redraws hidden cards only: the counts are public.
        assert R.sample_state(state, 0, rng).kinds == state.kinds
    # Every lead made one change and every trick revealed one card per seat, over both rounds.
    assert [sum(c) for c in state.changes] == leads
    assert [sum(k) for k in state.kinds] == [2 * R.HAND_SIZE[n]] * n


# -- invariants over random games ------------------------------------------------------------


def _check_step(before: R.State, action: int, after: R.State) -> None:
    assert is_whole(after)
    assert sum(after.tricks) + after.pot + after.lost == R.tricks_played(after)
    if after.phase is Phase.CHANGE:
        assert len({h.bit_count() for h in after.hands}) == 1
        assert after.pending == (R.NO_CARD,) * after.num_players
    if before.phase is Phase.CHANGE:
        # The leader never leaves the rules unchanged: exactly one of side, suits, trump moves.
        changed = [
            after.side != before.side,
            after.orientation != before.orientation,
            after.trump != before.trump,
        ]
        assert changed == [action == FLIP, action not in (FLIP, ROLL), action == ROLL]
    elif after.round == before.round:
        card_bit = 1 << R.played_card(action)
        assert after.hands[before.to_play] == before.hands[before.to_play] & ~card_bit


@pytest.mark.parametrize("n", [2, 3, 4])
def test_invariants_over_random_games(n):
    rng = np.random.default_rng(100 + n)
    pick = random.Random(n)
    cfg = R.make_config(num_players=n)
    for _ in range(2000):
        state = R.initial_state(cfg, rng)
        assert is_whole(state)
        while not R.is_terminal(state):
            legal = R.legal_actions(state)
            action = legal[pick.randrange(len(legal))]
            after = R.apply_action(state, action, rng)
            _check_step(state, action, after)
            state = after
        assert sum(state.tricks) + state.lost == R.HAND_SIZE[n]
        assert state.hands == (0,) * n and state.pot == 0
