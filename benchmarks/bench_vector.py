"""Throughput of the batched engines (``tablegym.vector``) against each game's ``raw_env``.

Usage: ``python benchmarks/bench_vector.py [--seconds 1.0] [--sizes 1 64 1024] [--games kingup]``

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
fresh process with its own ``NUMBA_CACHE_DIR``. Pgx's connect_four is measured if ``pgx``
imports; otherwise the issue's figure (3.4M steps/s at batch 1024 on this machine) is the peer.
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

PGX_REFERENCE = 3.4e6  # Pgx connect_four, batch 1024, this machine's CPU (the figure)
GOALS = {"kingup": 100, "updown": 100}  # x raw_env at B=1024, Python-driven; 50 for the rest


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


def pgx_connect_four(size: int, seconds: float) -> Rate | None:
    """Pgx connect_four random play at ``size`` (steps/s), or None if pgx is not installed."""
    try:
        import jax
        import pgx
    except ImportError:
        return None
    env = pgx.make("connect_four")
    init, step = jax.jit(jax.vmap(env.init)), jax.jit(jax.vmap(env.step))
    key = jax.random.PRNGKey(0)
    state = init(jax.random.split(key, size))

    @jax.jit
    def act(state, key):
        logits = jax.numpy.where(state.legal_action_mask, 0.0, -jax.numpy.inf)
        return jax.random.categorical(key, logits, axis=1)

    def run() -> int:
        nonlocal state, key
        for _ in range(100):
            key, sub = jax.random.split(key)
            state = step(state, act(state, sub))
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="per measurement")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 64, 1024], help="batch sizes")
    parser.add_argument("--games", nargs="+", default=[g for g in GAMES if has_engine(g)])
    parser.add_argument("--no-compile", action="store_true", help="skip the compile timings")
    args = parser.parse_args()

    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start; "
          f"OpenMP workers {wait_policy()} between steps")  # fmt: skip
    pgx = pgx_connect_four(1024, args.seconds)
    if pgx is None:
        print(f"pgx not installed: peer is the issue's connect_four figure {PGX_REFERENCE:,.0f}/s")
    else:
        print(f"pgx connect_four B=1024: {pgx[0]:,.0f} steps/s (the issue: {PGX_REFERENCE:,.0f})")
    peer = pgx[0] if pgx else PGX_REFERENCE

    def row(game: str, loop: str, rate: Rate, base: Rate) -> None:
        print(f"{game:<8}{loop:<18}{rate[0]:>13,.0f}{rate[0] / base[0]:>10.1f}"
              f"{rate[1]:>14,.0f}{rate[1] / base[1]:>10.1f}")  # fmt: skip

    print(f"\n{'game':<8}{'loop':<18}{'decisions/s':>13}{'x raw_env':>10}"
          f"{'per CPU-s':>14}{'x raw_env':>10}")  # fmt: skip
    for game in list(args.games):
        try:
            importlib.import_module(f"{GAMES[game]}.engine")
        except ImportError as error:  # e.g. an engine written for other rules constants
            print(f"{game:<8}skipped: its engine does not import ({error})")
            args.games.remove(game)
            continue
        base = raw_env_rate(game)
        row(game, "raw_env", base, base)
        for size in args.sizes:
            rate = python_driven(game, size, args.seconds)
            row(game, f"python B={size}", rate, base)
            if size == 1024:
                goal = GOALS.get(game, 50)
                verdict = "met" if rate[0] >= goal * base[0] else "MISSED"
                print(f"{'':<8}goal >= {goal}x raw_env at B=1024 (wall): {verdict}")
        rate = in_numba(game, 1024, args.seconds)
        if rate is None:
            print(f"{game:<8}in-numba: the engine has no random_play kernel; skipped")
        else:
            row(game, "in-numba B=1024", rate, base)
            verdict = "met" if rate[0] >= 2 * peer else "MISSED"
            print(f"{'':<8}{rate[0] / peer:.2f}x pgx connect_four (wall); goal >= 2x: {verdict}")
        if not args.no_compile:
            (cold, cold_cpu), (warm, warm_cpu) = compile_times(game)
            # wall: imports and first calls; CPU: the whole process, interpreter start included
            print(f"{'':<8}compile: cold {cold:.1f} s ({cold_cpu:.1f} s CPU), "
                  f"warm {warm:.2f} s ({warm_cpu:.2f} s CPU)")  # fmt: skip
    print(f"\n(players: {', '.join(f'{g} {spec_of(g).default_players}' for g in args.games)})")


if __name__ == "__main__":
    main()
