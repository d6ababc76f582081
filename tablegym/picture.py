"""The games' ``render.draw`` pictures as compact shapes for SVG (the HTML replay page).

A picture is a list of *shapes*, each a short JSON-able list in points (1/72 inch) from the
top-left corner of the figure, ready for an SVG element:

``["r", x, y, width, height, fill, stroke, stroke_width, rounding, hatched]``  a box
``["t", x, y, text, size, colour, anchor, valign, bold, mono]``             a text

``fill``/``stroke`` are CSS colours (``none`` or ``#rrggbb`` or ``rgba(...)``), ``anchor``
is ``start``/``middle``/``end``, ``valign`` is ``top``/``middle``/``bottom``/``baseline``,
and a text may hold several lines. The shapes are read off the matplotlib axes that
``draw`` filled (its patches, texts and title), so the page shows the very picture that
``draw`` makes, without rasterising it: a position costs a few dozen shapes, most of them
shared with the positions around it. :func:`to_svg` turns a picture into an SVG document
(the page does the same in JavaScript).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

Shape = list[Any]

_ANCHOR = {"left": "start", "center": "middle", "right": "end"}
_VALIGN = {"top": "top", "center": "middle", "bottom": "bottom", "baseline": "baseline",
           "center_baseline": "middle"}  # fmt: skip


class Painter:
    """Draws positions with one game's ``draw`` on one reused figure and reads off the shapes.

    ``draw(state, viewer=..., ax=...)`` is the game's ``render.draw``; ``size`` is the
    figure's size in inches, taken from a first picture so that every position of a game
    has the same frame.
    """

    def __init__(self, draw: Callable[..., Any]):
        from matplotlib.figure import Figure

        self.draw = draw
        self.figure = Figure()
        self.ax = self.figure.subplots()
        self.size: tuple[float, float] | None = None

    def __call__(self, state: Any, viewer: int | None = None) -> list[Shape]:
        """The shapes of ``draw(state, viewer)``."""
        if self.size is None:
            self.size = tuple(self.draw(state, viewer=viewer).get_size_inches())
            self.figure.set_size_inches(*self.size)
        for artist in [*self.ax.patches, *self.ax.texts]:
            artist.remove()  # much cheaper than ax.clear(), which rebuilds the axis ticks
        self.ax.set_title("")
        self.draw(state, viewer=viewer, ax=self.ax)
        return shapes_of(self.ax)

    @property
    def points(self) -> tuple[float, float]:
        """Width and height of the picture in points."""
        assert self.size is not None, "draw a position first"
        return self.size[0] * 72, self.size[1] * 72


def shapes_of(ax: Any) -> list[Shape]:
    """The boxes and texts on ``ax`` (and its title) in points from the figure's top left."""
    ax.apply_aspect()  # an equal-aspect axes settles its box only when drawn
    figure = ax.figure
    scale = 72 / figure.dpi
    height = figure.get_size_inches()[1] * 72

    def point(xy: Any) -> tuple[float, float]:
        x, y = ax.transData.transform(xy) * scale
        return round(float(x), 1), round(float(height - y), 1)

    shapes: list[Shape] = []
    for patch in ax.patches:
        shapes.append(_box(patch, point))
    for text in [*ax.texts, ax.title]:
        if text.get_text():
            shapes.append(_text(text, point, scale, ax))
    return shapes


def _box(patch: Any, point: Callable) -> Shape:
    corners = patch.get_path().transformed(patch.get_patch_transform()).get_extents()
    (x0, y1), (x1, y0) = point((corners.x0, corners.y0)), point((corners.x1, corners.y1))
    rounding = 0.0
    if hasattr(patch, "get_boxstyle"):  # FancyBboxPatch: its extents include the padding
        style = patch.get_boxstyle()
        rounding = round(float(getattr(style, "pad", 0.0)) * abs(x1 - x0), 1)
    return [
        "r", x0, y0, round(x1 - x0, 1), round(y1 - y0, 1),
        _colour(patch.get_facecolor(), patch.get_fill()),
        _colour(patch.get_edgecolor(), patch.get_linewidth() > 0),
        round(patch.get_linewidth(), 2),  # matplotlib line widths are in points already
        rounding, bool(patch.get_hatch()),
    ]  # fmt: skip


def _text(text: Any, point: Callable, scale: float, ax: Any) -> Shape:
    if text is ax.title:  # the title sits in axes coordinates above the plot
        x, y = ax.transAxes.transform((0.5, 1.0)) * scale
        height = ax.figure.get_size_inches()[1] * 72
        x, y = round(float(x), 1), round(float(height - y - 4), 1)
        valign = "bottom"
    else:
        x, y = point(text.get_position())
        valign = _VALIGN.get(text.get_verticalalignment(), "baseline")
    family = text.get_fontfamily()
    return [
        "t", x, y, text.get_text(), round(float(text.get_fontsize()), 1),
        _colour(text.get_color(), True), _ANCHOR.get(text.get_horizontalalignment(), "start"),
        valign, text.get_fontweight() in ("bold", "heavy", 700, 800, 900),
        "monospace" in family,
    ]  # fmt: skip


def _colour(value: Any, shown: bool) -> str:
    from matplotlib.colors import to_rgba

    if not shown:
        return "none"
    r, g, b, a = to_rgba(value)
    if a == 0:
        return "none"
    rgb = "#{:02x}{:02x}{:02x}".format(*(int(round(c * 255)) for c in (r, g, b)))
    return rgb if a == 1 else f"rgba({r * 255:.0f},{g * 255:.0f},{b * 255:.0f},{a:.2f})"


# -- SVG ----------------------------------------------------------------------------------

_BASELINE = {"top": "hanging", "middle": "central", "bottom": "text-after-edge",
             "baseline": "auto"}  # fmt: skip
_HATCH = (
    '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
    'patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" stroke="#000" '
    'stroke-width="1"/></pattern></defs>'
)


def to_svg(shapes: list[Shape], width: float, height: float) -> str:
    """One SVG document of ``shapes`` on a ``width`` x ``height`` point canvas."""
    body = "".join(map(_svg_shape, shapes))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:g} {height:g}" '
        f'width="{width:g}" height="{height:g}" font-family="sans-serif">{_HATCH}'
        f'<rect width="100%" height="100%" fill="#fff"/>{body}</svg>'
    )


def _svg_shape(shape: Shape) -> str:
    if shape[0] == "r":
        _, x, y, w, h, fill, stroke, lw, rx, hatched = shape
        out = (
            f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="{rx}" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="{lw}"/>'
        )
        if hatched:
            out += f'<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="url(#hatch)"/>'
        return out
    _, x, y, text, size, colour, anchor, valign, bold, mono = shape
    lines = text.split("\n")
    first = {"top": 0.0, "middle": -(len(lines) - 1) / 2, "bottom": -(len(lines) - 1)}.get(
        valign, -(len(lines) - 1)
    )
    spans = "".join(
        f'<tspan x="{x}" dy="{(first if i == 0 else 1) * 1.2:g}em">{html.escape(line)}</tspan>'
        for i, line in enumerate(lines)
    )
    style = (' font-weight="bold"' if bold else "") + (' font-family="monospace"' if mono else "")
    return (
        f'<text x="{x}" y="{y}" font-size="{size}" fill="{colour}" text-anchor="{anchor}" '
        f'dominant-baseline="{_BASELINE[valign]}" xml:space="preserve"{style}>{spans}</text>'
    )


class ShapeTable:
    """Every distinct shape once; :meth:`add` gives a picture as the numbers of its shapes."""

    def __init__(self) -> None:
        self.shapes: list[Shape] = []
        self._ids: dict[str, int] = {}

    def add(self, picture: list[Shape]) -> list[int]:
        """The numbers of ``picture``'s shapes, new shapes appended to :attr:`shapes`."""
        numbers = []
        for shape in picture:
            key = repr(shape)
            if key not in self._ids:
                self._ids[key] = len(self.shapes)
                self.shapes.append(shape)
            numbers.append(self._ids[key])
        return numbers
