"""Training throughput of RLlib (``train_rllib.py``, 0/1/2 env runners) beside ``train.py``,
on one game, measured in one run on this machine.

Usage::

    python benchmarks/bench_rllib.py [--game kingup] [--iterations 6] [--repeats 1]
                                     [--steps 8192 24576] [--runners 0 1 2]

Both trainers use the same network (256, 256), minibatch (256), epochs (5) and a batch of
2048 decisions per update; warm start and evaluation are off. Units:

* ``env steps``: decisions of any seat played in the games (a 4-player game's every move);
* ``samples``: decisions the update learns from. ``train.py`` learns from one seat per
  episode (the others are opponents it plays in batch); ``train_rllib.py`` from every seat
  mapped to ``main`` (one seat always, each other seat with chance 1 - opponent share).

``train.py`` is timed at two step counts; its *marginal* rate (extra samples / extra seconds)
cancels start-up. ``train_rllib.py`` reports each iteration's wall time; its rate is over
the iterations after the first (which builds the env runners' modules and warms up). Rounds
are interleaved (train.py low and high, then RLlib with each runner count) so that drift of
the shared machine's speed hits all alike. The RLlib rows also give the sampling and update
times of its last iteration (RLlib's smoothed timers), from which the report works out the
per-runner sampling rate and the learner's rate: what a cluster can and cannot add.
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
COMMON = {"hidden": "256,256", "minibatch": 256, "epochs": 5, "batch": 2048}


def run(cmd: list[str]) -> float:
    """Seconds a command takes; its output is shown only if it fails."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.perf_counter() - started


def train_py(game: str, steps: int, out: Path) -> float:
    """Seconds of a train.py run of ``steps`` learner samples (4 envs x 512 = 2048 a rollout)."""
    return run([
        sys.executable, "training/train.py", "--game", game, "--timesteps", str(steps),
        "--warm-start", "0", "--eval-games", "0", "--no-progress", "--max-minutes", "0",
        "--n-envs", "4", "--n-steps", "512", "--batch-size", str(COMMON["minibatch"]),
        "--n-epochs", str(COMMON["epochs"]), "--net-arch", COMMON["hidden"], "--out", str(out),
    ])  # fmt: skip


def train_rllib(game: str, runners: int, iterations: int, out: Path) -> dict:
    """Steady-state rates of a train_rllib.py run with ``runners`` env runners."""
    seconds = run([
        sys.executable, "training/train_rllib.py", "--game", game, "--iterations",
        str(iterations), "--num-env-runners", str(runners), "--train-batch-size",
        str(COMMON["batch"]), "--minibatch-size", str(COMMON["minibatch"]), "--num-epochs",
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
    raw: dict = {"train.py": {s: [] for s in args.steps}, "rllib": {r: [] for r in args.runners}}
    for rep in range(args.repeats):
        for steps in args.steps:
            t = train_py(args.game, steps, scratch / f"t{rep}_{steps}")
            raw["train.py"][steps].append(t)
            print(f"train.py {steps} samples: {t:.1f}s", flush=True)
        for runners in args.runners:
            out = scratch / f"r{rep}_{runners}"
            res = train_rllib(args.game, runners, args.iterations, out)
            raw["rllib"][runners].append(res)
            print(f"rllib {runners} runners: {json.dumps(res)}", flush=True)
    return raw


def report(raw: dict, args: argparse.Namespace) -> str:
    """The table, and the cluster arithmetic."""
    low, high = args.steps
    t_low = statistics.median(raw["train.py"][low])
    t_high = statistics.median(raw["train.py"][high])
    ours = (high - low) / (t_high - t_low)
    lines = [
        f"load average {raw['load'][0]:.1f} before, {raw['load'][1]:.1f} after",
        f"game {args.game}, {os.cpu_count()} CPUs, batch {COMMON['batch']}, "
        f"minibatch {COMMON['minibatch']}, epochs {COMMON['epochs']}, net {COMMON['hidden']}",
        "",
        "| trainer | env runners | samples/s | env steps/s | vs train.py (samples) |",
        "|---|---:|---:|---:|---:|",
        f"| train.py (marginal, {low}->{high} samples) | - | {ours:,.0f} | - | 1.00 |",
    ]
    per_runner = learner = None
    for runners, results in raw["rllib"].items():
        samples = statistics.median(r["samples_per_s"] for r in results)
        steps = statistics.median(r["env_steps_per_s"] for r in results)
        lines.append(
            f"| train_rllib.py | {runners} | {samples:,.0f} | {steps:,.0f} | {samples / ours:.2f} |"
        )
        # One remote runner on its own core gives the per-runner rate a cluster node would
        # see per CPU; more runners here only share this machine's two cores.
        if runners == 1:
            share = samples / steps  # learner samples per env step
            per_runner = statistics.median(r["batch"] / r["sample_seconds"] for r in results)
            learner = statistics.median(r["batch"] * share / r["learn_seconds"] for r in results)
    if per_runner and learner:
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
            # Iteration time per sample = 1/(R*r*share) + 1/L; solve for R*r at rate `ours`.
            need = 1 / (1 / ours - 1 / learner)  # samples/s the runners together must give
            total = need / (samples / steps)
            lines.append(
                f"To beat train.py the env runners together must sample {total:,.0f} env "
                f"steps/s, i.e. {total / per_runner:.1f} runners of this speed."
            )
    return "\n".join(lines)


def main() -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="kingup", choices=("kingup", "updown", "kdk"))
    parser.add_argument("--iterations", type=int, default=6, help="RLlib iterations per run")
    parser.add_argument("--steps", type=int, nargs=2, default=[8192, 24576])
    parser.add_argument("--runners", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--json", help="also write the raw numbers here")
    args = parser.parse_args()
    before = os.getloadavg()[0]  # the machine is shared: say how busy it was
    with tempfile.TemporaryDirectory() as scratch:
        raw = measure(args, Path(scratch))
    raw["load"] = (before, os.getloadavg()[0])
    print(report(raw, args))
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
