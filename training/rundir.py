"""What a training run directory keeps across restarts: the run an ``--overwrite`` replaces,
until the new run has a checkpoint, and the history of settings changed on ``--resume``.

``--overwrite`` moves the old run's files into ``DIR/.overwritten/`` and removes them only
once the new run has written its first checkpoint (as PPO starts, after the warm start); an
interrupted start puts them back. After a ``kill -9`` before that checkpoint the directory
holds the new run's ``config.json`` beside ``.overwritten/``: ``--resume DIR`` starts the new
run from the beginning, and the old files stay until it has a checkpoint.

``config.json`` holds the settings a run now uses and, under ``history``, one entry per resume
that changed any: the step it resumed at and each changed setting's ``[old, new]`` values.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tablegym.files import signals_deferred, write_json_atomic

ASIDE = ".overwritten"  # where --overwrite keeps the old run until the new one has a checkpoint
HISTORY = "history"
# Options that say how a command was given, not how the run trains: never listed as changes.
NOT_SETTINGS = (HISTORY, "resume", "config", "overwrite", "out", "progress")


def remove(paths: Iterable[Path]) -> None:
    """Delete files and folders."""
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def set_aside(run: Path, paths: Iterable[Path]) -> None:
    """Move ``paths`` (inside ``run``) into ``run/.overwritten``, dropping a stale one first.

    An ``.overwritten`` left beside a checkpoint is stale (the run that replaced it saved one
    and was stopped before removing it); beside no checkpoint it still holds the only run
    with one, so the files now in ``run`` (a replacement that never saved) are removed instead.
    """
    aside = run / ASIDE
    if aside.exists() and (run / "checkpoint.zip").exists():
        shutil.rmtree(aside)
    if aside.exists():
        remove(paths)
        return
    with signals_deferred():  # an interrupt must not leave the old run half moved
        aside.mkdir()
        for path in paths:
            path.rename(aside / path.name)


def drop_aside(run: Path) -> None:
    """The new run has a checkpoint: the run it replaced goes."""
    shutil.rmtree(run / ASIDE, ignore_errors=True)


def restore_aside(run: Path, paths: Iterable[Path]) -> bool:
    """Remove a replacement that never saved (``paths``) and put the old run back; whether
    there was one to put back."""
    aside = run / ASIDE
    if not aside.is_dir():
        return False
    with signals_deferred():
        remove(paths)
        for path in aside.iterdir():
            path.rename(run / path.name)
        aside.rmdir()
    return True


def settings_changed(recorded: dict[str, Any], now: dict[str, Any]) -> dict[str, list[Any]]:
    """Each setting whose value differs, as ``[old, new]``; an option newer than the record
    (absent from it) is not a change of the run's settings."""
    return {
        key: [recorded[key], value]
        for key, value in now.items()
        if key not in NOT_SETTINGS and key in recorded and recorded[key] != value
    }


def write_config(
    path: Path, settings: dict[str, Any], step: int, recorded: dict[str, Any] | None
) -> dict[str, list[Any]]:
    """Write ``settings`` to ``path`` with ``recorded``'s history and, when a resumed run
    changed settings, one more entry; the changes."""
    history = list((recorded or {}).get(HISTORY, []))
    changed = {} if recorded is None else settings_changed(recorded, settings)
    if changed:
        history.append({"step": int(step), "changed": changed})
    write_json_atomic(path, {**settings, **({HISTORY: history} if history else {})})
    return changed


def describe_changes(changed: dict[str, list[Any]]) -> str:
    """``learning_rate 0.0003 -> 0.0001, timesteps 512 -> 1536``."""
    return ", ".join(f"{key} {old!r} -> {new!r}" for key, (old, new) in changed.items())
