"""Input features computed inside the network, from the observation: ``--features cards``.

A game that declares a features module (``GameSpec.features``, e.g. :mod:`updown_env.features`)
lets a policy read its observation followed by those features: :class:`CardFeatures` is an SB3
features extractor (SB3's extension point for what a policy computes before its MLP) with no
weights, so the observation, the environment and its version stay as they are, a checkpoint
without the features warm-starts one with them (the new inputs start at zero weight:
``train.widen``), and :class:`training.ppo_agent.NumpyPolicy` computes the same features in
numpy from the same code.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

from tablegym.games import spec_of

FEATURES = ("none", "cards")


def features_module(game: str) -> ModuleType:
    """The module of ``game``'s per-card features (ValueError where the game has none)."""
    name = spec_of(game).features
    if name is None:
        raise ValueError(f"--features cards: {game} has no per-card features; use --features none")
    return import_module(name)


class CardFeatures(BaseFeaturesExtractor):
    """The flat observation followed by its game's features (``features_module(game)``)."""

    def __init__(self, observation_space: spaces.Box, game: str):
        module = features_module(game)
        size = int(np.prod(observation_space.shape))
        super().__init__(observation_space, features_dim=size + module.SIZE)
        # Functions, not the module: policies are deep-copied into the snapshot pool.
        self.game, self.blocks, self.rows = game, module.feature_blocks, module.card_features
        constants = module.constants()
        self.names = sorted(constants)
        for name, matrix in constants.items():
            # Not in the state dict: the matrices follow from the code, and a checkpoint's keys
            # stay those of a policy without features.
            self.register_buffer(f"k_{name}", torch.as_tensor(matrix), persistent=False)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        """The observations and their features, side by side."""
        x = observations.flatten(1).float()
        k = {name: getattr(self, f"k_{name}") for name in self.names}
        return torch.cat([x, *self.blocks(x, k)], dim=1)

    def numpy(self, observations: np.ndarray) -> np.ndarray:
        """:meth:`forward` in numpy, for one observation or rows of them."""
        x = np.asarray(observations, dtype=np.float32)
        return np.concatenate([x, self.rows(x)], axis=x.ndim - 1)


def policy_kwargs(game: str, layers: list[int], features: str = "none") -> dict[str, Any]:
    """SB3 ``policy_kwargs`` of a run's network: ``layers`` hidden, with ``features``."""
    if features not in FEATURES:
        raise ValueError(f"--features must be one of {', '.join(FEATURES)}; got {features!r}")
    kwargs: dict[str, Any] = {"net_arch": layers}
    if features == "cards":
        features_module(game)  # the one-line error before any model is built
        kwargs["features_extractor_class"] = CardFeatures
        kwargs["features_extractor_kwargs"] = {"game": game}
    return kwargs
