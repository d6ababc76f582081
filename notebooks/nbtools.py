"""Small helpers shared by the notebooks: the PPO agent to compare, replays, score charts.

Everything heavy lives in the library (``training.evaluate``, ``training.callbacks``, each
game's ``render.draw``); this module only joins those pieces for the notebooks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tablegym.games import env_class

if TYPE_CHECKING:
    from matplotlib.axes import Axes

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "notebooks" / "models"


def budget() -> str:
    """``TABLEGYM_BUDGET``: ``"full"`` (default) or ``"small"`` (the test run)."""
    value = os.environ.get("TABLEGYM_BUDGET", "full")
    if value not in ("full", "small"):
        raise ValueError(f"TABLEGYM_BUDGET must be 'full' or 'small'; got {value!r}")
    return value


def ppo_model(game: str, num_players: int) -> tuple[str, list[dict[str, Any]]]:
    """The ``ppo:PATH`` spec and learning curve of the committed model of ``game``.

    Without a committed model (a fresh checkout before training) a tiny one is trained in a
    temporary directory, so the notebook still runs top to bottom; it plays about randomly.
    """
    model, curve = MODELS / f"{game}.zip", MODELS / f"{game}_curve.json"
    if not model.is_file():
        run = Path(tempfile.mkdtemp(prefix=f"tablegym_{game}_"))
        tiny = [
            "--timesteps", "512", "--num-games", "8", "--n-steps", "256", "--batch-size", "64",
            "--n-epochs", "1", "--eval-every", "256", "--eval-games", "4", "--net-arch", "32",
            "--no-progress", "--warm-start", "8", "--warm-epochs", "1",
        ]  # fmt: skip
        cmd = [sys.executable, str(ROOT / "training" / "train.py"), "--game", game]
        cmd += ["--num-players", str(num_players), "--out", str(run), *tiny]
        subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
        model, curve = run / "best.zip", run / "curve.json"
        print(f"no committed model for {game}: trained a tiny stand-in in {run}")
    if model.is_relative_to(Path.cwd()):
        model = model.relative_to(Path.cwd())  # a short label in tables
    return f"ppo:{model}", json.loads(curve.read_text())


def transitions(game: str, options: dict[str, Any], record: dict[str, Any]) -> Iterator[tuple]:
    """Replay one game record of ``evaluate(..., keep_actions=True)``.

    Yields ``(before, seat, action, after)`` per action: the rules states around it and the
    seat that acted (``before.to_play``).
    """
    env = env_class(game)(**options)
    env.reset(seed=record["seed"])
    for action in record["actions"]:
        before = env.game_state
        env.step(action)
        yield before, before.to_play, action, env.game_state


def scores_by_spec(result: dict[str, Any]) -> dict[str, list[float]]:
    """Every final score of each spec over the games of a tournament."""
    out: dict[str, list[float]] = {row["spec"]: [] for row in result["agents"]}
    for rec in result["results"]:
        for spec, score in zip(rec["specs"], rec["scores"]):
            out[spec].append(score)
    return out


def short(spec: str) -> str:
    """A spec as a chart label: ``ppo:/long/path/kdk.zip`` becomes ``ppo``."""
    return "ppo" if spec.startswith("ppo:") else spec


def compare_bars(results: dict[str, dict[str, dict[str, Any]]], ax: Axes) -> None:
    """Grouped win rates with Wilson intervals: ``results[field][label]`` is a tournament in
    which the agent ``label`` is the first spec and ``field`` names its opponents."""
    fields = list(results)
    labels = list(dict.fromkeys(label for field in fields for label in results[field]))
    width = 0.8 / len(fields)
    for i, field in enumerate(fields):
        xs, rates, lo, hi = [], [], [], []
        for j, label in enumerate(labels):
            if label not in results[field]:
                continue
            row = results[field][label]["agents"][0]
            xs.append(j + (i - (len(fields) - 1) / 2) * width)
            rates.append(row["win_rate"])
            lo.append(row["win_rate"] - row["win_rate_ci"][0])
            hi.append(row["win_rate_ci"][1] - row["win_rate"])
        ax.bar(xs, rates, width, yerr=[lo, hi], capsize=4, label=field)
    fair = next(iter(results[fields[0]].values()))["fair_share"]
    ax.axhline(fair, color="grey", linestyle="--", label="fair share")
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylim(0, 1)
    ax.set_ylabel("win rate (95% Wilson CI)")
    ax.legend()


def score_boxes(result: dict[str, Any], ax: Axes, label: str = "final score") -> None:
    """Box plot of each spec's final scores in one tournament."""
    scores = scores_by_spec(result)
    ax.boxplot(list(scores.values()), tick_labels=[short(s) for s in scores])
    ax.set_ylabel(label)
    ax.set_title(f"{result['game']}: {result['games']} games")
