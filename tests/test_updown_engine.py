"""The Up & Down numba engine against the readable rules core, step by step.

Random games run through ``VectorGame(backend="numba")`` and, move for move, through
``rules.apply_action``; at every step masks, seats, observations (bit for bit), rewards and
``done`` must agree, and after every chance-free action the whole state. After a chance move
(ROLL, a new deal) the engine's outcome is checked to be one the rules allow and the oracle
continues from it. The worked examples of ``docs/updown_rules.md`` run through ``set_state``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from updown_positions import ALL_CARDS, C, D, H, S, card, is_whole, mask

from tablegym.vector import VectorGame
from updown_env import engine as E
from updown_env import rules as R
from updown_env.observation import encode
from updown_env.rules import FLIP, LOST, POT, ROLL, UP, Phase, play_action

OPTIONS = [
    dict(num_players=2),
    dict(num_players=3),
    dict(num_players=4),
    dict(num_players=2, num_rounds=3, reward="tricks"),
    dict(num_players=3, num_rounds=2, reward="tricks"),
    dict(num_players=4, num_rounds=2),
]


def _bits(x: np.ndarray) -> np.ndarray:
    """float32 values as their bit patterns, so -0.0 and 0.0 differ."""
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


def _mask_of(state: R.State) -> np.ndarray:
    m = np.zeros(R.NUM_ACTIONS, dtype=bool)
    m[list(R.legal_actions(state))] = True
    return m


def _check_deal(state: R.State, new_game: bool) -> None:
    """A freshly dealt round is one the rules can deal ("Setup of a round")."""
    n = state.num_players
    assert is_whole(state)
    assert [h.bit_count() for h in state.hands] == [R.HAND_SIZE[n]] * n
    assert state.played == (0,) * n and state.pending == (R.NO_CARD,) * n and state.pot == 0
    assert state.phase is Phase.CHANGE and state.to_play == state.leader
    assert state.orientation in R.THROW_ORIENTATIONS[n]
    assert state.leader == R.clubs_seat(n, state.orientation)
    assert 2 <= state.trump <= 12 and state.side in (0, 1)
    if new_game:
        assert state.round == 0 and state.tricks == (0,) * n and state.lost == 0
        assert state.last_result == R.NO_TRICK and state.last_trick == (R.NO_CARD,) * n


# Fields a new deal draws; everything else follows from the move.
_DEALT = ("phase", "to_play", "leader", "side", "orientation", "trump", "hands", "aside")


def _check_step(before: R.State, action: int, oracle: R.State, engine: R.State, done: bool):
    """The engine's state after ``action`` against the oracle's: equal where no chance was
    drawn, a legal outcome where it was."""
    if done:
        assert R.is_terminal(oracle)
        _check_deal(engine, new_game=True)
    elif before.phase is Phase.CHANGE and action == ROLL:
        # "A trick" 1: ROLL changes only the trump value, never to the old one.
        assert engine._replace(trump=oracle.trump) == oracle
        assert engine.trump != before.trump and 2 <= engine.trump <= 12
    elif oracle.round != before.round:
        # A new round: the totals and the last trick carry over, the deal is new.
        assert engine._replace(**{f: getattr(oracle, f) for f in _DEALT}) == oracle
        _check_deal(engine, new_game=False)
    else:
        assert engine == oracle


@pytest.fixture(autouse=True)
def parallel_from_64_rows(monkeypatch):
    """Batches of 64 rows or more take the prange kernels, so the tests cover both."""
    monkeypatch.setattr(E, "PARALLEL_FROM", 64)


def _play(options: dict, num_games: int, steps: int, seed: int) -> int:
    """``steps`` random moves in ``num_games`` slots, checked against the rules; games done."""
    vg = VectorGame("updown", num_games, seed=seed, backend="numba", **options)
    cfg = vg.config
    rng = np.random.default_rng(seed)
    oracle_rng = np.random.default_rng(seed + 1)
    obs, mask, seat = vg.reset()
    states = [vg.get_state(i) for i in range(num_games)]
    for state in states:
        _check_deal(state, new_game=True)
    finished = 0
    for t in range(steps):
        for i, state in enumerate(states):
            assert seat[i] == state.to_play
            assert np.array_equal(mask[i], _mask_of(state)), i
            assert np.array_equal(_bits(obs[i]), _bits(encode(state, state.to_play))), i
        if t % 7 == 0:  # every seat's view, not only the seat to act
            for q in range(cfg.num_players):
                seen = vg.observe(np.full(num_games, q))
                for i, state in enumerate(states):
                    assert np.array_equal(_bits(seen[i]), _bits(encode(state, q)))
        # A uniformly random legal action per slot, picked by numpy.
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in mask])
        obs, mask, seat, rewards, done = vg.step(actions)
        for i, before in enumerate(states):
            oracle = R.apply_action(before, int(actions[i]), oracle_rng)
            assert tuple(rewards[i]) == R.rewards(before, oracle, cfg)
            assert done[i] == R.is_terminal(oracle)
            after = vg.get_state(i)
            _check_step(before, int(actions[i]), oracle, after, bool(done[i]))
            states[i] = after
        finished += int(done.sum())
    return finished


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "-".join(map(str, o.values())))
def test_random_games_match_the_rules(options):
    # 120 games per option set, 240 per player count (B 24 takes the serial kernels, B 72 the
    # prange ones); test_many_random_games_match_the_rules plays 3072 per option set.
    n, rounds = options["num_players"], options.get("num_rounds", 1)
    length = rounds * R.HAND_SIZE[n] * (n + 1)  # every game has exactly this many moves
    finished = _play(options, 24, 2 * length + 5, seed=n) + _play(options, 72, length, seed=7)
    assert finished == 24 * 2 + 72


@pytest.mark.slow
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "-".join(map(str, o.values())))
def test_many_random_games_match_the_rules(options):
    n, rounds = options["num_players"], options.get("num_rounds", 1)
    length = rounds * R.HAND_SIZE[n] * (n + 1)
    # 2 option sets x 512 games per player count keep CI's share of this under a minute.
    assert _play(options, 256, 2 * length, seed=100 + n) == 256 * 2


# -- worked examples through set_state -------------------------------------------------------


def choosing(n: int, hands: list[tuple[int, ...]], **fields) -> R.State:
    """A hand-built state at the card choice of a trick, leader seat 0; other cards set aside."""
    held = mask(*(c for h in hands for c in h))
    state = R.initial_state(R.make_config(num_players=n), np.random.default_rng(0))
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
    base["to_play"] = base["leader"]
    return state._replace(**base)


def _trick(state: R.State, cards: dict[int, int], **options) -> tuple[R.State, np.ndarray]:
    """Load ``state`` into slot 1 of a batch and let each seat choose its card in ``cards``;
    the resulting engine state (checked against the rules) and the last step's rewards."""
    vg = VectorGame("updown", 3, seed=0, backend="numba", num_players=state.num_players, **options)
    vg.reset()
    vg.set_state(1, state)
    oracle = state
    rewards = done = None
    for _ in range(state.num_players):
        action = play_action(cards[oracle.to_play])
        actions = np.where(vg.mask[:, action], action, vg.mask.argmax(axis=1))
        _, _, seat, rewards, done = vg.step(actions)
        before, oracle = oracle, R.apply_action(oracle, action, np.random.default_rng(0))
        assert tuple(rewards[1]) == R.rewards(before, oracle, vg.config)
    if not done[1]:
        assert vg.get_state(1) == oracle and seat[1] == oracle.to_play
    return oracle, rewards[1]


def test_example_a_own_suit_beats_a_higher_foreign_card():
    # Example A (UP): Kim 9 of her suit, Lea 5 of hers, Alex 10 of clubs, not his suit.
    hands = [(card(C, 9), card(C, 3)), (card(S, 5), card(S, 4)), (card(C, 10), card(H, 2))]
    after, _ = _trick(choosing(3, hands), {0: card(C, 9), 1: card(S, 5), 2: card(C, 10)})
    assert after.last_result == 0 and after.tricks == (1, 0, 0)
    assert after.phase is Phase.CHANGE and after.leader == 1 == after.to_play  # "A trick" 4


def test_example_b_two_queens_neutralise_and_the_jack_wins():
    # Example B (UP): two queens, one in its player's own suit, cancel; the own-suit jack wins.
    hands = [(card(C, 12), card(C, 3)), (card(H, 12), card(S, 4)), (card(H, 11), card(H, 2))]
    after, _ = _trick(choosing(3, hands), {0: card(C, 12), 1: card(H, 12), 2: card(H, 11)})
    assert after.last_result == 2 and after.tricks == (0, 0, 1)


def test_example_c_two_trumps_neutralise_and_the_trick_goes_to_the_pot():
    # Example C: trump 7; Kim's and Lea's 7s cancel; Alex's card is not his suit -> pot.
    hands = [(card(C, 7), card(C, 3)), (card(H, 7), card(S, 4)), (card(C, 10), card(H, 2))]
    state = choosing(3, hands, trump=7)
    after, _ = _trick(state, {0: card(C, 7), 1: card(H, 7), 2: card(C, 10)})
    assert after.last_result == POT and after.pot == 1 and after.tricks == (0, 0, 0)


def test_the_pot_goes_to_the_next_winner_with_trick_rewards():
    # "A trick" 3d: the winner takes the pot too; reward "tricks" pays them all at once.
    hands = [(card(C, 5), card(C, 3)), (card(S, 5), card(S, 4)), (card(H, 9), card(H, 2))]
    state = choosing(3, hands, pot=2, side=R.DOWN, trump=12)
    after, rewards = _trick(state, {0: card(C, 5), 1: card(S, 5), 2: card(H, 9)}, reward="tricks")
    assert after.last_result == 2 and after.tricks == (0, 0, 3) and tuple(rewards) == (0, 0, 3)


def test_last_trick_without_winner_loses_the_pot_and_ends_the_game():
    hands = [(card(S, 5),), (card(H, 5),), (card(C, 9),), (card(D, 9),)]
    state = choosing(4, hands, pot=2, tricks=(1, 0, 0, 1))
    after, rewards = _trick(state, {0: card(S, 5), 1: card(H, 5), 2: card(C, 9), 3: card(D, 9)})
    assert after.last_result == LOST and after.lost == 3 and R.is_terminal(after)
    assert tuple(rewards) == (1, -1, -1, 1)  # a tie is a shared win


# -- options, seeds, batches, bad input ------------------------------------------------------


def test_same_seed_same_games_and_serial_equals_parallel():
    # Rows are independent: the first 8 slots of a 96-game batch (the parallel kernel) play
    # the very games of an 8-game batch (serial) from the same seed.
    small = VectorGame("updown", 8, seed=5, backend="numba", num_players=4)
    large = VectorGame("updown", 96, seed=5, backend="numba", num_players=4)
    again = VectorGame("updown", 8, seed=5, backend="numba", num_players=4)
    other = VectorGame("updown", 8, seed=6, backend="numba", num_players=4)
    outs = [vg.reset() for vg in (small, large, again, other)]
    rng = np.random.default_rng(0)
    for _ in range(150):
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in outs[1][1]])
        outs[1] = large.step(actions)
        outs[0] = small.step(actions[:8])
        outs[2] = again.step(actions[:8])
        for a, b, c in zip(outs[0], outs[1], outs[2]):
            assert np.array_equal(a, b[:8]) and np.array_equal(a, c)
    assert [small.get_state(i) for i in range(8)] == [again.get_state(i) for i in range(8)]
    assert small.get_state(0) != other.get_state(0) or small.get_state(1) != other.get_state(1)


def _chi2(counts: np.ndarray, probs: np.ndarray) -> float:
    expected = counts.sum() * probs
    return float(((counts - expected) ** 2 / expected).sum())


@pytest.mark.parametrize("n", [2, 3, 4])
def test_deal_dice_and_throw_follow_the_rules_distribution(n):
    # "Setup of a round": uniform deal, 2d6 trump, side 1/2, orientation uniform among those
    # where clubs faces a seat. Chi-square bounds are far in the tail (p < 1e-6).
    games = 4000
    vg = VectorGame("updown", games, seed=11, backend="numba", num_players=n)
    vg.reset()
    states = [vg.get_state(i) for i in range(games)]
    dice = np.array([6 - abs(7 - v) for v in range(2, 13)]) / 36
    trumps = np.bincount([s.trump for s in states], minlength=13)[2:]
    assert _chi2(trumps, dice) < 50  # 10 degrees of freedom
    throws = R.THROW_ORIENTATIONS[n]
    seen = np.array([sum(s.orientation == r for s in states) for r in throws])
    assert _chi2(seen, np.full(len(throws), 1 / len(throws))) < 35
    sides = np.bincount([s.side for s in states], minlength=2)
    assert _chi2(sides, np.array([0.5, 0.5])) < 25
    # Card c lands in seat 0's hand with probability h/44.
    held = np.array([[s.hands[0] >> c & 1 for c in range(R.NUM_CARDS)] for s in states]).sum(0)
    h = R.HAND_SIZE[n]
    assert np.all(np.abs(held - games * h / 44) < 6 * np.sqrt(games * h / 44 * (1 - h / 44)))


def test_roll_draws_from_two_dice_given_a_new_value():
    # "A trick" 1: re-roll while the value equals the old one.
    games = 4000
    vg = VectorGame("updown", games, seed=3, backend="numba", num_players=3)
    vg.reset()
    for i in range(games):
        vg.set_state(i, vg.get_state(i)._replace(trump=7))
    vg.step(np.full(games, ROLL))
    trumps = np.bincount([vg.get_state(i).trump for i in range(games)], minlength=13)[2:]
    assert trumps[5] == 0
    probs = np.array([6 - abs(7 - v) for v in range(2, 13)], dtype=float)
    probs[5] = 0
    keep = probs > 0
    assert _chi2(trumps[keep], probs[keep] / probs.sum()) < 45


def test_random_play_keeps_games_whole_and_rows_independent():
    vg = VectorGame("updown", 64, seed=2, backend="numba", num_players=4)
    vg.reset()
    impl = vg._impl
    states, rngs = impl.states[:8].copy(), impl.rngs[:8].copy()
    assert E.random_play(impl.states, impl.rngs, impl.consts, 300) == 64 * 300  # prange
    assert E.random_play(states, rngs, impl.consts, 300) == 8 * 300  # serial
    assert np.array_equal(states, impl.states[:8]) and np.array_equal(rngs, impl.rngs[:8])
    for i in range(64):
        state = vg.get_state(i)
        assert is_whole(state) and not R.is_terminal(state)
        assert sum(state.tricks) + state.pot + state.lost == R.tricks_played(state)


def test_bad_input_names_it():
    vg = VectorGame("updown", 4, seed=0, backend="numba", num_players=3)
    _, mask, _ = vg.reset()
    actions = mask.argmax(axis=1)
    actions[2] = play_action(0) if not mask[2, play_action(0)] else FLIP
    with pytest.raises(ValueError, match="in slot 2"):
        vg.step(actions)
    with pytest.raises(ValueError, match="integer array"):
        vg.step(mask.argmax(axis=1).astype(np.float32))
    with pytest.raises(ValueError, match="num_rounds=2"):
        cfg = R.make_config(num_players=3, num_rounds=2)
        vg.set_state(0, R.initial_state(cfg, np.random.default_rng(0)))
    with pytest.raises(ValueError, match="4 players"):
        cfg = R.make_config(num_players=4)
        vg.set_state(0, R.initial_state(cfg, np.random.default_rng(0)))
    with pytest.raises(ValueError, match="rules.State"):
        vg.set_state(0, (1, 2, 3))
    with pytest.raises(ValueError, match="num_games"):
        VectorGame("updown", 0, backend="numba")
    with pytest.raises(ValueError, match="reward"):
        VectorGame("updown", 2, backend="numba", reward="points")


def test_state_round_trip_and_layout_documented():
    vg = VectorGame("updown", 6, seed=1, backend="numba", num_players=2, num_rounds=2)
    vg.reset()
    for i in range(6):
        state = vg.get_state(i)
        assert E.to_state(E.from_state(state, vg.config), vg.config) == state
    # The column table of the module docstring gives every column constant its offset.
    table = re.findall(r"^    (\d+)(?:–\d+)?\s+``(\w+)``", E.__doc__, flags=re.M)
    assert len(table) == 18
    assert all(getattr(E, name) == int(offset) for offset, name in table)
    assert E.NUM_COLUMNS == E.KINDS + R.MAX_PLAYERS * len(R.CARD_KINDS)
