"""A game's facts as data: the shape of the ``SPEC`` in every ``<game>_env/spec.py``.

Everything outside a game's package that depends on the game (the agent catalog, the search's
settings, the trainer's defaults, the CLIs' table sizes) reads it from the game's ``SPEC``
through :func:`tablegym.games.spec_of`, so adding a game edits one line outside its package:
its entry in :data:`tablegym.games.GAMES`. Entry points are ``"module:attribute"`` strings,
imported only when used, so reading a spec imports no player, engine or network.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Default:
    """A default value and the one-line reason for it."""

    value: Any
    why: str


@dataclass(frozen=True)
class SearchSpec:
    """What ISMCTS (``agents/ismcts.py``) may use inside its determinisations."""

    policy: str  # the full-state rollout policy, ``policy(state, random.Random) -> action``
    twin: str | None  # the module of its compiled twin on the engine, or None (rules only)
    simulations: int  # of a bare ``ismcts`` agent spec
    cutoff: str = "score"  # the rollouts' horizon: "score" (next scoring) or "end" (game over)
    root: str = "tree"  # "tree", or "race" the policy's move against the others at the root
    bias: float = 0.0  # progressive bias toward the policy's move at the searcher's nodes


@dataclass(frozen=True)
class TrainingSpec:
    """``training.train``'s per-game defaults, each with the reason for its value."""

    warm_start: Default  # heuristic games imitated before PPO starts
    warm_epochs: Default  # epochs of that imitation
    mix: Default  # the league's kinds of player and their weights
    ent_coef: Default  # PPO's entropy bonus
    anneal: Default  # what falls linearly to zero over the budget
    clip_range: Default  # PPO's clip range
    n_epochs: Default  # PPO's epochs per update
    # The best-response probe's learner (training/exploit.py): its per-game PPO settings, kept
    # apart from the defaults above so that a probe measures the same way when they move.
    probe: Default


@dataclass(frozen=True)
class GameSpec:
    """The static facts of one game (OpenSpiel's ``GameType``/``GameInfo`` in one place)."""

    name: str  # the short name CLIs and agent specs take
    title: str  # for people
    player_counts: tuple[int, ...]  # the table sizes the rules allow
    default_players: int  # the table size CLIs use when none is given
    heuristic: str  # the rule-of-thumb agent class
    batched_heuristic: str | None = None  # ``act_batch(obs, mask, rng) -> actions``
    search: SearchSpec | None = None  # None: the search rolls out uniformly at random
    training: TrainingSpec | None = None  # None: the game has no tuned training defaults
    # A module of per-card features a network may compute from the observation
    # (``SIZE``, ``constants()``, ``feature_blocks``, ``card_features``); None: the game has none.
    features: str | None = None

    def __post_init__(self) -> None:
        if self.default_players not in self.player_counts:
            raise ValueError(
                f"{self.name}: default_players {self.default_players} is not one of "
                f"player_counts {self.player_counts}"
            )
