"""Play and render one game between random agents.

Usage: ``python -m tablegym.play --game kingup --players 4 --seed 0``
"""

from __future__ import annotations

import argparse
import importlib

from agents import RandomAgent
from agents.base import GAMES


def play(game: str, players: int | None, seed: int, quiet: bool = False) -> dict[str, float]:
    """Play one game with random agents; return each agent's summed reward."""
    module = importlib.import_module(GAMES[game])
    options = {} if players is None else {"num_players": players}
    aec = module.raw_env(render_mode="ansi", **options)
    aec.reset(seed=seed)
    agents = {name: RandomAgent(seed + i) for i, name in enumerate(aec.possible_agents)}
    returns = dict.fromkeys(aec.possible_agents, 0.0)
    for name in aec.agent_iter():
        obs, reward, term, trunc, _ = aec.last()
        returns[name] += reward
        aec.step(None if term or trunc else agents[name](obs))
    if not quiet:
        print(aec.render())
        print(f"{len(aec.action_log)} actions; returns: {returns}")
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description="Play one game between random agents.")
    parser.add_argument("--game", choices=sorted(GAMES), default="kingup")
    parser.add_argument("--players", type=int, default=None, help="number of players")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    play(args.game, args.players, args.seed)


if __name__ == "__main__":
    main()
