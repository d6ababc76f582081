"""King Up! positions shared by the King Up! test modules: hand-built and from random games."""

from __future__ import annotations

import numpy as np

from kingup_env import rules as R
from kingup_env.rules import Phase

N = {name: i for i, name in enumerate(R.NAMES)}


def new_game(n: int = 4, num_rounds: int = 3, seed: int = 0, reward: str = "win") -> R.State:
    """The first position of a game dealt from ``seed``."""
    cfg = R.make_config(num_players=n, num_rounds=num_rounds, reward=reward)
    return R.initial_state(cfg, np.random.default_rng(seed))


def place(name: str, floor: int) -> int:
    """The action placing the candidate called ``name`` on ``floor``."""
    return R.place_action(N[name], floor)


def climb(name: str) -> int:
    """The action moving the candidate called ``name`` up one floor."""
    return R.climb_action(N[name])


def play(state: R.State, *actions: int) -> R.State:
    """``state`` after ``actions`` in turn."""
    for a in actions:
        state = R.apply_action(state, a)
    return state


def climbing_state(n: int = 4, **floors: int) -> R.State:
    """A climbing-phase state with the given candidates placed (the rest on floor 0)."""
    pos = tuple(floors.get(name, 0) for name in R.NAMES)
    return new_game(n)._replace(
        phase=Phase.CLIMB, floors=pos, placements_left=(0,) * n, to_play=0, starter=0
    )


def election(n: int = 4, mover: int = 1, votes: tuple[int, ...] = ()) -> R.State:
    """Seat ``mover`` pushes Fiorello from floor 5 onto the throne; then ``votes`` are cast."""
    s = climbing_state(n, Fiorello=5)._replace(to_play=mover)
    return play(s, climb("Fiorello"), *votes)


def crown_round(state: R.State, mover: int = 0) -> R.State:
    """``state`` with its round ended at once: ``mover`` crowns Alighiero, everyone votes YES."""
    n = state.num_players
    s = state._replace(
        phase=Phase.CLIMB, floors=(5,) + (0,) * 12, placements_left=(0,) * n, to_play=mover
    )
    return play(s, R.climb_action(0), *[R.YES] * n)


def random_positions(n: int, games: int, seed: int, every: int = 7) -> list[R.State]:
    """Every ``every``-th position of random games, plus every vote with votes pending."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(games):
        s = R.initial_state(R.make_config(num_players=n), rng)
        step = 0
        while not R.is_terminal(s):
            if step % every == 0 or (s.phase is Phase.VOTE and s.to_play != s.crown):
                out.append(s)
            legal = R.legal_actions(s)
            s = R.apply_action(s, legal[rng.integers(len(legal))])
            step += 1
        out.append(s)
    return out
