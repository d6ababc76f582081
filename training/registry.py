"""Build any agent from a spec string: the one entry point for evaluation, training and play.

=================  ==============================================================
spec               agent
=================  ==============================================================
``random``         :class:`agents.random_agent.RandomAgent` (every game)
``heuristic``      the game's rule-of-thumb agent, its spec's ``heuristic``
``ismcts``         :class:`agents.ismcts.ISMCTSAgent`, the game's default budget
``ismcts:N``       the same with N simulations per move
``ismcts:N,K=V``   ... and constructor options, e.g. ``ismcts:200,rollout=random``
``ismcts:N,prior=ppo:GAME``  the search guided by a policy/value network: ``ppo:GAME`` or
                   ``ppo:PATH`` (a MaskablePPO checkpoint, an ExIt one included), see
                   "With a network" in :mod:`agents.ismcts`
``ppo:GAME``       the game's built-in bot (``ppo:kingup``, ``ppo:updown``, ``ppo:kdk``),
                   shipped in its package: :mod:`training.bots`
``ppo:PATH``       a trained policy, :func:`training.ppo_agent.load_ppo_agent`; a file
                   named like a game is reached by a path: ``ppo:./kingup``
``rllib:DIR``      an RLlib policy, :func:`training.rllib_agent.load_rllib_agent`
=================  ==============================================================

``options`` go to the agent's constructor, except for ``ppo:...`` and ``rllib:DIR``, where
they are the game options (``num_players`` ...) that the checkpoint is checked against; a
built-in bot plays only its own game, at the table sizes it was trained at. ``K=V``
values are read by :func:`tablegym.options.parse_value`, as the ``--option`` flags of the CLIs
are. The PPO and RLlib loaders are imported only when asked for, so a machine without torch
(or Ray) builds the other agents.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from agents import catalog
from agents.base import Agent
from agents.ismcts import ISMCTSAgent
from agents.random_agent import RandomAgent
from tablegym.cli import require_extra
from tablegym.games import GAMES, check_game, observation_of, spec_of
from tablegym.options import parse_key_value
from training import bots

SPECS = (
    "random, heuristic, ismcts, ismcts:N (N simulations), ismcts:N,KEY=VALUE,..., "
    "ppo:GAME (the game's built-in bot), ppo:PATH, rllib:DIR"
)


def make_agent(spec: str, game: str, seed: int | None = None, **options: Any) -> Agent:
    """The agent that ``spec`` names, for ``game``; see the module docstring for ``options``."""
    check_game(game)
    kind, _, arg = spec.partition(":")
    if kind == "random" and not arg:
        agent: Agent = RandomAgent(seed, **options)
    elif kind == "heuristic" and not arg:
        agent = catalog.heuristic_class(game)(seed=seed, **options)
    elif kind == "ismcts":
        agent = _make_ismcts(spec, arg, game, seed, options)
    elif kind == "ppo" and arg:
        agent = _make_ppo(arg, game, options)
    elif kind == "rllib" and arg:
        require_extra("rllib", f"the agent spec {spec}")
        from training.rllib_agent import load_rllib_agent  # ray and torch only when asked for

        agent = load_rllib_agent(arg, game=game, options=options)
    else:
        raise ValueError(f"unknown agent spec {spec!r}; known specs: {SPECS}")
    agent.spec = spec
    return agent


def _make_ismcts(spec: str, arg: str, game: str, seed: int | None, options: dict) -> Agent:
    budget, *pairs = arg.split(",") if arg else [""]
    if budget and not (budget.isdigit() and int(budget) > 0):
        raise ValueError(f"bad agent spec {spec!r}: N in ismcts:N must be a positive integer")
    try:
        given = dict(parse_key_value(pair) for pair in pairs)
    except ValueError as err:
        raise ValueError(f"bad agent spec {spec!r}: {err}") from None
    options = {**given, **options}
    search = spec_of(game).search
    if budget:
        options["simulations"] = int(budget)
    elif search is not None:
        options.setdefault("simulations", search.simulations)
    prior = options.pop("prior", None)
    if prior is not None:
        options["network"] = _search_network(spec, prior, game)
        options["encode"] = observation_of(game).encode
        if options.get("root", "auto") == "auto":
            options["root"] = "tree"  # the network guides a tree; a race has none
    rollout = options.pop("rollout", "auto")
    if rollout not in ("auto", "random"):
        raise ValueError(f"bad agent spec {spec!r}: rollout must be 'auto' or 'random'")
    if rollout == "auto" and search is not None:
        # The game's own settings, where the spec string leaves them to "auto".
        options["rollout_policy"] = catalog.load(search.policy)
        options.setdefault("twin", search.twin)
        for name in ("cutoff", "root"):
            if options.get(name, "auto") == "auto":
                options[name] = getattr(search, name)
        if options.get("bias") is None:
            options["bias"] = search.bias
    allowed = set(inspect.signature(ISMCTSAgent).parameters) - {"seed"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(
            f"bad agent spec {spec!r}: unknown option {unknown[0]!r}; "
            f"ismcts options: prior, rollout, {', '.join(sorted(allowed))}"
        )
    return ISMCTSAgent(seed=seed, **options)


def _ppo_path(arg: str, game: str) -> str:
    """The checkpoint of ``ppo:ARG``: the game's built-in bot, or a file path."""
    path = arg
    if arg in GAMES:  # a built-in bot; any other argument is a file path
        if arg != game:
            raise ValueError(f"ppo:{arg} is the {arg} bot and cannot play {game}; use ppo:{game}")
        path = str(bots.builtin_bot_path(arg))
        if not Path(path).is_file():
            raise FileNotFoundError(f"the built-in {arg} bot is missing: {path}")
    elif not Path(path).is_file():
        raise FileNotFoundError(f"ppo agent file not found: {path}")
    require_extra("train", f"the agent spec ppo:{arg}")
    return path


def _make_ppo(arg: str, game: str, options: dict) -> Agent:
    path = _ppo_path(arg, game)
    from training.ppo_agent import load_ppo_agent  # torch and sb3 only when a policy is asked for

    return load_ppo_agent(path, game=game, options=options)


def _search_network(spec: str, prior: Any, game: str) -> Any:
    """The search's network of ``prior=ppo:GAME`` or ``prior=ppo:PATH``."""
    kind, _, arg = str(prior).partition(":")
    if kind != "ppo" or not arg:
        raise ValueError(
            f"bad agent spec {spec!r}: prior must be ppo:GAME or ppo:PATH (a MaskablePPO "
            f"checkpoint); got {prior!r}"
        )
    path = _ppo_path(arg, game)
    from training.ppo_agent import load_search_network

    return load_search_network(path, game)
