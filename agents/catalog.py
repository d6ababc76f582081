"""Each game's agents, found through its spec (``<game>_env/spec.py``, ``tablegym.spec``).

Targets are ``"module:attribute"`` strings, imported only when an agent is built, so building a
random agent does not import every game's heuristic.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from tablegym.games import spec_of

# Rows of observations and masks, and a generator for ties and chance, to one action per row.
BatchPolicy = Callable[[np.ndarray, np.ndarray, np.random.Generator], np.ndarray]


def load(target: str) -> Any:
    """The attribute that a ``"module:attribute"`` string names."""
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def heuristic_class(game: str) -> type:
    """The rule-of-thumb agent class of ``game``."""
    return load(spec_of(game).heuristic)


def batched_heuristic(game: str) -> BatchPolicy:
    """The heuristic of ``game`` as one call over many rows: ``(obs, mask, rng) -> actions``;
    ValueError if the game has none."""
    target = spec_of(game).batched_heuristic
    if target is None:
        raise ValueError(f"game {game!r} has no batched heuristic")
    return load(target)


def rollout_policy(game: str) -> Callable[..., int] | None:
    """The full-state rollout policy of ``game`` for the search, or None (uniform rollouts)."""
    search = spec_of(game).search
    return None if search is None else load(search.policy)
