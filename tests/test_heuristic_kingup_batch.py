"""The compiled King Up! heuristic (kingup_env/heuristic_batch.py) against the readable one.

Positions are every decision of games of 3 to 6 players in which each seat is the heuristic
(played by the twin under test, so the games are cheap) or a random player; each is seen by
both agents only through ``observation.encode`` and the mask of ``rules.legal_actions``. The
``positions`` fixture plays them once per module, which also compiles the kernels once.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import pick

from kingup_env import rules as R
from kingup_env.heuristic import Board, HeuristicKingUp
from kingup_env.heuristic_batch import act_batch, action_values
from kingup_env.observation import LAYOUT, OBS_SIZE, encode
from kingup_env.rules import ELIMINATED, NUM_ACTIONS, Phase

GAMES = 64  # per table size and round count: 320 games, about 40,000 decisions
HEURISTIC_SEATS = 0.6  # share of the seats the heuristic holds
EVERY = 12  # every EVERY-th decision is compared with the readable agent (it is slow)
TIE = 1e-5  # choices are compared where the best value beats the second by more
SEED = 7  # of both agents' tie-breaking generators


def mask_of(state: R.State) -> np.ndarray:
    mask = np.zeros(NUM_ACTIONS, dtype=bool)
    mask[list(R.legal_actions(state))] = True
    return mask


def play(n: int, num_rounds: int, games: int, seed: int) -> list[tuple[R.State, np.ndarray]]:
    """Every decision ``(state, observation)`` of ``games`` games played side by side."""
    rng = np.random.default_rng(seed)
    config = R.make_config(num_players=n, num_rounds=num_rounds)
    tables = [(R.initial_state(config, rng), rng.random(n) < HEURISTIC_SEATS) for _ in range(games)]
    out = []
    while tables:
        obs = np.stack([encode(s, s.to_play) for s, _ in tables])
        mask = np.stack([mask_of(s) for s, _ in tables])
        smart, dumb = act_batch(obs, mask, rng), pick(rng, mask)
        out += [(s, o) for (s, _), o in zip(tables, obs)]
        tables = [
            (R.apply_action(s, int(smart[i] if mine[s.to_play] else dumb[i])), mine)
            for i, (s, mine) in enumerate(tables)
        ]
        tables = [(s, mine) for s, mine in tables if not R.is_terminal(s)]
    return out


@pytest.fixture(scope="module")
def positions() -> dict[str, object]:
    """Every EVERY-th decision of GAMES games per table size (and 1-round games at 4), with
    the readable agent's action values and choices there."""
    tables = [(n, 3) for n in (3, 4, 5, 6)] + [(4, 1)]
    decisions = [d for i, (n, r) in enumerate(tables) for d in play(n, r, GAMES, seed=i)]
    states = [s for s, _ in decisions[::EVERY]]
    obs = np.stack([o for _, o in decisions[::EVERY]])
    mask = np.stack([mask_of(s) for s in states])
    legal = [np.flatnonzero(m) for m in mask]
    agent = HeuristicKingUp(seed=SEED)
    return {
        "states": states,
        "obs": obs,
        "mask": mask,
        "values": [Board(LAYOUT.decode(o, raw=True)).action_values(a) for o, a in zip(obs, legal)],
        "choices": np.array([agent.act(o, m) for o, m in zip(obs, mask)]),
        "agent_rng": agent.rng,
    }


def test_the_positions_cover_every_case(positions):
    # The comparisons below mean something only if they meet every branch of the heuristic.
    states = positions["states"]
    assert len(states) > 2500
    assert {s.num_players for s in states} == {3, 4, 5, 6}
    assert {s.phase for s in states} == {Phase.PLACE, Phase.CLIMB, Phase.VOTE}
    assert sum(s.round == 2 for s in states) > 500  # where a round score of 0 becomes 33
    assert sum(ELIMINATED in s.floors for s in states) > 1000  # the opponent model updates
    throne_climbs = [s for s in states if s.phase is Phase.CLIMB and 5 in s.floors]
    assert len(throne_climbs) > 500  # climbs that open an election
    assert sum(s.phase is Phase.VOTE and s.no_left[s.to_play] > 0 for s in states) > 300


def test_action_values_are_the_readable_boards(positions):
    got = action_values(positions["obs"], positions["mask"])
    assert got.dtype == np.float64 and got.shape == positions["mask"].shape
    assert np.all(got[~positions["mask"]] == -np.inf)
    for values, mask, want in zip(got, positions["mask"], positions["values"]):
        np.testing.assert_allclose(values[mask], want, rtol=1e-9, atol=1e-9)


def test_choices_are_the_readable_agents(positions):
    # Both draw their tie-breaking noise from a generator of the same seed, row after row, so
    # ties would go the same way too; only the clear choices must agree.
    obs, mask = positions["obs"], positions["mask"]
    rng = np.random.default_rng(SEED)
    got = act_batch(obs, mask, rng)
    best_two = np.array([np.sort(v)[-2:] if v.size > 1 else [0, 1] for v in positions["values"]])
    clear = best_two[:, 1] - best_two[:, 0] > TIE
    assert clear.mean() > 0.6
    assert np.array_equal(got[clear], positions["choices"][clear])
    # The same draws, in the same order: the ties go the same way and the generators end alike.
    assert np.array_equal(got, positions["choices"])
    assert rng.bit_generator.state == positions["agent_rng"].bit_generator.state


def test_every_action_is_legal_and_the_seed_decides(positions):
    obs, mask = positions["obs"], positions["mask"]
    first = act_batch(obs, mask, np.random.default_rng(3))
    assert first.dtype == np.int64 and first.shape == (len(obs),)
    assert mask[np.arange(len(obs)), first].all()
    assert np.array_equal(first, act_batch(obs, mask, np.random.default_rng(3)))
    # An int mask (as a training buffer keeps it) decides as the bool mask does.
    again = act_batch(obs, mask.astype(np.int8), np.random.default_rng(3))
    assert np.array_equal(first, again)


def test_a_single_legal_action_is_taken_without_a_draw(positions):
    obs, mask = positions["obs"][:1], np.zeros((1, NUM_ACTIONS), dtype=bool)
    only = np.flatnonzero(positions["mask"][0])[-1]
    mask[0, only] = True
    rng = np.random.default_rng(0)
    assert act_batch(obs, mask, rng).tolist() == [only]
    assert rng.random() == np.random.default_rng(0).random()  # no noise was drawn


def test_an_empty_batch_gives_no_actions():
    obs, mask = np.zeros((0, OBS_SIZE), np.float32), np.zeros((0, NUM_ACTIONS), bool)
    out = act_batch(obs, mask, np.random.default_rng(0))
    assert out.dtype == np.int64 and out.shape == (0,)
    assert action_values(obs, mask).shape == (0, NUM_ACTIONS)


@pytest.mark.parametrize(
    "obs_shape, mask_shape, words",
    [
        ((OBS_SIZE,), (1, NUM_ACTIONS), "obs must have shape"),
        ((2, OBS_SIZE + 1), (2, NUM_ACTIONS), "obs must have shape"),
        ((2, OBS_SIZE), (3, NUM_ACTIONS), "mask must have shape (2, 67)"),
        ((2, OBS_SIZE), (2, NUM_ACTIONS - 1), "mask must have shape (2, 67)"),
    ],
)
def test_wrong_shapes_are_named(obs_shape, mask_shape, words):
    obs, mask = np.zeros(obs_shape, np.float32), np.ones(mask_shape, bool)
    with pytest.raises(ValueError, match="^" + re.escape(words)) as err:
        act_batch(obs, mask, np.random.default_rng(0))
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="^" + re.escape(words)):
        action_values(obs, mask)


def test_a_row_without_legal_actions_is_named(positions):
    mask = positions["mask"][:3].copy()
    mask[1] = False
    with pytest.raises(ValueError, match="mask row 1 allows no action"):
        act_batch(positions["obs"][:3], mask, np.random.default_rng(0))
