"""Warm start for self-play PPO: imitate a teacher agent before learning from reward.

From a random policy, PPO spends most of a 30-minute budget rediscovering what the heuristic
agent already knows (in KdK it learns to beat random players but never reaches the end of a
hand against a competent one). Behaviour cloning gives it that knowledge first: the teacher
(the game's heuristic, in its batched form) plays every seat of ``games`` games; each decision is
recorded as (observation, action mask, action, discounted return of that seat). The policy
is fitted to the actions (masked cross-entropy) and its value head to the returns (squared
error), so PPO's first advantages are not noise that would undo the imitation.

The return of a decision is the seat's own rewards from that decision on, discounted once per
decision of that seat, exactly as :mod:`training.collector` credits rewards to the learner's
decisions, so the value head learns the quantity PPO will bootstrap. The teacher's games run
in batch on :class:`tablegym.vector.VectorGame` tables.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.catalog import BatchPolicy
from tablegym.vector import VectorGame


@dataclass
class Demonstrations:
    """Decisions of the teacher: one row per decision."""

    observations: np.ndarray  # float32 (n, obs_size)
    masks: np.ndarray  # bool (n, num_actions)
    actions: np.ndarray  # int64 (n,)
    returns: np.ndarray  # float32 (n,)

    def __len__(self) -> int:
        return len(self.actions)

    @classmethod
    def concat(cls, parts: list[Demonstrations]) -> Demonstrations:
        names = [f.name for f in dataclasses.fields(cls)]
        return cls(*(np.concatenate([getattr(p, name) for p in parts]) for name in names))


def collect(
    game: str,
    tables: list[dict[str, Any]],
    games: int,
    seed: int,
    gamma: float,
    teacher: BatchPolicy,
    num_games: int = 64,
    backend: str = "auto",
) -> Demonstrations:
    """Demonstrations of ``games`` teacher games split evenly over ``tables`` (option dicts)."""
    if games <= 0:
        raise ValueError(f"warm start needs a positive number of games; got {games}")
    shares = np.diff(np.linspace(0, games, len(tables) + 1).astype(int))
    parts = [
        teacher_games(game, options, int(share), seed + k, gamma, teacher, num_games, backend)
        for k, (options, share) in enumerate(zip(tables, shares))
        if share > 0
    ]
    return Demonstrations.concat(parts)


def teacher_games(
    game: str,
    options: dict[str, Any],
    games: int,
    seed: int,
    gamma: float,
    teacher: BatchPolicy,
    num_games: int = 64,
    backend: str = "auto",
) -> Demonstrations:
    """Every decision of ``games`` games with ``teacher`` in every seat, one batched call a step.

    A decision's return is the seat's own rewards from it on, discounted once per decision of
    that seat (rewards earned while others act count for its last decision), as the self-play
    streams of ``training.collector`` count them.
    Only finished games are kept, so the data holds exactly ``games`` games.
    """
    size = max(1, min(num_games, games))
    vg = VectorGame(game, size, seed=seed, backend=backend, **options)
    n = vg.num_players
    rng = np.random.default_rng(seed)
    quota = games // size + (np.arange(size) < games % size)
    played = np.zeros(size, dtype=np.int64)
    obs_rows, mask_rows, actions, rewards, next_pos, finished = [], [], [], [], [], []
    last: dict[int, int] = {}  # (slot, seat) stream -> its last decision
    game_of: list[int] = []  # per decision: slot * quota bound + game number in the slot
    obs, mask, seat = vg.reset()
    while (played < quota).any():
        step_actions = np.asarray(teacher(obs, mask, rng), dtype=np.int64)
        for i in range(size):
            q = int(seat[i])
            stream = i * n + q
            if stream in last:
                next_pos[last[stream]] = len(actions)
            last[stream] = len(actions)
            game_of.append(i * (games + 1) + int(played[i]))
            obs_rows.append(obs[i])
            mask_rows.append(mask[i])
            actions.append(int(step_actions[i]))
            rewards.append(0.0)
            next_pos.append(-1)
        obs, mask, seat, step_rewards, done = vg.step(step_actions)
        for i, q in zip(*np.nonzero(step_rewards)):
            pos = last.get(int(i) * n + int(q))
            if pos is not None:
                rewards[pos] += float(step_rewards[i, q])
        for i in np.flatnonzero(done).tolist():
            finished.append(i * (games + 1) + int(played[i]))
            played[i] += 1
            for q in range(n):
                last.pop(i * n + q, None)
    returns = np.zeros(len(actions), dtype=np.float32)
    for pos in range(len(actions) - 1, -1, -1):
        nxt = next_pos[pos]
        returns[pos] = rewards[pos] + (gamma * returns[nxt] if nxt >= 0 else 0.0)
    # Games beyond a slot's quota ran on while other slots finished theirs: drop them too.
    complete = set(finished[:]) & {
        i * (games + 1) + k for i in range(size) for k in range(int(quota[i]))
    }
    keep = np.fromiter((g in complete for g in game_of), dtype=bool, count=len(game_of))
    return Demonstrations(
        np.asarray(obs_rows, dtype=np.float32)[keep],
        np.asarray(mask_rows, dtype=bool)[keep],
        np.asarray(actions, dtype=np.int64)[keep],
        returns[keep],
    )


def pretrain(
    model: Any,
    demos: Demonstrations,
    epochs: int = 10,
    batch_size: int = 512,
    learning_rate: float = 1e-3,
    seed: int = 0,
    progress: bool = False,
) -> dict[str, float]:
    """Fit ``model.policy`` (a MaskablePPO policy) to the demonstrations.

    Returns the last epoch's mean cross-entropy, value error and the share of decisions on
    which the policy's most likely legal action is the teacher's.
    """
    import torch

    policy = model.policy
    optimizer = torch.optim.Adam(policy.parameters(), lr=learning_rate)
    obs, masks, actions, returns = (
        torch.as_tensor(x, device=policy.device)
        for x in (demos.observations, demos.masks, demos.actions, demos.returns)
    )
    rng = np.random.default_rng(seed)
    policy.set_training_mode(True)
    epoch_range = range(epochs)
    if progress:
        from tqdm import tqdm

        epoch_range = tqdm(epoch_range, desc="warm start", unit="epoch")
    stats: dict[str, float] = {}
    for _ in epoch_range:
        totals = np.zeros(2)
        order = torch.as_tensor(rng.permutation(len(demos)), device=policy.device)
        for start in range(0, len(demos), batch_size):
            idx = order[start : start + batch_size]
            values, log_prob, _ = policy.evaluate_actions(
                obs[idx], actions[idx], action_masks=masks[idx]
            )
            policy_loss = -log_prob.mean()
            value_loss = torch.nn.functional.mse_loss(values.flatten(), returns[idx])
            optimizer.zero_grad()
            (policy_loss + 0.5 * value_loss).backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
            optimizer.step()
            totals += len(idx) * np.array([policy_loss.item(), value_loss.item()])
        stats = {"cross_entropy": totals[0] / len(demos), "value_mse": totals[1] / len(demos)}
    policy.set_training_mode(False)
    stats["agreement"] = agreement(policy, demos)
    return stats


def agreement(policy: Any, demos: Demonstrations) -> float:
    """Share of decisions where the policy's most likely legal action is the teacher's."""
    import torch

    with torch.no_grad():
        dist = policy.get_distribution(
            torch.as_tensor(demos.observations, device=policy.device), action_masks=demos.masks
        )
        best = dist.distribution.probs.argmax(dim=1).cpu().numpy()
    return float(np.mean(best == demos.actions))
