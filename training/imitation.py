"""Warm start for self-play PPO: imitate a teacher agent before learning from reward.

From a random policy, PPO spends most of a 30-minute budget rediscovering what the heuristic
agent already knows (in KdK it learns to beat random players but never reaches the end of a
hand against a competent one). Behaviour cloning gives it that knowledge first: the teacher
(by default the game's heuristic) plays every seat of ``games`` games; each decision is
recorded as (observation, action mask, action, discounted return of that seat). The policy
is fitted to the actions (masked cross-entropy) and its value head to the returns (squared
error), so PPO's first advantages are not noise that would undo the imitation.

The return of a decision is the seat's own rewards from that decision on, discounted once per
decision of that seat, exactly as :class:`training.selfplay.SelfPlayEnv` sums rewards between
the learner's turns, so the value head learns the quantity PPO will bootstrap.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.base import GameView
from tablegym.games import env_class
from training.registry import make_agent


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


def play_demonstrations(
    game: str, options: dict[str, Any], games: int, seed: int, gamma: float, teacher: str
) -> Demonstrations:
    """``games`` games with ``teacher`` in every seat, seeds ``seed, seed + 1, ...``."""
    env = env_class(game)(**options)
    n = len(env.possible_agents)
    parts = []
    for g in range(games):
        # agents seeded per game, so a game's data does not depend on how games are split
        agents = [make_agent(teacher, game, seed=(seed + g) * n + s) for s in range(n)]
        env.reset(seed=seed + g)
        for s, agent in enumerate(agents):
            agent.reset(s)
        parts.append(_record_game(env, agents, gamma))
    return Demonstrations.concat(parts)


def _record_game(env: Any, agents: list, gamma: float) -> Demonstrations:
    n = len(agents)
    obs: list[list[np.ndarray]] = [[] for _ in range(n)]
    masks: list[list[np.ndarray]] = [[] for _ in range(n)]
    actions: list[list[int]] = [[] for _ in range(n)]
    # rewards[s][k]: what seat s collects from its k-th decision until its next one
    rewards: list[list[float]] = [[] for _ in range(n)]
    while not env.rules.is_terminal(env.game_state):
        name = env.agent_selection
        seat = env.agent_name_mapping[name]
        observation = env.observe(name)
        view = GameView(env.rules, env.config, env.game_state, seat)
        action = agents[seat](observation, view)
        obs[seat].append(observation["observation"])
        masks[seat].append(observation["action_mask"].astype(bool))
        actions[seat].append(int(action))
        rewards[seat].append(0.0)
        env.step(action)
        for s in range(n):
            if rewards[s]:  # rewards before a seat's first decision are zero in our games
                rewards[s][-1] += env.rewards[env.possible_agents[s]]
    returns = [_discounted(r, gamma) for r in rewards]
    seats = [s for s in range(n) if actions[s]]
    return Demonstrations(
        np.concatenate([np.asarray(obs[s], dtype=np.float32) for s in seats]),
        np.concatenate([np.asarray(masks[s]) for s in seats]),
        np.concatenate([np.asarray(actions[s], dtype=np.int64) for s in seats]),
        np.concatenate([returns[s] for s in seats]),
    )


def _discounted(rewards: list[float], gamma: float) -> np.ndarray:
    out = np.zeros(len(rewards), dtype=np.float32)
    running = 0.0
    for k in range(len(rewards) - 1, -1, -1):
        running = rewards[k] + gamma * running
        out[k] = running
    return out


def collect(
    game: str,
    options: dict[str, Any],
    games: int,
    seed: int = 0,
    gamma: float = 0.995,
    teacher: str = "heuristic",
    workers: int = 2,
) -> Demonstrations:
    """Demonstrations of ``games`` teacher games, split over ``workers`` processes.

    Game ``g`` uses seed ``seed + g`` whatever the number of workers, so the data does not
    depend on it.
    """
    if games <= 0:
        raise ValueError(f"warm start needs a positive number of games; got {games}")
    workers = max(1, min(workers, games))
    bounds = np.linspace(0, games, workers + 1).astype(int)
    jobs = [
        (game, options, int(hi - lo), seed + int(lo), gamma, teacher)
        for lo, hi in zip(bounds[:-1], bounds[1:])
    ]
    if workers == 1:
        return play_demonstrations(*jobs[0])
    with ProcessPoolExecutor(workers) as pool:
        parts = list(pool.map(play_demonstrations, *zip(*jobs)))
    return Demonstrations.concat(parts)


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
    obs = torch.as_tensor(demos.observations)
    masks = torch.as_tensor(demos.masks)
    actions = torch.as_tensor(demos.actions)
    returns = torch.as_tensor(demos.returns)
    rng = np.random.default_rng(seed)
    policy.set_training_mode(True)
    epoch_range = range(epochs)
    if progress:
        from tqdm import tqdm

        epoch_range = tqdm(epoch_range, desc="warm start", unit="epoch")
    stats: dict[str, float] = {}
    for _ in epoch_range:
        totals = np.zeros(2)
        order = torch.as_tensor(rng.permutation(len(demos)))
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
            torch.as_tensor(demos.observations), action_masks=demos.masks
        )
        best = dist.distribution.probs.argmax(dim=1).numpy()
    return float(np.mean(best == demos.actions))
