"""Search on the batched engines (``agents/engine_rollout.py``): every game's compiled twin of its
rollout policy against the Python policy, its row functions against the rules, and the kernels
the search calls (play-out, race, advance) against the readable search's own rollouts.

The Python rollout policies and ``rules.py`` are the references. A twin must take the Python
policy's decision when both get the same uniform numbers, and draw as many of them.
"""

from __future__ import annotations

import importlib
import random

import numpy as np
import pytest
from helpers import Fed

from agents.base import GameView
from agents.catalog import rollout_policy
from agents.engine_rollout import EngineRollouts
from agents.ismcts import ISMCTSAgent, cutoff_value, terminal_value
from tablegym import kernels as G
from tablegym.games import observation_of, rules_of, spec_of
from tablegym.vector.engine import EngineBackend
from training.registry import make_agent

# Per game: the tables the positions and the games on a row come from, and games per table
# for the positions (a few thousand decisions each); the Python policy's choices must include
# every action of COVERS. KdK's decisions, with hand-built positions and every candidate's
# value, are compared in tests/test_rollout_kdk.py.
TABLES = {
    "kingup": ([{"num_players": n} for n in (3, 4, 5, 6)], 12),
    "updown": (
        [{"num_players": n, "num_rounds": r} for n, r in ((2, 1), (3, 1), (4, 1), (2, 3), (3, 2))]
        + [{"num_players": 4, "num_rounds": 2}],
        14,
    ),
    "kdk": (
        [
            {"num_players": n, "level": level, "deck_mode": mode, "num_rounds": rounds}
            for n, level, mode, rounds in (
                (2, 8, "one_colour", 2),
                (3, 9, "own_decks", 2),
                (4, 10, "one_colour", 4),  # slot swaps need a round with slots, without SP
                (5, 10, "own_decks", 3),
            )
        ],
        0,
    ),
}
COVERS = {
    "kingup": {
        rules_of("kingup").YES,
        rules_of("kingup").NO,
        *(rules_of("kingup").CLIMB + c for c in (0, 6, 12)),
    },
    "updown": {
        rules_of("updown").FLIP,
        rules_of("updown").ROLL,
        *range(rules_of("updown").ROTATE, rules_of("updown").ROTATE + rules_of("updown").NUM_SUITS),
    },
}
TWINS = list(TABLES)
DECIDED = ["kingup", "updown"]
# Shorter games for the kernels' tests, and fewer games on a row per table.
SHORT = {"kdk": {"num_rounds": 2}}
ROW_GAMES = {"kingup": 4, "updown": 4, "kdk": 2}
DRAWS = 64  # numbers fed to the Python policy; no decision draws this many


def twin_of(game: str):
    """The compiled rollout module of ``game``."""
    return importlib.import_module(spec_of(game).search.twin)


def seed_of(rng: np.random.Generator) -> int:
    return int(rng.integers(1, 2**63))  # xorshift64* stays at 0 from a seed of 0


def positions(game: str) -> list[tuple[object, object]]:
    """(config, state) at every step of seeded games: every other game all by the Python
    policy, the others with random and policy seats mixed."""
    rules, policy = rules_of(game), rollout_policy(game)
    tables, games = TABLES[game]
    found = []
    for t, options in enumerate(tables):
        config = rules.make_config(**options)
        n = config.num_players
        for g in range(games):
            rng, rand = np.random.default_rng([t, g]), random.Random(g)
            by_policy = [g % 2 == 0 or (seat + g) % 2 == 0 for seat in range(n)]
            state = rules.initial_state(config, rng)
            while not rules.is_terminal(state):
                found.append((config, state))
                legal = rules.legal_actions(state)
                if by_policy[state.to_play]:
                    action = policy(state, rand)
                else:
                    action = legal[rng.integers(len(legal))]
                state = rules.apply_action(state, action, rng)
    return found


@pytest.fixture(scope="module", params=DECIDED)
def decisions(request):
    """(game, config, state, Python's action and draws, the twin's action and draws) at every
    position with more than one legal action, one seed each."""
    game = request.param
    rules, policy, twin = rules_of(game), rollout_policy(game), twin_of(game)
    rng, consts, out = np.random.default_rng(0), {}, []
    for config, state in positions(game):
        if len(rules.legal_actions(state)) < 2:
            continue
        if config not in consts:
            consts[config] = twin.ENGINE.setup(config)
        seed = seed_of(rng)
        numbers = G.uniforms(seed, DRAWS + 1)
        fed = Fed(numbers[:DRAWS])
        expected = policy(state, fed)
        rngs = np.array([seed], dtype=np.uint64)
        action = twin.policy(twin.ENGINE.from_state(state, config), consts[config], rngs)
        after = G.uniform(rngs)  # the twin's next number tells how many it drew
        used = numbers.index(after) if after in numbers else -1
        out.append((game, config, state, expected, fed.used, action, used))
    return out


def test_the_twin_decides_as_the_python_policy_and_draws_as_many_numbers(decisions):
    assert len(decisions) > 2000
    wrong = [d for d in decisions if d[3] != d[5]]
    assert not wrong, f"{len(wrong)} decisions differ, the first: {wrong[0]}"
    wrong = [d for d in decisions if d[4] != d[6]]
    assert not wrong, f"{len(wrong)} draw counts differ, the first: {wrong[0]}"
    game = decisions[0][0]
    rules = rules_of(game)
    tables = {rules.make_config(**options) for options in TABLES[game][0]}
    assert {d[1] for d in decisions} == tables
    choosing = set(rules.Phase) - {rules.Phase.GAME_OVER}
    assert {d[2].phase for d in decisions} == choosing  # every phase with a choice
    assert COVERS[game] <= {d[3] for d in decisions}


def test_other_numbers_change_some_decisions(decisions):
    # The comparison above would pass if the twin ignored its numbers wherever the Python
    # policy does: other numbers must change some decisions.
    game = decisions[0][0]
    twin = twin_of(game)
    changed = 0
    for _, config, state, _, _, action, _ in decisions[:2000]:
        rngs = np.array([12345], dtype=np.uint64)
        row = twin.ENGINE.from_state(state, config)
        changed += twin.policy(row, twin.ENGINE.setup(config), rngs) != action
    assert changed > 20


# -- the game on a row -------------------------------------------------------------------------


def check_row(game: str, row: np.ndarray, config, consts) -> object:
    """What the twin module says of the row is what the rules say of its state; the state."""
    rules, twin = rules_of(game), twin_of(game)
    state = twin.ENGINE.to_state(row, config)
    n = config.num_players
    assert twin.is_over(row) is rules.is_terminal(state)
    assert twin.to_play(row) == state.to_play
    out = np.full(rules.NUM_ACTIONS, -9, dtype=np.int64)
    k = twin.legal(row, consts, out)
    assert tuple(out[:k]) == tuple(rules.legal_actions(state))
    got = np.full(n, np.nan)
    twin.scores(row, consts, got)
    assert tuple(got) == rules.scores(state)
    if twin.is_over(row):
        flags = np.full(n, -9, dtype=np.int64)
        k = twin.winners(row, consts, flags)
        won = rules.winners(state)
        assert k == len(won) and flags.tolist() == [int(s in won) for s in range(n)]
    return state


@pytest.mark.parametrize("game", TWINS)
def test_games_played_on_a_row_follow_the_rules_and_the_engine(game):
    # At every step the twin's functions say what the rules say of the row's state, and its
    # apply leaves the row the engine's own batched step (what VectorGame plays) leaves.
    rules, twin = rules_of(game), twin_of(game)
    tables, _ = TABLES[game]
    rng = np.random.default_rng(1)
    ends, phases = 0, set()
    for options in tables:
        config = rules.make_config(**options)
        consts = twin.ENGINE.setup(config)
        stepper = EngineBackend(game, config, [np.random.SeedSequence(0)])
        for g in range(ROW_GAMES[game]):
            row = twin.ENGINE.from_state(rules.initial_state(config, rng), config)
            rngs = np.array([seed_of(rng)], dtype=np.uint64)
            state = check_row(game, row, config, consts)
            while not rules.is_terminal(state):
                legal = rules.legal_actions(state)
                action = legal[rng.integers(len(legal))]
                if g % 2:  # the policy's moves (its choices are checked above), else random
                    action = twin.policy(row, consts, rngs)
                assert action in legal
                stepper.states[0], stepper.rngs[0] = row, rngs[0]
                stepper.step(np.array([action]))
                twin.apply(row, consts, action, rngs)
                if not twin.is_over(row):  # at the end the engine deals a new game
                    np.testing.assert_array_equal(row, stepper.states[0])
                state = check_row(game, row, config, consts)
                phases.add(state.phase)
            ends += 1
    assert ends == ROW_GAMES[game] * len(tables) and phases == set(rules.Phase)


# -- the kernels ---------------------------------------------------------------------------------


def test_uniforms_are_the_draws_of_uniform():
    rngs = np.array([7], dtype=np.uint64)
    drawn = [G.uniform(rngs) for _ in range(20_000)]
    assert drawn == G.uniforms(7, 20_000)
    assert 0.0 <= min(drawn) and max(drawn) < 1.0 and abs(np.mean(drawn) - 0.5) < 0.01


def test_compiled_values_are_the_searchs():
    rng = np.random.default_rng(3)
    for n in (2, 3, 4, 6):
        for _ in range(200):
            scores = rng.integers(0, 4, n).astype(float)  # ties are common
            out = np.empty(n)
            G.cutoff_value(scores, n, out)
            np.testing.assert_allclose(out, cutoff_value(tuple(scores)), rtol=0, atol=1e-12)
            flags = (scores == scores.max()).astype(np.int64)
            G.terminal_value(flags, n, out)
            assert out.tolist() == terminal_value(tuple(np.flatnonzero(flags)), n)


def start_of(game: str, seed: int, steps: int):
    """(rules, config, state) after ``steps`` moves of the Python policy from a deal."""
    rules, policy = rules_of(game), rollout_policy(game)
    config = rules.make_config(num_players=4, **SHORT.get(game, {}))
    rng, rand = np.random.default_rng(seed), random.Random(seed)
    state = rules.initial_state(config, rng)
    for _ in range(steps):
        state = rules.apply_action(state, policy(state, rand), rng)
    return rules, config, state


def python_play_out(twin, row: np.ndarray, consts, rngs: np.ndarray, n: int, cutoff: bool):
    """``play_out`` as a Python loop over the module's functions, valued by agents/ismcts.py."""
    start, now = np.empty(n), np.empty(n)
    twin.scores(row, consts, start)
    while not twin.is_over(row):
        twin.apply(row, consts, twin.policy(row, consts, rngs), rngs)
        twin.scores(row, consts, now)
        if cutoff and not twin.is_over(row) and (now != start).any():
            return cutoff_value(tuple(now))
    flags = np.zeros(n, dtype=np.int64)
    twin.winners(row, consts, flags)
    return terminal_value(tuple(np.flatnonzero(flags)), n)


@pytest.mark.parametrize("cutoff", [False, True])
@pytest.mark.parametrize("game", TWINS)
def test_play_out_and_race_play_as_the_python_loop(game, cutoff):
    rules, twin, policy = rules_of(game), twin_of(game), rollout_policy(game)
    config = rules.make_config(num_players=4, **SHORT.get(game, {}))
    consts = twin.ENGINE.setup(config)
    rng, rand = np.random.default_rng(5), random.Random(5)
    # Every 7th position of two games and the last few, where a cutoff meets the game's end.
    states = []
    for _ in range(2):
        game_states = [rules.initial_state(config, rng)]
        while not rules.is_terminal(game_states[-1]):
            last = game_states[-1]
            game_states.append(rules.apply_action(last, policy(last, rand), rng))
        states += game_states[:-1:7] + game_states[-6:-1]
    for state in states:
        start, seed = twin.ENGINE.from_state(state, config), seed_of(rng)
        row, rngs = start.copy(), np.array([seed], dtype=np.uint64)
        expected = python_play_out(twin, row, consts, rngs, 4, cutoff)
        compiled, crngs = start.copy(), np.array([seed], dtype=np.uint64)
        values = np.full(4, np.nan)
        twin.play_out(compiled, consts, crngs, 4, cutoff, values)
        np.testing.assert_array_equal(compiled, row)
        assert crngs[0] == rngs[0]
        np.testing.assert_allclose(values, expected, rtol=0, atol=1e-12)
        # A race: each legal move from the same generator, then played out.
        moves = np.array(rules.legal_actions(state), dtype=np.int64)
        table = np.full((len(moves), 4), np.nan)
        twin.race(start, consts, moves, np.uint64(seed), 4, cutoff, table)
        for j, a in enumerate(moves):
            row, rngs = start.copy(), np.array([seed], dtype=np.uint64)
            twin.apply(row, consts, a, rngs)
            expected = python_play_out(twin, row, consts, rngs, 4, cutoff)
            np.testing.assert_allclose(table[j], expected, rtol=0, atol=1e-12)
    assert len(states) > 10


@pytest.mark.parametrize("game", TWINS)
def test_play_outs_have_the_readable_searchs_rollout_values(game):
    # The same position played out 2,000 times by each backend: every seat's mean value
    # agrees within the noise (a wrong policy, score or winner moves the means).
    rules, config, state = start_of(game, seed=11, steps=6)
    agent = make_agent("ismcts:1", game, seed=0)
    score = agent.cutoff == "score"
    engine = EngineRollouts(twin_of(game).__name__, config, rules.NUM_ACTIONS, score)
    rngs = np.array([5], dtype=np.uint64)
    compiled = np.array([engine.value(engine.row(state), rngs) for _ in range(2000)])
    readable = np.array([agent.rollout(rules, state) for _ in range(2000)])
    spread = np.sqrt(compiled.var(axis=0) / 2000 + readable.var(axis=0) / 2000) + 1e-9
    z = np.abs(compiled.mean(axis=0) - readable.mean(axis=0)) / spread
    assert z.max() < 4.5, (compiled.mean(axis=0), readable.mean(axis=0))


@pytest.mark.parametrize("game", TWINS)
def test_a_race_through_engine_rollouts_pairs_its_moves(game):
    rules, config, state = start_of(game, seed=2, steps=4)
    engine = EngineRollouts(twin_of(game).__name__, config, rules.NUM_ACTIONS, True)
    legal = list(rules.legal_actions(state))
    values = engine.race(engine.row(state), legal + legal, seed=99)  # each move twice
    np.testing.assert_array_equal(values[: len(legal)], values[len(legal) :])
    assert engine.legal(engine.row(state)) == legal


@pytest.mark.parametrize("game", TWINS)
def test_advance_plays_the_other_seats_until_the_seat_is_to_play(game):
    rules, twin = rules_of(game), twin_of(game)
    config = rules.make_config(num_players=3, **SHORT.get(game, {}))
    consts = twin.ENGINE.setup(config)
    rng = np.random.default_rng(8)
    row = twin.ENGINE.from_state(rules.initial_state(config, rng), config)
    rngs = np.array([seed_of(rng)], dtype=np.uint64)
    moves = 0
    while not twin.is_over(row):
        seat = int(rng.integers(3))
        expected, erngs = row.copy(), rngs.copy()
        while not twin.is_over(expected) and twin.to_play(expected) != seat:
            twin.apply(expected, consts, twin.policy(expected, consts, erngs), erngs)
            moves += 1
        twin.advance(row, consts, rngs, seat)
        np.testing.assert_array_equal(row, expected)
        assert rngs[0] == erngs[0]
        if not twin.is_over(row):
            twin.apply(row, consts, twin.policy(row, consts, rngs), rngs)  # the seat's own move
    assert moves > 20


# -- the search's backends -------------------------------------------------------------------


def test_the_backend_is_the_engine_where_the_policy_has_a_twin():
    for game in TWINS:
        assert make_agent("ismcts:5", game).backend == "numba"
        assert make_agent("ismcts:5,backend=rules", game).backend == "rules"
        assert make_agent("ismcts:5,rollout=random", game).backend == "rules"
    with pytest.raises(ValueError, match="backend='numba' needs the module of the rollout policy"):
        ISMCTSAgent(backend="numba", rollout_policy=lambda state, rand: 0)
    with pytest.raises(ValueError, match="twin 'kdk_env.rollout' needs the rollout policy"):
        ISMCTSAgent(twin="kdk_env.rollout")
    with pytest.raises(ValueError, match="backend must be one of"):
        ISMCTSAgent(backend="gpu")


@pytest.mark.parametrize("game", TWINS)
def test_the_same_seed_makes_the_same_search(game):
    rules, config, state = start_of(game, seed=8, steps=5)
    obs = observation_of(game)
    seat = state.to_play
    mask = np.zeros(rules.NUM_ACTIONS, np.int8)
    mask[list(rules.legal_actions(state))] = 1
    view = GameView(rules, config, state, seat)
    moves = []
    for _ in range(2):
        agent = make_agent("ismcts:200", game, seed=3)
        moves.append([agent.act(obs.encode(state, seat), mask, view) for _ in range(3)])
        assert agent.last_simulations > 0
    assert moves[0] == moves[1]
