"""Game records: one JSON format for a finished game, written by ``tablegym-play --record`` and
``tablegym-evaluate --record``, read by ``tablegym-replay``.

A record is a JSON object::

    {"format": 1, "game": "kingup", "env_version": "kingup_v1",
     "options": {"num_players": 4}, "seed": 7, "agents": ["human", "heuristic", ...],
     "actions": [3, 17, ...], "scores": [21.0, ...], "winners": [1]}

``agents`` holds the spec of each seat in seat order; ``seed`` and ``actions`` rebuild the
game exactly: ``env_class(game).replay(seed, actions, **options)``. ``env_version`` is the
env's ``metadata["name"]``, bumped on any change to observations, actions or rewards: a record
of another version is refused, since its actions may mean something else today.

A file holds one record (``.json``) or one record per line (JSON lines, ``.jsonl``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tablegym.files import write_json_atomic, write_text_atomic
from tablegym.games import GAMES, env_class, rules_of

FORMAT = 1
FIELDS = ("format", "game", "env_version", "options", "seed", "agents", "actions", "scores",
          "winners")  # fmt: skip


def env_version(game: str) -> str:
    """The env's versioned name (``kingup_v1``), which a record must match to be replayed."""
    return env_class(game).metadata["name"]


def make_record(
    game: str,
    options: dict[str, Any],
    seed: int,
    agents: Sequence[str],
    actions: Sequence[int],
    scores: Sequence[float],
    winners: Sequence[int],
) -> dict[str, Any]:
    """A record of a finished game in the format above (plain JSON types only)."""
    return {
        "format": FORMAT,
        "game": game,
        "env_version": env_version(game),
        "options": dict(options),
        "seed": int(seed),
        "agents": list(agents),
        "actions": [int(a) for a in actions],
        "scores": [float(s) for s in scores],
        "winners": [int(w) for w in winners],
    }


def record_of_env(env: Any, game: str, options: dict[str, Any], seed: int, agents: Sequence[str]):
    """The record of the finished game on ``env`` (a raw env reset with ``seed``)."""
    state = env.game_state
    if not env.rules.is_terminal(state):
        raise ValueError("only a finished game can be recorded")
    rules = env.rules
    return make_record(
        game, options, seed, agents, env.action_log, rules.scores(state), rules.winners(state)
    )


def check_record(record: Any, where: str = "record") -> dict[str, Any]:
    """``record`` if it is a well-formed record of the current env version, else ValueError."""
    if not isinstance(record, dict):
        raise ValueError(f"{where}: a record is a JSON object, got {type(record).__name__}")
    missing = [f for f in FIELDS if f not in record]
    if missing:
        raise ValueError(f"{where}: not a game record, missing {', '.join(missing)}")
    if record["format"] != FORMAT:
        raise ValueError(f"{where}: record format {record['format']!r}; this reads {FORMAT}")
    game = record["game"]
    if game not in GAMES:
        raise ValueError(f"{where}: unknown game {game!r}; known games: {', '.join(GAMES)}")
    current = env_version(game)
    if record["env_version"] != current:
        raise ValueError(
            f"{where}: recorded with env {record['env_version']!r}, this is {current!r}; "
            "its actions cannot be replayed"
        )
    if not isinstance(record["options"], dict):
        raise ValueError(f"{where}: options must be a JSON object")
    ints = record["actions"], record["winners"]
    if not all(isinstance(x, list) and all(type(a) is int for a in x) for x in ints):
        raise ValueError(f"{where}: actions and winners must be lists of integers")
    if type(record["seed"]) is not int:
        raise ValueError(f"{where}: seed must be an integer")
    return record


def replay(record: dict[str, Any]) -> Any:
    """The raw env at the end of ``record``'s game; ValueError if it is not what was recorded."""
    try:
        env = env_class(record["game"]).replay(
            record["seed"], record["actions"], **record["options"]
        )
    except (ValueError, TypeError) as err:
        raise ValueError(f"record does not replay: {err}") from None
    rules = rules_of(record["game"])
    state = env.game_state
    got = ([float(s) for s in rules.scores(state)], [int(w) for w in rules.winners(state)])
    if not rules.is_terminal(state) or got != (record["scores"], record["winners"]):
        raise ValueError(
            f"record does not replay: scores {got[0]} and winners {got[1]} after "
            f"{len(record['actions'])} actions, recorded {record['scores']} and {record['winners']}"
        )
    return env


def read_records(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The checked records of a ``.json`` file (one record) or ``.jsonl`` file (one a line)."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(
            f"cannot read record file {path}: {getattr(err, 'strerror', err)}"
        ) from None
    try:
        if path.suffix == ".jsonl":
            rows = [(i + 1, line) for i, line in enumerate(text.splitlines()) if line.strip()]
            records = [check_record(json.loads(line), f"{path}:{n}") for n, line in rows]
        else:
            records = [check_record(json.loads(text), str(path))]
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not JSON: {err}") from None
    if not records:
        raise ValueError(f"{path} holds no record")
    return records


def write_record(path: str | os.PathLike, record: dict[str, Any]) -> Path:
    """Write one record to ``path`` (``.json``) whole or not at all (WriteError if it fails)."""
    return write_json_atomic(path, record, indent=None)


def write_record_lines(path: str | os.PathLike, records: Sequence[dict[str, Any]]) -> Path:
    """Write ``records`` to the JSON-lines file ``path``, one a line, whole or not at all."""
    return write_text_atomic(path, "".join(json.dumps(r) + "\n" for r in records))


def append_record(path: str | os.PathLike, record: dict[str, Any]) -> None:
    """Append one record as a line of the JSON-lines file ``path``."""
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def check_writable(path: str | os.PathLike, option: str, directory: bool = False) -> Path:
    """``path`` if it can be written (a file, or with ``directory`` a folder, made if missing).

    ValueError naming ``option`` otherwise. Nothing is left behind: a folder this made stays,
    since it is what was asked for, but no probe file does.
    """
    path = Path(path)
    folder = path if directory else path.parent
    if not directory and path.is_dir():
        raise ValueError(f"{option} {path}: is a directory, expected a file")
    if directory and path.exists() and not path.is_dir():
        raise ValueError(f"{option} {path}: is a file, expected a directory")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".tablegym-write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
        if not directory and path.exists() and not os.access(path, os.W_OK):
            raise PermissionError(13, "Permission denied")
    except OSError as err:
        raise ValueError(f"{option} {path}: cannot write there ({err.strerror or err})") from None
    return path
