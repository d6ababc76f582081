"""Writing files: whole or not at all, and a full disk is one ``error:`` line that names the file.

A full disk is simulated in two ways: a writer that fails after writing part of its file with
``ENOSPC``, and, for whole commands, a file-size limit (``RLIMIT_FSIZE``) in a subprocess,
where a write past the limit fails with ``EFBIG`` as a full disk fails with ``ENOSPC``.
"""

from __future__ import annotations

import errno
import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tablegym.files import WriteError, write_atomic, write_json_atomic
from tablegym.records import write_record

ROOT = Path(__file__).resolve().parent.parent


def full_disk(tmp: Path) -> None:
    """A writer that fills the disk halfway through its file."""
    tmp.write_text("half of a file")
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_failed_write_keeps_the_previous_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "curve.json"
    write_json_atomic(path, {"step": 1})
    with pytest.raises(WriteError) as caught:
        write_atomic(path, full_disk)
    assert str(caught.value) == f"cannot write {path}: No space left on device"
    assert caught.value.errno == errno.ENOSPC
    assert json.loads(path.read_text()) == {"step": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["curve.json"]


def test_a_writer_that_reports_a_full_disk_as_another_error_is_understood(tmp_path):
    # torch's zip writer raises a RuntimeError while handling the file's OSError.
    def torch_like(tmp: Path) -> None:
        try:
            full_disk(tmp)
        except OSError:
            raise RuntimeError("PytorchStreamWriter failed writing file data/0") from None

    with pytest.raises(WriteError, match="No space left on device"):
        write_atomic(tmp_path / "snap.pt", torch_like)
    assert list(tmp_path.iterdir()) == []


def test_an_error_that_is_not_about_files_propagates_and_cleans_up(tmp_path):
    def broken(tmp: Path) -> None:
        tmp.write_text("x")
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        write_atomic(tmp_path / "out.json", broken)
    assert list(tmp_path.iterdir()) == []


def run_limited(argv: list[str], limit: int) -> subprocess.CompletedProcess:
    """``argv`` in a process whose files may not grow past ``limit`` bytes."""

    def limit_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=ROOT,
                          preexec_fn=limit_files)  # fmt: skip


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode != 0 and len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def test_replay_html_on_a_full_disk_is_one_line_and_no_partial_page(tmp_path):
    from tablegym.games import env_class
    from tablegym.records import record_of_env

    env = env_class("updown")(num_players=2)
    env.reset(seed=3)
    while not env.rules.is_terminal(env.game_state):
        env.step(int(env.action_mask().argmax()))  # the first legal move: a whole game
    record = record_of_env(env, "updown", {"num_players": 2}, 3, ["first", "first"])
    path = write_record(tmp_path / "game.json", record)
    page = tmp_path / "game.html"
    proc = run_limited([sys.executable, "-m", "tablegym.replay", str(path), "--html", str(page)],
                       limit=20_000)  # fmt: skip
    line = one_error_line(proc)
    assert line == f"error: cannot write {page}: File too large"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["game.json"]


def test_evaluate_outputs_and_records_on_a_full_disk_are_one_line(tmp_path):
    base = [sys.executable, "-m", "training.evaluate", "--game", "updown", "--agents", "random",
            "random", "--games", "12", "--no-progress"]  # fmt: skip
    out = tmp_path / "result.json"
    line = one_error_line(run_limited([*base, "--out", str(out)], limit=1_500))
    assert line.startswith("error: cannot write ") and line.endswith(": File too large")
    records = tmp_path / "games.jsonl"
    line = one_error_line(run_limited([*base, "--record", str(records)], limit=1_500))
    assert line == f"error: cannot write {records}: File too large"
    assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name]
    assert not records.exists()


def test_play_record_on_a_full_disk_is_one_line(tmp_path):
    record = tmp_path / "game.json"
    proc = run_limited([sys.executable, "-m", "training.play", "--game", "updown", "--agents",
                        "random", "random", "--seed", "1", "--record", str(record)],
                       limit=100)  # fmt: skip
    assert one_error_line(proc) == f"error: cannot write {record}: File too large"
    assert list(tmp_path.iterdir()) == []
