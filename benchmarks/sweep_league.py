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
Markdown table; ``--out FILE.json`` gets every number, rewritten after each config, and
``FILE.png``, the three measures side by side with their intervals. ``--resume`` keeps the rows of
an existing ``--out`` measured with the same settings and runs only the configs it lacks. Every
config is checked against ``train.py``'s options before anything runs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(ROOT))

from tablegym.files import write_atomic, write_json_atomic  # noqa: E402
from tablegym.games import GAMES, spec_of  # noqa: E402

SHORT = {"ent": "ent-coef", "clip": "clip-range"}


def flags(config: str) -> list[str]:
    """``ent=0.05,clip=0.1`` -> ``["--ent-coef", "0.05", "--clip-range", "0.1"]``."""
    out = []
    for part in filter(None, config.split(",")):
        key, _, value = part.partition("=")
        out += [f"--{SHORT.get(key, key.replace('_', '-'))}", value]
    return out


def config_error(game: str, config: str) -> str | None:
    """Why ``train.py`` would refuse ``config`` (its own message), or None."""
    from training.train import parse_args

    if any("=" not in part for part in filter(None, config.split(","))):
        return "expected KEY=VALUE pairs separated by commas"
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            parse_args(["--game", game, *flags(config)])
    except SystemExit:
        return said.getvalue().strip().splitlines()[-1].split("error: ", 1)[-1]
    except ValueError as err:
        return str(err)
    return None


def run(command: list[str], config: str) -> None:
    """Run one step of a config; RuntimeError with the tool's last words if it fails."""
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"{config}: {Path(command[1]).name} exited {done.returncode}: {last}")


def run_config(args: argparse.Namespace, config: str) -> dict[str, Any]:
    """Train, evaluate and probe one config; its row."""
    from training.evaluate import evaluate

    name = config.replace("=", "").replace(",", "_")
    out = args.dir / f"{args.game}_{name}"
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
        str(out),
        "--overwrite",
        "--no-progress",
        "--workers",
        str(args.workers),
        *flags(config),
    ]
    run(train, config)
    policy = f"ppo:{out / 'checkpoint.zip'}"
    n = spec_of(args.game).default_players
    row: dict[str, Any] = {"config": config, "run": str(out)}
    summary = json.loads((out / "summary.json").read_text())
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
    probe_out = out / "probe.json"
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
    run(probe, config)
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


# The settings a row depends on: --resume keeps a row only where they are the same.
SETTINGS = ("game", "minutes", "probe_minutes", "games", "seed", "eval_seed", "workers")


def kept_rows(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The rows of ``--out`` that ``--resume`` keeps, by config."""
    if not (args.resume and args.out and args.out.exists()):
        return {}
    old = json.loads(args.out.read_text())
    if any(old["args"].get(key) != getattr(args, key) for key in SETTINGS):
        return {}
    return {row["config"]: row for row in old["rows"] if row["config"] in args.configs}


def draw(rows: list[dict[str, Any]], title: str) -> Any:
    """The three measures per config (vs heuristics, vs random players, the probe), with 95%
    intervals and the fair share."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4 + 1.8 * len(rows), 4), layout="tight")
    panels = fig.subplots(1, len(MEASURES), sharey=True)
    for ax, (key, name) in zip(panels, MEASURES.items()):
        values = [r[key] for r in rows]
        below = [v - r[f"{key}_ci"][0] for v, r in zip(values, rows)]
        above = [r[f"{key}_ci"][1] - v for v, r in zip(values, rows)]
        ax.errorbar(range(len(rows)), values, yerr=[below, above], fmt="o", capsize=4)
        ax.axhline(rows[0]["fair"], color="grey", linestyle="--", label="fair share")
        ax.set_xticks(range(len(rows)), [r["config"].replace(",", "\n") for r in rows])
        ax.set_xlim(-0.5, len(rows) - 0.5)
        ax.set_title(name)
    panels[0].set_ylabel("win rate")
    panels[0].legend()
    fig.suptitle(title)
    return fig


MEASURES = {
    "vs_heuristic": "the bot vs heuristics",
    "vs_random": "the bot vs random players",
    "probe": "a fresh learner vs the bot",
}


def save(args: argparse.Namespace, rows: dict[str, dict[str, Any]]) -> None:
    """``--out`` and its plot, the configs measured so far in the order given."""
    ordered = [rows[c] for c in args.configs if c in rows]
    data = {"args": vars(args) | {"dir": str(args.dir), "out": str(args.out)}, "rows": ordered}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.out, data)
    png = args.out.with_suffix(".png")
    n = spec_of(args.game).default_players
    title = f"{args.game}, {n} players: league runs of {args.minutes:g} minutes"
    write_atomic(png, lambda tmp: draw(ordered, title).savefig(tmp, dpi=110))


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
    p.add_argument("--resume", action="store_true", help="keep --out's rows of the same settings")
    args = p.parse_args()
    for config in args.configs:
        if why := config_error(args.game, config):
            sys.exit(f"error: config {config!r}: {why}")
    if args.resume and not args.out:
        sys.exit("error: --resume needs --out")
    rows = kept_rows(args)
    print("| config | samples | vs heuristic | vs random | probe (gain) |\n|---|---|---|---|---|")
    for row in rows.values():
        print(markdown_row(row), "(kept)", flush=True)
    lock = threading.Lock()

    def measure(config: str) -> None:
        row = run_config(args, config)
        with lock:
            rows[config] = row
            if args.out:
                save(args, rows)

    todo = [c for c in args.configs if c not in rows]
    try:
        with ThreadPoolExecutor(args.jobs) as pool:
            list(pool.map(measure, todo))
    except RuntimeError as err:
        sys.exit(f"error: {err}")


if __name__ == "__main__":
    main()
