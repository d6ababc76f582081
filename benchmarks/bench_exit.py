"""Expert iteration's costs: the search with a network, and the target generator's workers.

Usage (from the repository root)::

    python benchmarks/bench_exit.py --prior ppo:kingup
    python benchmarks/bench_exit.py --parts workers --games 12 --simulations 300

Two parts (``--parts``, default both), King Up! at 4 players (``--game``):

``search``
    Simulations per second of CPU (``time.process_time``) of ``ismcts:N`` with rollouts, and
    of the same search with ``prior=--prior`` at ``value_weight`` 1 and 0.5 and at
    ``batch`` 1, 8 and 32: every decision of seat 0 in ``--positions`` positions of heuristic
    games, in one process, each spec interleaved over ``--repeats`` repeats.
``workers``
    Wall seconds of :func:`training.search_targets.generate` for ``--games`` games of
    ``ismcts:--simulations,root=tree`` in one process and in two (``--shard-games`` games a
    shard; each measured into a fresh directory, one then two, ``--repeats`` times).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.base import GameView  # noqa: E402
from tablegym.games import observation_of, rules_of  # noqa: E402
from training.registry import make_agent  # noqa: E402


def positions(game: str, count: int, seed: int) -> list[tuple]:
    """``count`` decisions (view, obs, mask) from random play, more than one legal move each."""
    rules, encode = rules_of(game), observation_of(game).encode
    config = rules.make_config(num_players=4)
    rng = np.random.default_rng(seed)
    found: list[tuple] = []
    while len(found) < count:
        state = rules.initial_state(config, rng)
        while not rules.is_terminal(state) and len(found) < count:
            legal = rules.legal_actions(state)
            if len(legal) > 1 and rng.random() < 0.2:
                mask = np.zeros(rules.NUM_ACTIONS, dtype=np.int8)
                mask[list(legal)] = 1
                seat = state.to_play
                found.append((GameView(rules, config, state, seat), encode(state, seat), mask))
            state = rules.apply_action(state, legal[int(rng.integers(len(legal)))], rng)
    return found


def bench_search(args: argparse.Namespace) -> None:
    n = args.simulations
    specs = [f"ismcts:{n},root=tree"] + [
        f"ismcts:{n},prior={args.prior},value_weight={w},batch={b}"
        for w, b in ((1.0, 8), (0.5, 8), (1.0, 1), (1.0, 32))
    ]
    found = positions(args.game, args.positions, args.seed)
    spent = {s: [0.0, 0] for s in specs}
    for _ in range(args.repeats):
        for spec in specs:
            agent = make_agent(spec, args.game, seed=0)
            for view, obs, mask in found:
                t0 = time.process_time()
                agent.act(obs, mask, view)
                spent[spec][0] += time.process_time() - t0
                spent[spec][1] += agent.last_simulations
    for spec, (seconds, sims) in spent.items():
        print(f"{spec:70s} {sims / seconds:9.0f} simulations/s  {seconds / sims * 1e6:7.1f} µs")


def bench_workers(args: argparse.Namespace) -> None:
    from training.search_targets import generate

    spec = f"ismcts:{args.simulations},root=tree"
    for _ in range(args.repeats):
        for workers in (1, 2):
            with tempfile.TemporaryDirectory() as out:
                t0 = time.monotonic()
                data, cost = generate(args.game, {"num_players": 4}, spec, args.games, args.seed,
                                      out, workers, args.shard_games, progress=False)  # fmt: skip
                wall = time.monotonic() - t0
            print(f"workers={workers}: {args.games} games, {len(data)} decisions, {wall:.1f} s "
                  f"wall, {cost['cpu_seconds']:.1f} s CPU in the games")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", nargs="+", default=["search", "workers"])
    parser.add_argument("--game", default="kingup")
    parser.add_argument("--prior", default="ppo:kingup")
    parser.add_argument("--simulations", type=int, default=300)
    parser.add_argument("--positions", type=int, default=20)
    parser.add_argument("--games", type=int, default=12)
    parser.add_argument("--shard-games", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=20261127)
    args = parser.parse_args()
    if "search" in args.parts:
        bench_search(args)
    if "workers" in args.parts:
        bench_workers(args)


if __name__ == "__main__":
    main()
