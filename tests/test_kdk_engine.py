"""KdK batched engine (kdk_env/engine.py) against the readable rules core, step by step.

Every kernel is compiled once per process (numba's cache keeps them across processes); the
``engine`` fixture triggers that compilation for the serial and the parallel kernels.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import pick
from kdk_positions import positions
from test_kdk_rules import ex1, ex2, ex3, ex4, ex5, ex6, ex7

from kdk_env import engine as E
from kdk_env import observation as O
from kdk_env import rules as R
from kdk_env.rules import Phase
from tablegym.vector import VectorGame

SERIAL, PARALLEL = E.PARALLEL_FROM - 1, E.PARALLEL_FROM


@pytest.fixture(scope="session")
def engine():
    """Compile every kernel once for the whole test session (serial and parallel twins)."""
    for size in (1, E.PARALLEL_FROM):
        vg = VectorGame("kdk", size, seed=0, backend="numba")
        vg.reset()
        vg.step(pick(np.random.default_rng(0), vg.mask))
        vg.observe(np.zeros(size, dtype=np.int64))
        vg._impl.random_play(1)
    return E


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-identical float32 arrays (so -0.0 differs from 0.0)."""
    return a.dtype == b.dtype == np.float32 and np.array_equal(a.view(np.uint32), b.view(np.uint32))


MASK64 = (1 << 64) - 1


class XorShift:
    """The engine's per-game generator in Python, as a stand-in for numpy's in the rules core.

    xorshift64* and a Fisher-Yates shuffle of the cards in the order given, exactly as the
    engine draws them: the rules core fed with it shuffles every pile as the engine did, so
    whole states can be compared after chance actions (recycling, new piles, deals) too.
    """

    def __init__(self, state: int) -> None:
        self.x = int(state)
        self.calls = 0

    def _below(self, bound: int) -> int:
        x = self.x
        x ^= x >> 12
        x ^= (x << 25) & MASK64
        x ^= x >> 27
        self.x = x
        return (((x * 0x2545F4914F6CDD1D) & MASK64) >> 32) * bound >> 32

    def permutation(self, cards) -> np.ndarray:
        self.calls += 1
        a = list(cards)
        for k in range(len(a) - 1, 0, -1):
            j = self._below(k + 1)
            a[k], a[j] = a[j], a[k]
        return np.array(a, dtype=np.int64)

    def integers(self, n: int) -> int:
        self.calls += 1
        return self._below(n)


def check_outputs(vg, states, obs, mask, seat, rng) -> None:
    """Seat, mask and observation (of the seat to act and a random seat) of every slot."""
    n = vg.num_players
    seats = rng.integers(n, size=vg.num_games)
    seen = vg.observe(seats)
    for i, s in enumerate(states):
        assert seat[i] == s.to_play
        assert np.flatnonzero(mask[i]).tolist() == sorted(R.legal_actions(s)), i
        assert same_bits(obs[i], O.encode(s, s.to_play))
        assert same_bits(seen[i], O.encode(s, int(seats[i])))


def differential(size: int, steps: int, seed: int, **options) -> dict[str, int]:
    """Random games on the engine and the rules core side by side.

    At every step: the whole state, the seat to act, the mask, the observations, the rewards
    and ``done``. The rules core draws its chance from :class:`XorShift` replicas of the
    engine's generators, so every state must match exactly, after shuffles and new deals too.
    Returns counts of what was checked.
    """
    config = R.make_config(**options)
    vg = VectorGame("kdk", size, seed=seed, backend="numba", **options)
    rng = np.random.default_rng(seed)
    gens = [XorShift(x) for x in vg._impl.rngs]
    obs, mask, seat = vg.reset()
    states = [R.initial_state(config, g) for g in gens]
    seen = {"steps": 0, "games": 0, "chance": 0, "phases": set()}
    for _ in range(steps):
        seen["phases"].update(int(s.phase) for s in states)
        assert [g.x for g in gens] == vg._impl.rngs.tolist()
        for i, s in enumerate(states):
            assert vg.get_state(i) == s, i
        check_outputs(vg, states, obs, mask, seat, rng)
        actions = pick(rng, mask)
        obs, mask, seat, rewards, done = vg.step(actions)
        seen["steps"] += size
        for i, (before, a) in enumerate(zip(states, actions.tolist())):
            calls = gens[i].calls
            after = R.apply_action(before, a, gens[i])
            seen["chance"] += gens[i].calls > calls
            expected = np.array(R.rewards(before, after, config), dtype=np.float32)
            assert same_bits(rewards[i], expected), (before, a)
            assert done[i] == R.is_terminal(after), (before, a)
            if done[i]:
                seen["games"] += 1
                after = R.initial_state(config, gens[i])
            states[i] = after
    return seen


CASES = [  # (level, deck_mode, num_players, auto_pass, size)
    (8, "one_colour", 3, False, SERIAL),
    (8, "own_decks", 2, True, 7),
    (9, "one_colour", 4, False, PARALLEL),
    (9, "own_decks", 5, False, 5),
    (10, "one_colour", 2, False, 9),
    (10, "one_colour", 5, True, 6),
    (10, "own_decks", 3, False, 8),
]


@pytest.mark.parametrize(("level", "deck_mode", "n", "auto_pass", "size"), CASES)
def test_engine_matches_the_rules_core_step_by_step(engine, level, deck_mode, n, auto_pass, size):
    seen = differential(
        size, 300, seed=level * 10 + n, level=level, deck_mode=deck_mode, num_players=n,
        auto_pass=auto_pass, num_rounds=2, max_round_steps=200,
    )  # fmt: skip
    assert seen["games"] > 0
    assert {Phase.OPEN, Phase.WINDOW, Phase.DUTY} <= seen["phases"]
    if level == 10:
        assert Phase.SLOT_PICK in seen["phases"]
    if deck_mode == "one_colour":  # 135-card piles rarely run short (spec §7)
        assert seen["chance"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("level", [8, 9, 10])
@pytest.mark.parametrize("deck_mode", ["one_colour", "own_decks"])
@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_engine_matches_the_rules_core_at_scale(engine, level, deck_mode, n):
    """Many games: every level, deck mode and table size, with the round transitions
    (recycled draws at levels 8–9, shuffle pressure and slots at level 10)."""
    # 16 slots x 600 steps per case (about 900 games in all) keep CI's share near two minutes.
    seen = differential(
        16, 600, seed=1000 + level * 10 + n, level=level, deck_mode=deck_mode, num_players=n,
        auto_pass=n % 2 == 0, num_rounds=2 if level < 10 else 3, max_round_steps=200,
    )  # fmt: skip
    assert seen["games"] > 10
    if level == 10:
        assert Phase.SLOT_PICK in seen["phases"]


# -- positions loaded with set_state: the worked examples of spec §10 and random positions ----


def replay(state: R.State, script: list[int], extra: int, seed: int) -> int:
    """Load ``state`` into a fresh engine, play ``script`` and then ``extra`` random actions
    (while the game lasts), comparing mask, observations, rewards and states at every step."""
    cfg = state.config
    options = {name: getattr(cfg, name) for name in R.OPTIONS}
    vg = VectorGame("kdk", 1, seed=seed, backend="numba", **options)
    vg.set_state(0, state)
    assert vg.get_state(0) == state
    rng = np.random.default_rng(seed)
    gen = XorShift(vg._impl.rngs[0])
    obs, mask = vg.observe(np.array([state.to_play])), vg.mask
    seat = np.array([state.to_play])
    played = 0
    for k in range(len(script) + extra):
        check_outputs(vg, [state], obs, mask, seat, rng)
        action = script[k] if k < len(script) else int(pick(rng, mask)[0])
        assert mask[0, action], (state, action)
        obs, mask, seat, rewards, done = vg.step(np.array([action]))
        after = R.apply_action(state, action, gen)
        expected = np.array(R.rewards(state, after, cfg), dtype=np.float32)
        assert same_bits(rewards[0], expected)
        played += 1
        if done[0]:
            assert R.is_terminal(after)
            break
        assert vg.get_state(0) == after, (state, action)
        assert gen.x == int(vg._impl.rngs[0])
        state = after
    return played


SLOT_PICK = R.SLOT_PICK
EXAMPLES = {  # spec §10: the position and the moves the example plays
    "ex1": (lambda: ex1(), [4, 5, 5, 6, 7]),
    "ex1_late": (lambda: ex1(0), [4, 5, 5, 6, 7, R.CLAIM_LATE]),
    "ex2": (lambda: ex2(x=4), [11]),
    "ex2_fail": (lambda: ex2(x=4), [R.FAIL]),
    "ex3": (lambda: ex3((1, 2)), [R.FAIL]),
    "ex3_solo_draw": (lambda: ex3((0, 5)), [R.FAIL]),
    "ex4": (lambda: ex4(), [5]),
    "ex5_l9": (lambda: ex5(9), [9]),
    "ex5_l8_weiter": (lambda: ex5(8), [R.WEITER]),
    "ex6": (lambda: ex6(), [R.FAIL, 6]),
    "ex6_abort": (lambda: ex6(), [R.FAIL, R.ABORT, R.PASS]),
    "ex7": (lambda: ex7(), [6, R.TOP_UP, 7]),
    "ex7_secure": (lambda: ex7(), [6, R.SECURE]),
}


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_worked_examples_through_set_state(engine, name):
    make, script = EXAMPLES[name]
    assert replay(make(), script, extra=60, seed=len(name)) >= len(script)


@pytest.mark.parametrize(
    ("n", "level", "deck_mode", "seed"),
    [(2, 10, "one_colour", 1), (3, 10, "one_colour", 2), (4, 9, "own_decks", 2),
     (5, 8, "one_colour", 6), (3, 10, "own_decks", 4)],
)  # fmt: skip
def test_random_positions_through_set_state(engine, n, level, deck_mode, seed):
    """Positions of every phase (between rounds too, auto_pass every third seed) load exactly
    and play on as in the rules core."""
    states = [s for s in positions(n, level, deck_mode, seed, every=25) if not R.is_terminal(s)]
    phases = {int(s.phase) for s in states}
    assert {Phase.OPEN, Phase.WINDOW, Phase.DUTY} <= phases
    if (n, seed) == (3, 2):  # a round after all passed on shuffle pressure: slot swaps
        assert {Phase.SP_DECLARE, Phase.SLOT_PICK, Phase.SWAP} <= phases
    for k, s in enumerate(states):
        replay(s, [], extra=3, seed=k)


def test_same_seed_same_games(engine):
    a, b = (VectorGame("kdk", 5, seed=7, backend="numba", level=10) for _ in range(2))
    rng = np.random.default_rng(0)
    oa, ma, _ = a.reset()
    ob, mb, _ = b.reset()
    for _ in range(50):
        assert same_bits(oa, ob) and np.array_equal(ma, mb)
        actions = pick(rng, ma)
        oa, ma, _, ra, _ = a.step(actions)
        ob, mb, _, rb, _ = b.step(actions)
        assert same_bits(ra, rb)
    assert np.array_equal(a._impl.states, b._impl.states)


def test_bad_input_raises_value_error(engine):
    vg = VectorGame("kdk", 3, seed=0, backend="numba", num_players=3)
    _, mask, _ = vg.reset()
    illegal = int(np.flatnonzero(~mask[1])[0])
    actions = pick(np.random.default_rng(0), mask)
    actions[1] = illegal
    with pytest.raises(ValueError, match=f"illegal action {illegal} in slot 1"):
        vg.step(actions)
    with pytest.raises(ValueError, match="shape"):
        vg.step(actions[:2])
    with pytest.raises(ValueError, match="integer"):
        vg.step(actions.astype(np.float32))
    with pytest.raises(ValueError, match="level"):
        VectorGame("kdk", 2, backend="numba", level=7)
    with pytest.raises(ValueError, match="num_games"):
        VectorGame("kdk", 0, backend="numba")
    with pytest.raises(ValueError, match="kdk rules.State"):
        vg.set_state(0, VectorGame("kingup", 1, seed=0, backend="rules").get_state(0))
    other = R.initial_state(R.make_config(num_players=3, level=8), np.random.default_rng(0))
    with pytest.raises(ValueError, match="options"):
        vg.set_state(0, other)


def test_random_play_keeps_valid_games(engine):
    """In-engine random play (the benchmark's loop) leaves states the rules core accepts."""
    for level in (8, 9, 10):
        vg = VectorGame("kdk", 4, seed=level, backend="numba", level=level, num_players=4)
        vg.reset()
        assert vg._impl.random_play(500) == 2000
        for i in range(4):
            s = vg.get_state(i)
            assert not R.is_terminal(s)
            deck = np.array(s.config.deck)
            for p in range(4):  # every card is somewhere: hand, pile, played pile, box, slot
                cards = np.array(s.hand[p]) + np.array(s.played[p])
                cards += np.bincount(s.draw[p], minlength=R.NUM_FIGURES)
                for owner, f, _ in s.box:
                    cards[f] += owner == p
                for f in s.slots[p]:
                    cards[f] += f >= 0
                assert cards.tolist() == deck.tolist()


def test_the_column_table_of_the_docstring_matches_the_layout():
    """The documented state layout (module docstring) is the one the code uses."""
    import re

    rows = re.findall(r"^(\d+)(?:–(\d+))?\s+``(\w+)``\s+(\d+)(?:×(\d+))?", E.__doc__, re.M)
    assert len(rows) == 50
    end = 0
    for first, last, name, a, b in rows:
        width = int(a) * int(b or 1)
        assert (getattr(E, name), int(last or first)) == (end, end + width - 1), name
        end += width
    assert end == E.NUM_COLUMNS
