"""King Up! (3–6 players) as a PettingZoo AEC environment: ``from kingup_env import env``.

The game:

``rules.py``           the rulebook: a pure core over an immutable ``State``
``observation.py``     ``LAYOUT``, ``OBS_SIZE`` and ``encode(state, seat)``: what a seat sees
``render.py``          text and matplotlib pictures of a position
``env.py``             ``raw_env`` and ``env()``: the rules as a PettingZoo AEC environment
``engine.py``          the batched numba twin of the rules, for vectorised training and search
``spec.py``            ``SPEC``: the game's facts as data (sizes, players, search, training)

Players of the game:

``heuristic.py``       the rule-of-thumb player (an agent) and the search's rollout policy
``heuristic_batch.py`` the heuristic's numba twin: its decisions over rows of observations
``rollout.py``         the rollout policy's numba twin on one engine row, for the search
``bots/ppo.zip``       the trained bot, the agent spec ``ppo:kingup`` (:mod:`training.bots`)
"""

from kingup_env.env import env, raw_env
from kingup_env.observation import LAYOUT, OBS_SIZE

__all__ = ["LAYOUT", "OBS_SIZE", "env", "raw_env"]
