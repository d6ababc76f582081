"""Warm start by imitation: the teacher's games in batch, their returns, and the fit."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from agents.catalog import batched_heuristic  # noqa: E402
from training.collector import SeatRolloutBuffer, SelfPlayPPO, SelfPlayVecEnv  # noqa: E402
from training.imitation import agreement, collect, pretrain  # noqa: E402
from updown_env.observation import LAYOUT  # noqa: E402


def teach(game: str, tables: list[dict], games: int, seed: int = 0, gamma: float = 1.0):
    return collect(game, tables, games, seed, gamma, batched_heuristic(game), num_games=4)


@pytest.mark.parametrize(("game", "players"), [("kingup", 3), ("updown", 2)])
def test_demonstrations_are_legal_and_end_in_the_game_result(game, players):
    demos = teach(game, [{"num_players": players}], games=5)
    assert len(demos) > 0
    assert demos.masks[np.arange(len(demos)), demos.actions].all()
    # reward "win": every decision's undiscounted return is the seat's final result
    assert set(np.unique(demos.returns)) <= {-1.0, 1.0}
    assert (demos.returns == 1.0).any() and (demos.returns == -1.0).any()


def test_returns_are_discounted_once_per_decision_of_the_seat():
    demos = teach("updown", [{"num_players": 2}], games=3, gamma=0.5)
    # Only the final +-1 is paid: a return is that result times 0.5 ** (decisions after it).
    powers = np.log2(np.abs(demos.returns))
    assert np.allclose(powers, np.round(powers)) and (powers <= 0).all()
    assert (np.abs(demos.returns) == 1).sum() >= 2 * 3  # each seat's last decision of a game


def test_exactly_the_games_asked_are_kept_and_the_data_is_seeded():
    one = teach("updown", [{"num_players": 2}, {"num_players": 3}], games=5, seed=7)
    two = teach("updown", [{"num_players": 2}, {"num_players": 3}], games=5, seed=7)
    assert np.array_equal(one.actions, two.actions)
    assert np.array_equal(one.observations, two.observations)
    # The games are split over both table sizes.
    sizes = LAYOUT.decode(one.observations)["num_players"].argmax(axis=1)
    assert set(sizes.tolist()) == {0, 1}


def test_pretraining_makes_the_policy_agree_with_the_teacher():
    env = SelfPlayVecEnv("updown", [{"num_players": 2}], 4, {"self": 1.0})
    model = SelfPlayPPO(
        "MlpPolicy", env, n_steps=64, batch_size=64, seed=0, device="cpu",
        rollout_buffer_class=SeatRolloutBuffer,
    )  # fmt: skip
    demos = teach("updown", [{"num_players": 2}], games=30)
    before = agreement(model.policy, demos)
    stats = pretrain(model, demos, epochs=8, batch_size=128, seed=0)
    assert stats["agreement"] > max(0.6, before + 0.2)
    assert stats["cross_entropy"] >= 0 and stats["value_mse"] >= 0


def test_collect_refuses_an_empty_budget():
    with pytest.raises(ValueError, match="positive number of games"):
        teach("kingup", [{"num_players": 3}], games=0)
