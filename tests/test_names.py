"""The installed top-level names ``agents`` and ``training`` beside a project of one's own.

A user project with its own ``agents/`` folder: its ``from agents import ...`` gets its own
package; tablegym's games and console commands still work from that directory; importing
``training`` there refuses in one line that names the folder that hides tablegym's ``agents``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's project directory with a package named ``agents`` of its own."""
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "__init__.py").write_text('RandomAgent = "the project\'s own"\n')
    return tmp_path


def python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_the_projects_own_agents_and_the_games_work_side_by_side(project):
    proc = python(
        "from agents import RandomAgent; import kingup_env, tablegym, updown_env, kdk_env; "
        "game = kingup_env.env(); game.reset(seed=0); print(RandomAgent)",
        project,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "the project's own"


def test_importing_training_there_names_the_folder_in_one_line(project):
    proc = python("import training.gym_env", project)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: tablegym's training package needs tablegym's agents")
    assert str(project / "agents" / "__init__.py") in last and "rename it" in last


def test_console_commands_work_from_that_directory(project):
    command = Path(sys.executable).with_name("tablegym-evaluate")
    if not command.is_file():
        pytest.skip("tablegym is not installed in this environment (no console scripts)")
    proc = subprocess.run(
        [str(command), "--game", "updown", "--agents", "heuristic", "random", "--games", "2",
         "--no-progress"],
        cwd=project, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "heuristic" in proc.stdout


def test_from_elsewhere_training_imports(tmp_path):
    proc = python("import training.gym_env, agents; print(agents.RandomAgent.__module__)", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "agents.random_agent"
