"""Training in two processes (``train.py --workers 2``): the PPO update runs in a learner process
while the main process collects; runs train, resume, reproduce, and end cleanly when either
process dies."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from test_train import TINY, long_run, run_train, wait_for, wait_until

pytest.importorskip("sb3_contrib")

from sb3_contrib import MaskablePPO  # noqa: E402

from training.checkpoints import read_meta  # noqa: E402
from training.ppo_agent import load_ppo_agent  # noqa: E402
from training.train import Args  # noqa: E402


def children(pid: int) -> list[int]:
    """Process ids of the live children of ``pid``."""
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def learner_of(pid: int, seconds: float = 60) -> int:
    """The learner process of run ``pid`` (the child running ``serve``), once it has started."""

    def learner() -> int | None:
        for child in children(pid):
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ")
            if b"spawn_main" in cmdline:
                return child
        return None

    return wait_until(learner, f"the learner process of run {pid}", seconds)


def gone(pids: list[int], seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(Path(f"/proc/{p}").exists() for p in pids):
            return True
        time.sleep(0.1)
    return False


def test_workers_are_checked_and_default_to_both_cores(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert Args().processes() == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert Args().processes() == 1
    assert Args(workers=2).processes() == 2
    for bad in (0, 3, True):
        with pytest.raises(ValueError, match="--workers must be 1 or 2"):
            Args(workers=bad).check()


def test_two_processes_train_and_resume_and_leave_no_process(tmp_path):
    run = tmp_path / "run"
    run_train("--game", "updown", "--out", str(run), "--workers", "2", *TINY)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["workers"] == 2 and summary["steps"] >= 1024
    assert 0 < summary["learner_busy"] < 1
    # The learner process's CPU time is measured there and counted in the run's.
    assert summary["learner_cpu_seconds"] > 0
    # The learner's updates reached the checkpoint: its count of gradient steps is there.
    first = read_meta(run / "checkpoint.zip")["num_timesteps"]
    run_train("--resume", str(run), "--timesteps", "2048", "--workers", "2")
    assert read_meta(run / "checkpoint.zip")["num_timesteps"] >= max(2048, first)
    load_ppo_agent(run / "checkpoint.zip", "updown", {"num_players": 2})


def test_a_run_in_two_processes_is_the_same_run_whatever_their_speed(tmp_path):
    # The lag is fixed at one update (never more, never less), so the weights do not depend on
    # which process is faster; the time budget is off so that no schedule follows the clock.
    weights = []
    for name in ("a", "b"):
        run = tmp_path / name
        run_train("--game", "updown", "--out", str(run), "--workers", "2", "--max-minutes", "0",
                  "--exploiters", "0", *TINY)  # fmt: skip
        weights.append(MaskablePPO.load(run / "checkpoint.zip", device="cpu").policy.state_dict())
    assert weights[0].keys() == weights[1].keys()
    assert all((weights[0][k] == weights[1][k]).all() for k in weights[0])


def test_a_killed_learner_ends_the_run_in_one_line_with_a_checkpoint(tmp_path):
    run = tmp_path / "run"
    proc = long_run(run, "--workers", "2")
    wait_for(run / "checkpoint.zip")
    learner = learner_of(proc.pid)
    time.sleep(1.0)
    started = children(proc.pid)
    os.kill(learner, signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode != 0 and len(lines) == 1, err
    assert lines[0].startswith(f"error: the learner process (pid {learner}) was killed by signal 9")
    step = read_meta(run / "checkpoint.zip")["num_timesteps"]
    assert f"at step {step}; saved {run / 'checkpoint.zip'}" in lines[0]
    assert gone(started)
    proc = long_run(run, "--resume", str(run), "--timesteps", str(step + 512))
    proc.communicate(timeout=300)
    assert proc.returncode == 0
    assert read_meta(run / "checkpoint.zip")["num_timesteps"] >= step + 512


def test_kill_9_of_the_run_takes_its_learner_with_it(tmp_path):
    run = tmp_path / "run"
    proc = long_run(run, "--workers", "2")
    wait_for(run / "checkpoint.zip")
    learner = learner_of(proc.pid)
    started = children(proc.pid)
    assert learner in started
    proc.kill()
    proc.communicate(timeout=60)
    assert gone(started), "the learner outlived the run"
    read_meta(run / "checkpoint.zip")


def _three_updates(refuse_shared_memory: bool, monkeypatch) -> dict:
    """The weights after three rollouts updated in a learner process (seeded)."""
    from training.collector import SeatRolloutBuffer, SelfPlayPPO, SelfPlayVecEnv
    from training.learner import Shared, attach, settle, start

    if refuse_shared_memory:
        monkeypatch.setattr(Shared, "create", classmethod(lambda cls, like: None))
    env = SelfPlayVecEnv("updown", [{"num_players": 2}], 4, {"self": 1.0}, seed=3)
    model = SelfPlayPPO("MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=1, seed=0,
                        rollout_buffer_class=SeatRolloutBuffer, device="cpu",
                        policy_kwargs={"net_arch": [16]})  # fmt: skip
    learner = start("cpu", 0)
    try:
        attach(model, learner)
        model.learn(192)
        settle(model)
    finally:
        learner.close()
    assert model._n_updates == 3  # three rollouts, each updated in the learner process
    return {k: v.clone() for k, v in model.policy.state_dict().items()}


def test_rollouts_go_through_the_pipe_where_shared_memory_is_refused(monkeypatch):
    shared = _three_updates(False, monkeypatch)
    piped = _three_updates(True, monkeypatch)
    assert all((shared[k] == piped[k]).all() for k in shared)  # the same data arrived
