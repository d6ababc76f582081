"""ISMCTS baseline: rollout-policy speed, simulations per second and strength, per game.

Usage (from the repository root)::

    python benchmarks/bench_search.py --games 200 --seed 20261124 --time-limit 0.5
    python benchmarks/bench_search.py --parts speed            # speeds only, seconds
    python benchmarks/bench_search.py --parts strength --game kdk --games 40

Three parts (``--parts``, default all), each per game (``--game``, default all three):

``policy``
    µs per decision of the game's full-state rollout policy (its spec's ``search.policy``),
    timed on every decision of ``--policy-games`` games in which it plays every seat, alone
    and with the readable rules' step; and of its compiled twin (``search.twin``) with the
    engine's step, playing whole games inside numba (50 times as many games). Also the
    policy's strength as a player: its win rate against three heuristics over
    ``--policy-strength-games`` games, its seat rotating.
``speed``
    Simulations per second of the search, three ways: *before*, the search as the baseline
    shipped it (uniform random rollouts, every seat's move in the tree, for the games that
    had no rollout policy: ``rollout=random``; King Up! had its policy: there it is the
    policy on the rules); *rules*, the default spec on the readable rules
    (``backend=rules``); *numba*, the default spec ``ismcts``, which plays on the engine
    (KdK's races its root moves: a simulation is one rollout, and a race stops early once
    only the policy's move is left). Each decides with a budget of ``--speed-sims``
    simulations on the same positions (every decision of the first seat in heuristic games,
    ``--positions`` of them), counted by the agent's ``last_simulations``, in the same
    process, interleaved ``--repeats`` times, so drift on a shared machine hits all alike.
``strength``
    A seat-rotated tournament (``training.evaluate.evaluate``) of ISMCTS at
    ``--time-limit`` seconds per decision against three heuristics, 4 players, ``--games``
    games from ``--seed`` (a seed not used while tuning), one process: the win rate with its
    95% Wilson interval, the fair share and wall seconds per decision, printed after every
    ``--chunk`` games (chunk ``i`` plays on seed ``--seed + i``), so a run cut short still
    reports what it finished; ``--first-chunk K`` starts at chunk ``K``, so two processes
    can share one run (``--games 104`` and ``--games 96 --first-chunk 13`` play the 200
    games of ``--games 200``; add their wins). ``--ppo GAME=PATH`` adds a head-to-head at
    that policy's table size (King Up! 4, Up & Down 2, KdK 3 players, as the notebooks'
    models were trained).

Speeds are in CPU time of this process (``time.process_time``), as is the search's
``time_limit``: on a shared machine wall time would count the others' work. Strength reports
the tournament's wall-clock seconds per decision beside it.
"""

from __future__ import annotations

import argparse
import importlib
import math
import random
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents import catalog  # noqa: E402
from agents.base import GameView  # noqa: E402
from tablegym.games import GAMES, check_game, observation_of, rules_of, spec_of  # noqa: E402
from training.evaluate import evaluate, wilson  # noqa: E402
from training.registry import make_agent  # noqa: E402

PARTS = ("policy", "speed", "strength")
# The options that give the search as the baseline shipped it (King Up! had its policy).
BEFORE = {
    "kingup": {"backend": "rules"},
    "updown": {"rollout": "random"},
    "kdk": {"rollout": "random"},
}
# Speed: the shipped baseline, the policy on the readable rules, the policy's compiled twin.
SPEEDS = {"before": None, "rules": {"backend": "rules"}, "numba": {}}
TWIN_GAMES = 50  # the twin plays this many times --policy-games (it is that much faster)
# The PPO policies in notebooks/models were trained at these table sizes.
PPO_PLAYERS = {"kingup": 4, "updown": 2, "kdk": 3}
SEARCH_OPTIONS = {"num_players": 4}


def legal_mask(rules: Any, legal: Sequence[int]) -> np.ndarray:
    """The action mask of ``legal``, as the environments give it to an agent."""
    mask = np.zeros(rules.NUM_ACTIONS, np.int8)
    mask[list(legal)] = 1
    return mask


def policy_speed(game: str, games: int, seed: int) -> tuple[float, float, int]:
    """Mean µs per decision of the rollout policy playing every seat on the readable rules,
    and of the policy with the rules' step; the decisions."""
    rules = rules_of(game)
    policy = catalog.rollout_policy(game)
    config = rules.make_config(**SEARCH_OPTIONS)
    rng, rand = np.random.default_rng(seed), random.Random(seed)
    spent = stepped = 0.0
    decisions = 0
    for _ in range(games):
        state = rules.initial_state(config, rng)
        while not rules.is_terminal(state):
            start = time.process_time()
            action = policy(state, rand)
            middle = time.process_time()
            state = rules.apply_action(state, action, rng)
            spent += middle - start
            stepped += time.process_time() - start
            decisions += 1
    return 1e6 * spent / decisions, 1e6 * stepped / decisions, decisions


def policy_strength(game: str, games: int, seed: int) -> tuple[float, tuple[float, float]]:
    """Win rate and its 95% interval of the rollout policy as a player against three
    heuristics, 4 players, its seat rotating from game to game (it reads only its own seat's
    view of the state, as the observation-based heuristics do of theirs)."""
    rules, obs = rules_of(game), observation_of(game)
    policy = catalog.rollout_policy(game)
    config = rules.make_config(**SEARCH_OPTIONS)
    rng, rand = np.random.default_rng(seed), random.Random(seed)
    heuristics = [make_agent("heuristic", game, seed=seed + s) for s in range(4)]
    wins = 0.0
    for g in range(games):
        seat = g % 4
        for s, agent in enumerate(heuristics):
            agent.reset(s)
        state = rules.initial_state(config, rng)
        while not rules.is_terminal(state):
            p, legal = state.to_play, rules.legal_actions(state)
            if p == seat:
                action = policy(state, rand)
            else:
                action = heuristics[p].act(obs.encode(state, p), legal_mask(rules, legal))
            state = rules.apply_action(state, action, rng)
        won = rules.winners(state)
        wins += (seat in won) / len(won)
    return wins / games, wilson(wins, games)


def twin_speed(game: str, games: int, seed: int) -> tuple[float, int] | None:
    """Mean µs per decision of the compiled twin of the rollout policy with the engine's step,
    playing every seat of ``games`` whole games inside numba; None without a twin."""
    search = spec_of(game).search
    name = None if search is None else search.twin
    if name is None:
        return None
    twin, rules = importlib.import_module(name), rules_of(game)
    config = rules.make_config(**SEARCH_OPTIONS)
    consts, rng = twin.ENGINE.setup(config), np.random.default_rng(seed)
    rows = [twin.ENGINE.from_state(rules.initial_state(config, rng), config) for _ in range(games)]
    decisions = 0  # counted on copies played from Python with the same generators
    for i, start in enumerate(rows):
        row, rngs = start.copy(), np.array([i + 1], dtype=np.uint64)
        while not twin.is_over(row):
            twin.apply(row, consts, twin.policy(row, consts, rngs), rngs)
            decisions += 1
    twin.advance(row, consts, rngs, -1)  # compile or load the kernel first: the row is over
    begin = time.process_time()
    for i, row in enumerate(rows):
        twin.advance(row, consts, np.array([i + 1], dtype=np.uint64), -1)  # no seat is -1
    return 1e6 * (time.process_time() - begin) / decisions, decisions


def positions(game: str, count: int, seed: int) -> list[tuple[object, object]]:
    """(config, state) of the first ``count`` decisions of seat 0 in heuristic games."""
    rules, obs = rules_of(game), observation_of(game)
    config = rules.make_config(**SEARCH_OPTIONS)
    rng = np.random.default_rng(seed)
    agents = [make_agent("heuristic", game, seed=seed + s) for s in range(4)]
    found: list[tuple[object, object]] = []
    while len(found) < count:
        state = rules.initial_state(config, rng)
        while not rules.is_terminal(state) and len(found) < count:
            legal = rules.legal_actions(state)
            p = state.to_play
            if len(legal) > 1 and p == 0:
                found.append((config, state))
            mask = legal_mask(rules, legal)
            action = agents[p].act(obs.encode(state, p), mask) if len(legal) > 1 else legal[0]
            state = rules.apply_action(state, action, rng)
    return found


def simulations_per_second(game: str, options: dict, sims: int, found: list, seed: int) -> float:
    """Simulations per second of ``ismcts`` with ``options``, ``sims`` at each position."""
    agent = make_agent("ismcts", game, seed=seed, simulations=sims, **options)
    rules, obs = rules_of(game), observation_of(game)

    def decide(config: object, state: Any) -> None:
        mask = legal_mask(rules, rules.legal_actions(state))
        seat = state.to_play
        agent.act(obs.encode(state, seat), mask, GameView(rules, config, state, seat))

    decide(*found[0])  # untimed: loading the compiled kernels takes about 0.4 s the first time
    done, start = 0, time.process_time()
    for config, state in found:
        decide(config, state)
        done += agent.last_simulations
    return done / (time.process_time() - start)


def strength(
    game: str,
    lineup: list[str],
    games: int,
    seed: int,
    players: int,
    chunk: int,
    first_chunk: int = 0,
) -> Iterator[dict]:
    """The first spec's running totals after each chunk of a seat-rotated tournament.

    Chunk ``i`` is ``evaluate(..., games=chunk, seed=seed + i)``, so a run cut short still
    reports every finished chunk, and a longer run repeats the shorter one's games. Starting
    at ``first_chunk`` lets processes share a long run: chunks 0-12 in one and 13-24 in
    another play exactly the 200 games of one process.
    """
    wins = seat_games = 0.0
    think = 0.0
    for i in range(first_chunk, first_chunk + math.ceil(games / chunk)):
        result = evaluate(
            game, lineup, games=chunk, seed=seed + i, options={"num_players": players}
        )
        row = result["agents"][0]
        wins += row["wins"]
        seat_games += row["seat_games"]
        think += row["sec_per_decision"] * row["seat_games"]
        yield {
            "games": int(seat_games),
            "wins": wins,
            "win_rate": wins / seat_games,
            "ci": wilson(wins, int(seat_games)),
            "fair": result["fair_share"],
            "sec_per_decision": think / seat_games,
        }


def main(argv: list[str] | None = None) -> None:
    """Run the chosen parts for the chosen games and print one line per measurement."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--game", action="append", choices=list(GAMES), help="default: all")
    p.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    p.add_argument("--games", type=int, default=200, help="strength: games per game")
    p.add_argument("--seed", type=int, default=20261124, help="strength: fresh, not tuned on")
    p.add_argument("--time-limit", type=float, default=0.5, help="seconds per decision")
    p.add_argument("--policy-games", type=int, default=20)
    p.add_argument("--policy-strength-games", type=int, default=400)
    p.add_argument("--positions", type=int, default=30)
    p.add_argument("--speed-sims", type=int, default=50)
    p.add_argument("--repeats", type=int, default=3, help="speed: interleaved repeats")
    p.add_argument("--chunk", type=int, default=8, help="strength: games per printed line")
    p.add_argument(
        "--first-chunk",
        type=int,
        default=0,
        help="strength: start at this chunk (seed + chunk), to split a run over processes",
    )
    p.add_argument("--ppo", action="append", default=[], help="GAME=PATH head to head")
    p.add_argument(
        "--vs",
        nargs="+",
        choices=("heuristic", "ppo"),
        default=["heuristic", "ppo"],
        help="strength: the opponents to play (ppo only where --ppo names a policy)",
    )
    args = p.parse_args(argv)
    names = ("games", "policy_games", "policy_strength_games", "positions", "speed_sims")
    for name in (*names, "chunk", "repeats"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.first_chunk < 0:
        p.error("--first-chunk must be >= 0")
    if args.time_limit <= 0:
        p.error("--time-limit must be > 0")
    ppo = {}
    for item in args.ppo:
        game, sep, path = item.partition("=")
        if not sep or not Path(path).is_file():
            p.error(f"--ppo takes GAME=PATH to an existing file; got {item!r}")
        ppo[check_game(game)] = path
    games = args.game or list(GAMES)
    search = f"ismcts:1000000,time_limit={args.time_limit}"
    for game in games:
        if "policy" in args.parts:
            us, with_step, n = policy_speed(game, args.policy_games, seed=1)
            print(
                f"{game:7s} rollout policy: {us:7.1f} µs/decision, {with_step:7.1f} with the "
                f"rules' step, over {n} decisions",
                flush=True,
            )
            rate, (lo, hi) = policy_strength(game, args.policy_strength_games, seed=1)
            print(
                f"{game:7s} rollout policy as a player vs 3 heuristics: win rate {rate:.3f} "
                f"[{lo:.3f}, {hi:.3f}] (fair 0.250) in {args.policy_strength_games} games",
                flush=True,
            )
            twin = twin_speed(game, TWIN_GAMES * args.policy_games, seed=1)
            if twin is not None:
                print(
                    f"{game:7s} compiled twin with the engine's step: {twin[0]:7.3f} µs/decision "
                    f"over {twin[1]} decisions ({with_step / twin[0]:.0f}x)",
                    flush=True,
                )
        if "speed" in args.parts:
            found = positions(game, args.positions, seed=2)
            rates = {label: 0.0 for label in SPEEDS}
            for _ in range(args.repeats):  # interleaved: drift on a shared machine hits all
                for label, options in SPEEDS.items():
                    spec = BEFORE[game] if label == "before" else options
                    rates[label] += (
                        simulations_per_second(game, spec, args.speed_sims, found, 3) / args.repeats
                    )
            print(
                f"{game:7s} simulations/s: "
                + "  ".join(f"{label} {rate:7.0f}" for label, rate in rates.items())
                + f"  (numba {rates['numba'] / rates['rules']:.2f}x rules, "
                f"{rates['numba'] / rates['before']:.2f}x before; {args.speed_sims} per "
                f"position, {len(found)} positions, {args.repeats} repeats)",
                flush=True,
            )
        if "strength" in args.parts:
            lineups = []
            if "heuristic" in args.vs:
                lineups.append(("3 heuristics", [search] + ["heuristic"] * 3, 4))
            if game in ppo and "ppo" in args.vs:
                n = PPO_PLAYERS[game]
                lineups.append((f"{n - 1} x ppo", [search] + [f"ppo:{ppo[game]}"] * (n - 1), n))
            for label, lineup, n in lineups:
                totals = strength(
                    game, lineup, args.games, args.seed, n, args.chunk, args.first_chunk
                )
                for r in totals:
                    lo, hi = r["ci"]
                    print(
                        f"{game:7s} ISMCTS ({args.time_limit} s CPU) vs {label}: win rate "
                        f"{r['win_rate']:.3f} [{lo:.3f}, {hi:.3f}] (fair {r['fair']:.3f}), "
                        f"{r['wins']:g} wins in {r['games']} games from seed {args.seed} "
                        f"chunk {args.first_chunk}, "
                        f"{r['sec_per_decision']:.2f} s/decision wall",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
