"""The game registry and the contract every game package keeps.

``GAMES`` maps a game's short name (what CLIs and agent specs take) to its package: adding a
game is one line here. Everything that turns a name into code goes through :func:`spec_of` (the
game's facts: table sizes, players, search and training defaults), :func:`rules_of`,
:func:`observation_of` and :func:`env_class`, so an unknown name gets the same one-line error
everywhere.

:class:`GameRules` states, once, what a rules module offers; ``tests/test_contract.py`` checks
each game against it. The observation module offers ``LAYOUT``, ``OBS_SIZE``,
``encode(state, seat)``, ``STATE_LAYOUT`` and ``encode_state(state)`` (:class:`GameObservation`).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

import numpy as np

from tablegym.layout import Layout
from tablegym.spec import GameSpec

GAMES = {"kingup": "kingup_env", "updown": "updown_env", "kdk": "kdk_env"}


@runtime_checkable
class GameRules(Protocol):
    """A pure rules core: an immutable ``State`` and functions over it."""

    NUM_ACTIONS: int
    MAX_PLAYERS: int

    def make_config(self, **options: Any) -> Any:
        """Validated options (``num_players``, ``num_rounds``, ``reward``, ...)."""

    def initial_state(self, config: Any, rng: np.random.Generator) -> Any:
        """A new game; every chance draw comes from ``rng``."""

    def legal_actions(self, state: Any) -> tuple[int, ...]:
        """Sorted action ids open to ``state.to_play``: the single truth of the mask."""

    def apply_action(self, state: Any, action: int, rng: np.random.Generator) -> Any:
        """The next state; ValueError naming the action and the legal set if it is illegal."""

    def is_terminal(self, state: Any) -> bool:
        """Whether the game is over."""

    def rewards(self, before: Any, after: Any, config: Any) -> tuple[float, ...]:
        """Every seat's reward for the step ``before -> after``."""

    def scores(self, state: Any) -> tuple[float, ...]:
        """Every seat's score so far."""

    def winners(self, state: Any) -> tuple[int, ...]:
        """The seats that won a finished game."""

    def describe_action(self, action: int) -> str:
        """The action's name, for logs and humans."""

    def sample_state(self, state: Any, seat: int, rng: np.random.Generator) -> Any:
        """``state`` with everything ``seat`` cannot see resampled consistently."""


@runtime_checkable
class GameObservation(Protocol):
    """An observation encoder: named layouts and the functions that fill them."""

    LAYOUT: Layout
    OBS_SIZE: int
    STATE_LAYOUT: Layout

    def encode(self, state: Any, seat: int) -> np.ndarray:
        """What ``seat`` sees, as a float32 vector of ``LAYOUT``."""

    def encode_state(self, state: Any) -> np.ndarray:
        """The whole game, hidden information included, as a vector of ``STATE_LAYOUT``."""


def check_game(game: str) -> str:
    """``game`` if it is a known game name, else ValueError naming the known games."""
    if game not in GAMES:
        raise ValueError(f"unknown game {game!r}; known games: {', '.join(GAMES)}")
    return game


def spec_of(game: str) -> GameSpec:
    """The game's facts (``<game>_env/spec.py``'s ``SPEC``)."""
    return importlib.import_module(GAMES[check_game(game)] + ".spec").SPEC


def package_of(game: str) -> ModuleType:
    """The game's package (``kingup_env``, ...)."""
    return importlib.import_module(GAMES[check_game(game)])


def rules_of(game: str) -> ModuleType:
    """The game's rules module."""
    return importlib.import_module(GAMES[check_game(game)] + ".rules")


def observation_of(game: str) -> ModuleType:
    """The game's observation module."""
    return importlib.import_module(GAMES[check_game(game)] + ".observation")


def env_class(game: str) -> type:
    """The game's ``raw_env`` class."""
    return package_of(game).raw_env
