"""Self-play training: the Gymnasium wrapper, masks reaching the model, the CLI, checkpoints."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from gymnasium.utils.env_checker import check_env  # noqa: E402
from helpers import FAST  # noqa: E402
from sb3_contrib import MaskablePPO  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

from tablegym.games import DEFAULT_PLAYERS  # noqa: E402
from training.checkpoints import export_policy, game_meta, read_meta, save_atomic  # noqa: E402
from training.ppo_agent import load_ppo_agent  # noqa: E402
from training.selfplay import SelfPlayEnv, parse_mix  # noqa: E402
from training.train import Args, parse_args  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TRAIN = [sys.executable, str(ROOT / "training" / "train.py")]
TINY = [
    "--timesteps", "512", "--n-envs", "2", "--n-steps", "128", "--batch-size", "64",
    "--n-epochs", "1", "--snapshot-every", "256", "--checkpoint-every", "256",
    "--eval-every", "512", "--eval-games", "4", "--net-arch", "32", "--no-progress",
    "--warm-start", "4", "--warm-epochs", "1",
]  # fmt: skip
FAST_OPTIONS = {
    game: [arg for key, value in options.items() for arg in ("--option", f"{key}={value}")]
    for game, options in FAST.items()
}


def run_train(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([*TRAIN, *args], capture_output=True, text=True, timeout=300, cwd=ROOT)
    if check and proc.returncode != 0:
        raise AssertionError(f"train.py failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.mark.parametrize("game", list(DEFAULT_PLAYERS))
def test_selfplay_env_passes_gymnasium_checker(game):
    env = SelfPlayEnv(game, {"num_players": DEFAULT_PLAYERS[game]}, {"random": 1.0})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env, skip_render_check=True)


def test_selfplay_learner_seat_rewards_and_illegal_actions():
    env = SelfPlayEnv("kingup", {"num_players": 4, "reward": "win"}, {"random": 1.0})
    seats, total = set(), 0.0
    for seed in range(12):
        obs, info = env.reset(seed=seed)
        seats.add(info["seat"])
        done = False
        while not done:
            mask = env.action_masks()
            assert env.aec.agent_selection == f"player_{info['seat']}"
            obs, reward, done, _, _ = env.step(int(np.flatnonzero(mask)[0]))
            total += reward
        assert reward in (-1.0, 1.0)  # the win reward arrives, even after an opponent's move
    assert len(seats) > 1
    obs, _ = env.reset(seed=0)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    _, reward, done, _, info = env.step(illegal)
    assert done and reward == -1.0 and info["illegal_action"] == illegal
    assert env.illegal_actions == 1


def test_masks_reach_the_model_and_no_masked_action_is_taken():
    envs = [SelfPlayEnv("kingup", {"num_players": 3}, {"random": 1.0}) for _ in range(2)]
    vec = DummyVecEnv([lambda e=e: e for e in envs])
    model = MaskablePPO("MlpPolicy", vec, n_steps=128, batch_size=64, n_epochs=1, seed=0)
    model.learn(512)
    assert sum(e.illegal_actions for e in envs) == 0


def test_parse_mix_and_bad_values():
    assert parse_mix("snapshot=2,random=2") == {"snapshot": 0.5, "random": 0.5}
    with pytest.raises(ValueError, match="unknown opponent kind 'expert'"):
        parse_mix("expert=1")
    with pytest.raises(ValueError, match="no opponent a positive weight"):
        parse_mix("random=0")


def test_config_file_and_command_line(tmp_path):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"game": "updown", "timesteps": 1000, "seed": 3}))
    args = parse_args(["--config", str(cfg), "--seed", "9"])
    assert (args.game, args.timesteps, args.seed) == ("updown", 1000, 9)
    assert args.game_options() == {"num_players": 2}
    cfg.write_text(json.dumps({"gamez": "updown"}))
    with pytest.raises(ValueError, match="unknown key 'gamez'"):
        parse_args(["--config", str(cfg)])
    assert Args(option=["num_rounds=3", "reward=tricks"], game="updown").game_options() == {
        "num_players": 2, "num_rounds": 3, "reward": "tricks",
    }  # fmt: skip


def test_help_documents_every_option():
    out = run_train("--help").stdout
    for flag in (
        "--game",
        "--timesteps",
        "--out",
        "--seed",
        "--resume",
        "--opponent-mix",
        "--config",
    ):
        assert flag in out


@pytest.mark.parametrize("game", list(DEFAULT_PLAYERS))
def test_cli_smoke_run_per_game(game, tmp_path):
    run = tmp_path / game
    run_train("--game", game, "--out", str(run), *TINY, *FAST_OPTIONS.get(game, []))
    for name in (
        "config.json",
        "checkpoint.zip",
        "best.zip",
        "curve.csv",
        "curve.json",
        "curves.png",
        "warm_start.json",
    ):
        assert (run / name).is_file(), name
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] >= 512
    assert set(summary["final"]) == {"random", "heuristic"}
    assert json.loads((run / "config.json").read_text())["game"] == game
    assert read_meta(run / "checkpoint.zip")["game"] == game
    options = {"num_players": DEFAULT_PLAYERS[game], **FAST.get(game, {})}
    agent = load_ppo_agent(run / "best.zip", game, options)
    assert agent.spec.startswith("ppo:")


def test_resume_continues_the_step_count(tmp_path):
    run = tmp_path / "run"
    run_train("--game", "updown", "--out", str(run), *TINY)
    first = read_meta(run / "checkpoint.zip")["num_timesteps"]
    run_train("--resume", str(run / "checkpoint.zip"), "--timesteps", "1024", "--no-progress")
    second = read_meta(run / "checkpoint.zip")["num_timesteps"]
    assert first >= 512 and second >= 1024 and second > first
    curve = json.loads((run / "curve.json").read_text())
    assert [r["step"] for r in curve] == sorted(r["step"] for r in curve)


def test_corrupt_missing_and_mismatched_checkpoints_give_clear_errors(tmp_path):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    proc = run_train("--resume", str(bad), check=False)
    assert proc.returncode != 0 and f"corrupt checkpoint {bad}" in proc.stderr
    proc = run_train("--resume", str(tmp_path / "missing.zip"), check=False)
    assert "checkpoint not found" in proc.stderr
    run = tmp_path / "run"
    run_train(
        "--game",
        "updown",
        "--out",
        str(run),
        *TINY[:4],
        "--eval-games",
        "0",
        "--warm-start",
        "0",
        "--no-progress",
    )
    proc = run_train("--game", "kingup", "--resume", str(run / "checkpoint.zip"), check=False)
    assert "trained for game='updown', not 'kingup'" in proc.stderr
    proc = run_train("--num-players", "3", "--resume", str(run / "checkpoint.zip"), check=False)
    assert "trained with num_players=2, not 3" in proc.stderr
    with pytest.raises(ValueError, match="trained for num_players=2, but this game has 4"):
        load_ppo_agent(run / "checkpoint.zip", "updown", {"num_players": 4})
    with pytest.raises(
        ValueError, match="trained for game='updown', but this game has game='kingup'"
    ):
        load_ppo_agent(run / "checkpoint.zip", "kingup", {})


def test_exported_policy_is_smaller_and_plays_the_same(tmp_path):
    options = {"num_players": 2}
    vec = DummyVecEnv([lambda: SelfPlayEnv("updown", options)])
    model = MaskablePPO("MlpPolicy", vec, n_steps=64, batch_size=64, n_epochs=1, seed=0)
    model.learn(64)  # fills Adam's moment estimates
    save_atomic(model, tmp_path / "full.zip", game_meta("updown", options))
    small = export_policy(tmp_path / "full.zip", tmp_path / "small.zip")
    assert small.stat().st_size < 0.5 * (tmp_path / "full.zip").stat().st_size
    assert read_meta(small)["num_timesteps"] == read_meta(tmp_path / "full.zip")["num_timesteps"]
    full_agent = load_ppo_agent(tmp_path / "full.zip", "updown", options)
    small_agent = load_ppo_agent(small, "updown", options)
    obs = np.random.default_rng(0).random(vec.observation_space.shape, dtype=np.float32)
    assert np.array_equal(full_agent.net.logits(obs), small_agent.net.logits(obs))
