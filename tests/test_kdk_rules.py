"""KdK rules core: the worked examples of spec §10, level differences, combos, shuffle pressure,
slots, termination, and invariants over many greedy/random games (spec v1.1, docs/kdk_rules.md).
"""

from __future__ import annotations

import numpy as np
import pytest
from kdk_positions import build, counts, greedy, positions

from kdk_env import rules as R
from kdk_env.rules import ACTIVE, ELIMINATED, FINISHED, Phase

ANN = set(R.ANNOUNCE_IDS)  # ANNOUNCE_3..ANNOUNCE_11
PASS, FAIL, WEITER, ABORT, TOP_UP = R.PASS, R.FAIL, R.WEITER, R.ABORT, R.TOP_UP
SECURE, CLAIM_LATE, DECLARE_SP = R.SECURE, R.CLAIM_LATE, R.DECLARE_SP
_RNG = np.random.default_rng(12345)


def act(state: R.State, *actions: int) -> R.State:
    for a in actions:
        state = R.apply_action(state, a, _RNG)
    return state


def pick(slot: int, figure: int) -> int:
    return R.slot_action(R.SLOT_PICK, slot, figure)


def mask(state: R.State) -> set[int]:
    return set(R.legal_actions(state))


def end_round_now(state: R.State) -> R.State:
    """End the round as E4 would (placement and scoring of §5)."""
    w = R._Work(state, np.random.default_rng(0))
    R._end_round(w)
    return w.freeze()


# -- §10 worked examples -----------------------------------------------------------------------
def ex1(announced: int = 3) -> R.State:
    return build(
        9, 3, phase=Phase.DUTY, to_play=0, duty=0,
        hands={0: (4, 5, 5, 6, 7), 1: (1, 1, 9), 2: (9, 10, 10)},
        top=2, top_owner=2, box=((2, 2, False),),
        announced={0: announced} if announced else {},
    )  # fmt: skip


def test_ex1_overflow_combo():
    s = ex1()
    assert mask(s) == {4, 5, 6, 7, FAIL, ABORT}  # TOP_UP: 0 + 5 >= 3; no 2nd announcement
    s = act(s, 4)  # SERVE (4 >= 2 + 2)
    assert (s.combo_len[0], s.serves_since[0], s.duty, s.queue) == (1, 1, 1, (0, 2))
    assert (s.phase, s.to_play) == (Phase.WINDOW, 0)
    for f, length in ((5, 2), (5, 3), (6, 4)):
        s = act(s, f)  # THROW: one higher or the same figure
        assert (s.combo_len[0], s.serves_since[0], s.duty, s.queue) == (length, 1, 1, (0, 2))
    s = act(s, 7)  # the hand is empty: L = 5 >= N = 3
    assert s.combo_pts[0] == 4 and s.finish_order == (0,) and s.status[0] == FINISHED
    assert (s.duty, s.queue, s.phase, s.to_play) == (1, (2,), Phase.WINDOW, 2)
    assert s.announced[0] == 0
    done = end_round_now(s)
    assert done.last_score[0] == 3 and done.last_place[0] == 1


def test_ex1_without_announcement_claims_late():
    s = act(ex1(announced=0), 4, 5, 5, 6, 7)
    assert (s.phase, s.to_play) == (Phase.FINISH, 0)
    assert mask(s) == {SECURE, CLAIM_LATE}
    s = act(s, CLAIM_LATE)
    assert s.combo_pts[0] == 2 and s.finish_order == (0,)


def ex2(x: int) -> R.State:
    return build(
        9, 4, phase=Phase.DUTY, to_play=1, duty=1,
        hands={0: (1, 2), 1: (2, 3, 11, 12), 2: (4, 5), 3: (6, 7)},
        top=8, top_owner=0, box=((0, 8, False),),
        announced={1: 5}, serves={1: 1}, combo={1: 3}, laid={1: True},
        draws={1: (5, 5, x)},
    )  # fmt: skip


def test_ex2_second_serve_fails_combo():
    s = ex2(x=4)
    assert mask(s) == {11, 12, FAIL, ABORT}
    s = act(s, 11)  # SERVE: serves_since = 2 -> "Strafe Kombo"
    assert s.hand[1] == counts(2, 3, 4, 12)
    assert (s.combo_len[1], s.announced[1], s.serves_since[1], s.ann_made[1]) == (0, 0, 0, True)
    assert (s.duty, s.queue, s.phase, s.to_play) == (2, (1, 3, 0), Phase.WINDOW, 1)
    assert mask(s) == {PASS}


def test_ex2_penalty_card_fits():
    s = act(ex2(x=11), 11)
    assert mask(s) == {11, PASS}


def test_ex2_variant_fail():
    s = act(ex2(x=4), FAIL)
    assert sum(s.hand[1]) == 5  # exactly one card, no extra for the failed combo
    assert (s.announced[1], s.combo_len[1]) == (0, 0)
    assert s.box == () and s.top == -1 and s.played[0][8] == 1
    assert (s.reopener, s.duty, s.phase, s.to_play) == (2, 2, Phase.OPEN, 2)


def ex3(p1_hand: tuple[int, ...]) -> R.State:
    return build(
        10, 3, phase=Phase.DUTY, to_play=2, duty=2, num_rounds=2,
        hands={1: p1_hand, 2: (3, 5)},
        top=12, top_owner=1, box=((1, 12, False),),
        status={0: FINISHED}, place={0: 1}, finish_order=(0,),
        draws={2: ()}, slots={2: (7, 4, -1)},
    )  # fmt: skip


def test_ex3_sp_elimination_and_solo():
    s = ex3((1, 2))
    assert mask(s) == {FAIL, 30, 31} | ANN
    s = act(s, FAIL)  # draw from an empty pile -> shuffle pressure
    assert s.status[2] == ELIMINATED and s.elim_order == (2,) and s.sp_in_round
    assert s.played[2] == counts(3, 4, 5, 7) and s.slots[2] == (-1, -1, -1)
    assert s.hand[2] == counts() and s.place[2] == 3
    assert s.played[1] == counts(12)  # the box went back to its owner
    assert (s.reopener, s.phase, s.to_play) == (1, Phase.OPEN, 1)
    s = act(s, R.announce_action(3))  # even announced, a solo player may not top up
    assert TOP_UP not in mask(s)
    s = act(s, 1)  # OPEN; solo: the duty comes straight back
    assert (s.duty, s.queue, s.phase, s.to_play) == (1, (), Phase.DUTY, 1)
    assert TOP_UP not in mask(s)
    s = act(s, 2)  # the last card: place 2 ends the round (E1)
    assert s.last_place == (1, 2, 3) and s.last_score == (-1, -2, -3)
    # Next round: T1 distribution without P2 (P0 and P1 hold 10 draw cards each: a tie).
    assert s.phase == Phase.SLOT_PICK and s.picks_left == (2, 2, 0) and s.queue == (0, 1)


def test_ex3_solo_draw_ends_round():
    s = act(ex3((0, 5)), FAIL)
    s = act(s, 0)  # a traitor costs a penalty card: the solo player drew (E3)
    assert s.rounds_done == 1 and s.last_place == (1, 2, 3)
    assert s.last_score == (-1, -2, -3)


def ex4() -> R.State:
    return build(
        10, 4, phase=Phase.WINDOW, to_play=2, duty=0, queue=(2,), num_rounds=2,
        hands={0: (1, 2), 2: (5,)}, top=5, top_owner=0, box=((0, 5, False),),
        status={1: FINISHED, 3: ELIMINATED}, place={1: 1, 3: 4},
        finish_order=(1,), elim_order=(3,), sp_in_round=True, opener=3,
        draws={0: (1, 2, 3, 4, 5, 6), 1: (1, 2, 3, 5, 6, 7, 10, 11), 2: (1, 2, 3, 4)},
        slots={1: (9, 4, -1)},
    )  # fmt: skip


def test_ex4_slot_distribution_with_tie():
    s = act(ex4(), 5)  # P2 finishes 2nd: the round ends; P1 won it
    assert s.last_place == (3, 1, 2, 4) and s.opener == 1
    assert s.picks_left == (2, 2, 1, 0) and s.queue == (1, 0, 2)
    assert (s.phase, s.to_play) == (Phase.SLOT_PICK, 1)
    assert mask(s) == {PASS} | {pick(2, f) for f in (1, 2, 3, 5, 6, 7, 10, 11)}
    s = act(s, 111)  # SLOT_PICK(2, 10), the id the spec gives
    assert pick(2, 10) == 111 and pick(1, 11) == 99
    assert s.slots[1] == (9, 4, 10) and s.to_play == 1
    assert mask(s) == {PASS} | {pick(k, f) for k in (0, 1) for f in (1, 2, 3, 5, 6, 7, 11)}
    s = act(s, 99)  # SLOT_PICK(1, 11): the old 4 goes back to the draw pile
    assert s.slots[1] == (9, 11, 10) and 4 in s.draw[1] and 11 not in s.draw[1]
    assert s.to_play == 0
    assert mask(s) == {PASS} | {pick(0, f) for f in range(1, 7)}  # [75 + f]
    s = act(s, pick(0, 6))
    assert mask(s) == {PASS} | {pick(1, f) for f in range(1, 6)}  # [88 + f]
    s = act(s, pick(1, 1), pick(0, 4))  # P0 picks 1, then P2 picks 4
    assert s.slots[0] == (6, 1, -1) and s.slots[2] == (4, -1, -1)
    # RESET: every card but the slot figures, reshuffled; 8 dealt; no SWAP phase.
    assert [len(s.draw[p]) + sum(s.hand[p]) for p in range(4)] == [25, 24, 26, 27]
    assert all(sum(h) == 8 for h in s.hand) and all(sum(pl) == 0 for pl in s.played)
    assert (s.phase, s.to_play, s.round_idx) == (Phase.OPEN, 1, 2)


def ex5(level: int) -> R.State:
    return build(
        level, 4, phase=Phase.DUTY, to_play=0, duty=0,
        hands={0: (0, 0, 7, 9, 12, 2), 1: (1, 1), 2: (3, 3), 3: (7, 8)},
        top=7, top_owner=2, box=((2, 7, False),),
        announced={3: 4}, serves={3: 1}, combo={3: 2}, laid={3: True},
    )  # fmt: skip


def test_ex5_level9_bans():
    assert mask(ex5(9)) == {7, 9, FAIL} | ANN


def test_ex5_level8_and_weiter():
    s = ex5(8)
    assert mask(s) == {0, 7, 9, 12, FAIL, WEITER} | ANN
    s = act(s, WEITER)
    assert s.box[-2:] == ((0, 0, True), (0, 0, True)) and s.top == 7 and s.top_owner == 2
    assert sum(s.hand[0]) == 6 and s.combo_len[0] == 0
    assert (s.duty, s.queue, s.phase, s.to_play) == (1, (3,), Phase.WINDOW, 3)
    assert mask(s) == {7, 8, PASS}


def test_weiter_only_with_one_colour():
    s = ex5(8)._replace(config=R.make_config(level=8, deck_mode="own_decks"))
    assert WEITER not in mask(s) and 0 in mask(s)


def ex6() -> R.State:
    return build(
        9, 4, phase=Phase.DUTY, to_play=1, duty=1,
        hands={0: (2, 4), 1: (3, 5, 12), 2: (1, 8), 3: (6, 7)},
        top=11, top_owner=0, box=((3, 9, False), (3, 10, False), (0, 11, False)),
        announced={3: 5}, serves={3: 1}, combo={3: 2}, laid={3: True},
        draws={1: (1, 2), 3: (1, 4)},
    )  # fmt: skip


def test_ex6_free_open():
    s = ex6()
    assert mask(s) == {FAIL} | ANN  # 12 would be a serve: ambassador ban
    s = act(s, FAIL)
    assert s.hand[1] == counts(2, 3, 5, 12) and s.combo_len[1] == 0
    assert s.played[3] == counts(9, 10) and s.played[0] == counts(11) and s.top == -1
    assert (s.reopener, s.duty, s.phase, s.to_play) == (2, 2, Phase.FREE_OPEN, 3)
    assert mask(s) == {6, 7, PASS, ABORT, TOP_UP}
    s = act(s, 6)  # FREE_OPEN: not a serve; the duty stays with R
    assert (s.combo_len[3], s.serves_since[3], s.top, s.duty) == (3, 1, 6, 2)
    assert (s.queue, s.phase, s.to_play) == ((3, 0, 1), Phase.WINDOW, 3)
    assert mask(s) == {7, PASS, ABORT, TOP_UP}
    s = act(s, PASS, PASS, PASS)
    assert (s.phase, s.to_play) == (Phase.DUTY, 2)


def test_ex6_variant_abort():
    s = act(ex6(), FAIL, ABORT)
    assert (s.announced[3], s.combo_len[3], s.ann_made[3]) == (0, 0, True)
    assert s.hand[3] == counts(4, 6, 7)
    assert mask(s) == {PASS}
    s = act(s, PASS)
    assert (s.phase, s.to_play) == (Phase.OPEN, 2)
    assert mask(s) == {1, 8, FAIL} | ANN


def ex7() -> R.State:
    return build(
        8, 3, phase=Phase.WINDOW, to_play=1, duty=0, queue=(1,),
        hands={0: (2, 9), 1: (6,), 2: (3, 4)},
        top=5, top_owner=2, box=((2, 5, False),),
        announced={1: 4}, serves={1: 1}, combo={1: 2}, laid={1: True},
        draws={1: (3, 7)},
    )  # fmt: skip


def test_ex7_finish_then_top_up():
    s = ex7()
    assert mask(s) == {6, PASS, TOP_UP}
    s = act(s, 6)
    assert (s.phase, s.to_play, s.combo_len[1]) == (Phase.FINISH, 1, 3)
    assert mask(s) == {TOP_UP, SECURE}
    s = act(s, TOP_UP)
    assert s.hand[1] == counts(7) and s.combo_len[1] == 3 and s.status[1] == ACTIVE
    assert (s.duty, s.queue, s.phase, s.to_play) == (2, (1, 0), Phase.WINDOW, 1)
    assert mask(s) == {7, PASS}
    s = act(s, 7)
    assert (s.combo_pts[1], s.finish_order, s.announced[1]) == (4, (1,), 0)
    assert (s.duty, s.queue, s.phase, s.to_play) == (2, (0,), Phase.WINDOW, 0)
    assert mask(s) == {PASS} | ANN
    assert end_round_now(s).last_score[1] == 3


def test_ex7_pass_instead_pauses_p0():
    s = act(ex7(), 6, TOP_UP, PASS)
    assert (s.phase, s.to_play) == (Phase.DUTY, 2)


def test_ex7_variant_secure():
    s = act(ex7(), 6, SECURE)
    assert (s.combo_pts[1], s.finish_order, s.status[1]) == (0, (1,), FINISHED)
    assert (s.duty, s.queue, s.phase, s.to_play) == (2, (0,), Phase.WINDOW, 0)
    assert end_round_now(s).last_score[1] == -1


# -- level differences (§7) --------------------------------------------------------------------
def window_after_serve(level: int) -> R.State:
    """P0 (announced) just served; the window holds P0, P2, P3 in turn."""
    return build(
        level, 4, phase=Phase.DUTY, to_play=0, duty=0,
        hands={0: (5, 9, 9), 1: (1, 1), 2: (6, 6), 3: (6, 2)},
        top=3, top_owner=3, box=((3, 3, False),),
        announced={0: 3},
    )  # fmt: skip


@pytest.mark.parametrize("level", [8, 9, 10])
def test_pause_only_at_level8(level):
    s = act(window_after_serve(level), 5, PASS)  # P0 serves 5, then passes his window turn
    if level == 8:
        assert (s.phase, s.to_play) == (Phase.DUTY, 1)  # P2, P3 paused
    else:
        assert (s.phase, s.to_play) == (Phase.WINDOW, 2)


def test_announcement_in_window_pauses_later_members_at_level8():
    s = build(
        8, 4, phase=Phase.WINDOW, to_play=2, duty=1, queue=(2, 3, 0),
        hands={0: (6, 7), 1: (1, 1), 2: (6, 9, 9), 3: (6, 2)},
        top=5, top_owner=0, box=((0, 5, False),),
    )  # fmt: skip
    s = act(s, 21, PASS)  # P2 announces 5 then passes: P3 and P0 are skipped at once
    assert (s.phase, s.to_play) == (Phase.DUTY, 1)


@pytest.mark.parametrize("level", [8, 9, 10])
def test_abort_and_free_open_from_level9(level):
    s = build(
        level, 3, phase=Phase.DUTY, to_play=0, duty=0,
        hands={0: (1, 2), 1: (5, 6, 7), 2: (3, 3)},
        top=11, top_owner=2, box=((2, 11, False),), announced={1: 3},
    )  # fmt: skip
    s = act(s, FAIL)
    if level == 8:
        assert (s.phase, s.to_play) == (Phase.OPEN, 1)
        s2 = s._replace(to_play=1)
        assert ABORT not in mask(s2)
    else:  # R = P1 himself: no other announcer -> OPEN; now make P2 the announcer
        assert (s.phase, s.to_play) == (Phase.OPEN, 1)
        assert ABORT in mask(s)
    t = build(
        level, 3, phase=Phase.DUTY, to_play=0, duty=0,
        hands={0: (1, 2), 1: (5, 6, 7), 2: (3, 3)},
        top=11, top_owner=2, box=((2, 11, False),), announced={2: 3},
    )  # fmt: skip
    t = act(t, FAIL)
    expected = (Phase.OPEN, 1) if level == 8 else (Phase.FREE_OPEN, 2)
    assert (t.phase, t.to_play) == expected


@pytest.mark.parametrize("level", [8, 9])
def test_recycling_at_levels_8_9(level):
    s = build(
        level, 3, phase=Phase.DUTY, to_play=0, duty=0,
        hands={0: (1, 2), 1: (5,), 2: (3,)},
        top=11, top_owner=2, box=((2, 11, False),),
        draws={0: ()}, played={0: counts(4, 4, 6)},
    )  # fmt: skip
    s = act(s, FAIL)
    assert sum(s.hand[0]) == 3 and len(s.draw[0]) == 2 and sum(s.played[0]) == 0
    assert s.status[0] == ACTIVE
    # Public from now on: the pile holds only cards of the recycled played pile (§3.4 step 1).
    assert s.recycled[0] == counts(4, 4, 6) and s.recycled[1] == counts()
    assert sorted(s.draw[0] + tuple(R._expand(s.hand[0]))) == [1, 2, 4, 4, 6]


def test_slots_only_at_level10():
    for level in (8, 9, 10):
        s = build(
            level, 3, phase=Phase.WINDOW, to_play=0, duty=1, queue=(0, 2),
            hands={0: (1, 2)}, slots={0: (4, 9, -1)},
            top=4, top_owner=2, box=((2, 4, False),),
        )  # fmt: skip
        expected = {PASS, 13, 30, 31} | ANN if level == 10 else {PASS} | ANN
        assert mask(s) == expected


def test_lay_and_take_slot():
    s = build(
        10, 3, phase=Phase.WINDOW, to_play=0, duty=1, queue=(0, 2),
        hands={0: (1, 2)}, slots={0: (4, 9, -1)},
        top=4, top_owner=2, box=((2, 4, False),),
    )  # fmt: skip
    t = act(s, 13)  # LAY_SLOT(0): a throw from the slot; the slot is gone
    assert t.slots[0] == (-1, 9, -1) and t.top == 4 and t.combo_len[0] == 1
    assert t.hand[0] == counts(1, 2)  # a slot lay never finishes
    t = act(s, 31)  # TAKE_SLOT(1): into the hand, same decision
    assert t.slots[0] == (4, -1, -1) and t.hand[0] == counts(1, 2, 9) and t.to_play == 0
    assert t.taken[0] == counts(9)  # public: the 9 stays in his hand until he lays a 9


def test_a_taken_slot_figure_is_known_until_a_lay_of_that_figure():
    s = build(
        10, 3, phase=Phase.WINDOW, to_play=0, duty=1, queue=(0, 2),
        hands={0: (1, 5, 9)}, slots={0: (5, -1, -1)},
        top=4, top_owner=2, box=((2, 4, False),),
    )  # fmt: skip
    t = act(s, 30)  # TAKE_SLOT(0): now two 5s in hand, one of them known
    assert t.taken[0] == counts(5) and t.hand[0] == counts(1, 5, 5, 9)
    t = act(t, 5)  # throw a 5: nobody can tell which one went
    assert t.taken[0] == counts() and t.hand[0] == counts(1, 5, 9)


def test_an_auto_pass_skip_shows_which_figures_are_missing_until_a_draw():
    kw = dict(
        phase=Phase.DUTY, to_play=0, duty=0, top=2, top_owner=3, box=((3, 2, False),),
        hands={0: (5, 9), 1: (1, 1), 2: (1, 3), 3: (6, 7)}, auto_pass=True,
    )  # fmt: skip
    t = act(build(9, 4, **kw), 5)  # P0 (a 9 left) and P2 hold no 5 or 6: skipped
    assert (t.phase, t.to_play) == (Phase.WINDOW, 3)
    no_5_or_6 = 1 << 5 | 1 << 6
    assert t.lacks == (no_5_or_6, 0, no_5_or_6, 0)
    t = act(t, PASS)  # P3 passes; P1 must serve the 5 and cannot: FAIL, then he draws
    assert (t.phase, t.to_play) == (Phase.DUTY, 1)
    assert act(t, R.announce_action(3), ABORT).lacks[1] == 0  # unchanged: he had none
    t = act(t, FAIL)  # the box is cleared, P2 reopens; P1's penalty card is unseen
    assert t.lacks == (no_5_or_6, 0, no_5_or_6, 0)


def test_a_draw_forgets_what_a_skip_showed():
    s = build(
        9, 3, phase=Phase.DUTY, to_play=2, duty=2, top=4, top_owner=1, box=((1, 4, False),),
        hands={0: (1, 2), 1: (7, 8), 2: (1, 9)}, lacks=(0b110, 0, 0),
    )  # fmt: skip
    t = act(s, FAIL)  # P2 draws a penalty card: his own lack bits would go, P0's stay
    assert t.lacks == (0b110, 0, 0)
    u = act(s._replace(to_play=0, duty=0, hand=(counts(1, 2), counts(7, 8), counts(1, 9))), FAIL)
    assert u.lacks[0] == 0  # P0 drew an unseen card


def test_slot_lay_in_duty_and_no_slot_open():
    s = build(10, 3, phase=Phase.OPEN, to_play=0, duty=0, hands={0: (1, 2)}, slots={0: (4, -1, -1)})
    assert 13 not in mask(s)  # LAY_SLOT cannot open (inv. 38)
    s = build(
        10, 3, phase=Phase.DUTY, to_play=0, duty=0, hands={0: (1, 2)}, slots={0: (7, -1, -1)},
        top=4, top_owner=2, box=((2, 4, False),),
    )  # fmt: skip
    assert 13 in mask(s)
    t = act(s, 13)  # SERVE from a slot
    assert t.combo_len[0] == 1 and t.duty == 1


def test_auto_pass_skips_members_without_a_throw():
    kw = dict(
        phase=Phase.DUTY, to_play=0, duty=0, top=2, top_owner=3, box=((3, 2, False),),
        hands={0: (5, 9), 1: (1, 1), 2: (1, 3), 3: (6, 7)},
    )  # fmt: skip
    s = act(build(9, 4, **kw), 5)  # serve 5: window [P0, P2, P3]; P0 and P3 hold a 6
    assert (s.phase, s.to_play, s.queue) == (Phase.WINDOW, 0, (0, 2, 3))
    t = build(9, 4, **kw)
    t = act(t._replace(config=R.make_config(level=9, auto_pass=True)), 5)
    assert (t.phase, t.to_play) == (Phase.WINDOW, 3)  # P0 (only a 9) and P2 are skipped


def test_abort_elimination_in_window_and_open():
    s = build(
        10, 3, phase=Phase.WINDOW, to_play=0, duty=1, queue=(0, 2),
        hands={0: (1, 2), 1: (4,), 2: (8, 8)}, top=7, top_owner=1, box=((1, 7, False),),
        announced={0: 3}, draws={0: ()},
    )  # fmt: skip
    t = act(s, ABORT)  # counts as PASS; P2 has a throw (8)
    assert t.status[0] == ELIMINATED and (t.phase, t.to_play) == (Phase.WINDOW, 2)
    o = build(10, 3, phase=Phase.OPEN, to_play=0, duty=0, hands={0: (1, 2)},
              announced={0: 3}, draws={0: ()})  # fmt: skip
    o = act(o, ABORT)  # in OPEN: interrupt, P1 reopens
    assert o.status[0] == ELIMINATED and (o.phase, o.to_play, o.reopener) == (Phase.OPEN, 1, 1)


def test_last_active_player_eliminated_ends_round():
    s = build(
        10, 3, phase=Phase.DUTY, to_play=2, duty=2, hands={2: (3, 5)}, num_rounds=1,
        top=12, top_owner=1, box=((1, 12, False),), draws={2: ()},
        status={0: FINISHED, 1: ELIMINATED}, finish_order=(0,), elim_order=(1,),
        place={0: 1, 1: 3},
    )  # fmt: skip
    s = act(s, FAIL)  # E2: nobody is active any more
    assert s.phase == Phase.GAME_OVER and s.last_place == (1, 3, 2) and s.to_play == -1
    assert R.legal_actions(s) == ()


def test_level10_weiter_with_one_draw_card_is_shuffle_pressure():
    s = build(
        10, 3, phase=Phase.DUTY, to_play=0, duty=0, hands={0: (0, 0, 4), 1: (5,), 2: (6,)},
        top=11, top_owner=2, box=((2, 11, False),), draws={0: (3,)},
    )  # fmt: skip
    s = act(s, WEITER)  # fewer than 2 cards: all or nothing (§3.4 draw, level 10)
    assert s.status[0] == ELIMINATED and s.played[0] == counts(4) and s.draw[0] == (3,)
    assert s.box[-2:] == ((0, 0, True), (0, 0, True))
    assert (s.duty, s.phase, s.to_play) == (1, Phase.WINDOW, 2)


def test_step_cap_while_finishing():
    s = act(finisher(combo={0: 4}), 5)
    assert s.phase == Phase.FINISH
    s = end_round_now(s)  # E4: the waiting finisher is active with 0 cards, no combo points
    assert s.last_place[0] == 1 and s.last_score[0] == -1


# -- fit (§3.2) --------------------------------------------------------------------------------
def test_fit_tables():
    assert [f for f in range(13) if R.throw_fit(f, 0)] == [0, 1]
    assert [f for f in range(13) if R.serve_fit(f, 0)] == list(range(2, 13))
    assert [f for f in range(13) if R.throw_fit(f, 11)] == [11]
    assert [f for f in range(13) if R.serve_fit(f, 11)] == [0, 12]
    assert [f for f in range(13) if R.throw_fit(f, 12)] == [12]
    assert [f for f in range(13) if R.serve_fit(f, 12)] == [0]
    assert [f for f in range(13) if R.throw_fit(f, 5)] == [5, 6]
    assert [f for f in range(13) if R.serve_fit(f, 5)] == [0, 7, 8, 9, 10, 11, 12]
    assert not R.throw_fit(5, -1) and not R.serve_fit(5, -1)


def test_ambassador_ban_overlapping_announcements():
    # Two announcers, neither has laid since: the ban does not hold yet (§3.3).
    s = build(
        9, 4, phase=Phase.DUTY, to_play=0, duty=0, hands={0: (12, 1), 1: (5, 6), 2: (5, 6)},
        top=4, top_owner=3, box=((3, 4, False),), announced={1: 3, 2: 3},
    )  # fmt: skip
    assert 12 in mask(s)
    s = s._replace(laid_since=(False, True, False, False))
    assert 12 not in mask(s)
    assert 0 not in mask(s._replace(hand=(counts(0, 1), *s.hand[1:])))  # traitor ban


def test_throw_onto_traitor_allowed_under_bans():
    s = build(
        9, 3, phase=Phase.DUTY, to_play=0, duty=0, hands={0: (0, 1, 12)},
        top=0, top_owner=2, box=((2, 0, False),), announced={1: 3},
    )  # fmt: skip
    assert mask(s) == {0, 1, FAIL} | ANN  # 0 and 1 redirect; 12 is a banned serve


# -- combos (§4) -------------------------------------------------------------------------------
def finisher(level: int = 9, **kw) -> R.State:
    """P0 in a window, about to throw his last card 5 on a 5."""
    return build(
        level, 3, phase=Phase.WINDOW, to_play=0, duty=1, queue=(0, 2),
        hands={0: (5,), 1: (1, 2), 2: (3, 4)}, top=5, top_owner=2, box=((2, 5, False),), **kw
    )  # fmt: skip


@pytest.mark.parametrize(
    "target, length, points",
    [(3, 3, 3), (3, 4, 3), (3, 5, 4), (5, 9, 7), (11, 11, 11), (3, 30, 11), (10, 13, 11)],
)
def test_combo_points_with_overflow(target, length, points):
    s = act(finisher(announced={0: target}, combo={0: length - 1}), 5)
    assert s.combo_pts[0] == points and s.finish_order == (0,)


@pytest.mark.parametrize("length, points", [(3, 1), (7, 3), (22, 11), (40, 11)])
def test_late_claim(length, points):
    s = act(finisher(combo={0: length - 1}), 5)
    assert s.phase == Phase.FINISH and mask(s) == {SECURE, CLAIM_LATE}
    assert act(s, CLAIM_LATE).combo_pts[0] == points
    assert act(s, SECURE).combo_pts[0] == 0


def test_short_finish_without_claim_is_automatic():
    s = act(finisher(combo={0: 1}), 5)
    assert s.finish_order == (0,) and s.combo_pts[0] == 0


def test_short_announced_finish_without_draw_pile_is_automatic_at_level10():
    s = act(finisher(level=10, announced={0: 5}, combo={0: 2}, draws={0: ()}), 5)
    assert s.finish_order == (0,) and s.combo_pts[0] == 0


def test_failure_traitor_lay():
    s = build(
        9, 3, phase=Phase.WINDOW, to_play=0, duty=1, queue=(0, 2),
        hands={0: (0, 4, 5)}, top=0, top_owner=2, box=((2, 0, False),),
        announced={0: 3}, combo={0: 2}, serves={0: 1}, laid={0: True},
    )  # fmt: skip
    s = act(s, 0)  # a thrown traitor still costs a penalty card
    assert (s.announced[0], s.combo_len[0], sum(s.hand[0])) == (0, 0, 3)


def test_failure_weiter_while_announced():
    s = build(
        8, 3, phase=Phase.DUTY, to_play=0, duty=0, hands={0: (0, 0, 4, 5)},
        top=11, top_owner=2, box=((2, 11, False),), announced={0: 3}, combo={0: 2},
    )  # fmt: skip
    s = act(s, WEITER)
    assert (s.announced[0], s.combo_len[0], sum(s.hand[0])) == (0, 0, 4)


def test_second_serve_with_traitor_costs_one_card():
    s = build(
        8, 3, phase=Phase.DUTY, to_play=0, duty=0, hands={0: (0, 4, 5)},
        top=9, top_owner=2, box=((2, 9, False),), announced={0: 3}, serves={0: 1}, combo={0: 2},
    )  # fmt: skip
    s = act(s, 0)
    assert (s.announced[0], s.combo_len[0], sum(s.hand[0])) == (0, 0, 3)


def test_failure_by_elimination_and_round_end():
    s = build(
        10, 3, phase=Phase.DUTY, to_play=0, duty=0, hands={0: (1, 2), 1: (3,), 2: (4,)},
        top=11, top_owner=2, box=((2, 11, False),), announced={0: 3}, combo={0: 2},
        draws={0: ()},
    )  # fmt: skip
    s = act(s, ABORT)  # level 10 with an empty pile: out, acts as a duty move (§3.6)
    assert s.status[0] == ELIMINATED and s.announced[0] == 0
    assert (s.duty, s.phase, s.to_play) == (1, Phase.DUTY, 1)
    t = end_round_now(ex6())  # announcer P3 never finished: no combo points
    assert t.combo_sum[3] == 0


def test_top_up_limits():
    s = build(
        9, 3, phase=Phase.WINDOW, to_play=0, duty=1, queue=(0, 2),
        hands={0: (2, 3)}, top=5, top_owner=2, box=((2, 5, False),),
        announced={0: 11}, combo={0: 1},
    )  # fmt: skip
    for _ in range(3):
        assert TOP_UP in mask(s)
        s = act(s, TOP_UP)
    assert s.topups == 3 and TOP_UP not in mask(s)  # at most 3 per decision
    s = act(s, PASS)
    assert s.topups == 0


def test_announce_needs_two_cards_and_once_per_round():
    s = finisher()
    assert not (ANN & mask(s))  # one hand card
    s = build(9, 3, phase=Phase.OPEN, to_play=0, duty=0, hands={0: (4, 5)})
    s = act(s, 21)
    assert s.announced[0] == 5 and s.ann_made[0] and not (ANN & mask(s))


# -- shuffle pressure and slots between rounds (§6.2–6.5) --------------------------------------
def round_end_l10(draws: dict, slots: dict | None = None, n: int = 3) -> R.State:
    """Level 10: P1 lays his last card as the F-th finisher; nobody was eliminated."""
    fin = {} if n == 2 else {"status": {0: FINISHED}, "place": {0: 1}, "finish_order": (0,)}
    return build(
        10, n, phase=Phase.WINDOW, to_play=1, duty=2 % n, queue=(1,),
        hands={1: (5,), **{p: (1, 2) for p in range(2, n)}},
        top=5, top_owner=0, box=((0, 5, False),), draws=draws, slots=slots or {}, **fin,
    )  # fmt: skip


def pile(k: int) -> tuple[int, ...]:
    return tuple((i % 11) + 1 for i in range(k))


def test_sp_declare_then_swap():
    s = act(round_end_l10({0: pile(20), 1: pile(20), 2: pile(20)}, slots={2: (9, -1, -1)}), 5)
    assert (s.phase, s.to_play, s.queue) == (Phase.SP_DECLARE, 0, (0, 1, 2))
    assert all(sum(h) == 8 for h in s.hand)
    assert mask(s) == {PASS, DECLARE_SP}
    s = act(s, PASS, PASS, PASS)
    assert (s.phase, s.to_play) == (Phase.SWAP, 2)
    hand = s.hand[2]
    assert mask(s) == {PASS} | {
        R.slot_action(R.SLOT_SWAP, 0, f) for f in range(13) if hand[f] and f != 9
    }
    f = next(f for f in range(13) if hand[f] and f != 9)
    s = act(s, R.slot_action(R.SLOT_SWAP, 0, f))
    assert s.slots[2] == (f, -1, -1) and s.hand[2][9] == hand[9] + 1
    assert mask(s) == {PASS}  # each slot once
    s = act(s, PASS)
    assert (s.phase, s.to_play, s.round_idx) == (Phase.OPEN, 0, 2)


def test_sp_declare_excludes_declarer():
    s = act(round_end_l10({0: pile(20), 1: pile(18), 2: pile(16)}), 5, PASS, DECLARE_SP)
    assert all(sum(h) == 0 for h in s.hand)  # hands went back
    # counts: P0 20, P2 16 (P1 declared): 2 picks for P0, 1 for P2
    assert s.picks_left == (2, 0, 1) and s.queue == (0, 2)


def test_t2_short_pile_excludes_short_players():
    s = act(round_end_l10({0: pile(20), 1: pile(7), 2: pile(12)}), 5)
    assert s.phase == Phase.SLOT_PICK and s.picks_left == (2, 0, 1)


def test_t2_everybody_short_excludes_nobody():
    s = act(round_end_l10({0: pile(5), 1: pile(7), 2: pile(7)}), 5)
    assert s.picks_left == (1, 2, 2) and s.queue == (1, 2, 0)


def test_t3a_automatic_sp():
    s = act(round_end_l10({0: pile(13), 1: pile(12), 2: pile(9)}), 5)
    assert s.phase == Phase.SLOT_PICK and s.picks_left == (2, 1, 0)
    assert [len(d) for d in s.draw] == [13, 12, 9]  # hands went back


def test_three_slot_maximum_exchanges_old_figures():
    s = act(round_end_l10({0: pile(20), 1: pile(7), 2: pile(12)}, slots={0: (3, 4, 5)}), 5)
    assert s.picks_left[0] == 2 and s.to_play == 0
    assert mask(s) == {PASS} | {pick(k, f) for k in range(3) for f in range(1, 12)}
    s = act(s, pick(1, 11))  # exchange the old 4 for a king
    assert s.slots[0] == (3, 11, 5)
    assert 11 not in s.draw[0] and 4 in s.draw[0]  # the pile held one king
    assert mask(s) == {PASS} | {pick(k, f) for k in (0, 2) for f in range(1, 11)}


def test_slots_persist_over_rounds_without_distribution():
    s = act(round_end_l10({0: pile(20), 1: pile(20), 2: pile(20)}, slots={1: (9, -1, -1)}), 5)
    s = act(s, PASS, PASS, PASS, PASS)  # no declaration; P1 does not swap
    assert s.slots[1] == (9, -1, -1) and s.phase == Phase.OPEN


# -- places, scores, winners (§5) --------------------------------------------------------------
def test_places_of_non_finishers_and_eliminated():
    s = build(
        10, 5, phase=Phase.DUTY, to_play=2, duty=2, opener=3,
        hands={1: (1, 2, 3), 2: (1, 2), 3: (4, 5), 4: ()},
        status={0: ELIMINATED, 4: ELIMINATED}, elim_order=(4, 0), place={4: 5, 0: 4},
        top=5, top_owner=1, box=((1, 5, False),),
    )  # fmt: skip
    t = end_round_now(s)
    # P3 and P2 hold 2 cards: P3 is nearer the opener (P3 itself); P1 holds 3.
    assert t.last_place == (4, 3, 2, 1, 5) and t.last_winner == 3


def test_winner_tie_breaks():
    s = ex1()._replace(score=(5, 5, 5), firsts=(1, 2, 2), combo_sum=(9, 3, 3), last_place=(1, 3, 2))
    assert R.winners(s) == (2,)
    assert R.winners(s._replace(last_place=(1, 2, 2))) == (1, 2)


def test_rewards_modes():
    s = act(ex4(), 5)
    before = ex4()
    cfg = before.config
    assert R.rewards(before, s, cfg) == tuple(float(x) for x in s.last_score)
    win_cfg = R.make_config(num_players=4, reward="win")
    assert R.rewards(before, s, win_cfg) == (0.0,) * 4  # a round end, not the game's end


def test_win_reward_is_plus_one_for_each_winner_and_minus_one_for_the_others():
    before = ex1()._replace(phase=Phase.DUTY, score=(3, 3, 1), firsts=(1, 1, 0))
    after = before._replace(phase=Phase.GAME_OVER, to_play=-1)
    cfg = R.make_config(num_players=3, reward="win")
    assert R.winners(after) == (0, 1)  # co-winners: same score, firsts, combo_sum, last place
    assert R.rewards(before, after, cfg) == (1.0, 1.0, -1.0)
    assert R.rewards(after, after, cfg) == (0.0, 0.0, 0.0)  # only the step that ends the game


# -- termination and errors (§3.7, §3.8) -------------------------------------------------------
def test_round_step_cap():
    s = ex6()._replace(steps=1999)
    t = act(s, FAIL)
    assert t.rounds_done == 1 and t.round_idx == 2


def test_illegal_action_names_action_and_legal_set():
    with pytest.raises(ValueError, match=r"illegal action 3 .*legal actions: \[11, 12, 17, 28\]"):
        act(ex2(4), 3)


@pytest.mark.parametrize(
    "options, word",
    [
        ({"num_players": 6}, "num_players"),
        ({"level": 7}, "level"),
        ({"deck_mode": "x"}, "deck_mode"),
        ({"num_rounds": 0}, "num_rounds"),
        ({"max_round_steps": 100}, "max_round_steps"),
        ({"first_opener": 4}, "first_opener"),
        ({"auto_pass": 1}, "auto_pass"),
        ({"reward": "x"}, "reward"),
        ({"reward_mode": "win"}, "now called 'reward'"),
        ({"rounds": 3}, "now called 'num_rounds'"),
        ({"colour": 1}, "unknown option"),
    ],
)
def test_bad_options(options, word):
    with pytest.raises(ValueError, match=word):
        R.make_config(**options)


def test_numpy_integer_options_are_stored_as_ints():
    cfg = R.make_config(num_players=np.int64(3), level=np.int32(9), num_rounds=np.int64(2))
    assert (cfg.num_players, cfg.level, cfg.num_rounds) == (3, 9, 2)
    assert all(type(x) is int for x in (cfg.num_players, cfg.level, cfg.num_rounds))


def test_describe_action():
    names = [R.describe_action(a) for a in range(R.NUM_ACTIONS)]
    assert len(set(names)) == R.NUM_ACTIONS
    assert (
        names[11] == "LAY_HAND(K)"
        and names[22] == "ANNOUNCE_6"
        and names[111] == ("SLOT_PICK(2, 10)")
    )


def test_initial_state():
    cfg = R.make_config(num_players=5, level=10)
    s = R.initial_state(cfg, np.random.default_rng(3))
    assert all(sum(h) == 6 and len(d) == 21 for h, d in zip(s.hand, s.draw))
    assert (s.phase, s.to_play, s.duty, s.round_idx) == (Phase.OPEN, s.opener, s.opener, 1)
    cfg = R.make_config(num_players=2, first_opener=1, deck_mode="own_decks")
    s = R.initial_state(cfg, np.random.default_rng(3))
    assert s.to_play == 1 and len(s.draw[0]) == 125


# -- play-outs: greedy/random policy and invariants --------------------------------------------
def check_invariants(s: R.State, deck: tuple[int, ...]) -> None:
    """Card conservation per owner and figure, at most 3 slots, a sane actor."""
    n = s.config.num_players
    box = [[0] * R.NUM_FIGURES for _ in range(n)]
    for owner, f, _ in s.box:
        box[owner][f] += 1
    for p in range(n):
        slots = s.slots[p]
        pile = s.draw[p]
        held = tuple(
            s.hand[p][f] + s.played[p][f] + pile.count(f) + box[p][f] + slots.count(f)
            for f in range(R.NUM_FIGURES)
        )
        assert held == deck, f"card conservation for seat {p}"
        assert len(slots) == 3
    if s.phase <= Phase.FINISH:
        assert s.status[s.to_play] == ACTIVE
        if s.phase != Phase.FINISH:
            assert sum(s.hand[s.to_play]) > 0


def play_game(cfg: R.Config, seed: int, eps: float = 0.15) -> None:
    """One game under the greedy policy, checking the invariants at every step."""
    rng = np.random.default_rng(seed)
    s = R.initial_state(cfg, rng)
    steps = 0
    bound = cfg.num_rounds * (cfg.max_round_steps + 8 * cfg.num_players)
    while not R.is_terminal(s):
        legal = R.legal_actions(s)
        assert legal and list(legal) == sorted(set(legal))
        before = s
        s = R.apply_action(s, greedy(s, rng, eps), rng)
        steps += 1
        if s.rounds_done > before.rounds_done:
            check_round_end(s, cfg)
        check_invariants(s, cfg.deck)
        assert steps <= bound
    assert s.to_play == -1 and R.legal_actions(s) == ()
    r = cfg.num_rounds
    assert all(-cfg.num_players * r <= x <= 10 * r for x in s.score)
    assert R.winners(s)


def check_round_end(s: R.State, cfg: R.Config) -> None:
    """§5: every round score is in its range and the places are 1..n."""
    assert all(-cfg.num_players <= x <= 10 for x in s.last_score)
    assert sorted(s.last_place) == list(range(1, cfg.num_players + 1))


@pytest.mark.parametrize("n", [2, 3, 4, 5])
@pytest.mark.parametrize("level", [8, 9, 10])
def test_playouts_quick(n, level):
    for seed in range(8):
        cfg = R.make_config(num_players=n, level=level, num_rounds=3, auto_pass=seed % 2 == 1)
        play_game(cfg, seed)
    cfg = R.make_config(num_players=n, level=level, num_rounds=2, deck_mode="own_decks")
    play_game(cfg, 99)


def test_uniform_random_playouts_terminate():
    for seed in range(6):
        cfg = R.make_config(num_players=2 + seed % 4, level=8 + seed % 3, num_rounds=2)
        play_game(cfg, seed, eps=1.0)


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 3, 4, 5])
@pytest.mark.parametrize("level", [8, 9, 10])
def test_playouts_500(n, level):
    for seed in range(500):
        cfg = R.make_config(num_players=n, level=level, num_rounds=2, auto_pass=seed % 4 == 3)
        play_game(cfg, 1000 + seed)


# -- legality: one truth ---------------------------------------------------------------------
@pytest.mark.parametrize("level", [8, 9, 10])
def test_is_legal_agrees_with_legal_actions(level):
    checked = 0
    for n, mode in ((2, "one_colour"), (3, "own_decks"), (4, "one_colour"), (5, "one_colour")):
        for s in positions(n, level, mode, seed=n + level, every=1):
            legal = set(R.legal_actions(s))
            for a in range(-1, R.NUM_ACTIONS + 1):
                assert R.is_legal(s, a) == (a in legal), (a, s.phase)
            checked += 1
    assert checked > 800


def test_apply_action_leaves_its_state_unchanged_and_builds_an_immutable_one():
    for s in positions(3, 10, "one_colour", seed=6, every=1)[:-1]:
        copy = tuple(s)
        t = R.apply_action(s, R.legal_actions(s)[-1], np.random.default_rng(0))
        assert tuple(s) == copy
        for value in t:  # only tuples all the way down: the working copy's lists never leak
            rows = value if isinstance(value, tuple) else ()
            assert not isinstance(value, list) and not any(isinstance(x, list) for x in rows)


def test_action_ids_encode_and_decode():
    for base in (R.SLOT_SWAP, R.SLOT_PICK):
        for k in range(R.NUM_SLOTS):
            for f in range(R.NUM_FIGURES):
                assert R.slot_of(R.slot_action(base, k, f)) == (k, f)
    assert R.slot_action(R.SLOT_PICK, 2, 10) == 111 and R.slot_action(R.SLOT_SWAP, 0, 0) == 36
    assert [R.announce_size(R.announce_action(n)) for n in range(3, 12)] == list(range(3, 12))
    assert R.announce_action(3) == R.ANNOUNCE and R.announce_action(11) == R.ABORT - 1


# -- the four recall readings of docs/kdk_rules.md ("What a player who remembers ...") ------------
@pytest.mark.parametrize("level", [8, 9])
def test_recycling_an_empty_played_pile_keeps_recycled(level):
    kw = dict(
        phase=Phase.DUTY, to_play=0, duty=0, hands={0: (1, 2), 1: (5,), 2: (3,)},
        top=11, top_owner=2, box=((2, 11, False),), draws={0: ()},
        recycled=(counts(4, 6), counts(), counts()),
    )  # fmt: skip
    s = act(build(level, 3, **kw), FAIL)  # nothing to recycle: the bottom is still the 4 and 6
    assert s.recycled[0] == counts(4, 6) and sum(s.played[0]) == 0
    s = act(build(level, 3, **kw, played={0: counts(7, 8)}), FAIL)  # a pile replaces it
    assert s.recycled[0] == counts(7, 8)


def test_a_lay_from_a_slot_keeps_taken():
    s = build(
        10, 3, phase=Phase.WINDOW, to_play=0, duty=1, queue=(0, 2),
        hands={0: (1, 4)}, slots={0: (4, -1, -1)}, taken=(counts(4), counts(), counts()),
        top=4, top_owner=2, box=((2, 4, False),),
    )  # fmt: skip
    t = act(s, R.LAY_SLOT)  # the slot's 4 is thrown; the taken 4 is still in the hand
    assert t.slots[0] == (-1, -1, -1) and t.hand[0] == counts(1, 4)
    assert t.taken[0] == counts(4)


def test_a_taken_figure_swapped_into_a_slot_lowers_taken():
    s = build(
        10, 3, phase=Phase.SWAP, to_play=2, queue=(2,), hands={2: (5, 5, 7)},
        slots={2: (9, -1, -1)}, taken=(counts(), counts(), counts(5)),
    )  # fmt: skip
    t = act(s, R.slot_action(R.SLOT_SWAP, 0, 5))  # a 5 goes to the slot, the 9 to the hand
    assert t.slots[2] == (5, -1, -1) and t.hand[2] == counts(5, 7, 9)
    assert t.taken[2] == counts(9)  # nobody can tell which 5 went; the 9 is known


def test_lacks_clear_at_round_end_and_on_elimination():
    no_5 = 1 << 5
    s = build(
        10, 3, phase=Phase.DUTY, to_play=0, duty=0, hands={0: (1, 2), 1: (7,), 2: (3, 3)},
        top=4, top_owner=1, box=((1, 4, False),), draws={0: ()}, lacks=(no_5, no_5, 0),
    )  # fmt: skip
    t = act(s, FAIL)  # level 10: P0 cannot draw his penalty card, shuffle pressure
    assert t.status[0] == ELIMINATED and t.lacks == (0, no_5, 0)
    assert end_round_now(s).lacks == (0, 0, 0)
