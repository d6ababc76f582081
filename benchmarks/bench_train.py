"""Training throughput: PPO samples/s of ``train.py`` beside an earlier trainer and a bare SB3
loop, measured in one run.

Usage::

    python benchmarks/bench_train.py [--games kingup updown kdk] [--steps 2048 6144]
                                     [--our-steps 16384 81920] [--repeats 2]
                                     [--reference 90c20ba] [--mix MIX ...]
                                     [--workers 1 2] [--collectors 1 2]

Three trainers per game, warm start and evaluation off:

* ``ours``: ``training/train.py`` of this checkout, with its default opponent mix or with
  each ``--mix`` given (the mix sets how many seats the costly heuristic holds), in one
  process and with the update in a second (``--workers``); wall time and the CPU time of the
  run and its learner process, so that each gives samples/s and samples per CPU-second; and
  with ``--collectors K`` on a local Ray (its actors report their own CPU time);
* ``reference``: ``training/train.py`` of an earlier commit (default 90c20ba, the trainer
  before the batched collector), run from a temporary ``git worktree`` of it;
* ``peer``: sb3-contrib MaskablePPO on PettingZoo's ``connect_four_v3`` against a random
  player (one env, the reference trainer's PPO settings), the same for every game.

Each runs at two step counts (``--steps`` for the reference and the peer, ``--our-steps``,
whole rollouts of 8,192 samples, for ours: each pair takes tens of seconds per trainer); the
*marginal* rate (extra steps / extra seconds) cancels start-up costs (imports, compilation,
the first rollout; a first untimed run per trainer and game fills numba's cache). Rounds are
interleaved (reference, ours, peer, then again) so that drift of the shared machine's speed
hits all alike. Ours also reports its time split (env, each opponent kind, learner inference,
update) and each opponent kind's µs per decision from its ``summary.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GAMES = ("kingup", "updown", "kdk")


def timed(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """Wall seconds a command takes, and the CPU seconds of it and its children; its output is
    kept only if it fails."""
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def train_cmd(game: str, steps: int, out: Path, mix: str = "", workers: int = 0) -> list[str]:
    """``train.py`` for ``steps`` samples; ``workers`` 0: the reference's command (no option),
    -K: K collectors on a local Ray."""
    if workers < 0:
        how = ["--collectors", str(-workers), "--workers", "1"]
    else:
        how = ["--workers", str(workers)] if workers else []
    return [
        sys.executable, "training/train.py", "--game", game, "--timesteps", str(steps),
        "--warm-start", "0", "--eval-games", "0", "--no-progress", "--max-minutes", "0",
        "--out", str(out), *(["--opponent-mix", mix] if mix else []), *how,
    ]  # fmt: skip


def peer_run(steps: int) -> None:
    """MaskablePPO on connect_four_v3 against a uniformly random opponent, ``steps`` steps."""
    import gymnasium
    import numpy as np
    import torch
    from pettingzoo.classic import connect_four_v3
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.logger import Logger

    torch.set_num_threads(1)

    class VsRandom(gymnasium.Env):
        """The learner plays a random seat of connect four; a random player the other."""

        def __init__(self) -> None:
            self.game = connect_four_v3.env()
            self.game.reset(seed=0)
            space = self.game.observation_space("player_0")["observation"]
            self.observation_space = gymnasium.spaces.Box(0, 1, space.shape, np.float32)
            self.action_space = self.game.action_space("player_0")
            self.rng = np.random.default_rng(0)

        def _opponent(self) -> float:
            while self.game.agent_selection != self.me:
                obs, reward, term, trunc, _ = self.game.last()
                if term or trunc:
                    return reward
                self.game.step(int(self.rng.choice(np.flatnonzero(obs["action_mask"]))))
            return 0.0

        def _obs(self) -> np.ndarray:
            return self.game.observe(self.me)["observation"].astype(np.float32)

        def action_masks(self) -> np.ndarray:
            return self.game.observe(self.me)["action_mask"].astype(bool)

        def reset(self, seed: int | None = None, options: dict | None = None) -> tuple:
            self.game.reset(seed=seed)
            self.me = f"player_{self.rng.integers(2)}"
            self._opponent()
            return self._obs(), {}

        def step(self, action: int) -> tuple:
            self.game.step(int(action))
            self._opponent()
            done = all(self.game.terminations.values())
            return self._obs(), self.game._cumulative_rewards[self.me], done, False, {}

    model = MaskablePPO(
        "MlpPolicy", VsRandom(), n_steps=512, batch_size=256, n_epochs=5,
        policy_kwargs={"net_arch": [256, 256]}, device="cpu", seed=0,
    )  # fmt: skip
    model.set_logger(Logger(folder=None, output_formats=[]))  # no SB3-<time> folder in /tmp
    model.learn(steps)


def measure(args: argparse.Namespace, reference: Path, scratch: Path) -> dict:
    """Seconds per (trainer, game, steps), a list over repeats; our summaries too."""
    seconds: dict = {}  # (trainer, game, step count) -> [(wall, cpu) per repeat]
    splits: dict = {}
    low, high = args.steps
    trainers = [("reference", reference, args.steps, "", 0)]
    trainers += [
        (ours_label(mix, workers), ROOT, args.our_steps, mix, workers)
        for mix in args.mix or [""]
        for workers in [*args.workers, *(-k for k in args.collectors)]
    ]  # fmt: skip
    # One untimed run each first: numba compiles the engines' kernels into its cache, and
    # that one-time cost must not land on one side of a marginal rate.
    for game in args.games:
        for i, (_, cwd, pair, mix, workers) in enumerate(trainers):
            timed(train_cmd(game, pair[0], scratch / f"warm-{i}-{game}", mix, workers), cwd)
    for rep in range(args.repeats):
        for game in args.games:
            for k in (0, 1):
                for i, (who, cwd, pair, mix, workers) in enumerate(trainers):
                    steps = pair[k]
                    out = scratch / f"{i}-{game}-{steps}-{rep}"
                    took = timed(train_cmd(game, steps, out, mix, workers), cwd)
                    if workers < 0:  # Ray's actors are not our children: they count their own
                        summary = json.loads((out / "summary.json").read_text())
                        took = (took[0], took[1] + summary["collector_cpu_seconds"])
                    seconds.setdefault((who, game, k), []).append(took)
                    if i > 0 and k == 1:
                        splits[who, game] = json.loads((out / "summary.json").read_text())
                    print(f"  {who:18} {game:6} {steps:6} steps: {took[0]:6.1f} s, "
                          f"{took[1]:6.1f} CPU s", flush=True)  # fmt: skip
        for k, steps in enumerate((low, high)):
            cmd = [sys.executable, __file__, "--peer-steps", str(steps)]
            took = timed(cmd, ROOT)
            seconds.setdefault(("peer", "connect_four", k), []).append(took)
            print(f"  peer               c4     {steps:6} steps: {took[0]:6.1f} s", flush=True)
    return {"seconds": seconds, "splits": splits}


def ours_label(mix: str, workers: int) -> str:
    how = f"{-workers} Ray collectors" if workers < 0 else f"{workers} proc"
    return f"ours, {how}" + (f" ({mix})" if mix else "")


def marginal(seconds: dict, who: str, game: str, pair: list[int], cpu: bool = False) -> float:
    """Samples per second (per CPU-second with ``cpu``) between the two step counts (medians
    over the repeats)."""
    low, high = ([t[cpu] for t in seconds[who, game, k]] for k in (0, 1))
    return (pair[1] - pair[0]) / max(statistics.median(high) - statistics.median(low), 1e-9)


def report(result: dict, args: argparse.Namespace) -> None:
    seconds = result["seconds"]
    peer = marginal(seconds, "peer", "connect_four", args.steps)
    print(f"\nmarginal PPO samples/s (median of {args.repeats} repeats):")
    print("| game | reference | trainer | samples/s | per CPU-second | × reference | × peer |")
    print("|---|---|---|---|---|---|---|")
    for game in args.games:
        ref = marginal(seconds, "reference", game, args.steps)
        for mix in args.mix or [""]:
            for workers in [*args.workers, *(-k for k in args.collectors)]:
                who = ours_label(mix, workers)
                ours = marginal(seconds, who, game, args.our_steps)
                per_cpu = marginal(seconds, who, game, args.our_steps, cpu=True)
                print(f"| {game} | {ref:,.0f} | {who} | {ours:,.0f} | {per_cpu:,.0f} "
                      f"| {ours / ref:.1f}x | {ours / peer:.1f}x |")  # fmt: skip
    print(f"| peer: MaskablePPO, connect_four_v3 vs random | | | {peer:,.0f} | | | |")
    print("\nour time split at the larger step count (share of the run's wall time):")
    for (who, game), summary in result["splits"].items():
        split = summary["time_split"]
        shown = ", ".join(f"{k} {v:.0%}" for k, v in split.items())
        costs = ", ".join(f"{k} {v:.1f}" for k, v in summary.get("us_per_decision", {}).items())
        busy = summary.get("learner_busy")
        shown += "" if busy is None else f"; the learner process busy {busy:.0%}"
        print(f"  {who} {game}: {shown}; µs per opponent decision: {costs}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", nargs="+", default=list(GAMES), choices=GAMES)
    parser.add_argument("--steps", nargs=2, type=int, default=[2048, 6144])
    parser.add_argument("--our-steps", nargs=2, type=int, default=[16384, 81920])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--reference", default="90c20ba", help="commit of the earlier trainer")
    parser.add_argument(
        "--mix", action="append",
        help="our --opponent-mix (repeatable: one trainer each; default: train.py's default)",
    )  # fmt: skip
    parser.add_argument(
        "--workers", nargs="+", type=int, default=[1, 2], choices=(1, 2),
        help="our --workers (one trainer each): 1 process, or the update in a second",
    )  # fmt: skip
    parser.add_argument(
        "--collectors", nargs="*", type=int, default=[],
        help="also our --collectors K on a local Ray (one trainer each K)",
    )  # fmt: skip
    parser.add_argument("--peer-steps", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peer_steps:
        peer_run(args.peer_steps)
        return
    for name in ("steps", "our_steps"):
        low, high = getattr(args, name)
        if not 0 < low < high:
            parser.error(f"--{name.replace('_', '-')} takes two increasing positive step counts")
    with tempfile.TemporaryDirectory() as tmp:
        reference = Path(tmp) / "reference"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(reference), args.reference],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        try:
            result = measure(args, reference, Path(tmp))
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(reference)], cwd=ROOT, check=False
            )
    report(result, args)


if __name__ == "__main__":
    main()
