"""render.draw: a matplotlib picture of a position, for a fresh and a mid-game state."""

from __future__ import annotations

import io

import pytest
from helpers import random_position

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")  # no display in tests and CI

from matplotlib.figure import Figure  # noqa: E402

from tablegym.games import env_class  # noqa: E402

PLAYERS = {"kingup": 4, "updown": 3, "kdk": 3}


def position(game: str, steps: int):
    """The raw env after ``steps`` random legal actions from a seeded deal."""
    return random_position(env_class(game)(num_players=PLAYERS[game]), seed=7, steps=steps)


@pytest.mark.parametrize("game", list(PLAYERS))
@pytest.mark.parametrize("steps", [0, 30])
@pytest.mark.parametrize("viewer", [None, 1])
def test_draw_returns_a_figure_that_renders(game, steps, viewer):
    env = position(game, steps)
    fig = env.rendering.draw(env.game_state, viewer=viewer)
    assert isinstance(fig, Figure)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    assert buf.getvalue().startswith(b"\x89PNG")


@pytest.mark.parametrize("game", list(PLAYERS))
def test_draw_into_given_axes(game):
    env = position(game, 10)
    fig = Figure()
    axes = fig.subplots(1, 2)
    assert env.rendering.draw(env.game_state, ax=axes[1]) is fig
    assert axes[1].texts and not axes[0].texts
