"""What a training run does between PPO updates: snapshots, checkpoints, evaluations, progress.

Evaluations play the current policy in batch (``training.collector.evaluate_batched``): in one
seat, rotated from game to game, against random or heuristic players in every other seat, in
this process. Results are appended to ``curve.csv`` / ``curve.json``, logged to TensorBoard
under ``eval/`` at the step they were made (step 0 before training) and drawn in
``curves.png``. After each rollout the training games' reward and win rate per opponent kind
and the samples per second are logged too; :mod:`training.tags` names every tag.
"""

from __future__ import annotations

import copy
import csv
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stable_baselines3.common.callbacks import BaseCallback

from tablegym.files import write_atomic, write_json_atomic
from training import tags
from training.league import League, main_table, selection_score

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

BASELINES = ("random", "heuristic")
OPPONENTS = (*BASELINES, "pool")  # what each evaluation plays; best.zip is chosen on all
CURVE_FIELDS = ("step", "opponent", "win_rate", "ci_low", "ci_high", "games", "fair")


class TrainingCallback(BaseCallback):
    """Snapshots for the opponent pool, atomic checkpoints, periodic evaluation, a progress bar."""

    def __init__(
        self,
        args: Any,
        tables: list[dict[str, Any]],
        meta: dict[str, Any],
        run: Path,
        env: Any,
        heuristic: Any,
        started: float,
    ):
        super().__init__()
        # --max-minutes counts from ``started`` (time.monotonic()), so a warm start counts too.
        self.started = started
        self.args, self.tables, self.meta, self.run = args, tables, meta, run
        self.selfplay, self.heuristic = env, heuristic
        self.curve: list[dict[str, Any]] = read_curve(run)
        self.best = max(
            (selection_score([r for r in self.curve if r["step"] == step])
             for step in {r["step"] for r in self.curve}),
            default=-1.0,
        )  # fmt: skip
        self.league = League(args, tables, run, heuristic) if args.exploiters > 0 else None
        self._last = {"snapshot": 0, "checkpoint": 0, "eval": 0}
        self._bar: Any = None
        self._deadline = float("inf")
        self.eval_seconds = 0.0
        self._learn_started = 0.0
        self._first_step = 0
        self._checkpointed = time.monotonic()  # train.py saves one as PPO starts
        self._rate_from = (0, 0.0)  # (step, time.monotonic()) of the last samples/s point
        self._steady_from: tuple[int, float, float] | None = None  # (step, wall, CPU)

    # -- SB3 hooks --------------------------------------------------------------------------
    def _on_training_start(self) -> None:
        step = self._first_step = self.num_timesteps
        self._learn_started = time.monotonic()
        self._rate_from = (step, self._learn_started)
        if self.args.max_minutes > 0:
            self._deadline = self.started + 60 * self.args.max_minutes
        # Always set: a resumed checkpoint holds the budget of the process that saved it.
        timed = self._deadline != float("inf")
        self.model.budget = (self.started, self._deadline) if timed else None
        self._last = dict.fromkeys(self._last, step)
        if not self.selfplay.snapshots:
            self._snapshot()  # the pool is never empty: the starting policy comes first
        if self.league is not None:
            first = self.selfplay.snapshots[min(self.selfplay.snapshots)]
            self.league.start(self.model, copy.deepcopy(first.state_dict()))
        if self.args.progress:
            from tqdm import tqdm

            # In a log file (no terminal) a line every 30 s is progress enough.
            interval = 0.5 if sys.stderr.isatty() else 30.0
            self._bar = tqdm(
                total=self.args.timesteps, initial=step, unit="sample", mininterval=interval
            )
        if not self.curve:
            self._evaluate()

    def _on_step(self) -> bool:
        step = self.num_timesteps
        if self._bar is not None:
            self._bar.update(step - self._bar.n)
        if self._due("snapshot", self.args.snapshot_every):
            self._snapshot()
        if self._checkpoint_due():
            self.checkpoint()
        if self._due("eval", self.args.eval_every):
            self._evaluate()
        # Returning False ends model.learn() cleanly; finish() then checkpoints and evaluates.
        return time.monotonic() < self._deadline

    def _on_rollout_end(self) -> None:
        if self.league is not None:
            self.league.advance(self.model, self.selfplay, self.logger)
        pfsp = self.selfplay.pfsp
        if pfsp.entries:
            rates = [r.rate for r in pfsp.entries.values()]
            self.logger.record("league/pool_size", len(rates))
            self.logger.record("league/pool_max_rate", max(rates))
            self.logger.record("league/pool_mean_rate", float(sum(rates) / len(rates)))
        # SB3 writes these at the end of this rollout, at the step they describe.
        reward, rates = self.selfplay.game_stats.take()
        if reward is not None:
            self.logger.record(tags.EPISODE_REWARD, reward)
        for kind, rate in rates.items():
            self.logger.record(tags.SELFPLAY_WIN_RATE.format(kind), rate)
        now, (step, then) = time.monotonic(), self._rate_from
        if now > then and self.num_timesteps > step:
            self.logger.record(tags.SAMPLES_PER_SECOND, (self.num_timesteps - step) / (now - then))
        self._rate_from = (self.num_timesteps, now)
        if self._steady_from is None:
            self._steady_from = (self.num_timesteps, now, self.cpu_seconds(self.model))

    def cpu_seconds(self, model: Any) -> float:
        """CPU seconds of this run so far: this process, its learner process's updates and its
        collectors' rollouts."""
        learner, collectors = getattr(model, "learner", None), model.collectors
        return (
            time.process_time()
            + (0.0 if learner is None else learner.cpu_seconds)
            + (0.0 if collectors is None else collectors.cpu_seconds)
        )

    def steady(self, model: Any) -> dict[str, float] | None:
        """Samples, wall and CPU seconds after the first rollout (start-up, compilation and
        the pipeline's filling excluded), and the rates they give."""
        if self._steady_from is None or model.num_timesteps <= self._steady_from[0]:
            return None
        step, wall, cpu = self._steady_from
        samples = model.num_timesteps - step
        wall, cpu = time.monotonic() - wall, self.cpu_seconds(model) - cpu
        return {
            "samples": int(samples),
            "seconds": round(wall, 3),
            "cpu_seconds": round(cpu, 3),
            "samples_per_second": round(samples / max(wall, 1e-9), 1),
            "samples_per_cpu_second": round(samples / max(cpu, 1e-9), 1),
        }

    def _on_training_end(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def _due(self, what: str, every: int) -> bool:
        if every <= 0 or self.num_timesteps - self._last[what] < every:
            return False
        self._last[what] = self.num_timesteps
        return True

    # -- actions ----------------------------------------------------------------------------
    def checkpoint(self) -> None:
        """Write ``checkpoint.zip`` (atomically) at the current step."""
        from training.checkpoints import save_atomic
        from training.learner import trained_weights

        with trained_weights(self.model):  # the update in flight in a learner process too
            save_atomic(self.model, self.run / "checkpoint.zip", self.meta)
        self._checkpointed = time.monotonic()
        if self.league is not None:
            self.league.save()

    def _checkpoint_due(self) -> bool:
        """By samples (``--checkpoint-every``) or by time (``--checkpoint-minutes``)."""
        if self._due("checkpoint", self.args.checkpoint_every):
            return True
        minutes = self.args.checkpoint_minutes
        if minutes <= 0 or time.monotonic() - self._checkpointed < 60 * minutes:
            return False
        self._last["checkpoint"] = self.num_timesteps
        return True

    def _snapshot(self) -> None:
        import torch

        policy = copy.deepcopy(self.model.policy)
        policy.set_training_mode(False)
        path = self.run / "pool" / f"snap_{self.num_timesteps:010d}.pt"
        write_atomic(path, lambda tmp: torch.save(policy.state_dict(), tmp))
        self.selfplay.add_snapshot(policy, self.args.pool_size)
        for old in sorted(path.parent.glob("snap_*.pt"))[1 : -self.args.pool_size]:
            old.unlink()  # the first, the policy training started from, stays (see the env)

    def _evaluate(self) -> None:
        if self.args.eval_games <= 0:
            return
        from training.evaluate import wilson

        started = time.monotonic()
        options = main_table(self.tables, self.args.game)
        n, step = options["num_players"], self.num_timesteps
        rows, scalars = [], {}
        for opponent in OPPONENTS:
            wins, games = self._play(opponent, options, seed=self.args.seed + 7 * step + 1)
            low, high = wilson(wins, games)
            row = {
                "step": step, "opponent": opponent, "win_rate": wins / max(games, 1),
                "ci_low": low, "ci_high": high, "games": games, "fair": 1 / n,
            }  # fmt: skip
            rows.append(row)
            scalars[tags.EVAL_WIN_RATE.format(opponent)] = row["win_rate"]
            self._say(
                f"step {step}: win rate vs {opponent} {row['win_rate']:.3f} "
                f"[{low:.3f}, {high:.3f}] (fair {1 / n:.3f})"
            )
        self.curve.extend(rows)
        score = selection_score(rows)
        scalars["eval/selection_score"] = score
        self._log_now(scalars)
        if score > self.best:
            from training.checkpoints import save_atomic

            self.best = score
            save_atomic(self.model, self.run / "best.zip", self.meta)
        write_curve(self.run, self.curve)
        self.eval_seconds += time.monotonic() - started

    def _play(self, opponent: str, options: dict[str, Any], seed: int) -> tuple[float, int]:
        """Wins and games of the current policy against ``opponent`` in every other seat; the
        pool's entries take turns, ``--eval-games`` in all."""
        from training.collector import evaluate_batched, snapshot_player

        games = self.args.eval_games
        if opponent != "pool":
            players = [opponent]
        else:
            players = [snapshot_player(p) for p in self.selfplay.snapshots.values()]
        wins = played = 0
        for k, player in enumerate(players):
            share = games // len(players) + (k < games % len(players))
            if share == 0:
                continue
            result = evaluate_batched(
                self.model.policy, self.args.game, options, player, share, seed=seed + k,
                heuristic=self.heuristic, backend=self.args.backend,
            )  # fmt: skip
            wins += result["win_rate"] * result["games"]
            played += result["games"]
        return wins, played

    def _log_now(self, scalars: dict[str, float]) -> None:
        """Write ``scalars`` at the current step now: ``logger.record`` would hold them until
        SB3's next dump, after the rollout (the step-0 evaluation showed at step 4096)."""
        for output in self.logger.output_formats:
            output.write(scalars, dict.fromkeys(scalars), self.num_timesteps)

    def _say(self, message: str) -> None:
        if self._bar is not None:
            self._bar.write(message)
        elif self.args.progress:
            print(message, flush=True)

    def finish(self, model: Any) -> dict[str, Any]:
        """Final checkpoint, evaluation and plot; the run's summary."""
        learn_seconds = time.monotonic() - self._learn_started
        steady = self.steady(model)
        self.checkpoint()
        # learn() overshoots to a whole rollout; an evaluation within that rollout is final.
        if not self.curve or self.num_timesteps - self.curve[-1]["step"] >= model.n_steps:
            self._evaluate()
        if self.curve:
            plot_curves(self.curve, self.run / "curves.png", self.args.game)
        final = {r["opponent"]: r for r in self.curve if r["step"] == self.curve[-1]["step"]}
        samples = model.num_timesteps - self._first_step
        learner = getattr(model, "learner", None)
        summary = {
            "run": str(self.run),
            "steps": int(model.num_timesteps),
            "final": final,
            "samples_per_second": round(samples / max(learn_seconds, 1e-9), 1),
            "steady": steady,
            "time_split": self.time_split(model, learn_seconds),
            "workers": 1 if learner is None else 2,
            "decisions": dict(self.selfplay.decisions),
            "us_per_decision": self.decision_costs(),
        }
        if model.collectors is not None:
            summary["collectors"] = len(model.collectors.actors)
            summary["collector_cpu_seconds"] = round(model.collectors.cpu_seconds, 2)
        if learner is not None:  # the learner process's share of the time busy updating
            summary["learner_busy"] = round(learner.seconds / max(learn_seconds, 1e-9), 4)
            summary["learner_cpu_seconds"] = round(learner.cpu_seconds, 2)
        write_json_atomic(self.run / "summary.json", summary)
        return summary

    def decision_costs(self) -> dict[str, float]:
        """Microseconds per decision of each opponent kind that made decisions (batched calls)."""
        env = self.selfplay
        return {
            k: round(1e6 * env.seconds[k] / n, 2)
            for k, n in env.decisions.items()
            if k != "self" and n > 0
        }

    def time_split(self, model: Any, total: float) -> dict[str, float]:
        """Share of the learning phase's wall time spent in each part."""
        env = self.selfplay
        parts = {"env": env.seconds_env}
        parts.update({f"opponents_{k}": s for k, s in env.seconds.items() if k != "self"})
        parts.update(model.seconds)
        parts["league"] = 0.0 if self.league is None else self.league.seconds
        parts["evaluation"] = self.eval_seconds
        parts["other"] = max(0.0, total - sum(parts.values()))
        return {k: round(v / max(total, 1e-9), 4) for k, v in parts.items()}


def load_pool(model: Any, env: Any, pool: Path, size: int) -> None:
    """Put the first and the newest ``size`` snapshots of ``pool`` into the env, and the
    newest ``size`` exploiters (on resume)."""
    import torch

    files = sorted(pool.glob("snap_*.pt"))
    exploiters = sorted(pool.glob("expl_*.pt"))[-size:]
    for path in files[:1] + files[1:][-size:] + exploiters:
        policy = copy.deepcopy(model.policy)
        policy.load_state_dict(torch.load(path, map_location="cpu"))
        policy.set_training_mode(False)
        role = "exploiter" if path.name.startswith("expl_") else "main"
        env.add_snapshot(policy, size, role=role)


def read_curve(run: Path) -> list[dict[str, Any]]:
    """The evaluations of a run so far."""
    path = run / "curve.json"
    return json.loads(path.read_text()) if path.is_file() else []


def write_curve(run: Path, curve: list[dict[str, Any]]) -> None:
    """``curve.json`` and ``curve.csv``, each replaced atomically."""
    write_json_atomic(run / "curve.json", curve, indent=1)

    def write_csv(tmp: Path) -> None:
        with tmp.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=CURVE_FIELDS, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(curve)

    write_atomic(run / "curve.csv", write_csv)


def drop_curve_after(run: Path, step: int) -> None:
    """Forget evaluations made after ``step`` (a killed run may have outlived its checkpoint)."""
    curve = read_curve(run)
    kept = [r for r in curve if r["step"] <= step]
    if len(kept) != len(curve):
        write_curve(run, kept)


def purge_tensorboard(tb: Path, step: int) -> None:
    """Make TensorBoard discard the points of every run under ``tb`` logged after ``step``.

    TensorBoard drops earlier events at or after a "session start" event's step
    (``SummaryWriter(purge_step=...)``), so resumed curves do not overlap a killed run's tail.
    """
    if not tb.is_dir():
        return
    from torch.utils.tensorboard import SummaryWriter

    for run_dir in (p for p in tb.iterdir() if p.is_dir()):
        SummaryWriter(log_dir=str(run_dir), purge_step=step + 1).close()


def plot_curves(curve: list[dict[str, Any]], path: Path, game: str) -> None:
    """Write :func:`draw_curves` to ``path`` (PNG), whole or not at all."""
    figure = draw_curves(curve, game)
    write_atomic(path, lambda tmp: figure.savefig(tmp, dpi=110))


def draw_curves(curve: list[dict[str, Any]], game: str, ax: Axes | None = None) -> Figure:
    """Win rate against each baseline over training steps, with 95% intervals; its Figure.

    A bare ``matplotlib.figure.Figure`` unless ``ax`` is given (no pyplot, no backend).
    """
    from matplotlib.figure import Figure

    if ax is None:
        ax = Figure(figsize=(7, 4), layout="tight").subplots()
    for opponent in OPPONENTS:
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
    ax.set_xlabel("learner samples")
    ax.set_ylabel("win rate of the trained policy")
    ax.set_title(f"{game}: self-play PPO against baselines")
    ax.set_ylim(0, 1)
    ax.legend()
    return ax.figure
