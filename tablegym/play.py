"""Play and render one game between random players.

Usage: ``python -m tablegym.play --game kingup --players 4 --seed 0``
"""

from __future__ import annotations

import argparse

import numpy as np

from tablegym.games import GAMES, env_class


def play(game: str, players: int | None, seed: int, quiet: bool = False) -> dict[str, float]:
    """Play one game, every move uniform among the legal ones; return each agent's reward sum."""
    options = {} if players is None else {"num_players": players}
    aec = env_class(game)(render_mode="ansi", **options)
    aec.reset(seed=seed)
    # The moves get their own generator, so the deal depends on the seed alone.
    rng = np.random.default_rng(seed + 1)
    returns = dict.fromkeys(aec.possible_agents, 0.0)
    for name in aec.agent_iter():
        obs, reward, term, trunc, _ = aec.last()
        returns[name] += reward
        legal = np.flatnonzero(obs["action_mask"])
        aec.step(None if term or trunc else int(rng.choice(legal)))
    if not quiet:
        print(aec.render())
        print(f"{len(aec.action_log)} actions; returns: {returns}")
    return returns


def main() -> None:
    """Console entry point: ``python -m tablegym.play``."""
    parser = argparse.ArgumentParser(description="Play one game between random players.")
    parser.add_argument("--game", choices=sorted(GAMES), default="kingup")
    parser.add_argument("--players", type=int, default=None, help="number of players")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    play(args.game, args.players, args.seed)


if __name__ == "__main__":
    main()
