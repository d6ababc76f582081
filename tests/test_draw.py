"""render.draw: a matplotlib picture of a position, for a fresh and a mid-game state."""

from __future__ import annotations

import importlib
import io

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")  # no display in tests and CI

from matplotlib.figure import Figure  # noqa: E402

GAMES = {"kingup_env": 4, "updown_env": 3, "kdk_env": 3}


def position(package: str, steps: int):
    """The raw env after ``steps`` random legal actions from a seeded deal."""
    env = importlib.import_module(package).raw_env(num_players=GAMES[package])
    env.reset(seed=7)
    rng = np.random.default_rng(7)
    for _ in range(steps):
        env.step(int(rng.choice(env.legal_actions())))
    return env


@pytest.mark.parametrize("package", list(GAMES))
@pytest.mark.parametrize("steps", [0, 30])
@pytest.mark.parametrize("viewer", [None, 1])
def test_draw_returns_a_figure_that_renders(package, steps, viewer):
    env = position(package, steps)
    fig = env.rendering.draw(env.game_state, viewer=viewer)
    assert isinstance(fig, Figure)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    assert buf.getvalue().startswith(b"\x89PNG")


@pytest.mark.parametrize("package", list(GAMES))
def test_draw_into_given_axes(package):
    env = position(package, 10)
    fig = Figure()
    axes = fig.subplots(1, 2)
    assert env.rendering.draw(env.game_state, ax=axes[1]) is fig
    assert axes[1].texts and not axes[0].texts
