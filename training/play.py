"""Play a game at the terminal: humans and bots of any agent spec at one table.

Usage::

    tablegym-play --game kingup --agents human heuristic ismcts:200 random --seed 3 \\
        --record runs/games/kingup_3.json

One spec per seat: ``human`` or any spec of ``training/registry.py`` (``random``,
``heuristic``, ``ismcts:N``, ``ppo:PATH``, or ``ppo:GAME`` for the game's built-in trained
bot). The number of specs is the number of players (``--num-players`` may repeat it; other
game options go through ``--option KEY=VALUE``).

A human seat sees the position from its own seat (``render.to_text(state, viewer=seat)``: its
hand or favourites and the public state, never another seat's hidden cards) and its legal
moves, each with its action id and its name. Type the id or the name (any unambiguous start
of it, case ignored; an ambiguous one lists the moves it could be); ``?`` lists the moves
again (and the game's legend of symbols, KdK's), ``q`` quits. A move that is the only legal
one is played without asking. King Up! tells the table at each round end which candidate was
crowned, each seat's points and the favourites revealed. Every move is printed as it is
played (``--pause S`` waits S seconds after each bot move); a move that a human at the table
may not see (a vote or a card kept face down until all have chosen) is printed as "moved
(hidden)": a move is shown only if it changes every other human seat's observation differently
from the other legal moves. At the end: the final position, scores
and winners. ``--record FILE.json`` writes the finished game as a record
(:mod:`tablegym.records`) that ``tablegym-replay`` steps through.

Bad input (an unknown spec, more seats than the game has, a bad seed, an output that cannot be
written) ends with one line ``error: ...`` before the game starts; a closed stdin or Ctrl-C
ends the game with one line too.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.base import GameView  # noqa: E402
from tablegym.cli import OneLineParser  # noqa: E402
from tablegym.files import WriteError  # noqa: E402
from tablegym.games import GAMES, env_class, spec_of  # noqa: E402
from tablegym.options import parse_key_value  # noqa: E402
from tablegym.records import check_writable, record_of_env, write_record  # noqa: E402
from tablegym.replay import is_visible  # noqa: E402
from training.registry import SPECS, make_agent  # noqa: E402

HUMAN = "human"
SHOWN = 6  # candidates an ambiguous move name lists


class QuitError(Exception):
    """The human typed ``q`` or stdin closed: the game ends without a result."""


class Style:
    """ANSI colours when the terminal supports them, plain text otherwise."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    def __call__(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.enabled else text

    @staticmethod
    def for_stream(stream: Any, wanted: bool = True) -> Style:
        """Colour if ``wanted``, ``stream`` is a terminal, TERM is not dumb and NO_COLOR unset."""
        tty = hasattr(stream, "isatty") and stream.isatty()
        plain = os.environ.get("TERM") == "dumb" or "NO_COLOR" in os.environ
        return Style(wanted and tty and not plain)


# -- the table ----------------------------------------------------------------------------


def move_table(rules: Any, legal: Sequence[int], width: int | None = None) -> str:
    """The legal moves as action id and name, in as many columns as fit ``width``."""
    width = width or shutil.get_terminal_size().columns
    digits = len(str(max(legal)))
    cells = [f"{a:>{digits}}  {rules.describe_action(a)}" for a in legal]
    cell = max(len(c) for c in cells) + 3
    cols = max(1, min(len(cells), (width - 2) // cell))
    rows = -(-len(cells) // cols)
    # Column-major, so the moves read down each column in id order.
    lines = [
        "  "
        + "".join(
            cells[r + k * rows].ljust(cell) for k in range(cols) if r + k * rows < len(cells)
        ).rstrip()
        for r in range(rows)
    ]
    return "\n".join(lines)


def parse_move(text: str, rules: Any, legal: Sequence[int]) -> int | str:
    """The action id that ``text`` names (an id or an unambiguous start of a name), or why not."""
    text = " ".join(text.split()).lower()
    if text.lstrip("-").isdigit():
        action = int(text)
        return action if action in legal else f"{action} is not a legal move"
    names = {a: rules.describe_action(a).lower() for a in legal}
    exact = [a for a, name in names.items() if name == text]
    if exact:
        return exact[0]
    matches = [a for a, name in names.items() if name.startswith(text)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        shown = ", ".join(rules.describe_action(a) for a in matches[:SHOWN])
        more = f" and {len(matches) - SHOWN} more" if len(matches) > SHOWN else ""
        return f"{text!r} could be {shown}{more}"
    return f"{text!r} is not a legal move"


def ask_human(
    env: Any, seat: int, read: Callable[[str], str], write: Callable[[str], None], style: Style
) -> int:
    """Show ``seat`` its view and moves, read a move until a legal one comes; QuitError on ``q``."""
    rules, legal = env.rules, env.legal_actions()
    if len(legal) == 1:  # nothing to decide: played for the human, who sees it announced
        write(style(f"--- player_{seat}: one legal move, played for you ---", "36"))
        return legal[0]
    write(style(f"--- player_{seat}, your move ---", "1;36"))
    write(env.rendering.to_text(env.game_state, viewer=seat))
    write(move_table(rules, legal))
    while True:
        try:
            text = read(style(f"player_{seat}> ", "1;36")).strip()
        except EOFError:
            raise QuitError("stdin closed") from None
        if text.lower() in ("q", "quit", "exit"):
            raise QuitError(f"player_{seat} quit")
        if text in ("?", "help"):
            legend = getattr(env.rendering, "LEGEND", None)
            write(move_table(rules, legal) + (f"\n{legend}" if legend else ""))
            continue
        if not text:
            continue
        move = parse_move(text, rules, legal)
        if isinstance(move, int):
            return move
        write(style(f"{move}; type a move's number or name, ? lists them, q quits", "33"))


def play(
    game: str,
    specs: Sequence[str],
    seed: int,
    options: dict[str, Any],
    read: Callable[[str], str] = input,
    write: Callable[[str], None] = print,
    pause: float = 0.0,
    style: Style | None = None,
) -> Any:
    """Play one game to the end and return the raw env; QuitError if a human quits."""
    style = style or Style(False)
    env = env_class(game)(**options)
    humans = [s for s, spec in enumerate(specs) if spec == HUMAN]
    seeds = np.random.SeedSequence([seed, 1]).generate_state(len(specs))
    bots = {
        s: _make(spec, game, options, int(seeds[s]))
        for s, spec in enumerate(specs)
        if s not in humans
    }
    for s, agent in bots.items():
        agent.reset(s)
    env.reset(seed=seed)
    write(style(f"{game}, seed {seed}: " + ", ".join(
        f"player_{s} {spec}" for s, spec in enumerate(specs)), "1"))  # fmt: skip
    legend = getattr(env.rendering, "LEGEND", None)
    if legend and humans:
        write(legend)
    round_summary = getattr(env.rendering, "round_summary", None)
    while not env.rules.is_terminal(env.game_state):
        seat = env.game_state.to_play
        if seat in humans:
            action = ask_human(env, seat, read, write, style)
        else:
            obs = env.observe(env.agent_selection)
            view = GameView(env.rules, env.config, env.game_state, seat)
            action = int(bots[seat].act(obs["observation"], obs["action_mask"], view))
        # The move is announced to the table: to the other humans only if they could see it.
        others = [h for h in humans if h != seat]
        hidden = others and not is_visible(
            env.rules, env.observation, env.game_state, action, others
        )
        shown = "moved (hidden)" if hidden else env.rules.describe_action(action)
        write(style(f"player_{seat} ({specs[seat]}): {shown}", "36" if seat in humans else "32"))
        if pause and seat not in humans:
            time.sleep(pause)
        before = env.game_state
        env.step(action)
        told = round_summary and round_summary(before, env.game_state)
        if told:
            write(style(told, "1;33"))
    return env


def summary(env: Any, specs: Sequence[str], style: Style) -> str:
    """The final position (everything public), scores and winners."""
    rules, state = env.rules, env.game_state
    scores, winners = rules.scores(state), rules.winners(state)
    lines = [style("--- game over ---", "1"), env.rendering.to_text(state)]
    for s, spec in enumerate(specs):
        mark = style("  winner", "1;33") if s in winners else ""
        lines.append(f"  player_{s} ({spec}): score {scores[s]:g}{mark}")
    lines.append("winners: " + ", ".join(f"player_{w} ({specs[w]})" for w in winners))
    return "\n".join(lines)


def _make(spec: str, game: str, options: dict[str, Any], seed: int | None) -> Any:
    """make_agent; a trained policy gets the game options its checkpoint is checked against."""
    if spec.startswith("ppo:"):
        return make_agent(spec, game, seed=seed, **options)
    return make_agent(spec, game, seed=seed)


# -- CLI ----------------------------------------------------------------------------------


def parse_option(text: str) -> tuple[str, Any]:
    """``--option KEY=VALUE`` as :func:`tablegym.options.parse_key_value` reads it."""
    try:
        return parse_key_value(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def build_parser() -> argparse.ArgumentParser:
    """The command line; see the module docstring."""
    p = OneLineParser(prog="tablegym-play", description=__doc__.split("\n\n")[0])
    p.add_argument("--game", required=True, choices=list(GAMES), help="game to play")
    p.add_argument("--agents", nargs="+", required=True, metavar="SPEC",
                   help=f"one spec per seat: human, {SPECS}")  # fmt: skip
    p.add_argument("--num-players", type=int, help="players; default: number of agents")
    p.add_argument("--option", action="append", type=parse_option, default=[], metavar="KEY=VALUE",
                   help="game option, repeatable (e.g. num_rounds=1)")  # fmt: skip
    p.add_argument("--seed", type=int, help="deal seed, 0 or more; default: a random one")
    p.add_argument("--record", type=Path, metavar="FILE.json", help="write the game record")
    p.add_argument("--pause", type=float, default=0.0, metavar="S",
                   help="seconds to wait after each bot move")  # fmt: skip
    p.add_argument("--no-color", action="store_true", help="plain text even on a terminal")
    return p


def check_args(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    """Game options and seed from the arguments; ValueError naming the bad one."""
    game, specs = args.game, args.agents
    options = dict(args.option)
    if args.num_players is not None:
        options["num_players"] = args.num_players
    n = options.setdefault("num_players", len(specs))
    counts = spec_of(game).player_counts
    if n not in counts:
        allowed = ", ".join(map(str, counts))
        raise ValueError(f"--num-players/--agents: {game} is played by {allowed} players; got {n}")
    if len(specs) != n:
        raise ValueError(f"--agents: {n} seats need {n} specs, one per seat; got {len(specs)}")
    try:
        env_class(game)(**options)  # the game's own checks of the other options
    except ValueError as err:
        raise ValueError(f"--option: {err}") from None
    for spec in dict.fromkeys(specs):
        if spec != HUMAN:
            try:
                _make(spec, game, options, 0)
            except (ValueError, FileNotFoundError) as err:
                raise ValueError(f"--agents: {err}") from None
    if args.seed is not None and not 0 <= args.seed < 2**63:
        raise ValueError(f"--seed must be an integer from 0 to 2**63-1; got {args.seed}")
    if args.pause < 0:
        raise ValueError(f"--pause must be 0 or more seconds; got {args.pause}")
    if args.record is not None:
        check_writable(args.record, "--record")
    seed = args.seed if args.seed is not None else secrets.randbits(31)
    return options, seed


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; the exit status (0 finished, 1 bad input or a game left unfinished)."""
    args = build_parser().parse_args(argv)
    try:
        options, seed = check_args(args)
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    style = Style.for_stream(sys.stdout, not args.no_color)
    try:
        env = play(args.game, args.agents, seed, options, pause=args.pause, style=style)
    except QuitError as why:
        print(f"game abandoned ({why}); nothing recorded")
        return 1
    except KeyboardInterrupt:
        print("\ngame abandoned (interrupted); nothing recorded")
        return 1
    print(summary(env, args.agents, style))
    if args.record is not None:
        record = record_of_env(env, args.game, options, seed, args.agents)
        try:
            path = write_record(args.record, record)
        except WriteError as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        print(f"wrote {path}")
    return 0


def cli() -> None:
    """Console entry point."""
    sys.exit(main())


if __name__ == "__main__":
    cli()
