"""Scale-out: ``train.py``'s rate as Ray collectors are added, with a CPU or a GPU learner,
beside one and two processes on two cores, measured in one run on one machine.

Usage::

    python benchmarks/bench_scale.py [--game kingup] [--collectors 1 2 4 8 15]
                                     [--devices cpu cuda] [--nodes 3] [--seconds 30]
                                     [--baselines w1 w2 w1-large] [--out scale.json]
                                     [--games-per-collector N]

What runs, in this order (each a ``training/train.py`` run, warm start and evaluation off):

1. an untimed warm-up that fills numba's cache, so that no run (and no collector) compiles;
2. the baselines, pinned to two cores (``os.sched_setaffinity``): ``w1`` one process, ``w2``
   the learner in a second process (the default on two cores), both at the CPU sizes, and
   ``w1-large`` one process at the sizes the collector runs use;
3. a Ray cluster of ``--nodes`` nodes started on this machine (``training.local_cluster``:
   each node its own process group, stopped exactly when the bench ends), holding as many
   CPUs as the most collectors asked for; then ``train.py --collectors K --ray-address ...``
   for each ``--devices`` learner and each K, at the GPU sizes (``training.train.GPU_SIZES``,
   so that each collector still gets hundreds of games at the largest K; or, with
   ``--games-per-collector N``, N games in each collector, so that a rollout's 65,536 samples
   take fewer ticks as K grows: a collector's per-tick cost is paid once a rollout whatever
   its share, which is what limited 15 collectors on the H200, ``docs/results.md``).

Each rate is the run's *steady* one (``summary.json``'s ``steady``: from the end of its first
rollout, so that start-up, the actors' imports and the pipeline's filling are left out):
samples per second of wall time and per CPU-second (the main process, its learner process and
the collectors' rollouts). A second, lower bound per CPU-second charges everything: the whole
run's samples, start-up included, per CPU-second the whole machine was busy (Ray's raylets and
GCS too; meaningful on a machine doing nothing else). The time share the learner waited for
its collectors says which side limits: near zero, the learner does; large, the collectors.
The JSON is written after every run (a bench cut short keeps what it measured), and ``--out``
with ``.png`` beside it holds the plot: samples/s against collectors, per learner device, the
baselines as lines.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from training.local_cluster import LOOPBACK, LocalCluster  # noqa: E402
from training.train import GPU_SIZES  # noqa: E402

LARGE = [arg for k, v in GPU_SIZES.items() for arg in (f"--{k.replace('_', '-')}", str(v))]
BASELINES = {"w1": ["--workers", "1"], "w2": ["--workers", "2"],
             "w1-large": ["--workers", "1", *LARGE]}  # fmt: skip


def run_once(game: str, how: list[str], seconds: float, out: Path, extra: list[str],
             cores: set[int] | None = None, start_up: float = 15.0) -> dict:  # fmt: skip
    """One training run of about ``seconds`` steady seconds (0: one rollout) after
    ``start_up`` seconds for its imports and actors; its summary. ``cores``: the CPUs it may
    use."""
    budget = ["--max-minutes", f"{(seconds + start_up) / 60:.3f}"] if seconds else []
    cmd = [
        sys.executable, "training/train.py", "--game", game, *budget, "--warm-start", "0",
        "--eval-games", "0", "--no-progress", "--overwrite", "--out", str(out), *how, *extra,
    ]  # fmt: skip
    env = {**LOOPBACK, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    pin = (lambda: os.sched_setaffinity(0, cores)) if cores else None
    machine, started = machine_cpu(), time.monotonic()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env,
                          preexec_fn=pin)  # fmt: skip
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    summary = json.loads((out / "summary.json").read_text())
    summary["machine"] = {"seconds": time.monotonic() - started, "cpu": machine_cpu() - machine}
    return summary


def machine_cpu() -> float:
    """CPU seconds the whole machine has been busy (every process: Ray's own too)."""
    times = psutil.cpu_times()
    return (
        times.user
        + times.nice
        + times.system
        + getattr(times, "irq", 0.0)
        + getattr(times, "softirq", 0.0)
    )


def row(label: str, summary: dict) -> dict:
    """What the table and the plot need from a run's summary."""
    steady = summary["steady"]
    if not steady:
        raise RuntimeError(f"{label}: the run ended within its first rollout; raise --seconds")
    split, machine = summary["time_split"], summary["machine"]
    return {
        "label": label,
        "samples_per_second": steady["samples_per_second"],
        "samples_per_cpu_second": steady["samples_per_cpu_second"],
        # The whole run (start-up included) per CPU-second of the whole machine: a lower
        # bound that also charges Ray's own processes, on a machine doing nothing else.
        "samples_per_machine_cpu_second": round(summary["steps"] / machine["cpu"], 1),
        "machine_cores_busy": round(machine["cpu"] / machine["seconds"], 2),
        "steady_samples": steady["samples"],
        "waiting_for_collectors": split.get("collectors", 0.0),
        "time_split": split,
    }


def measure(args: argparse.Namespace, scratch: Path, save: callable) -> dict:
    """Every run of the bench (see the module doc); ``save`` after each."""
    game, extra = args.game, args.train_args.split()
    result: dict = {"game": game, "baselines": {}, "collectors": {d: {} for d in args.devices}}
    say = lambda r: print(f"{r['label']:24s} {r['samples_per_second']:10.0f} samples/s "  # noqa: E731
                          f"{r['samples_per_cpu_second']:8.0f} per CPU-s "
                          f"{r['samples_per_machine_cpu_second']:8.0f} per machine CPU-s "
                          f"({r['machine_cores_busy']:.1f} cores)  waiting "
                          f"{r['waiting_for_collectors']:.2f}", flush=True)  # fmt: skip
    run_once(game, ["--workers", "1", "--timesteps", "8192"], 0, scratch / "warm-up", extra)
    cores = set(sorted(os.sched_getaffinity(0))[:2])
    for name in args.baselines:
        r = row(name, run_once(game, BASELINES[name], args.seconds, scratch / name, extra, cores))
        result["baselines"][name] = r
        say(r)
        save(result)
    if not args.collectors:
        return result
    most = max(args.collectors)
    cpus = [most // args.nodes + (i < most % args.nodes) for i in range(args.nodes)]
    with LocalCluster(cpus, logs=scratch / "ray") as cluster:
        for device in args.devices:
            for k in args.collectors:
                how = ["--collectors", str(k), "--ray-address", cluster.address, "--workers",
                       "1", "--device", device, *LARGE, *games_for(k, args)]  # fmt: skip
                label = f"{device} learner, {k} collectors"
                try:
                    summary = run_once(game, how, args.seconds, scratch / f"{device}{k}", extra,
                                       start_up=args.start_up)  # fmt: skip
                    r = result["collectors"][device][str(k)] = row(label, summary)
                except RuntimeError as err:  # the other runs still measure
                    print(f"{label}: {err}", flush=True)
                    result.setdefault("failed", {})[label] = str(err)[-3000:]
                    continue
                say(r)
                save(result)
    return result


def games_for(k: int, args: argparse.Namespace) -> list[str]:
    """``--num-games`` of a run with ``k`` collectors: ``--games-per-collector`` games in each
    (so that a rollout has fewer ticks as ``k`` grows), or none to keep ``LARGE``'s, split."""
    per = args.games_per_collector
    return ["--num-games", str(per * k)] if per else []


def plot(result: dict, path: Path) -> None:
    """Samples/s against collectors per learner device; the baselines as horizontal lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for device, rows in result["collectors"].items():
        if rows:
            ks = sorted(rows, key=int)
            ax.plot([int(k) for k in ks], [rows[k]["samples_per_second"] for k in ks], "o-",
                    label=f"{device} learner + K collectors")  # fmt: skip
    styles = {"w1": ":", "w2": "--", "w1-large": "-."}
    for name, r in result["baselines"].items():
        ax.axhline(r["samples_per_second"], ls=styles.get(name, ":"), color="grey",
                   label=f"{name}, pinned to 2 cores")  # fmt: skip
    if "w2" in result["baselines"]:
        ax.axhline(10 * result["baselines"]["w2"]["samples_per_second"], color="red", lw=0.8,
                   label="10x w2 (issue 33's GPU goal)")  # fmt: skip
    ax.set_xlabel("Ray collectors (one CPU each)")
    ax.set_ylabel("learner samples / s (steady)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"train.py scale-out, {result['game']}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default="kingup", choices=("kingup", "updown", "kdk"))
    parser.add_argument(
        "--collectors",
        nargs="*",
        type=int,
        default=[1, 2],
        help="collector counts, run in this order for each device",
    )
    parser.add_argument("--devices", nargs="+", default=["cpu"])
    parser.add_argument("--nodes", type=int, default=2, help="Ray nodes the CPUs are split over")
    parser.add_argument("--seconds", type=float, default=30.0, help="steady seconds per run")
    parser.add_argument(
        "--start-up",
        type=float,
        default=30.0,
        help="seconds a collector run gets beyond --seconds to start its actors",
    )
    parser.add_argument("--baselines", nargs="*", default=list(BASELINES), choices=BASELINES)
    parser.add_argument(
        "--games-per-collector",
        type=int,
        default=0,
        help="games each collector steps (the run's --num-games is this times K); 0: the "
        "GPU sizes' 4,096 games split over the K collectors",
    )
    parser.add_argument("--train-args", default="", help="more train.py arguments, for all runs")
    parser.add_argument("--out", type=Path, default=None, help="JSON file (a .png beside it)")
    args = parser.parse_args()
    if any(k < 1 for k in args.collectors) or args.nodes < 1 or args.seconds <= 0:
        parser.error("--collectors must be >= 1 each, --nodes >= 1 and --seconds > 0")
    if args.games_per_collector < 0:
        parser.error(f"--games-per-collector must be >= 0; got {args.games_per_collector}")
    if args.collectors and max(args.collectors) < args.nodes:
        parser.error("--nodes must be at most the most --collectors (each node >= 1 CPU)")

    def save(result: dict) -> None:
        if args.out is not None:
            args.out.write_text(json.dumps(result, indent=1))

    with tempfile.TemporaryDirectory() as scratch:
        result = measure(args, Path(scratch), save)
    save(result)
    if args.out is not None:
        plot(result, args.out.with_suffix(".png"))


if __name__ == "__main__":
    main()
