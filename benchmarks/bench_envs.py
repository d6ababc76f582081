"""Random-play throughput of the tablegym environments as ratios to a PettingZoo peer.

Usage: ``python benchmarks/bench_envs.py [--steps 5000] [--rounds 5]``

The peer is PettingZoo's ``connect_four_v3.env()``. The machine is shared, so absolute speeds
drift; what is reported is each environment's speed divided by the peer's, measured in the
same round right beside it. Rounds alternate peer and game (peer, game, peer, game, ...), each
game ratio uses the peer measurements just before and after it, so drift over the run cancels.
The ratio printed is the median over rounds, with the smallest and largest beside it.

Every step is a full AEC turn: ``last()`` (observation and mask), a uniformly random legal
action, ``step()``; finished games are reset.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tablegym.games import GAMES, package_of  # noqa: E402

PEER = "connect_four_v3 env()"


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
    """Name -> factory for every tablegym environment measured (``raw_env`` and ``env()``)."""
    found: dict[str, Callable[[], object]] = {}
    for game in GAMES:
        package = package_of(game)
        found[f"{game} raw_env"] = package.raw_env
        found[f"{game} env()"] = package.env
    return found


def interleaved_ratios(
    envs: dict[str, Callable[[], object]], peer: Callable[[], object], steps: int, rounds: int
) -> dict[str, list[float]]:
    """Per environment, its speed over the peer's in each round, peer measured around it."""
    ratios: dict[str, list[float]] = {name: [] for name in envs}
    for r in range(rounds):
        before = steps_per_second(peer, steps, seed=r)
        for name, make in envs.items():
            sps = steps_per_second(make, steps, seed=r)
            after = steps_per_second(peer, steps, seed=r)
            ratios[name].append(sps / ((before + after) / 2))
            before = after
    return ratios


def main() -> None:
    """Measure and print each environment's ratio to connect_four_v3 ``env()``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5_000, help="AEC steps per measurement")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (median)")
    args = parser.parse_args()
    from pettingzoo.classic import connect_four_v3

    ratios = interleaved_ratios(candidates(), connect_four_v3.env, args.steps, args.rounds)
    print(f"speed / {PEER}, {args.rounds} interleaved rounds of {args.steps} steps")
    print(f"{'environment':<20}{'median':>8}{'min':>8}{'max':>8}")
    for name, values in ratios.items():
        print(f"{name:<20}{statistics.median(values):>8.2f}{min(values):>8.2f}{max(values):>8.2f}")


if __name__ == "__main__":
    main()
