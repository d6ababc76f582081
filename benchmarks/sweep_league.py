"""Entropy and clip sweep of the league trainer, measured by the crosstable and the probe.

Usage (from the repository root)::

    python benchmarks/sweep_league.py --game kingup --minutes 5 --probe-minutes 2.5 \\
        --configs ent=0.01,clip=0.2 ent=0.05,clip=0.1 --jobs 2 --out runs/sweep/kingup.json

Each config (``KEY=VALUE`` pairs of ``train.py`` options, with ``ent`` and ``clip`` short for
``--ent-coef`` and ``--clip-range``; ``anneal=ent`` anneals the bonus) trains a league run of
``--minutes`` on every table size of the game (seed ``--seed``), then its final policy is
measured on seeds used in neither training nor selection (``--eval-seed``): its win rate at the
game's default table size against heuristics and against random players (``--games`` games
each, seats rotated, duplicate deals), and the best-response probe (``training/exploit.py``,
a fresh learner given ``--probe-minutes`` CPU minutes against it). ``--jobs`` configs run at
once, each training run with ``--workers`` processes (default 1: one core each). Prints a
Markdown table and writes every number to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(ROOT))

from tablegym.games import GAMES, spec_of  # noqa: E402

SHORT = {"ent": "ent-coef", "clip": "clip-range"}


def flags(config: str) -> list[str]:
    """``ent=0.05,clip=0.1`` -> ``["--ent-coef", "0.05", "--clip-range", "0.1"]``."""
    out = []
    for part in filter(None, config.split(",")):
        key, _, value = part.partition("=")
        out += [f"--{SHORT.get(key, key.replace('_', '-'))}", value]
    return out


def run_config(args: argparse.Namespace, config: str) -> dict[str, Any]:
    """Train, evaluate and probe one config; its row."""
    from training.evaluate import evaluate

    name = config.replace("=", "").replace(",", "_")
    run = args.dir / f"{args.game}_{name}"
    sizes = ",".join(map(str, spec_of(args.game).player_counts))
    train = [
        sys.executable,
        str(ROOT / "training" / "train.py"),
        "--game",
        args.game,
        "--num-players",
        sizes,
        "--max-minutes",
        str(args.minutes),
        "--seed",
        str(args.seed),
        "--out",
        str(run),
        "--overwrite",
        "--no-progress",
        "--workers",
        str(args.workers),
        *flags(config),
    ]
    subprocess.run(train, check=True, capture_output=True, cwd=ROOT)
    policy = f"ppo:{run / 'checkpoint.zip'}"
    n = spec_of(args.game).default_players
    row: dict[str, Any] = {"config": config, "run": str(run)}
    summary = json.loads((run / "summary.json").read_text())
    row["samples"] = summary["steps"]
    for opponent in ("heuristic", "random"):
        result = evaluate(
            args.game,
            [policy] + [opponent] * (n - 1),
            args.games,
            args.eval_seed,
            options={"num_players": n},
            batch=256,
        )
        row[f"vs_{opponent}"] = result["agents"][0]["win_rate"]
        row[f"vs_{opponent}_ci"] = result["agents"][0]["win_rate_ci"]
    probe_out = run / "probe.json"
    probe = [
        sys.executable,
        str(ROOT / "training" / "exploit.py"),
        "--game",
        args.game,
        "--target",
        policy,
        "--cpu-minutes",
        str(args.probe_minutes),
        "--eval-seed",
        str(args.eval_seed),
        "--eval-games",
        str(args.games),
        "--curve-points",
        "0",
        "--out",
        str(probe_out),
        "--no-progress",
    ]
    subprocess.run(probe, check=True, capture_output=True, cwd=ROOT)
    result = json.loads(probe_out.read_text())
    row["probe"] = result["win_rate"]
    row["probe_ci"] = result["win_rate_ci"]
    row["probe_gain"] = result["gain"]
    row["fair"] = 1 / n
    print(markdown_row(row), flush=True)
    return row


def markdown_row(r: dict[str, Any]) -> str:
    def cell(key: str) -> str:
        low, high = r[f"{key}_ci"]
        return f"{r[key]:.3f} [{low:.3f}, {high:.3f}]"

    return (
        f"| {r['config']} | {r['samples']:,} | {cell('vs_heuristic')} | {cell('vs_random')} "
        f"| {cell('probe')} ({r['probe_gain']:+.3f}) |"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--game", required=True, choices=list(GAMES))
    p.add_argument("--configs", nargs="+", required=True)
    p.add_argument("--minutes", type=float, default=5.0, help="training minutes per config")
    p.add_argument("--probe-minutes", type=float, default=2.5)
    p.add_argument("--games", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-seed", type=int, default=20261128)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument(
        "--workers", type=int, default=1, help="processes of each training run (train.py --workers)"
    )
    p.add_argument("--dir", type=Path, default=ROOT / "runs" / "sweep")
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    print("| config | samples | vs heuristic | vs random | probe (gain) |\n|---|---|---|---|---|")
    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda c: run_config(args, c), args.configs))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            json.dumps(
                {"args": vars(args) | {"dir": str(args.dir), "out": str(args.out)}, "rows": rows},
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
