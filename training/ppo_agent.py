"""Trained MaskablePPO policies as agents (checkpoints: :mod:`training.checkpoints`)."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import PolicyAgent
from training.checkpoints import load_model, read_meta


def actor_logits(policy: Any, observations: np.ndarray) -> np.ndarray:
    """Unmasked action logits of an SB3 policy for rows of observations: the actor alone, in
    one torch forward pass (no value head, no distribution object) on the policy's device."""
    import torch

    with torch.no_grad():
        features = policy.extract_features(
            torch.as_tensor(observations, device=policy.device), policy.pi_features_extractor
        )
        return policy.action_net(policy.mlp_extractor.forward_actor(features)).cpu().numpy()


class NumpyPolicy:
    """The actor of a MaskablePPO ``MlpPolicy`` as numpy arrays: logits without torch.

    Self-play opponents and evaluations call the policy once per move on a single
    observation; there torch's per-call overhead dwarfs the arithmetic, and a numpy forward
    pass of the same weights is several times faster. Only the layers ``MlpPolicy`` builds
    (flatten, Linear, Tanh/ReLU) are supported; anything else raises ValueError.
    """

    def __init__(self, policy: Any):
        import torch

        if not isinstance(policy.features_extractor.flatten, torch.nn.Flatten):
            raise ValueError("only MlpPolicy (flattened vector observations) is supported")
        self.layers = _numpy_layers([*policy.mlp_extractor.policy_net, policy.action_net])
        self.value_layers = _numpy_layers([*policy.mlp_extractor.value_net, policy.value_net])

    def logits(self, observation: np.ndarray) -> np.ndarray:
        """Unmasked action logits for one observation vector, or for rows of them."""
        return _forward(self.layers, observation)

    def values(self, observations: np.ndarray) -> np.ndarray:
        """The value head's estimates for rows of observations, shape ``(k,)``."""
        return _forward(self.value_layers, observations)[:, 0]


def _numpy_layers(modules: list[Any]) -> list[tuple[str, Any]]:
    """torch layers (Linear, Tanh, ReLU) as ``(kind, params)`` of numpy arrays."""
    import torch

    layers: list[tuple[str, Any]] = []
    for module in modules:
        if isinstance(module, torch.nn.Linear):
            weight = module.weight.detach().cpu().numpy().astype(np.float32)
            bias = module.bias.detach().cpu().numpy().astype(np.float32)
            layers.append(("linear", (weight.T.copy(), bias)))
        elif isinstance(module, (torch.nn.Tanh, torch.nn.ReLU)):
            layers.append((type(module).__name__.lower(), None))
        else:
            raise ValueError(f"unsupported policy layer {module!r}")
    return layers


def _forward(layers: list[tuple[str, Any]], observation: np.ndarray) -> np.ndarray:
    x = np.asarray(observation, dtype=np.float32)
    for kind, params in layers:
        if kind == "linear":
            x = x @ params[0] + params[1]
        elif kind == "tanh":
            x = np.tanh(x)
        else:
            x = np.maximum(x, 0.0)
    return x


class SearchNetwork:
    """A policy's actor and value head as the search's network (``agents/ismcts.py``):
    ``(obs, mask) -> (priors, values)``, in numpy (the search calls it on a few rows at a
    time, where torch's per-call overhead would dominate).

    The value head estimates the ``"win"`` reward, +1 for a win and -1 otherwise (PPO's, and
    the targets of ``training/exit.py``); the search takes a value in [0, 1]: ``(v + 1) / 2``.
    """

    def __init__(self, policy: Any):
        self.net = NumpyPolicy(policy)

    def __call__(
        self, observations: np.ndarray, masks: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Priors over the legal actions and values in [0, 1], per row."""
        logits = np.where(masks, self.net.logits(observations), -np.inf)
        logits -= logits.max(axis=1, keepdims=True)
        priors = np.exp(logits)
        priors /= priors.sum(axis=1, keepdims=True)
        values = np.clip((self.net.values(observations) + 1.0) / 2.0, 0.0, 1.0)
        return priors, values


class PPOAgent(PolicyAgent):
    """Acts with a trained policy: the most likely legal action, or a sample from it."""

    def __init__(self, model: Any, spec: str = "ppo", deterministic: bool = True, seed: int = 0):
        super().__init__(spec, deterministic, seed)
        self.model = model
        self.net = NumpyPolicy(model.policy)

    def logits(self, observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """The actor's logits, computed in numpy."""
        return self.net.logits(observation)

    def batch_logits(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """The actor's logits for rows of observations: one torch forward pass on one thread.

        On small shared machines a matrix product split over threads (numpy's BLAS or torch)
        waits on descheduled threads: 128 rows took 40-50 ms on two threads, 0.6 ms on one.
        """
        import torch

        previous = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return actor_logits(self.model.policy, np.asarray(observations, dtype=np.float32))
        finally:
            torch.set_num_threads(previous)


def load_ppo_agent(
    path: str | os.PathLike,
    game: str,
    options: dict[str, Any] | None = None,
    deterministic: bool = True,
    seed: int = 0,
) -> PPOAgent:
    """The agent behind the spec ``ppo:PATH``."""
    model = load_model(path, game, options)
    return PPOAgent(model, spec=f"ppo:{path}", deterministic=deterministic, seed=seed)


def load_search_network(path: str | os.PathLike, game: str) -> SearchNetwork:
    """The network behind the search option ``prior=ppo:PATH``, loaded once per file version
    (an evaluation builds a search agent per game)."""
    path = Path(path)
    return _cached_network(str(path.resolve()), path.stat().st_mtime_ns, game)


@functools.lru_cache(maxsize=8)
def _cached_network(path: str, mtime: int, game: str) -> SearchNetwork:
    meta = read_meta(path)
    # The search plays at any table size the policy knows; load at the first it was trained at.
    counts = meta.get("player_counts") or [meta["options"].get("num_players")]
    return SearchNetwork(load_model(path, game, {"num_players": counts[0]}).policy)
