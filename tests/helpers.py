"""Helpers shared by the test modules that run over every game."""

from __future__ import annotations

import contextlib
import random
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from tablegym.games import GAMES, env_class, package_of, spec_of

# Options that keep the slowest game short enough for repeated whole games in tests.
FAST = {"kdk": {"num_rounds": 1, "max_round_steps": 200}}
# Every game at every table size it allows, and the matching test ids.
TABLES = [(game, n) for game in GAMES for n in spec_of(game).player_counts]
TABLE_IDS = [f"{game}-{n}p" for game, n in TABLES]
# A KdK bot whose value head learned the "score" return (k5, kept beside the notebooks).
SCORE_BOT = Path(__file__).parents[1] / "notebooks" / "models" / "kdk_k5.zip"


def make(game: str, n: int, raw: bool = True, **options: Any) -> Any:
    """``raw_env`` (or ``env()``) of ``game`` for ``n`` players, in its fast test options."""
    factory = env_class(game) if raw else package_of(game).env
    return factory(num_players=n, **{**FAST.get(game, {}), **options})


def random_playout(game: Any, seed: int, max_steps: int = 100_000) -> Iterator[Any]:
    """Play a raw env to the end with uniformly random legal actions; yield it before each step."""
    rng = np.random.default_rng(seed)
    game.reset(seed=seed)
    for _ in range(max_steps):
        if game.rules.is_terminal(game.game_state):
            return
        yield game
        legal = np.flatnonzero(game.action_mask())
        game.step(int(legal[rng.integers(legal.size)]))
    raise AssertionError(f"no game end within {max_steps} steps")


def random_position(game: Any, seed: int, steps: int) -> Any:
    """The raw env ``game`` after up to ``steps`` random legal actions from ``reset(seed)``."""
    for step, _ in enumerate(random_playout(game, seed)):
        if step == steps:
            break
    return game


def pick(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """A uniformly random legal action per row of a batch of masks."""
    counts = mask.sum(1)
    k = (rng.random(len(mask)) * counts).astype(np.int64)
    return (mask.cumsum(1) <= k[:, None]).sum(1)


_SPAWNED: list[subprocess.Popen] = []


def spawn(argv: list[str], **kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen`` of a process that the test's teardown ends if the test did not
    (``tests/conftest.py``): a test that fails while it waits must not leave a run going."""
    proc = subprocess.Popen(argv, **kwargs)
    _SPAWNED.append(proc)
    return proc


def end_spawned() -> None:
    """Kill what :func:`spawn` started and is still running, and reap it."""
    while _SPAWNED:
        proc = _SPAWNED.pop()
        if proc.poll() is None:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.communicate(timeout=30)


def interruptible() -> None:
    """``preexec_fn`` for a child that must take Ctrl-C: the test runner's worker may hold
    SIGINT ignored or blocked (left so by a library it ran), and a child inherits both."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


class Fed(random.Random):
    """A ``random.Random`` whose ``random()`` returns the given numbers in turn (to feed a Python
    rollout policy the numbers its compiled twin draws)."""

    def __init__(self, numbers: list[float]):
        super().__init__(0)
        self.numbers = numbers
        self.used = 0

    def random(self) -> float:
        x = self.numbers[self.used]
        self.used += 1
        return x
