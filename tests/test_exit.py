"""Expert iteration: targets from search (visit distributions, outcomes, shards that resume)
and the training loop of ``training/exit.py``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import SCORE_BOT

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


# -- training/exit.py ---------------------------------------------------------------------

TINY_FLAGS = {
    "kingup": ["--num-players", "3", "--option", "num_rounds=1"],
    "updown": ["--num-players", "2"],
    "kdk": ["--num-players", "2", "--option", "num_rounds=1"],
}


def run_exit(tmp_path, game: str, *flags: str, out: str = "run") -> Path:
    from training.exit import main

    run = tmp_path / out
    main(["--game", game, *TINY_FLAGS[game], "--games", "2", "--simulations", "8",
          "--workers", "1", "--shard-games", "1", "--epochs", "2", "--no-progress",
          "--out", str(run), *flags])  # fmt: skip
    return run


@pytest.mark.parametrize("game", list(GAMES))
def test_a_tiny_run_makes_a_checkpoint_that_plays_and_searches(tmp_path, game):
    from training.checkpoints import read_meta
    from training.registry import make_agent

    run = run_exit(tmp_path, game, "--rounds", "1")
    checkpoint = run / "checkpoint.zip"
    assert read_meta(checkpoint)["exit_round"] == 1
    assert read_meta(checkpoint)["options"]["reward"] == "win"  # what the value head learned
    log = json.loads((run / "rounds.json").read_text())
    assert [e["round"] for e in log] == [1] and log[0]["decisions"] > 0
    assert "prior" not in log[0]["teacher"]  # a fresh network: round 1 searches with rollouts
    options = {k: int(v) if v.isdigit() else v for k, v in
               (f.split("=") for f in TINY_FLAGS[game][3:])}  # fmt: skip
    options["num_players"] = int(TINY_FLAGS[game][1])
    assert make_agent(f"ppo:{checkpoint}", game, **options).spec.startswith("ppo:")
    search = make_agent(f"ismcts:8,prior=ppo:{checkpoint}", game)
    assert search.network.value_reward == "win" and search.value_weight == 1.0


def test_resume_continues_the_round_count_with_the_network(tmp_path):
    from training.checkpoints import read_meta
    from training.exit import main

    run = run_exit(tmp_path, "updown", "--rounds", "1")
    main(["--resume", str(run), "--rounds", "2", "--no-progress"])
    assert read_meta(run / "checkpoint.zip")["exit_round"] == 2
    log = json.loads((run / "rounds.json").read_text())
    assert [e["round"] for e in log] == [1, 2]
    assert f"prior=ppo:{run / 'checkpoint.zip'}" in log[1]["teacher"]  # round 2 is guided
    # The buffer: both rounds' targets but round 2's held-out game (one of its two shards).
    held = log[1]["held_out"]["decisions"]
    assert 0 < held < log[1]["decisions"]
    assert log[1]["buffer"] == log[0]["decisions"] + log[1]["decisions"] - held
    history = json.loads((run / "config.json").read_text())["history"]
    assert history == [{"step": 1, "changed": {"rounds": [1, 2]}}]


def test_an_existing_run_is_not_reused_silently(tmp_path):
    run = run_exit(tmp_path, "updown", "--rounds", "1")
    with pytest.raises(SystemExit, match="already holds a run") as err:
        run_exit(tmp_path, "updown", "--rounds", "1")
    assert "\n" not in str(err.value.code)
    run_exit(tmp_path, "updown", "--rounds", "1", "--overwrite")
    assert not (run / ".overwritten").exists()


def test_an_interrupt_keeps_the_last_rounds_checkpoint(tmp_path, monkeypatch):
    from training import search_targets
    from training.checkpoints import read_meta

    run = run_exit(tmp_path, "updown", "--rounds", "1")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(search_targets, "generate", interrupted)
    from training.exit import main

    with pytest.raises(SystemExit, match="interrupted after round 1; kept") as err:
        main(["--resume", str(run), "--rounds", "2", "--no-progress"])
    assert "\n" not in str(err.value.code)
    assert read_meta(run / "checkpoint.zip")["exit_round"] == 1


def test_the_first_checkpoint_keeps_the_init_bots_reward():
    # Round 0 is the --init bot unchanged: a KdK value head that learned the score return
    # still estimates it, so round 1's teacher searches by the prior alone instead of
    # misreading that value.
    from training.bots import builtin_bot_path
    from training.checkpoints import training_meta
    from training.exit import first_meta

    meta = training_meta("kdk", [{"num_players": 3, "reward": "win"}])
    assert first_meta(meta, SCORE_BOT)["options"]["reward"] == "score"
    assert first_meta(meta, builtin_bot_path("kingup"))["options"]["reward"] == "win"
    assert first_meta(meta, None) is meta


def test_a_run_from_a_score_bot_searches_by_its_prior_until_the_value_is_fitted(tmp_path):
    from training.checkpoints import read_meta

    flags = ["--init", str(SCORE_BOT), "--rounds", "2", "--value-weight", "0.5"]
    run = run_exit(tmp_path, "kdk", *flags)
    teachers = [e["teacher"] for e in json.loads((run / "rounds.json").read_text())]
    assert "value_weight=0.0," in teachers[0] and "value_weight=0.5," in teachers[1]
    assert read_meta(run / "checkpoint.zip")["options"]["reward"] == "win"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--rounds", "0"], "--rounds must be an integer >= 1"),
        (["--value-weight", "1.5"], "--value-weight must lie in [0, 1]"),
        (["--search", "root=race"], "--search root=race: set by the run"),
        (["--search", "bogus=1"], "unknown option 'bogus'"),
        (["--init", "ppo:kdk"], "--init ppo:kdk"),
        (["--net-arch", "0"], "--net-arch must be positive"),
        (["--option", "num_players=3"], "use --num-players"),
        (["--option", "reward=score"], "--option reward=score: the value head"),
    ],
)
def test_bad_options_give_one_line_errors(tmp_path, flags, message):
    with pytest.raises(SystemExit) as err:
        run_exit(tmp_path, "kingup", *flags)
    assert str(err.value.code).startswith("error: ") and message in str(err.value.code)
    assert "\n" not in str(err.value.code)
    assert not (tmp_path / "run").exists()  # nothing written


def test_the_fit_learns_the_visit_distributions_and_outcomes():
    # Targets that always favour one legal action and a fixed outcome: after the fit the
    # policy's favourite is that action and the value head is near the outcome.
    from training.exit import Args, fit, new_network

    args = Args(game="updown", num_players=2, epochs=30, learning_rate=3e-3).check()
    model = new_network(args)
    rng = np.random.default_rng(0)
    k, size, actions = 256, model.observation_space.shape[0], model.action_space.n
    masks = rng.random((k, actions)) < 0.5
    masks[:, 3] = True
    visits = np.zeros((k, actions), dtype=np.float32)
    visits[:, 3] = 0.9
    others = masks.copy()
    others[:, 3] = False
    visits += 0.1 * others / np.maximum(1, others.sum(1, keepdims=True))
    visits /= visits.sum(1, keepdims=True)
    obs = rng.random((k, size), dtype=np.float32)
    data = Targets(obs, masks, visits, np.full(k, 0.5, dtype=np.float32))
    stats = fit(model, data, args, seed=0)
    assert stats["agreement"] == 1.0 and stats["kl"] < 0.05
    assert stats["value_mse"] < 0.05


def _one_sided_targets(model, favour, k=256, seed=0):
    """Targets whose visits favour action ``favour`` (always legal) and whose outcome is 0.5."""
    rng = np.random.default_rng(seed)
    size, actions = model.observation_space.shape[0], model.action_space.n
    masks = rng.random((k, actions)) < 0.5
    masks[:, [3, 4]] = True
    visits = np.zeros((k, actions), dtype=np.float32)
    visits[:, favour] = 1.0
    obs = rng.random((k, size), dtype=np.float32)
    return Targets(obs, masks, visits, np.full(k, 0.5, dtype=np.float32))


def test_each_head_keeps_its_best_epoch_on_the_held_out_games():
    # The fitted games favour action 3, the held-out ones action 4, with the same outcome:
    # every epoch makes the policy worse on the held-out games and the value head better, so
    # the policy goes back to how the round began and the value head keeps a late epoch.
    import torch

    from training.exit import VALUE_PARAMETERS, Args, fit, new_network

    args = Args(game="updown", num_players=2, epochs=5).check()
    model = new_network(args)
    start = {k: v.clone() for k, v in model.policy.state_dict().items()}
    fitted, held = _one_sided_targets(model, 3, k=1024), _one_sided_targets(model, 4, seed=1)
    stats = fit(model, fitted, args, seed=0, held=held)
    assert stats["epochs_kept"]["policy"] == 0 and stats["epochs_kept"]["value"] > 0
    after = model.policy.state_dict()
    for key, value in start.items():
        same = torch.equal(value, after[key])
        assert same == (not key.startswith(VALUE_PARAMETERS)), key

    model = new_network(args)  # without --keep-best the fit runs every epoch
    args = Args(game="updown", num_players=2, epochs=5, keep_best=False)
    stats = fit(model, fitted, args.check(), seed=0, held=held)
    assert "epochs_kept" not in stats and stats["agreement"] == 1.0


def test_held_out_games_stay_out_of_the_fit(tmp_path, monkeypatch):
    from training import exit as exit_module

    fitted, fit = [], exit_module.fit

    def recorded_fit(model, data, *args, **kwargs):
        fitted.append(data)
        return fit(model, data, *args, **kwargs)

    monkeypatch.setattr(exit_module, "fit", recorded_fit)
    run = run_exit(tmp_path, "updown", "--rounds", "1", "--games", "3")
    (entry,) = json.loads((run / "rounds.json").read_text())
    held = Targets.load(run / "rounds" / "round_001" / "shard_0002.npz")  # the last game
    assert entry["held_out"]["decisions"] == len(held) == entry["decisions"] - entry["buffer"]
    assert len(fitted[0]) == entry["buffer"]
    rows = {r.tobytes() for r in fitted[0].observations}
    assert not any(r.tobytes() in rows for r in held.observations)
    assert set(entry["held_out"]["before"]) == {"cross_entropy", "kl", "value_mse", "agreement"}

    run = run_exit(tmp_path, "updown", "--rounds", "1", "--holdout", "0", out="none")
    (entry,) = json.loads((run / "rounds.json").read_text())
    assert "held_out" not in entry and entry["buffer"] == entry["decisions"]


@pytest.mark.parametrize(("shards", "share", "held"), [(1, 0.1, 0), (2, 0.1, 1), (10, 0.25, 2),
                                                        (4, 0.9, 3), (5, 0.0, 0)])  # fmt: skip
def test_the_held_out_share_rounds_and_keeps_a_fit(shards, share, held):
    from training.exit import held_out

    assert held_out(shards, share) == held
