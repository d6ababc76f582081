"""Probe curves side by side: several ``training/exploit.py --out`` results on one plot.

Usage (from the repository root)::

    python benchmarks/plot_probes.py runs/probes/old_kingup.json runs/probes/new_kingup.json \\
        --labels "old bot" "league bot" --out docs/probe_kingup.png [--x samples]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from training.exploit import PROBE_AXES, draw_probes  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+", type=Path, help="probe result files (JSON)")
    p.add_argument("--labels", nargs="+", help="a label per file (default: the targets)")
    p.add_argument("--out", type=Path, required=True, help="the PNG to write")
    p.add_argument("--x", choices=PROBE_AXES, default="cpu_minutes",
                   help="the horizontal axis: learner CPU minutes or samples")  # fmt: skip
    args = p.parse_args()
    results = [json.loads(path.read_text()) for path in args.results]
    if args.labels:
        if len(args.labels) != len(results):
            p.error("give one label per result file")
        results = [{**r, "target": label} for r, label in zip(results, args.labels)]
    draw_probes(results, x=args.x).savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
