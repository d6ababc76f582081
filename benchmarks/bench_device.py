"""Training throughput on a GPU against the CPU: ``train.py``'s samples/s with ``--device cuda``
beside ``--device cpu``, measured in one run on one machine.

Usage::

    python benchmarks/bench_device.py [--games kingup updown kdk] [--minutes 0.5]
                                      [--repeats 1] [--out results.json]

Per game, three configurations of ``training/train.py`` (the league's default opponent mix,
warm start and evaluation off), each for ``--minutes`` of wall time:

* ``cpu``: ``--device cpu`` with the CPU sizes (256 games, 8,192 samples an update, minibatch
  1,024), what a run on a laptop does;
* ``cpu-large``: ``--device cpu`` with the GPU sizes (``training.train.GPU_SIZES``), to tell the
  effect of the batch sizes from that of the device;
* ``cuda``: ``--device cuda`` (the GPU sizes are its defaults).

The rate is the learner's samples per second of the learning phase (``summary.json``; start-up
and numba's compilation excluded; run the script once to fill numba's cache, or let the first
round do it). Rounds are interleaved (every configuration of every game, then again) so that
drift of the machine's speed hits all alike. Each configuration's time split says what limits
it. The JSON and a bar chart (``--out`` with ``.png``) hold the results.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from training.train import GPU_SIZES  # noqa: E402

GAMES = ("kingup", "updown", "kdk")
LARGE = [arg for k, v in GPU_SIZES.items() for arg in (f"--{k.replace('_', '-')}", str(v))]
CONFIGS = {"cpu": ["--device", "cpu"], "cpu-large": ["--device", "cpu", *LARGE],
           "cuda": ["--device", "cuda"]}  # fmt: skip


def run_once(game: str, config: str, minutes: float, scratch: Path) -> dict:
    """One training run; its summary (samples/s and time split)."""
    out = scratch / f"{game}-{config}"
    cmd = [
        sys.executable, "training/train.py", "--game", game, "--max-minutes", str(minutes),
        "--warm-start", "0", "--eval-games", "0", "--no-progress", "--overwrite",
        "--out", str(out), *CONFIGS[config],
    ]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return json.loads((out / "summary.json").read_text())


def measure(args: argparse.Namespace) -> dict:
    """Rates and time splits of every configuration, rounds interleaved."""
    results: dict = {g: {c: [] for c in args.configs} for g in args.games}
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(args.repeats):
            for game in args.games:
                for config in args.configs:
                    summary = run_once(game, config, args.minutes, Path(scratch))
                    results[game][config].append(
                        {"samples_per_second": summary["samples_per_second"],
                         "time_split": summary["time_split"], "steps": summary["steps"]}
                    )  # fmt: skip
                    rate = summary["samples_per_second"]
                    print(f"{game:7s} {config:10s} {rate:10.0f} samples/s", flush=True)
    return results


def report(results: dict) -> None:
    """The table: median rate per configuration, the ratio to ``cpu``, the top time shares."""
    print(f"\n{'game':8s} {'config':10s} {'samples/s':>10s} {'vs cpu':>7s}  largest time shares")
    for game, configs in results.items():
        cpu = [r["samples_per_second"] for r in configs.get("cpu", [])]
        base = statistics.median(cpu) if cpu else None
        for config, runs in configs.items():
            rate = statistics.median(r["samples_per_second"] for r in runs)
            split = runs[-1]["time_split"]
            largest = sorted(split.items(), key=lambda x: -x[1])[:4]
            top = ", ".join(f"{k} {v:.2f}" for k, v in largest)
            ratio = f"{rate / base:6.2f}x" if base else "      -"
            print(f"{game:8s} {config:10s} {rate:10.0f} {ratio}  {top}")


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    games = list(results)
    configs = list(next(iter(results.values())))
    fig, ax = plt.subplots(figsize=(7, 3.5))
    width = 0.8 / len(configs)
    for i, config in enumerate(configs):
        rates = [statistics.median(r["samples_per_second"] for r in results[g][config])
                 for g in games]  # fmt: skip
        ax.bar([x + i * width for x in range(len(games))], rates, width, label=config)
    ax.set_xticks([x + width * (len(configs) - 1) / 2 for x in range(len(games))], games)
    ax.set_ylabel("learner samples / s")
    ax.set_title("train.py throughput by device")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", nargs="+", default=list(GAMES), choices=GAMES)
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--minutes", type=float, default=0.5, help="wall time of each run")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", help="JSON file for the results (and a .png beside it)")
    args = parser.parse_args()
    if "cuda" in args.configs:
        import torch

        if not torch.cuda.is_available():
            sys.exit("error: torch sees no CUDA GPU here; give --configs cpu cpu-large")
    results = measure(args)
    report(results)
    if args.out:
        out = Path(args.out)
        machine = {"cpus": os.cpu_count()}
        if "cuda" in args.configs:
            import torch

            machine["gpu"] = torch.cuda.get_device_name()
        out.write_text(json.dumps({"machine": machine, "results": results}, indent=2) + "\n")
        plot(results, out.with_suffix(".png"))


if __name__ == "__main__":
    main()
