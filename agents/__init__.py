"""Agents that play every tablegym game through ``(observation, action_mask)``.

Only what is game-agnostic lives here: the agent interface (``base``, over
:mod:`tablegym.agent`), the random agent, ISMCTS (``ismcts``) and its compiled-rollout driver
(``engine_rollout``), and ``catalog``, which finds each game's own players. A game's heuristic
and its numba twins live in its package (``kingup_env/heuristic.py``, ...). Build agents from
spec strings with ``training.registry.make_agent``.
"""

from agents.base import Agent, GameView
from agents.ismcts import ISMCTSAgent
from agents.random_agent import RandomAgent

__all__ = ["Agent", "GameView", "ISMCTSAgent", "RandomAgent"]
