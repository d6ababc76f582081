"""The strength benchmark's lineups, the probe's floor among them (benchmarks/bench_strength.py)."""

import json

from benchmarks import bench_strength


def test_the_floor_puts_the_heuristic_alone_among_copies_of_the_bot():
    tables = bench_strength.lineups("ppo:x", 4)
    assert tables["floor"] == ["heuristic", "ppo:x", "ppo:x", "ppo:x"]
    assert tables["heuristic"] == ["ppo:x", "heuristic", "heuristic", "heuristic"]
    assert set(bench_strength.LINEUPS) == set(tables)


def test_only_the_lineups_asked_for_are_played(tmp_path, capsys):
    out = tmp_path / "s.json"
    bench_strength.main(["--game", "kdk", "--bot", "random", "--sizes", "3", "--games", "6",
                         "--lineups", "floor", "--out", str(out)])  # fmt: skip
    rows = json.loads(out.read_text())["sizes"]["3"]
    assert list(rows) == ["floor"] and rows["floor"]["games"] == 6
    # The heuristic alone against two random players: the lineup's first seat is reported.
    assert rows["floor"]["win_rate"] > 0.5 and "kdk 3p floor" in capsys.readouterr().out
