"""Agents that play every tablegym game through ``(observation, action_mask)``."""

from agents.base import GAMES, Agent, GameView
from agents.ismcts import ISMCTSAgent
from agents.random_agent import RandomAgent
from agents.registry import make_agent

__all__ = ["GAMES", "Agent", "GameView", "ISMCTSAgent", "RandomAgent", "make_agent"]
