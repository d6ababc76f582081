"""render.draw: a matplotlib picture of a position, for a fresh and a mid-game state."""

from __future__ import annotations

import io

import numpy as np
import pytest
from helpers import FAST, random_playout, random_position

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
def test_every_text_stays_inside_the_picture_at_the_largest_table(game):
    from tablegym.games import spec_of

    n = max(spec_of(game).player_counts)
    env = random_position(env_class(game)(num_players=n), seed=7, steps=30)
    fig = env.rendering.draw(env.game_state, viewer=0)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    inside = fig.bbox
    for text in fig.findobj(matplotlib.text.Text):
        if text.get_text().strip() and text.get_visible():
            box = text.get_window_extent(renderer)
            assert inside.x0 - 1 <= box.x0 and box.x1 <= inside.x1 + 1, text.get_text()
            assert inside.y0 - 1 <= box.y0 and box.y1 <= inside.y1 + 1, text.get_text()


@pytest.mark.parametrize("game", list(PLAYERS))
def test_draw_into_given_axes(game):
    env = position(game, 10)
    fig = Figure()
    axes = fig.subplots(1, 2)
    assert env.rendering.draw(env.game_state, ax=axes[1]) is fig
    assert axes[1].texts and not axes[0].texts


# -- viewpoints: a seat's view shows its own hidden cards and nothing hidden from it ---------

# What only the viewer's text may hold, per game (the renderers' private lines).
PRIVATE = {"kingup": "favourites:", "updown": "Hand of player_", "kdk": "hand:"}


def _texts(fig) -> list[str]:
    return sorted(t.get_text() for ax in fig.axes for t in ax.texts)


@pytest.mark.parametrize("game", list(PLAYERS))
def test_rendered_views_do_not_leak_hidden_information(game):
    """Resample what a seat cannot see (rules.sample_state): its view must not change, and the
    public view must not change whoever's view is resampled."""
    env = env_class(game)(num_players=PLAYERS[game], **FAST.get(game, {}))
    rules, rendering = env.rules, env.rendering
    rng = np.random.default_rng(0)
    checked = 0
    for step, g in enumerate(random_playout(env, seed=11)):
        if step % 5:
            continue
        state = g.game_state
        for seat in range(PLAYERS[game]):
            other = rules.sample_state(state, seat, rng)
            for viewer in (seat, None):
                assert rendering.to_text(other, viewer) == rendering.to_text(state, viewer), (
                    f"{game} step {step}: the view of {viewer} shows what it may not see"
                )
            if step % 25 == 0:  # pictures are slower: fewer of them
                fig_state = rendering.draw(state, viewer=seat)
                assert _texts(rendering.draw(other, viewer=seat)) == _texts(fig_state)
            checked += 1
    assert checked > 20


@pytest.mark.parametrize("game", list(PLAYERS))
def test_a_seat_sees_its_own_hidden_cards(game):
    env = position(game, 12)
    state, rendering = env.game_state, env.rendering
    assert PRIVATE[game] not in rendering.to_text(state)
    for seat in range(PLAYERS[game]):
        mine = rendering.to_text(state, viewer=seat).splitlines()
        private = [line for line in mine if PRIVATE[game] in line]
        assert private and all(f"player_{seat}" in line for line in private)
