"""King Up! as a PettingZoo AEC environment: API, hidden information, copying, rendering."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

from agents import RandomAgent
from kingup_env import LAYOUT, env, raw_env
from kingup_env import rules as R
from kingup_env.observation import STATE_LAYOUT, encode, encode_state
from tests.kingup_positions import N, crown_round, election, new_game


def play_random(game, steps: int, seed: int = 0) -> None:
    agent = RandomAgent(seed)
    for _ in range(steps):
        obs, _, term, trunc, _ = game.last()
        if term or trunc:
            return
        game.step(agent(obs))


@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_pettingzoo_api_and_seed(n):
    api_test(env(num_players=n), num_cycles=300)
    api_test(raw_env(num_players=n), num_cycles=300)
    seed_test(lambda: env(num_players=n), num_cycles=300)


def test_metadata_and_spaces():
    game = raw_env(num_players=5)
    assert game.metadata["name"] == "kingup_v1"
    assert game.possible_agents == [f"player_{i}" for i in range(5)]
    assert game.action_space("player_0").n == 67
    space = game.observation_space("player_0")
    assert space["observation"].shape == (LAYOUT.size,)
    assert space["action_mask"].dtype == np.int8


def test_mask_equals_legal_actions_and_is_zero_for_others():
    game = raw_env(num_players=4)
    game.reset(seed=3)
    for _ in range(150):
        agent = game.agent_selection
        if game.terminations[agent]:
            break
        obs = game.observe(agent)
        assert tuple(np.flatnonzero(obs["action_mask"])) == R.legal_actions(game.game_state)
        for other in game.agents:
            if other != agent:
                assert not game.observe(other)["action_mask"].any()
        game.step(RandomAgent(0)(obs))


def test_illegal_action_raises_on_raw_env_and_terminates_on_env(caplog):
    game = raw_env()
    game.reset(seed=0)
    with pytest.raises(ValueError, match=r"illegal action 66 \(vote NO\).*legal actions: \[0, 1"):
        game.step(66)
    wrapped = env()
    wrapped.reset(seed=0)
    wrapped.step(66)
    assert "Illegal move" in caplog.text
    assert all(wrapped.terminations.values())
    assert wrapped.rewards["player_0"] == -1


def test_bad_render_mode_and_options():
    with pytest.raises(ValueError, match="render_mode must be one of None, 'ansi', 'human'"):
        raw_env(render_mode="rgb_array")
    with pytest.raises(ValueError, match="num_players must be one of 3, 4, 5, 6; got 9"):
        raw_env(num_players=9)
    with pytest.raises(ValueError, match="unknown option 'colour'"):
        env(colour="red")
    with pytest.raises(ValueError, match="option 'rounds' is now called 'num_rounds'"):
        raw_env(rounds=1)
    assert raw_env(num_players=np.int64(3), num_rounds=np.int64(1)).config.num_players == 3


# -- hidden information ------------------------------------------------------------------


def mid_game(n: int = 4, steps: int = 40, seed: int = 0):
    game = raw_env(num_players=n)
    game.reset(seed=seed)
    play_random(game, steps, seed)
    return game


@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_no_leak_of_favourites_deck_or_pending_votes(n):
    for seed in range(30):
        s = mid_game(n, steps=10 + 7 * seed, seed=seed).game_state
        rng = np.random.default_rng(seed)
        for seat in range(n):
            # Change only what `seat` may not see: others' cards, the deck, others' votes.
            pool = [c for c in range(26) if c != s.favourites[seat]]
            rng.shuffle(pool)
            favs = tuple(s.favourites[p] if p == seat else pool.pop() for p in range(n))
            votes = tuple(v if p == seat or v < 0 else 1 - v for p, v in enumerate(s.votes))
            hidden = s._replace(favourites=favs, deck=tuple(pool), votes=votes)
            assert np.array_equal(encode(s, seat), encode(hidden, seat))


def test_public_changes_do_show():
    s = mid_game().game_state
    moved = s._replace(no_left=(0,) + s.no_left[1:])
    assert not np.array_equal(encode(s, 1), encode(moved, 1))
    other = s._replace(favourites=(s.favourites[1],) + s.favourites[1:])
    assert not np.array_equal(encode(s, 0), encode(other, 0))  # own card is visible


def test_votes_are_hidden_until_all_have_voted():
    s = election(3, mover=0)
    yes = R.apply_action(s, R.YES)
    no = R.apply_action(s, R.NO)
    for seat in (1, 2):
        assert np.array_equal(encode(yes, seat), encode(no, seat))
        assert LAYOUT.decode(encode(no, seat), raw=True)["has_voted"][(0 - seat) % 3] == 1
    done = R.apply_action(R.apply_action(no, R.YES), R.YES)
    view = LAYOUT.decode(encode(done, 1), raw=True)
    assert view["no_votes"][N["Fiorello"]].tolist() == [0, 0, 1, 0, 0, 0]  # seat 0, 2 after 1
    assert view["castle"][N["Fiorello"], 8] == 1  # eliminated
    assert view["no_cards_left"].tolist() == [4, 4, 3, 0, 0, 0]  # seat 0 spent one of 4
    assert view["last_candidate"][N["Fiorello"]] == 1 and not view["has_voted"].any()


def test_cards_revealed_at_round_ends_are_in_every_observation():
    s = new_game(4)
    first = s.favourites
    s = crown_round(crown_round(s, mover=1), mover=2)
    for seat in range(4):
        view = LAYOUT.decode(encode(s, seat), raw=True)
        shown = view["revealed_cards"]
        for p, card in enumerate(first):
            row = shown[0, (p - seat) % 4]  # relative seats, the observer first
            assert np.flatnonzero(row).tolist() == list(R.FAVOURITE_CARDS[card])
        assert shown[1, :4].sum() == 4 * 6 and not shown[2].any() and not shown[:, 4:].any()
        assert view["round_scores"][:2, :4].tolist() == [
            [row[(seat + r) % 4] for r in range(4)] for row in s.round_scores
        ]


def test_observation_is_raw_integers_under_one_affine_map():
    # What a batched engine must reproduce: raw integer values, then LAYOUT's affine map.
    scale, shift = LAYOUT.affine()
    for seed in range(3):
        game = mid_game(n=3 + seed, steps=60 + 40 * seed, seed=seed)
        for seat in range(game.config.num_players):
            obs = encode(game.game_state, seat)
            raw = np.concatenate([v.ravel() for v in LAYOUT.decode(obs, raw=True).values()])
            assert np.array_equal(raw, np.rint(raw)) and 0 <= obs.min() and obs.max() <= 1
            assert np.array_equal(raw.astype(np.float32) * scale + shift, obs)


def test_observation_is_seat_relative():
    game = mid_game(steps=5)
    s = game.game_state
    for seat in range(4):
        view = LAYOUT.decode(encode(s, seat), raw=True)
        assert view["to_play"][(s.to_play - seat) % 4] == 1
        assert view["starter"][(0 - seat) % 4] == 1
        assert view["seats"].tolist() == [1, 1, 1, 1, 0, 0]
        fav = np.flatnonzero(view["my_favourites"]).tolist()
        assert fav == list(R.FAVOURITE_CARDS[s.favourites[seat]])


# -- state access, copies, replay --------------------------------------------------------


def test_state_holds_hidden_information_and_fits_its_space():
    game = mid_game()
    st = game.state()
    assert game.state_space.contains(st)
    s = game.game_state
    full = STATE_LAYOUT.decode(st, raw=True)
    for seat, card in enumerate(s.favourites):
        assert np.flatnonzero(full["favourites"][seat]).tolist() == list(R.FAVOURITE_CARDS[card])
    assert [int(full["deck_position"][card]) for card in s.deck] == list(range(1, len(s.deck) + 1))
    assert np.array_equal(st[: LAYOUT.size], encode(s, 0))  # then seat 0's own view
    assert np.array_equal(encode_state(s), st)


def continue_game(game, steps: int = 400) -> list:
    out = []
    for _ in range(steps):
        obs, _, term, _, _ = game.last()
        if term:
            break
        legal = np.flatnonzero(obs["action_mask"])
        out.append(int(legal[game._rng.integers(legal.size)]))  # draws from the env's generator
        game.step(out[-1])
    return out + [game.game_state]


@pytest.mark.parametrize("clone", [copy.deepcopy, lambda g: pickle.loads(pickle.dumps(g))])
def test_copies_keep_position_and_generator(clone):
    game = mid_game(steps=30)
    twin = clone(game)
    assert twin.game_state == game.game_state and twin.action_log == game.action_log
    assert continue_game(twin) == continue_game(game)


def test_replay_from_seed_and_action_log():
    game = mid_game(n=5, steps=10_000, seed=7)
    assert all(game.terminations.values())
    again = raw_env.replay(7, game.action_log, num_players=5)
    assert again.game_state == game.game_state


def test_same_seed_same_game_different_seed_different_deal():
    a, b, c = raw_env(), raw_env(), raw_env()
    a.reset(seed=11)
    b.reset(seed=11)
    c.reset(seed=12)
    assert a.game_state == b.game_state != c.game_state


# -- rewards and rendering ---------------------------------------------------------------


@pytest.mark.parametrize("mode", ["win", "score", "relative"])
def test_returns_match_the_reward_mode(mode):
    game = raw_env(num_players=4, reward=mode)
    game.reset(seed=5)
    totals = dict.fromkeys(game.possible_agents, 0.0)
    agent = RandomAgent(5)
    for name in game.agent_iter():
        obs, reward, term, trunc, _ = game.last()
        totals[name] += reward
        game.step(None if term or trunc else agent(obs))
    s = game.game_state
    won = set(R.winners(s))
    for seat, name in enumerate(game.possible_agents):
        if mode == "win":
            assert totals[name] == (1.0 if seat in won else -1.0)
        elif mode == "score":
            assert totals[name] == pytest.approx(R.totals(s)[seat] / 33)
        else:
            rows = s.round_scores
            expected = sum((r[seat] - (sum(r) - r[seat]) / 3) / 33 for r in rows)
            assert totals[name] == pytest.approx(expected)


def test_render_ansi_shows_castle_but_no_favourites(capsys):
    game = raw_env(render_mode="ansi")
    game.reset(seed=2)
    play_random(game, 60)
    text = game.render()
    assert "nobles" in text and "servants" in text and "NO left" in text
    assert "favourite" not in text.lower()
    human = raw_env(render_mode="human")
    human.reset(seed=2)
    human.step(int(np.flatnonzero(human.observe("player_0")["action_mask"])[0]))
    assert "King Up!" in capsys.readouterr().out
