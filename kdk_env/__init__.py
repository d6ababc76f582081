"""KdK – Kampf der Könige (2–5 players), a PettingZoo AEC environment: ``kdk_env.env()``.

``bots/ppo.zip`` is the trained bot shipped with the package, the agent spec ``ppo:kdk``
(:mod:`training.bots`).
"""

from kdk_env.env import env, raw_env
from kdk_env.observation import LAYOUT, OBS_SIZE

__all__ = ["LAYOUT", "OBS_SIZE", "env", "raw_env"]
