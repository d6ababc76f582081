"""Build any agent from a spec string: the one entry point for evaluation and play.

=================  ==============================================================
spec               agent
=================  ==============================================================
``random``         :class:`agents.random_agent.RandomAgent` (every game)
``heuristic``      the game's rule-of-thumb agent, from :data:`HEURISTICS`
``ismcts``         :class:`agents.ismcts.ISMCTSAgent`, the game's default budget
``ismcts:N``       the same with N simulations per move
``ismcts:N,K=V``   ... and constructor options, e.g. ``ismcts:200,rollout=random``
``ppo:PATH``       a trained policy, ``agents.ppo_agent.load_ppo_agent(PATH, ...)``
=================  ==============================================================

``options`` go to the agent's constructor, except for ``ppo:PATH``, where they are the game
options (``num_players`` ...) that the checkpoint is checked against.

Heuristics and the PPO loader are imported only when asked for, so a game whose heuristic is
not written yet, or a machine without torch, can still build the other agents.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

from agents.base import GAMES, Agent

HEURISTICS = {
    "kingup": "agents.heuristic_kingup:HeuristicKingUp",
    "updown": "agents.heuristic_updown:HeuristicUpDown",
    "kdk": "agents.heuristic_kdk:HeuristicKdK",
}
# Game knowledge the search may use inside its determinisations (see agents/ismcts.py):
# a fast full-state policy for the rollouts. Games without one roll out uniformly at random.
ROLLOUT_POLICIES = {"kingup": "agents.heuristic_kingup:rollout_policy"}
# Simulations of a bare ``ismcts`` spec: what keeps a move well under a second on two cores
# (a KdK rollout to the end of a round is about 200 steps, ten times a King Up! one).
DEFAULT_SIMULATIONS = {"kingup": 400, "updown": 1000, "kdk": 50}
SPECS = "random, heuristic, ismcts, ismcts:N (N simulations), ismcts:N,KEY=VALUE,..., ppo:PATH"


def make_agent(spec: str, game: str, seed: int | None = None, **options: Any) -> Agent:
    """The agent that ``spec`` names, for ``game``; see the module docstring for ``options``."""
    check_game(game)
    kind, _, arg = spec.partition(":")
    if kind == "random" and not arg:
        from agents.random_agent import RandomAgent

        agent: Agent = RandomAgent(seed, **options)
    elif kind == "heuristic" and not arg:
        agent = _load(HEURISTICS[game], f"heuristic agent for {game!r}")(seed=seed, **options)
    elif kind == "ismcts":
        agent = _make_ismcts(spec, arg, game, seed, options)
    elif kind == "ppo" and arg:
        agent = _make_ppo(arg, game, options)
    else:
        raise ValueError(f"unknown agent spec {spec!r}; known specs: {SPECS}")
    agent.spec = spec
    return agent


def check_game(game: str) -> None:
    """ValueError naming the known games if ``game`` is not one of them."""
    if game not in GAMES:
        raise ValueError(f"unknown game {game!r}; known games: {', '.join(GAMES)}")


def _load(target: str, what: str) -> Any:
    """Import ``module:attribute``; a missing module is a ValueError naming what is missing."""
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name != module_name:
            raise  # the module exists but one of its own imports is missing
        path = module_name.replace(".", "/") + ".py"
        raise ValueError(f"no {what} yet: {path} does not exist") from None
    return getattr(module, attr)


def _make_ismcts(spec: str, arg: str, game: str, seed: int | None, options: dict) -> Agent:
    from agents.ismcts import ISMCTSAgent

    budget, *pairs = arg.split(",") if arg else [""]
    if budget and not (budget.isdigit() and int(budget) > 0):
        raise ValueError(f"bad agent spec {spec!r}: N in ismcts:N must be a positive integer")
    rules = importlib.import_module(f"{GAMES[game]}.rules")
    if not hasattr(rules, "sample_state"):
        raise ValueError(
            f"ismcts cannot play {game!r} yet: {GAMES[game]}/rules.py has no sample_state"
        )
    options = {**_spec_options(spec, pairs), **options}
    if budget:
        options["simulations"] = int(budget)
    else:
        options.setdefault("simulations", DEFAULT_SIMULATIONS.get(game, 400))
    rollout = options.pop("rollout", "auto")
    if rollout not in ("auto", "random"):
        raise ValueError(f"bad agent spec {spec!r}: rollout must be 'auto' or 'random'")
    if rollout == "auto" and game in ROLLOUT_POLICIES:
        options["rollout_policy"] = _load(ROLLOUT_POLICIES[game], f"rollout policy for {game!r}")
    allowed = set(inspect.signature(ISMCTSAgent).parameters) - {"seed"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(
            f"bad agent spec {spec!r}: unknown option {unknown[0]!r}; "
            f"ismcts options: rollout, {', '.join(sorted(allowed))}"
        )
    return ISMCTSAgent(seed=seed, **options)


def _spec_options(spec: str, pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs of a spec; numbers become numbers."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"bad agent spec {spec!r}: expected KEY=VALUE, got {pair!r}")
        try:
            out[key] = float(value) if "." in value else int(value)
        except ValueError:
            out[key] = value
    return out


def _make_ppo(path: str, game: str, options: dict) -> Agent:
    if not Path(path).is_file():
        raise FileNotFoundError(f"ppo agent file not found: {path}")
    try:
        from agents.ppo_agent import load_ppo_agent
    except ModuleNotFoundError as err:
        if err.name != "agents.ppo_agent":
            raise
        raise ImportError(
            "ppo agents need agents/ppo_agent.py with load_ppo_agent(), which does not exist yet"
        ) from None
    return load_ppo_agent(path, game=game, options=options)
