"""KdK as a PettingZoo AEC env: API and seed tests, no leak of hidden cards, errors, copies,
replay, state space, rendering and rewards."""

from __future__ import annotations

import copy
import importlib
import pickle

import numpy as np
import pytest
from kdk_positions import positions
from pettingzoo.test import api_test, seed_test

import kdk_env
from kdk_env import observation as O
from kdk_env import rules as R


def random_actions(game, rng: np.random.Generator, steps: int) -> list[int]:
    """Play up to ``steps`` uniformly random legal actions on a raw env; the actions taken."""
    taken = []
    for _ in range(steps):
        if R.is_terminal(game.game_state):
            break
        legal = game.legal_actions()
        a = int(legal[rng.integers(len(legal))])
        game.step(a)
        taken.append(a)
    return taken


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_api(n):
    api_test(kdk_env.env(num_players=n, num_rounds=2), num_cycles=400)


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_seed(n):
    seed_test(lambda: kdk_env.env(num_players=n, num_rounds=2), num_cycles=200)


def test_api_other_options():
    api_test(kdk_env.env(level=8, auto_pass=True, reward="win", num_rounds=1), 300)
    api_test(kdk_env.env(level=9, deck_mode="own_decks", num_rounds=1), 300)


def test_metadata_and_spaces():
    game = kdk_env.raw_env(num_players=3)
    assert game.metadata["name"] == "kdk_v1"
    assert game.action_space("player_0").n == R.NUM_ACTIONS == 114
    space = game.observation_space("player_2")["observation"]
    assert space.shape == (O.OBS_SIZE,) and space.low.min() == 0 and space.high.max() == 1


def mid_game_state(seed: int, n: int = 4, level: int = 10, steps: int = 25) -> R.State:
    rng = np.random.default_rng(seed)
    cfg = R.make_config(num_players=n, level=level)
    s = R.initial_state(cfg, rng)
    for _ in range(steps):
        legal = R.legal_actions(s)
        lays = [a for a in legal if a < R.PASS] or list(legal)
        s = R.apply_action(s, lays[rng.integers(len(lays))], rng)
    return s


def scramble_hidden(s: R.State, seat: int, rng: np.random.Generator) -> R.State:
    """Change everything ``seat`` may not see: other hands and draw piles, every pile order."""
    n = s.config.num_players
    hands, draws = list(s.hand), list(s.draw)
    for q in range(n):
        pile = list(s.draw[q])
        if q == seat:
            draws[q] = tuple(rng.permutation(pile).tolist()) if pile else ()
            continue
        # Another player's hand: same size, other figures; his draw pile: other figures.
        size = sum(s.hand[q])
        new = [0] * R.NUM_FIGURES
        for f in rng.integers(0, R.NUM_FIGURES, size):
            new[f] += 1
        hands[q] = tuple(new)
        draws[q] = tuple(rng.integers(0, R.NUM_FIGURES, len(pile)).tolist())
    return s._replace(hand=tuple(hands), draw=tuple(draws))


@pytest.mark.parametrize("seed", range(12))
def test_no_leak(seed):
    rng = np.random.default_rng(seed)
    s = mid_game_state(seed, n=2 + seed % 4, level=8 + seed % 3, steps=5 + 3 * seed)
    for seat in range(s.config.num_players):
        changed = scramble_hidden(s, seat, rng)
        assert changed != s
        np.testing.assert_array_equal(O.encode(s, seat), O.encode(changed, seat))
        # the own hand is visible
        own = list(changed.hand)
        own[seat] = tuple(reversed(own[seat]))
        if own[seat] != s.hand[seat]:
            leak = changed._replace(hand=tuple(own))
            assert not np.array_equal(O.encode(s, seat), O.encode(leak, seat))


def test_observation_is_seat_relative():
    s = mid_game_state(3, n=4, steps=12)
    views = [O.LAYOUT.decode(O.encode(s, seat)) for seat in range(4)]
    for seat in range(4):
        v = views[seat]
        assert v["hand_count"][0] * 27 == pytest.approx(sum(s.hand[seat]))
        assert v["hand_count"][1] * 27 == pytest.approx(sum(s.hand[(seat + 1) % 4]))
        assert v["seats"].tolist() == [1, 1, 1, 1, 0]
        if s.to_play >= 0:
            assert v["to_play"][(s.to_play - seat) % 4] == 1


def test_observations_within_bounds_over_games():
    for seed in range(6):
        game = kdk_env.raw_env(num_players=2 + seed % 4, level=8 + seed % 3, num_rounds=2)
        game.reset(seed=seed)
        rng = np.random.default_rng(seed)
        space = game.observation_space("player_0")
        while not R.is_terminal(game.game_state):
            for agent in game.agents:
                assert space.contains(game.observe(agent))
            assert game.state_space.contains(game.state())
            legal = game.legal_actions()
            game.step(int(legal[rng.integers(len(legal))]))


@pytest.mark.parametrize("n, level, mode", [(2, 8, "one_colour"), (4, 10, "own_decks")])
def test_encode_is_one_affine_map_of_raw_values_read_back_by_name(n, level, mode):
    # A batched engine must reproduce encode bit for bit from raw values and LAYOUT.affine.
    for s in positions(n, level, mode, seed=3 * n, every=5):
        for seat in range(n):
            obs = O.encode(s, seat)
            params = O.params(s.config)
            assert O.params_of(obs) == params
            raw = O.decode(obs)
            flat = np.concatenate([raw[f.name].ravel() for f in O.LAYOUT.fields])
            assert np.array_equal(flat, np.rint(flat))  # every raw value is an integer
            np.testing.assert_array_equal(O.LAYOUT.scale(flat.astype(np.float32), **params), obs)
            q = (seat + 1) % n  # the next seat clockwise is row 1
            assert raw["hand_count"][1] == sum(s.hand[q]) and raw["score"][1] == s.score[q]
            assert raw["draw_count"][0] == len(s.draw[seat])
            assert tuple(raw["played"][1]) == s.played[q] and tuple(raw["taken"][1]) == s.taken[q]
            assert tuple(raw["recycled"][1]) == s.recycled[q]
            lacks = [s.lacks[q] >> f & 1 for f in range(R.NUM_FIGURES)]
            assert raw["lacks"][1].tolist() == lacks
            assert not raw["hand_count"][n:].any()  # rows of seats not in play stay 0


def test_illegal_action_raises():
    game = kdk_env.raw_env()
    game.reset(seed=1)
    with pytest.raises(ValueError, match="illegal action 16"):
        game.step(R.PASS)  # PASS is not legal in OPEN


def test_wrapped_illegal_action_ends_game():
    game = kdk_env.env()
    game.reset(seed=1)
    agent = game.agent_selection
    game.step(R.PASS)
    assert game.rewards[agent] == -1 and all(game.terminations.values())


@pytest.mark.parametrize(
    "options", [{"num_players": 1}, {"level": 11}, {"render_mode": "rgb"}, {"foo": 1}]
)
def test_bad_options(options):
    with pytest.raises(ValueError):
        kdk_env.raw_env(**options)


@pytest.mark.parametrize("clone", [copy.deepcopy, lambda g: pickle.loads(pickle.dumps(g))])
def test_copy_keeps_position_and_generator(clone):
    game = kdk_env.raw_env(num_players=3, level=9)
    game.reset(seed=7)
    random_actions(game, np.random.default_rng(0), 40)
    twin = clone(game)
    assert twin.game_state == game.game_state
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    for _ in range(200):
        if R.is_terminal(game.game_state):
            break
        a = random_actions(game, rng_a, 1)
        b = random_actions(twin, rng_b, 1)
        assert a == b
        assert game.game_state == twin.game_state  # same draws: same generator state


def test_replay_is_exact():
    game = kdk_env.raw_env(num_players=4, level=10, num_rounds=2)
    game.reset(seed=11)
    actions = random_actions(game, np.random.default_rng(2), 300)
    again = kdk_env.raw_env.replay(11, actions, num_players=4, level=10, num_rounds=2)
    assert again.game_state == game.game_state
    np.testing.assert_array_equal(again.state(), game.state())


def test_rewards_add_up_to_scores():
    for mode in ("score", "win"):
        game = kdk_env.raw_env(num_players=3, num_rounds=2, reward=mode)
        game.reset(seed=4)
        rng = np.random.default_rng(4)
        total = dict.fromkeys(game.possible_agents, 0.0)
        while not R.is_terminal(game.game_state):
            legal = game.legal_actions()
            game.step(int(legal[rng.integers(len(legal))]))
            for a in game.possible_agents:
                total[a] += game.rewards[a]
        if mode == "score":
            assert tuple(total.values()) == R.scores(game.game_state)
        else:
            won = R.winners(game.game_state)
            assert [total[f"player_{p}"] for p in range(3)] == [
                1.0 if p in won else -1.0 for p in range(3)
            ]


def test_render_hides_other_hands():
    game = kdk_env.raw_env(num_players=3, render_mode="ansi")
    game.reset(seed=3)
    text = game.render()
    assert "KdK level 10" in text and "hand:" not in text
    own = kdk_env.render.to_text(game.game_state, viewer=1)
    assert "player_1 hand:" in own and "player_0 hand:" not in own


def test_docstring_is_the_docs_page():
    module_doc = importlib.import_module("kdk_env.env").__doc__
    assert "ANNOUNCE_N" in module_doc and "Version history" in module_doc
    assert "| `hand` |" in O.__doc__ and "| `level` |" in O.__doc__  # generated tables


def test_num_rounds_decodes_exactly_at_every_allowed_value():
    for num_rounds in range(1, R.MAX_ROUNDS + 1):
        cfg = R.make_config(num_players=3, num_rounds=num_rounds)
        state = R.initial_state(cfg, np.random.default_rng(8000))
        obs = O.encode(state._replace(score=(-1, 7, 0)), 0)
        params = O.params_of(obs)
        assert params["num_rounds"] == num_rounds
        raw = O.LAYOUT.decode(obs, raw=True, **params)
        assert raw["round"][0] == pytest.approx(1, abs=1e-4)
        assert raw["score"][:3] == pytest.approx([-1, 7, 0], abs=1e-4)


@pytest.mark.parametrize("num_rounds", [0, R.MAX_ROUNDS + 1, 150])
def test_num_rounds_beyond_what_the_observation_encodes_is_refused(num_rounds):
    with pytest.raises(ValueError, match="num_rounds must be an integer from 1 to 100") as raised:
        R.make_config(num_rounds=num_rounds)
    assert "\n" not in str(raised.value)
