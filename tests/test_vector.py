"""VectorGame's interface on every game (the readable-core backend; engines have their own
differential tests): what it returns, seeding, state loading and the errors it gives."""

from __future__ import annotations

import numpy as np
import pytest

from tablegym.games import GAMES, observation_of, rules_of
from tablegym.vector import VectorGame

TABLES = {"kingup": 4, "updown": 2, "kdk": 3}
FAST = {"kdk": {"num_rounds": 1}}


def make(
    game: str, num_games: int = 8, seed: int | None = 0, backend: str = "rules", **options
) -> VectorGame:
    options = {"num_players": TABLES[game], **FAST.get(game, {}), **options}
    return VectorGame(game, num_games, seed=seed, backend=backend, **options)


def play(vg: VectorGame, steps: int, seed: int = 0):
    """Random legal play; yields (obs, mask, seat, rewards, done) after each step."""
    rng = np.random.default_rng(seed)
    obs, mask, seat = vg.reset()
    for _ in range(steps):
        noise = rng.random(mask.shape) * mask
        obs, mask, seat, rewards, done = vg.step(noise.argmax(axis=1))
        yield obs, mask, seat, rewards, done


@pytest.mark.parametrize("game", GAMES)
def test_outputs_match_the_readable_core(game):
    vg = make(game)
    rules, observation = rules_of(game), observation_of(game)
    for obs, mask, seat, rewards, _ in play(vg, 60):
        assert obs.dtype == np.float32 and mask.dtype == bool and rewards.dtype == np.float32
        assert rewards.shape == (8, TABLES[game])
        for i in range(vg.num_games):
            state = vg.get_state(i)
            assert seat[i] == state.to_play
            np.testing.assert_array_equal(obs[i], observation.encode(state, state.to_play))
            assert np.flatnonzero(mask[i]).tolist() == list(rules.legal_actions(state))
    seats = np.arange(vg.num_games) % TABLES[game]
    seen = vg.observe(seats)
    for i, q in enumerate(seats):
        np.testing.assert_array_equal(seen[i], observation.encode(vg.get_state(i), int(q)))


@pytest.mark.parametrize("game", GAMES)
def test_same_seed_same_games(game):
    runs = [[(o.copy(), r.copy()) for o, _, _, r, _ in play(make(game, seed=3), 40)] for _ in "ab"]
    for (o1, r1), (o2, r2) in zip(*runs):
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_array_equal(r1, r2)


def test_finished_games_pay_the_win_reward_and_are_dealt_anew():
    vg = make("kingup", num_games=4)
    finished = 0
    for _, _, _, rewards, done in play(vg, 800):
        # "win": nothing until the game ends, then +1 to each winner and -1 to every other.
        assert not rewards[~done].any()
        assert np.all(np.abs(rewards[done]) == 1) and np.all(rewards[done].max(axis=1) == 1)
        for i in np.flatnonzero(done):
            state = vg.get_state(int(i))
            assert not rules_of("kingup").is_terminal(state)
        finished += int(done.sum())
    assert finished >= 4


@pytest.mark.parametrize("game", GAMES)
def test_set_state_loads_a_position_and_get_state_returns_it(game):
    source, target = make(game, seed=1), make(game, seed=2)
    list(play(source, 15))
    target.reset()
    state = source.get_state(3)
    target.set_state(5, state)
    assert target.get_state(5) == state
    rules = rules_of(game)
    assert np.flatnonzero(target.mask[5]).tolist() == list(rules.legal_actions(state))


def test_bad_input_is_refused_with_one_clear_line():
    vg = make("kingup", num_games=2)
    with pytest.raises(RuntimeError, match="reset"):
        vg.step(np.zeros(2, np.int64))
    _, mask, _ = vg.reset()
    illegal = int(np.flatnonzero(~mask[1])[0])
    legal = int(np.flatnonzero(mask[0])[0])
    with pytest.raises(ValueError, match=rf"illegal action {illegal} in slot 1; legal actions: \["):
        vg.step(np.array([legal, illegal]))
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        vg.step(np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="integer array"):
        vg.step(np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="illegal action -1 in slot 0"):
        vg.step(np.array([-1, legal]))
    with pytest.raises(ValueError, match="unknown game 'chess'"):
        VectorGame("chess", 4)
    with pytest.raises(ValueError, match="num_games must be an integer >= 1"):
        VectorGame("kingup", 0)
    with pytest.raises(ValueError, match="unknown option 'colour'"):
        VectorGame("kingup", 4, colour=1)
    with pytest.raises(ValueError, match="backend must be one of"):
        VectorGame("kingup", 4, backend="gpu")
    other = make("updown", num_games=1)
    other.reset()
    with pytest.raises(ValueError, match="expected a kingup rules.State"):
        vg.set_state(0, other.get_state(0))
    with pytest.raises(ValueError, match="slot must be an integer from 0 to 1"):
        vg.get_state(2)
    with pytest.raises(ValueError, match="seats must lie in 0..3"):
        vg.observe(np.array([0, 4]))


@pytest.mark.parametrize("backend", ["rules", "numba"])
@pytest.mark.parametrize("game", GAMES)
def test_final_state_is_the_end_of_the_game_that_just_ended(game, backend):
    rules = rules_of(game)
    vg = make(game, num_games=4, keep_final=True, backend=backend)
    ended = 0
    for _, _, _, rewards, done in play(vg, 1500):
        for i in np.flatnonzero(done).tolist():
            final = vg.final_state(i)
            assert rules.is_terminal(final)
            assert not rules.is_terminal(vg.get_state(i))  # the slot holds a new deal
            before = vg._impl.state_of(vg._before, i)
            np.testing.assert_array_equal(rewards[i], rules.rewards(before, final, vg.config))
            ended += 1
        if ended >= 6:
            break
    assert ended >= 6
    fresh = make(game, num_games=2, keep_final=True, backend=backend)
    next(play(fresh, 1))
    with pytest.raises(ValueError, match="no game ended in slot 1 at the last step"):
        fresh.final_state(1)
    with pytest.raises(ValueError, match="keep_final=True"):
        make(game, num_games=1).final_state(0)


@pytest.mark.parametrize("backend", ["rules", "numba"])
@pytest.mark.parametrize("game", GAMES)
def test_set_state_with_a_seed_replays_the_same_chance(game, backend):
    """Two batches seeded differently play alike from a state loaded with the same seed."""
    start = make(game, num_games=1, seed=9, backend="rules")
    start.reset()
    state = start.get_state(0)
    runs = []
    for batch_seed in (1, 2):
        vg = make(game, num_games=2, seed=batch_seed, backend=backend)
        vg.reset()
        vg.set_state(1, state, seed=77)
        rng, seen = np.random.default_rng(0), []
        for _ in range(120):
            noise = rng.random(vg.mask.shape) * vg.mask
            obs, _, _, rewards, _ = vg.step(noise.argmax(axis=1))
            seen.append((obs[1].copy(), rewards[1].copy()))
        runs.append(seen)
    for (o1, r1), (o2, r2) in zip(*runs):
        np.testing.assert_array_equal(o1, o2)
        np.testing.assert_array_equal(r1, r2)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        vg.set_state(0, state, seed=-1)


def test_thread_tuner_keeps_the_faster_choice_and_probes_the_other():
    import numba

    from tablegym.vector.engine import ThreadTuner

    threads = numba.get_num_threads()
    for fast in (0, 1):  # 0: one thread is faster (a busy machine), 1: all threads
        tuner = ThreadTuner()
        used = []
        for _ in range(2000):
            started = tuner.start()
            if tuner.arm == 0 and threads > 1:
                assert numba.get_num_threads() == 1
            used.append(tuner.arm)
            cost = 0.001 if tuner.arm == fast else 0.003
            tuner.stop(started - cost)  # as if the kernel had taken ``cost`` seconds
            assert numba.get_num_threads() == threads  # restored after every call
        slow = used.count(1 - fast)
        # Two first probes, then a probe of PROBE + 1 steps every EVERY steps.
        probes = 2 + (2000 // (ThreadTuner.EVERY + ThreadTuner.PROBE + 1))
        assert slow <= probes * (ThreadTuner.PROBE + 1)
        assert slow >= 2 * (ThreadTuner.PROBE + 1)  # the other choice is still measured
        first = 2 * (ThreadTuner.PROBE + 1)  # both choices timed once, then the faster
        assert used[first : first + ThreadTuner.EVERY] == [fast] * ThreadTuner.EVERY
        assert tuner.every > ThreadTuner.EVERY  # confirmed again and again: probes grow rarer
    # A change of conditions is found at the next probe, and probes become frequent again.
    tuner, switched = ThreadTuner(), None
    for step in range(6000):
        fast = 1 if step < 1500 else 0
        started = tuner.start()
        tuner.stop(started - (0.001 if tuner.arm == fast else 0.003))
        if step >= 1500 and switched is None and tuner.arm == 0 and tuner.probe is None:
            switched = step
            assert tuner.every == ThreadTuner.EVERY
    assert switched is not None and switched - 1500 <= ThreadTuner.LONGEST + ThreadTuner.PROBE + 1


def test_the_numba_backend_keeps_rows_of_the_engines_dtype():
    # KdK's engine keeps int32 rows (STATE_DTYPE); from_state's int64 row is converted as it
    # is stored, and the position reads back the same.
    source, target = make("kdk", seed=1, backend="numba"), make("kdk", seed=2, backend="numba")
    assert target._impl.states.dtype == np.int32
    assert make("kingup", backend="numba")._impl.states.dtype == np.int64  # the default
    list(play(source, 30))
    target.reset()
    state = source.get_state(2)
    target.set_state(4, state)
    assert target.get_state(4) == state
    assert target._impl.states[4].tolist() == source._impl.states[2].tolist()


def test_row_view_reads_and_writes_the_rows_of_a_c_contiguous_batch():
    from numba import njit
    from numba.core.errors import TypingError

    from tablegym.kernels import row_view

    @njit
    def bump(a, i):
        row = row_view(a, i)
        for j in range(row.shape[0]):
            row[j] += j + 1
        return row.shape[0], row.strides[0]

    for dtype in (np.int32, np.int64, np.float32, np.uint8):
        a = np.zeros((4, 5), dtype=dtype)
        assert bump(a, 2) == (5, a.itemsize)
        expected = np.zeros((4, 5), dtype=dtype)
        expected[2] = np.arange(1, 6)
        assert (a == expected).all()  # only row 2, through the view
    with pytest.raises(TypingError):
        bump(np.zeros((5, 4), dtype=np.int32).T, 0)  # Fortran order: not a batch of rows
