"""Crosstables (``crosstable``, ``tablegym-evaluate --crosstable``): every spec alone against
every other, or every table of the specs, on duplicate deals."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from itertools import combinations_with_replacement, permutations
from pathlib import Path

import pytest

from training.evaluate import build_parser, check_args, crosstable, crosstable_table, main

ROOT = Path(__file__).resolve().parent.parent
UPDOWN_MODEL = ROOT / "notebooks" / "models" / "updown.zip"  # a 2-player Up & Down policy
EVALUATE = [sys.executable, str(ROOT / "training" / "evaluate.py"), "--no-progress"]


@pytest.fixture(scope="module")
def kingup():
    """Heuristic and random at a 4-seat King Up! table, 40 games per pair."""
    return crosstable("kingup", ["heuristic", "random"], games=40, seed=0)


@pytest.mark.parametrize("batch", [8, 0])
def test_every_deal_is_played_with_the_lone_spec_in_every_seat(batch):
    result = crosstable("kingup", ["heuristic", "random"], games=12, seed=5, batch=batch)
    n = 4
    assert [lineup["seats"] for lineup in result["lineups"]] == [[0, 1, 1, 1], [1, 0, 0, 0]]
    for pair in result["lineups"]:
        assert pair["batch"] == batch
        row, col = pair["seats"][:2]
        alone, others = result["specs"][row], result["specs"][col]
        records = pair["results"]  # the games the crosstable played, one per job
        assert len(records) == result["games_played"][row][col] == pair["games"] == 12
        deals = Counter(r["seed"] for r in records)
        assert len(deals) == 12 // n and set(deals.values()) == {n}
        for deal in deals:
            seats = [r["specs"].index(alone) for r in records if r["seed"] == deal]
            assert sorted(seats) == list(range(n))  # once in each seat on the same deal
            for r in records:
                if r["seed"] == deal:
                    assert r["specs"].count(alone) == 1 and r["specs"].count(others) == n - 1


def test_the_matrix_holds_each_spec_alone_against_the_other(kingup):
    matrix, ci = kingup["matrix"], kingup["ci"]
    assert kingup["specs"] == ["heuristic", "random"] and kingup["fair_share"] == 0.25
    assert kingup["options"] == {"num_players": 4}  # the game's usual table
    assert matrix[0][0] is None and matrix[1][1] is None
    assert ci[0][0] is None and kingup["games_played"] == [[None, 40], [40, None]]
    assert matrix[0][1] > 0.25 > matrix[1][0]  # the heuristic alone beats three random seats
    for i, j in ((0, 1), (1, 0)):
        assert ci[i][j][0] <= matrix[i][j] <= ci[i][j][1]
    assert kingup["mean_win_rate"] == [matrix[0][1], matrix[1][0]]


def test_ratings_rank_the_heuristic_above_random(kingup):
    heuristic, rand = kingup["ratings"]
    assert (heuristic["spec"], rand["spec"]) == ("heuristic", "random")
    assert heuristic["mu"] > rand["mu"] and heuristic["ordinal"] > rand["ordinal"]


def test_the_seed_decides_the_games(kingup):
    again = crosstable("kingup", ["heuristic", "random"], games=40, seed=0)
    assert again["matrix"] == kingup["matrix"] and again["ratings"] == kingup["ratings"]
    assert [p["results"] for p in again["lineups"]] == [p["results"] for p in kingup["lineups"]]
    other = crosstable("kingup", ["heuristic", "random"], games=40, seed=1)
    seeds = [{r["seed"] for r in p["results"]} for p in kingup["lineups"]]
    assert [{r["seed"] for r in p["results"]} for p in other["lineups"]] != seeds
    assert seeds[0] != seeds[1]  # each pair its own deals


def test_a_trained_policy_head_to_head_and_a_pair_on_raw_env():
    specs = [f"ppo:{UPDOWN_MODEL}", "heuristic", "random", "ismcts:5"]
    result = crosstable("updown", specs, games=4, seed=0, options={"num_players": 2})
    assert result["fair_share"] == 0.5 and len(result["lineups"]) == 12
    for pair in result["lineups"]:
        on_raw_env = 3 in pair["seats"]  # ismcts:5 plays on raw_env only
        assert pair["batch"] == (0 if on_raw_env else 256)
        assert all(len(r["specs"]) == 2 for r in pair["results"])
    assert all(result["matrix"][i][i] is None for i in range(4))
    assert result["matrix"][2][0] < 0.5  # random alone does not beat the trained policy
    text = crosstable_table(result)
    assert "ismcts:5" in text and "ordinal" in text and str(UPDOWN_MODEL) in text


@pytest.fixture(scope="module")
def mixed():
    """Every 4-seat King Up! table of heuristic, random and a weak search, 8 games each."""
    specs = ["heuristic", "random", "ismcts:3"]
    return crosstable("kingup", specs, games=8, seed=4, lineups="all", batch=8)


def test_all_lineups_are_every_table_of_two_or_more_specs(mixed):
    seats = [tuple(lineup["seats"]) for lineup in mixed["lineups"]]
    expected = [t for t in combinations_with_replacement(range(3), 4) if len(set(t)) > 1]
    assert seats == expected and len(seats) == math.comb(3 + 4 - 1, 4) - 3 == 12
    for lineup in mixed["lineups"]:
        assert lineup["batch"] == (0 if 2 in lineup["seats"] else 8)  # the search: raw_env
        for i, spec in enumerate(mixed["specs"]):
            at_table = i in lineup["seats"]
            assert (lineup["win_rate"][i] is None) != at_table
            specs_seen = {s for r in lineup["results"] for s in r["specs"]}
            assert (spec in specs_seen) == at_table


def test_all_lineups_play_the_same_deals_each_rotated(mixed):
    deals = None
    for lineup in mixed["lineups"]:
        records = lineup["results"]
        assert len(records) == lineup["games"] == 8
        by_deal = Counter(r["seed"] for r in records)
        assert set(by_deal.values()) == {4}  # each deal once per rotation of the seats
        deals = deals or set(by_deal)
        assert set(by_deal) == deals  # the same cards at every table
        names = [mixed["specs"][i] for i in lineup["seats"]]
        for deal in by_deal:
            tables = [r["specs"] for r in records if r["seed"] == deal]
            assert sorted(tables) == sorted(names[-g:] + names[:-g] for g in range(4))


def test_the_matrix_and_the_pooled_rates_come_from_the_lineups(mixed):
    lineups = {tuple(lineup["seats"]): lineup for lineup in mixed["lineups"]}
    assert mixed["lineup_mode"] == "all"
    for i in range(3):
        for j in range(3):
            if i == j:
                assert mixed["matrix"][i][j] is None
                continue
            alone = lineups[tuple(sorted([i] + [j] * 3))]
            assert mixed["matrix"][i][j] == alone["win_rate"][i]
            assert mixed["ci"][i][j] == alone["ci"][i] and mixed["games_played"][i][j] == 8
    games = sum(lineup["games"] for lineup in mixed["lineups"])
    pooled = mixed["overall"]
    assert [row["spec"] for row in pooled] == mixed["specs"]
    assert sum(row["seat_games"] for row in pooled) == 4 * games
    # Every game hands out one win in all, shared among its winners.
    assert sum(row["win_rate"] * row["seat_games"] for row in pooled) == pytest.approx(games)
    for lineup in mixed["lineups"]:
        rates = lineup["win_rate"]
        shares = sum(rates[i] * lineup["seats"].count(i) for i in range(3) if rates[i] is not None)
        assert shares == pytest.approx(1.0)
    text = crosstable_table(mixed)
    assert "8 games per lineup" in text and "every lineup" in text and "1 1 2 2" in text


def test_every_table_with_permuted_seats_meets_every_neighbour():
    specs = ["heuristic", "random", "ismcts:3"]
    result = crosstable("kdk", specs, games=6, seed=1, lineups="all", seating="permute", batch=8)
    assert result["seating"] == "permute" and "seats permuted" in crosstable_table(result)
    lineup = next(x for x in result["lineups"] if x["seats"] == [0, 1, 2])
    assert len(lineup["results"]) == 6  # one deal in all six orders
    assert sorted(tuple(r["specs"]) for r in lineup["results"]) == sorted(permutations(specs))
    with pytest.raises(ValueError, match="seating must be one of"):
        crosstable("kdk", specs, games=6, seed=1, seating="rotated")


def test_head_to_head_fills_both_cells_from_the_same_games():
    result = crosstable("updown", ["heuristic", "random"], games=20, seed=2, lineups="all")
    assert [lineup["seats"] for lineup in result["lineups"]] == [[0, 1]]
    matrix = result["matrix"]
    assert matrix[0][1] + matrix[1][0] == pytest.approx(1.0) and matrix[0][1] > 0.5


@pytest.mark.parametrize(
    ("specs", "kwargs", "message"),
    [
        (["random"], {}, "at least 2 distinct specs; got \\['random'\\]"),
        (["random", "random"], {}, "at least 2 distinct specs"),
        (["random", "expert"], {}, "unknown agent spec 'expert'"),
        (["random", "ppo:/nonexistent/model.zip"], {}, "model.zip"),
        (["random", "heuristic"], {"games": 0}, "games must be an integer >= 1; got 0"),
        (["random", "heuristic"], {"seed": -1}, "seed must be an integer >= 0; got -1"),
        (["random", "heuristic"], {"options": {"num_players": 9}}, "num_players"),
        (
            ["random", "heuristic"],
            {"lineups": "some"},
            "lineups must be one of \\('pairs', 'all'\\); got 'some'",
        ),
    ],
)
def test_bad_requests_are_refused_in_one_line(specs, kwargs, message):
    kwargs = {"games": 4, "seed": 0, **kwargs}
    with pytest.raises(ValueError, match=message) as info:
        crosstable("kingup", specs, **kwargs)
    assert "\n" not in str(info.value)


def test_batch_defaults_to_256_with_crosstable_only():
    args = build_parser().parse_args(["--game", "updown", "--crosstable", "random", "heuristic"])
    assert check_args(args) == {"num_players": 2} and args.batch == 256
    args = build_parser().parse_args(["--game", "updown", "--agents", "random", "heuristic"])
    check_args(args)
    assert args.batch == 0


def test_cli_writes_json_and_heat_map_and_prints_the_table(tmp_path, capsys):
    out = tmp_path / "xt.json"
    main(["--game", "updown", "--crosstable", "heuristic", "random", "--games", "12",
          "--seed", "3", "--out", str(out), "--no-progress"])  # fmt: skip
    printed = capsys.readouterr().out
    assert "[0] heuristic" in printed and "ratings" in printed and f"wrote {out}" in printed
    result = json.loads(out.read_text())
    assert result["specs"] == ["heuristic", "random"] and result["games"] == 12
    assert result["matrix"][0][0] is None and result["matrix"][0][1] > 0.5
    assert out.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["xt.json", "xt.png"]


def test_cli_all_lineups_writes_the_lineup_heat_map_too(tmp_path, capsys):
    out = tmp_path / "xt.json"
    main(["--game", "kdk", "--crosstable", "heuristic", "random", "--lineups", "all",
          "--games", "3", "--seed", "1", "--out", str(out), "--no-progress"])  # fmt: skip
    printed = capsys.readouterr().out
    assert "3 games per lineup" in printed and "every lineup" in printed
    result = json.loads(out.read_text())
    assert result["lineup_mode"] == "all" and len(result["lineups"]) == 2  # 0 0 1, 0 1 1
    assert (tmp_path / "xt_lineups.png").read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["xt.json", "xt.png", "xt_lineups.png"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--crosstable", "random"], "error: --crosstable: needs at least 2 distinct specs"),
        (["--crosstable", "random", "heuristic", "--agents", "random", "random"],
         "error: argument --agents: not allowed with argument --crosstable"),
        (["--crosstable", "random", "heuristic", "--record", "games"],
         "error: --record: a crosstable keeps no game records"),
        (["--crosstable", "random", "heuristic", "--num-players", "9"],
         "error: --num-players: num_players must be"),
        ([], "error: one of the arguments --agents --crosstable is required"),
        (["--agents", "random", "heuristic", "random", "random", "--lineups", "all"],
         "error: --lineups: only with --crosstable"),
        (["--crosstable", "random", "heuristic", "--lineups", "every"],
         "error: argument --lineups: invalid choice: 'every'"),
    ],
)  # fmt: skip
def test_cli_bad_input_is_one_error_line(tmp_path, args, message):
    proc = subprocess.run([*EVALUATE, "--game", "kingup", *args, "--out", str(tmp_path / "x.json")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    assert proc.returncode in (1, 2) and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), proc.stderr
    assert proc.stdout == "" and not list(tmp_path.iterdir())  # nothing played or written
