"""Agents that play every tablegym game through ``(observation, action_mask)``."""

from agents.random_agent import RandomAgent

__all__ = ["RandomAgent"]
