"""King Up! (3–6 players) as a PettingZoo AEC environment: ``from kingup_env import env``.

``bots/ppo.zip`` is the trained bot shipped with the package, the agent spec ``ppo:kingup``
(:mod:`training.bots`).
"""

from kingup_env.env import env, raw_env
from kingup_env.observation import LAYOUT, OBS_SIZE

__all__ = ["LAYOUT", "OBS_SIZE", "env", "raw_env"]
