"""Self-play training: the CLI, run directories, resume, faults, checkpoints and policies."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import end_spawned, interruptible, spawn

pytest.importorskip("sb3_contrib")

from training.checkpoints import export_policy, read_meta, save_atomic, training_meta  # noqa: E402
from training.collector import SeatRolloutBuffer, SelfPlayPPO, SelfPlayVecEnv  # noqa: E402
from training.ppo_agent import load_ppo_agent  # noqa: E402
from training.train import GPU_SIZES, Args, game_default, main, parse_args  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TRAIN = [sys.executable, str(ROOT / "training" / "train.py")]
TINY = [
    "--timesteps", "1024", "--num-games", "8", "--n-steps", "256", "--batch-size", "128",
    "--n-epochs", "1", "--snapshot-every", "256", "--checkpoint-every", "256",
    "--eval-every", "512", "--eval-games", "4", "--net-arch", "32", "--no-progress",
    "--warm-start", "4", "--warm-epochs", "1",
]  # fmt: skip
FAST_OPTIONS = {"kdk": ["--option", "num_rounds=1", "--option", "max_round_steps=200"]}


def run_train(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    # The timeout guards against a hung run, not its speed: the run with Ray collectors takes
    # about 85 s on a quiet 2-core machine and passed 300 s on one loaded twice over.
    proc = subprocess.run(
        [*TRAIN, *args], capture_output=True, text=True, timeout=900, cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    if check and proc.returncode != 0:
        raise AssertionError(f"train.py failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def fail_line(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    """The one ``error: ...`` line of a refused command (run in this process)."""
    with pytest.raises(SystemExit) as stop:
        main(argv)
    message = str(stop.value.code) if not isinstance(stop.value.code, int) else ""
    message += capsys.readouterr().err
    lines = [line for line in message.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), message
    return lines[0]


def snapshot(run: Path) -> dict[str, float]:
    """Modification times of everything in a run directory."""
    return {str(p): p.stat().st_mtime_ns for p in sorted(run.rglob("*"))}


@pytest.mark.parametrize("game", ["kingup", "updown", "kdk"])
def test_cli_run_per_game(game, tmp_path):
    run = tmp_path / game
    run_train("--game", game, "--out", str(run), *TINY, *FAST_OPTIONS.get(game, []))
    for name in ("config.json", "checkpoint.zip", "best.zip", "curve.csv", "curve.json",
                 "curves.png", "warm_start.json"):  # fmt: skip
        assert (run / name).is_file(), name
    assert list((run / "pool").glob("snap_*.pt"))
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] >= 1024 and summary["samples_per_second"] > 0
    assert set(summary["final"]) == {"random", "heuristic", "pool"}
    assert {"env", "inference", "update", "evaluation"} <= set(summary["time_split"])
    assert sum(summary["time_split"].values()) == pytest.approx(1, abs=0.01)
    # The steady rate leaves out the first of the four rollouts.
    steady = summary["steady"]
    assert 0 < steady["samples"] <= summary["steps"] - 256 and steady["cpu_seconds"] > 0
    assert steady["samples_per_cpu_second"] == pytest.approx(
        steady["samples"] / steady["cpu_seconds"], rel=0.01
    )
    # Every opponent kind that decided has its cost; the game's default mix is written out.
    costs = summary["us_per_decision"]
    assert set(costs) == {k for k, n in summary["decisions"].items() if n and k != "self"}
    assert all(v > 0 for v in costs.values())
    config = json.loads((run / "config.json").read_text())
    assert config["opponent_mix"] == game_default(game, "mix")
    assert (config["warm_start"], config["warm_epochs"]) == (4, 1)
    assert read_meta(run / "checkpoint.zip")["game"] == game
    curve = json.loads((run / "curve.json").read_text())
    assert [r["step"] for r in curve] == sorted(r["step"] for r in curve)


def test_per_game_defaults_apply_unless_a_flag_says_otherwise():
    kdk, _ = parse_args(["--game", "kdk"])
    mix = kdk.resolved().opponent_mix
    assert mix == game_default("kdk", "mix") != game_default("kingup", "mix")
    assert (kdk.warm_start_games(), kdk.warm_start_epochs()) == (500, 5)
    updown, _ = parse_args(["--game", "updown", "--warm-epochs", "3", "--opponent-mix", "self=1"])
    resolved = updown.resolved()
    assert (resolved.warm_start, resolved.warm_epochs, resolved.opponent_mix) == (4000, 3, "self=1")
    assert resolved.ent_coef == 0.05 != kdk.resolved().ent_coef
    assert (resolved.anneal, resolved.clip_range) == ("ent", 0.1)
    assert (kdk.resolved().anneal, kdk.resolved().clip_range) == ("", 0.1)
    assert parse_args(["--game", "updown", "--anneal", ""])[0].resolved().anneal == ""
    assert parse_args(["--game", "updown", "--ent-coef", "0.02"])[0].resolved().ent_coef == 0.02
    assert (resolved.n_epochs, kdk.resolved().n_epochs) == (1, 2)
    assert parse_args(["--game", "updown", "--n-epochs", "3"])[0].resolved().n_epochs == 3


def test_device_is_checked_and_a_gpu_run_gets_gpu_sizes_unless_given(monkeypatch, capsys):
    import torch

    if not torch.cuda.is_available():
        assert "torch sees no CUDA GPU here" in fail_line(["--device", "cuda"], capsys)
        assert parse_args(["--device", "auto"])[0].torch_device() == "cpu"
    cpu, _ = parse_args(["--device", "cpu"])
    assert (cpu.num_games, cpu.n_steps, cpu.batch_size) == (256, 8192, 1024)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    gpu, _ = parse_args(["--device", "auto", "--num-games", "64"])
    assert gpu.torch_device() == "cuda:0"
    assert (gpu.num_games, gpu.n_steps, gpu.batch_size) == (
        64, GPU_SIZES["n_steps"], GPU_SIZES["batch_size"])  # fmt: skip
    assert "torch sees 1 GPU(s)" in fail_line(["--device", "cuda:1"], capsys)


def test_one_policy_plays_every_table_size_it_was_trained_at_and_no_other(tmp_path):
    run = tmp_path / "mixed"
    run_train("--game", "updown", "--num-players", "2,3", "--out", str(run), *TINY)
    for n in (2, 3):
        agent = load_ppo_agent(run / "checkpoint.zip", "updown", {"num_players": n})
        assert agent.spec.startswith("ppo:")
    with pytest.raises(ValueError, match="trained for num_players 2, 3, but this game has 4"):
        load_ppo_agent(run / "checkpoint.zip", "updown", {"num_players": 4})


def test_resume_continues_to_the_recorded_target_or_a_new_one(tmp_path):
    run = tmp_path / "run"
    run_train("--game", "updown", "--out", str(run), *TINY[:2], "--timesteps", "512", *TINY[2:])
    first = read_meta(run / "checkpoint.zip")["num_timesteps"]
    # At its target already: nothing to do, which is no success; nothing written.
    before = snapshot(run)
    proc = run_train("--resume", str(run), check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and "at or past --timesteps 512" in lines[0]
    assert f"--resume {run} --timesteps N" in lines[0] and snapshot(run) == before
    run_train("--resume", str(run), "--timesteps", "1536", "--no-progress")
    second = read_meta(run / "checkpoint.zip")["num_timesteps"]
    assert first >= 512 and second >= 1536
    assert json.loads((run / "config.json").read_text())["timesteps"] == 1536
    curve = json.loads((run / "curve.json").read_text())
    assert [r["step"] for r in curve] == sorted(r["step"] for r in curve)


def test_resume_applies_changed_ppo_settings_and_keeps_annealing(tmp_path):
    run = tmp_path / "run"
    run_train("--game", "updown", "--out", str(run), *TINY[:2], "--timesteps", "256", *TINY[2:])
    step = read_meta(run / "checkpoint.zip")["num_timesteps"]
    proc = run_train(
        "--resume", str(run), "--timesteps", "512", "--learning-rate", "1e-3",
        "--ent-coef", "0.02", "--n-epochs", "3", "--anneal", "lr,ent", "--max-minutes", "0",
    )  # fmt: skip
    # The changes are listed in one line as the run starts, and kept in config.json's history.
    said = [line for line in proc.stdout.splitlines() if line.startswith("resume: changed")]
    assert len(said) == 1 and "learning_rate 0.0003 -> 0.001" in said[0]
    history = json.loads((run / "config.json").read_text())["history"]
    assert history == [{"step": step, "changed": {
        "timesteps": [256, 512], "max_minutes": [25.0, 0.0], "n_epochs": [1, 3],
        "learning_rate": [0.0003, 0.001], "ent_coef": [0.05, 0.02], "anneal": ["ent", "lr,ent"],
    }}]  # fmt: skip
    model = SelfPlayPPO.load(run / "checkpoint.zip", device="cpu")
    assert (model.n_epochs, model.ent_start) == (3, 0.02)
    assert model.budget is None  # no time budget now: the first run's deadline is not kept
    # The learning rate falls from 1e-3 to 0 over the samples (512).
    assert model.lr_schedule(1.0) == pytest.approx(1e-3)
    assert model.lr_schedule(0.5) == pytest.approx(5e-4)
    assert 0 <= model.ent_coef < 0.02
    config = json.loads((run / "config.json").read_text())
    assert (config["learning_rate"], config["anneal"]) == (1e-3, "lr,ent")


def test_a_directory_holding_a_run_is_never_reused_silently(tmp_path, capsys):
    run = tmp_path / "run"
    run_train("--game", "updown", "--out", str(run), *TINY[:2], "--timesteps", "256", *TINY[2:])
    before = snapshot(run)
    line = fail_line(["--game", "updown", "--out", str(run), *TINY], capsys)
    assert f"--resume {run}" in line and "--overwrite" in line
    assert snapshot(run) == before
    # Resuming may not change what defines the model, and a refused resume writes nothing.
    line = fail_line(["--resume", str(run), "--net-arch", "64"], capsys)
    assert "--net-arch" in line and snapshot(run) == before
    line = fail_line(["--resume", str(run), "--game", "kingup"], capsys)
    assert "--game" in line and snapshot(run) == before
    run_train("--game", "updown", "--out", str(run), "--overwrite", *TINY[:2], "--timesteps",
              "256", *TINY[2:], "--seed", "5")  # fmt: skip
    assert json.loads((run / "config.json").read_text())["seed"] == 5


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--num-games", "0"], "--num-games must be a positive integer"),
        (["--batch-size", "0"], "--batch-size must be a positive integer"),
        (["--n-epochs", "0"], "--n-epochs must be a positive integer"),
        (["--timesteps", "0"], "--timesteps must be a positive integer"),
        (["--timesteps", "-5"], "--timesteps must be a positive integer"),
        (["--timesteps", "many"], "argument --timesteps: invalid int value"),
        (["--net-arch", "abc"], "--net-arch must be positive layer sizes"),
        (["--warm-epochs", "-1"], "--warm-epochs must be an integer >= 0"),
        (["--warm-start", "-3"], "--warm-start must be an integer >= 0"),
        (["--num-players", "7"], "--num-players must be one of 3, 4, 5, 6"),
        (["--option", "colour=1"], "unknown option 'colour'"),
        (["--option", "rounds=1"], "option 'rounds' is now called 'num_rounds'"),
        (["--option", "oops"], "--option: expected KEY=VALUE"),
        (["--opponent-mix", "robot=1"], "unknown player kind 'robot'"),
        (["--learning-rate", "0"], "--learning-rate must lie in (0, 1]"),
        (["--anneal", "clip"], "--anneal must be empty, lr, ent or lr,ent; got 'clip'"),
        (["--backend", "gpu"], "--backend must be one of"),
        (["--device", "gpu"], "--device must be cpu, cuda, cuda:N or auto; got 'gpu'"),
        (["--game", "chess"], "argument --game: invalid choice"),
        (["--resume", "nowhere"], "--resume nowhere: no run there"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_before_anything_is_written(argv, message, tmp_path, capsys):
    out = tmp_path / "run"
    line = fail_line([*argv, "--out", str(out)], capsys)
    assert message in line
    assert not out.exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"timesteps": "many"}', "timesteps must be int; got 'many'"),
        ('{"gamez": 1}', "unknown key 'gamez'"),
        ("{not json", "invalid JSON"),
        ('{"game": "chess"}', "unknown game 'chess'"),
    ],
)
def test_bad_config_files_are_refused_in_one_line(content, message, tmp_path, capsys):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(content)
    line = fail_line(["--config", str(cfg), "--out", str(tmp_path / "run")], capsys)
    assert message in line
    assert str(cfg) in line or "chess" in message  # a bad value is named by its option


def test_config_file_fills_what_the_command_line_does_not_say(tmp_path):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"game": "updown", "timesteps": 1000, "seed": 3}))
    args, given = parse_args(["--config", str(cfg), "--seed", "9"])
    assert (args.game, args.timesteps, args.seed) == ("updown", 1000, 9)
    assert {"seed", "game", "timesteps"} <= given
    assert Args(option=["num_rounds=3", "reward=tricks"], game="updown").game_options() == {
        "num_rounds": 3, "reward": "tricks",
    }  # fmt: skip


def test_out_that_is_a_file_or_unwritable_is_refused(tmp_path, capsys):
    afile = tmp_path / "file"
    afile.write_text("x")
    assert "is a file" in fail_line(["--out", str(afile)], capsys)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who may write anywhere")
        assert "cannot write" in fail_line(["--out", str(locked / "run")], capsys)
    finally:
        locked.chmod(0o700)


def long_run(run: Path, *extra: str) -> subprocess.Popen:
    """A training run that would take minutes, writing checkpoints often."""
    argv = [*TRAIN, "--game", "updown", "--out", str(run), "--timesteps", "10000000",
            "--num-games", "8", "--n-steps", "256", "--batch-size", "128", "--n-epochs", "1",
            "--checkpoint-every", "256", "--snapshot-every", "512", "--eval-every", "1024",
            "--eval-games", "2", "--net-arch", "32", "--warm-start", "0", "--no-progress",
            *extra]  # fmt: skip
    return spawn(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                 preexec_fn=interruptible)  # fmt: skip


def wait_until(ready: Callable[[], Any], what: str, seconds: float = 120, poll: float = 0.2) -> Any:
    """Poll ``ready`` until it returns something true, and return that; fail the test if
    ``seconds`` pass first (a hung process, not a slow one), naming ``what`` it waited for."""
    deadline = time.monotonic() + seconds
    while not (value := ready()):
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {seconds:g} s")
        time.sleep(poll)
    return value


def wait_for(path: Path, seconds: float = 120) -> None:
    wait_until(path.exists, f"{path} to appear", seconds)


def test_a_process_a_test_started_ends_with_the_test():
    proc = spawn([sys.executable, "-c", "import time; time.sleep(600)"])
    end_spawned()  # what tests/conftest.py does after every test
    assert proc.poll() == -signal.SIGKILL


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_ctrl_c_save_at_the_current_step_and_say_so_in_one_line(how, tmp_path):
    run = tmp_path / "run"
    proc = long_run(run)
    wait_for(run / "checkpoint.zip")
    time.sleep(1.0)
    proc.send_signal(how)
    _, err = proc.communicate(timeout=120)
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode != 0 and len(lines) == 1, err
    step = read_meta(run / "checkpoint.zip")["num_timesteps"]
    assert f"at step {step}; saved {run / 'checkpoint.zip'}" in lines[0]


class _SignalledError(Exception):
    pass


def _raise_signalled(signum, frame):
    raise _SignalledError(signum)


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_a_save_waits_for_the_whole_checkpoint(how, tmp_path, monkeypatch):
    # CI once caught Ctrl-C inside torch's zip writer, which then failed with a RuntimeError:
    # a traceback and no checkpoint. The signal must be acted on after the save.
    import torch

    tables = [{"num_players": 2}]
    env = SelfPlayVecEnv("updown", tables, 2, {"self": 1.0})
    model = SelfPlayPPO("MlpPolicy", env, n_steps=16, batch_size=16, seed=0, device="cpu")
    model.num_timesteps = 1234
    real_save = torch.save

    def signalled_save(*args, **kwargs):
        os.kill(os.getpid(), how)
        return real_save(*args, **kwargs)

    monkeypatch.setattr(torch, "save", signalled_save)
    previous = signal.signal(how, _raise_signalled)
    try:
        with pytest.raises(_SignalledError):
            save_atomic(model, tmp_path / "checkpoint.zip", training_meta("updown", tables))
        assert signal.getsignal(how) is _raise_signalled
        signal.signal(how, signal.SIG_IGN)  # as while train.py saves on its way out
        save_atomic(model, tmp_path / "again.zip", training_meta("updown", tables))
    finally:
        signal.signal(how, previous)
    assert read_meta(tmp_path / "checkpoint.zip")["num_timesteps"] == 1234
    assert read_meta(tmp_path / "again.zip")["num_timesteps"] == 1234
    assert not list(tmp_path.glob(".*tmp*"))


def test_kill_9_at_random_moments_never_loses_the_run(tmp_path):
    run = tmp_path / "run"
    rng = random.Random(0)
    steps = []
    for attempt in range(3):
        proc = long_run(run, *(["--resume", str(run)] if attempt else []))
        wait_for(run / "checkpoint.zip")
        time.sleep(rng.uniform(0.5, 4.0))
        proc.kill()
        proc.communicate(timeout=60)
        meta = read_meta(run / "checkpoint.zip")  # always a whole, loadable checkpoint
        steps.append(meta["num_timesteps"])
        load_ppo_agent(run / "checkpoint.zip", "updown", {"num_players": 2})
    assert steps == sorted(steps) and steps[-1] > 0
    # A last resume cleans what the kills left behind: no evaluation newer than the
    # checkpoint, no half-written temporary files.
    proc = long_run(run, "--resume", str(run), "--timesteps", str(steps[-1] + 512))
    proc.communicate(timeout=300)
    assert proc.returncode == 0
    curve = json.loads((run / "curve.json").read_text())
    assert [r["step"] for r in curve] == sorted(r["step"] for r in curve)
    assert not list(run.rglob(".*.tmp*"))
    assert read_meta(run / "checkpoint.zip")["num_timesteps"] >= steps[-1] + 512
    # Nothing the trainer started outlives it.
    left = subprocess.run(["pgrep", "-f", str(run)], capture_output=True, text=True).stdout
    assert left.strip() == ""


def test_exported_policy_is_smaller_and_plays_the_same(tmp_path):
    tables = [{"num_players": 2}]
    env = SelfPlayVecEnv("updown", tables, 4, {"self": 1.0})
    model = SelfPlayPPO(
        "MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu",
        rollout_buffer_class=SeatRolloutBuffer,
    )  # fmt: skip
    model.learn(64)  # fills Adam's moment estimates
    save_atomic(model, tmp_path / "full.zip", training_meta("updown", tables))
    small = export_policy(tmp_path / "full.zip", tmp_path / "small.zip")
    assert small.stat().st_size < 0.5 * (tmp_path / "full.zip").stat().st_size
    assert read_meta(small)["num_timesteps"] == read_meta(tmp_path / "full.zip")["num_timesteps"]
    full_agent = load_ppo_agent(tmp_path / "full.zip", "updown", tables[0])
    small_agent = load_ppo_agent(small, "updown", tables[0])
    obs = np.random.default_rng(0).random(env.observation_space.shape, dtype=np.float32)
    assert np.array_equal(full_agent.net.logits(obs), small_agent.net.logits(obs))


def test_init_starts_from_a_trained_policy_at_other_table_sizes(tmp_path, capsys):
    import torch
    from sb3_contrib import MaskablePPO

    first = tmp_path / "first"
    run_train("--game", "updown", "--out", str(first), *TINY[:2], "--timesteps", "256", *TINY[2:])
    second = tmp_path / "second"
    run_train("--game", "updown", "--num-players", "2,3", "--init", str(first / "checkpoint.zip"),
              "--out", str(second), *TINY[:2], "--timesteps", "256", *TINY[2:])  # fmt: skip
    assert not (second / "warm_start.json").exists()  # the policy replaced the warm start
    assert json.loads((second / "config.json").read_text())["init"] == str(first / "checkpoint.zip")
    # PPO started from the given policy: the pool's first entry, the policy training started
    # from, holds its weights (a win rate over this test's four evaluation games said too
    # little), and that policy's play was evaluated at step 0.
    given = MaskablePPO.load(first / "checkpoint.zip", device="cpu").policy.state_dict()
    started = torch.load(second / "pool" / "snap_0000000000.pt", map_location="cpu")
    assert given.keys() == started.keys()
    assert all(torch.equal(given[k], started[k]) for k in given)
    curve = json.loads((second / "curve.json").read_text())
    assert {r["opponent"] for r in curve if r["step"] == 0} >= {"random", "heuristic"}
    line = fail_line(["--game", "kingup", "--init", str(first / "checkpoint.zip"),
                      "--out", str(tmp_path / "x")], capsys)  # fmt: skip
    assert "--init" in line and "game='updown'" in line
    line = fail_line(["--game", "updown", "--init", str(tmp_path / "none.zip"),
                      "--out", str(tmp_path / "x")], capsys)  # fmt: skip
    assert "--init" in line and "not found" in line
    assert not (tmp_path / "x").exists()


def test_init_takes_the_agent_spec_spelling_too(tmp_path):
    from training.bots import builtin_bot_path
    from training.train import init_path

    bot = builtin_bot_path("kdk")
    assert init_path(Args(game="kdk", init="ppo:kdk")) == init_path(Args(game="kdk", init="kdk"))
    assert init_path(Args(game="kdk", init="ppo:kdk")) == bot
    assert init_path(Args(game="kdk", init=f"ppo:{bot}")) == bot
    with pytest.raises(ValueError, match="--init ppo:kingup: the policy was trained for game"):
        init_path(Args(game="kdk", init="ppo:kingup"))


def test_init_widens_a_narrower_network_without_changing_its_play():
    import torch

    from training.train import widen

    tables = [{"num_players": 2}]
    env = SelfPlayVecEnv("updown", tables, 4, {"self": 1.0})

    def policy(layers: list[int]) -> Any:
        model = SelfPlayPPO("MlpPolicy", env, seed=0, device="cpu",
                            policy_kwargs={"net_arch": layers})  # fmt: skip
        return model.policy

    narrow, wide = policy([8, 8]), policy([16, 12])
    with torch.no_grad():  # the narrow net's new-unit zeros must come from widen, not init
        for value in narrow.state_dict().values():
            value.add_(torch.randn_like(value) * 0.1)
    wide.load_state_dict(widen(narrow.state_dict(), wide.state_dict()))
    obs = torch.as_tensor(np.random.default_rng(1).random((5, *env.observation_space.shape)))
    with torch.no_grad():
        probs = [p.get_distribution(obs.float()).distribution.probs for p in (narrow, wide)]
        assert torch.allclose(*probs, atol=1e-6)
        assert torch.allclose(narrow.predict_values(obs.float()), wide.predict_values(obs.float()),
                              atol=1e-6)  # fmt: skip
    # The new units are live: their incoming weights are not zero.
    assert wide.state_dict()["mlp_extractor.policy_net.0.weight"][8:].abs().sum() > 0
    for layers in ([4, 8], [8, 8, 8]):  # narrower in a layer; another depth
        with pytest.raises(ValueError):
            widen(narrow.state_dict(), policy(layers).state_dict())
    # The command line says so before any work: the built-in bot is 128,128.
    for arch in ("64,128", "256,256,256"):
        with pytest.raises(ValueError, match="its layers are 128,128; --net-arch .* as wide"):
            Args(game="updown", init="ppo:updown", net_arch=arch).check()
    Args(game="updown", init="ppo:updown", net_arch="256,128").check()


def test_card_features_start_from_a_plain_network_and_both_forward_passes_agree():
    import torch
    from helpers import make, random_playout

    from training.features import CardFeatures, policy_kwargs
    from training.ppo_agent import NumpyPolicy, actor_logits
    from training.train import widen
    from updown_env import observation

    env = SelfPlayVecEnv("updown", [{"num_players": 3}], 4, {"self": 1.0})

    def policy(features: str) -> Any:
        kwargs = policy_kwargs("updown", [16, 16], features)
        return SelfPlayPPO("MlpPolicy", env, seed=0, device="cpu", policy_kwargs=kwargs).policy

    plain, cards = policy("none"), policy("cards")
    assert isinstance(cards.features_extractor, CardFeatures)
    with torch.no_grad():
        for value in plain.state_dict().values():
            value.add_(torch.randn_like(value) * 0.1)
    cards.load_state_dict(widen(plain.state_dict(), cards.state_dict()))
    games = zip(range(60), random_playout(make("updown", 3), 0))
    obs = np.stack([observation.encode(g.game_state, g.game_state.to_play) for _, g in games])
    # The new inputs start at zero weight: the same play and values as the plain network.
    np.testing.assert_allclose(actor_logits(cards, obs), actor_logits(plain, obs), atol=1e-5)
    with torch.no_grad():
        x = torch.as_tensor(obs)
        assert torch.allclose(cards.predict_values(x), plain.predict_values(x), atol=1e-5)
        cards.mlp_extractor.policy_net[0].weight[:, obs.shape[1] :] += 0.1
    logits = actor_logits(cards, obs)
    assert not np.allclose(logits, actor_logits(plain, obs), atol=1e-3)  # now they count
    np.testing.assert_allclose(NumpyPolicy(cards).logits(obs), logits, atol=1e-4)
    np.testing.assert_allclose(NumpyPolicy(cards).logits(obs[7]), logits[7], atol=1e-4)
    with pytest.raises(ValueError, match="kingup has no per-card features"):
        Args(game="kingup", features="cards").check()
    with pytest.raises(ValueError, match="--features must be one of none, cards; got 'all'"):
        Args(game="updown", features="all").check()


def _as_updown_v1(src: Path, dst: Path) -> None:
    """``src``, an updown_v2 checkpoint, as v1 would have saved it: its first 501 inputs."""
    import torch
    from gymnasium import spaces
    from stable_baselines3.common.save_util import load_from_zip_file, save_to_zip_file

    data, params, variables = load_from_zip_file(src, device="cpu")
    data["observation_space"] = spaces.Box(0.0, 1.0, (501,), dtype=np.float32)
    data["tablegym_meta"] = {**data["tablegym_meta"], "env_name": "updown_v1", "obs_size": 501}
    for key, value in params["policy"].items():
        if key.endswith(".0.weight"):  # the first layer of each network
            params["policy"][key] = torch.cat([value[:, :501], value[:, 529:]], dim=1)
    params["policy.optimizer"] = {"state": {}, "param_groups": []}
    save_to_zip_file(dst, data=data, params=params, pytorch_variables=variables)


@pytest.mark.parametrize("features", ["none", "cards"])
def test_an_updown_v1_policy_upgrades_to_v2_and_plays_as_before(features, tmp_path):
    from helpers import make, random_playout

    from training.checkpoints import load_model, upgrade_policy
    from training.features import policy_kwargs
    from training.ppo_agent import actor_logits
    from updown_env import observation

    tables = [{"num_players": 3}]
    env = SelfPlayVecEnv("updown", tables, 4, {"self": 1.0})
    kwargs = policy_kwargs("updown", [16, 16], features)
    model = SelfPlayPPO("MlpPolicy", env, seed=0, device="cpu", policy_kwargs=kwargs)
    save_atomic(model, tmp_path / "v2.zip", training_meta("updown", tables))
    _as_updown_v1(tmp_path / "v2.zip", tmp_path / "v1.zip")
    with pytest.raises(ValueError, match="env_name='updown_v1'.*upgrade_policy converts it"):
        load_model(tmp_path / "v1.zip", "updown", tables[0])
    upgrade_policy(tmp_path / "v1.zip", tmp_path / "up.zip")
    assert read_meta(tmp_path / "up.zip")["env_name"] == "updown_v2"
    games = zip(range(60), random_playout(make("updown", 3), 1))
    obs = np.stack([observation.encode(g.game_state, g.game_state.to_play) for _, g in games])
    assert obs[:, 501:].any()  # the games reached the habits
    blind = obs.copy()
    blind[:, 501:] = 0
    # The upgraded policy reads the v1 inputs with v1's weights and nothing from the new ones.
    upgraded = load_model(tmp_path / "up.zip", "updown", tables[0]).policy
    np.testing.assert_allclose(actor_logits(upgraded, obs), actor_logits(model.policy, blind))
    with pytest.raises(ValueError, match="no newer version of updown_v2"):
        upgrade_policy(tmp_path / "up.zip", tmp_path / "again.zip")


def test_a_run_with_card_features_trains_plays_and_keeps_them_on_resume(tmp_path, capsys):
    run = tmp_path / "cards"
    run_train("--game", "updown", "--features", "cards", "--out", str(run), *TINY)
    agent = load_ppo_agent(run / "checkpoint.zip", "updown", {"num_players": 2})
    assert agent.net.features is not None  # numpy play computes the features too
    exported = export_policy(run / "checkpoint.zip", tmp_path / "play.zip")
    assert load_ppo_agent(exported, "updown", {"num_players": 2}).net.features is not None
    line = fail_line(["--resume", str(run), "--features", "none"], capsys)
    assert "trained with --features 'cards'; it cannot change to 'none'" in line
    line = fail_line(["--game", "updown", "--init", str(run / "checkpoint.zip"), "--net-arch",
                      "32", "--out", str(tmp_path / "x")], capsys)  # fmt: skip
    assert line.endswith("its network reads per-card features; add --features cards")
    assert not (tmp_path / "x").exists()


# -- runs that lose nothing: checkpoints by time, a full disk, overwrite, no silent success --


def test_a_run_killed_before_its_first_sample_checkpoint_keeps_its_work(tmp_path):
    run = tmp_path / "run"
    # No checkpoint by samples in this run; one as PPO starts, then one every 0.6 s.
    proc = long_run(run, "--checkpoint-every", "0", "--checkpoint-minutes", "0.01")
    wait_for(run / "checkpoint.zip")
    wait_until(lambda: read_meta(run / "checkpoint.zip")["num_timesteps"], "a checkpoint by time")
    proc.kill()
    proc.communicate(timeout=60)
    step = read_meta(run / "checkpoint.zip")["num_timesteps"]
    assert step > 0
    run_train("--resume", str(run), "--timesteps", str(step + 256), "--checkpoint-every", "256")
    assert read_meta(run / "checkpoint.zip")["num_timesteps"] >= step + 256


def test_a_directory_with_a_config_but_no_checkpoint_starts_its_run_again(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    args, _ = parse_args(["--game", "updown", "--out", str(run), *TINY[:2], "--timesteps", "256",
                          *TINY[2:]])  # fmt: skip
    (run / "config.json").write_text(json.dumps(dataclasses.asdict(args.resolved())))
    (run / "curve.json").write_text("[]")  # what a run killed in its first evaluation left
    proc = run_train("--resume", str(run))
    assert f"{run} has no checkpoint: its run starts from the beginning" in proc.stdout
    assert read_meta(run / "checkpoint.zip")["num_timesteps"] >= 256
    assert json.loads((run / "curve.json").read_text())  # evaluated afresh


def test_refusals_for_an_existing_directory_suggest_only_what_works(tmp_path, capsys):
    run = tmp_path / "run"
    (run / "tb").mkdir(parents=True)  # files of a run, but no config.json to resume from
    line = fail_line(["--game", "updown", "--out", str(run)], capsys)
    assert "--overwrite" in line and "--resume" not in line
    line = fail_line(["--resume", str(run)], capsys)
    assert f"--out {run} --overwrite" in line
    line = fail_line(["--resume", str(tmp_path / "empty")], capsys)
    assert "start one with --out" in line and "--overwrite" not in line
    (run / "config.json").write_text("{}")
    (run / ".overwritten").mkdir()
    line = fail_line(["--game", "updown", "--out", str(run)], capsys)
    assert f"--resume {run}" in line and f"{run / '.overwritten'} keeps the run" in line


@pytest.mark.slow
def test_an_interrupted_overwrite_loses_neither_run(tmp_path):
    run = tmp_path / "run"
    run_train("--game", "updown", "--out", str(run), *TINY[:2], "--timesteps", "256", *TINY[2:])
    old = (run / "checkpoint.zip").read_bytes()

    def overwrite_until_config() -> subprocess.Popen:
        # A long warm start: the new run is stopped before its first checkpoint.
        proc = long_run(run, "--overwrite", "--seed", "5", "--warm-start", "20000")

        def written() -> bool:
            if '"seed": 5' in _read(run / "config.json"):
                return True
            assert proc.poll() is None, "the new run ended before writing its config"
            return False

        wait_until(written, "the new run's config", poll=0.1)
        return proc

    proc = overwrite_until_config()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0 and err.strip() == (
        f"stopped before the first checkpoint; nothing saved; {run} holds the run it was "
        "replacing again"
    )
    assert (run / "checkpoint.zip").read_bytes() == old
    assert json.loads((run / "config.json").read_text())["seed"] == 0
    assert not (run / ".overwritten").exists()
    # kill -9 leaves the new config beside the old run; resuming starts the new run, and the
    # old one goes only once the new one has a checkpoint.
    proc = overwrite_until_config()
    proc.kill()
    proc.communicate(timeout=60)
    assert (run / ".overwritten" / "checkpoint.zip").read_bytes() == old
    run_train("--resume", str(run), "--warm-start", "4", "--timesteps", "256")
    config = json.loads((run / "config.json").read_text())
    assert config["seed"] == 5 and config["history"][0]["changed"]["warm_start"] == [20000, 4]
    assert not (run / ".overwritten").exists()
    assert read_meta(run / "checkpoint.zip")["num_timesteps"] >= 256


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def test_a_full_disk_is_one_line_and_the_run_keeps_a_checkpoint(tmp_path):
    import resource

    run = tmp_path / "run"

    def small_disk() -> None:  # files may not grow past 250 kB, as if the disk were full
        resource.setrlimit(resource.RLIMIT_FSIZE, (250_000, 250_000))

    proc = subprocess.run(
        [*TRAIN, "--game", "updown", "--out", str(run), *TINY], capture_output=True, text=True,
        timeout=300, cwd=ROOT, preexec_fn=small_disk,
    )  # fmt: skip
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"error: cannot write {run}") and "File too large" in lines[0]
    step = read_meta(run / "checkpoint.zip")["num_timesteps"]
    assert f"{run / 'checkpoint.zip'} at step {step}" in lines[0]
    assert not list(run.rglob(".*.tmp*"))
    load_ppo_agent(run / "checkpoint.zip", "updown", {"num_players": 2})


def test_a_failed_checkpoint_keeps_the_previous_one_and_says_so(tmp_path, monkeypatch):
    from tablegym.files import WriteError
    from training.checkpoints import save_or_keep

    tables = [{"num_players": 2}]
    meta = training_meta("updown", tables)
    env = SelfPlayVecEnv("updown", tables, 2, {"self": 1.0})
    model = SelfPlayPPO("MlpPolicy", env, n_steps=16, batch_size=16, seed=0, device="cpu")
    path = tmp_path / "checkpoint.zip"
    model.num_timesteps = 100
    save_atomic(model, path, meta)
    model.num_timesteps = 200

    def full_disk(tmp, *args, **kwargs):
        Path(tmp).write_bytes(b"PK half a zip")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(model, "save", full_disk)
    with pytest.raises(WriteError, match=f"cannot write {path}: No space left on device"):
        save_atomic(model, path, meta)
    assert save_or_keep(model, path, meta) == (
        f"the checkpoint could not be saved either; kept {path} at step 100"
    )
    assert read_meta(path)["num_timesteps"] == 100 and list(tmp_path.iterdir()) == [path]
    monkeypatch.undo()
    assert save_or_keep(model, path, meta) == f"retried the checkpoint: saved {path} at step 200"


def test_a_run_that_made_no_samples_fails_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(SelfPlayPPO, "learn", lambda self, *args, **kwargs: self)
    line = fail_line(["--game", "updown", "--out", str(tmp_path / "run"), *TINY], capsys)
    assert line == "error: the run made no samples (it stayed at step 0)"


def test_a_full_disk_under_tensorboard_is_one_line_too(tmp_path):
    # TensorBoard writes in a thread: its failure must not print a traceback of its own.
    # (In a subprocess: pytest catches the exceptions of threads itself.)
    run = tmp_path / "run"
    script = (
        "import sys\n"
        "from tensorboard.summary.writer.record_writer import RecordWriter\n"
        "def full_disk(self, data):\n"
        "    raise OSError(28, 'No space left on device')\n"
        "RecordWriter.write = full_disk\n"
        "from training.train import main\n"
        "main(sys.argv[1:])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, "--game", "updown", "--out", str(run), *TINY],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"error: {run}: No space left on device; retried the checkpoint")
    assert read_meta(run / "checkpoint.zip")["num_timesteps"] >= 0


def test_overwrite_keeps_the_old_run_aside_and_config_history_accumulates(tmp_path):
    from training.rundir import drop_aside, restore_aside, set_aside, write_config
    from training.train import run_paths

    run = tmp_path / "run"
    (run / "pool").mkdir(parents=True)
    for name in ("config.json", "checkpoint.zip", "exploiter_0.pt"):
        (run / name).write_text(f"old {name}")
    (run / "notes.txt").write_text("not the run's")
    set_aside(run, run_paths(run))
    assert sorted(p.name for p in run.iterdir()) == [".overwritten", "notes.txt"]
    (run / "config.json").write_text("new")
    assert restore_aside(run, run_paths(run))
    assert (run / "config.json").read_text() == "old config.json"
    assert (run / "exploiter_0.pt").is_file() and not (run / ".overwritten").exists()
    # A second --overwrite after a kill -9 keeps the run that has a checkpoint aside...
    set_aside(run, run_paths(run))
    (run / "config.json").write_text("new, never checkpointed")
    set_aside(run, run_paths(run))
    assert (run / ".overwritten" / "config.json").read_text() == "old config.json"
    assert not (run / "config.json").exists()
    # ...and drops it once the new run has one.
    (run / "checkpoint.zip").write_text("new checkpoint")
    drop_aside(run)
    assert sorted(p.name for p in run.iterdir()) == ["checkpoint.zip", "notes.txt"]
    config = run / "config.json"
    assert write_config(config, {"lr": 1, "seed": 0}, 0, None) == {}
    first = json.loads(config.read_text())
    assert write_config(config, {"lr": 2, "seed": 0}, 512, first) == {"lr": [1, 2]}
    second = json.loads(config.read_text())
    # How the command was given (resume) and options newer than the record are no changes.
    new = {"lr": 3, "seed": 0, "resume": "x", "checkpoint_minutes": 2.0}
    assert write_config(config, new, 1024, second) == {"lr": [2, 3]}
    assert json.loads(config.read_text()) == {
        "lr": 3, "seed": 0, "resume": "x", "checkpoint_minutes": 2.0,
        "history": [{"step": 512, "changed": {"lr": [1, 2]}},
                    {"step": 1024, "changed": {"lr": [2, 3]}}],
    }  # fmt: skip


def test_tensorboard_tags_and_their_steps(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from training import tags

    run = tmp_path / "run"
    run_train("--game", "updown", "--out", str(run), *TINY, "--exploiter-check", "256",
              "--exploiter-share", "0.5")  # fmt: skip
    events = EventAccumulator(str(next((run / "tb").iterdir()))).Reload()
    scalars = set(events.Tags()["scalars"])
    for opponent in ("random", "heuristic", "pool"):
        points = events.Scalars(tags.EVAL_WIN_RATE.format(opponent))
        assert points[0].step == 0  # the evaluation before training, at step 0
        assert [p.step for p in points] == sorted({p.step for p in points})
    assert {tags.EPISODE_REWARD, tags.SAMPLES_PER_SECOND, tags.PROBE_GAIN} <= scalars
    kinds = {t.rpartition("_vs_")[2] for t in scalars if t.startswith("selfplay/win_rate_vs_")}
    assert kinds and kinds <= {"random", "heuristic", "pool", "fixed"}
    assert all(
        0 <= p.value <= 1 for k in kinds for p in events.Scalars(f"selfplay/win_rate_vs_{k}")
    )
    rollout_steps = [p.step for p in events.Scalars(tags.SAMPLES_PER_SECOND)]
    assert rollout_steps[0] > 0 and all(
        p.value > 0 for p in events.Scalars(tags.SAMPLES_PER_SECOND)
    )
