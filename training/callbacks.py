"""What a training run does between PPO updates: snapshots, checkpoints, evaluations, progress.

Evaluations go through the evaluation harness (``training.evaluate.evaluate``): the current
policy in one seat, a baseline in every other, seats rotated. Results are appended to
``curve.csv`` / ``curve.json``, logged to TensorBoard under ``eval/`` and drawn in ``curves.png``.
"""

from __future__ import annotations

import csv
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stable_baselines3.common.callbacks import BaseCallback

from training.checkpoints import save_atomic
from training.evaluate import evaluate

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

BASELINES = ("random", "heuristic")
CURVE_FIELDS = ("step", "opponent", "win_rate", "ci_low", "ci_high", "mean_score", "fair")


class TrainingCallback(BaseCallback):
    """Snapshots for the opponent pool, atomic checkpoints, periodic evaluation, a progress bar."""

    def __init__(
        self,
        args: Any,
        options: dict,
        meta: dict,
        run: Path,
        snapshots: list[str],
        started: float | None = None,
    ):
        super().__init__()
        # --max-minutes counts from ``started`` (time.monotonic()), so a warm start counts too.
        self.started = time.monotonic() if started is None else started
        self.args, self.options, self.meta, self.run = args, options, meta, run
        self.snapshots = list(snapshots)
        self.curve: list[dict[str, Any]] = _read_curve(run / "curve.json")
        self.best = max(
            (r["win_rate"] for r in self.curve if r["opponent"] == "heuristic"), default=-1.0
        )
        self._last = {"snapshot": 0, "checkpoint": 0, "eval": 0}
        self._bar = None
        self._deadline = float("inf")

    # -- SB3 hooks --------------------------------------------------------------------------
    def _on_training_start(self) -> None:
        step = self.num_timesteps
        if self.args.max_minutes > 0:
            self._deadline = self.started + 60 * self.args.max_minutes
        self._last = dict.fromkeys(self._last, step)
        if not self.snapshots:
            self._snapshot()  # the pool is never empty: the untrained policy comes first
        if self.args.progress:
            from tqdm import tqdm

            # In a log file (no terminal) a line every 30 s is progress enough.
            interval = 0.5 if sys.stderr.isatty() else 30.0
            self._bar = tqdm(
                total=self.args.timesteps, initial=step, unit="step", mininterval=interval
            )
        if not self.curve:
            self._evaluate()

    def _on_step(self) -> bool:
        step = self.num_timesteps
        if self._bar is not None:
            self._bar.update(step - self._bar.n)
        if self._due("snapshot", self.args.snapshot_every):
            self._snapshot()
        if self._due("checkpoint", self.args.checkpoint_every):
            self._checkpoint()
        if self._due("eval", self.args.eval_every):
            self._evaluate()
        # Returning False ends model.learn() cleanly; finish() then checkpoints and evaluates.
        return time.monotonic() < self._deadline

    def _on_training_end(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def _due(self, what: str, every: int) -> bool:
        if every <= 0 or self.num_timesteps - self._last[what] < every:
            return False
        self._last[what] = self.num_timesteps
        return True

    # -- actions ----------------------------------------------------------------------------
    def _save(self, path: Path) -> None:
        save_atomic(self.model, path, self.meta)

    def _snapshot(self) -> None:
        path = self.run / "pool" / f"snap_{self.num_timesteps:09d}.zip"
        self._save(path)
        self.snapshots.append(str(path))
        for old in self.snapshots[: -self.args.pool_size]:
            Path(old).unlink(missing_ok=True)
        self.snapshots = self.snapshots[-self.args.pool_size :]
        self.training_env.env_method("set_snapshots", self.snapshots)

    def _checkpoint(self) -> None:
        self._save(self.run / "checkpoint.zip")

    def _evaluate(self) -> None:
        if self.args.eval_games <= 0:
            return
        path = self.run / "eval_model.zip"
        self._save(path)
        n = self.options["num_players"]
        step = self.num_timesteps
        for opponent in BASELINES:
            specs = [f"ppo:{path}"] + [opponent] * (n - 1)
            result = evaluate(
                self.args.game, specs, games=self.args.eval_games, seed=self.args.seed + step,
                workers=2, options=self.options, progress=False,
            )  # fmt: skip
            me = next(a for a in result["agents"] if a["spec"].startswith("ppo:"))
            row = {
                "step": step, "opponent": opponent, "win_rate": me["win_rate"],
                "ci_low": me["win_rate_ci"][0], "ci_high": me["win_rate_ci"][1],
                "mean_score": me["mean_score"], "fair": 1 / n,
            }  # fmt: skip
            self.curve.append(row)
            self.logger.record(f"eval/win_rate_vs_{opponent}", row["win_rate"])
            self.logger.record(f"eval/mean_score_vs_{opponent}", row["mean_score"])
            if self._bar is not None:
                self._bar.write(
                    f"step {step}: win rate vs {opponent} {row['win_rate']:.3f} "
                    f"[{row['ci_low']:.3f}, {row['ci_high']:.3f}] (fair {1 / n:.3f})"
                )
            if opponent == "heuristic" and row["win_rate"] > self.best:
                self.best = row["win_rate"]
                self._save(self.run / "best.zip")
        self._write_curve()

    def _write_curve(self) -> None:
        tmp = self.run / ".curve.json.tmp"
        tmp.write_text(json.dumps(self.curve, indent=1) + "\n")
        os.replace(tmp, self.run / "curve.json")
        tmp = self.run / ".curve.csv.tmp"
        with tmp.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=CURVE_FIELDS)
            writer.writeheader()
            writer.writerows(self.curve)
        os.replace(tmp, self.run / "curve.csv")

    def finish(self, model: Any) -> dict[str, Any]:
        """Final checkpoint, evaluation and plot; the run's summary."""
        self._checkpoint()
        # learn() overshoots to a whole rollout; an evaluation within that rollout is final.
        rollout = self.model.n_steps * self.model.n_envs
        if not self.curve or self.num_timesteps - self.curve[-1]["step"] >= rollout:
            self._evaluate()
        plot_curves(self.curve, self.run / "curves.png", self.args.game)
        final = {r["opponent"]: r for r in self.curve if r["step"] == self.curve[-1]["step"]}
        summary = {"run": str(self.run), "steps": int(model.num_timesteps), "final": final}
        (self.run / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        return summary


def _read_curve(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text()) if path.is_file() else []


def plot_curves(curve: list[dict[str, Any]], path: Path, game: str) -> None:
    """Write :func:`draw_curves` to ``path`` (PNG)."""
    draw_curves(curve, game).savefig(path, dpi=110)


def draw_curves(curve: list[dict[str, Any]], game: str, ax: Axes | None = None) -> Figure:
    """Win rate against each baseline over training steps, with 95% intervals; its Figure.

    A bare ``matplotlib.figure.Figure`` unless ``ax`` is given (no pyplot, no backend).
    """
    from matplotlib.figure import Figure

    if ax is None:
        ax = Figure(figsize=(7, 4), layout="tight").subplots()
    for opponent in BASELINES:
        rows = [r for r in curve if r["opponent"] == opponent]
        if not rows:
            continue
        steps = [r["step"] for r in rows]
        line = ax.plot(steps, [r["win_rate"] for r in rows], marker="o", label=f"vs {opponent}")
        ax.fill_between(
            steps, [r["ci_low"] for r in rows], [r["ci_high"] for r in rows],
            color=line[0].get_color(), alpha=0.2,
        )  # fmt: skip
    if curve:
        ax.axhline(curve[0]["fair"], color="grey", linestyle="--", label="fair share")
    ax.set_xlabel("learner steps")
    ax.set_ylabel("win rate of the trained policy")
    ax.set_title(f"{game}: self-play PPO against baselines")
    ax.set_ylim(0, 1)
    ax.legend()
    return ax.figure
