"""Self-play training: the CLI, run directories, resume, faults, checkpoints and policies."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import interruptible

pytest.importorskip("sb3_contrib")

from training.checkpoints import export_policy, read_meta, save_atomic, training_meta  # noqa: E402
from training.collector import SeatRolloutBuffer, SelfPlayPPO, SelfPlayVecEnv  # noqa: E402
from training.ppo_agent import load_ppo_agent  # noqa: E402
from training.train import DEFAULT_MIX, Args, main, parse_args  # noqa: E402

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
    proc = subprocess.run([*TRAIN, *args], capture_output=True, text=True, timeout=300, cwd=ROOT)
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
    # Every opponent kind that decided has its cost; the game's default mix is written out.
    costs = summary["us_per_decision"]
    assert set(costs) == {k for k, n in summary["decisions"].items() if n and k != "self"}
    assert all(v > 0 for v in costs.values())
    config = json.loads((run / "config.json").read_text())
    assert config["opponent_mix"] == DEFAULT_MIX[game]
    assert (config["warm_start"], config["warm_epochs"]) == (4, 1)
    assert read_meta(run / "checkpoint.zip")["game"] == game
    curve = json.loads((run / "curve.json").read_text())
    assert [r["step"] for r in curve] == sorted(r["step"] for r in curve)


def test_per_game_defaults_apply_unless_a_flag_says_otherwise():
    kdk, _ = parse_args(["--game", "kdk"])
    assert kdk.resolved().opponent_mix == DEFAULT_MIX["kdk"] != DEFAULT_MIX["kingup"]
    assert (kdk.warm_start_games(), kdk.warm_start_epochs()) == (500, 5)
    updown, _ = parse_args(["--game", "updown", "--warm-epochs", "3", "--opponent-mix", "self=1"])
    resolved = updown.resolved()
    assert (resolved.warm_start, resolved.warm_epochs, resolved.opponent_mix) == (4000, 3, "self=1")
    assert resolved.ent_coef == 0.005 != kdk.resolved().ent_coef
    assert (resolved.anneal, resolved.clip_range) == ("ent", 0.1)
    assert (kdk.resolved().anneal, kdk.resolved().clip_range) == ("", 0.2)
    assert parse_args(["--game", "updown", "--anneal", ""])[0].resolved().anneal == ""
    assert parse_args(["--game", "updown", "--ent-coef", "0.02"])[0].resolved().ent_coef == 0.02
    assert (resolved.n_epochs, kdk.resolved().n_epochs) == (1, 2)
    assert parse_args(["--game", "updown", "--n-epochs", "3"])[0].resolved().n_epochs == 3


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
    # At its target already: nothing to do, nothing written.
    before = snapshot(run)
    proc = run_train("--resume", str(run))
    assert "at or past --timesteps 512" in proc.stdout and snapshot(run) == before
    run_train("--resume", str(run), "--timesteps", "1536", "--no-progress")
    second = read_meta(run / "checkpoint.zip")["num_timesteps"]
    assert first >= 512 and second >= 1536
    assert json.loads((run / "config.json").read_text())["timesteps"] == 1536
    curve = json.loads((run / "curve.json").read_text())
    assert [r["step"] for r in curve] == sorted(r["step"] for r in curve)


def test_resume_applies_changed_ppo_settings_and_keeps_annealing(tmp_path):
    run = tmp_path / "run"
    run_train("--game", "updown", "--out", str(run), *TINY[:2], "--timesteps", "256", *TINY[2:])
    run_train(
        "--resume", str(run), "--timesteps", "512", "--learning-rate", "1e-3",
        "--ent-coef", "0.02", "--n-epochs", "3", "--anneal", "lr,ent", "--max-minutes", "0",
    )  # fmt: skip
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
    return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=interruptible)  # fmt: skip


def wait_for(path: Path, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > deadline:  # a hung run, not a slow one
            pytest.fail(f"{path} never appeared")
        time.sleep(0.2)


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
    first = tmp_path / "first"
    run_train("--game", "updown", "--out", str(first), *TINY[:2], "--timesteps", "256", *TINY[2:])
    second = tmp_path / "second"
    run_train("--game", "updown", "--num-players", "2,3", "--init", str(first / "checkpoint.zip"),
              "--out", str(second), *TINY[:2], "--timesteps", "256", *TINY[2:])  # fmt: skip
    assert not (second / "warm_start.json").exists()  # the policy replaced the warm start
    assert json.loads((second / "config.json").read_text())["init"] == str(first / "checkpoint.zip")
    # Its first evaluation is the given policy's: the same play as the first run's last one.
    curves = [json.loads((run / "curve.json").read_text()) for run in (first, second)]
    start = {r["opponent"]: r["win_rate"] for r in curves[1] if r["step"] == 0}
    assert start["random"] > 0.6
    line = fail_line(["--game", "kingup", "--init", str(first / "checkpoint.zip"),
                      "--out", str(tmp_path / "x")], capsys)  # fmt: skip
    assert "--init" in line and "game='updown'" in line
    line = fail_line(["--game", "updown", "--init", str(tmp_path / "none.zip"),
                      "--out", str(tmp_path / "x")], capsys)  # fmt: skip
    assert "--init" in line and "not found" in line
    assert not (tmp_path / "x").exists()


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
