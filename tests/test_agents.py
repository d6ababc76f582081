"""Agents: the registry, the King Up! heuristic and ISMCTS (legal, fast, no peeking)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from helpers import random_playout

from agents.base import GameView
from agents.catalog import heuristic_class, rollout_policy
from agents.ismcts import ISMCTSAgent, cutoff_value, terminal_value
from agents.random_agent import RandomAgent
from kingup_env import raw_env
from kingup_env import rules as R
from kingup_env.heuristic import HeuristicKingUp
from kingup_env.observation import encode
from tablegym.games import GAMES, env_class, spec_of
from training.evaluate import evaluate
from training.registry import make_agent


def positions(n: int = 4, games: int = 2, every: int = 9, seed: int = 0) -> list[raw_env]:
    """Envs paused every ``every`` steps of random King Up! games."""
    out = []
    for g in range(games):
        for step, env in enumerate(random_playout(raw_env(num_players=n), seed + g)):
            if step % every == 0:
                out.append(raw_env.replay(seed + g, list(env.action_log), num_players=n))
    return out


def to_act(env: raw_env) -> tuple[np.ndarray, np.ndarray, GameView]:
    seat = env.game_state.to_play
    obs = env.observe(env.agent_selection)
    return obs["observation"], obs["action_mask"], GameView(R, env.config, env.game_state, seat)


# -- registry -----------------------------------------------------------------------------


def test_registry_builds_every_kind():
    assert isinstance(make_agent("random", "kingup", seed=1), RandomAgent)
    assert isinstance(make_agent("heuristic", "kingup"), HeuristicKingUp)
    agent = make_agent("ismcts:50", "kingup", seed=0)
    assert isinstance(agent, ISMCTSAgent) and agent.simulations == 50
    assert agent.spec == "ismcts:50"
    tuned = make_agent("ismcts:30,exploration=1.5,rollout=random", "kingup")
    assert tuned.exploration == 1.5 and tuned.rollout_policy is None
    default = make_agent("ismcts", "kingup")
    assert default.rollout_policy is not None and default.opponents == "policy"
    assert default.simulations == spec_of("kingup").search.simulations


@pytest.mark.parametrize(
    ("spec", "game", "error", "text"),
    [
        ("minimax", "kingup", ValueError, "unknown agent spec 'minimax'"),
        ("random:3", "kingup", ValueError, "unknown agent spec"),
        ("ismcts:-5", "kingup", ValueError, "positive integer"),
        ("ismcts:10,depth", "kingup", ValueError, "KEY=VALUE"),
        ("ismcts:10,depth=3", "kingup", ValueError, "unknown option 'depth'"),
        ("ismcts:10,rollout=smart", "kingup", ValueError, "'auto' or 'random'"),
        ("random", "chess", ValueError, "unknown game 'chess'"),
        ("ppo:/nowhere/model.zip", "kingup", FileNotFoundError, "/nowhere/model.zip"),
    ],
)
def test_registry_errors_name_the_problem(spec, game, error, text):
    with pytest.raises(error, match=text):
        make_agent(spec, game)


@pytest.mark.parametrize("game", list(GAMES))
def test_registry_builds_every_games_heuristic_and_search(game):
    heuristic = make_agent("heuristic", game, seed=0)
    assert isinstance(heuristic, heuristic_class(game)) and heuristic.spec == "heuristic"
    search = make_agent("ismcts", game, seed=0)
    assert search.simulations == spec_of(game).search.simulations
    assert search.rollout_policy is rollout_policy(game)


def test_ppo_spec_calls_the_loader(monkeypatch, tmp_path):
    calls = []
    fake = types.ModuleType("training.ppo_agent")
    fake.load_ppo_agent = lambda path, game, options: calls.append((path, game)) or RandomAgent()
    monkeypatch.setitem(sys.modules, "training.ppo_agent", fake)
    model = tmp_path / "model.zip"
    model.write_bytes(b"")
    agent = make_agent(f"ppo:{model}", "kingup")
    assert calls == [(str(model), "kingup")] and agent.spec == f"ppo:{model}"


# -- the King Up! heuristic ---------------------------------------------------------------


def test_heuristic_plays_legal_moves_from_the_observation_alone():
    for env in positions(n=5, games=2, every=5):
        obs, mask, view = to_act(env)
        # A view without a state would break any peek at the hidden information.
        blind = GameView(None, None, None, view.seat)
        a = HeuristicKingUp(seed=1).act(obs, mask, blind)
        b = HeuristicKingUp(seed=1).act(obs, mask, None)
        assert mask[a] and a == b


def test_heuristic_votes_yes_on_its_own_favourite():
    s = R.initial_state(R.make_config(num_players=4), np.random.default_rng(0))
    mine = R.FAVOURITE_CARDS[s.favourites[1]][0]
    floors = tuple(5 if c == mine else 0 for c in range(13))
    s = s._replace(phase=R.Phase.CLIMB, floors=floors, placements_left=(0,) * 4, to_play=1)
    s = R.apply_action(s, R.CLIMB + mine)  # seat 1 crowns it and votes first
    mask = np.zeros(R.NUM_ACTIONS, np.int8)
    mask[[R.YES, R.NO]] = 1
    assert HeuristicKingUp().act(encode(s, 1), mask) == R.YES


def test_heuristic_beats_random_clearly():
    # 1 heuristic vs 3 random, seats rotated: the fair share is 25%.
    result = evaluate("kingup", ["heuristic"] + ["random"] * 3, games=120, seed=11, workers=2)
    row = result["agents"][0]
    assert row["spec"] == "heuristic"
    assert row["win_rate_ci"][0] > 0.25 + 0.15, row


# -- ISMCTS -------------------------------------------------------------------------------


class SpyRules(types.ModuleType):
    """The King Up! rules, recording every determinisation handed to the search."""

    def __init__(self):
        super().__init__("spy_rules")
        public = {k: v for k, v in vars(R).items() if not k.startswith("__")}
        del public["sample_state"]  # the method below wraps it
        self.__dict__.update(public)
        self.samples: list[tuple[R.State, int, R.State]] = []

    def sample_state(self, state, seat, rng):
        sample = R.sample_state(state, seat, rng)
        self.samples.append((state, seat, sample))
        return sample


def test_ismcts_searches_only_states_its_seat_cannot_tell_apart():
    spy = SpyRules()
    agent = ISMCTSAgent(simulations=40, seed=0)
    for env in positions(games=1, every=11):
        obs, mask, view = to_act(env)
        agent.act(obs, mask, GameView(spy, env.config, env.game_state, view.seat))
    assert len(spy.samples) > 100
    assert any(sample != state for state, _, sample in spy.samples)
    for state, seat, sample in spy.samples:
        assert np.array_equal(encode(sample, seat), encode(state, seat))


@pytest.mark.parametrize("game", list(GAMES))
def test_ismcts_plays_legal_moves(game):
    # Seconds per move are measured by the evaluation harness (sec_per_move), not asserted.
    env = env_class(game)()
    env.reset(seed=3)
    agent = make_agent("ismcts", game, seed=0)  # the default budget
    times = []  # steps at which the search was asked
    rng = np.random.default_rng(0)
    for step in range(60):
        if env.rules.is_terminal(env.game_state):
            break
        obs = env.observe(env.agent_selection)
        if step % 6 == 0 and obs["action_mask"].sum() > 1:
            view = GameView(env.rules, env.config, env.game_state, env.game_state.to_play)
            action = agent.act(obs["observation"], obs["action_mask"], view)
            times.append(step)
            assert obs["action_mask"][action]
        else:
            action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        env.step(action)
    assert times, "the search was asked at least once"


def test_ismcts_needs_a_view_and_takes_forced_moves_without_one():
    agent = ISMCTSAgent(simulations=5)
    mask = np.zeros(R.NUM_ACTIONS, np.int8)
    mask[R.YES] = 1
    assert agent.act(np.zeros(1), mask) == R.YES
    mask[R.NO] = 1
    with pytest.raises(ValueError, match="GameView"):
        agent.act(np.zeros(1), mask)


def test_values_are_win_shares_and_margins():
    assert terminal_value((1, 2), 4) == [0, 0.5, 0.5, 0]
    v = cutoff_value((10.0, 0.0, 0.0))
    assert v[0] == pytest.approx(1.0) and v[1] == v[2] == pytest.approx(0.25 * (1 - 0.5))
    assert cutoff_value((3.0, 3.0)) == [0.5 * 0.5 + 0.25, 0.5 * 0.5 + 0.25]
