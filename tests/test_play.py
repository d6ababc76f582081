"""tablegym-play (training/play.py): a human at the table through a pseudo-terminal, hidden bot
moves, the record it writes, and one-line errors for bad input."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import make, random_playout

from tablegym.records import read_records, replay
from tablegym.replay import is_visible
from training.play import QuitError, Style, ask_human, move_table, parse_move, play

pexpect = pytest.importorskip("pexpect")

ROOT = Path(__file__).resolve().parent.parent
PLAY = [sys.executable, str(ROOT / "training" / "play.py")]
PROMPT = "player_0> "
# One cell of the move table: action id, two spaces, the move's name.
MOVE = re.compile(r"(\d+)  (\S.*?)(?=\s{3,}\d+  |\s*$)")


def spawn(*args: str) -> pexpect.spawn:
    """tablegym-play in a pseudo-terminal of 200 columns (the move table is laid out by it)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm"}
    child = pexpect.spawn(PLAY[0], [*PLAY[1:], *args], env=env, encoding="utf-8", timeout=30,
                          dimensions=(50, 200))  # fmt: skip
    return child


def moves_shown(text: str) -> dict[int, str]:
    """The move table printed before a prompt: action id -> name."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)  # without the colours
    found = {}
    for line in text.splitlines():
        if re.match(r"^\s+\d+  \S", line):
            found.update((int(a), name.strip()) for a, name in MOVE.findall(line))
    return found


def test_a_human_moves_by_number_and_by_name_is_reprompted_and_quits(tmp_path):
    record = tmp_path / "never.json"
    child = spawn("--game", "updown", "--agents", "human", "random", "--seed", "3",
                  "--no-color", "--record", str(record))  # fmt: skip
    child.expect_exact(PROMPT)
    assert "Hand of player_0:" in child.before  # its own hand, from its own seat
    assert "Hand of player_1" not in child.before
    moves = moves_shown(child.before)
    first = min(moves)
    child.sendline("9999")  # an illegal entry: said so, asked again
    child.expect_exact("9999 is not a legal move")
    child.expect_exact(PROMPT)
    child.sendline("?")  # lists the moves again
    child.expect_exact(PROMPT)
    assert moves_shown(child.before) == moves
    child.sendline(str(first))  # by number
    child.expect_exact(f"player_0 (human): {moves[first]}")
    child.expect_exact(PROMPT)
    moves = moves_shown(child.before)
    name = moves[max(moves)]
    child.sendline(name.upper())  # by name, case ignored
    child.expect_exact(f"player_0 (human): {name}")
    child.expect_exact(PROMPT)
    child.sendline("q")
    child.expect_exact("game abandoned (player_0 quit); nothing recorded")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert not record.exists()


def test_a_human_plays_a_whole_game_and_it_is_recorded(tmp_path):
    record = tmp_path / "game.json"
    child = spawn("--game", "updown", "--agents", "random", "human", "--seed", "5",
                  "--record", str(record))  # fmt: skip
    child.logfile_read = io.StringIO()
    turns = 0
    while child.expect_exact(["player_1> ", "winners: "]) == 0:
        moves = moves_shown(child.before)
        child.sendline(moves[min(moves)])  # the first legal move, by its full name
        turns += 1
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and turns > 10
    assert "\x1b[" in child.logfile_read.getvalue()  # colour on a terminal
    (rec,) = read_records(record)
    assert rec["agents"] == ["random", "human"] and rec["seed"] == 5
    env = replay(rec)
    assert list(env.rules.scores(env.game_state)) == rec["scores"]


def test_a_closed_stdin_ends_the_game_in_one_line():
    proc = subprocess.run([*PLAY, "--game", "kingup", "--agents", "human", "random", "random"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[-1].endswith("game abandoned (stdin closed); nothing recorded")
    assert proc.stderr == ""


def test_bots_alone_play_to_the_end_and_print_scores_and_winners(tmp_path):
    proc = subprocess.run([*PLAY, "--game", "kdk", "--agents", "heuristic", "random",
                           "--option", "num_rounds=1", "--seed", "4", "--record",
                           str(tmp_path / "k.json")],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "player_0 (heuristic): score" in proc.stdout and "winners: player_" in proc.stdout
    assert "(hidden)" not in proc.stdout  # no human at the table: nothing to hide
    assert json.loads((tmp_path / "k.json").read_text())["options"]["num_rounds"] == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agents", "human", "expert"], "error: --agents: unknown agent spec 'expert'"),
        (["--agents", "human"] * 3, "error: --num-players/--agents: kdk is played by 2, 3, 4, 5"),
        (["--agents", "human", "human", "--num-players", "3"], "error: --agents: 3 seats need 3"),
        (["--agents", "human", "random", "--seed", "-1"], "error: --seed must be an integer"),
        (["--agents", "human", "random", "--seed", "x"], "error: argument --seed: invalid int"),
        (["--agents", "human", "random", "--option", "level=3"], "error: --option: level must"),
        (["--agents", "random", "random", "--record", "/sys/tg/a.json"], "error: --record"),
        (["--agents", "human", "random", "--pause", "-1"], "error: --pause must be 0 or more"),
    ],
)
def test_bad_input_is_one_error_line_before_the_game(args, message):
    proc = subprocess.run([*PLAY, "--game", "kdk", *args], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert proc.returncode in (1, 2)
    assert proc.stderr.startswith(message) and len(proc.stderr.splitlines()) == 1
    assert proc.stdout == ""  # the game never started


def test_moves_are_read_by_id_or_unambiguous_name():
    env = make("kingup", 3)
    env.reset(seed=0)
    legal = env.legal_actions()
    rules = env.rules
    assert parse_move(str(legal[3]), rules, legal) == legal[3]
    assert parse_move("  Place   alighiero on FLOOR 2 ", rules, legal) == 1
    names = ", ".join(f"place Alighiero on floor {f}" for f in (1, 2, 3, 4))
    assert parse_move("place alig", rules, legal) == f"'place alig' could be {names}"
    many = parse_move("place", rules, legal)  # the first few, and how many more
    assert many.startswith("'place' could be place Alighiero on floor 1, ")
    assert many.endswith(f" and {len(legal) - 6} more") and many.count(", ") == 5
    assert parse_move("66", rules, legal) == "66 is not a legal move"
    assert parse_move("dance", rules, legal) == "'dance' is not a legal move"
    table = move_table(rules, legal, width=80)
    assert len(table.splitlines()) < len(legal) and max(map(len, table.splitlines())) <= 80


def test_hidden_choices_are_hidden_and_open_moves_are_shown():
    """Up & Down cards stay face down until all have chosen; King Up places are public."""
    seen = {"hidden": 0, "shown": 0}
    env = make("updown", 3)
    rules = env.rules
    for game in random_playout(env, seed=2):
        state = game.game_state
        if state.phase == rules.Phase.CHOOSE:
            others = [s for s in range(3) if s != state.to_play]
            last = sum(c != rules.NO_CARD for c in state.pending) == 2
            action = int(np.flatnonzero(game.action_mask())[0])
            assert is_visible(rules, game.observation, state, action, others) == last
            seen["shown" if last else "hidden"] += 1
    assert seen["hidden"] > 10 and seen["shown"] > 5
    env = make("kingup", 3)
    env.reset(seed=1)
    assert is_visible(env.rules, env.observation, env.game_state, 0, [1, 2])  # a placement
    votes = set()
    for game in random_playout(env, seed=1):
        state = game.game_state
        if state.phase == env.rules.Phase.VOTE:
            last = sum(v >= 0 for v in state.votes) == 2
            # Without NO cards in hand everyone knows the vote is YES.
            choice = state.no_left[state.to_play] > 0
            visible = is_visible(
                env.rules, env.observation, state, env.rules.YES, [(state.to_play + 1) % 3]
            )
            assert visible == (last or not choice)
            votes.add((last, choice))
    assert (False, True) in votes and (True, True) in votes


def test_a_single_legal_move_is_played_without_asking():
    for env in random_playout(make("kdk", 3), seed=2):
        if len(env.legal_actions()) == 1:
            break
    else:
        raise AssertionError("no position with one legal move")
    seat, lines = env.game_state.to_play, []

    def read(prompt):
        raise AssertionError("asked although only one move was legal")

    assert ask_human(env, seat, read, lines.append, Style(False)) == env.legal_actions()[0]
    assert lines == [f"--- player_{seat}: one legal move, played for you ---"]


def test_kingup_tells_each_round_end_its_king_points_and_favourites():
    from kingup_env.rules import FAVOURITE_CARDS, NAMES

    lines = []
    specs = ["heuristic", "random", "random"]
    env = play("kingup", specs, 6, {"num_players": 3}, write=lines.append)
    state = env.game_state
    told = [line for line in lines if " over: " in line]
    assert len(told) == len(state.round_scores) == state.num_rounds
    last = told[-1].splitlines()
    assert last[0] == f"Round {state.num_rounds} over: {NAMES[state.king]} is crowned king"
    for seat, line in enumerate(last[1:]):
        names = ", ".join(NAMES[c] for c in FAVOURITE_CARDS[state.revealed[-1][seat]])
        points = state.round_scores[-1][seat]
        assert line == f"  player_{seat}: {points:+d} points (favourites {names})"


def test_kdk_explains_its_symbols_to_a_human():
    from kdk_env.render import LEGEND

    lines, answers = [], iter(["?", "q"])
    with pytest.raises(QuitError):
        play("kdk", ["human", "random"], 1, {"num_players": 2, "num_rounds": 1},
             read=lambda prompt: next(answers), write=lines.append)  # fmt: skip
    assert lines[1] == LEGEND  # after the table's first line
    assert any(line.endswith(LEGEND) and line != LEGEND for line in lines)  # with ?
    for symbol in ("T (traitor)", "* a WEITER traitor", "duty", "ann", "slots", "out (SP)"):
        assert symbol in LEGEND
