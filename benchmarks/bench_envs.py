"""Random-play throughput of the tablegym environments beside a PettingZoo peer, in one run.

Usage: ``python benchmarks/bench_envs.py [--steps 20000] [--repeats 3]``

Prints env steps per second (median of the repeats) of each game's ``raw_env`` and ``env()``
and of PettingZoo's ``connect_four_v3.env()`` measured in the same process, and each as a
ratio to that peer. Every step is a full AEC turn: ``last()`` (observation and mask), a
uniformly random legal action, ``step()``; finished games are reset.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time
from collections.abc import Callable

import numpy as np

GAMES = ("kingup_env", "updown_env", "kdk_env")


def steps_per_second(make: Callable[[], object], steps: int, seed: int = 0) -> float:
    """Steps/s of random play over ``steps`` AEC steps, resetting finished games."""
    game = make()
    rng = np.random.default_rng(seed)
    game.reset(seed=seed)
    start = time.perf_counter()
    for _ in range(steps):
        obs, _, term, trunc, _ = game.last()
        if term or trunc:
            game.step(None)
            if not game.agents:
                game.reset()
            continue
        legal = np.flatnonzero(obs["action_mask"])
        game.step(int(legal[rng.integers(legal.size)]))
    return steps / (time.perf_counter() - start)


def candidates() -> dict[str, Callable[[], object]]:
    """Name -> factory for every environment measured."""
    from pettingzoo.classic import connect_four_v3

    found: dict[str, Callable[[], object]] = {"connect_four_v3 env()": connect_four_v3.env}
    for pkg in GAMES:
        mod = importlib.import_module(pkg)
        found[f"{pkg} raw_env"] = mod.raw_env
        found[f"{pkg} env()"] = mod.env
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000, help="AEC steps per measurement")
    parser.add_argument("--repeats", type=int, default=3, help="measurements per env (median)")
    args = parser.parse_args()
    results = {}
    for name, make in candidates().items():
        runs = [steps_per_second(make, args.steps, seed=r) for r in range(args.repeats)]
        results[name] = statistics.median(runs)
    peer = results["connect_four_v3 env()"]
    print(f"{'environment':<28}{'steps/s':>12}{'x connect_four':>16}")
    for name, sps in results.items():
        print(f"{name:<28}{sps:>12,.0f}{sps / peer:>16.2f}")


if __name__ == "__main__":
    main()
