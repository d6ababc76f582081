"""Which agents each game has: plain tables that ``training.registry`` builds agents from.

Targets are ``"module:attribute"`` strings, imported only when an agent is built, so building a
random agent does not import every game's heuristic.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from tablegym.games import check_game

# Rows of observations and masks, and a generator for ties and chance, to one action per row.
BatchPolicy = Callable[[np.ndarray, np.ndarray, np.random.Generator], np.ndarray]

HEURISTICS = {
    "kingup": "kingup_env.heuristic:HeuristicKingUp",
    "updown": "updown_env.heuristic:HeuristicUpDown",
    "kdk": "kdk_env.heuristic:HeuristicKdK",
}
# The heuristics' batched forms, ``act_batch(obs, mask, rng) -> actions`` over rows of
# observations: they decide as the agents above (tests/test_heuristic_*_batch.py), at 2-5 µs a
# decision (numba twins of King Up! and Up & Down) or 30-50 µs (KdK's planner), for the
# self-play collector, the warm start and the evaluation during training.
BATCHED_HEURISTICS = {
    "kingup": "kingup_env.heuristic_batch:act_batch",
    "updown": "updown_env.heuristic_batch:act_batch",
    "kdk": "kdk_env.heuristic:act_batch",
}
# Game knowledge the search may use inside its determinisations (see agents/ismcts.py):
# a full-state policy for the rollouts and for the other seats inside the tree, each beside its
# game's heuristic. A game without one would roll out uniformly at random.
ROLLOUT_POLICIES = {
    "kingup": "kingup_env.heuristic:rollout_policy",
    "updown": "updown_env.heuristic:rollout_policy",
    "kdk": "kdk_env.heuristic:rollout_policy",
}
# Simulations of a bare ``ismcts`` spec: about 0.15-0.25 s of CPU per decision on the engine
# (the search's default "numba" backend; measured on heuristic games' decisions, 4 players:
# King Up! 0.22 s, Up & Down 0.18 s, whose rollouts run to the end of the game, KdK 0.2 s,
# whose race often stops before its budget).
DEFAULT_SIMULATIONS = {"kingup": 3000, "updown": 3000, "kdk": 2000}


def load(target: str) -> Any:
    """The attribute that a ``"module:attribute"`` string names."""
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def heuristic_class(game: str) -> type:
    """The rule-of-thumb agent class of ``game``."""
    return load(HEURISTICS[check_game(game)])


def batched_heuristic(game: str) -> BatchPolicy:
    """The heuristic of ``game`` as one call over many rows: ``(obs, mask, rng) -> actions``."""
    return load(BATCHED_HEURISTICS[check_game(game)])


def rollout_policy(game: str) -> Callable[..., int] | None:
    """The full-state rollout policy of ``game`` for the search, or None (uniform rollouts)."""
    target = ROLLOUT_POLICIES.get(check_game(game))
    return None if target is None else load(target)
