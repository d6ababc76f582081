"""The Up & Down heuristic: legal moves, observation only, scripted choices, and its strength.

Scripted positions are hand-built states (every card in exactly one place); the agent sees
them only through ``observation.encode``. Cards are written ``card(suit, value)`` with suits
C, S, H, D = clubs, spades, hearts, diamonds. Rules are cited from ``docs/updown_rules.md``.
"""

from __future__ import annotations

import numpy as np
import pytest
from updown_positions import ALL_CARDS, C, D, H, S, card, mask

from agents.base import GameView
from agents.random_agent import RandomAgent
from training.evaluate import wilson
from updown_env import observation, raw_env
from updown_env import rules as R
from updown_env.heuristic import HeuristicUpDown
from updown_env.rules import DOWN, FLIP, ROLL, UP, Phase, play_action, rotate_action

# The heuristic's win rate must clear the fair share by this much at the Wilson lower bound.
MARGIN = 0.1


def position(n: int, hands: list[tuple[int, ...]], played: tuple[int, ...] = (), **fields):
    """A hand-built state, leader seat 0 in the rule change unless given.

    ``played`` cards count as revealed by seat 0 (who revealed them does not matter to the
    count of cards still out); every card not in a hand or played is set aside.
    """
    held = mask(*(c for h in hands for c in h))
    shown = mask(*played)
    assert held & shown == 0
    base = dict(
        phase=Phase.CHANGE,
        leader=0,
        to_play=0,
        side=UP,
        orientation=0,
        trump=7,
        hands=tuple(mask(*h) for h in hands),
        pending=(R.NO_CARD,) * n,
        aside=ALL_CARDS & ~held & ~shown,
        played=(shown,) + (0,) * (n - 1),
        pot=0,
    )
    base.update(fields)
    state = R.initial_state(R.make_config(num_players=n), np.random.default_rng(0))
    return state._replace(**base)


def decide(state: R.State, seed: int = 0) -> int:
    """The heuristic's action for the seat to play, from that seat's observation only."""
    seat = state.to_play
    legal = np.zeros(R.NUM_ACTIONS, dtype=np.int8)
    legal[list(R.legal_actions(state))] = 1
    return HeuristicUpDown(seed).act(observation.encode(state, seat), legal)


def choose(state: R.State, cards: dict[int, int]) -> R.State:
    """After a FLIP by the leader, seats choose ``cards`` (seat -> card) in turn."""
    rng = np.random.default_rng(0)
    state = R.apply_action(state, FLIP, rng)
    for seat, c in cards.items():
        assert state.to_play == seat
        state = R.apply_action(state, play_action(c), rng)
    return state


# -- legality and the interface --------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 4])
def test_always_a_legal_action(n):
    rng = np.random.default_rng(n)
    for g in range(4):
        state = R.initial_state(R.make_config(num_players=n, num_rounds=2), rng)
        # All seats heuristic in even games, one heuristic among random ones in odd games.
        agents = [
            HeuristicUpDown(g * 10 + s) if g % 2 == 0 or s == g % n else RandomAgent(s)
            for s in range(n)
        ]
        while not R.is_terminal(state):
            seat = state.to_play
            legal = R.legal_actions(state)
            legal_mask = np.zeros(R.NUM_ACTIONS, dtype=np.int8)
            legal_mask[list(legal)] = 1
            action = agents[seat].act(observation.encode(state, seat), legal_mask)
            assert isinstance(action, int) and action in legal
            state = R.apply_action(state, action, rng)


def test_acts_on_a_pettingzoo_observation_and_refuses_an_empty_mask():
    game = raw_env(num_players=3)
    game.reset(seed=4)
    agent = HeuristicUpDown(seed=1)
    for _ in game.agent_iter():
        obs, _, term, _, _ = game.last()
        game.step(None if term else agent(obs))
    assert R.is_terminal(game.game_state)
    with pytest.raises(ValueError, match="no action"):
        agent.act(obs["observation"], np.zeros(R.NUM_ACTIONS, dtype=np.int8))


def test_the_view_is_ignored():
    # The agent must decide on the observation alone: handing it the true state (or another
    # state consistent with its observation) changes nothing.
    rng = np.random.default_rng(3)
    cfg = R.make_config(num_players=4)
    state = R.initial_state(cfg, rng)
    checked = 0
    while not R.is_terminal(state):
        seat = state.to_play
        legal = np.zeros(R.NUM_ACTIONS, dtype=np.int8)
        legal[list(R.legal_actions(state))] = 1
        obs = observation.encode(state, seat)
        plain = HeuristicUpDown(5).act(obs, legal)
        for view_state in (state, R.sample_state(state, seat, rng)):
            view = GameView(R, cfg, view_state, seat)
            assert HeuristicUpDown(5).act(obs, legal, view) == plain
        checked += 1
        state = R.apply_action(state, plain, rng)
    assert checked > 40


# -- scripted choices ------------------------------------------------------------------------


def test_plays_a_trump_nobody_can_match():
    # Trump 7 and the other three 7s are revealed: my 7 of hearts cannot be neutralised (3a)
    # and beats everything (3c). My own-suit queen could still meet another queen.
    hands = [
        (card(C, 3), card(C, 4)),
        (card(H, 7), card(S, 12), card(D, 3)),
        (card(H, 2), card(H, 5), card(H, 6)),
    ]
    played = (card(C, 7), card(S, 7), card(D, 7))
    state = position(3, hands, played, trump=7, side=DOWN)
    state = choose(state, {0: card(C, 3)})  # the leader flips to UP and chooses
    assert state.side == UP and state.to_play == 1
    assert decide(state) == play_action(card(H, 7))


@pytest.mark.parametrize("side, best", [(UP, 12), (DOWN, 2)])
def test_plays_the_extreme_of_its_own_suit(side, best):
    # Two players: seat 0 owns clubs, seat 1 hearts. Under UP the queen of hearts is beaten
    # only by a trump or matched by a queen; under DOWN the 2 of hearts likewise.
    hands = [
        (card(C, 9), card(C, 10), card(S, 4)),
        (card(H, 12), card(H, 2), card(C, 8)),
    ]
    state = position(2, hands, trump=5, side=1 - side)
    state = choose(state, {0: card(C, 9)})
    assert state.side == side and state.to_play == 1
    assert decide(state) == play_action(card(H, best))


def test_leader_rotates_its_strong_suit_to_itself():
    # Leader seat 0 owns clubs under UP but holds the top hearts, and the other queens and
    # trumps (7) are revealed: turning hearts to itself (every seat's suit turns with the
    # card) makes the queen of hearts a sure winner; nothing else comes close.
    mine = (card(H, 12), card(H, 11), card(H, 10), card(H, 9), card(C, 6), card(C, 8))
    gone = tuple(card(s, v) for s in (C, S, D) for v in (7, 12)) + (card(H, 7),)
    rest = [c for c in range(R.NUM_CARDS) if c not in mine and c not in gone]
    hands = [mine, tuple(rest[0:6]), tuple(rest[6:12]), tuple(rest[12:18])]
    state = position(4, hands, gone + tuple(rest[18:]), trump=7, side=UP)
    assert decide(state) == rotate_action(H)


def test_leader_rolls_for_a_trump_only_it_can_hold():
    # Two players; I hold two 6s and two 8s whose other copies are revealed, and nothing
    # else. The trump 7 is out of my hand, so no turn of the card makes my middling cards
    # safe; a roll makes one of my values the unmatched trump with chance 10/30 (2d6 given
    # a value other than 7), and then that card cannot lose (3a, 3c).
    mine = (card(C, 6), card(D, 6), card(S, 8), card(H, 8))
    gone = (card(S, 6), card(H, 6), card(C, 8), card(D, 8))
    rest = [c for c in range(R.NUM_CARDS) if c not in mine and c not in gone]
    state = position(2, [mine, tuple(rest[:4])], gone, trump=7, side=UP)
    assert decide(state) == ROLL


# -- strength against random play ------------------------------------------------------------


def tournament(n: int, games: int, seed: int = 0) -> tuple[int, float]:
    """One heuristic against n - 1 random agents; its seat rotates with the game number.

    Returns the heuristic's outright wins and its wins with ties shared (1/k for k winners).
    """
    outright, shared = 0, 0.0
    for g in range(games):
        rng = np.random.default_rng([seed, g])
        me = g % n
        agents = [HeuristicUpDown(g) if s == me else RandomAgent(g * n + s + 1) for s in range(n)]
        state = R.initial_state(R.make_config(num_players=n), rng)
        while not R.is_terminal(state):
            seat = state.to_play
            legal = np.zeros(R.NUM_ACTIONS, dtype=np.int8)
            legal[list(R.legal_actions(state))] = 1
            state = R.apply_action(
                state, agents[seat].act(observation.encode(state, seat), legal), rng
            )
        won = R.winners(state)
        outright += won == (me,)
        shared += (me in won) / len(won)
    return outright, shared


@pytest.mark.parametrize("n, games", [(2, 100), (3, 120), (4, 200)])
def test_beats_random_play(n, games):
    # A fixed seeded tournament. Only outright wins count as wins here: with ties counted as
    # losses the fair share of a seat is at most 1/n, so clearing 1/n is conservative.
    outright, shared = tournament(n, games)
    low, _ = wilson(outright, games)
    fair = 1 / n
    assert low > fair + MARGIN, (
        f"{n} players: {outright}/{games} outright wins ({shared:.1f} shared), "
        f"Wilson 95% lower bound {low:.3f} <= fair share {fair:.3f} + {MARGIN}"
    )
