"""Checks shared by every tablegym game, parametrised over the game packages.

Each game has its own scripted tests of its rules; here every game must keep the same
promises: PettingZoo's API and seed tests, masks that equal the rules' legal actions,
immutable states, games that end, observations inside their space that hide what a seat may
not see (resampling the hidden information with ``rules.sample_state`` leaves the seat's view
unchanged), exact copies and replays.
"""

from __future__ import annotations

import copy
import importlib
import pickle

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

PACKAGES = {"kingup_env": (3, 4, 5, 6), "updown_env": (2, 3, 4), "kdk_env": (2, 3, 4, 5)}
# Options that keep the slowest game short enough for repeated whole games here.
FAST = {"kdk_env": {"num_rounds": 1, "max_round_steps": 200}}


def _available() -> list[str]:
    found = []
    for name in PACKAGES:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        found.append(name)
    return found


GAMES = [(pkg, n) for pkg in _available() for n in PACKAGES[pkg]]
IDS = [f"{pkg}-{n}p" for pkg, n in GAMES]


def make(pkg: str, n: int, raw: bool = True, **options):
    module = importlib.import_module(pkg)
    factory = module.raw_env if raw else module.env
    return factory(num_players=n, **{**FAST.get(pkg, {}), **options})


def random_playout(game, seed: int, max_steps: int = 100_000):
    """Play to the end with uniformly random legal actions; yields each state before a step."""
    rng = np.random.default_rng(seed)
    game.reset(seed=seed)
    for _ in range(max_steps):
        agent = game.agent_selection
        if game.terminations[agent]:
            return
        yield game
        legal = np.flatnonzero(game.observe(agent)["action_mask"])
        game.step(int(legal[rng.integers(legal.size)]))
    raise AssertionError(f"no game end within {max_steps} steps")


@pytest.mark.parametrize(("pkg", "n"), GAMES, ids=IDS)
def test_api_and_seed(pkg, n):
    api_test(make(pkg, n, raw=False), num_cycles=200)
    seed_test(lambda: make(pkg, n, raw=False), num_cycles=200)


@pytest.mark.parametrize(("pkg", "n"), GAMES, ids=IDS)
def test_metadata_and_errors(pkg, n):
    game = make(pkg, n)
    assert game.metadata["name"].endswith("_v0")
    assert set(game.metadata["render_modes"]) == {"ansi", "human"}
    with pytest.raises(ValueError, match="unknown option 'no_such_option'"):
        make(pkg, n, no_such_option=1)
    with pytest.raises(ValueError, match="num_players"):
        make(pkg, 99)
    with pytest.raises(ValueError, match="render_mode"):
        make(pkg, n, render_mode="rgb_array")


@pytest.mark.parametrize(("pkg", "n"), GAMES, ids=IDS)
def test_masks_states_and_observations(pkg, n):
    game = make(pkg, n)
    rules = game.rules
    space = game.observation_space(game.possible_agents[0])
    for seed in range(3):
        for g in random_playout(game, seed):
            state = g.game_state
            frozen = copy.deepcopy(state)
            mask = g.observe(g.agent_selection)["action_mask"]
            assert tuple(np.flatnonzero(mask)) == tuple(rules.legal_actions(state))
            assert mask.any(), "the agent to act always has a legal action"
            for agent in g.agents:
                obs = g.observe(agent)
                assert space.contains(obs), f"{agent}'s observation leaves its space"
                if agent != g.agent_selection:
                    assert not obs["action_mask"].any()
            assert g.state_space.contains(g.state())
            legal = np.flatnonzero(mask)
            rules.apply_action(state, int(legal[0]), np.random.default_rng(0))
            assert state == frozen, "apply_action must not change the state it is given"
        assert rules.is_terminal(game.game_state)
        assert rules.winners(game.game_state), "a finished game has at least one winner"


@pytest.mark.parametrize(("pkg", "n"), GAMES, ids=IDS)
def test_illegal_action_is_refused(pkg, n):
    game = make(pkg, n)
    game.reset(seed=0)
    mask = game.observe(game.agent_selection)["action_mask"]
    illegal = int(np.flatnonzero(mask == 0)[0])
    with pytest.raises(ValueError, match=f"illegal action {illegal}"):
        game.step(illegal)


@pytest.mark.parametrize(("pkg", "n"), GAMES, ids=IDS)
def test_copies_and_replay(pkg, n):
    game = make(pkg, n)
    it = random_playout(game, seed=5)
    for _ in range(25):
        next(it, None)
    twins = [copy.deepcopy(game), pickle.loads(pickle.dumps(game))]
    for twin in twins:
        assert twin.game_state == game.game_state
    # The env's own generator must survive the copy: draw from it in all three.
    draws = {tuple(g._rng.integers(1 << 30, size=4)) for g in [game, *twins]}
    assert len(draws) == 1
    replayed = type(game).replay(5, game.action_log, num_players=n, **FAST.get(pkg, {}))
    assert replayed.game_state == game.game_state


@pytest.mark.parametrize(("pkg", "n"), GAMES, ids=IDS)
def test_no_leak_through_sampled_hidden_information(pkg, n):
    """Resample everything a seat cannot see: that seat's observation must not change."""
    game = make(pkg, n)
    rules, obs = game.rules, game.observation
    rng = np.random.default_rng(1)
    changed = 0
    for seed in range(2):
        for step, g in enumerate(random_playout(game, seed)):
            if step % 7:
                continue
            for seat in range(n):
                sample = rules.sample_state(g.game_state, seat, rng)
                assert np.array_equal(obs.encode(sample, seat), obs.encode(g.game_state, seat))
                changed += not np.array_equal(
                    obs.encode_state(sample), obs.encode_state(g.game_state)
                )
    assert changed, "sample_state never changed any hidden information"


@pytest.mark.parametrize(("pkg", "n"), GAMES, ids=IDS)
def test_render_ansi(pkg, n):
    game = make(pkg, n, render_mode="ansi")
    game.reset(seed=0)
    text = game.render()
    assert isinstance(text, str) and text.strip()
