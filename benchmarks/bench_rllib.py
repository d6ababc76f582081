"""Training throughput of RLlib (``train_rllib.py``, 0/1/2 env runners) beside ``train.py``,
on one game, measured in one run on this machine.

Usage::

    python benchmarks/bench_rllib.py [--game kingup] [--iterations 6] [--repeats 2]
                                     [--samples 16384] [--runners 0 1 2]

Both trainers use the same network (256, 256), minibatch (256) and epochs (4), about 2,000
learner samples per update (``train.py --n-steps 2048``; RLlib ``--train-batch-size 3200`` env
steps, of which about 62% are ``main``'s), warm start and evaluation off. Units:

* ``env steps``: decisions of any seat played in the games (every move of a 4-player game);
* ``samples``: decisions the update learns from (``train.py``: every seat its current policy
  holds; ``train_rllib.py``: every seat mapped to ``main``).

``train.py`` reports its own samples/s over its learning time (``summary.json``; start-up
excluded) and its decisions by kind, from which its env steps/s follow. ``train_rllib.py``
reports each iteration's wall time; its rate is over the iterations after the first (which
builds the env runners' modules and warms up). Rounds are interleaved (train.py, then RLlib with
each runner count) so that drift of the shared machine's speed hits all alike, and the load
average before and after is printed: other jobs share these two cores. The one-runner rows
also give RLlib's sampling and update times (its smoothed timers), from which the report works
out the per-runner sampling rate and the learner's rate: what a cluster can and cannot add.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMON = {"hidden": "256,256", "minibatch": 256, "epochs": 4, "samples": 2048, "rllib_batch": 3200}


def run(cmd: list[str]) -> float:
    """Seconds a command takes; its output is shown only if it fails."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.perf_counter() - started


def train_py(game: str, samples: int, out: Path) -> dict:
    """train.py's samples/s and env steps/s over its learning time (its ``summary.json``)."""
    run([
        sys.executable, "training/train.py", "--game", game, "--timesteps", str(samples),
        "--warm-start", "0", "--eval-games", "0", "--no-progress", "--max-minutes", "0",
        "--n-steps", str(COMMON["samples"]), "--batch-size", str(COMMON["minibatch"]),
        "--n-epochs", str(COMMON["epochs"]), "--net-arch", COMMON["hidden"], "--out", str(out),
    ])  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    rate = summary["samples_per_second"]
    decisions = summary["decisions"]
    return {
        "samples_per_s": rate,
        "env_steps_per_s": rate * sum(decisions.values()) / decisions["self"],
        "update_share": summary["time_split"]["update"],
    }


def train_rllib(game: str, runners: int, iterations: int, out: Path) -> dict:
    """Steady-state rates of a train_rllib.py run with ``runners`` env runners."""
    seconds = run([
        sys.executable, "training/train_rllib.py", "--game", game, "--iterations",
        str(iterations), "--num-env-runners", str(runners), "--train-batch-size",
        str(COMMON["rllib_batch"]), "--minibatch-size", str(COMMON["minibatch"]), "--num-epochs",
        str(COMMON["epochs"]), "--hidden", COMMON["hidden"], "--eval-games", "0",
        "--snapshot-every", "2", "--no-progress", "--out", str(out),
    ])  # fmt: skip
    rows = [json.loads(line) for line in (out / "progress.jsonl").read_text().splitlines()]
    steady = rows[1:]
    wall = sum(r["seconds"] for r in steady)
    env_steps = rows[-1]["env_steps"] - rows[0]["env_steps"]
    return {
        "env_steps_per_s": env_steps / wall,
        "samples_per_s": sum(r["main_steps"] for r in steady) / wall,
        "sample_seconds": rows[-1]["sample_seconds"],
        "learn_seconds": rows[-1]["learn_seconds"],
        "batch": env_steps / len(steady),
        "process_seconds": seconds,
    }


def measure(args: argparse.Namespace, scratch: Path) -> dict:
    """All rounds, interleaved; raw numbers per trainer."""
    raw: dict = {"train.py": [], "rllib": {r: [] for r in args.runners}}
    for rep in range(args.repeats):
        res = train_py(args.game, args.samples, scratch / f"t{rep}")
        raw["train.py"].append(res)
        print(f"train.py: {json.dumps(res)}", flush=True)
        for runners in args.runners:
            res = train_rllib(args.game, runners, args.iterations, scratch / f"r{rep}_{runners}")
            raw["rllib"][runners].append(res)
            print(f"rllib {runners} runners: {json.dumps(res)}", flush=True)
    return raw


def _median(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def _spread(rows: list[dict], key: str) -> str:
    """Median, and the range over rounds when there are several."""
    values = sorted(r[key] for r in rows)
    text = f"{statistics.median(values):,.0f}"
    return text + (f" ({values[0]:,.0f}–{values[-1]:,.0f})" if len(values) > 1 else "")


def report(raw: dict, args: argparse.Namespace) -> str:
    """The table, and the cluster arithmetic."""
    ours = _median(raw["train.py"], "samples_per_s")
    lines = [
        f"load average {raw['load'][0]:.1f} before, {raw['load'][1]:.1f} after; "
        f"medians of {args.repeats} rounds (range)",
        f"game {args.game}, {os.cpu_count()} CPUs, minibatch {COMMON['minibatch']}, "
        f"epochs {COMMON['epochs']}, net {COMMON['hidden']}",
        "",
        "| trainer | env runners | samples/s | env steps/s | samples/s vs train.py |",
        "|---|---:|---:|---:|---:|",
        f"| train.py | - | {_spread(raw['train.py'], 'samples_per_s')} | "
        f"{_spread(raw['train.py'], 'env_steps_per_s')} | 1.00 |",
    ]
    per_runner = learner = share = None
    for runners, results in raw["rllib"].items():
        samples = _median(results, "samples_per_s")
        lines.append(
            f"| train_rllib.py | {runners} | {_spread(results, 'samples_per_s')} | "
            f"{_spread(results, 'env_steps_per_s')} | {samples / ours:.2f} |"
        )
        # One remote runner on its own core gives the per-runner rate a cluster node would
        # see per CPU; more runners here only share this machine's two cores.
        if runners == 1:
            share = samples / _median(results, "env_steps_per_s")  # samples per env step
            per_runner = statistics.median(r["batch"] / r["sample_seconds"] for r in results)
            learner = statistics.median(r["batch"] * share / r["learn_seconds"] for r in results)
    if per_runner and learner and share:
        lines += [
            "",
            f"One remote env runner samples {per_runner:,.0f} env steps/s; the update (one CPU "
            f"learner) consumes {learner:,.0f} samples/s (RLlib's smoothed timers).",
        ]
        if learner <= ours:
            lines.append(
                f"The update alone is slower than train.py end to end ({ours:,.0f} samples/s): "
                "no number of env runners makes synchronous PPO on a CPU learner beat this "
                "machine; a faster learner (GPU, or several learners) is needed first."
            )
        else:
            # Seconds per sample = 1/(runners' samples/s) + 1/learner; solve for train.py's rate.
            need = 1 / (1 / ours - 1 / learner) / share  # env steps/s all runners together
            lines.append(
                f"To beat train.py the env runners together must sample {need:,.0f} env "
                f"steps/s, i.e. {need / per_runner:.1f} runners of this speed."
            )
    return "\n".join(lines)


def main() -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="kingup", choices=("kingup", "updown", "kdk"))
    parser.add_argument("--iterations", type=int, default=6, help="RLlib iterations per run")
    parser.add_argument("--samples", type=int, default=16384, help="train.py samples a run")
    parser.add_argument("--runners", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", help="also write the raw numbers here")
    args = parser.parse_args()
    before = os.getloadavg()[0]  # the machine is shared: say how busy it was
    with tempfile.TemporaryDirectory() as scratch:
        raw = measure(args, Path(scratch))
    raw["load"] = (before, os.getloadavg()[0])
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=1, default=str) + "\n")
    print(report(raw, args))


if __name__ == "__main__":
    main()
