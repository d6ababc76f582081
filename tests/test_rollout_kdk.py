"""KdK's rollout module (``kdk_env/rollout.py``) against the Python rollout policy and the rules.

``kdk_env.heuristic.rollout_policy`` is the reference: given the same uniform numbers, the
compiled ``policy`` must take its decision and draw as many numbers, and ``decide`` must value
the same candidates to the last bit. Positions come from games of every table size, level and
deck mode, played by the Python rollout policy and at random (``kdk_positions.positions``),
and hand-built ones for rare decisions (top-ups, declarations, ties that the legal set's order
breaks, the ambassador ban, WEITER).
The row functions and the search's kernels are checked, for every game's twin, in
``tests/test_engine_rollout.py``.

The module's kernels compile once per machine (about 30 s cold, numba caches them beside the
module; 1 s to load) and the fixtures are module-scoped: the file runs in about 10 s after that.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter

import numpy as np
import pytest
from helpers import Fed
from kdk_positions import build, positions

from kdk_env import engine as E
from kdk_env import heuristic as H
from kdk_env import rollout as K
from kdk_env import rules as R
from kdk_env.rules import Phase
from tablegym import kernels as G

CONFIGS = list(itertools.product((2, 3, 4, 5), (8, 9, 10), ("one_colour", "own_decks")))
DRAWS = 128  # numbers fed to the Python policy; no decision draws this many
T, KING, A = R.TRAITOR, R.KING, R.AMBASSADOR


def seed_of(rng: np.random.Generator) -> int:
    return int(rng.integers(1, 2**63))  # xorshift64* stays at 0 from a seed of 0


def python_policy(state: R.State, rand: random.Random) -> int:
    """``rollout_policy`` deciding afresh (its memo keeps decisions but draws their
    tie-breaks anew, so a warm memo must decide the same; a test below checks it)."""
    H._DECISIONS.clear()
    return H.rollout_policy(state, rand)


def policy_games(n: int, level: int, deck_mode: str, seed: int, rounds: int):
    """Every state of a game played by the Python rollout policy."""
    rng, rand = np.random.default_rng(seed), random.Random(seed)
    config = R.make_config(
        num_players=n, level=level, deck_mode=deck_mode, num_rounds=rounds, auto_pass=seed % 2 == 1
    )
    state = R.initial_state(config, rng)
    while not R.is_terminal(state):
        yield state
        state = R.apply_action(state, python_policy(state, rand), rng)


def built() -> list[R.State]:
    """Hand-built positions of decisions that games rarely meet."""
    old = ((True,) * 3,) * 3
    pick = dict(phase=Phase.SLOT_PICK, hands={}, queue=(0,), picks_left=(1, 0, 0), slot_old=old)
    swap = dict(phase=Phase.SWAP, queue=(0, 1), swapped=((False,) * 3,) * 3)
    finish = dict(phase=Phase.FINISH, hands={}, announced={0: 5}, combo={0: 4}, top=6)
    on_duty = dict(phase=Phase.DUTY, duty=0, top=5, box=((1, 5, False),), top_owner=1)
    bans = (({1: 4, 2: 5}, {}), ({1: 4, 2: 5}, {2: True}), ({2: 4}, {}))
    empty = dict(draws={0: ()}, played={0: R.DECKS["one_colour"]})
    return [
        # SLOT_PICK, no empty slot: equal gains in two slots, the set's order decides (§6.3(4))
        build(10, 3, **pick, slots={0: (5, 5, 9)}, draws={0: (3, 12, 11, 2)}),
        build(10, 3, **pick, slots={0: (9, 5, 5)}, draws={0: (12, 11, 1)}),
        build(10, 3, **pick, slots={0: (4, 9, 4)}, draws={0: (12, 3, 6, 7)}),
        build(10, 3, **pick, slots={0: (2, 2, 2)}, draws={0: (12,)}),
        # SWAP: a traitor parked in either of two equal slots (§6.5)
        build(10, 3, **swap, hands={0: (T, 3, 5, 9)}, slots={0: (7, 7, -1)}),
        build(10, 3, **swap, hands={0: (T, 2, 2, 6, KING)}, slots={0: (-1, 8, 8)}),
        build(10, 3, **swap, hands={0: (T, T, 4, 10)}, slots={0: (A, 3, A)}),
        # FINISH: a top-up with good odds, one with poor odds, one from the played pile at
        # level 8 (§3.4 step 1), a late claim (§3.5)
        build(9, 3, **finish, draws={0: (7, 7, 6, 6, 7)}),
        build(9, 3, **{**finish, "announced": {0: 8}}, draws={0: (1, 2, 7, 3, 10)}),
        build(8, 2, **{**finish, "top": 2}, **empty),
        build(10, 4, phase=Phase.FINISH, hands={}, combo={0: 5}, top=4),
        # SP_DECLARE: a nearly empty draw pile declares, a full one passes (§6.2)
        build(10, 3, phase=Phase.SP_DECLARE, hands={0: (1, 2)}, draws={0: (3, 4)}, queue=(0, 1)),
        build(10, 3, phase=Phase.SP_DECLARE, hands={0: (1, 2)}, queue=(0, 1, 2)),
        # §3.3 ambassador ban (level 9): two announcers who have not laid since do not ban
        # my ambassadors, one announcer or a lay since does; so A, A can finish or not
        *(
            build(9, 4, **on_duty, hands={0: (A, A), 3: (1, 2)}, announced=a, laid=laid)
            for a, laid in bans
        ),
        *(
            build(9, 3, phase=Phase.OPEN, hands={0: (A, A)}, duty=0, announced=a, laid=laid)
            for a, laid in bans
        ),
        # WEITER against FAIL under duty, one-colour deck (§3.5)
        build(8, 3, **on_duty, hands={0: (T, T, 4, 9)}),
    ]


def finishes(count: int) -> list[R.State]:
    """FINISH decisions after an announced lay-out fell short: top up or secure, by the odds
    of the draw pile (§3.5, §4.6)."""
    rng = np.random.default_rng(7)
    out = []
    for i in range(count):
        announced = int(rng.integers(3, 12))
        top = int(rng.integers(1, 11))
        fitting = rng.random()  # the share of cards that would fit the top
        pile = [top + int(rng.integers(2)) if rng.random() < fitting else int(rng.integers(13))
                for _ in range(rng.integers(1, 12))]  # fmt: skip
        combo = int(rng.integers(1, announced))
        level = (8, 9, 10)[i % 3]
        state = build(level, 3, phase=Phase.FINISH, hands={}, top=top, draws={0: tuple(pile)},
                      announced={0: announced}, combo={0: combo})  # fmt: skip
        out.append(state)
    return out


def all_positions() -> list[R.State]:
    """Positions of every table: random play, games of the Python policy, hand-built ones."""
    found = []
    for i, (n, level, mode) in enumerate(CONFIGS):
        found += positions(n, level, mode, seed=i, every=3)
        for g in range(2):
            found += policy_games(n, level, mode, seed=100 + 2 * i + g, rounds=level - 5)
    return [s for s in found + built() + finishes(200) if not R.is_terminal(s)]


def consts_of(config: R.Config, cache: dict = {}) -> tuple:  # noqa: B006  (a cache on purpose)
    if config not in cache:
        cache[config] = E.setup(config)
    return cache[config]


def twin_decide(row: np.ndarray, consts: tuple) -> int | list[tuple[int, float]]:
    """``K.decide`` in the form of ``Decision.decide``: an action, or the candidates."""
    actions = np.full(R.NUM_ACTIONS, -9, dtype=np.int64)
    values = np.full(R.NUM_ACTIONS, np.nan)
    m = K.decide(row, consts, actions, values)
    if m == 0:
        return int(actions[0])
    return list(zip(actions[:m].tolist(), values[:m].tolist()))


@pytest.fixture(scope="module")
def decisions() -> list[dict]:
    """Both policies on every position with more than one legal action, a seed each."""
    rng = np.random.default_rng(0)
    out = []
    for state in all_positions():
        legal = R.legal_actions(state)
        if len(legal) < 2:
            continue
        seed = seed_of(rng)
        fed = Fed(G.uniforms(seed, DRAWS))
        expected = python_policy(state, fed)
        python_values = H.Decision(H.seen_of_state(state), set(legal), fed).decide()
        consts = consts_of(state.config)
        row = E.from_state(state, state.config)
        rngs = np.array([seed], dtype=np.uint64)
        action = K.policy(row, consts, rngs)
        after = G.uniform(rngs)  # the twin's next number tells how many it drew
        used = fed.numbers.index(after) if after in fed.numbers else -1
        values = twin_decide(row, consts)
        out.append(dict(state=state, legal=legal, expected=expected, python_used=fed.used,
                        action=action, used=used, python_values=python_values,
                        values=values))  # fmt: skip
    return out


def test_the_twin_decides_as_the_python_policy_and_draws_as_many_numbers(decisions):
    assert len(decisions) > 4000
    wrong = [d for d in decisions if d["action"] != d["expected"]]
    assert not wrong, f"{len(wrong)} decisions differ, the first: {wrong[0]}"
    wrong = [d for d in decisions if d["used"] != d["python_used"]]
    assert not wrong, f"{len(wrong)} draw counts differ, the first: {wrong[0]}"
    configs = {(s.config.num_players, s.config.level, s.config.deck_mode)
               for s in (d["state"] for d in decisions)}  # fmt: skip
    assert configs == set(CONFIGS)
    phases = Counter(d["state"].phase for d in decisions)
    assert all(phases[ph] >= 5 for ph in Phase if ph != Phase.GAME_OVER), phases


def test_the_twin_values_every_candidate_as_python_does(decisions):
    # The candidates of Decision.decide, in its order, each valued to the last bit: so every
    # exact tie is a tie for both, and is broken by the same numbers.
    wrong = [d for d in decisions if d["values"] != d["python_values"]]
    assert not wrong, f"{len(wrong)} decisions differ, the first: {wrong[0]}"
    lists = [d["values"] for d in decisions if isinstance(d["values"], list)]
    assert len(lists) > 3000
    ties = [c for c in lists if len({v for _, v in c}) < len(c)]
    assert len(ties) > 50  # the numbers decide these


def test_every_kind_of_move_is_chosen(decisions):
    names = (R.describe_action(d["action"]).split("(")[0] for d in decisions)
    kinds = Counter("ANNOUNCE" if name.startswith("ANNOUNCE") else name for name in names)
    expected = {"LAY_HAND", "LAY_SLOT", "PASS", "FAIL", "WEITER", "ANNOUNCE", "TAKE_SLOT"}
    expected |= {"TOP_UP", "SECURE", "CLAIM_LATE", "DECLARE_SP", "SLOT_SWAP", "SLOT_PICK"}
    assert expected <= set(kinds), kinds


def test_other_numbers_change_some_decisions(decisions):
    # The comparison above would pass if the twin ignored its numbers wherever the Python
    # policy does: other numbers must change some decisions.
    changed = 0
    for d in decisions:
        state = d["state"]
        row = E.from_state(state, state.config)
        rngs = np.array([12345], dtype=np.uint64)
        changed += K.policy(row, consts_of(state.config), rngs) != d["action"]
    assert changed >= 10


def test_set_order_is_cpythons():
    rng = random.Random(5)
    out = np.empty(R.NUM_ACTIONS, dtype=np.int64)
    for _ in range(3000):
        items = sorted(rng.sample(range(R.NUM_ACTIONS), rng.randint(1, R.NUM_ACTIONS)))
        K.set_order(np.array(items, dtype=np.int64), len(items), out)
        assert out[: len(items)].tolist() == list(set(items))


def test_the_set_order_breaks_the_ties_of_slot_picks_and_swaps(decisions):
    # Decision.slot_pick and .swap keep the first of equal gains as they iterate the legal
    # set: in the sorted order (a dict) they would pick otherwise in some of these positions,
    # where the twin picks as the set does.
    differ = 0
    for d in decisions:
        state = d["state"]
        if state.phase not in (Phase.SLOT_PICK, Phase.SWAP):
            continue
        seen = H.seen_of_state(state)
        in_order = H.Decision(seen, dict.fromkeys(d["legal"]), random.Random(0)).choose()
        differ += in_order != d["expected"]
        assert d["action"] == d["expected"]
    assert differ >= 3


def test_a_remembered_decision_draws_its_tie_breaks_afresh(decisions):
    # rollout_policy's memo keeps a decision's candidates, not the tie-break of its first
    # call: a hit draws the same numbers and decides by them, so ties do not stick.
    rng = np.random.default_rng(3)
    flipped = 0
    for d in decisions[:3000]:
        numbers = G.uniforms(seed_of(rng), DRAWS)
        first, again, other = Fed(numbers), Fed(numbers), Fed(numbers[::-1])
        action = python_policy(d["state"], first)  # decided afresh, remembered
        assert H.rollout_policy(d["state"], again) == action and again.used == first.used
        flipped += H.rollout_policy(d["state"], other) != action
    assert flipped >= 3
