"""Up & Down as a PettingZoo env: API, seeding, no-leak observations, copies, replay, docs."""

from __future__ import annotations

import copy
import pickle
import random
import sys

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test
from updown_positions import positions as _positions
from updown_positions import reshuffle_hidden

from tablegym import doctables
from updown_env import env, observation, raw_env, render
from updown_env import rules as R
from updown_env.rules import FLIP, ROLL, Phase

PLAYER_COUNTS = [2, 3, 4]


# -- PettingZoo API --------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:Observation")
@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_api(n):
    api_test(env(num_players=n), num_cycles=200)
    api_test(raw_env(num_players=n, num_rounds=2), num_cycles=200)


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_seed(n):
    seed_test(lambda: env(num_players=n))
    seed_test(lambda: raw_env(num_players=n, num_rounds=2))


def test_metadata_and_spaces():
    game = raw_env(num_players=3)
    assert game.metadata["name"] == "updown_v2"
    assert game.possible_agents == ["player_0", "player_1", "player_2"]
    assert game.action_space("player_1").n == 50
    assert game.observation_space("player_0")["observation"].shape == (observation.OBS_SIZE,)


@pytest.mark.parametrize(
    "options, name",
    [
        ({"num_players": 5}, "num_players"),
        ({"num_rounds": 0}, "num_rounds"),
        ({"rounds": 2}, "num_rounds"),
        ({"reward": "x"}, "reward"),
    ],
)
def test_bad_options_raise(options, name):
    with pytest.raises(ValueError, match=name):
        raw_env(**options)
    with pytest.raises(ValueError, match="colour"):
        env(colour="red")


def test_illegal_action_raises_in_raw_env():
    game = raw_env()
    game.reset(seed=0)
    with pytest.raises(ValueError, match="illegal action 6 .*legal actions"):
        game.step(6)  # a card while the leader must change the rules


def _random_game(game, seed: int, prefer_roll: bool = False) -> list[dict]:
    """Play to the end with random legal actions; return every observation seen."""
    pick = random.Random(seed)
    seen = []
    for _agent in game.agent_iter():
        obs, _, term, trunc, _ = game.last()
        seen.append(obs)
        if term or trunc:
            game.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        action = ROLL if prefer_roll and ROLL in legal else int(pick.choice(list(legal)))
        game.step(action)
    return seen


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_observations_and_state_stay_in_their_spaces(n):
    game = raw_env(num_players=n, num_rounds=2)
    for seed in range(3):
        game.reset(seed=seed)
        space = game.observation_space("player_0")
        pick = random.Random(seed)
        while not all(game.terminations.values()):
            for agent in game.agents:
                assert space.contains(game.observe(agent))
            assert game.state_space.contains(game.state())
            mask = game.action_mask()
            assert set(np.flatnonzero(mask)) == set(game.legal_actions())
            game.step(pick.choice(game.legal_actions()))
        assert game.state_space.contains(game.state())
        assert all(space.contains(game.observe(a)) for a in game.agents)


def test_trick_rewards_sum_to_the_tricks():
    game = raw_env(num_players=4, num_rounds=2, reward="tricks")
    game.reset(seed=7)
    totals = dict.fromkeys(game.agents, 0.0)
    pick = random.Random(7)
    while not all(game.terminations.values()):
        game.step(pick.choice(game.legal_actions()))
        for agent, r in game.rewards.items():
            totals[agent] += r
    assert tuple(totals.values()) == R.scores(game.game_state)


def test_win_rewards_at_the_end():
    game = raw_env(num_players=3)
    game.reset(seed=3)
    pick = random.Random(3)
    final = {}
    for agent in game.agent_iter():
        _, reward, term, _, _ = game.last()
        if term:
            final[agent] = reward
            game.step(None)
        else:
            assert reward == 0.0
            game.step(pick.choice(game.legal_actions()))
    won = R.winners(game.game_state)
    assert won and final == {
        a: 1.0 if s in won else -1.0 for s, a in enumerate(game.possible_agents)
    }


# -- hidden information ----------------------------------------------------------------------


@pytest.mark.parametrize("n", PLAYER_COUNTS)
def test_no_leak_of_hidden_information(n):
    # "Hidden information": others' hands, others' unrevealed choices and set-aside cards.
    rng = random.Random(n)
    changed_hidden = 0
    for state in _positions(n):
        for seat in range(n):
            other = reshuffle_hidden(state, seat, rng)
            changed_hidden += other != state
            assert np.array_equal(observation.encode(other, seat), observation.encode(state, seat))
            assert render.to_text(other) == render.to_text(state)
            assert render.to_text(other, seat) == render.to_text(state, seat)
    assert changed_hidden > 100  # the reshuffles did change what is hidden


def test_pending_choice_is_seen_only_by_its_owner():
    state = next(
        s
        for s in _positions(4)
        if s.phase is Phase.CHOOSE and s.to_play != s.leader and s.hands[s.leader]
    )
    chooser = state.leader
    card = state.pending[chooser]
    hand_cards = R.cards_of(state.hands[chooser])
    # Swap the pending card with one in the same hand: only the chooser can tell.
    pending, hands = list(state.pending), list(state.hands)
    pending[chooser] = hand_cards[0]
    hands[chooser] ^= 1 << card | 1 << hand_cards[0]
    swapped = state._replace(pending=tuple(pending), hands=tuple(hands))
    mine = observation.decode(observation.encode(state, chooser))
    assert mine["my_choice"][card] == 1 and mine["chosen"][0] == 1
    assert not np.array_equal(
        observation.encode(swapped, chooser), observation.encode(state, chooser)
    )
    for seat in range(4):
        if seat != chooser:
            seen = observation.decode(observation.encode(state, seat))
            assert seen["chosen"][(chooser - seat) % 4] == 1 and not seen["my_choice"].any()
            assert np.array_equal(
                observation.encode(swapped, seat), observation.encode(state, seat)
            )


@pytest.mark.parametrize(
    "change",
    [
        {"trump": 12},
        {"side": 1},
        {"orientation": 3},
        {"pot": 3},
        {"tricks": (2, 0, 0)},
        {"leader": 1},
        {"last_result": R.POT},
    ],
)
def test_visible_changes_change_every_observation(change):
    state = next(_positions(3))._replace(trump=2, side=0, orientation=0, leader=0, pot=0)
    other = state._replace(**change)
    for seat in range(3):
        assert not np.array_equal(observation.encode(other, seat), observation.encode(state, seat))


def test_own_hand_is_seen_and_played_cards_are_tracked():
    states = [s for s in _positions(3, games=1) if s.phase is Phase.CHANGE]
    late = states[5]
    for seat in range(3):
        seen = observation.decode(observation.encode(late, seat))
        assert set(np.flatnonzero(seen["hand"])) == set(R.cards_of(late.hands[seat]))
        for j in range(3):
            s = (seat + j) % 3
            assert set(np.flatnonzero(seen["played"][j])) == set(R.cards_of(late.played[s]))
            assert seen["last_trick"][j, late.last_trick[s]] == 1
        size = late.hands[0].bit_count()
        assert seen["hand_sizes"].tolist() == [size] * 3 + [0]
        assert seen["num_players"].tolist() == [0, 1, 0]
        assert seen["suits"][0, R.seat_suit(3, late.orientation, seat)] == 1
        assert not seen["suits"][3].any() and not seen["played"][3].any()


@pytest.mark.parametrize("n, num_rounds", [(2, 1), (3, 2), (4, 5)])
def test_raw_values_and_options_are_read_back_by_name(n, num_rounds):
    # The layout scales raw counts; decode undoes it with the options read from the vector.
    for state in _positions(n, games=1, num_rounds=num_rounds):
        for seat in range(n):
            vec = observation.encode(state, seat)
            assert observation.params_of(vec) == {"num_players": n, "num_rounds": num_rounds}
            raw = observation.decode(vec)
            order = [(seat + j) % n for j in range(n)]
            assert raw["tricks"][:n].tolist() == [state.tricks[s] for s in order]
            assert raw["hand_sizes"][:n].tolist() == [state.hands[s].bit_count() for s in order]
            assert raw["pot"][0] == state.pot
            assert raw["round"][0] == state.round
            assert raw["rounds_left"][0] == num_rounds - 1 - state.round
            done = state.played[0].bit_count()
            assert raw["tricks_left"][0] == R.HAND_SIZE[n] - done
        full = observation.STATE_LAYOUT.decode(
            observation.encode_state(state), raw=True, num_players=n, num_rounds=num_rounds
        )
        assert full["lost"][0] == state.lost and full["tricks"][:n].tolist() == list(state.tricks)
    assert R.is_terminal(state) and 0 < max(state.tricks)


def test_state_holds_the_hidden_information():
    state = next(s for s in _positions(3) if s.phase is Phase.CHOOSE and s.to_play != s.leader)
    full = observation.STATE_LAYOUT.decode(observation.encode_state(state))
    for s in range(3):
        assert set(np.flatnonzero(full["hands"][s])) == set(R.cards_of(state.hands[s]))
    assert full["pending"][state.leader, state.pending[state.leader]] == 1
    assert set(np.flatnonzero(full["aside"])) == set(R.cards_of(state.aside))
    assert full["to_play"][state.to_play] == 1


# -- copies and replay -----------------------------------------------------------------------


def _continue(game, steps: int) -> list:
    """Play on with a fixed rule (ROLL whenever open, to draw chance; else the middle card)."""
    states = []
    for _ in range(steps):
        if all(game.terminations.values()):
            break
        legal = game.legal_actions()
        game.step(ROLL if ROLL in legal else legal[len(legal) // 2])
        states.append(game.game_state)
    return states


@pytest.mark.parametrize("clone", [copy.deepcopy, lambda g: pickle.loads(pickle.dumps(g))])
def test_copies_keep_the_position_and_the_generator(clone):
    game = raw_env(num_players=3, num_rounds=2)
    game.reset(seed=21)
    _continue(game, 30)
    twin = clone(game)
    assert twin.game_state == game.game_state and twin.agent_selection == game.agent_selection
    ours, theirs = _continue(game, 200), _continue(twin, 200)
    assert ours == theirs and len(ours) > 60  # past the second deal and several rolls
    assert twin.action_log == game.action_log


def test_replay_reproduces_the_game():
    game = raw_env(num_players=4, num_rounds=2)
    game.reset(seed=5)
    _random_game(game, 5, prefer_roll=True)
    again = raw_env.replay(5, game.action_log, num_players=4, num_rounds=2)
    assert again.game_state == game.game_state
    assert np.array_equal(again.state(), game.state())
    assert all(again.terminations.values())


def test_reset_with_the_same_seed_is_the_same_game():
    game = raw_env(num_players=2)
    game.reset(seed=8)
    first = game.game_state
    _continue(game, 10)
    game.reset(seed=8)
    assert game.game_state == first and game.action_log == []


# -- docs and rendering ----------------------------------------------------------------------


def test_docstrings_hold_the_generated_layout_table():
    # tests/test_layout.py checks every generated table is current; here that it is there,
    # and that the env's docs page points to it instead of repeating it.
    assert "<!-- layout: updown_env.observation.LAYOUT -->" in observation.__doc__
    assert doctables.render(observation.__doc__) == observation.__doc__
    assert "``updown_env/observation.py``" in sys.modules[raw_env.__module__].__doc__


def test_render_modes():
    game = raw_env(render_mode="ansi", num_players=3)
    game.reset(seed=2)
    game.step(FLIP)
    text = game.render()
    assert "Rules: " in text and "trump value" in text and "player_0" in text
    assert "Hand of" not in text
    state = game.game_state
    mine = render.to_text(state, viewer=1)
    assert "Hand of player_1" in mine
    assert all(render.card_text(c) in mine for c in R.cards_of(state.hands[1]))


def test_human_render_prints(capsys):
    game = raw_env(render_mode="human", num_players=2)
    game.reset(seed=2)
    game.step(FLIP)
    assert "Up & Down, 2 players" in capsys.readouterr().out
