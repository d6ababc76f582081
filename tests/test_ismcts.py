"""ISMCTS and its full-state rollout policies: legal moves, no peeking, strength over random."""

from __future__ import annotations

import math
import random
import types

import numpy as np
import pytest

from agents.base import GameView
from agents.catalog import rollout_policy
from agents.ismcts import ISMCTSAgent, _paired_z
from kdk_env.heuristic import Seen, seen_of_state
from tablegym.games import GAMES, observation_of, rules_of
from training.evaluate import wilson
from training.registry import make_agent

# Small tables and short games keep these tests to seconds; the benchmark measures the rest.
POLICY_GAMES = {
    "kingup": ({"num_players": 4}, 40),
    "updown": ({"num_players": 4}, 40),
    "kdk": ({"num_players": 3, "num_rounds": 1}, 24),
}


def play(game: str, options: dict, policy_seat: int, seed: int) -> tuple[int, ...]:
    """One game: ``policy_seat`` plays the rollout policy, every other seat at random.

    Every policy move is checked against the rules' legal set.
    """
    rules = rules_of(game)
    policy = rollout_policy(game)
    rng, rand = np.random.default_rng(seed), random.Random(seed)
    state = rules.initial_state(rules.make_config(**options), rng)
    while not rules.is_terminal(state):
        legal = rules.legal_actions(state)
        if state.to_play == policy_seat:
            action = policy(state, rand)
            assert action in legal, (game, action, legal)
        else:
            action = legal[int(rng.integers(len(legal)))]
        state = rules.apply_action(state, action, rng)
    return rules.winners(state)


@pytest.mark.parametrize("game", list(GAMES))
def test_rollout_policy_is_registered_for_every_game(game):
    assert callable(rollout_policy(game))


@pytest.mark.parametrize("game", list(GAMES))
def test_rollout_policy_plays_legal_moves_and_beats_random_play(game):
    options, games = POLICY_GAMES[game]
    n = options["num_players"]
    wins = 0.0
    for g in range(games):
        seat = g % n  # seats rotated
        won = play(game, options, seat, seed=1000 + g)
        wins += 1.0 / len(won) if seat in won else 0.0
    lo, _ = wilson(wins, games)
    assert lo > 1.0 / n, f"{game}: policy won {wins} of {games} against random play"


def test_kdk_policy_sees_what_the_observation_shows():
    # The KdK policy reads the seat's view from the state directly; it must be exactly what
    # the heuristic agent decodes from the observation vector, over random play of all levels.
    rules, obs = rules_of("kdk"), observation_of("kdk")
    rng = np.random.default_rng(5)
    checked = 0
    for n, level, deck in ((4, 10, "one_colour"), (3, 9, "own_decks"), (2, 8, "one_colour")):
        config = rules.make_config(num_players=n, level=level, deck_mode=deck, num_rounds=2)
        state = rules.initial_state(config, rng)
        while not rules.is_terminal(state):
            seen = Seen(obs.encode(state, state.to_play))
            direct = seen_of_state(state)
            assert {k: getattr(direct, k) for k in vars(seen)} == vars(seen)
            checked += 1
            legal = rules.legal_actions(state)
            state = rules.apply_action(state, legal[int(rng.integers(len(legal)))], rng)
    assert checked > 300


def test_updown_policy_ignores_what_its_seat_cannot_see():
    # Two determinisations of the same information set get the same move from the seat to play.
    rules = rules_of("updown")
    policy = rollout_policy("updown")
    rng = np.random.default_rng(2)
    state = rules.initial_state(rules.make_config(num_players=4), rng)
    for step in range(40):
        seat = state.to_play
        a = policy(rules.sample_state(state, seat, rng), random.Random(step))
        b = policy(rules.sample_state(state, seat, rng), random.Random(step))
        assert a == b
        legal = rules.legal_actions(state)
        state = rules.apply_action(state, legal[int(rng.integers(len(legal)))], rng)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"time_limit": 0}, "time_limit must be a number > 0"),
        ({"time_limit": "1s"}, "time_limit must be a number > 0"),
        ({"exploration": -0.5}, "exploration must be a number >= 0"),
        ({"exploration": True}, "exploration must be a number >= 0"),
        ({"cutoff": "round"}, "cutoff must be one of"),
        ({"opponents": "all"}, "opponents must be one of"),
        ({"expansion": "some"}, "expansion must be one of"),
        ({"rollout_policy": "heuristic"}, "rollout_policy must be callable"),
        ({"simulations": 0}, "simulations must be an integer >= 1"),
        ({"bias": -1}, "bias must be a number >= 0"),
        ({"bias": 1.0}, "bias needs a rollout policy"),
        ({"root": "leaf"}, "root must be one of"),
        ({"race_z": -1}, "race_z must be a number >= 0"),
        ({"root": "race"}, "root='race' needs a rollout policy"),
    ],
)
def test_bad_options_give_one_line_errors(options, message):
    with pytest.raises(ValueError, match=message) as err:
        ISMCTSAgent(**options)
    assert "\n" not in str(err.value)


class SpyRules(types.ModuleType):
    """A game's rules, recording every determinisation handed to the search."""

    def __init__(self, rules: types.ModuleType):
        super().__init__("spy_rules")
        public = {k: v for k, v in vars(rules).items() if not k.startswith("__")}
        self.real_sample = public.pop("sample_state")  # the method below wraps it
        self.__dict__.update(public)
        self.samples: list[tuple[object, int, object]] = []

    def sample_state(self, state, seat, rng):
        sample = self.real_sample(state, seat, rng)
        self.samples.append((state, seat, sample))
        return sample


@pytest.mark.parametrize("game", list(GAMES))
def test_search_with_policies_sees_only_what_its_seat_can_see(game):
    # Every determinisation the search plays out looks the same from the searching seat.
    rules, obs = rules_of(game), observation_of(game)
    spy = SpyRules(rules)
    agent = make_agent("ismcts:8", game, seed=0)
    config = rules.make_config(num_players=4)
    rng = np.random.default_rng(4)
    state = rules.initial_state(config, rng)
    for step in range(120):
        if rules.is_terminal(state):
            break
        legal = rules.legal_actions(state)
        if step % 7 == 0 and len(legal) > 1:
            seat = state.to_play
            mask = np.zeros(rules.NUM_ACTIONS, np.int8)
            mask[list(legal)] = 1
            action = agent.act(obs.encode(state, seat), mask, GameView(spy, config, state, seat))
            assert action in legal
        else:
            action = legal[int(rng.integers(len(legal)))]
        state = rules.apply_action(state, action, rng)
    assert spy.samples
    for real, seat, sample in spy.samples:
        assert np.array_equal(obs.encode(sample, seat), obs.encode(real, seat))


def test_cutoff_auto_takes_the_policys_horizon():
    assert make_agent("ismcts", "updown").cutoff == "end"  # named by the U&D policy
    assert make_agent("ismcts", "kingup").cutoff == "score"  # the King Up! policy names none
    assert make_agent("ismcts:5,cutoff=score", "updown").cutoff == "score"
    assert make_agent("ismcts:5,rollout=random", "updown").cutoff == "score"


def test_a_large_bias_plays_the_policys_move():
    # KdK's policy is the heuristic (deterministic up to exact ties): with an overwhelming
    # bias every simulation after the first visit of each move follows it: it is played.
    rules, obs = rules_of("kdk"), observation_of("kdk")
    policy = rollout_policy("kdk")
    agent = make_agent("ismcts:40,bias=1e9,root=tree", "kdk", seed=0)
    config = rules.make_config(num_players=3, num_rounds=1)
    rng = np.random.default_rng(8)
    state = rules.initial_state(config, rng)
    checked = 0
    while not rules.is_terminal(state) and checked < 12:
        legal = rules.legal_actions(state)
        action = legal[int(rng.integers(len(legal)))]
        if len(legal) > 1:
            seat = state.to_play
            mask = np.zeros(rules.NUM_ACTIONS, np.int8)
            mask[list(legal)] = 1
            view = GameView(rules, config, state, seat)
            assert agent.act(obs.encode(state, seat), mask, view) == policy(state, random.Random(0))
            checked += 1
        state = rules.apply_action(state, action, rng)
    assert checked == 12


def test_bias_defaults_to_the_policys():
    assert make_agent("ismcts", "kdk").bias == 2.0  # named by the KdK policy
    assert make_agent("ismcts", "kingup").bias == 0.0
    assert make_agent("ismcts:5,bias=0", "kdk").bias == 0.0


def test_root_auto_takes_the_policys():
    assert make_agent("ismcts", "kdk").root == "race"  # named by the KdK policy
    assert make_agent("ismcts", "kingup").root == "tree"
    assert make_agent("ismcts", "updown").root == "tree"
    assert make_agent("ismcts:5,root=tree", "kdk").root == "tree"
    assert make_agent("ismcts:5,rollout=random", "kdk").root == "tree"


def test_paired_z_counts_standard_errors_of_the_paired_mean():
    assert _paired_z([1.0, 2.0, 3.0], [0.0, 1.0, 2.0]) == math.inf  # always one better
    assert _paired_z([0.0, 1.0], [1.0, 2.0]) == -math.inf
    assert _paired_z([0.5], [0.0]) == 0.0  # one pair has no standard error
    # Differences 1, 3: mean 2, sd sqrt(2), standard error 1.
    assert _paired_z([1.0, 3.0, 0.0], [0.0, 0.0, 0.0][:2]) == pytest.approx(2.0)


def kdk_decisions(count: int, seed: int, phase: str | None = None):
    """``count`` KdK states (4 players) with more than one legal move, by random play;
    ``phase``: only decisions in that phase."""
    rules = rules_of("kdk")
    config = rules.make_config(num_players=4)
    rng = np.random.default_rng(seed)
    state = rules.initial_state(config, rng)
    found = []
    while len(found) < count and not rules.is_terminal(state):
        legal = rules.legal_actions(state)
        name = rules.Phase(state.phase).name
        if len(legal) > 1 and (phase is None or name == phase):
            found.append((config, state))
        state = rules.apply_action(state, legal[int(rng.integers(len(legal)))], rng)
    assert len(found) == count
    return found


def act_on(agent, rules, config, state):
    seat = state.to_play
    mask = np.zeros(rules.NUM_ACTIONS, np.int8)
    mask[list(rules.legal_actions(state))] = 1
    obs = observation_of("kdk").encode(state, seat)
    return agent.act(obs, mask, GameView(rules, config, state, seat))


def test_a_race_shares_each_determinisation_among_all_moves():
    rules = rules_of("kdk")
    spy = SpyRules(rules)
    applied = []

    def apply_action(state, action, rng):
        if spy.samples and state is spy.samples[-1][2]:  # a move from the newest sample
            applied.append((len(spy.samples), action))
        return rules.apply_action(state, action, rng)

    spy.apply_action = apply_action
    # The rules backend, whose moves the spy sees; nothing leaves the race.
    agent = make_agent("ismcts:400,race_z=1e9,backend=rules", "kdk", seed=1)
    config, state = kdk_decisions(1, seed=5)[0]
    act_on(agent, spy, config, state)
    legal = set(rules.legal_actions(state))
    assert len(spy.samples) == math.ceil(400 / len(legal))  # whole rounds
    for i in range(1, len(spy.samples) + 1):
        assert {a for k, a in applied if k == i} == legal


def test_a_huge_race_z_plays_the_policys_move():
    rules, policy = rules_of("kdk"), rollout_policy("kdk")
    agent = make_agent("ismcts:60,race_z=1e9", "kdk", seed=0)
    for config, state in kdk_decisions(6, seed=8):
        assert act_on(agent, rules, config, state) == policy(state, random.Random(0))


def test_the_race_leaves_a_bad_policy_move_at_the_root():
    # The policy proposes FAIL under duty (a penalty card and the initiative lost) at the
    # root, and plays the heuristic everywhere else: the race finds a better move.
    rules, heuristic = rules_of("kdk"), rollout_policy("kdk")
    positions = kdk_decisions(5, seed=3, phase="DUTY")

    def policy(state, rand):
        if any(state is s for _, s in positions):
            return rules.FAIL
        return heuristic(state, rand)

    agent = ISMCTSAgent(simulations=600, seed=2, rollout_policy=policy, root="race")
    left = sum(act_on(agent, rules, c, s) != rules.FAIL for c, s in positions)
    assert left >= 4
