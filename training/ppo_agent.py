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

    # The device of the actor's head: SB3's ``policy.device`` walks every parameter, which on
    # the snapshots' small batches costs a tenth of the forward pass.
    device = policy.action_net.weight.device
    with torch.no_grad():
        features = policy.extract_features(
            torch.as_tensor(observations, device=device), policy.pi_features_extractor
        )
        return policy.action_net(policy.mlp_extractor.forward_actor(features)).cpu().numpy()


class NumpyPolicy:
    """The actor of a MaskablePPO ``MlpPolicy`` as numpy arrays: logits without torch.

    Self-play opponents and evaluations call the policy once per move on a single
    observation; there torch's per-call overhead dwarfs the arithmetic, and a numpy forward
    pass of the same weights is several times faster. Only the layers ``MlpPolicy`` builds
    (flatten, Linear, Tanh/ReLU) and :class:`training.features.CardFeatures` are supported;
    anything else raises ValueError.
    """

    def __init__(self, policy: Any):
        import torch

        from training.features import CardFeatures

        extractor = policy.features_extractor
        if isinstance(extractor, CardFeatures):
            self.features = extractor.numpy
        elif isinstance(getattr(extractor, "flatten", None), torch.nn.Flatten):
            self.features = None
        else:
            raise ValueError("only MlpPolicy (flattened vector observations) is supported")
        self.layers: list[tuple[str, Any]] = []
        for module in [*policy.mlp_extractor.policy_net, policy.action_net]:
            if isinstance(module, torch.nn.Linear):
                weight = module.weight.detach().cpu().numpy().astype(np.float32)
                bias = module.bias.detach().cpu().numpy().astype(np.float32)
                self.layers.append(("linear", (weight.T.copy(), bias)))
            elif isinstance(module, (torch.nn.Tanh, torch.nn.ReLU)):
                self.layers.append((type(module).__name__.lower(), None))
            else:
                raise ValueError(f"unsupported policy layer {module!r}")

    def logits(self, observation: np.ndarray) -> np.ndarray:
        """Unmasked action logits for one observation vector, or for rows of them."""
        x = np.asarray(observation, dtype=np.float32)
        if self.features is not None:
            x = self.features(x)
        for kind, params in self.layers:
            if kind == "linear":
                x = x @ params[0] + params[1]
            elif kind == "tanh":
                x = np.tanh(x)
            else:
                x = np.maximum(x, 0.0)
        return x


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


class SearchNetwork:
    """A policy's actor and value head as the search's network (``agents/ismcts.py``):
    ``(obs, mask) -> (priors, values)``, one torch forward pass on one thread per call.

    One thread: numpy's matrix product of a few rows (OpenBLAS gemm) ran on every core and,
    on the shared 2-core machine, spun waiting for descheduled threads: a King Up! search of
    batch 8 made 609 simulations per CPU second with it, 15,108 with one thread
    (``benchmarks/bench_exit.py``, docs/results.md).

    ``value_reward`` names the reward the value head estimates: ``"win"``, +1 for a win and -1
    otherwise (the training reward of King Up! and Up & Down, and the targets of
    ``training/exit.py``), which the search takes as a value in [0, 1], ``(v + 1) / 2``; or
    another (KdK's ``"score"`` return, which its bots up to k9 learned), which the search does not
    read as a win.
    """

    def __init__(self, policy: Any, value_reward: str = "win"):
        self.policy = policy
        self.value_reward = value_reward

    def __call__(
        self, observations: np.ndarray, masks: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Priors over the legal actions and values in [0, 1], per row."""
        import torch

        previous = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with torch.no_grad():
                obs = torch.as_tensor(observations, dtype=torch.float32)
                features = self.policy.extract_features(obs, self.policy.pi_features_extractor)
                latent_pi, latent_vf = self.policy.mlp_extractor(features)
                logits = self.policy.action_net(latent_pi).numpy().astype(np.float64)
                values = self.policy.value_net(latent_vf).numpy()[:, 0]
        finally:
            torch.set_num_threads(previous)
        logits = np.where(masks, logits, -np.inf)
        logits -= logits.max(axis=1, keepdims=True)
        priors = np.exp(logits)
        priors /= priors.sum(axis=1, keepdims=True)
        return priors, np.clip((values + 1.0) / 2.0, 0.0, 1.0)


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
    policy = load_model(path, game, {"num_players": counts[0]}).policy
    return SearchNetwork(policy, value_reward(meta))


def value_reward(meta: dict[str, Any]) -> str:
    """The reward a checkpoint's value head estimates: its training reward, or ``"win"`` once
    an ExIt round has fitted it to the games' outcomes (runs made before ``exit.py`` recorded
    ``reward=win`` in their options)."""
    if meta.get("exit_round", 0) >= 1:
        return "win"
    return str(meta.get("options", {}).get("reward", "win"))
