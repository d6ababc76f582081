"""tablegym/records.py: records round-trip, replay to the recorded result, refuse bad files."""

from __future__ import annotations

import json

import pytest
from helpers import FAST, TABLES

from tablegym.games import GAMES, env_class
from tablegym.records import (
    append_record,
    check_writable,
    read_records,
    record_of_env,
    replay,
    write_record,
)
from training.play import play


def played(game: str, n: int, seed: int) -> dict:
    """The record of a game between random agents."""
    options = {"num_players": n, **FAST.get(game, {})}
    env = play(game, ["random"] * n, seed, options, write=lambda _: None)
    return record_of_env(env, game, options, seed, ["random"] * n)


@pytest.mark.parametrize(("game", "n"), [(g, n) for g, n in TABLES if n in (2, 3)])
def test_a_record_round_trips_and_replays_to_its_scores(tmp_path, game, n):
    record = played(game, n, seed=n)
    path = write_record(tmp_path / "game.json", record)
    (back,) = read_records(path)
    assert back == record
    assert back["env_version"] == env_class(game).metadata["name"]
    env = replay(back)
    assert list(env.rules.scores(env.game_state)) == back["scores"]
    assert list(env.rules.winners(env.game_state)) == back["winners"]


def test_json_lines_hold_one_record_a_line(tmp_path):
    path = tmp_path / "games.jsonl"
    records = [played("updown", 2, seed) for seed in (1, 2)]
    for record in records:
        append_record(path, record)
    assert read_records(path) == records


def test_a_record_of_another_env_version_is_refused(tmp_path):
    record = {**played("updown", 2, 1), "env_version": "updown_v0"}
    path = write_record(tmp_path / "old.json", record)
    with pytest.raises(ValueError, match="recorded with env 'updown_v0', this is 'updown_v2'"):
        read_records(path)


def test_a_record_whose_actions_do_not_give_its_scores_is_refused():
    record = played("kingup", 3, 1)
    with pytest.raises(ValueError, match="does not replay: scores"):
        replay({**record, "scores": [99.0, 0.0, 0.0]})
    with pytest.raises(ValueError, match="does not replay"):
        replay({**record, "actions": record["actions"][:-5]})
    with pytest.raises(ValueError, match="does not replay: illegal action"):
        replay({**record, "actions": [66] + record["actions"]})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "is not JSON"),
        ("[1, 2]", "a record is a JSON object, got list"),
        ('{"game": "kdk"}', "not a game record, missing format, env_version"),
        (None, "unknown game 'chess'"),
        ("", "holds no record"),
    ],
)
def test_bad_record_files_give_one_clear_error(tmp_path, text, message):
    if text is None:
        record = {**played("updown", 2, 1), "game": "chess"}
        text = json.dumps(record)
    path = tmp_path / ("bad.jsonl" if text == "" else "bad.json")
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_records(path)
    with pytest.raises(ValueError, match="cannot read record file"):
        read_records(tmp_path / "missing.json")


def test_check_writable_names_the_option(tmp_path):
    assert check_writable(tmp_path / "new" / "a.json", "--record") == tmp_path / "new" / "a.json"
    assert not list((tmp_path / "new").iterdir())  # the probe file is gone
    with pytest.raises(ValueError, match="--record .*is a directory"):
        check_writable(tmp_path, "--record")
    with pytest.raises(ValueError, match="--out /sys/tablegym-test/a.json: cannot write"):
        check_writable("/sys/tablegym-test/a.json", "--out")


def test_every_game_is_covered():
    assert {g for g, n in TABLES if n in (2, 3)} == set(GAMES)
