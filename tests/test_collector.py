"""The batched self-play collector: per-seat streams and GAE, masks, opponents, the update."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.buffers import MaskableRolloutBuffer

from tablegym.vector import random_actions
from training.collector import (
    SeatRolloutBuffer,
    SelfPlayPPO,
    SelfPlayVecEnv,
    parse_mix,
    sample_decisions,
)

torch.set_num_threads(1)


def test_gae_follows_each_seat_and_credits_rewards_to_its_last_decision():
    gamma, lam = 0.9, 0.8
    buf = SeatRolloutBuffer(
        5, spaces.Box(0, 1, (2,)), spaces.Discrete(3), "cpu", gae_lambda=lam, gamma=gamma
    )
    buf.reset()

    def decide(stream: int, value: float) -> None:
        z = np.zeros((1, 2), np.float32)
        ones = np.ones((1, 3), bool)
        buf.add_decisions(
            z, np.array([0]), np.array([value]), np.zeros(1), ones, np.array([stream])
        )

    decide(0, 0.5)  # pos 0: seat A
    decide(1, 0.2)  # pos 1: seat B
    buf.credit(np.array([0]), np.array([1.0]))  # A earns +1 while B acts: credited to pos 0
    decide(0, 0.4)  # pos 2
    decide(1, 0.1)  # pos 3
    buf.credit(np.array([0, 1]), np.array([-1.0, 2.0]))  # the game ends
    buf.close_streams(np.array([0, 1]))
    decide(0, 0.3)  # pos 4: A in the next game; the rollout ends here
    buf.close_streams(np.array([0]), np.array([0.6]))
    buf.compute_returns_and_advantage()
    # By hand: pos 4 bootstraps, 2 and 3 are terminal, 0 and 1 chain to 2 and 3.
    a4 = 0 + gamma * 0.6 - 0.3
    a3, a2 = 2 - 0.1, -1 - 0.4
    a1 = (gamma * 0.1 - 0.2) + gamma * lam * a3
    a0 = (1 + gamma * 0.4 - 0.5) + gamma * lam * a2
    np.testing.assert_allclose(buf.advantages[:, 0], [a0, a1, a2, a3, a4], rtol=1e-6)
    np.testing.assert_allclose(buf.returns[:, 0], buf.advantages[:, 0] + buf.values[:, 0])
    assert buf.rewards[:, 0].tolist() == [1.0, 0.0, -1.0, 2.0, 0.0]


class LoopBuffer(SeatRolloutBuffer):
    """The buffer as it was first written, one sample at a time: the reference."""

    def reset(self) -> None:
        super().reset()
        self.last: dict[int, int] = {}

    def add_decisions(self, obs, actions, values, log_probs, masks, streams) -> None:
        at = np.arange(self.pos, self.pos + len(obs))
        self.observations[at, 0], self.actions[at, 0, 0] = obs, actions
        self.values[at, 0], self.log_probs[at, 0] = values, log_probs
        self.action_masks[at, 0], self.rewards[at, 0] = masks, 0.0
        for pos, stream in zip(at.tolist(), streams.tolist()):
            if stream in self.last:
                self.next_pos[self.last[stream]] = pos
            self.last[stream] = pos
        self.pos += len(obs)
        self.full = self.pos == self.buffer_size

    def credit(self, streams, rewards) -> None:
        for stream, reward in zip(streams.tolist(), rewards.tolist()):
            if stream in self.last:
                self.rewards[self.last[stream], 0] += reward

    def close_streams(self, streams, values=None) -> None:
        for i, stream in enumerate(streams.tolist()):
            pos = self.last.pop(stream, None)
            if pos is not None and values is None:
                self.terminal[pos] = True
            elif pos is not None:
                self.bootstrap[pos] = values[i]

    def compute_returns_and_advantage(self, last_values=None, dones=None) -> None:
        gamma, lam = self.gamma, self.gae_lambda
        values, rewards = self.values[:, 0], self.rewards[:, 0]
        adv = np.zeros(self.buffer_size, dtype=np.float32)
        for pos in range(self.buffer_size - 1, -1, -1):
            nxt = self.next_pos[pos]
            if nxt >= 0:
                delta = rewards[pos] + gamma * values[nxt] - values[pos]
                adv[pos] = delta + gamma * lam * adv[nxt]
            elif self.terminal[pos]:
                adv[pos] = rewards[pos] - values[pos]
            else:
                adv[pos] = rewards[pos] + gamma * self.bootstrap[pos] - values[pos]
        self.advantages[:, 0] = adv
        self.returns = self.advantages + self.values


@pytest.mark.parametrize("seed", range(6))
def test_array_buffer_gives_the_loops_advantages_on_random_stream_layouts(seed):
    rng = np.random.default_rng(seed)
    size, streams = int(rng.integers(20, 400)), int(rng.integers(1, 60))
    args = (spaces.Box(0, 1, (2,)), spaces.Discrete(3), "cpu")
    kwargs = {"gamma": float(rng.uniform(0.8, 1)), "gae_lambda": float(rng.uniform(0.5, 1))}
    new, old = SeatRolloutBuffer(size, *args, **kwargs), LoopBuffer(size, *args, **kwargs)

    def both(method: str, *values) -> None:
        getattr(new, method)(*values), getattr(old, method)(*values)

    def some() -> np.ndarray:
        return rng.choice(streams, size=int(rng.integers(0, streams + 1)), replace=False)

    for _ in range(2):  # the second rollout reuses the arrays of the first, after the update
        both("reset")
        while not new.full:
            ids = some()[: new.space()]
            k = ids.size
            obs, masks = rng.random((k, 2), dtype=np.float32), rng.random((k, 3)) < 0.5
            both("add_decisions", obs, rng.integers(3, size=k), rng.normal(size=k),
                 rng.normal(size=k), masks, ids)  # fmt: skip
            ids = some()
            both("credit", ids, rng.normal(size=ids.size).astype(np.float32))
            if rng.random() < 0.3:  # games end: their streams close
                both("close_streams", some())
            if rng.random() < 0.1:  # decisions made but not stored: their streams are cut
                ids = some()
                both("close_streams", ids, rng.normal(size=ids.size).astype(np.float32))
        assert new.open_streams().tolist() == sorted(old.last)
        ids = new.open_streams()
        both("close_streams", ids, rng.normal(size=ids.size).astype(np.float32))
        both("compute_returns_and_advantage")
        for name in ("next_pos", "terminal", "bootstrap", "rewards", "advantages", "returns"):
            np.testing.assert_array_equal(getattr(new, name), getattr(old, name), err_msg=name)
        batches = []
        for buf in (new, old):  # what the update reads, in the same order (np.random's)
            np.random.seed(seed)
            batches.append(list(buf.get(16)))
        for got, want in zip(*batches):
            for name, a, b in zip(got._fields, got, want):
                assert torch.equal(a, b), name
        rows = rng.permutation(size)[:16]  # sb3-contrib's own minibatch, the same
        theirs = MaskableRolloutBuffer._get_samples(new, rows)
        for name, a, b in zip(theirs._fields, new._get_samples(rows), theirs):
            assert a.dtype == b.dtype and torch.equal(a, b), name


def test_a_stream_adds_one_decision_per_call():
    buf = SeatRolloutBuffer(4, spaces.Box(0, 1, (2,)), spaces.Discrete(3), "cpu")
    buf.reset()
    with pytest.raises(ValueError, match="one decision per call"):
        buf.add_decisions(np.zeros((2, 2), np.float32), np.zeros(2), np.zeros(2), np.zeros(2),
                          np.ones((2, 3), bool), np.array([5, 5]))  # fmt: skip


@pytest.mark.parametrize("seed", range(3))
def test_sampled_decisions_follow_the_policy(seed):
    env = SelfPlayVecEnv("updown", [{"num_players": 2}], 4, parse_mix("self=1"), seed=0)
    model = SelfPlayPPO(
        "MlpPolicy", env, n_steps=64, batch_size=64, device="cpu", seed=seed,
        rollout_buffer_class=SeatRolloutBuffer, policy_kwargs={"net_arch": [16, 16]},
    )  # fmt: skip
    rng = np.random.default_rng(seed)
    width, rows = env.action_space.n, 40
    with torch.no_grad():  # uneven probabilities, unlike a fresh network's
        model.policy.action_net.bias.copy_(torch.as_tensor(rng.normal(0, 2, width)))
    obs = torch.as_tensor(rng.random((rows, env.observation_space.shape[0]), dtype=np.float32))
    masks = rng.random((rows, width)) < 0.3
    masks[np.arange(rows), rng.integers(width, size=rows)] = True
    masks[0] = False
    masks[0, 3] = True  # one legal action: always that one
    draws = 3000
    with torch.no_grad():
        actions, values, log_probs = sample_decisions(
            model.policy, obs.repeat(draws, 1), np.tile(masks, (draws, 1))
        )
        # The values of sb3-contrib bit for bit, its log-probabilities to float32 roundings.
        want_values, want_log_probs, _ = model.policy.evaluate_actions(
            obs.repeat(draws, 1), actions, torch.as_tensor(np.tile(masks, (draws, 1)))
        )
        probs = model.policy.get_distribution(obs, action_masks=masks).distribution.probs
    assert torch.equal(values, want_values)
    torch.testing.assert_close(log_probs, want_log_probs, rtol=0, atol=1e-5)
    chosen = actions.numpy().reshape(draws, rows)
    assert masks[np.arange(rows), chosen].all() and (chosen[:, 0] == 3).all()
    # Each action as often as its probability: Pearson's chi-square of the draws within six
    # standard deviations of its mean (a temperature of 0.9 gives three times the mean).
    freq = np.stack([(chosen == a).mean(axis=0) for a in range(width)], axis=1)
    p = probs.numpy()
    legal = p > 1e-6
    chi2 = (draws * (freq - p) ** 2 / np.where(legal, p, 1))[legal].sum()
    dof = legal.sum() - rows
    assert chi2 < dof + 6 * np.sqrt(2 * dof)


def test_the_policy_can_be_copied_while_collecting_after_an_update():
    import copy

    from stable_baselines3.common.callbacks import BaseCallback

    class Snapshots(BaseCallback):  # as the training callback takes its pool snapshots
        def _on_step(self) -> bool:
            self.copies = getattr(self, "copies", 0) + 1
            copy.deepcopy(self.model.policy)
            return True

    env = SelfPlayVecEnv("updown", [{"num_players": 2}], 8, parse_mix("self=1"), seed=0)
    model = SelfPlayPPO(
        "MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, device="cpu", seed=0,
        rollout_buffer_class=SeatRolloutBuffer, policy_kwargs={"net_arch": [8]},
    )  # fmt: skip
    callback = Snapshots()
    model.learn(192, callback=callback)  # three rollouts, two of them after an update
    assert model.num_timesteps == 192 and callback.copies > 3


def test_kind_means_average_each_kinds_seats_per_game():
    from training.collector import _kind_means

    rng = np.random.default_rng(0)
    kinds = rng.integers(-1, 8, size=(50, 6))  # -1: no seat; 4 and up: snapshots
    returns = rng.normal(size=(50, 6))
    means = _kind_means(returns, kinds)
    for game in range(50):
        for kind in range(5):
            seats = kinds[game] >= 4 if kind == 4 else kinds[game] == kind
            want = returns[game, seats].mean() if seats.any() else np.nan
            np.testing.assert_allclose(means[game, kind], want, rtol=1e-12)


def test_seats_are_dealt_to_the_players_of_each_table_only():
    mix = parse_mix("self=0.3,random=0.7")
    env = SelfPlayVecEnv("updown", [{"num_players": 2}, {"num_players": 4}], 400, mix, seed=0)
    env.reset()
    for _ in range(3):  # new deals of finished games too
        env._deal_kinds(np.arange(0, env.num_envs, 3))
        two, four = env.kinds[:200], env.kinds[200:]
        assert (two[:, 2:] == -1).all() and (two[:, :2] >= 0).all() and (four >= 0).all()
        assert ((env.kinds == 0).sum(axis=1) >= 1).all()  # a learner seat in every game
        share = (env.kinds == 1).sum() / (env.kinds >= 0).sum()
        assert 0.4 < share < 0.65  # random seats: 0.7 of the seats that are not the learner's


def test_random_actions_are_legal_and_cover_the_legal_set():
    rng = np.random.default_rng(0)
    mask = np.zeros((2000, 5), bool)
    mask[:, [1, 3]] = True
    acts = random_actions(mask, rng)
    assert set(acts.tolist()) == {1, 3}
    # Rows with different legal sets: every pick legal, each legal id about equally often.
    mask = rng.random((6000, 9)) < 0.4
    mask[np.arange(6000), rng.integers(9, size=6000)] = True
    acts = random_actions(mask, rng)
    assert mask[np.arange(6000), acts].all()
    single = mask.sum(1) == 3
    ranks = [int(np.flatnonzero(row).tolist().index(a)) for row, a in
             zip(mask[single], acts[single])]  # fmt: skip
    assert np.bincount(ranks, minlength=3).min() > 0.28 * len(ranks)
    for bad, row in (([[True, False], [False, False]], 1), ([[False, False], [True, True]], 0),
                     ([[False, False]], 0), ([[True], [False], [True]], 1)):  # fmt: skip
        with pytest.raises(ValueError, match=f"row {row} of the mask allows no action"):
            random_actions(np.array(bad), rng)
    assert random_actions(np.zeros((0, 4), bool), rng).shape == (0,)
    assert random_actions(np.array([[False, False, True]]), rng).tolist() == [2]


@pytest.mark.parametrize("width", [1, 7, 8, 9, 50, 67, 114, 130])
def test_random_actions_pick_the_kth_legal_id_of_one_draw_per_row(width):
    # The compiled pick reads the mask eight bytes at a time: every width, rows starting at
    # any byte, sparse and dense rows, the same pick as the plain rule from the same draws.
    def plain(mask, seed):  # the k-th legal id, k = floor(u * count), u drawn for all rows
        u = np.random.default_rng(seed).random(len(mask))
        return [np.flatnonzero(row)[int(x * row.sum())] for row, x in zip(mask, u)]

    rng = np.random.default_rng(width)
    mask = rng.random((300, width)) < rng.choice([0.02, 0.3, 1.0], size=(300, 1))
    mask[np.arange(300), rng.integers(width, size=300)] = True
    expected = plain(mask, 7)
    assert random_actions(mask, np.random.default_rng(7)).tolist() == expected
    strided = mask[::2]  # not contiguous: copied first
    assert random_actions(strided, np.random.default_rng(8)).tolist() == plain(strided, 8)
    assert random_actions(mask.astype(np.int8), np.random.default_rng(7)).tolist() == expected
    loose = mask.view(np.uint8) * rng.integers(1, 256, size=mask.shape, dtype=np.uint8)
    loose = loose.view(bool)  # True stored as any nonzero byte, as numpy still reads it
    assert random_actions(loose, np.random.default_rng(7)).tolist() == expected


@pytest.mark.parametrize(("text", "message"), [
    ("self=1,robot=2", "unknown player kind 'robot'"),
    ("self=x", "needs a number"),
    ("self=-1", "must be >= 0"),
    ("self=0", "no kind a positive weight"),
])  # fmt: skip
def test_bad_mixes_are_refused(text, message):
    with pytest.raises(ValueError, match=message):
        parse_mix(text)


@pytest.mark.parametrize(("game", "tables"), [("kingup", [4]), ("updown", [2, 3]), ("kdk", [3])])
def test_rollouts_store_only_legal_learner_decisions_and_train(game, tables):
    options = [{"num_players": n} for n in tables]
    mix = parse_mix("self=0.5,snapshot=0.3,random=0.2")
    env = SelfPlayVecEnv(game, options, 16, mix, seed=0)
    model = SelfPlayPPO(
        "MlpPolicy", env, n_steps=512, batch_size=256, n_epochs=1, device="cpu", seed=0,
        rollout_buffer_class=SeatRolloutBuffer, policy_kwargs={"net_arch": [32]},
    )  # fmt: skip
    env.add_snapshot(model.policy, pool_size=2)
    model.learn(1024)
    assert model.num_timesteps == 1024
    buf = model.rollout_buffer
    masks, actions = buf.action_masks.reshape(512, -1), buf.actions.reshape(512).astype(int)
    chosen = masks[np.arange(512), actions]
    assert chosen.all()  # a masked action is never sampled
    assert env.decisions["self"] >= 1024 and env.decisions["snapshot"] > 0
    assert env.decisions["random"] > 0
    # Every stream is closed: terminal, chained to a later sample, or bootstrapped.
    closed = buf.terminal | (buf.next_pos >= 0) | (buf.bootstrap != 0)
    assert closed.mean() > 0.99


def test_annealing_follows_whichever_budget_ends_first(monkeypatch):
    from stable_baselines3.common.utils import LinearSchedule

    import training.collector as collector

    env = SelfPlayVecEnv("updown", [{"num_players": 2}], 4, parse_mix("self=1"), seed=0)
    model = SelfPlayPPO(
        "MlpPolicy", env, learning_rate=LinearSchedule(1e-3, 0.0, 1.0), n_steps=64,
        batch_size=64, n_epochs=1, ent_coef=0.01, device="cpu", seed=0,
        rollout_buffer_class=SeatRolloutBuffer, policy_kwargs={"net_arch": [8]},
    )  # fmt: skip
    model.ent_start = 0.01
    model.learn(64)  # a full buffer for train() below
    model._update_current_progress_remaining(250, 1000)  # samples only: 3/4 left
    assert model._current_progress_remaining == pytest.approx(0.75)
    monkeypatch.setattr(collector.time, "monotonic", lambda: 160.0)
    model.budget = (100.0, 200.0)  # 60 % of the time gone: time ends the run first
    model._update_current_progress_remaining(250, 1000)
    assert model._current_progress_remaining == pytest.approx(0.4)
    monkeypatch.setattr(collector.time, "monotonic", lambda: 250.0)  # past the deadline
    model._update_current_progress_remaining(250, 1000)
    assert model._current_progress_remaining == 0.0
    monkeypatch.setattr(collector.time, "monotonic", lambda: 110.0)
    model._update_current_progress_remaining(500, 1000)  # now the samples end it first
    assert model._current_progress_remaining == pytest.approx(0.5)
    model.train()
    assert model.ent_coef == pytest.approx(0.005)
    lr = model.policy.optimizer.param_groups[0]["lr"]
    assert lr == pytest.approx(5e-4)


def test_the_pool_keeps_the_starting_policy_and_the_newest_snapshots():
    env = SelfPlayVecEnv("updown", [{"num_players": 2}], 4, parse_mix("self=1,snapshot=1"))
    for k in range(6):
        env.add_snapshot(f"policy {k}", pool_size=2)
    assert list(env.snapshots.values()) == ["policy 0", "policy 4", "policy 5"]
