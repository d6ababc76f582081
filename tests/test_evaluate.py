"""training/evaluate.py: statistics, seat rotation, errors and the CLI, on known outcomes."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
import types
from itertools import permutations
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest
from helpers import interruptible, spawn

from agents.base import Agent
from tablegym.aec import TableGameEnv
from tablegym.games import GAMES, env_class
from tablegym.layout import Layout
from tablegym.spec import GameSpec
from training.evaluate import (
    IllegalActionError,
    build_parser,
    evaluate,
    game_ranks,
    make_jobs,
    wilson,
)
from training.registry import make_agent
from training.train import Args

ROOT = Path(__file__).resolve().parent.parent

# -- a rigged game whose outcome is known ---------------------------------------------------
# Every seat in turn picks a number below the option `choices`; a seat scores 10 per point
# picked, seat 0 one point more. Highest score wins; equal scores share the win.


class RiggedState(NamedTuple):
    num_players: int
    choices: int
    to_play: int
    picks: tuple[int, ...]


def _rules() -> types.ModuleType:
    r = types.ModuleType("rigged_game.rules")
    r.NUM_ACTIONS = 2

    def make_config(num_players: int = 3, choices: int = 2) -> types.SimpleNamespace:
        return types.SimpleNamespace(num_players=num_players, choices=choices)

    def initial_state(config, rng):
        return RiggedState(config.num_players, config.choices, 0, ())

    def is_terminal(s):
        return len(s.picks) == s.num_players

    def legal_actions(s):
        return () if is_terminal(s) else tuple(range(s.choices))

    def apply_action(s, a, rng=None):
        if a not in legal_actions(s):
            raise ValueError(f"illegal action {a}")
        nxt = -1 if len(s.picks) + 1 == s.num_players else s.to_play + 1
        return s._replace(picks=s.picks + (a,), to_play=nxt)

    def scores(s):
        return tuple(10.0 * p + (seat == 0) for seat, p in enumerate(s.picks))

    def winners(s):
        sc = scores(s)
        return tuple(i for i, x in enumerate(sc) if x == max(sc))

    def rewards(before, after, config):
        return (0.0,) * after.num_players

    for f in (make_config, initial_state, is_terminal, legal_actions, apply_action):
        setattr(r, f.__name__, f)
    for f in (scores, winners, rewards):
        setattr(r, f.__name__, f)
    return r


def _observation() -> types.ModuleType:
    o = types.ModuleType("rigged_game.observation")
    o.LAYOUT = o.STATE_LAYOUT = Layout([("picked", 1, 1)])
    o.encode = lambda state, seat: np.zeros(1, np.float32)
    o.encode_state = lambda state: np.zeros(1, np.float32)
    return o


class Fixed(Agent):
    """Picks ``pick`` in the rigged game, or the highest legal number below it."""

    def __init__(self, pick: int, seed: int | None = None):
        self.pick = pick

    def act(self, observation, action_mask, view=None) -> int:
        return min(self.pick, int(np.flatnonzero(action_mask)[-1]))


class High(Fixed):
    def __init__(self, seed: int | None = None):
        super().__init__(1)


class Crash(Agent):
    """Fails on its first move."""

    def __init__(self, seed: int | None = None):
        pass

    def act(self, observation, action_mask, view=None) -> int:
        raise RuntimeError("out of ideas")


class Cheat(Agent):
    """Picks 1 whatever the mask says."""

    def __init__(self, seed: int | None = None):
        pass

    def act(self, observation, action_mask, view=None) -> int:
        return 1


class Truthy(Cheat):
    """Picks True, which Python takes for 1."""

    def act(self, observation, action_mask, view=None) -> bool:
        return True


def rig_heuristic(monkeypatch, target: str) -> None:
    """Make the rigged game's ``heuristic`` agent the class ``target`` names."""
    spec = sys.modules["rigged_game.spec"]
    monkeypatch.setattr(spec, "SPEC", dataclasses.replace(spec.SPEC, heuristic=target))


@pytest.fixture
def rigged(monkeypatch, tmp_path):
    """Register game ``rigged``: ``heuristic`` picks 1, ``ppo:<file>`` picks the file's number."""

    class raw_env(TableGameEnv):
        metadata = {"name": "rigged_v0", "render_modes": ["ansi"], "is_parallelizable": False}
        rules = _rules()
        observation = _observation()
        rendering = types.SimpleNamespace(to_text=lambda state, viewer=None: "rigged")

    package = types.ModuleType("rigged_game")
    package.raw_env, package.High, package.Crash = raw_env, High, Crash
    package.Cheat, package.Truthy = Cheat, Truthy
    ppo = types.ModuleType("training.ppo_agent")
    ppo.load_ppo_agent = lambda path, game, options: Fixed(int(Path(path).read_text()))
    monkeypatch.setitem(sys.modules, "rigged_game", package)
    monkeypatch.setitem(sys.modules, "training.ppo_agent", ppo)
    monkeypatch.setitem(GAMES, "rigged", "rigged_game")
    spec = types.ModuleType("rigged_game.spec")
    spec.SPEC = GameSpec("rigged", "Rigged", (2, 3), 3, heuristic="rigged_game:High")
    monkeypatch.setitem(sys.modules, "rigged_game.spec", spec)
    for name, pick in (("low", 0), ("high", 1)):
        (tmp_path / name).write_text(str(pick))
    return {name: f"ppo:{tmp_path / name}" for name in ("low", "high")}


def by_spec(result: dict) -> dict[str, dict]:
    return {row["spec"]: row for row in result["agents"]}


def test_seat_advantage_is_shared_equally_by_rotation(rigged):
    # choices=1: everyone picks 0, so seat 0 always wins; rotation gives each agent 1/3.
    lineup = ["random", "heuristic", rigged["low"]]
    result = evaluate("rigged", lineup, games=5, seed=0, options={"choices": 1})
    assert result["games"] == 6 and result["games_requested"] == 5
    for spec in lineup:
        row = by_spec(result)[spec]
        assert row["games_per_seat"] == [2, 2, 2]
        assert row["win_rate"] == pytest.approx(1 / 3)
        assert row["win_rate_ci"] == pytest.approx(list(wilson(2, 6)))
        assert row["mean_score"] == pytest.approx(1 / 3)
        assert row["mean_rank"] == pytest.approx((1 + 2.5 + 2.5) / 3)  # seats 1, 2 tie


def test_shared_wins_count_as_fractions(rigged):
    # heuristic and high pick 1 and tie unless one of them sits in seat 0; low always loses.
    result = evaluate("rigged", ["heuristic", rigged["high"], rigged["low"]], games=9, seed=1)
    rows = by_spec(result)
    for spec in ("heuristic", rigged["high"]):
        assert rows[spec]["win_rate"] == pytest.approx(0.5)  # 1 + 1/2 + 0 per rotation
        assert rows[spec]["outright_wins"] == 3 and rows[spec]["shared_wins"] == 3
        assert rows[spec]["mean_rank"] == pytest.approx((1 + 1.5 + 2) / 3)
        assert rows[spec]["mean_score"] == pytest.approx(10 + 1 / 3)
        assert rows[spec]["std_score"] == pytest.approx(np.std([11, 10, 10]))
    low = rows[rigged["low"]]
    assert low["win_rate"] == 0 and low["mean_rank"] == 3 and low["win_rate_ci"][0] == 0
    assert low["rating"] < min(rows[s]["rating"] for s in ("heuristic", rigged["high"]))


def test_illegal_action_is_reported_with_its_details(rigged, monkeypatch):
    # choices=1 allows only 0, and the cheat picks 1: at seat 1, step 1, in game 0.
    rig_heuristic(monkeypatch, "rigged_game:Cheat")
    with pytest.raises(IllegalActionError) as info:
        evaluate("rigged", ["random", "heuristic"], games=2, seed=3, options={"choices": 1})
    msg = str(info.value)
    seed = make_jobs("rigged", ["random", "heuristic"], 2, 3, {})[0].env_seed
    for part in ("illegal action 1", "'heuristic'", "'rigged'", f"seed {seed}", "step 1"):
        assert part in msg
    assert "legal actions: [0]" in msg


def test_a_bool_is_no_action_id(rigged, monkeypatch):
    # choices=2 allows 0 and 1, and True == 1 to Python: it must still be refused.
    rig_heuristic(monkeypatch, "rigged_game:Truthy")
    with pytest.raises(IllegalActionError, match="illegal action True"):
        evaluate("rigged", ["random", "heuristic"], games=2, seed=3, options={"choices": 2})


def test_agent_errors_say_where_they_happened(rigged, monkeypatch):
    rig_heuristic(monkeypatch, "rigged_game:Crash")
    with pytest.raises(RuntimeError, match="out of ideas") as info:
        evaluate("rigged", ["random", "random", "heuristic"], games=3, seed=0)
    assert "agent 'heuristic' (seat 2)" in info.value.__notes__[0]
    assert "at step 2" in info.value.__notes__[0]


def test_wilson_interval_known_values():
    assert wilson(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    assert wilson(0, 10)[0] == 0 and wilson(10, 10)[1] == pytest.approx(1)
    for n in range(1, 200):  # the interval always holds the rate itself, exactly at 0 and 1
        assert wilson(0, n)[0] == 0 and wilson(n, n)[1] == 1
    lo, hi = wilson(50, 100)
    assert lo == pytest.approx(1 - hi) and lo == pytest.approx(0.4038, abs=1e-4)


def test_ranks_order_winners_then_scores_and_share_ties():
    assert game_ranks([5, 9, 9, 1], winners=[1, 2]) == [3, 1.5, 1.5, 4]
    # A tie-break winner ranks above an equal score.
    assert game_ranks([9, 9, 1], winners=[1]) == [2, 1, 3]


def test_results_do_not_depend_on_the_number_of_workers():
    lineup = ["random", "random", "heuristic"]
    one = evaluate("kingup", lineup, games=6, seed=4, workers=1, options={"num_rounds": 1})
    two = evaluate("kingup", lineup, games=6, seed=4, workers=2, options={"num_rounds": 1})
    assert one["results"] == two["results"]
    strip = ("sec_per_move", "sec_per_decision")
    assert [{k: v for k, v in r.items() if k not in strip} for r in one["agents"]] == [
        {k: v for k, v in r.items() if k not in strip} for r in two["agents"]
    ]


def test_kept_action_logs_replay_each_game():
    result = evaluate("updown", ["heuristic", "random"], games=2, seed=5, keep_actions=True)
    raw_env = env_class("updown")
    for rec in result["results"]:
        game = raw_env.replay(rec["seed"], rec["actions"], **result["options"])
        assert list(game.rules.scores(game.game_state)) == rec["scores"]
    plain = evaluate("updown", ["heuristic", "random"], games=2, seed=5)
    assert "actions" not in plain["results"][0]


def test_rotation_shares_the_deal_within_a_rotation():
    jobs = make_jobs("kingup", ["a", "b", "c"], games=6, seed=0, options={})
    assert [j.specs for j in jobs[:3]] == [("a", "b", "c"), ("c", "a", "b"), ("b", "c", "a")]
    assert len({j.env_seed for j in jobs[:3]}) == 1 and jobs[3].env_seed != jobs[0].env_seed


def test_permuted_seating_plays_each_deal_in_every_distinct_order():
    jobs = make_jobs("kingup", ["a", "b", "c"], games=7, seed=0, options={}, seating="permute")
    assert len(jobs) == 12  # rounded up to two deals of 3! orders
    for deal in range(2):
        block = jobs[6 * deal : 6 * deal + 6]
        assert sorted(j.specs for j in block) == sorted(permutations("abc"))
        assert len({j.env_seed for j in block}) == 1
    assert jobs[0].env_seed != jobs[6].env_seed
    repeats = make_jobs("kingup", ["a", "a", "b", "c"], games=1, seed=0, options={},
                        seating="permute")  # fmt: skip
    assert len(repeats) == len({j.specs for j in repeats}) == 12
    rotated = make_jobs("kingup", ["a", "b", "c"], games=6, seed=0, options={})
    assert [j.env_seed for j in rotated[:3]] == [jobs[0].env_seed] * 3  # deal 0 is the same deal
    with pytest.raises(ValueError, match="seating must be one of \\('rotate', 'permute'\\)"):
        make_jobs("kingup", ["a", "b", "c"], games=6, seed=0, options={}, seating="shuffle")


def test_a_permuted_tournament_in_batch_and_on_raw_env_plays_the_same_seatings():
    lineup = ["heuristic", "random", "random"]
    on_env = evaluate("kdk", lineup, games=3, seed=2, seating="permute")
    batched = evaluate("kdk", lineup, games=3, seed=2, seating="permute", batch=4)
    assert on_env["seating"] == "permute" and on_env["games"] == 3  # 3 orders of h r r
    seatings = [(r["seed"], r["specs"]) for r in on_env["results"]]
    assert seatings == [(r["seed"], r["specs"]) for r in batched["results"]]
    assert sorted(r["specs"].index("heuristic") for r in batched["results"]) == [0, 1, 2]


def test_a_mirror_lineup_plays_a_new_deal_each_game():
    jobs = make_jobs("kdk", ["heuristic"] * 3, games=7, seed=0, options={})
    assert len(jobs) == 7 and len({j.env_seed for j in jobs}) == 7
    assert not any(j.keep_actions for j in jobs)
    result = evaluate("updown", ["heuristic"] * 2, games=3, seed=1, keep_actions=True)
    assert result["games"] == 3 and all(r["actions"] for r in result["results"])
    assert len({tuple(r["actions"]) for r in result["results"]}) == 3


@pytest.mark.parametrize(
    ("agents", "options", "error", "text"),
    [
        (["random", "random", "bogus"], {}, ValueError, "unknown agent spec 'bogus'"),
        (["random"] * 2 + ["ppo:/no/such.zip"], {}, FileNotFoundError, "/no/such.zip"),
        (["random", "random"], {"num_players": 3}, ValueError, "num_players is 3"),
        (["random"] * 4, {"colour": "red"}, ValueError, "unknown option 'colour'"),
    ],
)
def test_bad_tournaments_fail_before_playing(agents, options, error, text):
    with pytest.raises(error, match=text):
        evaluate("kingup", agents, games=4, seed=0, options=options)


def test_unknown_game():
    with pytest.raises(ValueError, match="unknown game 'chess'"):
        evaluate("chess", ["random"], games=1, seed=0)


def test_cli_end_to_end(tmp_path):
    out = tmp_path / "eval" / "kingup.json"
    cmd = [
        sys.executable, str(ROOT / "training" / "evaluate.py"), "--game", "kingup",
        "--agents", "heuristic", "random", "random", "--num-players", "3",
        "--option", "num_rounds=1", "--games", "3", "--seed", "2", "--workers", "2",
        "--out", str(out),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["game"] == "kingup" and result["games"] == 3 and result["seed"] == 2
    assert result["options"] == {"num_rounds": 1, "num_players": 3}
    assert [r["spec"] for r in result["agents"]] == ["heuristic", "random"]
    for row in result["agents"]:
        assert {"win_rate", "win_rate_ci", "mean_score", "mean_rank", "rating"} <= set(row)
        assert row["win_rate_ci"][0] <= row["win_rate"] <= row["win_rate_ci"][1]
    assert out.with_suffix(".csv").read_text().startswith("spec,")
    assert out.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    assert "heuristic" in proc.stdout


def test_cli_rejects_a_bad_option():
    cmd = [sys.executable, str(ROOT / "training" / "evaluate.py"), "--game", "kingup",
           "--agents", "random", "--option", "novalue"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("error: argument --option")
    assert "KEY=VALUE" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_cli_reports_a_bad_spec_in_one_line():
    cmd = [sys.executable, str(ROOT / "training" / "evaluate.py"), "--game", "kingup",
           "--agents", "expert", "random", "random", "random", "--no-progress"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        "error: --agents: unknown agent spec 'expert'; known specs: random, heuristic, ismcts, "
        "ismcts:N (N simulations), ismcts:N,KEY=VALUE,..., ppo:GAME (the game's built-in bot), "
        "ppo:PATH, rllib:DIR"
    )


@pytest.mark.parametrize("word", ["true", "True", "TRUE"])
def test_option_values_read_as_train_and_the_registry_read_them(word):
    """One KEY=VALUE reading (tablegym.options) behind evaluate, train and agent specs."""
    items = [f"auto_pass={word}", "level=8", "deck_mode=own_decks", "first_opener=none"]
    flags = [arg for item in items for arg in ("--option", item)]
    ns = build_parser().parse_args(["--game", "kdk", "--agents", "random", *flags])
    from_evaluate = dict(ns.option)
    from_train = Args(game="kdk", option=items).game_options()
    assert from_evaluate == {k: v for k, v in from_train.items() if k != "num_players"}
    assert from_evaluate["auto_pass"] is True and from_evaluate["first_opener"] is None
    assert from_evaluate["level"] == 8 and from_evaluate["deck_mode"] == "own_decks"
    agent = make_agent("ismcts:5,exploration=1.5,time_limit=none,cutoff=end", "kingup")
    assert (agent.exploration, agent.time_limit, agent.cutoff) == (1.5, None, "end")


# -- the CLI: bad input, outputs, records, workers ------------------------------------------

EVALUATE = [sys.executable, str(ROOT / "training" / "evaluate.py")]


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*EVALUATE, *args, "--no-progress"], capture_output=True, text=True,
                          timeout=120, cwd=cwd)  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--games", "0"], "error: --games must be an integer >= 1; got 0"),
        (["--workers", "0"], "error: --workers must be an integer >= 1; got 0"),
        (["--seed", "-2"], "error: --seed must be an integer >= 0; got -2"),
        (["--num-players", "3"], "error: --num-players is 3 but --agents gave 2 specs"),
        (["--option", "level=3"], "error: --option: level must be one of 8, 9, 10; got 3"),
        (["--option", "colour=red"], "error: --option: unknown option 'colour'"),
        (["--games", "many"], "error: argument --games: invalid int value: 'many'"),
        (["--out", "/sys/tablegym-test/r.json"], "error: --out /sys/tablegym-test/r.json:"),
        (["--record", "/sys/tablegym-test/games"], "error: --record /sys/tablegym-test/games:"),
        (["--record", "games.json"], "error: --record games.json: give a directory"),
    ],
)
def test_cli_bad_input_is_one_line_naming_the_option(tmp_path, args, message):
    proc = run_cli("--game", "kdk", "--agents", "random", "random", *args, cwd=tmp_path)
    assert proc.returncode in (1, 2)
    assert proc.stderr.startswith(message) and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stdout == "" and not list(tmp_path.iterdir())  # nothing played or written


def test_an_unwritable_out_fails_before_the_tournament(tmp_path):
    """The old failure: a whole tournament played, then the results lost on writing them."""
    (tmp_path / "r.csv").mkdir()  # the CSV beside --out cannot be written
    proc = run_cli("--game", "kdk", "--agents", "heuristic", "random", "--games", "400",
                   "--out", str(tmp_path / "r.json"))  # fmt: skip
    assert (
        proc.returncode == 1 and "error: --out" in proc.stderr and "is a directory" in proc.stderr
    )
    # Refused before any game: the one error line is all it printed, and nothing was written.
    assert len(proc.stderr.strip().splitlines()) == 1 and not proc.stdout.strip()
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("where", ["games", "games.jsonl"])
def test_cli_records_every_game_and_each_replays(tmp_path, where):
    from tablegym.records import read_records, replay

    out = tmp_path / where
    proc = run_cli("--game", "updown", "--agents", "heuristic", "random", "--games", "4",
                   "--record", str(out), "--out", str(tmp_path / "r.json"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    files = sorted(out.iterdir()) if out.is_dir() else [out]
    records = [r for f in files for r in read_records(f)]
    assert len(records) == 4
    assert {tuple(r["agents"]) for r in records} == {
        ("heuristic", "random"),
        ("random", "heuristic"),
    }
    for record in records:
        env = replay(record)
        assert list(env.rules.scores(env.game_state)) == record["scores"]
    result = json.loads((tmp_path / "r.json").read_text())
    assert "actions" not in result["results"][0]  # the logs live in the records


def _children(pid: int) -> list[int]:
    """Live (not zombie) child processes of ``pid``, from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == str(pid) and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGTERM", "SIGINT"])
def test_no_worker_outlives_a_killed_tournament(tmp_path, signal_name):
    proc = spawn(
        [*EVALUATE, "--game", "kdk", "--agents", "random", "heuristic", "--games", "2000",
         "--workers", "2", "--no-progress", "--out", str(tmp_path / "r.json")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=interruptible,
    )  # fmt: skip
    try:
        end = time.monotonic() + 60
        workers: list[int] = []
        while len(workers) < 2 and time.monotonic() < end and proc.poll() is None:
            time.sleep(0.2)
            # The workers (and multiprocessing's resource tracker) are the children.
            children = _children(proc.pid)
            workers = [
                p for p in children if b"multiproc" in Path(f"/proc/{p}/cmdline").read_bytes()
            ]
        assert len(workers) >= 2, "the workers did not start"
        time.sleep(1.0)  # mid-tournament
        # Ctrl-C at a terminal signals the whole process group, the workers too; the others
        # go to the parent alone.
        kill = os.killpg if signal_name == "SIGINT" else os.kill
        kill(proc.pid, getattr(signal, signal_name))
        _, err = proc.communicate(timeout=30)
        end = time.monotonic() + 5
        while any(map(_alive, workers)) and time.monotonic() < end:
            time.sleep(0.1)
        assert not any(map(_alive, workers)), f"workers left after {signal_name}"
        said = {"SIGTERM": "terminated", "SIGINT": "interrupted"}.get(signal_name)
        if said:
            assert err.strip().splitlines() == [
                f"error: {said}; the tournament was stopped and nothing was written"
            ]
        assert not (tmp_path / "r.json").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
