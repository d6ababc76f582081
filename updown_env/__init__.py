"""Up & Down (2–4 players) as a PettingZoo AEC environment: ``from updown_env import env``.

``bots/ppo.zip`` is the trained bot shipped with the package, the agent spec ``ppo:updown``
(:mod:`training.bots`).
"""

from updown_env.env import env, raw_env
from updown_env.observation import LAYOUT, OBS_SIZE

__all__ = ["LAYOUT", "OBS_SIZE", "env", "raw_env"]
