"""The KdK heuristic: legal moves in every phase, observation only, scripted choices, strength.

Scripted positions are hand-built states; the agent sees them only through
``observation.encode`` and the mask of ``rules.legal_actions``. Rules are cited by the section
numbers of ``docs/kdk_rules.md`` (§x.y).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from kdk_positions import build, greedy

from agents.base import GameView
from agents.random_agent import RandomAgent
from kdk_env import observation, raw_env
from kdk_env import rules as R
from kdk_env.heuristic import Decision, HeuristicKdK, Seen
from kdk_env.rules import Phase
from training.evaluate import wilson

PASS, FAIL, WEITER, TOP_UP = R.PASS, R.FAIL, R.WEITER, R.TOP_UP
SECURE, CLAIM_LATE, DECLARE_SP = R.SECURE, R.CLAIM_LATE, R.DECLARE_SP
T, K, A = R.TRAITOR, R.KING, R.AMBASSADOR
# The heuristic's win rate must clear the fair share by this much at the Wilson lower bound.
MARGIN_RANDOM = 0.3
MARGIN_GREEDY = 0.1


def mask_of(state: R.State) -> np.ndarray:
    legal = np.zeros(R.NUM_ACTIONS, dtype=np.int8)
    legal[list(R.legal_actions(state))] = 1
    return legal


def decide(state: R.State, seed: int = 0) -> int:
    """The heuristic's action for the seat to play, from that seat's observation only."""
    seat = state.to_play
    return HeuristicKdK(seed).act(observation.encode(state, seat), mask_of(state))


def play_own_turn(state: R.State, rng: np.random.Generator) -> tuple[R.State, list[int]]:
    """Let the heuristic act while seat 0 is to play in this round; its actions in order."""
    actions = []
    while state.to_play == 0 and state.phase <= Phase.FINISH and state.rounds_done == 0:
        a = decide(state)
        actions.append(a)
        state = R.apply_action(state, a, rng)
    return state, actions


# -- announcing what it can lay out (§4.1, §4.2, §4.4) ---------------------------------------


def test_announces_the_run_it_can_serve_and_lays_it_out():
    # Spec Ex. 1: top 2, duty; 4 serves (4 ≥ 2 + 2), then 5, 5, 6, 7 are throws on my own
    # cards: 5 cards, so "Jay 5" (pairs count), and the combo cannot fail.
    s = build(
        9,
        3,
        phase=Phase.DUTY,
        duty=0,
        hands={0: (4, 5, 5, 6, 7), 1: (1, 9), 2: (2, 9)},
        top=2,
        top_owner=2,
        box=((2, 2, False),),
    )
    s, actions = play_own_turn(s, np.random.default_rng(0))
    assert actions == [R.announce_action(5), 4, 5, 5, 6, 7]
    assert s.finish_order == (0,) and s.combo_pts[0] == 5


def test_counts_the_cards_since_the_last_serve():
    # In a window my throws continue the combo (§4.1): 2 cards since my last serve, plus the
    # 6 and 7 I can throw now on the 5, make 4.
    s = build(
        10,
        3,
        phase=Phase.WINDOW,
        hands={0: (6, 7), 1: (1, 9), 2: (2, 3)},
        top=5,
        top_owner=2,
        box=((2, 5, False),),
        duty=1,
        queue=(0, 2),
        combo={0: 2},
    )
    s, actions = play_own_turn(s, np.random.default_rng(0))
    assert actions == [R.announce_action(4), 6, 7]
    assert s.combo_pts[0] == 4


def test_takes_a_slot_figure_into_the_run():
    # Level 10: the 7 in my slot extends 5, 6; the last card must be a hand card (§4.7), so
    # the slot figure is taken first, then "Jay 3" and the run.
    s = build(
        10,
        3,
        phase=Phase.WINDOW,
        hands={0: (5, 6), 1: (1, 9), 2: (2, 3)},
        top=4,
        top_owner=2,
        box=((2, 4, False),),
        duty=1,
        queue=(0, 2),
        slots={0: (7, -1, -1)},
    )
    s, actions = play_own_turn(s, np.random.default_rng(0))
    assert actions == [R.TAKE_SLOT + 0, R.announce_action(3), 5, 6, 7]
    assert s.combo_pts[0] == 3


def test_announces_a_one_run_hand_before_it_can_start_it():
    # Nothing fits the 9 in this window, but the hand is one run: announcing now bans the
    # others' traitor and ambassador serves (level 9) and costs nothing if it fails (§4.3).
    s = build(
        9,
        3,
        phase=Phase.WINDOW,
        hands={0: (4, 5, 6), 1: (1, 9), 2: (2, 3)},
        top=9,
        top_owner=2,
        box=((2, 9, False),),
        duty=1,
        queue=(0, 2),
    )
    assert decide(s) == R.announce_action(3)


def test_claims_late_when_it_cannot_announce():
    # Its announcement of this round is used up (ann_made): lay out and claim 5 // 2 = 2.
    s = build(
        9,
        3,
        phase=Phase.DUTY,
        duty=0,
        hands={0: (4, 5, 5, 6, 7), 1: (1, 9), 2: (2, 9)},
        top=2,
        top_owner=2,
        box=((2, 2, False),),
        ann_made={0: True},
    )
    s, actions = play_own_turn(s, np.random.default_rng(0))
    assert actions == [4, 5, 5, 6, 7, CLAIM_LATE]
    assert s.combo_pts[0] == 2


@pytest.mark.parametrize("pile, expected", [((7, 7, 7, 7), TOP_UP), ((2, 2, 3, 3), SECURE)])
def test_tops_up_a_short_finish_only_when_it_is_likely_to_fit(pile, expected):
    # Announced 4, laid 3 and the hand is empty (§3.5 FINISH). My draw pile is public to me:
    # all 7s on my 6 would complete the combo; all 2s and 3s cannot.
    s = build(
        8,
        3,
        phase=Phase.FINISH,
        hands={1: (1, 9), 2: (2, 3)},
        top=6,
        top_owner=0,
        box=((0, 4, False), (0, 5, False), (0, 6, False)),
        duty=1,
        announced={0: 4},
        serves={0: 1},
        combo={0: 3},
        laid={0: True},
        draws={0: pile},
        resume=R.RESUME_NEXT,
    )
    assert set(R.legal_actions(s)) == {TOP_UP, SECURE}
    assert decide(s) == expected


# -- saving penalty cards ----------------------------------------------------------------------


def duty_on_king(hand: tuple[int, ...], level: int = 8, **kw) -> R.State:
    return build(
        level,
        3,
        phase=Phase.DUTY,
        duty=0,
        hands={0: hand, 1: (1, 9), 2: (2, 3)},
        top=K,
        top_owner=2,
        box=((2, K, False),),
        **kw,
    )


def test_serves_an_ambassador_rather_than_fail():
    assert decide(duty_on_king((2, 4, A))) == A


def test_serves_a_slot_figure_rather_than_fail():
    assert decide(duty_on_king((2, 4), level=10, slots={0: (A, -1, -1)})) == R.LAY_SLOT + 0


def test_lays_a_traitor_rather_than_fail():
    # One penalty card either way, but the traitor leaves the hand (§2.1, §3.5).
    assert decide(duty_on_king((T, 3, 5))) == T


def test_weiter_with_two_traitors_when_nothing_else_fits():
    s = duty_on_king((T, T, 3, 5))
    assert WEITER in R.legal_actions(s)
    assert decide(s) == WEITER


def test_prefers_a_fitting_card_to_a_fault():
    s = build(
        9,
        3,
        phase=Phase.DUTY,
        duty=0,
        hands={0: (1, 8, 10), 1: (1, 9), 2: (2, 3)},
        top=5,
        top_owner=2,
        box=((2, 5, False),),
    )
    assert decide(s) in (8, 10)


# -- windows and openings ----------------------------------------------------------------------


def test_throws_to_shed_a_run_from_the_top():
    # 5, 6 run on from the 4 and leave a single card.
    s = build(
        9,
        3,
        phase=Phase.WINDOW,
        hands={0: (5, 6, 9), 1: (1, 9), 2: (2, 3)},
        top=4,
        top_owner=2,
        box=((2, 4, False),),
        duty=1,
        queue=(0, 2),
        ann_made={0: True},
    )
    s, actions = play_own_turn(s, np.random.default_rng(0))
    assert actions[:2] == [5, 6]


def test_does_not_break_the_run_it_keeps():
    # Throwing 4, 5, 6 would leave 3 and 9 behind: the run 3-6 is worth more kept whole.
    s = build(
        9,
        3,
        phase=Phase.WINDOW,
        hands={0: (3, 4, 5, 6, 9), 1: (1, 9), 2: (2, 3)},
        top=4,
        top_owner=2,
        box=((2, 4, False),),
        duty=1,
        queue=(0, 2),
    )
    assert decide(s) == PASS


def test_opens_with_a_low_run():
    # Any card opens (§3.5); low figures are the hardest to serve later (on top t only
    # figures ≥ t fit), so the run 1-2 goes now and the high cards stay for later duties.
    s = build(9, 3, phase=Phase.OPEN, duty=0, hands={0: (1, 2, 7, 9, 10, K), 1: (1, 9), 2: (2, 3)})
    s, actions = play_own_turn(s, np.random.default_rng(0))
    assert actions[:2] == [1, 2]


# -- between rounds (level 10, §6.2–6.5) ---------------------------------------------------


def test_slot_pick_prefers_ambassadors():
    s = build(
        10,
        3,
        phase=Phase.SLOT_PICK,
        hands={},
        queue=(0,),
        picks_left=(2, 0, 0),
        draws={0: (3, 9, K, A, 5)},
    )
    assert decide(s) == R.slot_action(R.SLOT_PICK, 0, A)


def test_swap_parks_a_traitor_in_a_slot():
    s = build(
        10,
        3,
        phase=Phase.SWAP,
        hands={0: (T, 3, 4, 5, 8, 9, 10, K)},
        queue=(0,),
        slots={0: (6, -1, -1)},
    )
    assert decide(s) == R.slot_action(R.SLOT_SWAP, 0, T)


@pytest.mark.parametrize("pile, expected", [((4,), DECLARE_SP), (tuple(range(1, 11)), PASS)])
def test_declares_shuffle_pressure_only_with_a_tiny_draw_pile(pile, expected):
    s = build(
        10,
        3,
        phase=Phase.SP_DECLARE,
        hands={0: (1, 2, 3, 4, 5, 6, 7, 8)},
        queue=(0, 1, 2),
        draws={0: pile},
    )
    assert decide(s) == expected


# -- legality, decoding, the interface ---------------------------------------------------------


def play_games(configs, seed: int, all_heuristic: bool):
    """Yield (state, seat, mask, action) for every heuristic decision of the given games."""
    rng = np.random.default_rng(seed)
    for g, (n, level, mode) in enumerate(configs):
        cfg = R.make_config(
            num_players=n, level=level, deck_mode=mode, num_rounds=3, auto_pass=g % 4 == 3
        )
        mine = {s for s in range(n) if all_heuristic or s == g % n}
        agents = [
            HeuristicKdK(g * 7 + s) if s in mine else RandomAgent(g * 7 + s) for s in range(n)
        ]
        state = R.initial_state(cfg, rng)
        while not R.is_terminal(state):
            seat = state.to_play
            legal = mask_of(state)
            action = agents[seat].act(observation.encode(state, seat), legal)
            if seat in mine:
                yield state, seat, legal, action
            state = R.apply_action(state, action, rng)


CONFIGS = list(itertools.product((2, 3, 4, 5), (8, 9, 10), ("one_colour", "own_decks")))


def test_always_legal_in_every_phase():
    phases = {}
    for all_heuristic in (True, False):
        for state, _, legal, action in play_games(CONFIGS, 1, all_heuristic):
            assert isinstance(action, int) and legal[action]
            if legal.sum() > 1:
                phases[state.phase] = phases.get(state.phase, 0) + 1
    # Every phase with a real choice was met (FREE_OPEN: after someone else's fault while
    # announced; SWAP: a slot holder at the start of a round without distribution).
    assert set(phases) == set(Phase) - {Phase.GAME_OVER}, phases


def test_reads_the_observation_exactly():
    checked = 0
    for state, seat, legal, _ in play_games(CONFIGS, 2, all_heuristic=False):
        seen = Seen(observation.encode(state, seat))
        assert seen.phase == state.phase and seen.level == state.config.level
        assert seen.hand == state.hand[seat]
        assert seen.own_draw == tuple(state.draw[seat].count(f) for f in range(R.NUM_FIGURES))
        assert seen.draw_count == len(state.draw[seat])
        assert seen.played == state.played[seat]
        assert seen.top == state.top and seen.slots == state.slots[seat]
        assert seen.combo == min(state.combo_len[seat], 22)
        assert (seen.announced, seen.ann_made) == (state.announced[seat], state.ann_made[seat])
        assert seen.serves == state.serves_since[seat]
        assert seen.amb_banned == R._amb_ban(state, seat)
        if state.phase <= Phase.DUTY:
            # Its own first-lay rule agrees with the mask for every figure it holds.
            d = Decision(seen, set(np.flatnonzero(legal).tolist()), np.random.default_rng())
            for f in range(1, R.NUM_FIGURES):
                if state.hand[seat][f]:
                    assert d.can_lay_first(f) == bool(legal[f]), (f, state.phase)
        checked += 1
    assert checked > 500


def test_the_view_is_ignored():
    # It decides on the observation alone: the true state or a sample changes nothing.
    rng = np.random.default_rng(3)
    cfg = R.make_config(num_players=4, level=10, num_rounds=4)
    state = R.initial_state(cfg, rng)
    checked = 0
    while not R.is_terminal(state):
        seat = state.to_play
        obs, legal = observation.encode(state, seat), mask_of(state)
        plain = HeuristicKdK(5).act(obs, legal)
        for view_state in (state, R.sample_state(state, seat, rng)):
            assert HeuristicKdK(5).act(obs, legal, GameView(R, cfg, view_state, seat)) == plain
        checked += 1
        state = R.apply_action(state, plain, rng)
    assert checked > 150


def test_acts_on_a_pettingzoo_observation_and_refuses_an_empty_mask():
    game = raw_env(num_players=3, num_rounds=1)
    game.reset(seed=4)
    agent = HeuristicKdK(seed=1)
    for _ in game.agent_iter():
        obs, _, term, trunc, _ = game.last()
        game.step(None if term or trunc else agent(obs))
    assert R.is_terminal(game.game_state)
    with pytest.raises(ValueError, match="no action"):
        agent.act(obs["observation"], np.zeros(R.NUM_ACTIONS, dtype=np.int8))


# -- strength ----------------------------------------------------------------------------------


class Greedy:
    """The rules tests' play-out policy (``kdk_positions.greedy``), on the true state."""

    def __init__(self, seed: int):
        del seed

    def act(self, state: R.State) -> int:
        return greedy(state)


def tournament(n: int, games: int, opponent: type, seed: int = 0) -> tuple[int, float, float]:
    """One heuristic against n - 1 opponents, 2-round level-10 games; its seat rotates.

    Returns its outright wins, its wins with ties shared and its mean round score.
    """
    outright, shared, score = 0, 0.0, 0.0
    for g in range(games):
        rng = np.random.default_rng([seed, g])
        me = g % n
        agents = [HeuristicKdK(g) if s == me else opponent(g * n + s + 1) for s in range(n)]
        cfg = R.make_config(num_players=n, num_rounds=2)
        state = R.initial_state(cfg, rng)
        while not R.is_terminal(state):
            seat = state.to_play
            if seat == me or opponent is RandomAgent:
                obs = observation.encode(state, seat)
                action = agents[seat].act(obs, mask_of(state))
            else:
                action = agents[seat].act(state)
            state = R.apply_action(state, action, rng)
        won = R.winners(state)
        outright += won == (me,)
        shared += (me in won) / len(won)
        score += state.score[me] / cfg.num_rounds
    return outright, shared, score / games


@pytest.mark.parametrize("n, games", [(2, 40), (3, 60), (4, 60)])
def test_beats_random_play(n, games):
    # A fixed seeded tournament. Only outright wins count: with ties counted as losses the
    # fair share of a seat is at most 1/n, so clearing 1/n is conservative.
    outright, shared, score = tournament(n, games, RandomAgent)
    low, _ = wilson(outright, games)
    fair = 1 / n
    assert low > fair + MARGIN_RANDOM, (
        f"{n} players: {outright}/{games} outright wins ({shared:.1f} shared, mean round "
        f"score {score:.2f}), Wilson 95% lower bound {low:.3f} <= {fair:.3f} + {MARGIN_RANDOM}"
    )


def test_beats_the_greedy_play_out_policy():
    # A stronger opponent than random: the rules tests' greedy policy, in two seats.
    games = 90
    outright, shared, score = tournament(3, games, Greedy)
    low, _ = wilson(outright, games)
    assert low > 1 / 3 + MARGIN_GREEDY, (
        f"{outright}/{games} outright wins against greedy ({shared:.1f} shared, mean round "
        f"score {score:.2f}), Wilson 95% lower bound {low:.3f}"
    )
