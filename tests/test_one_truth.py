"""Strategy copies of a rule checked against the rules module that states it.

A player that decides a trick, a legal move or a score by its own code holds a copy of a rule;
comparing the copy with its sibling copy would leave both stale after a rule change. Each copy
here is compared with ``rules.py`` itself, over every case it covers. (The engines and the
rollout twins decide legal moves, tricks and scores through the engine's per-row functions,
which ``tests/test_*_engine.py`` replay against the rules step by step.)
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kingup_env import engine as KE
from kingup_env import rules as KR
from updown_env import heuristic as UH
from updown_env import heuristic_batch as UB
from updown_env import rules as UR

VALUES = range(UR.MIN_VALUE, UR.MIN_VALUE + UR.NUM_VALUES)


def updown_second_card_wins(mine: int, theirs: int, side: int, trump: int) -> bool:
    """Whether ``rules.trick_winner`` gives a two-player trick to the card of value ``theirs``
    over mine, both played in their player's own suit."""
    own = [d % UR.NUM_SUITS for d in UR.DIRECTIONS[2]]  # orientation 0
    cards = (UR.card_id(own[0], mine), UR.card_id(own[1], theirs))
    return UR.trick_winner(cards, side, 0, trump, 2) == 1


@pytest.mark.parametrize("side", [UR.UP, UR.DOWN])
def test_updown_heuristics_beats_is_the_rules_trick_winner(side):
    # heuristic.beats and its compiled copy in heuristic_batch, every trump and value pair.
    for trump, mine, theirs in itertools.product(VALUES, VALUES, VALUES):
        if mine == theirs:
            continue  # equal values neutralise: beats() is only asked about different ones
        expected = updown_second_card_wins(mine, theirs, side, trump)
        assert UH.beats(theirs, mine, side, trump) == expected, (trump, mine, theirs)
        assert UB.beats(float(theirs), mine, side, trump) == expected, (trump, mine, theirs)


@pytest.mark.parametrize("side", [UR.UP, UR.DOWN])
def test_updown_better_values_are_the_rules_trick_winner(side):
    # heuristic.BETTER (bitmasks the rollout policy and its compiled twin count with): bit j of
    # BETTER[side][i] is set when value index j beats i, neither being the trump.
    for i, j in itertools.permutations(range(UR.NUM_VALUES), 2):
        mine, theirs = UR.MIN_VALUE + i, UR.MIN_VALUE + j
        trump = next(v for v in VALUES if v not in (mine, theirs))
        expected = updown_second_card_wins(mine, theirs, side, trump)
        assert bool(UH.BETTER[side][i] >> j & 1) == expected, (i, j)


def test_kingup_engine_places_by_the_rules_encode_decode_pair():
    # The engine's kernels compile rules.place_action / place_of themselves: every id agrees.
    for c, floor in itertools.product(range(KR.NUM_CANDIDATES), range(1, 5)):
        action = KR.place_action(c, floor)
        assert KE.place_action(c, floor) == action
        assert KE.place_of(action) == KR.place_of(action) == (c, floor)
    ids = np.array([KR.place_action(c, f) for c in range(KR.NUM_CANDIDATES) for f in range(1, 5)])
    assert sorted(ids) == list(range(KR.NUM_CANDIDATES * 4))  # one id per placement


def test_kdk_combo_points_of_every_copy_are_the_rules():
    from kdk_env import heuristic as KH
    from kdk_env import rollout as KT
    from kdk_env import rules as KDR

    assert KH.combo_points is KDR.combo_points  # the heuristic plans with the rules' own
    for announced in (0, *range(3, KDR.MAX_COMBO_PTS + 1)):
        for length in range(40):
            assert KT.combo_points(announced, length) == KDR.combo_points(announced, length)
