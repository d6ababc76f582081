"""King Up! batched engine (kingup_env/engine.py) against the readable rules core, step by step.

Every kernel is compiled once per process (numba's cache keeps them across processes); the
``engine`` fixture triggers that compilation for the serial and the parallel kernels.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import pick

from kingup_env import engine as E
from kingup_env import observation as O
from kingup_env import rules as R
from kingup_env.rules import ELIMINATED, NO, THRONE, YES, Phase
from tablegym.vector import VectorGame
from tablegym.vector.engine import EngineBackend
from tests.kingup_positions import N, climb, climbing_state, election, random_positions

SERIAL, PARALLEL = E.PARALLEL_FROM - 1, E.PARALLEL_FROM


@pytest.fixture(scope="session")
def engine():
    """Compile every kernel once for the whole test session (serial and parallel twins)."""
    for size in (1, E.PARALLEL_FROM):
        vg = VectorGame("kingup", size, seed=0, backend="numba")
        vg.reset()
        vg.step(pick(np.random.default_rng(0), vg.mask))
        vg.observe(np.zeros(size, dtype=np.int64))
        vg._impl.random_play(1)
    return E


class DeckRng:
    """A stand-in generator whose ``permutation`` returns a given deck order."""

    def __init__(self, order: tuple[int, ...]) -> None:
        self.order = order

    def permutation(self, size: int) -> np.ndarray:
        assert size == len(self.order)
        return np.array(self.order)


def check_dealt(state: R.State, config: R.Config) -> None:
    """A dealt game is ``rules.initial_state`` with some deck order."""
    order = state.favourites + state.deck
    assert sorted(order) == list(range(R.NUM_CARDS))
    assert state == R.initial_state(config, DeckRng(order))


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-identical float32 arrays (so -0.0 differs from 0.0)."""
    return a.dtype == b.dtype == np.float32 and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def differential(n: int, reward: str, num_rounds: int, size: int, games: int, seed: int) -> int:
    """Random games on the engine and the rules core side by side; return the steps checked.

    At every step: the seat to act, the mask, the observation of the seat to act and of a
    random seat, the rewards, ``done``, and the whole state after the action (King Up draws all
    chance at the deal, so every action is chance-free); finished games are checked as deals.
    """
    config = R.make_config(num_players=n, reward=reward, num_rounds=num_rounds)
    vg = VectorGame("kingup", size, seed=seed, backend="numba", num_players=n, reward=reward,
                    num_rounds=num_rounds)  # fmt: skip
    rng = np.random.default_rng(seed)
    obs, mask, seat = vg.reset()
    states = [vg.get_state(i) for i in range(size)]
    for s in states:
        check_dealt(s, config)
    finished = steps = 0
    while finished < games:
        seats = rng.integers(n, size=size)
        seen = vg.observe(seats)
        for i, s in enumerate(states):
            assert seat[i] == s.to_play
            assert np.flatnonzero(mask[i]).tolist() == list(R.legal_actions(s))
            assert same_bits(obs[i], O.encode(s, s.to_play))
            assert same_bits(seen[i], O.encode(s, int(seats[i])))
        actions = pick(rng, mask)
        obs, mask, seat, rewards, done = vg.step(actions)
        steps += size
        for i, (before, a) in enumerate(zip(states, actions.tolist())):
            after = R.apply_action(before, a)
            expected = np.array(R.rewards(before, after, config), dtype=np.float32)
            assert same_bits(rewards[i], expected), (before, a)
            assert done[i] == R.is_terminal(after)
            if done[i]:
                finished += 1
                states[i] = vg.get_state(i)
                check_dealt(states[i], config)
            else:
                assert vg.get_state(i) == after, (before, a)
                states[i] = after
    return steps


# -- differential tests ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "reward", "num_rounds", "size", "games"),
    [
        (3, "win", 3, SERIAL, 3 * SERIAL),
        (4, "score", 3, PARALLEL, 3 * PARALLEL),
        (5, "relative", 3, 7, 60),
        (6, "win", 1, 5, 60),
    ],
)
def test_engine_matches_the_rules_core_step_by_step(engine, n, reward, num_rounds, size, games):
    steps = differential(n, reward, num_rounds, size, games, seed=n)
    assert steps >= 30 * games  # whole games were played (a round takes at least 4n + 1 steps)


@pytest.mark.slow
@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_engine_matches_the_rules_core_over_thousands_of_games(engine, n):
    # 400 games per player count, 1,600 in all. The reward changes only what a step pays, and
    # the step-by-step test above checks each; here the three rewards take turns over the three
    # batch shapes, so that across the player counts each meets every shape.
    shapes = ((PARALLEL, 3, 150), (SERIAL, 3, 150), (PARALLEL, 1, 100))
    for k, (size, num_rounds, games) in enumerate(shapes):
        reward = R.REWARDS[(k + n) % len(R.REWARDS)]
        differential(n, reward, num_rounds, size, games, seed=100 * (k + 1) + n)


# -- deal and generator ------------------------------------------------------------------------


def test_same_seed_same_games_and_every_slot_its_own_deal(engine):
    a = VectorGame("kingup", 32, seed=7, backend="numba")
    b = VectorGame("kingup", 32, seed=7, backend="numba")
    c = VectorGame("kingup", 32, seed=8, backend="numba")
    for vg in (a, b, c):
        vg.reset()
    decks = [[vg.get_state(i).deck for i in range(32)] for vg in (a, b, c)]
    assert decks[0] == decks[1]
    assert decks[0] != decks[2]
    assert len(set(decks[0])) == 32


def test_the_shuffle_puts_each_card_anywhere_uniformly(engine):
    # Fisher-Yates with the bounded draw: card 0's position over 5,200 deals is uniform on
    # 0..25 (expected 200 per position, standard deviation about 14).
    vg = VectorGame("kingup", 5200, seed=1, backend="numba", num_players=3)
    vg.reset()
    deck = vg._impl.states[:, E.DECK : E.DECK + E.NUM_CARDS]
    positions = np.argmax(deck == 0, axis=1)
    counts = np.bincount(positions, minlength=26)
    assert counts.min() > 130 and counts.max() < 270, counts


# -- set_state: worked example and hand-built positions ----------------------------------------

WORKED_CASTLE = {"Fiorello": THRONE, "Beatrice": 5, "Odessa": 4, "Erisco": 3, "Iris": 3,
                 "Dario": 2, "Piero": 2}  # fmt: skip
WORKED_CARDS = [
    (("Beatrice", "Clemente", "Dario", "Erisco", "Iris", "Odessa"), 17),
    (("Alighiero", "Dario", "Erisco", "Fiorello", "Gasparo", "Merlino"), 15),
    (("Erisco", "Fiorello", "Iris", "Merlino", "Odessa", "Piero"), 22),
    (("Alighiero", "Clemente", "Erisco", "Fiorello", "Natale", "Odessa"), 17),
]


@pytest.mark.parametrize("rest", [0, ELIMINATED])
def test_worked_example_scores_with_the_engine(engine, rest):
    # "Worked example": the rulebook's own cards, scored by the engine's scoring kernel.
    floors = np.array([WORKED_CASTLE.get(name, rest) for name in R.NAMES], dtype=np.int64)
    for card, points in WORKED_CARDS:
        assert E.score_card(floors, np.array([N[c] for c in card]), 0) == points


def test_worked_example_election_through_set_state(engine):
    # The worked example's castle with Fiorello on floor 5; seat 1 moves him onto the throne,
    # everyone votes YES, and each seat scores its (table) card on that castle.
    castle = {name: 5 if f == THRONE else f for name, f in WORKED_CASTLE.items()}
    state = climbing_state(4, **castle)._replace(to_play=1, favourites=(0, 5, 14, 20))
    vg = VectorGame("kingup", 3, seed=0, backend="numba", reward="score")
    vg.reset()
    vg.set_state(2, state)
    assert vg.get_state(2) == state
    actions = vg.mask.argmax(1)
    actions[2] = climb("Fiorello")
    obs, mask, seat, rewards, done = vg.step(actions)
    assert np.flatnonzero(mask[2]).tolist() == [YES, NO] and seat[2] == 1
    for voter in (1, 2, 3, 0):
        assert seat[2] == voter
        actions = mask.argmax(1)
        actions[2] = YES
        obs, mask, seat, rewards, done = vg.step(actions)
    points = [
        sum(R.candidate_points(WORKED_CASTLE.get(R.NAMES[c], 0)) for c in R.FAVOURITE_CARDS[k])
        for k in state.favourites
    ]
    after = vg.get_state(2)
    assert after.round_scores == (tuple(points),) and after.king == N["Fiorello"]
    assert rewards[2].tolist() == pytest.approx([p / 33 for p in points])
    assert after.round == 1 and after.starter == 2 == seat[2]  # left of the crown holder


@pytest.mark.parametrize("n", [3, 6])
def test_set_state_round_trips_and_observes_hand_built_and_random_positions(engine, n):
    positions = random_positions(n, games=3, seed=n, every=3)
    full = climbing_state(n, Alighiero=4, Beatrice=4, Clemente=4, Dario=4, Erisco=3, Iris=5)
    broke = election(n, mover=0)._replace(no_left=(0,) * n)
    positions = [s for s in positions if not R.is_terminal(s)] + [full, broke]
    vg = VectorGame("kingup", 2, seed=0, backend="numba", num_players=n)
    for s in positions:
        vg.set_state(1, s)
        assert vg.get_state(1) == s
        assert np.flatnonzero(vg.mask[1]).tolist() == list(R.legal_actions(s))
        for seat in range(n):
            assert same_bits(vg.observe(np.array([0, seat]))[1], O.encode(s, seat))


def test_from_state_and_to_state_are_inverse_on_rows(engine):
    vg = VectorGame("kingup", 16, seed=3, backend="numba", num_players=5)
    vg.reset()
    rng = np.random.default_rng(0)
    for _ in range(150):
        vg.step(pick(rng, vg.mask))
    config = vg.config
    for i in range(16):
        row = vg._impl.states[i]
        again = E.from_state(E.to_state(row, config), config)
        top = row[E.DECK_TOP]
        # The dealt part of the deck is no state: from_state leaves it 0.
        assert np.array_equal(again[: E.DECK], row[: E.DECK])
        assert not again[E.DECK : E.DECK + top].any()
        assert np.array_equal(again[E.DECK + top :], row[E.DECK + top :])


# -- in-numba random play ----------------------------------------------------------------------


@pytest.mark.parametrize("size", [SERIAL, PARALLEL])
def test_random_play_leaves_valid_games(engine, size):
    config = R.make_config(num_players=4)
    backend = EngineBackend("kingup", config, np.random.SeedSequence(0).spawn(size))
    backend.reset()
    assert E.random_play(backend.states, backend.rngs, backend.consts, 300) == 300 * size
    rounds = set()
    for i in range(size):
        s = backend.get_state(i)
        rounds.add((s.round, len(s.round_scores)))
        assert s.phase is not Phase.GAME_OVER and R.legal_actions(s)
        assert all(k >= 0 for k in s.no_left)
        assert max(s.floors.count(f) for f in range(6)) <= R.CAPACITY
        assert sorted(s.favourites + s.deck + sum(s.revealed, ())) == sorted(
            set(s.favourites + s.deck + sum(s.revealed, ()))
        )
    assert len(rounds) > 1  # the games moved on, over several rounds


# -- bad input ---------------------------------------------------------------------------------


def test_bad_input_names_it(engine):
    vg = VectorGame("kingup", 4, seed=0, backend="numba")
    vg.reset()
    with pytest.raises(ValueError, match=r"actions must be an integer array of shape \(4,\)"):
        vg.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match="actions must be an integer array"):
        vg.step(np.zeros(4, dtype=np.float32))
    actions = vg.mask.argmax(1)
    actions[2] = R.YES
    with pytest.raises(ValueError, match=r"illegal action 65 in slot 2; legal actions: \[0, 1,"):
        vg.step(actions)
    with pytest.raises(ValueError, match="unknown option 'colour'"):
        VectorGame("kingup", 4, backend="numba", colour="red")
    with pytest.raises(ValueError, match="num_games must be an integer >= 1"):
        VectorGame("kingup", 0, backend="numba")
    from updown_env import rules as U

    other = U.initial_state(U.make_config(), np.random.default_rng(0))
    with pytest.raises(ValueError, match="expected a kingup rules.State"):
        vg.set_state(0, other)
    with pytest.raises(ValueError, match="the state has 3 players, this batch 4"):
        vg.set_state(0, R.initial_state(R.make_config(num_players=3), np.random.default_rng(0)))
    one_round = R.initial_state(R.make_config(num_rounds=1), np.random.default_rng(0))
    with pytest.raises(ValueError, match="num_rounds=1; this engine 4, 3"):
        vg.set_state(0, one_round)
    assert vg.get_state(0) != one_round  # the slot is unchanged
