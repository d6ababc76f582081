"""The trained bots the game packages ship: the spec ``ppo:GAME`` plays ``GAME``'s own.

Each game package holds its bot as ``<package>/bots/ppo.zip``, a play-only checkpoint
(:func:`training.checkpoints.export_policy`) installed with the package's other files, so
``ppo:kingup`` works from any directory after ``pip install``. :func:`install_bot` makes a
better checkpoint the shipped one; the registry (:mod:`training.registry`) stays the one
place that turns ``ppo:GAME`` into an agent.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

from tablegym.games import GAMES, check_game
from training.checkpoints import export_policy, read_meta

BOT_FILE = ("bots", "ppo.zip")  # inside the game's package


def builtin_bot_path(game: str) -> Path:
    """The file of ``game``'s built-in PPO bot, wherever its package is installed."""
    check_game(game)
    return Path(str(files(GAMES[game]).joinpath(*BOT_FILE)))


def install_bot(src_checkpoint: str | os.PathLike, game: str) -> Path:
    """Make checkpoint ``src_checkpoint`` (of ``game``) the game's built-in bot, play-only.

    The export is written next to the old bot and renamed over it, so a failed export leaves
    the old bot in place and a reader never sees half a file.
    """
    meta = read_meta(src_checkpoint)
    if meta["game"] != game:
        raise ValueError(f"checkpoint {src_checkpoint} is a {meta['game']} policy, not {game}")
    dst = builtin_bot_path(game)
    dst.parent.mkdir(exist_ok=True)
    return export_policy(src_checkpoint, dst)
