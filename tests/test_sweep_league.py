"""The sweep's checks before any run, and what --resume keeps (benchmarks/sweep_league.py)."""

import argparse
import json
import sys

import pytest

from benchmarks import sweep_league


def test_flags_expand_the_short_names():
    assert sweep_league.flags("ent=0.05,clip=0.1,anneal=ent") == [
        "--ent-coef", "0.05", "--clip-range", "0.1", "--anneal", "ent",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "config, why",
    [
        ("ent=0.05,clip=0.1,anneal=ent", None),
        ("ent0.1", "KEY=VALUE"),
        ("ent=x", "invalid float value: 'x'"),
        ("bogus=1", "unrecognized arguments: --bogus 1"),
        ("clip=-1", "--clip-range must lie in (0, 1]"),
    ],
)
def test_configs_are_checked_against_train_options(config, why):
    said = sweep_league.config_error("kingup", config)
    assert said is None if why is None else why in said


def test_a_bad_config_stops_the_sweep_before_any_run(monkeypatch, tmp_path):
    out = tmp_path / "sweep.json"
    argv = ["sweep", "--game", "kdk", "--configs", "ent=0.01", "clip=2", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit, match=r"^error: config 'clip=2': --clip-range"):
        sweep_league.main()
    assert not out.exists() and not list(tmp_path.iterdir())


def row(config: str, rate: float) -> dict:
    ci = [rate - 0.03, rate + 0.03]
    return {
        "config": config, "run": "r", "samples": 1000, "fair": 0.25,
        "vs_heuristic": rate, "vs_heuristic_ci": ci, "vs_random": rate, "vs_random_ci": ci,
        "probe": 0.3, "probe_ci": [0.27, 0.33], "probe_gain": 0.05,
    }  # fmt: skip


def test_resume_keeps_only_rows_of_the_same_settings(tmp_path):
    configs = ["ent=0.01", "ent=0.05", "ent=0.1"]
    args = argparse.Namespace(
        game="kingup", configs=configs, minutes=25.0, probe_minutes=2.5, games=1000, seed=0,
        eval_seed=20261128, workers=1, jobs=1, dir=tmp_path, out=tmp_path / "new" / "s.json",
        resume=True,
    )  # fmt: skip
    sweep_league.save(args, {"ent=0.05": row("ent=0.05", 0.5), "ent=0.01": row("ent=0.01", 0.4)})
    written = json.loads(args.out.read_text())
    assert [r["config"] for r in written["rows"]] == ["ent=0.01", "ent=0.05"]  # the given order
    assert (tmp_path / "new" / "s.png").stat().st_size > 0
    assert sorted(sweep_league.kept_rows(args)) == ["ent=0.01", "ent=0.05"]

    def kept(**changed) -> list[str]:
        return sorted(sweep_league.kept_rows(argparse.Namespace(**(vars(args) | changed))))

    assert kept(configs=configs[:1]) == ["ent=0.01"]  # a config no longer asked for is dropped
    assert kept(minutes=6.0) == [] and kept(eval_seed=1) == [] and kept(resume=False) == []
