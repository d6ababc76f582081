"""Watch a recorded game: step through it in the terminal, or write it as one HTML page.

Usage::

    tablegym-replay runs/games/kingup_3.json              # step through it in the terminal
    tablegym-replay runs/games/kingup_3.json --viewer 1   # ... as player_1 sees it
    tablegym-replay runs/eval/games.jsonl --index 4 --html game4.html

A record (:mod:`tablegym.records`) is replayed exactly from its seed and actions, and refused
if it does not end with the recorded scores and winners. A viewpoint is one seat
(``render.to_text(state, viewer=seat)``: the public state and that seat's hidden cards),
``public`` (nobody's hidden cards) or ``all`` (the public state and every seat's hidden cards).
The move of each step is shown as the viewpoint saw it: a move hidden from the seat (a vote, a
card laid face down; see :func:`is_visible`) reads "moved (hidden)", in the public view too.

Terminal commands: Enter or ``n`` next, ``b`` back, ``j N`` jump to step N, ``v SEAT``,
``v public`` or ``v all`` change the viewpoint, ``?`` help, ``q`` quit (a closed stdin quits
too).

The HTML page
    One self-contained file (no network access: the script and style are inline) with a step
    slider, back/next buttons (and the arrow keys), the move played at each step and a
    viewpoint switch; ``page.html#step=40&view=0`` opens a step and view. Each position is
    shown as the game's picture (``render.draw``, drawn in the page as SVG; ``everything``
    shows every seat's picture side by side, as many to a row as fit with the smallest text
    at 9 px or more, so it stays readable on a 1400 px screen) above its text
    (``render.to_text``). Both are
    stored compactly, as a KdK game has hundreds to thousands of steps: the pictures as
    shapes (:mod:`tablegym.picture`), every distinct shape once and each picture as the
    numbers of its shapes; the text as every distinct line once, each position as the line
    numbers of its public view, and each seat's view as the number of public lines it shares
    plus its own lines. A page costs one to two kilobytes a step; the small inline script
    builds each view on demand. Drawing takes about 10 ms a picture (the public one and one
    per seat at every step).
"""

from __future__ import annotations

import argparse
import html
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tablegym.cli import OneLineParser
from tablegym.files import WriteError, write_text_atomic
from tablegym.games import env_class
from tablegym.picture import Painter, ShapeTable
from tablegym.records import check_writable, read_records, replay


def is_visible(
    rules: Any,
    observation: Any,
    state: Any,
    action: int,
    viewers: Sequence[int],
    samples: int = 8,
) -> bool:
    """Whether every seat in ``viewers`` can tell ``action`` (by ``state.to_play``) from any
    other possible move.

    A move is hidden from a viewer if another legal move leaves the viewer's observation as
    ``action`` does (a vote, a card laid face down), all played with the same chance draws.
    A forced move is checked against the moves of states that ``rules.sample_state`` draws as
    the viewer sees the game: the only card the mover could lay face down is still hidden.
    """  # fmt: skip

    def seen(position: Any, a: int, seat: int) -> bytes:
        after = rules.apply_action(position, a, np.random.default_rng(0))
        return observation.encode(after, seat).tobytes()

    legal = rules.legal_actions(state)
    for seat in viewers:
        mine = seen(state, action, seat)
        if any(seen(state, a, seat) == mine for a in legal if a != action):
            return False
        # With a choice, a hidden move would have matched another legal move just above.
        if len(legal) == 1:
            rng = np.random.default_rng(0)
            for _ in range(samples):
                position = rules.sample_state(state, seat, rng)
                others = [a for a in rules.legal_actions(position) if a != action]
                if any(seen(position, a, seat) == mine for a in others):
                    return False
    return True


class Game:
    """A replayed record: the position before each action and after the last one."""

    def __init__(self, record: dict[str, Any]):
        replay(record)  # refuses a record that does not end as recorded
        self.record = record
        env = env_class(record["game"])(**record["options"])
        env.reset(seed=record["seed"])
        self.states = [env.game_state]
        for action in record["actions"]:
            env.step(action)
            self.states.append(env.game_state)
        self.rules, self.rendering, self.observation = env.rules, env.rendering, env.observation
        self.num_players = env.config.num_players
        self._hidden: dict[int, int] = {}

    def hidden_from(self, step: int) -> int:
        """Bit mask of the seats that could not see the move of ``step`` (0 for the deal)."""
        if step == 0:
            return 0
        if step not in self._hidden:
            state, action = self.states[step - 1], self.record["actions"][step - 1]
            others = [s for s in range(self.num_players) if s != state.to_play]
            self._hidden[step] = sum(
                1 << s
                for s in others
                if not is_visible(self.rules, self.observation, state, action, [s])
            )
        return self._hidden[step]

    def move(self, step: int, viewpoint: int | str = "all") -> str:
        """The move that leads from position ``step - 1`` to ``step``, as ``viewpoint`` saw it:
        a seat that could not see it, and the public view if any seat could not, get
        "moved (hidden)"."""
        if step == 0:
            return "the deal"
        seat = self.states[step - 1].to_play
        spec, action = self.record["agents"][seat], self.record["actions"][step - 1]
        mask = 0 if viewpoint == "all" else self.hidden_from(step)
        hidden = mask if viewpoint == "public" else mask >> viewpoint & 1 if mask else 0
        shown = "moved (hidden)" if hidden else self.rules.describe_action(action)
        return f"player_{seat} ({spec}): {shown}"

    def lines(self, step: int, viewpoint: int | str) -> list[str]:
        """The position ``step`` as seen from ``viewpoint`` (a seat, ``public`` or ``all``)."""
        state = self.states[step]
        if viewpoint == "public":
            return self.rendering.to_text(state).splitlines()
        if viewpoint != "all":
            return self.rendering.to_text(state, viewer=viewpoint).splitlines()
        public = self.rendering.to_text(state).splitlines()
        return public + [
            line
            for seat in range(self.num_players)
            for line in _own_lines(public, self.rendering.to_text(state, viewer=seat).splitlines())
        ]


def _shared(public: list[str], seat: list[str]) -> int:
    """How many leading lines ``seat``'s view shares with the public view."""
    k = 0
    while k < min(len(public), len(seat)) and public[k] == seat[k]:
        k += 1
    return k


def _own_lines(public: list[str], seat: list[str]) -> list[str]:
    """The lines of ``seat``'s view after those it shares with the public view."""
    return seat[_shared(public, seat) :]


def parse_viewpoint(text: str, num_players: int) -> int | str:
    """``public``, ``all`` or a seat number; ValueError naming what is allowed."""
    text = text.strip().lower().removeprefix("player_")
    if text in ("public", "all"):
        return text
    if text.isdigit() and int(text) < num_players:
        return int(text)
    raise ValueError(f"viewpoint must be public, all or a seat from 0 to {num_players - 1}")


# -- terminal -----------------------------------------------------------------------------

HELP = "Enter/n next, b back, j N jump to step N, v SEAT|public|all viewpoint, ? help, q quit"


def browse(
    game: Game,
    viewpoint: int | str = "public",
    read: Callable[[str], str] = input,
    write: Callable[[str], None] = print,
) -> None:
    """Step through ``game`` at the terminal until ``q`` or the end of stdin."""
    last = len(game.states) - 1
    step = 0
    show = True
    while True:
        if show:
            who = "everything" if viewpoint == "all" else (
                "public" if viewpoint == "public" else f"player_{viewpoint}"
            )  # fmt: skip
            write(f"--- step {step}/{last}: {game.move(step, viewpoint)}   [view: {who}]")
            write("\n".join(game.lines(step, viewpoint)))
        show = True
        try:
            command = read("replay> ").strip()
        except EOFError:
            return
        word, _, arg = command.partition(" ")
        if word in ("", "n"):
            if step == last:
                write(f"the game ends at step {last}; b goes back, q quits")
                show = False
            step = min(step + 1, last)
        elif word == "b":
            step = max(step - 1, 0)
        elif word == "j" and arg.strip().isdigit():
            step = min(int(arg), last)
        elif word == "v" and arg:
            try:
                viewpoint = parse_viewpoint(arg, game.num_players)
            except ValueError as err:
                write(str(err))
                show = False
        elif word == "q":
            return
        else:
            write(HELP)
            show = False


# -- HTML ---------------------------------------------------------------------------------


def page_data(game: Game, progress: bool = False) -> dict[str, Any]:
    """The compact JSON behind the page: distinct lines and shapes, then per step their
    numbers; ``progress`` shows a bar while the pictures are drawn."""
    table: dict[str, int] = {}

    def ids(lines: list[str]) -> list[int]:
        return [table.setdefault(line, len(table)) for line in lines]

    painter, shapes = Painter(game.rendering.draw), ShapeTable()
    views = [None, *range(game.num_players)]  # the public picture, then each seat's
    pictures = []
    frames = []
    for state in _progress(game.states, progress):
        pictures.append([shapes.add(painter(state, viewer)) for viewer in views])
        public = game.rendering.to_text(state).splitlines()
        seats = []
        for seat in range(game.num_players):
            own = game.rendering.to_text(state, viewer=seat).splitlines()
            k = _shared(public, own)
            seats.append([k, *ids(own[k:])])
        frames.append([ids(public), seats])
    record = game.record
    return {
        "title": f"{record['game']} ({record['env_version']}), seed {record['seed']}",
        "players": [f"player_{s} ({spec})" for s, spec in enumerate(record["agents"])],
        "result": "scores "
        + ", ".join(f"{s:g}" for s in record["scores"])
        + "; winners: "
        + ", ".join(f"player_{w}" for w in record["winners"]),
        "lines": list(table),
        "frames": frames,
        "moves": [game.move(step) for step in range(len(game.states))],
        "hidden": [game.hidden_from(step) for step in range(len(game.states))],
        "size": [round(v, 1) for v in painter.points],
        "shapes": shapes.shapes,
        "pictures": pictures,
    }


def _progress(states: list[Any], shown: bool) -> Any:
    if not shown:
        return states
    try:
        from tqdm import tqdm
    except ImportError:  # tqdm comes with the train extra; the page does not need it
        return states
    return tqdm(states, desc="drawing", unit="step", leave=False, disable=None)


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>%(title)s</title>
<style>
html { overflow-y: scroll; }  /* a scrollbar that comes and goes would change the row width */
body { font-family: sans-serif; margin: 1.2em; background: #fafafa; color: #222; }
#bar { display: flex; gap: .6em; align-items: center; flex-wrap: wrap; }
#slider { flex: 1; min-width: 16em; }
#move { font-weight: bold; margin: .6em 0; }
pre { background: #fff; border: 1px solid #ccc; padding: .8em; font-size: 14px;
      line-height: 1.3; overflow-x: auto; }
.act { background: #fff3c4; }
.own { color: #1a5fb4; }
#picture { display: flex; flex-wrap: wrap; gap: .6em; }
#picture figure { margin: 0; background: #fff; border: 1px solid #ccc; }
#picture figcaption { font-size: 12px; padding: .2em .5em; color: #555; }
#picture svg { display: block; width: 100%%; height: auto; }
</style></head><body>
<h2>%(title)s</h2>
<div>%(players)s<br>%(result)s</div>
<p id="bar">
<button id="prev">&#9664; back</button>
<input type="range" id="slider" min="0" value="0">
<button id="next">next &#9654;</button>
<span id="counter"></span>
<label>view <select id="view"></select></label>
</p>
<div id="move"></div>
<div id="picture"></div>
<pre id="board"></pre>
<script id="data" type="application/json">%(data)s</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const slider = document.getElementById("slider"), view = document.getElementById("view");
const board = document.getElementById("board");
slider.max = D.frames.length - 1;
const options = [["public", "public"], ["all", "everything"]].concat(
  D.players.map((p, s) => [String(s), p]));
for (const [value, label] of options) {
  const o = document.createElement("option"); o.value = value; o.textContent = label;
  view.appendChild(o);
}
function lines(step, v) {
  const [pub, seats] = D.frames[step];
  if (v === "public") return pub.map(i => [i, false]);
  if (v === "all") {
    const extra = seats.flatMap(s => s.slice(1));
    return pub.map(i => [i, false]).concat(extra.map(i => [i, true]));
  }
  const s = seats[Number(v)];
  return pub.slice(0, s[0]).map(i => [i, false]).concat(s.slice(1).map(i => [i, true]));
}
function show() {
  const step = Number(slider.value);
  document.getElementById("counter").textContent = "step " + step + " / " + slider.max;
  const v = view.value, mask = D.hidden[step];
  const hidden = v === "all" ? 0 : v === "public" ? mask : (mask >> Number(v)) & 1;
  document.getElementById("move").textContent =
    hidden ? D.moves[step].replace(/: .*$/, ": moved (hidden)") : D.moves[step];
  board.replaceChildren(...lines(step, view.value).map(([i, own]) => {
    const span = document.createElement("span");
    const text = D.lines[i];
    span.textContent = text + "\\n";
    if (own) span.className = "own";
    else if (/^\\s?>/.test(text)) span.className = "act";
    return span;
  }));
  board.dataset.step = String(step);
  drawPictures(step, v);
}
const SVG = "http://www.w3.org/2000/svg";
const BASELINE = {top: "hanging", middle: "central", bottom: "text-after-edge",
                  baseline: "auto"};
function element(name, attributes) {
  const e = document.createElementNS(SVG, name);
  for (const [k, value] of Object.entries(attributes)) e.setAttribute(k, value);
  return e;
}
function shape(s) {
  if (s[0] === "r") {
    const [, x, y, w, h, fill, stroke, lw, rx, hatched] = s;
    const box = element("rect", {x, y, width: w, height: h, rx, fill, stroke,
                                 "stroke-width": lw});
    if (!hatched) return [box];
    return [box, element("rect", {x, y, width: w, height: h, fill: "url(#hatch)"})];
  }
  const [, x, y, text, size, colour, anchor, valign, bold, mono] = s;
  const lines = text.split("\\n");
  const first = {top: 0, middle: -(lines.length - 1) / 2}[valign] ?? -(lines.length - 1);
  const t = element("text", {x, y, "font-size": size, fill: colour, "text-anchor": anchor,
                             "dominant-baseline": BASELINE[valign]});
  t.setAttributeNS("http://www.w3.org/XML/1998/namespace", "xml:space", "preserve");
  if (bold) t.setAttribute("font-weight", "bold");
  if (mono) t.setAttribute("font-family", "monospace");
  lines.forEach((line, i) => {
    const span = element("tspan", {x, dy: ((i === 0 ? first : 1) * 1.2) + "em"});
    span.textContent = line;
    t.appendChild(span);
  });
  return [t];
}
function picture(ids, caption) {
  const [w, h] = D.size;
  const svg = element("svg", {viewBox: `0 0 ${w} ${h}`, "font-family": "sans-serif"});
  const pattern = element("pattern", {id: "hatch", width: 6, height: 6,
    patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)"});
  pattern.appendChild(element("line", {x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#000"}));
  const defs = element("defs", {});
  defs.appendChild(pattern);
  svg.appendChild(defs);
  for (const i of ids) for (const e of shape(D.shapes[i])) svg.appendChild(e);
  const figure = document.createElement("figure");
  figure.appendChild(svg);
  const label = document.createElement("figcaption");
  label.textContent = caption;
  figure.appendChild(label);
  return figure;
}
const READABLE = 9;  // px: the smallest picture text, scaled, is at least this large
const MIN_FONT = Math.min(...D.shapes.filter(s => s[0] !== "r").map(s => s[4]), 12);
function drawPictures(step, v) {
  const views = D.pictures[step], box = document.getElementById("picture");
  const [w] = D.size;
  let shown;
  if (v === "all") shown = D.players.map((p, s) => [views[s + 1], "as " + p + " sees it"]);
  else if (v === "public") shown = [[views[0], "public"]];
  else shown = [[views[Number(v) + 1], "as " + D.players[Number(v)] + " sees it"]];
  // Everything: as many pictures side by side as fit at a readable size (the smallest text at
  // READABLE px), sharing the row's width; one picture: 1.4 times its size, within the page.
  const gap = parseFloat(getComputedStyle(box).columnGap) || 0, avail = box.clientWidth - 2;
  let width = Math.min(w * 1.4, avail);
  if (shown.length > 1) {
    const least = w * READABLE / MIN_FONT;
    const cols = Math.max(1, Math.min(shown.length, Math.floor((avail + gap) / (least + gap))));
    width = Math.max(least, (avail + gap) / cols - gap - 2);
  }
  box.replaceChildren(...shown.map(([ids, caption]) => {
    const f = picture(ids, caption);
    f.style.width = width + "px";
    return f;
  }));
  box.dataset.step = String(step);
}
function go(delta) { slider.value = Math.min(Math.max(Number(slider.value) + delta, 0),
  Number(slider.max)); show(); }
slider.addEventListener("input", show);
view.addEventListener("change", show);
window.addEventListener("resize", show);
document.getElementById("prev").addEventListener("click", () => go(-1));
document.getElementById("next").addEventListener("click", () => go(1));
document.addEventListener("keydown", e => {
  if (e.target === slider) return;
  if (e.key === "ArrowRight") go(1);
  if (e.key === "ArrowLeft") go(-1);
});
// A link may open a step and view: page.html#step=40&view=0
const wanted = new URLSearchParams(location.hash.slice(1));
if (wanted.has("step")) slider.value = wanted.get("step");
if (options.some(([value]) => value === wanted.get("view"))) view.value = wanted.get("view");
show();
</script></body></html>
"""


def to_html(game: Game, progress: bool = False) -> str:
    """The self-contained replay page of ``game``."""
    data = page_data(game, progress)
    # "</" inside the JSON would end the script element early.
    blob = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return _PAGE % {
        "title": html.escape(data["title"]),
        "players": html.escape(", ".join(data["players"])),
        "result": html.escape(data["result"]),
        "data": blob,
    }


# -- CLI ----------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The command line; see the module docstring."""
    p = OneLineParser(prog="tablegym-replay", description=__doc__.split("\n\n")[0])
    p.add_argument("file", type=Path, help="a record: FILE.json, or FILE.jsonl with --index")
    p.add_argument("--index", type=int, default=0, help="which record of a .jsonl file (0 first)")
    p.add_argument("--viewer", default="public", help="a seat, public or all (default public)")
    p.add_argument("--html", type=Path, metavar="OUT.html", help="write the replay page")
    return p


def check_matplotlib() -> None:
    """ValueError if matplotlib, which draws the page's pictures, is missing."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise ValueError("--html draws the positions with matplotlib: pip install matplotlib")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; bad input ends with one ``error: ...`` line and status 1."""
    args = build_parser().parse_args(argv)
    try:
        records = read_records(args.file)
        if not 0 <= args.index < len(records):
            raise ValueError(f"--index must be from 0 to {len(records) - 1}; got {args.index}")
        record = records[args.index]
        try:
            viewer = parse_viewpoint(args.viewer, len(record["agents"]))
        except ValueError as err:
            raise ValueError(f"--viewer: {err}") from None
        if args.html is not None:
            check_writable(args.html, "--html")
            check_matplotlib()
        game = Game(record)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if args.html is not None:
        try:
            write_text_atomic(args.html, to_html(game, progress=True))
        except WriteError as err:  # a full disk: the page is written whole or not at all
            print(f"error: {err}", file=sys.stderr)
            return 1
        print(f"wrote {args.html} ({len(game.states) - 1} steps)")
        return 0
    browse(game, viewer)
    return 0


def cli() -> None:
    """Console entry point."""
    sys.exit(main())


if __name__ == "__main__":
    cli()
