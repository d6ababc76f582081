"""The batched Up & Down heuristic against the readable one it twins.

``updown_env/heuristic.py`` is the reference: the twin must give every legal action the
value the readable agent gives it and take the action it takes. The positions are every
decision of 330 seeded games (2, 3 and 4 players, one or two rounds, heuristic and random
seats): rule changes, card choices early and late in a trick, last tricks with one card left,
the second deal. The heuristic seats are played by the twin itself: these games only make
positions, the comparisons below judge it.
"""

from __future__ import annotations

import numpy as np
import pytest

from updown_env import observation
from updown_env import rules as R
from updown_env.heuristic import HeuristicUpDown, Table
from updown_env.heuristic_batch import act_batch, action_values
from updown_env.observation import OBS_SIZE
from updown_env.rules import NUM_ACTIONS, ROLL

GAMES = 110  # per table size
COMPARED = 3000  # positions compared with the readable agent, drawn from all of them
SEED = 7


def play(n: int, game: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Observations and masks of every decision of one seeded game of ``n`` players."""
    rng = np.random.default_rng([n, game])
    # Every third game all heuristic, every third all random, the rest mixed.
    heuristic = [game % 3 == 0 or (game % 3 == 2 and (seat + game) % 2 == 0) for seat in range(n)]
    config = R.make_config(num_players=n, num_rounds=2 if game % 4 == 3 else 1)
    state = R.initial_state(config, rng)
    obs, masks = [], []
    while not R.is_terminal(state):
        seat = state.to_play
        legal = R.legal_actions(state)
        mask = np.zeros(NUM_ACTIONS, dtype=bool)
        mask[list(legal)] = True
        obs.append(observation.encode(state, seat))
        masks.append(mask)
        if heuristic[seat]:
            action = int(act_batch(obs[-1][None], mask[None], rng)[0])
        else:
            action = legal[rng.integers(len(legal))]
        state = R.apply_action(state, action, rng)
    return obs, masks


@pytest.fixture(scope="module")
def positions() -> tuple[np.ndarray, np.ndarray]:
    """Every decision of the games, shuffled so each batch mixes table sizes and phases."""
    obs, masks = [], []
    for n in (2, 3, 4):
        for game in range(GAMES):
            o, m = play(n, game)
            obs += o
            masks += m
    order = np.random.default_rng(0).permutation(len(obs))
    return np.array(obs)[order], np.array(masks)[order]


@pytest.fixture(scope="module")
def readable(positions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The first COMPARED positions, the readable agent's value of each action there (-inf if
    illegal) and its actions, taken row after row by one agent seeded with SEED."""
    obs, masks = (x[:COMPARED] for x in positions)
    values = np.full(masks.shape, -np.inf)
    weights = HeuristicUpDown()
    for i, (o, m) in enumerate(zip(obs, masks)):
        table = Table(observation.decode(o), weights)  # as HeuristicUpDown.act builds it
        for a in np.flatnonzero(m):
            values[i, a] = table.action_value(int(a))
    agent = HeuristicUpDown(SEED)
    actions = np.array([agent.act(o, m) for o, m in zip(obs, masks)])
    return obs, masks, values, actions


def test_the_positions_cover_every_table_size_and_phase(positions):
    obs, masks = positions
    n = np.argmax(obs[:, observation.LAYOUT.slices["num_players"]], axis=1) + 2
    rule_change = masks[:, : ROLL + 1].any(axis=1)
    single = masks.sum(axis=1) == 1
    second_deal = obs[:, observation.LAYOUT.at["round"]] > 0
    for size in (2, 3, 4):
        mine = n == size
        assert rule_change[mine].sum() > 1000 and (~rule_change[mine]).sum() > 4000
        assert single[mine].sum() > 200 and second_deal[mine].sum() > 1000


def test_action_values_are_the_readable_agents(readable):
    obs, masks, expected, _ = readable
    values = action_values(obs, masks)
    assert values.dtype == np.float64 and values.shape == (COMPARED, NUM_ACTIONS)
    np.testing.assert_array_equal(np.isneginf(values), ~masks)
    np.testing.assert_allclose(values, expected, rtol=1e-9, atol=1e-9)


def test_clear_choices_are_the_readable_agents(readable):
    obs, masks, values, actions = readable
    top2 = np.sort(values, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 1e-5  # -inf second: a single legal action
    assert clear.sum() > COMPARED // 2
    chosen = act_batch(obs, masks, np.random.default_rng(1))
    np.testing.assert_array_equal(chosen[clear], actions[clear])


def test_ties_are_broken_as_the_readable_agent_breaks_them(readable):
    # One generator, the same draws in the same order (a row with one legal action draws
    # nothing): the same seed gives the readable agent's actions in every row, ties included.
    obs, masks, values, actions = readable
    top2 = np.sort(values, axis=1)[:, -2:]
    assert (top2[:, 0] == top2[:, 1]).sum() > 100  # e.g. two off-suit cards of one value
    np.testing.assert_array_equal(act_batch(obs, masks, np.random.default_rng(SEED)), actions)


def test_every_action_is_legal_and_a_seed_repeats_its_actions(positions):
    obs, masks = positions
    actions = act_batch(obs, masks, np.random.default_rng(3))
    assert actions.dtype == np.int64 and actions.shape == (len(obs),)
    assert masks[np.arange(len(obs)), actions].all()
    single = masks.sum(axis=1) == 1
    np.testing.assert_array_equal(actions[single], np.argmax(masks[single], axis=1))
    np.testing.assert_array_equal(act_batch(obs, masks, np.random.default_rng(3)), actions)
    # Another seed (and a mask of ints) breaks some ties the other way, and changes nothing
    # else: where the actions differ, their values are within the noise (1e-9) of each other.
    other = act_batch(obs, masks.astype(np.int8), np.random.default_rng(4))
    differ = np.flatnonzero(other != actions)
    assert differ.size > 0
    values = action_values(obs[differ], masks[differ])
    rows = np.arange(differ.size)
    np.testing.assert_allclose(
        values[rows, other[differ]], values[rows, actions[differ]], rtol=0, atol=1e-9
    )


def test_an_empty_batch():
    obs = np.zeros((0, OBS_SIZE), dtype=np.float32)
    mask = np.zeros((0, NUM_ACTIONS), dtype=bool)
    actions = act_batch(obs, mask, np.random.default_rng(0))
    assert actions.dtype == np.int64 and actions.shape == (0,)
    assert action_values(obs, mask).shape == (0, NUM_ACTIONS)


@pytest.mark.parametrize(
    "obs_shape, mask_shape, message",
    [
        ((OBS_SIZE,), (1, NUM_ACTIONS), "obs must have shape"),
        ((2, OBS_SIZE - 1), (2, NUM_ACTIONS), "obs must have shape"),
        ((2, OBS_SIZE), (2, NUM_ACTIONS - 1), "mask must have shape"),
        ((2, OBS_SIZE), (3, NUM_ACTIONS), "mask must have shape"),
        ((2, OBS_SIZE), (NUM_ACTIONS,), "mask must have shape"),
    ],
)
def test_wrong_shapes_are_refused(positions, obs_shape, mask_shape, message):
    obs = np.resize(positions[0][:3], obs_shape)
    mask = np.resize(positions[1][:3], mask_shape)
    for call in (
        lambda: act_batch(obs, mask, np.random.default_rng(0)),
        lambda: action_values(obs, mask),
    ):
        with pytest.raises(ValueError, match=message) as error:
            call()
        assert "\n" not in str(error.value)


def test_a_row_with_no_legal_action_is_refused(positions):
    obs, masks = (x[:4].copy() for x in positions)
    masks[2] = False
    with pytest.raises(ValueError, match="mask row 2 allows no action"):
        act_batch(obs, masks, np.random.default_rng(0))
