"""Pieces shared by the tablegym games: option checks, observation layouts, the AEC adapter.

The games themselves live in ``kingup_env``, ``updown_env`` and ``kdk_env``; each has a pure
rules core and uses :class:`tablegym.aec.TableGameEnv` to become a PettingZoo AEC environment.
"""

from tablegym.layout import Layout
from tablegym.options import check_choice, check_int, check_options

__all__ = ["Layout", "check_choice", "check_int", "check_options"]

import tablegym.registration  # noqa: E402, F401  (registers the games with PettingZoo)
