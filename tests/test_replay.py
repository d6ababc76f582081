"""tablegym-replay (tablegym/replay.py): terminal stepping, viewpoints, the HTML page, and the
page in headless Chromium (driven over the DevTools protocol on a pipe: no extra package)."""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import FAST

from tablegym.picture import Painter, to_svg
from tablegym.records import record_of_env, write_record
from tablegym.replay import Game, browse, main, page_data, parse_viewpoint, to_html
from training.play import play

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def record(game: str, n: int, seed: int, spec: str = "heuristic", **options: Any) -> dict:
    """The record of a game between ``spec`` agents (in the fast test options but ``options``)."""
    options = {"num_players": n, **FAST.get(game, {}), **options}
    env = play(game, [spec] * n, seed, options, write=lambda _: None)
    return record_of_env(env, game, options, seed, [spec] * n)


def test_terminal_steps_jumps_goes_back_and_changes_viewpoint():
    game = Game(record("updown", 2, seed=1))
    out: list[str] = []
    commands = iter(["n", "n", "b", "j 9999", "n", "v 1", "v 7", "v all", "x", "q", "never"])
    browse(game, "public", read=lambda _: next(commands), write=out.append)
    headers = [line for line in out if line.startswith("--- step")]
    last = len(game.states) - 1
    steps = [int(h.split()[2].split("/")[0]) for h in headers]
    assert steps == [0, 1, 2, 1, last, last, last]
    assert "the game ends at step" in " ".join(out)
    assert headers[-2].endswith("[view: player_1]") and headers[-1].endswith("[view: everything]")
    assert "viewpoint must be public, all or a seat from 0 to 1" in out
    text = "\n".join(out)
    assert "Hand of player_1" in text and "Hand of player_0" in out[-2]  # everything at the end


def test_a_closed_stdin_ends_the_terminal_replay():
    def closed(_: str) -> str:
        raise EOFError

    game = Game(record("kingup", 3, seed=2, num_rounds=1))
    out: list[str] = []
    browse(game, 0, read=closed, write=out.append)
    assert out[0].startswith("--- step 0/") and "player_0 favourites" in out[1]


def test_viewpoints_show_each_seat_its_own_cards_and_all_of_them_to_everything():
    game = Game(record("kdk", 3, seed=3))
    step = len(game.states) // 2
    public = game.lines(step, "public")
    for seat in range(3):
        mine = game.lines(step, seat)
        assert any(f"player_{seat} hand:" in line for line in mine)
        assert not any(f"player_{other} hand:" in line for line in mine for other in range(3)
                       if other != seat)  # fmt: skip
    everything = game.lines(step, "all")
    assert everything[: len(public)] == public
    assert all(any(f"player_{s} hand:" in line for line in everything) for s in range(3))
    assert parse_viewpoint("player_2", 3) == 2 and parse_viewpoint("ALL", 3) == "all"


def test_a_seat_does_not_see_the_moves_hidden_from_it():
    """Up & Down cards are chosen face down: only the last chooser's card is seen at once."""
    game = Game(record("updown", 3, seed=2))
    masks = [game.hidden_from(step) for step in range(len(game.states))]
    step = next(s for s, mask in enumerate(masks) if mask)
    mover = game.states[step - 1].to_play
    assert masks[step] == sum(1 << s for s in range(3) if s != mover)
    action = game.rules.describe_action(game.record["actions"][step - 1])
    assert game.move(step, "all").endswith(action) and game.move(step, mover).endswith(action)
    assert game.move(step, (mover + 1) % 3).endswith(": moved (hidden)")
    assert game.move(step, "public").endswith(": moved (hidden)")
    assert sum(map(bool, masks)) > 10 and not all(masks[1:])


def test_page_data_rebuilds_every_view_of_every_step():
    """The compact page data (line table, shared prefix + own lines) loses nothing."""
    game = Game(record("kingup", 4, seed=5, num_rounds=1))
    data = page_data(game)
    assert len(data["frames"]) == len(game.states) == len(data["moves"])
    for step in range(0, len(game.states), 7):
        public_ids, seats = data["frames"][step]
        public = [data["lines"][i] for i in public_ids]
        assert public == game.lines(step, "public")
        for seat, (shared, *own) in enumerate(seats):
            view = public[:shared] + [data["lines"][i] for i in own]
            assert view == game.lines(step, seat)


def test_page_pictures_are_the_draw_pictures_of_every_view():
    """Each step holds the public picture and one per seat, rebuilt from the shape table
    exactly as ``render.draw`` makes them; a seat's picture shows its hand, no other's."""
    game = Game(record("kdk", 3, seed=3))
    data = page_data(game)
    painter = Painter(game.rendering.draw)
    assert len(data["pictures"]) == len(game.states)
    for step in range(0, len(game.states), 9):
        public, *seats = data["pictures"][step]
        assert [data["shapes"][i] for i in public] == painter(game.states[step])
        for seat, ids in enumerate(seats):
            shapes = [data["shapes"][i] for i in ids]
            assert shapes == painter(game.states[step], seat)
            texts = " ".join(s[3] for s in shapes if s[0] == "t")
            assert f"hand of player_{seat}" in texts
            assert not any(f"hand of player_{o}" in texts for o in range(3) if o != seat)
    assert data["size"] == [round(v, 1) for v in painter.points]


def test_to_svg_draws_boxes_and_texts():
    shapes = [["r", 1, 2, 30, 40, "#ffffff", "#000000", 1, 0, True],
              ["t", 5, 6, "A\nB<", 9, "#ff0000", "middle", "middle", True, False]]  # fmt: skip
    svg = to_svg(shapes, 100, 50)
    assert svg.startswith("<svg") and 'viewBox="0 0 100 50"' in svg
    assert 'fill="url(#hatch)"' in svg and ">B&lt;</tspan>" in svg and 'font-weight="bold"' in svg


def test_the_page_is_self_contained_and_small_for_a_long_game(tmp_path):
    long = record("kdk", 4, seed=5, spec="random", num_rounds=2, max_round_steps=2000)
    page = to_html(Game(long))
    assert "http://" not in page.replace('"http://www.w3.org/', "") and "https://" not in page
    assert "src=" not in page
    steps = len(long["actions"])
    assert steps > 300
    assert len(page.encode()) < 2000 * steps  # one to two kilobytes a step, all views included


def test_cli_writes_html_and_refuses_bad_records_in_one_line(tmp_path, capsys):
    rec = record("updown", 3, seed=4)
    path = write_record(tmp_path / "g.json", rec)
    out = tmp_path / "g.html"
    assert main([str(path), "--html", str(out)]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    old = write_record(tmp_path / "old.json", {**rec, "env_version": "updown_v0"})
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    cases = [
        ([str(old)], "error: " + str(old) + ": recorded with env 'updown_v0'"),
        ([str(bad)], "error: " + str(bad) + " is not JSON"),
        ([str(path), "--index", "3"], "error: --index must be from 0 to 0; got 3"),
        ([str(path), "--viewer", "5"], "error: --viewer: viewpoint must be public, all or a seat"),
        ([str(path), "--html", "/sys/tg/x.html"], "error: --html /sys/tg/x.html: cannot write"),
    ]
    capsys.readouterr()
    for argv, message in cases:
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert err.startswith(message) and len(err.splitlines()) == 1, err


# -- the page in headless Chromium --------------------------------------------------------


class Browser:
    """Headless Chromium driven over ``--remote-debugging-pipe`` (DevTools protocol, fds 3/4)."""

    FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--remote-debugging-pipe")  # fmt: skip

    def __init__(self, profile: Path, width: int = 1000, height: int = 900):
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()

        def fds() -> None:  # in the child: the protocol's pipe is fd 3 in, fd 4 out
            os.dup2(to_browser, 3)
            os.dup2(from_browser, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, *self.FLAGS, f"--window-size={width},{height}",
             f"--user-data-dir={profile}", "about:blank"],
            pass_fds=(3, 4), preexec_fn=fds, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(to_browser)
        os.close(from_browser)
        self._id, self._buffer, self.events = 0, b"", []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)

    def call(self, method: str, session: bool = False, **params: Any) -> dict:
        """Send one command and wait for its answer; events meanwhile go to ``events``."""
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._next()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 10) -> None:
        """Wait for an event (``Page.loadEventFired`` ...)."""
        end = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self._next(end - time.monotonic()))

    def js(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        result = self.call("Runtime.evaluate", session=True, expression=expression,
                           returnByValue=True, awaitPromise=True)  # fmt: skip
        if "exceptionDetails" in result:
            raise AssertionError(result["exceptionDetails"])
        return result["result"].get("value")

    def _next(self, timeout: float = 10) -> dict:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._read], [], [], max(timeout, 0))
            if not ready:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self._read, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed its pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def close(self) -> None:
        """Close the browser and its pipes."""
        try:
            self.call("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._read)
        os.close(self._write)


def errors(events: list[dict]) -> list[Any]:
    """Console errors, uncaught exceptions and error log entries among the events."""
    found = []
    for e in events:
        method, params = e.get("method"), e.get("params", {})
        if method == "Runtime.exceptionThrown":
            found.append(params["exceptionDetails"])
        elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            found.append(params["args"])
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            found.append(params["entry"])
    return found


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")
@pytest.mark.skipif(sys.platform != "linux", reason="the DevTools pipe is set up for Linux")
def test_the_page_in_headless_chromium(tmp_path):
    rec = record("kingup", 3, seed=6, num_rounds=1)
    page = tmp_path / "game.html"
    page.write_text(to_html(Game(rec)))
    steps = len(rec["actions"])
    browser = Browser(tmp_path / "profile")
    try:
        browser.call("Page.navigate", session=True, url=page.as_uri())
        browser.wait_for("Page.loadEventFired")
        assert browser.js("document.getElementById('board').dataset.step") == "0"
        # The slider through every step: each shows its position and the move played.
        seen = browser.js(f"""(() => {{
            const slider = document.getElementById('slider'), out = [];
            for (let i = 0; i <= {steps}; i++) {{
                slider.value = i; slider.dispatchEvent(new Event('input'));
                const board = document.getElementById('board');
                const svg = document.querySelector('#picture svg');
                out.push([Number(board.dataset.step), board.textContent.startsWith('King Up!')
                          && svg.textContent.includes('King Up!')
                          && svg.querySelectorAll('rect').length >= 7
                          && document.getElementById('picture').dataset.step === String(i),
                          document.getElementById('move').textContent]);
            }}
            return [Number(slider.max), out];
        }})()""")
        assert seen[0] == steps
        assert [s for s, _, _ in seen[1]] == list(range(steps + 1))
        assert all(ok for _, ok, _ in seen[1])
        assert seen[1][1][2] == Game(rec).move(1)
        # A vote hidden from player_1 is hidden in its view, shown in everything's.
        game = Game(rec)
        step = next(s for s in range(1, steps + 1) if game.hidden_from(s) & 2)
        shown = browser.js(f"""(() => {{
            const slider = document.getElementById('slider'), v = document.getElementById('view');
            slider.value = {step}; v.value = '1'; v.dispatchEvent(new Event('change'));
            const seat = document.getElementById('move').textContent;
            v.value = 'all'; v.dispatchEvent(new Event('change'));
            return [seat, document.getElementById('move').textContent];
        }})()""")
        assert shown == [game.move(step, 1), game.move(step, "all")]
        assert shown[0].endswith("moved (hidden)") and "vote" in shown[1]
        # The next button, then a seat's viewpoint: its favourites appear.
        browser.js("document.getElementById('slider').value = 3; document.getElementById("
                   "'next').click()")  # fmt: skip
        assert browser.js("document.getElementById('board').dataset.step") == "4"
        browser.js("const v = document.getElementById('view'); v.value = '1';"
                   "v.dispatchEvent(new Event('change'))")  # fmt: skip
        assert "player_1 favourites" in browser.js("document.getElementById('board').textContent")
        assert "favourites of player_1" in browser.js(
            "document.querySelector('#picture svg').textContent"
        )
        # Everything: one picture per seat, each captioned with its seat.
        captions = browser.js("""(() => {
            const v = document.getElementById('view'); v.value = 'all';
            v.dispatchEvent(new Event('change'));
            return [...document.querySelectorAll('#picture figcaption')].map(c => c.textContent);
        })()""")
        assert captions == [f"as player_{s} (heuristic) sees it" for s in range(3)]
        box = browser.js("(() => { const r = document.querySelector('#picture svg')"
                         ".getBoundingClientRect(); return [r.width, r.height]; })()")  # fmt: skip
        assert box[0] > 200 and box[1] > 150  # drawn at a readable size
        # A link opens a step and a viewpoint.
        link = tmp_path / "link.html"
        link.write_text(page.read_text())
        browser.events.clear()
        browser.call("Page.navigate", session=True, url=link.as_uri() + "#step=5&view=2")
        browser.wait_for("Page.loadEventFired")
        opened = browser.js("[document.getElementById('board').dataset.step,"
                            " document.getElementById('view').value]")  # fmt: skip
        assert opened == ["5", "2"]
        shot = browser.call("Page.captureScreenshot", session=True, format="png")["data"]
        png = base64.b64decode(shot)
        assert png[:4] == b"\x89PNG" and len(png) > 10_000  # a picture, not a blank page
        (tmp_path / "shot.png").write_bytes(png)
        requests = [e["params"]["request"]["url"] for e in browser.events
                    if e.get("method") == "Network.requestWillBeSent"]  # fmt: skip
        assert all(url.startswith(("file:", "data:", "about:")) for url in requests), requests
        assert errors(browser.events) == []
    finally:
        browser.close()


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")
@pytest.mark.skipif(sys.platform != "linux", reason="the DevTools pipe is set up for Linux")
@pytest.mark.parametrize(("game", "n"), [("kingup", 6), ("updown", 4), ("kdk", 5)])
def test_everything_stays_readable_at_1400_px(game, n, tmp_path):
    """Every seat's picture at once, on a 1400 px wide window: no sideways scrolling, the
    smallest text of every picture at 9 px or more, two pictures to a row; a screenshot."""
    rec = record(game, n, seed=1, **({} if game == "updown" else {"num_rounds": 1}))
    page = tmp_path / "game.html"
    page.write_text(to_html(Game(rec)))
    browser = Browser(tmp_path / "profile", width=1400, height=1000)
    try:
        browser.call("Emulation.setDeviceMetricsOverride", session=True, width=1400,
                     height=1000, deviceScaleFactor=1, mobile=False)  # fmt: skip
        browser.call("Page.navigate", session=True, url=page.as_uri() + "#step=5&view=all")
        browser.wait_for("Page.loadEventFired")
        layout = browser.js("""(() => {
            const svgs = [...document.querySelectorAll('#picture svg')];
            const fonts = svgs.map(svg => {
                const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
                const sizes = [...svg.querySelectorAll('text')].map(
                    t => Number(t.getAttribute('font-size')));
                return scale * Math.min(...sizes);
            });
            const tops = svgs.map(svg => Math.round(svg.getBoundingClientRect().top));
            return {width: innerWidth, scroll: document.documentElement.scrollWidth,
                    pictures: svgs.length, fonts, tops};
        })()""")
        shot = browser.call("Page.captureScreenshot", session=True, format="png")
        assert not errors(browser.events)
    finally:
        browser.close()
    png = base64.b64decode(shot["data"])
    (tmp_path / "everything.png").write_bytes(png)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24])[0] == 1400
    assert layout["width"] == 1400 and layout["scroll"] <= 1400  # nothing off to the side
    assert layout["pictures"] == n
    assert min(layout["fonts"]) >= 9, layout["fonts"]
    assert layout["tops"][0] == layout["tops"][1]  # two to a row, not one below the other
