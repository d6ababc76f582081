"""Targets from search: games played by ISMCTS in every seat, one record per decision.

For expert iteration (``training/exit.py``) the search is the teacher. Every decision with more
than one legal action records what the seat saw (observation, legal mask), what the search
thought of its moves (the root's visit distribution over the legal actions: it sums to one and
is zero elsewhere) and how the game ended for that seat (the ``"win"`` reward: +1 for a win,
shared or not, -1 otherwise; what PPO's value head estimates). The search plays its most
visited move; the determinisations and the others' sampled cards already vary the games.

Games are played on the readable rules core (``rules.initial_state`` seeded per game), the
search's simulations on the game's batched engine (``backend="numba"``, the default).
:func:`generate` splits the games into shards of ``shard_games`` games, plays them in
``workers`` processes (``training.evaluate.map_in_workers``) with a tqdm bar, and writes each
shard atomically to ``DIR/shard_KKKK.npz`` as it finishes: a run stopped midway keeps its
finished shards and a rerun plays only the missing ones. Each shard's games are seeded by
``(seed, shard)`` alone, so the data does not depend on the number of workers.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import GameView
from agents.ismcts import ISMCTSAgent
from tablegym.files import write_atomic
from tablegym.games import observation_of, rules_of
from training.registry import make_agent


@dataclass
class Targets:
    """One row per decision of the search."""

    observations: np.ndarray  # float32 (k, obs_size)
    masks: np.ndarray  # bool (k, num_actions)
    visits: np.ndarray  # float32 (k, num_actions): the root's visit distribution
    outcomes: np.ndarray  # float32 (k,): +1 if the acting seat won the game, else -1

    def __len__(self) -> int:
        return len(self.outcomes)

    @classmethod
    def concat(cls, parts: list[Targets]) -> Targets:
        names = [f.name for f in dataclasses.fields(cls)]
        return cls(*(np.concatenate([getattr(p, name) for p in parts]) for name in names))

    def save(self, path: Path) -> None:
        """Write the rows to ``path`` (``.npz``) whole or not at all."""
        write_atomic(path, lambda tmp: np.savez(tmp, **dataclasses.asdict(self)))

    @classmethod
    def load(cls, path: Path) -> Targets:
        with np.load(path) as data:
            return cls(*(data[f.name] for f in dataclasses.fields(cls)))


def teacher(spec: str, game: str, seed: int) -> ISMCTSAgent:
    """The search behind ``spec``; ValueError unless it is a tree search (a race has no visit
    counts to learn)."""
    agent = make_agent(spec, game, seed=seed)
    if not isinstance(agent, ISMCTSAgent) or agent.root != "tree":
        raise ValueError(f"the teacher must be a tree search (ismcts:...,root=tree); got {spec!r}")
    return agent


def play(game: str, options: dict[str, Any], spec: str, seed: int) -> Targets:
    """One game with the search ``spec`` in every seat; its decisions as targets."""
    rules, encode = rules_of(game), observation_of(game).encode
    config = rules.make_config(**options)
    rng = np.random.default_rng(seed)
    agent = teacher(spec, game, seed)
    state = rules.initial_state(config, rng)
    obs_rows, masks, visits, seats = [], [], [], []
    while not rules.is_terminal(state):
        seat, legal = state.to_play, rules.legal_actions(state)
        action = legal[0]
        if len(legal) > 1:
            mask = np.zeros(rules.NUM_ACTIONS, dtype=bool)
            mask[list(legal)] = True
            obs = encode(state, seat)
            action = agent.act(obs, mask, GameView(rules, config, state, seat))
            obs_rows.append(obs)
            masks.append(mask)
            visits.append(agent.last_visits)
            seats.append(seat)
        state = rules.apply_action(state, action, rng)
    won = set(rules.winners(state))
    outcomes = np.array([1.0 if s in won else -1.0 for s in seats], dtype=np.float32)
    size = observation_of(game).OBS_SIZE
    return Targets(
        np.asarray(obs_rows, dtype=np.float32).reshape(-1, size),
        np.asarray(masks, dtype=bool).reshape(-1, rules.NUM_ACTIONS),
        np.asarray(visits, dtype=np.float32).reshape(-1, rules.NUM_ACTIONS),
        outcomes,
    )


@dataclass(frozen=True)
class Shard:
    """Games of one shard: everything a worker needs."""

    game: str
    options: dict[str, Any]
    spec: str
    seed: int
    index: int
    games: int
    path: str


def play_shard(shard: Shard) -> tuple[int, float]:
    """Play a shard's games and write its file; (games played, CPU seconds)."""
    started = time.process_time()
    seeds = np.random.SeedSequence([shard.seed, shard.index]).generate_state(shard.games)
    parts = [play(shard.game, shard.options, shard.spec, int(s)) for s in seeds]
    Targets.concat(parts).save(Path(shard.path))
    return shard.games, time.process_time() - started


def shard_paths(out: str | Path, games: int, shard_games: int) -> list[Path]:
    """The shard files of ``games`` games in ``out``, ``shard_games`` to a file, in order."""
    return [Path(out) / f"shard_{k:04d}.npz" for k in range(-(-games // shard_games))]


def generate(
    game: str,
    options: dict[str, Any],
    spec: str,
    games: int,
    seed: int,
    out: str | Path,
    workers: int = 2,
    shard_games: int = 2,
    progress: bool = True,
) -> tuple[Targets, dict[str, float]]:
    """Targets of ``games`` games (shards in ``out``; those already there are kept) and
    what it cost: wall seconds, the workers' CPU seconds, games played now."""
    from tqdm import tqdm

    from training.evaluate import map_in_workers

    if games < 1 or shard_games < 1 or workers < 1:
        raise ValueError(
            f"games, shard_games and workers must be integers >= 1; got {games}, "
            f"{shard_games}, {workers}"
        )
    teacher(spec, game, seed)  # a bad spec fails here, before any worker starts
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    counts = [min(shard_games, games - k) for k in range(0, games, shard_games)]
    shards = [
        Shard(game, options, spec, seed, k, n, str(path))
        for k, (n, path) in enumerate(zip(counts, shard_paths(out, games, shard_games)))
    ]
    todo = [s for s in shards if not Path(s.path).is_file()]
    started, cpu = time.monotonic(), 0.0
    bar = tqdm(total=games, initial=games - sum(s.games for s in todo), desc="search games",
               unit="game", disable=not progress)  # fmt: skip
    for played, seconds in map_in_workers(play_shard, todo, workers):
        bar.update(played)
        cpu += seconds
    bar.close()
    data = Targets.concat([Targets.load(Path(s.path)) for s in shards])
    cost = {
        "wall_seconds": round(time.monotonic() - started, 2),
        "cpu_seconds": round(cpu, 2),
        "games_played": sum(s.games for s in todo),
    }
    return data, cost
