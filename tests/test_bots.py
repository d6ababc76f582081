"""The built-in trained bots ``ppo:GAME``: shipped in the game packages, loaded from anywhere."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tablegym.games import GAMES
from tablegym.vector import VectorGame
from training import bots
from training.checkpoints import read_meta
from training.registry import make_agent

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("game", list(GAMES))
def test_builtin_bot_plays_legal_moves_in_batch_at_its_table_size(game):
    path = bots.builtin_bot_path(game)
    assert path == ROOT / GAMES[game] / "bots" / "ppo.zip" and path.is_file()
    n = read_meta(path)["player_counts"][0]
    agent = make_agent(f"ppo:{game}", game, num_players=n)
    assert agent.spec == f"ppo:{game}"
    vg = VectorGame(game, 16, seed=0, num_players=n)
    obs, mask, _ = vg.reset()
    for _ in range(6):
        actions = agent.act_batch(obs, mask)
        assert mask[np.arange(len(actions)), actions].all()
        obs, mask, *_ = vg.step(actions)


def test_builtin_bot_loads_from_outside_the_repository(tmp_path):
    code = (
        "from training.registry import make_agent; from training.bots import builtin_bot_path; "
        "print(make_agent('ppo:kingup', 'kingup').spec); print(builtin_bot_path('kingup'))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    spec, path = proc.stdout.splitlines()
    assert spec == "ppo:kingup" and Path(path).is_file()


def test_a_bot_plays_only_its_own_game():
    with pytest.raises(ValueError) as err:
        make_agent("ppo:kdk", "kingup")
    assert str(err.value) == "ppo:kdk is the kdk bot and cannot play kingup; use ppo:kingup"


def test_a_bot_is_refused_at_a_table_size_it_was_not_trained_at():
    specialist = ROOT / "notebooks" / "models" / "updown.zip"  # the 2-player Up & Down bot
    with pytest.raises(ValueError, match="trained for num_players 2, but this game has 4"):
        make_agent(f"ppo:{specialist}", "updown", num_players=4)


def test_every_builtin_bot_plays_every_table_size_of_its_game():
    from tablegym.games import spec_of

    for game in GAMES:
        assert read_meta(bots.builtin_bot_path(game))["player_counts"] == list(
            spec_of(game).player_counts
        )


def test_other_ppo_arguments_are_file_paths(tmp_path, monkeypatch):
    copy = tmp_path / "kingup"  # a file named like a game: reached as ./kingup
    shutil.copyfile(bots.builtin_bot_path("kingup"), copy)
    agent = make_agent(f"ppo:{copy}", "kingup")
    assert agent.spec == f"ppo:{copy}"
    monkeypatch.chdir(tmp_path)
    assert make_agent("ppo:./kingup", "kingup").spec == "ppo:./kingup"
    with pytest.raises(FileNotFoundError, match="ppo agent file not found: ./updown"):
        make_agent("ppo:./updown", "updown")


def test_install_bot_replaces_the_builtin_atomically(tmp_path, monkeypatch):
    shipped = bots.builtin_bot_path("kingup")
    target = tmp_path / "bots" / "ppo.zip"  # stands in for kingup_env/bots/ppo.zip
    monkeypatch.setattr(bots, "builtin_bot_path", lambda game: target)
    # No bot yet: the folder is made and the export written there; ppo:kingup then loads it.
    assert bots.install_bot(shipped, "kingup") == target
    assert read_meta(target) == read_meta(shipped)
    assert make_agent("ppo:kingup", "kingup").spec == "ppo:kingup"
    # A second install renames a new file over the old one (a new inode), leaving no temp file.
    before = target.stat().st_ino
    bots.install_bot(shipped, "kingup")
    assert target.stat().st_ino != before
    assert [p.name for p in target.parent.iterdir()] == ["ppo.zip"]
    # A checkpoint of another game, or a broken one, leaves the old bot as it was.
    old = target.read_bytes()
    with pytest.raises(ValueError, match="is a kdk policy, not kingup"):
        bots.install_bot(ROOT / "kdk_env" / "bots" / "ppo.zip", "kingup")
    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="corrupt checkpoint"):
        bots.install_bot(broken, "kingup")
    assert target.read_bytes() == old
    assert [p.name for p in target.parent.iterdir()] == ["ppo.zip"]


def test_the_wheel_ships_the_bots(tmp_path):
    """Built from a copy of the sources, so no build/ or egg-info lands in the repository."""
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("tablegym", *GAMES.values(), "agents", "training"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(ROOT / name, src / name)
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    proc = subprocess.run(
        [*cmd, "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    (wheel,) = (tmp_path / "dist").glob("tablegym-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in GAMES.values():
        info = zipfile.ZipFile(wheel).getinfo(f"{package}/bots/ppo.zip")
        assert info.file_size == (ROOT / package / "bots" / "ppo.zip").stat().st_size
    assert "training/bots.py" in names
