"""Agents that play every tablegym game through ``(observation, action_mask)``.

Build agents from spec strings with ``training.registry.make_agent``.
"""

from agents.base import Agent, GameView
from agents.ismcts import ISMCTSAgent
from agents.random_agent import RandomAgent

__all__ = ["Agent", "GameView", "ISMCTSAgent", "RandomAgent"]
