"""Which agents each game has: plain tables that ``training.registry`` builds agents from.

Targets are ``"module:attribute"`` strings, imported only when an agent is built, so building a
random agent does not import every game's heuristic.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from tablegym.games import check_game

HEURISTICS = {
    "kingup": "agents.heuristic_kingup:HeuristicKingUp",
    "updown": "agents.heuristic_updown:HeuristicUpDown",
    "kdk": "agents.heuristic_kdk:HeuristicKdK",
}
# Game knowledge the search may use inside its determinisations (see agents/ismcts.py):
# a full-state policy for the rollouts and for the other seats inside the tree, each beside its
# game's heuristic. A game without one would roll out uniformly at random.
ROLLOUT_POLICIES = {
    "kingup": "agents.heuristic_kingup:rollout_policy",
    "updown": "agents.heuristic_updown:rollout_policy",
    "kdk": "agents.heuristic_kdk:rollout_policy",
}
# Simulations of a bare ``ismcts`` spec: about 0.2-0.35 s of CPU per decision with the
# policies above (measured by benchmarks/bench_search.py: about 5,000 simulations/s in King
# Up!, 3,000 in Up & Down, whose rollouts run to the end of the game, 440 in KdK).
DEFAULT_SIMULATIONS = {"kingup": 1000, "updown": 1000, "kdk": 100}


def load(target: str) -> Any:
    """The attribute that a ``"module:attribute"`` string names."""
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def heuristic_class(game: str) -> type:
    """The rule-of-thumb agent class of ``game``."""
    return load(HEURISTICS[check_game(game)])


def rollout_policy(game: str) -> Callable[..., int] | None:
    """The full-state rollout policy of ``game`` for the search, or None (uniform rollouts)."""
    target = ROLLOUT_POLICIES.get(check_game(game))
    return None if target is None else load(target)
