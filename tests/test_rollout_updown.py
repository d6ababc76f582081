"""Up & Down's compiled rollout policy in a hand-built position (the checks every game's twin
passes are in tests/test_engine_rollout.py)."""

from __future__ import annotations

import numpy as np
from helpers import Fed

from tablegym.kernels import uniforms
from updown_env import engine as E
from updown_env import heuristic as H
from updown_env import rollout as U
from updown_env import rules as R
from updown_env.heuristic import rollout_policy
from updown_env.rules import PLAY, ROLL


def test_a_leader_holding_every_trump_keeps_them():
    # Seat 0 leads holding the four 7s with 7 the trump, so each of its cards wins for certain
    # under FLIP or any ROTATE; ROLL would leave one own-suit 7 against the four unseen cards
    # of the new trump value. The twin never rolls, and takes the Python policy's pick among
    # the equal changes (its draws break the tie).
    config = R.make_config(num_players=2)
    sevens = sum(1 << R.card_id(suit, 7) for suit in range(R.NUM_SUITS))
    rest = (1 << R.NUM_CARDS) - 1 & ~sevens
    other = sum(1 << c for c in R.cards_of(rest)[:4])
    state = R.initial_state(config, np.random.default_rng(0))._replace(
        hands=(sevens, other), aside=rest & ~other, trump=7, to_play=0, leader=0
    )
    row, consts = E.from_state(state, config), E.setup(config)
    picks = set()
    for seed in range(1, 40):
        action = U.policy(row, consts, np.array([seed], dtype=np.uint64))
        assert action == rollout_policy(state, Fed(uniforms(seed, 64)))
        picks.add(action)
    assert ROLL not in picks and len(picks) > 2 and max(picks) < PLAY


def test_a_card_that_cannot_win_spoils_an_opponents_card(monkeypatch):
    # Seat 0 chooses between a 5 of the suit nobody owns and the 9 of seat 1's own suit; with
    # 7 the trump neither can win, and both are worth as much kept (as far from 7). The 5
    # spoils seat 1's unseen own-suit 5 ("A trick" 3a); nothing can spoil a 9 of seat 1's
    # suit, as seat 0 holds it. Both policies throw the 5; without the deny term it is a coin.
    config = R.make_config(num_players=2)
    state = R.initial_state(config, np.random.default_rng(0))
    mine, theirs = R.own_suits(state)
    free = next(s for s in range(R.NUM_SUITS) if s not in (mine, theirs))
    five, nine = R.card_id(free, 5), R.card_id(theirs, 9)
    rest = [c for c in range(R.NUM_CARDS) if c not in (five, nine)]
    state = state._replace(
        phase=R.Phase.CHOOSE,
        hands=(1 << five | 1 << nine, 1 << rest[0] | 1 << rest[1]),
        aside=sum(1 << c for c in rest[2:]),
        played=(0, 0),
        trump=7,
        to_play=0,
        leader=0,
        pot=0,
    )
    row, consts = E.from_state(state, config), E.setup(config)
    for seed in range(1, 20):
        assert rollout_policy(state, Fed(uniforms(seed, 8))) == PLAY + five
        assert U.policy(row, consts, np.array([seed], dtype=np.uint64)) == PLAY + five
    monkeypatch.setattr(H, "ROLLOUT_DENY", 0.0)
    picks = {rollout_policy(state, Fed(uniforms(seed, 8))) for seed in range(1, 20)}
    assert picks == {PLAY + five, PLAY + nine}
