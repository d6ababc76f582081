"""``heuristic_batch.act_batch``, the compiled KdK heuristic over many rows at once: the
agent's decisions, row by row.

Positions come from seeded games of every table size, level and deck mode, played at random
(``kdk_positions.positions``) and greedily with some random moves (``kdk_positions.greedy``).
The agent's actions on them were recorded with the heuristic as it was before the batched path
(kdk_env/heuristic.py as of commit 7ed570c): a changed decision anywhere fails here. Then
games that the twin plays, compared with the readable agent at every step.
"""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pytest
from helpers import pick
from kdk_positions import greedy, positions

from kdk_env import observation
from kdk_env import rules as R
from kdk_env.heuristic import HeuristicKdK
from kdk_env.heuristic_batch import act_batch

CONFIGS = list(itertools.product((2, 3, 4, 5), (8, 9, 10), ("one_colour", "own_decks")))
SEED = 2024
# HeuristicKdK(SEED).act on every position in order, before the batched path: the first 300
# actions, and the SHA-256 of all of them (one byte each).
FIRST_ACTIONS = (
    "0 7 0 0 0 0 16 2 17 6 17 17 17 2 34 1 1 18 1 7 0 10 0 1 1 0 0 7 0 1 11 4 8 8 17 2 0 9 6 "
    "9 16 5 11 2 4 11 0 16 18 2 16 0 4 5 16 18 6 16 16 0 18 16 0 18 16 16 0 18 16 0 16 5 16 7 "
    "16 12 16 12 16 12 0 3 4 4 16 18 16 16 0 18 16 0 18 16 10 11 16 0 18 16 0 18 16 8 18 0 16 "
    "10 10 1 1 1 16 1 3 4 16 9 6 16 9 7 7 16 16 12 9 16 12 12 16 17 5 2 16 3 5 16 6 16 9 1 16 "
    "7 7 16 7 9 6 7 17 12 3 16 16 3 0 10 12 16 16 0 0 5 0 16 16 16 0 5 12 8 16 16 6 16 8 8 0 "
    "9 0 3 16 8 16 17 0 4 17 16 8 12 12 12 9 12 12 12 16 10 16 6 7 17 0 16 16 4 5 5 5 0 0 0 9 "
    "0 10 0 0 0 2 2 3 3 3 4 4 34 7 3 3 4 4 5 0 9 7 0 9 0 0 12 0 0 1 2 12 0 12 0 0 0 10 16 16 "
    "6 7 8 0 12 12 12 12 12 0 0 10 10 0 16 11 16 16 16 16 0 3 16 0 17 0 16 0 16 4 16 17 12 17 "
    "9 11 17 7 16 0 16 11 2 2 18 "
)
ALL_ACTIONS_SHA256 = "ecf56f44007446709531a4be97a0ebf5eb86eb32ac9c0bd8901ec5c5df4bbe58"


def greedy_states(n: int, level: int, deck_mode: str, seed: int):
    """Every state of a 3-round game of the greedy play-out policy with 20 % random moves."""
    rng = np.random.default_rng(seed)
    cfg = R.make_config(
        num_players=n, level=level, deck_mode=deck_mode, num_rounds=3, auto_pass=seed % 2 == 1
    )
    state = R.initial_state(cfg, rng)
    while not R.is_terminal(state):
        yield state
        state = R.apply_action(state, greedy(state, rng, eps=0.2), rng)


def position_batch() -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks of the seat to play, over all configurations (6,515 rows)."""
    obs, masks = [], []
    for i, (n, level, mode) in enumerate(CONFIGS):
        states = itertools.chain(
            positions(n, level, mode, seed=i, every=3), greedy_states(n, level, mode, 100 + i)
        )
        for state in states:
            if R.is_terminal(state):
                continue
            obs.append(observation.encode(state, state.to_play))
            mask = np.zeros(R.NUM_ACTIONS, dtype=bool)
            mask[list(R.legal_actions(state))] = True
            masks.append(mask)
    return np.array(obs), np.array(masks)


@pytest.fixture(scope="module")
def batch() -> tuple[np.ndarray, np.ndarray]:
    return position_batch()


def digest(actions) -> str:
    return hashlib.sha256(np.asarray(actions, dtype=np.uint8).tobytes()).hexdigest()


def in_chunks(obs, mask, rng, sizes):
    """act_batch over consecutive chunks of the given sizes (the last one repeats)."""
    out, start = [], 0
    for size in itertools.chain(sizes, itertools.repeat(sizes[-1])):
        if start >= len(obs):
            return np.concatenate(out)
        out.append(act_batch(obs[start : start + size], mask[start : start + size], rng))
        start += size


def test_the_agent_decides_as_recorded(batch):
    obs, mask = batch
    agent = HeuristicKdK(SEED)
    actions = [agent.act(o, m) for o, m in zip(obs, mask)]
    expected = [int(a) for a in FIRST_ACTIONS.split()]
    assert actions[: len(expected)] == expected
    assert digest(actions) == ALL_ACTIONS_SHA256


def test_act_batch_decides_as_recorded(batch):
    # One call over every configuration at once: rows of different games in one batch.
    obs, mask = batch
    actions = act_batch(obs, mask, np.random.default_rng(SEED))
    assert actions.dtype == np.int64 and actions.shape == (len(obs),)
    assert digest(actions) == ALL_ACTIONS_SHA256
    assert mask[np.arange(len(obs)), actions].all()


@pytest.mark.parametrize("seed, sizes", [(7, (1, 2, 5, 64, 256)), (8, (1000,))])
def test_act_batch_is_the_agent_row_by_row(batch, seed, sizes):
    # Another seed, so that other exact ties are broken: the same numbers are drawn in the
    # same order, and both generators end in the same state.
    obs, mask = batch
    agent = HeuristicKdK(seed)
    expected = [agent.act(o, m) for o, m in zip(obs, mask)]
    rng = np.random.default_rng(seed)
    assert in_chunks(obs, mask, rng, sizes).tolist() == expected
    assert rng.bit_generator.state == agent.rng.bit_generator.state


def test_an_empty_batch_gives_no_actions():
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    obs = np.zeros((0, observation.OBS_SIZE), dtype=np.float32)
    actions = act_batch(obs, np.zeros((0, R.NUM_ACTIONS), dtype=bool), rng)
    assert actions.dtype == np.int64 and actions.shape == (0,)
    assert rng.bit_generator.state == state


@pytest.mark.parametrize(
    "obs_shape, mask_shape, match",
    [
        ((observation.OBS_SIZE,), (1, R.NUM_ACTIONS), "obs must have shape"),
        ((2, observation.OBS_SIZE + 1), (2, R.NUM_ACTIONS), "obs must have shape"),
        ((2, observation.OBS_SIZE), (2, R.NUM_ACTIONS - 1), "mask must have shape"),
        ((2, observation.OBS_SIZE), (3, R.NUM_ACTIONS), "mask must have shape"),
        ((2, observation.OBS_SIZE), (R.NUM_ACTIONS,), "mask must have shape"),
    ],
)
def test_wrong_shapes_are_refused(batch, obs_shape, mask_shape, match):
    obs = np.zeros(obs_shape, dtype=np.float32)
    mask = np.ones(mask_shape, dtype=bool)
    with pytest.raises(ValueError, match=match) as err:
        act_batch(obs, mask, np.random.default_rng(0))
    assert "\n" not in str(err.value)


def test_a_row_without_legal_actions_is_refused(batch):
    obs, mask = batch
    mask = mask[:3].copy()
    mask[1] = False
    with pytest.raises(ValueError, match="row 1 allows no action"):
        act_batch(obs[:3], mask, np.random.default_rng(0))


def mask_of(state: R.State) -> np.ndarray:
    mask = np.zeros(R.NUM_ACTIONS, dtype=bool)
    mask[list(R.legal_actions(state))] = True
    return mask


@pytest.mark.parametrize("n, level, mode", [(2, 10, "own_decks"), (3, 10, "one_colour"),
                                            (4, 9, "one_colour"), (5, 8, "own_decks")])  # fmt: skip
def test_games_the_twin_plays_step_by_step(n, level, mode):
    # The twin plays most seats of 24 games side by side, random players the rest: at every
    # decision the readable agent, with a generator in the same state, takes the same action.
    rng = np.random.default_rng(n)
    config = R.make_config(num_players=n, level=level, deck_mode=mode, num_rounds=3)
    tables = [(R.initial_state(config, rng), rng.random(n) < 0.7) for _ in range(24)]
    agent, twin_rng = HeuristicKdK(seed=n), np.random.default_rng(n)
    decisions = 0
    while tables:
        obs = np.stack([observation.encode(s, s.to_play) for s, _ in tables])
        mask = np.stack([mask_of(s) for s, _ in tables])
        smart = act_batch(obs, mask, twin_rng)
        assert smart.tolist() == [agent.act(o, m) for o, m in zip(obs, mask)]
        decisions += len(tables)
        dumb = pick(rng, mask)
        tables = [
            (R.apply_action(s, int(smart[i] if mine[s.to_play] else dumb[i]), rng), mine)
            for i, (s, mine) in enumerate(tables)
        ]
        tables = [(s, mine) for s, mine in tables if not R.is_terminal(s)]
    assert twin_rng.bit_generator.state == agent.rng.bit_generator.state
    assert decisions > 1500
