"""Tournaments of heuristics: games per CPU second on ``raw_env`` against the batched engine.

Usage: ``python benchmarks/bench_evaluate.py [--games kdk] [--rounds 3] [--raw-games 20]
[--batch-games 400] [--batch 256]``

For each game at its default table, a seat-rotated tournament of heuristics only
(``training.evaluate.evaluate``), in this process: on ``raw_env`` (``workers=1``, the agents'
``act`` one decision at a time) and in batch (``batch=256``: the batched engine, the
heuristics' ``act_batch`` over all waiting rows). Rounds alternate the two, and each figure is
games per second of this process's CPU time (a shared machine drifts between measurements);
the ratio is batched over ``raw_env`` in the same round. Agent construction is left out of
the timing. Goal (issue 33): at least 20x for every game.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tablegym.games import GAMES, spec_of  # noqa: E402
from training.evaluate import evaluate  # noqa: E402
from training.registry import make_agent  # noqa: E402

GOAL = 20  # x raw_env per CPU second


def games_per_cpu_second(game: str, games: int, seed: int, batch: int, made: dict) -> float:
    """Games per CPU second of one tournament of heuristics."""
    n = spec_of(game).default_players
    start = time.process_time()
    evaluate(game, ["heuristic"] * n, games, seed, batch=batch, made=made)
    return games / (time.process_time() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", nargs="+", default=list(GAMES), help="which games")
    parser.add_argument("--rounds", type=int, default=3, help="alternating repeats")
    parser.add_argument("--raw-games", type=int, default=20, help="games per raw_env run")
    parser.add_argument("--batch-games", type=int, default=400, help="games per batched run")
    parser.add_argument("--batch", type=int, default=256, help="games played at a time")
    args = parser.parse_args()
    unknown = [g for g in args.games if g not in GAMES]
    if unknown or min(args.rounds, args.raw_games, args.batch_games, args.batch) < 1:
        counts = (args.rounds, args.raw_games, args.batch_games, args.batch)
        parser.error(f"--games from {sorted(GAMES)}, counts >= 1; got {args.games}, {counts}")
    print(f"{'game':<8}{'round':>6}{'raw_env games/CPU-s':>22}{'batched':>10}{'x raw_env':>11}")
    for game in args.games:
        n = spec_of(game).default_players
        made = {"heuristic": make_agent("heuristic", game)}
        evaluate(game, ["heuristic"] * n, args.batch, 1, batch=args.batch, made=made)  # compile
        ratios = []
        for k in range(args.rounds):
            raw = games_per_cpu_second(game, args.raw_games, 100 + k, 0, made)
            batched = games_per_cpu_second(game, args.batch_games, 200 + k, args.batch, made)
            ratios.append(batched / raw)
            print(f"{game:<8}{k + 1:>6}{raw:>22,.1f}{batched:>10,.1f}{batched / raw:>11.1f}")
        verdict = "met" if min(ratios) >= GOAL else "MISSED"
        print(f"{'':<8}goal >= {GOAL}x raw_env per CPU-s in every round: {verdict}")
    print(f"\n(players: {', '.join(f'{g} {spec_of(g).default_players}' for g in args.games)})")


if __name__ == "__main__":
    main()
