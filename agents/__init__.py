"""Agents that play every tablegym game through ``(observation, action_mask)``."""

from agents.base import GAMES, Agent, GameView
from agents.random_agent import RandomAgent

__all__ = ["GAMES", "Agent", "GameView", "RandomAgent"]
