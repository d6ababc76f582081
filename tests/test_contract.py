"""Checks shared by every tablegym game, parametrised over ``tablegym.games.GAMES``.

Each game has its own scripted tests of its rules; here every game must keep the same
promises: the module contract of ``tablegym.games``, PettingZoo's API and seed tests, masks
that equal the rules' legal actions, immutable states, games that end, observations inside
their space that hide what a seat may not see (resampling the hidden information with
``rules.sample_state`` leaves the seat's view unchanged), exact copies and replays, and the
adapter's clear errors for calls out of order and actions that are no action id.
"""

from __future__ import annotations

import copy
import inspect
import pickle
import re
from importlib import import_module

import numpy as np
import pytest
from helpers import FAST, TABLE_IDS, TABLES, make, random_playout
from pettingzoo.test import api_test, seed_test

from tablegym.games import (
    GAMES,
    GameObservation,
    GameRules,
    env_class,
    observation_of,
    rules_of,
    spec_of,
)
from tablegym.spec import Default, GameSpec

GAME_NAMES = list(GAMES)
# Options under which rewards come during the game too, not only at its end.
REWARDED_EVERY_ROUND = {
    "kingup": {"num_rounds": 3, "reward": "score"},
    "updown": {"reward": "tricks"},
    "kdk": {"num_rounds": 2, "max_round_steps": 200, "reward": "score"},
}


def _protocol_methods(protocol: type) -> list[str]:
    return [
        name
        for name, value in vars(protocol).items()
        if inspect.isfunction(value) and not name.startswith("_")
    ]


def _parameters(function) -> list[tuple[str, inspect._ParameterKind]]:
    """Names and kinds of the parameters, without a method's ``self``."""
    params = inspect.signature(function).parameters.values()
    return [(p.name, p.kind) for p in params if p.name != "self"]


@pytest.mark.parametrize(
    ("load", "protocol"),
    [(rules_of, GameRules), (observation_of, GameObservation)],
    ids=["rules", "observation"],
)
@pytest.mark.parametrize("game", GAME_NAMES)
def test_modules_keep_the_game_contract(game, load, protocol):
    module = load(game)
    assert isinstance(module, protocol), f"{module.__name__} lacks a member of {protocol.__name__}"
    for name in _protocol_methods(protocol):
        if name == "make_config":  # options may be spelled out; the vocabulary is checked below
            continue
        want = _parameters(getattr(protocol, name))
        assert _parameters(getattr(module, name)) == want, f"{module.__name__}.{name}{want}"


@pytest.mark.parametrize("game", GAME_NAMES)
def test_every_game_speaks_the_same_option_vocabulary(game):
    config = rules_of(game).make_config(num_players=3, num_rounds=1, reward="win")
    assert (config.num_players, config.num_rounds, config.reward) == (3, 1, "win")


@pytest.mark.parametrize(("game", "n"), TABLES, ids=TABLE_IDS)
def test_api_and_seed(game, n):
    api_test(make(game, n, raw=False), num_cycles=200)
    seed_test(lambda: make(game, n, raw=False), num_cycles=200)


@pytest.mark.parametrize(("game", "n"), TABLES, ids=TABLE_IDS)
def test_metadata_and_errors(game, n):
    env = make(game, n)
    assert re.fullmatch(r"[a-z]+_v\d+", env.metadata["name"])
    assert set(env.metadata["render_modes"]) == {"ansi", "human"}
    with pytest.raises(ValueError, match="unknown option 'no_such_option'"):
        make(game, n, no_such_option=1)
    with pytest.raises(ValueError, match="num_players"):
        make(game, 99)
    with pytest.raises(ValueError, match="render_mode"):
        make(game, n, render_mode="rgb_array")


@pytest.mark.parametrize(("game", "n"), TABLES, ids=TABLE_IDS)
def test_masks_states_and_observations(game, n):
    env = make(game, n)
    rules = env.rules
    space = env.observation_space(env.possible_agents[0])
    for seed in range(3):
        for g in random_playout(env, seed):
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
        assert rules.is_terminal(env.game_state)
        assert rules.winners(env.game_state), "a finished game has at least one winner"


@pytest.mark.parametrize(("game", "n"), TABLES, ids=TABLE_IDS)
def test_illegal_action_is_refused(game, n):
    env = make(game, n)
    env.reset(seed=0)
    mask = env.observe(env.agent_selection)["action_mask"]
    illegal = int(np.flatnonzero(mask == 0)[0])
    with pytest.raises(ValueError, match=f"illegal action {illegal}"):
        env.step(illegal)


@pytest.mark.parametrize(("game", "n"), TABLES, ids=TABLE_IDS)
def test_copies_and_replay(game, n):
    env = make(game, n)
    it = random_playout(env, seed=5)
    for _ in range(25):
        next(it, None)
    twins = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    for twin in twins:
        assert twin.game_state == env.game_state
    # The env's own generator must survive the copy: draw from it in all three.
    draws = {tuple(g._rng.integers(1 << 30, size=4)) for g in [env, *twins]}
    assert len(draws) == 1
    replayed = type(env).replay(5, env.action_log, num_players=n, **FAST.get(game, {}))
    assert replayed.game_state == env.game_state


@pytest.mark.parametrize(("game", "n"), TABLES, ids=TABLE_IDS)
def test_no_leak_through_sampled_hidden_information(game, n):
    """Resample everything a seat cannot see: that seat's observation must not change."""
    env = make(game, n)
    rules, obs = env.rules, env.observation
    rng = np.random.default_rng(1)
    changed = 0
    for seed in range(2):
        for step, g in enumerate(random_playout(env, seed)):
            if step % 7:
                continue
            for seat in range(n):
                sample = rules.sample_state(g.game_state, seat, rng)
                assert np.array_equal(obs.encode(sample, seat), obs.encode(g.game_state, seat))
                changed += not np.array_equal(
                    obs.encode_state(sample), obs.encode_state(g.game_state)
                )
    assert changed, "sample_state never changed any hidden information"


@pytest.mark.parametrize(("game", "n"), TABLES, ids=TABLE_IDS)
def test_render_ansi(game, n):
    env = make(game, n, render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert isinstance(text, str) and text.strip()


# -- the adapter's checks and bookkeeping (issue 15) ---------------------------------------


@pytest.mark.parametrize("game", GAME_NAMES)
def test_numpy_player_count_reaches_the_env(game):
    n = spec_of(game).default_players
    env = env_class(game)(num_players=np.int64(n))
    assert env.config.num_players == n and type(env.config.num_players) is int
    assert len(env.possible_agents) == n
    env.reset(seed=0)
    assert env.agent_selection in env.possible_agents


@pytest.mark.parametrize("call", ["step", "observe", "last", "state", "legal_actions"])
@pytest.mark.parametrize("game", GAME_NAMES)
def test_calls_before_reset_say_to_reset(game, call):
    env = env_class(game)()
    args = {"step": (0,), "observe": ("player_0",)}.get(call, ())
    with pytest.raises(RuntimeError, match=r"call reset\(\) before"):
        getattr(env, call)(*args)


@pytest.mark.parametrize("action", [0.7, 2.0, "0", True, np.float64(1.0), None])
@pytest.mark.parametrize("game", GAME_NAMES)
def test_non_integer_actions_are_refused(game, action):
    env = env_class(game)()
    env.reset(seed=0)
    before = env.game_state
    with pytest.raises(ValueError, match="integer action id|None is only for finished agents"):
        env.step(action)
    assert env.game_state is before and not env.action_log


@pytest.mark.parametrize("game", GAME_NAMES)
def test_out_of_range_actions_name_the_range(game):
    env = env_class(game)()
    env.reset(seed=0)
    last = env.rules.NUM_ACTIONS - 1
    for action in (-1, last + 1, np.int64(-3)):
        with pytest.raises(ValueError, match=rf"out of range: action ids run from 0 to {last}$"):
            env.step(action)
    assert not env.action_log


@pytest.mark.parametrize("kind", [np.int64, np.int32, np.uint8, int])
@pytest.mark.parametrize("game", GAME_NAMES)
def test_integer_actions_of_any_kind_are_played(game, kind):
    env = env_class(game)()
    env.reset(seed=0)
    action = env.legal_actions()[0]
    env.step(kind(action))
    assert env.action_log == [action] and type(env.action_log[0]) is int


@pytest.mark.parametrize("game", GAME_NAMES)
def test_writing_into_a_mask_cannot_corrupt_later_masks(game):
    env = env_class(game)()
    env.reset(seed=0)
    agent = env.agent_selection
    mask = env.observe(agent)["action_mask"]
    legal = mask.copy()
    with pytest.raises(ValueError, match="read-only"):
        mask[:] = 0
    other = next(a for a in env.possible_agents if a != agent)
    with pytest.raises(ValueError, match="read-only"):
        env.observe(other)["action_mask"][0] = 1
    assert np.array_equal(env.observe(agent)["action_mask"], legal)
    assert not env.observe(other)["action_mask"].any()


@pytest.mark.parametrize("game", GAME_NAMES)
def test_cumulative_rewards_are_the_step_rewards_summed(game):
    """The AEC bookkeeping, recomputed from ``rules.rewards`` alongside a random game."""
    env = env_class(game)(**REWARDED_EVERY_ROUND[game])
    rules, agents = env.rules, env.possible_agents
    totals = dict.fromkeys(agents, 0.0)
    rng = np.random.default_rng(3)
    env.reset(seed=3)
    nonzero = 0
    while not rules.is_terminal(env.game_state):
        before = env.game_state
        totals[env.agent_selection] = 0.0  # the acting agent's total restarts when it acts
        env.step(int(rng.choice(env.legal_actions())))
        step_rewards = rules.rewards(before, env.game_state, env.config)
        nonzero += any(step_rewards)
        for a, r in zip(agents, step_rewards):
            totals[a] += r
            assert env.rewards[a] == r
        assert env._cumulative_rewards == pytest.approx(totals)
    assert nonzero, "some step of a whole game rewards someone"


@pytest.mark.parametrize("game", GAME_NAMES)
def test_a_finished_game_says_it_is_over_and_bad_seeds_name_seed(game):
    env = make(game, spec_of(game).default_players)
    for _ in random_playout(env, seed=5):
        pass
    while env.agents:  # every finished agent takes its dead step and leaves
        env.step(None)
    with pytest.raises(ValueError, match="the game is over"):
        env.step(0)
    for seed in (-1, 1.5, "7", True):
        with pytest.raises(ValueError, match=r"reset\(seed=...\) takes an integer >= 0"):
            env.reset(seed=seed)
    env.reset(seed=np.int64(3))
    assert env.agents


@pytest.mark.parametrize("game", GAME_NAMES)
def test_the_spec_states_the_games_facts(game):
    # The facts other packages read (tablegym/spec.py) hold for the game's own rules and code.
    spec = spec_of(game)
    assert spec.name == game
    rules = rules_of(game)
    for n in spec.player_counts:
        assert rules.make_config(num_players=n).num_players == n
    for n in (min(spec.player_counts) - 1, max(spec.player_counts) + 1):
        with pytest.raises(ValueError, match="num_players"):
            rules.make_config(num_players=n)
    package = GAMES[game]
    targets = [spec.heuristic, spec.batched_heuristic, spec.search.policy]
    for target in targets:
        module, _, name = target.partition(":")
        assert module.startswith(package + ".") and callable(getattr(import_module(module), name))
    twin = import_module(spec.search.twin)
    assert twin.ENGINE is import_module(package + ".engine")
    for default in vars(spec.training).values():
        assert isinstance(default, Default) and default.why


def test_a_spec_refuses_a_default_table_size_it_does_not_allow():
    with pytest.raises(ValueError, match="default_players 2 is not one of player_counts"):
        GameSpec("x", "X", (3, 4), 2, heuristic="x:H")
