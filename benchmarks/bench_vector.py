"""Throughput of the batched engines (``tablegym.vector``) against each game's ``raw_env``.

Usage: ``python benchmarks/bench_vector.py [--seconds 1.0] [--sizes 1 64 1024] [--games kingup]
[--rounds 1]``

For every game with a batched engine (``tablegym.vector.has_engine``), at its default table
(each game's ``spec_of(game).default_players``: King Up! 4 players, Up & Down 2, KdK 3), in one run:

* ``raw_env``: the AEC loop of ``bench_envs.py`` (``last()``, a random legal action, ``step``);
* ``python B=…``: ``VectorGame(game, B, backend="numba")`` driven from Python, numpy picking a
  uniformly random legal action per game from the mask, observations written every step;
* ``in-numba B=1024``: the engine's ``random_play`` kernel (random legal actions chosen inside
  numba, no observations), the shape of Pgx's random-play benchmarks;

The engines' OpenMP workers spin briefly between steps, and each VectorGame times its steps on
one thread and on all, keeping the faster (``tablegym/vector/engine.py``);
``OMP_WAIT_POLICY=passive python benchmarks/bench_vector.py`` measures sleeping workers
instead. Each figure is
given as decisions per second of wall time and per second of this process's CPU time (all
threads), both as ratios to that game's ``raw_env``: on a shared machine the wall figures say
what the loop got, the CPU figures what it costs. Then the kernels'
compile time, cold (empty numba cache) and warm (loaded from the cache), each measured in a
fresh process with its own ``NUMBA_CACHE_DIR``.

The peers: Pgx's connect_four and leduc_holdem at B = 1024 (if ``pgx`` imports), random legal
actions, stepped through ``pgx.experimental.auto_reset`` so that a finished game is dealt again
at once, as ours are (without it every game of a Pgx batch ends within a few dozen steps and
the batch then steps finished games). Each Python-driven B = 1024 loop is given as a ratio to
each peer per CPU second (Pgx runs XLA's threads, ours ``ThreadTuner``'s choice). With
``--rounds R`` every measurement is repeated R times, the peers and the games alternating, and
the ratios are given per round (a shared machine drifts between measurements).
"""

from __future__ import annotations

import argparse
import importlib
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_envs import steps_per_second  # noqa: E402

from tablegym.games import GAMES, env_class, rules_of, spec_of  # noqa: E402
from tablegym.vector import VectorGame, has_engine, random_actions  # noqa: E402
from tablegym.vector.engine import EngineBackend  # noqa: E402

PGX_GAMES = ("connect_four", "leduc_holdem")
GOALS = {"kingup": 100, "updown": 100}  # x raw_env at B=1024, Python-driven; 50 for the rest
PGX_GOAL = 2  # x each Pgx peer per CPU second at B=1024, Python-driven (issue 33)


Rate = tuple[float, float]  # decisions per second of wall time, and per second of CPU time


def timed(run, seconds: float) -> Rate:
    """Decisions per wall and per CPU second of ``run()`` (returning its decisions)."""
    run()  # warm-up: compilation, caches
    made, start, cpu = 0, time.perf_counter(), time.process_time()
    while (elapsed := time.perf_counter() - start) < seconds:
        made += run()
    return made / elapsed, made / (time.process_time() - cpu)


def raw_env_rate(game: str, steps: int = 20_000) -> Rate:
    """The AEC loop of ``bench_envs.py`` over the game's ``raw_env``."""
    cpu = time.process_time()
    wall = steps_per_second(
        lambda: env_class(game)(num_players=spec_of(game).default_players), steps
    )
    return wall, steps / (time.process_time() - cpu)


def python_driven(game: str, size: int, seconds: float) -> Rate:
    """Decisions/s of a VectorGame stepped from Python with numpy's random legal actions."""
    vg = VectorGame(game, size, seed=0, backend="numba", num_players=spec_of(game).default_players)
    rng = np.random.default_rng(0)
    vg.reset()
    chunk = max(1, 4096 // size)

    def run() -> int:
        for _ in range(chunk):
            vg.step(random_actions(vg.mask, rng))
        return chunk * size

    return timed(run, seconds)


def in_numba(game: str, size: int, seconds: float) -> Rate | None:
    """Decisions/s of the engine's random_play kernel over ``size`` games (None if it has none)."""
    seeds = np.random.SeedSequence(0).spawn(size)
    config = rules_of(game).make_config(num_players=spec_of(game).default_players)
    backend = EngineBackend(game, config, seeds)
    if not hasattr(backend.engine, "random_play"):
        return None
    backend.reset()
    return timed(lambda: backend.random_play(200), seconds)


COMPILE_SCRIPT = """
import time, numpy as np
t = time.perf_counter()
from tablegym.games import rules_of, spec_of
from tablegym.vector.engine import EngineBackend
for size in (1, 1024):
    b = EngineBackend({game!r}, rules_of({game!r}).make_config(),
                      np.random.SeedSequence(0).spawn(size))
    obs, mask, seat = b.reset()
    b.step(mask.argmax(1))
    b.observe(np.zeros(size, dtype=np.int64))
    if hasattr(b.engine, "random_play"):
        b.random_play(1)
print(time.perf_counter() - t)
"""


def compile_times(game: str) -> list[tuple[float, float]]:
    """(wall, CPU) seconds to import and compile every kernel: cold (empty cache), then warm."""
    root = Path(__file__).resolve().parents[1]
    runs = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(root))
        for _ in range(2):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            out = subprocess.run(
                [sys.executable, "-c", COMPILE_SCRIPT.format(game=game)],
                env=env, cwd=root, check=True, capture_output=True, text=True,
            ).stdout  # fmt: skip
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            runs.append((float(out.split()[-1]), cpu))
    return runs


def pgx_rate(name: str, size: int, seconds: float) -> Rate | None:
    """Steps/s of Pgx game ``name``: random legal play of ``size`` games with auto-reset, or
    None if pgx is not installed."""
    try:
        import jax
        import pgx
        from pgx.experimental import auto_reset
    except ImportError:
        return None
    env = pgx.make(name)
    init = jax.jit(jax.vmap(env.init))
    step = jax.jit(jax.vmap(auto_reset(env.step, env.init)))  # finished games dealt again
    key = jax.random.PRNGKey(0)
    state = init(jax.random.split(key, size))

    @jax.jit
    def act(state, key):
        logits = jax.numpy.where(state.legal_action_mask, 0.0, -jax.numpy.inf)
        return jax.random.categorical(key, logits, axis=1)

    def run() -> int:
        nonlocal state, key
        for _ in range(100):
            key, pick, deal = jax.random.split(key, 3)
            state = step(state, act(state, pick), jax.random.split(deal, size))
        state.current_player.block_until_ready()
        return 100 * size

    return timed(run, seconds)


def wait_policy() -> str:
    """How the engines' OpenMP workers wait (see tablegym/vector/engine.py)."""
    spin = os.environ.get("GOMP_SPINCOUNT")
    if spin is not None and os.environ.get("OMP_WAIT_POLICY", "").lower() != "passive":
        return f"spin (GOMP_SPINCOUNT={spin}), then sleep"
    return {"active": "spin", "passive": "sleep (passive)"}.get(
        os.environ.get("OMP_WAIT_POLICY", "").lower(), "spin, then sleep (libgomp's default)"
    )


def row(game: str, loop: str, rate: Rate, base: Rate) -> None:
    """One line of the table: wall and CPU rates, each as a ratio to ``base``."""
    print(f"{game:<8}{loop:<18}{rate[0]:>13,.0f}{rate[0] / base[0]:>10.1f}"
          f"{rate[1]:>14,.0f}{rate[1] / base[1]:>10.1f}")  # fmt: skip


def measure_round(games: list[str], sizes: list[int], seconds: float) -> dict[str, Rate]:
    """One round of every measurement, printed; the Python-driven B=1024 rate of each game
    and each Pgx peer's rate, by name."""
    peers = {}
    for name in PGX_GAMES:
        rate = pgx_rate(name, 1024, seconds)
        if rate is not None:
            peers[name] = rate
            print(f"pgx {name} B=1024: {rate[0]:,.0f} steps/s, {rate[1]:,.0f} per CPU-s")
    if not peers:
        print("pgx not installed (pip install pgx): no peer measured")
    print(f"\n{'game':<8}{'loop':<18}{'decisions/s':>13}{'x raw_env':>10}"
          f"{'per CPU-s':>14}{'x raw_env':>10}")  # fmt: skip
    found = dict(peers)
    for game in games:
        base = raw_env_rate(game)
        row(game, "raw_env", base, base)
        for size in sizes:
            rate = python_driven(game, size, seconds)
            row(game, f"python B={size}", rate, base)
            if size == 1024:
                found[game] = rate
                goal = GOALS.get(game, 50)
                verdict = "met" if rate[0] >= goal * base[0] else "MISSED"
                print(f"{'':<8}goal >= {goal}x raw_env at B=1024 (wall): {verdict}")
                for name, peer in peers.items():
                    ratio = rate[1] / peer[1]
                    verdict = "met" if ratio >= PGX_GOAL else "MISSED"
                    print(f"{'':<8}{ratio:.2f}x pgx {name} per CPU-s; "
                          f"goal >= {PGX_GOAL}x: {verdict}")  # fmt: skip
        rate = in_numba(game, 1024, seconds)
        if rate is None:
            print(f"{game:<8}in-numba: the engine has no random_play kernel; skipped")
        else:
            row(game, "in-numba B=1024", rate, base)
            for name, peer in peers.items():
                print(f"{'':<8}{rate[1] / peer[1]:.2f}x pgx {name} per CPU-s")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="per measurement")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 64, 1024], help="batch sizes")
    parser.add_argument("--games", nargs="+", default=[g for g in GAMES if has_engine(g)])
    parser.add_argument("--rounds", type=int, default=1, help="repeats, alternating")
    parser.add_argument("--no-compile", action="store_true", help="skip the compile timings")
    args = parser.parse_args()
    unknown = [g for g in args.games if g not in GAMES]
    if unknown or args.rounds < 1 or args.seconds <= 0:
        parser.error(f"--games from {sorted(GAMES)}, --rounds >= 1, --seconds > 0; got "
                     f"{args.games}, {args.rounds}, {args.seconds}")  # fmt: skip

    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start; "
          f"OpenMP workers {wait_policy()} between steps")  # fmt: skip
    for game in list(args.games):
        try:
            importlib.import_module(f"{GAMES[game]}.engine")
        except ImportError as error:  # e.g. an engine written for other rules constants
            print(f"{game:<8}skipped: its engine does not import ({error})")
            args.games.remove(game)
    rounds = []
    for k in range(args.rounds):
        print(f"\n-- round {k + 1} of {args.rounds}")
        rounds.append(measure_round(args.games, args.sizes, args.seconds))
    if 1024 in args.sizes and args.rounds > 1:
        print("\nPython-driven B=1024 per CPU-s as a ratio to each Pgx peer, round by round:")
        for game in args.games:
            for name in PGX_GAMES:
                ratios = [r[game][1] / r[name][1] for r in rounds if name in r]
                if ratios:
                    print(f"{game:<8}x pgx {name:<14}" + " ".join(f"{x:.2f}" for x in ratios))
    if not args.no_compile:
        for game in args.games:
            (cold, cold_cpu), (warm, warm_cpu) = compile_times(game)
            # wall: imports and first calls; CPU: the whole process, interpreter start included
            print(f"{game:<8}compile: cold {cold:.1f} s ({cold_cpu:.1f} s CPU), "
                  f"warm {warm:.2f} s ({warm_cpu:.2f} s CPU)")  # fmt: skip
    print(f"\n(players: {', '.join(f'{g} {spec_of(g).default_players}' for g in args.games)})")


if __name__ == "__main__":
    main()
