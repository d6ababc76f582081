"""Collectors on Ray (``train.py --collectors K``): each fills its share of a rollout from the
same pool, the shares merge into one rollout, and a run trains and resumes on a local Ray."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from test_train import ROOT, TINY, fail_line, long_run, run_train, wait_for, wait_until

pytest.importorskip("sb3_contrib")

from training.checkpoints import read_meta  # noqa: E402
from training.collector import SeatRolloutBuffer, parse_mix  # noqa: E402
from training.collectors import Collector, _policy_bytes, merge  # noqa: E402
from training.learner import BUFFER_FIELDS  # noqa: E402


def settings(game: str = "updown", features: str = "none") -> dict:
    return {
        "game": game, "tables": [{"num_players": 2}], "num_games": 8,
        "mix": parse_mix("self=0.5,snapshot=0.3,heuristic=0.2"), "backend": "auto",
        "fixed": "", "pfsp_power": 2.0, "concentration": 1.0, "pool_size": 2, "gamma": 0.99,
        "gae_lambda": 0.95, "net_arch": [16], "features": features,
    }  # fmt: skip


@pytest.mark.parametrize("features", ["none", "cards"])
def test_a_collector_fills_its_share_with_the_weights_it_is_sent(features):
    collector = Collector(settings(features=features), n_steps=96, seed=3)
    other = Collector(settings(features=features), n_steps=96, seed=4)  # other initial weights
    weights = _policy_bytes(other.model.policy)
    result = collector.collect(weights, [])
    assert result["samples"] == 96 and result["observations"].shape[0] == 96
    masks = result["action_masks"][:, 0].astype(bool)
    actions = result["actions"][:, 0, 0].astype(int)
    assert masks[np.arange(96), actions].all()  # every sampled move was legal
    # The log-probabilities recorded are those of the weights sent, not of its own.
    import torch

    with torch.no_grad():
        obs = torch.as_tensor(result["observations"][:, 0])
        dist = other.model.policy.get_distribution(obs, action_masks=masks)
        expected = dist.log_prob(torch.as_tensor(actions)).numpy()
    assert np.allclose(result["log_probs"][:, 0], expected, atol=1e-5)
    assert result["decisions"]["self"] >= 96  # the last tick's cut decisions count too


def test_one_thread_holds_for_torch_after_numba_starts_its_threads():
    # numba's OpenMP layer, started by its first set_num_threads, set the libgomp that torch
    # shares to numba's thread count, undoing torch's one thread set before it.
    code = (
        "import torch, numba\n"
        "assert torch.get_num_threads() == 2\n"
        "from training.children import one_thread\n"
        "one_thread()\n"
        "print(torch.get_num_threads(), numba.get_num_threads())\n"
    )
    env = {**os.environ, "NUMBA_NUM_THREADS": "2", "OMP_NUM_THREADS": "2"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "1"]


def test_a_collector_steps_its_games_on_one_thread():
    # Ray starts each actor with numba's thread count at the machine's cores; the engines'
    # parallel kernels then wait on threads the other collectors' cores are busy with.
    import numba
    import torch

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread on this machine: nothing to lower")
    before = numba.get_num_threads(), torch.get_num_threads()
    numba.set_num_threads(2)
    torch.set_num_threads(2)
    try:
        Collector(settings(), n_steps=32, seed=1)
        assert (numba.get_num_threads(), torch.get_num_threads()) == (1, 1)
    finally:
        numba.set_num_threads(before[0])
        torch.set_num_threads(before[1])


def test_a_collector_mirrors_the_pool_under_the_same_ids():
    main = Collector(settings(), n_steps=32, seed=1)
    collector = Collector(settings(), n_steps=32, seed=2)
    blob = _policy_bytes(main.model.policy)
    collector.collect(blob, [(0, "main", blob), (3, "main", blob), (4, "exploiter", blob)])
    env = collector.env
    assert sorted(env.snapshots) == [0, 3, 4]
    assert env.snapshot_role == {0: "main", 3: "main", 4: "exploiter"}
    # Entries it holds are not sent again; entries the main process dropped are dropped.
    collector.collect(blob, [(0, "main", None), (4, "exploiter", None), (7, "main", blob)])
    assert sorted(env.snapshots) == [0, 4, 7]
    assert not np.isin(env.kinds, [4 + 3]).any()  # no seat still held by the dropped entry


def test_shares_merge_into_one_rollout_in_order():
    a, b = Collector(settings(), 40, 1), Collector(settings(), 24, 2)
    weights = _policy_bytes(a.model.policy)
    results = [a.collect(weights, []), b.collect(weights, [])]
    buffer = SeatRolloutBuffer(64, a.env.observation_space, a.env.action_space, gamma=0.99)
    buffer.reset()
    env = Collector(settings(), 8, 5).env
    assert merge(results, buffer, env) == 64 and buffer.full
    for name in BUFFER_FIELDS:
        merged = getattr(buffer, name)
        assert np.array_equal(merged[:40], results[0][name]), name
        assert np.array_equal(merged[40:], results[1][name]), name
    assert env.decisions["self"] == sum(r["decisions"]["self"] for r in results) >= 64
    games = sum(r["games"][1] for r in results)
    assert env.game_stats.games == games


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--collectors", "-1"], "--collectors must be an integer >= 0"),
        (["--ray-address", "auto"], "--ray-address needs --collectors"),
        (["--collectors", "1", "--workers", "2"], "--collectors and --workers 2 exclude"),
        (["--collectors", "1", "--ray-address", "nohost"], "--ray-address must be HOST:PORT"),
    ],
)
def test_bad_collector_options_are_one_line(argv, message, tmp_path, capsys):
    assert message in fail_line([*argv, "--out", str(tmp_path / "run")], capsys)
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_run_with_ray_collectors_trains_and_resumes(tmp_path):
    pytest.importorskip("ray")
    run = tmp_path / "run"
    run_train("--game", "updown", "--out", str(run), "--collectors", "2", *TINY)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["collectors"] == 2 and summary["steps"] >= 1024
    assert summary["decisions"]["self"] >= 1024  # the collectors' decisions reached the run
    assert summary["final"]["random"]["games"] > 0  # evaluated in the main process
    assert summary["collector_cpu_seconds"] > 0 and summary["steady"]["samples"] > 0
    run_train("--resume", str(run), "--timesteps", "1536")
    assert read_meta(run / "checkpoint.zip")["num_timesteps"] >= 1536


@pytest.mark.slow
def test_a_dead_collector_ends_the_run_in_one_line_and_ray_with_it(tmp_path):
    pytest.importorskip("ray")
    run = tmp_path / "run"
    proc = long_run(run, "--collectors", "1")
    wait_for(run / "checkpoint.zip")
    pids = wait_until(
        lambda: subprocess.run(["pgrep", "-f", "ray::Collector"], capture_output=True,
                               text=True).stdout.split(),
        "a collector actor", poll=0.5,
    )  # fmt: skip
    time.sleep(2.0)
    os.kill(int(pids[0]), signal.SIGKILL)
    _, err = proc.communicate(timeout=180)
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode != 0 and len(lines) == 1, err
    assert lines[0].startswith("error: a collector died"), lines[0]
    step = read_meta(run / "checkpoint.zip")["num_timesteps"]
    assert f"at step {step}; saved {run / 'checkpoint.zip'}" in lines[0]
    time.sleep(2.0)
    left = subprocess.run(["pgrep", "-f", "ray::Collector"], capture_output=True, text=True)
    assert left.stdout.strip() == ""
