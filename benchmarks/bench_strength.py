"""Strength of a trained bot at every table size, against every opponent kind of the goals.

Usage (from the repository root)::

    python benchmarks/bench_strength.py --game kingup --bot ppo:kingup --seed 20261127
    python benchmarks/bench_strength.py --game updown --bot ppo:runs/updown/best.zip \\
        --sizes 2 --games 400 --out runs/strength_updown.json
    python benchmarks/bench_strength.py --game kingup --bot ppo:kingup --lineups floor

For each table size the bot was trained at (``--sizes`` to choose), seat-rotated batched
tournaments (:func:`training.evaluate.evaluate` with duplicate deals) of ``--games`` games on
``--seed``, a seed used in neither training nor selection:

``heuristic``   the bot against heuristics in every other seat
``random``      the bot against random players, beside the heuristic's own rate in that
                lineup (the goal: at least the heuristic's rate)
``mixed1``      the bot, one heuristic, random players in the other seats
``mixed_half``  the bot, heuristics in half the other seats (rounded up), random players in
                the rest
``floor``       the heuristic alone against the bot in every other seat: the probe's floor
                (a best response wins at least what this fixed player wins)

Each line gives the bot's win rate with its 95% Wilson interval, the fair share and the gain
over it. ``--out FILE.json`` writes every result.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tablegym.games import GAMES, spec_of  # noqa: E402
from training.evaluate import evaluate  # noqa: E402


def lineups(bot: str, n: int) -> dict[str, list[str]]:
    """The lineups of one table size, the bot first."""
    half = n // 2  # of the n - 1 other seats: 2 of 3 at 4 players, 2 of 4 at 5
    return {
        "heuristic": [bot] + ["heuristic"] * (n - 1),
        "random": [bot] + ["random"] * (n - 1),
        "heuristic_vs_random": ["heuristic"] + ["random"] * (n - 1),
        "mixed1": [bot, "heuristic"] + ["random"] * (n - 2),
        "mixed_half": [bot] + ["heuristic"] * half + ["random"] * (n - 1 - half),
        "floor": ["heuristic"] + [bot] * (n - 1),
    }


LINEUPS = tuple(lineups("bot", 4))


def trained_sizes(game: str, bot: str) -> list[int]:
    """The table sizes a ``ppo:`` bot was trained at (every size for other specs)."""
    if not bot.startswith("ppo:"):
        return list(spec_of(game).player_counts)
    from training.bots import builtin_bot_path
    from training.checkpoints import read_meta

    name = bot[4:]
    path = builtin_bot_path(name) if name in GAMES else Path(name)
    meta = read_meta(path)
    return list(meta.get("player_counts") or [meta["options"]["num_players"]])


def measure(
    game: str, bot: str, n: int, games: int, seed: int, only: list[str] | None = None
) -> dict[str, Any]:
    """Every lineup at ``n`` players (or those named in ``only``); the rate of the lineup's
    first seat in each: the bot's, or the heuristic's."""
    out = {}
    for name, lineup in lineups(bot, n).items():
        if only and name not in only:
            continue
        if (n == 2 and name.startswith("mixed")) or (n == 3 and name == "mixed_half"):
            continue  # the same lineup as a plain or the one-heuristic table
        result = evaluate(game, lineup, games, seed, options={"num_players": n}, batch=256)
        row = result["agents"][0]
        out[name] = {
            "win_rate": row["win_rate"],
            "ci": row["win_rate_ci"],
            "games": result["games"],
            "fair": result["fair_share"],
            "gain": row["win_rate"] - result["fair_share"],
        }
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--game", required=True, choices=list(GAMES))
    p.add_argument("--bot", required=True, help="the bot's agent spec, e.g. ppo:kingup")
    p.add_argument("--sizes", type=int, nargs="+", help="table sizes (default: the bot's)")
    p.add_argument("--games", type=int, default=2000, help="games per lineup")
    p.add_argument("--seed", type=int, default=20261127, help="an unseen seed")
    p.add_argument("--out", type=Path, help="write the results as JSON")
    p.add_argument("--lineups", nargs="+", choices=LINEUPS, help="lineups to play (default: all)")
    args = p.parse_args(argv)
    sizes = args.sizes or trained_sizes(args.game, args.bot)
    results: dict[str, Any] = {"game": args.game, "bot": args.bot, "seed": args.seed, "sizes": {}}
    for n in sizes:
        started = time.monotonic()
        rows = measure(args.game, args.bot, n, args.games, args.seed, args.lineups)
        results["sizes"][n] = rows
        for name, r in rows.items():
            low, high = r["ci"]
            print(
                f"{args.game} {n}p {name:<20} {r['win_rate']:.3f} [{low:.3f}, {high:.3f}] "
                f"fair {r['fair']:.3f} gain {r['gain']:+.3f} ({r['games']} games)",
                flush=True,
            )
        print(f"  ({time.monotonic() - started:.0f} s)", flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
