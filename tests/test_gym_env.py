"""The single-seat Gymnasium env (training/gym_env.py): checkers, rewards, opponents, seeding."""

from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import training.gym_env as gym_env
from agents.random_agent import RandomAgent
from tablegym.games import GAMES, env_class
from tests.helpers import FAST
from tests.test_integrations import run_recipe

IDS = {"kingup": "tablegym/KingUp-v1", "updown": "tablegym/UpDown-v2", "kdk": "tablegym/KdK-v1"}
SIZES = {"kingup": 4, "updown": 2, "kdk": 3}


def make(game: str, **kwargs):
    options = {"num_players": SIZES[game], **FAST.get(game, {}), **kwargs}
    return gymnasium.make(IDS[game], **options)


def play_episode(env, seed: int, rng: np.random.Generator) -> tuple[float, int]:
    """A random legal learner for one episode: its return and its number of moves."""
    obs, info = env.reset(seed=seed)
    total, moves, done = 0.0, 0, False
    while not done:
        assert np.array_equal(env.unwrapped.action_masks(), info["action_mask"].astype(bool))
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, reward, done, truncated, info = env.step(action)
        assert not truncated and env.observation_space.contains(obs)
        total, moves = total + reward, moves + 1
    assert not info["action_mask"].any()
    return total, moves


def replayed_reward(game: str, seed_env, seat: int) -> float:
    """The seat's reward in the game the env just played, summed over a replay of its moves
    on a fresh AEC env."""
    inner = seed_env.unwrapped.game
    fresh = env_class(game)(**{"num_players": inner.config.num_players, **FAST.get(game, {})})
    fresh.reset(seed=inner._replay_seed)
    name, total = fresh.possible_agents[seat], 0.0
    for action in inner.action_log:
        fresh.step(action)
        total += fresh.rewards[name]
    return total


def test_ids_follow_the_aec_versions():
    assert gym_env.register_gym_envs() == list(IDS.values())
    for game, env_id in IDS.items():
        version = env_class(game).metadata["name"].rpartition("_v")[2]
        assert env_id.endswith(f"-v{version}")
        assert env_id in gymnasium.registry


@pytest.mark.parametrize("game", list(GAMES))
def test_passes_gymnasium_and_sb3_env_checkers(game):
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    check_env(make(game, opponents="random").unwrapped, skip_render_check=True)
    check_env(make(game, opponents="heuristic", seat=None).unwrapped, skip_render_check=True)
    sb3_checker.check_env(make(game, opponents="random").unwrapped)


@pytest.mark.parametrize("game", list(GAMES))
def test_episode_rewards_add_up_to_the_seats_reward_in_the_game(game, monkeypatch):
    # Remember each deal's seed so the game can be replayed on a fresh AEC env.
    original = gym_env.env_class(game).reset

    def reset(self, seed=None, options=None):
        self._replay_seed = seed
        original(self, seed=seed, options=options)

    monkeypatch.setattr(gym_env.env_class(game), "reset", reset)
    env = make(game, opponents="heuristic", seat=None)
    rng = np.random.default_rng(0)
    seats, nonzero = set(), 0
    for seed in range(6):
        total, moves = play_episode(env, seed, rng)
        seat = env.unwrapped.seat
        seats.add(seat)
        assert moves > 0
        assert total == pytest.approx(replayed_reward(game, env, seat))
        nonzero += total != 0
    assert len(seats) > 1 and nonzero > 0


def test_same_seed_same_episode_and_bots_are_reseeded():
    env = make("kingup", opponents=["random", "heuristic", "random"], seat=None)
    runs = []
    for _ in range(2):
        obs, info = env.reset(seed=7)
        done = False
        while not done:
            obs, reward, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        runs.append((env.unwrapped.seat, list(env.unwrapped.game.action_log)))
    assert runs[0] == runs[1]


def test_opponents_may_be_agents_callables_and_builtin_bots():
    pytest.importorskip("torch")
    calls = []

    def first_legal(obs, mask):
        calls.append(obs.shape)
        return int(np.flatnonzero(mask)[0])

    env = make("kingup", opponents=[first_legal, RandomAgent(seed=1), "ppo:kingup"])
    total, moves = play_episode(env, 3, np.random.default_rng(3))
    assert calls and moves > 0


def test_illegal_action_ends_the_episode_with_the_illegal_reward():
    env = make("updown", opponents="random")
    obs, info = env.reset(seed=0)
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    obs, reward, done, truncated, info = env.step(illegal)
    assert (reward, done, truncated) == (-1.0, True, False)
    with pytest.raises(ValueError, match="episode is over"):
        env.step(int(np.flatnonzero(env.unwrapped.game.action_mask())[0]))


def test_illegal_reward_none_raises_naming_the_action():
    env = make("updown", opponents="random", illegal_reward=None)
    obs, info = env.reset(seed=0)
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    with pytest.raises(ValueError, match=str(illegal)):
        env.step(illegal)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"opponents": ["random", "random"]}, "one entry for every other seat or 3 entries"),
        ({"opponents": ["random", 3, "random"]}, "agent spec, an Agent or a callable"),
        ({"opponents": "alphazero"}, "unknown agent spec"),
        ({"seat": 4}, "seat must be None"),
        ({"num_players": 9}, "num_players"),
        ({"opponents": "ppo:updown"}, "ppo:updown is the updown bot and cannot play kingup"),
    ],
)
def test_bad_options_are_one_line_value_errors(kwargs, message):
    with pytest.raises(ValueError, match=message) as raised:
        make("kingup", **kwargs)
    assert "\n" not in str(raised.value)


def test_game_options_reach_the_game():
    env = make("kdk", num_players=5, opponents="random", num_rounds=2)
    env.reset(seed=0)
    config = env.unwrapped.game.config
    assert (config.num_players, config.num_rounds) == (5, 2)


def test_make_vec_runs_copies():
    envs = gymnasium.make_vec(IDS["updown"], num_envs=3, num_players=2, opponents="random")
    obs, infos = envs.reset(seed=0)
    assert obs.shape == (3, *envs.single_observation_space.shape)
    masks = infos["action_mask"]
    actions = np.array([np.flatnonzero(m)[0] for m in masks])
    obs, rewards, done, truncated, infos = envs.step(actions)
    assert rewards.shape == (3,)
    envs.close()


@pytest.mark.parametrize("name", ["gym_maskable", "gym_ppo"])
def test_recipes_single_seat(name):
    pytest.importorskip("sb3_contrib")
    ns = run_recipe(name)
    assert ns["model"].num_timesteps >= 256
    if name == "gym_maskable":
        assert ns["done"] and np.isfinite(ns["episode_return"])
    else:
        assert 0 <= ns["illegal"] <= 50


def test_a_trained_bot_at_a_table_size_it_never_played_is_refused_in_one_line():
    pytest.importorskip("torch")
    specialist = Path(__file__).resolve().parents[1] / "notebooks" / "models" / "updown.zip"
    message = "trained for num_players 2, but this game has 4"
    with pytest.raises(ValueError, match=message) as raised:
        gymnasium.make(IDS["updown"], num_players=4, opponents=f"ppo:{specialist}")
    assert "\n" not in str(raised.value)
