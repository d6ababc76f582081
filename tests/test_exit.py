"""Expert iteration: targets from search (visit distributions, outcomes, shards that resume)
and the training loop of ``training/exit.py``."""

from __future__ import annotations

import numpy as np
import pytest

from tablegym.games import GAMES, rules_of
from training.search_targets import Targets, generate, play

TINY = {"kingup": {"num_players": 3, "num_rounds": 1}, "updown": {"num_players": 2},
        "kdk": {"num_players": 2, "num_rounds": 1}}  # fmt: skip
TEACHER = "ismcts:8,root=tree"


@pytest.mark.parametrize("game", list(GAMES))
def test_visit_targets_are_distributions_over_the_legal_moves(game):
    data = play(game, TINY[game], TEACHER, seed=1)
    assert len(data) > 0
    assert data.visits.shape == data.masks.shape == (len(data), rules_of(game).NUM_ACTIONS)
    np.testing.assert_allclose(data.visits.sum(axis=1), 1.0, rtol=1e-5)
    assert np.all(data.visits[~data.masks] == 0) and np.all(data.visits >= 0)
    assert np.all(data.masks.sum(axis=1) > 1)  # forced moves teach nothing: not recorded
    assert set(np.unique(data.outcomes)) <= {-1.0, 1.0}
    assert (data.outcomes == 1).any()  # somebody won


def test_outcomes_are_the_acting_seats():
    # Two players, one winner (or a shared win): the two seats' outcomes are not both -1.
    data = play("updown", TINY["updown"], TEACHER, seed=2)
    assert (data.outcomes == 1).any()
    assert data.observations.dtype == np.float32


def test_generation_resumes_from_its_shards(tmp_path):
    data, cost = generate("kingup", TINY["kingup"], TEACHER, 3, 0, tmp_path, 1, 1, False)
    assert cost["games_played"] == 3 and len(list(tmp_path.glob("shard_*.npz"))) == 3
    (tmp_path / "shard_0001.npz").unlink()
    again, cost = generate("kingup", TINY["kingup"], TEACHER, 3, 0, tmp_path, 1, 1, False)
    assert cost["games_played"] == 1  # only the missing shard
    np.testing.assert_array_equal(again.visits, data.visits)  # seeded per shard: the same games
    assert not list(tmp_path.glob(".*tmp*"))


def test_two_workers_make_the_same_targets(tmp_path):
    one, _ = generate("updown", TINY["updown"], TEACHER, 2, 5, tmp_path / "a", 1, 1, False)
    two, cost = generate("updown", TINY["updown"], TEACHER, 2, 5, tmp_path / "b", 2, 1, False)
    assert cost["games_played"] == 2
    for name in ("observations", "masks", "visits", "outcomes"):
        np.testing.assert_array_equal(getattr(one, name), getattr(two, name))


def test_targets_round_trip_through_a_shard(tmp_path):
    data = play("kdk", TINY["kdk"], TEACHER, seed=3)
    data.save(tmp_path / "s.npz")
    back = Targets.load(tmp_path / "s.npz")
    np.testing.assert_array_equal(back.visits, data.visits)
    assert len(back) == len(data)


@pytest.mark.parametrize(
    ("spec", "games", "message"),
    [
        ("ismcts:8", 2, "the teacher must be a tree search"),  # KdK's default is a race
        ("heuristic", 2, "the teacher must be a tree search"),
        (TEACHER, 0, "games, shard_games and workers must be integers >= 1"),
    ],
)
def test_bad_generation_settings_give_one_line_errors(tmp_path, spec, games, message):
    with pytest.raises(ValueError, match=message) as err:
        generate("kdk", TINY["kdk"], spec, games, 0, tmp_path, 1, 1, False)
    assert "\n" not in str(err.value)
    assert not list(tmp_path.iterdir())  # nothing written
