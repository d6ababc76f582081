"""KdK – Kampf der Könige (2–5 players), a PettingZoo AEC environment: ``kdk_env.env()``.

The game:

``rules.py``           the rulebook: a pure core over an immutable ``State``
``observation.py``     ``LAYOUT``, ``OBS_SIZE`` and ``encode(state, seat)``: what a seat sees
``render.py``          text and matplotlib pictures of a position
``env.py``             ``raw_env`` and ``env()``: the rules as a PettingZoo AEC environment
``engine.py``          the batched numba twin of the rules, for vectorised training and search
``spec.py``            ``SPEC``: the game's facts as data (sizes, players, search, training)

Players of the game:

``heuristic.py``       the rule-of-thumb player (an agent) and the search's rollout policy
``heuristic_batch.py`` its numba twin over many observations at once, ``act_batch``
``rollout.py``         the rollout policy's numba twin on one engine row, for the search
``bots/ppo.zip``       the trained bot, the agent spec ``ppo:kdk`` (:mod:`training.bots`)
"""

from kdk_env.env import env, raw_env
from kdk_env.observation import LAYOUT, OBS_SIZE

__all__ = ["LAYOUT", "OBS_SIZE", "env", "raw_env"]
