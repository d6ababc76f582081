"""The tablegym games in PettingZoo's environment registry (PettingZoo 1.27 and later).

Importing this module (``import tablegym`` does) calls :func:`register_envs`; afterwards
``pettingzoo.make("aec", "tablegym/kingup", num_players=5)`` returns
``kingup_env.env(num_players=5)``. An id without a version resolves to the newest one
registered. Older PettingZoo releases have no registry, and there registration does nothing.

The version ``N`` of ``tablegym/<game>-vN`` is the one in the game's
``raw_env.metadata["name"]`` (``"kingup_v0"`` gives ``tablegym/kingup-v0``). It is read from the
source of ``env.py`` rather than by importing the game: the games import ``tablegym``, so
``import kingup_env`` runs this module while ``kingup_env.env`` is only half loaded. The entry
points are ``"module:attr"`` strings, so nothing is imported until ``make`` is called, as for
PettingZoo's own games.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pettingzoo

from tablegym.games import GAMES

NAMESPACE = "tablegym"


def metadata_name(package: str) -> str:
    """``raw_env.metadata["name"]`` of a game package (``"kingup_v0"``), without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"game package {package!r} is not installed")
    path = Path(spec.origin).with_name("env.py")
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if not (isinstance(node, ast.ClassDef) and node.name == "raw_env"):
            continue
        for stmt in node.body:
            if isinstance(stmt, ast.Assign):
                targets, value = stmt.targets, stmt.value
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                targets, value = [stmt.target], stmt.value
            else:
                continue
            if any(isinstance(t, ast.Name) and t.id == "metadata" for t in targets):
                return ast.literal_eval(value)["name"]
    raise LookupError(f"{path}: class raw_env has no literal metadata dict with a 'name'")


def env_id(name: str) -> str:
    """Registry id for a metadata name: ``"kingup_v0"`` -> ``"tablegym/kingup-v0"``."""
    game, sep, version = name.rpartition("_v")
    if not (sep and game and version.isdigit()):
        raise ValueError(f"metadata name must look like '<game>_v<N>'; got {name!r}")
    return f"{NAMESPACE}/{game}-v{version}"


def register_envs() -> list[str]:
    """Register every game's ``env()`` with PettingZoo; the ids, or ``[]`` without a registry."""
    register = getattr(pettingzoo, "register", None)
    registry = getattr(pettingzoo, "aec_registry", None)
    if register is None or registry is None:
        return []
    ids = []
    for package in GAMES.values():
        game_id = env_id(metadata_name(package))
        # Registering twice would only make PettingZoo warn about overriding the same entry.
        if game_id not in registry:
            register("aec", game_id, entry_point=f"{package}.env:env")
        ids.append(game_id)
    return ids


register_envs()
