"""Warm start by imitation: the demonstrations, their returns, and the fit."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from sb3_contrib import MaskablePPO  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

from training.imitation import _discounted, agreement, collect, pretrain  # noqa: E402
from training.selfplay import SelfPlayEnv  # noqa: E402


def test_discounted_returns_count_each_decision_once():
    assert np.allclose(_discounted([0.0, 0.0, 1.0], 0.5), [0.25, 0.5, 1.0])
    assert np.allclose(_discounted([1.0, -1.0], 1.0), [0.0, -1.0])


@pytest.mark.parametrize(("game", "players"), [("kingup", 3), ("updown", 2)])
def test_demonstrations_are_legal_and_end_in_the_game_result(game, players):
    demos = collect(game, {"num_players": players}, games=3, seed=4, gamma=1.0, workers=1)
    assert len(demos) > 0
    assert demos.masks[np.arange(len(demos)), demos.actions].all()
    # reward "win": every decision's undiscounted return is the seat's final result
    assert set(np.unique(demos.returns)) <= {-1.0, 1.0}
    assert (demos.returns == 1.0).any()


def test_demonstrations_do_not_depend_on_the_number_of_workers():
    one = collect("updown", {"num_players": 2}, games=4, seed=7, workers=1)
    two = collect("updown", {"num_players": 2}, games=4, seed=7, workers=2)
    assert np.array_equal(one.actions, two.actions)
    assert np.array_equal(one.observations, two.observations)
    assert np.array_equal(one.returns, two.returns)


def test_pretraining_makes_the_policy_agree_with_the_teacher():
    options = {"num_players": 2}
    vec = DummyVecEnv([lambda: SelfPlayEnv("updown", options)])
    model = MaskablePPO("MlpPolicy", vec, n_steps=64, batch_size=64, seed=0, device="cpu")
    demos = collect("updown", options, games=30, seed=0, workers=1)
    before = agreement(model.policy, demos)
    stats = pretrain(model, demos, epochs=8, batch_size=128, seed=0)
    assert stats["agreement"] > max(0.6, before + 0.2)
    assert stats["cross_entropy"] >= 0 and stats["value_mse"] >= 0


def test_collect_refuses_an_empty_budget():
    with pytest.raises(ValueError, match="positive number of games"):
        collect("kingup", {"num_players": 3}, games=0)
