"""Tournaments between agents: win rates with confidence intervals, scores, ranks, ratings.

Usage (from the repository root)::

    python training/evaluate.py --game kingup --agents heuristic random random random \\
        --games 400 --seed 0 --workers 2 --out runs/eval/kingup_heuristic.json
    python training/evaluate.py --game kingup --crosstable heuristic random ismcts:50 \\
        --games 200 --seed 0 --out runs/eval/kingup_crosstable.json
    python training/evaluate.py --game kingup --crosstable ppo:kingup heuristic random \\
        --lineups all --games 400 --seed 0 --out runs/eval/kingup_lineups.json

Python::

    from training.evaluate import crosstable, evaluate
    result = evaluate("kingup", ["heuristic", "random", "random", "random"], games=400, seed=0)
    table = crosstable("kingup", ["heuristic", "random", "ismcts:50"], games=200, seed=0)

How a tournament is played
    One spec per seat (``agents``; see ``training/registry.py``), so the number of specs is the
    number of players (``--num-players`` may repeat it; any other game option goes through
    ``--option KEY=VALUE``). Games are played on the game's ``raw_env`` with action masks;
    every agent gets ``GameView(rules, config, env.game_state, seat)`` as its view.
    Seats rotate: in game ``g`` the agent listed ``i``-th sits in seat ``(i + g) % n``. The
    number of games is rounded up to a multiple of ``n`` so that every agent sits in every
    seat equally often; the ``n`` games of one rotation share one deal seed ("duplicate"
    play: the same cards go round the table, which removes much of the luck of the deal).
    Rotation keeps the order round the table: with three or more different specs, who sits
    after whom is the same in every game of a deal. ``--seating permute`` plays each deal in
    every distinct order of the lineup instead (``n!`` games a deal for ``n`` different specs,
    12 for ``A A B C``; games rounded up to a multiple of that), so every neighbour is as
    common as every other.
    When every seat has the same spec there is nothing to rotate: exactly ``games`` games are
    played, each on its own deal (for studies of how one agent plays against itself).
    Every game's seeds come from ``(seed, g)`` alone, so the results do not depend on the
    number of workers nor on the order in which the games finish.

Batched play (``--batch SLOTS``, ``evaluate(..., batch=SLOTS)``)
    When every spec acts in batch (``random``, ``heuristic``, ``ppo:PATH``, ``rllib:DIR``), the
    games can be played ``SLOTS`` at a time on the game's batched engine
    (:class:`tablegym.vector.VectorGame`) in this one process: each kind of agent decides for
    all the games where it is to move in one call (the heuristics' batched forms, one torch
    forward pass of a PPO policy; RLlib policies one call per row); a 1,000-game King Up!
    tournament takes under a second instead of 9 on two workers (KdK, whose heuristic plans in
    Python, about half the time). Each game starts from the same deal as on ``raw_env``
    (``rules.initial_state`` seeded by the game's deal seed) and draws its later chance from the
    engine's generator seeded by that seed, so duplicate play holds; the games are not those of
    ``raw_env`` move for move, so there are no action logs (``--record``), and an agent's ties
    and random moves come from one generator per spec: the results depend on ``seed`` and
    ``SLOTS``, not on ``--workers`` (unused). Thinking time is each batch call's time shared out
    over its rows.

What is reported, per distinct spec (seats with the same spec are pooled)
    ``win_rate``: wins per game played, a win shared by ``k`` seats counting ``1/k``;
    ``win_rate_ci``: the 95% Wilson score interval of that rate over the seat-games (for
    fractional wins this is the usual approximation); ``mean_score``/``std_score``:
    ``rules.scores`` at the end of the game; ``mean_rank``: 1 is best, seats ordered by
    (winner, score) with ties sharing the mean of their places; ``rating`` (``mu``),
    ``rating_sigma``, ``rating_ordinal`` (mu - 3 sigma): OpenSkill Plackett-Luce over the games
    in order (a spec in several seats of one game gets the mean of its seats' updates);
    ``sec_per_move``: mean thinking time over the spec's moves; ``sec_per_decision``: the
    same over the moves where more than one action was legal (forced moves take no time).

Crosstables (``--crosstable SPEC SPEC ...``, ``crosstable(game, specs, games, seed)``)
    Every ordered pair ``(i, j)`` of the distinct specs plays ``games`` games (rounded up to
    rotations) in the lineup "spec ``i`` in one seat, spec ``j`` in every other seat" at a table
    of ``--num-players`` seats (default: the game's usual count; with 2 players, plain head to
    head, ``(i, j)`` and ``(j, i)`` on different deals). Each lineup is a tournament as above,
    so its deals are duplicate: every deal is played ``n`` times with the seats rotated (with
    ``--seating permute``, in every distinct order of the lineup). The games of pair
    ``(i, j)`` are seeded by ``(seed, i, j)``.
    ``--lineups all`` (``lineups="all"``) plays every table the specs can make instead: every
    multiset of ``n`` specs with at least two distinct ones (``C(k + n - 1, n) - k`` lineups
    for ``k`` specs: 65 for 5 specs at 4 seats), ``games`` games each, all on the deals of
    ``seed``, so lineups differ by their agents and not by their cards; the one-against-rest
    lineups among them fill the matrix (at 2 seats both cells of a pair come from the same
    games). The mixed tables say what the pairs cannot: whether a spec that beats two others
    alone still wins when all three sit together.
    A lineup is played batched (``--batch``, 256 slots unless given) when all its specs act in
    batch, else on ``raw_env`` with ``--workers``. Reported: ``matrix[i][j]``, the win rate of
    spec ``i`` alone against spec ``j`` (None on the diagonal; compare it with ``fair_share`` =
    1/n), ``ci`` its Wilson interval, ``games_played``, ``mean_win_rate`` (a spec's row),
    ``overall`` (each spec's wins per seat-game over every game played, with its interval),
    ``ratings`` (OpenSkill Plackett-Luce over all the games, taken round-robin from the
    lineups: sequential ratings weigh games by their order) and ``lineups``:
    per lineup its ``seats`` (spec indices), ``seed``, ``batch``, ``games``, each spec's
    ``win_rate`` per seat and ``ci`` there (None for a spec not at the table) and its games
    (``results``). ``--out FILE.json`` writes the result and ``FILE.png``, a heat map of the
    matrix centred on the fair share, and with ``--lineups all`` ``FILE_lineups.png``, one row
    per lineup; no ``--record``.

Action logs
    ``evaluate(..., keep_actions=True)`` adds each game's ``actions`` to its record in
    ``results``; ``raw_env.replay(record["seed"], record["actions"], **result["options"])``
    (or stepping through them) rebuilds any position for analysis. Off by default: a KdK game
    is thousands of actions.

Outputs
    ``--out FILE.json`` writes the result as JSON, ``FILE.csv`` (one row per spec) and
    ``FILE.png`` (win rates with their intervals and the fair share ``1/n``).
    ``--record DIR`` writes each game as a game record (:mod:`tablegym.records`; agent specs
    in seat order, so ``tablegym-replay`` can show it) to ``DIR/game_00000.json`` ...;
    ``--record FILE.jsonl`` writes them all to one JSON-lines file instead.
    Every output is checked writable before the first game is played.

Command line
    Every bad input (an unknown spec or option, a bad count, seed or worker number, an output
    that cannot be written) ends with one line ``error: ...`` naming the option, before any
    game is played. Worker processes ignore Ctrl-C (the parent stops them), watch their parent
    and exit when it is gone (even after a ``kill -9``); SIGTERM or Ctrl-C of the parent
    terminates them and ends with one line.

An agent that returns an action its mask forbids stops the tournament with an
:class:`IllegalActionError` naming the spec, game, seed, step and action: never replaced.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import itertools
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

if __package__ in (None, ""):
    # Run as a script: make the repository root importable like under ``python -m``.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.base import GameView  # noqa: E402
from tablegym.cli import OneLineParser, require_extra  # noqa: E402
from tablegym.files import WriteError, write_atomic, write_json_atomic  # noqa: E402
from tablegym.games import GAMES, check_game, env_class, spec_of  # noqa: E402
from tablegym.options import parse_key_value  # noqa: E402
from tablegym.records import check_writable, make_record, write_record, write_record_lines  # noqa: E402
from tablegym.vector import VectorGame, random_actions  # noqa: E402
from training.children import worker_start  # noqa: E402
from training.registry import make_agent  # noqa: E402

Z95 = 1.959963984540054


class IllegalActionError(ValueError):
    """An agent chose an action its mask forbids; the message holds all the details."""


@dataclass(frozen=True)
class Job:
    """One game to play: everything a worker needs, nothing that depends on the pool."""

    game: str
    options: dict[str, Any]
    specs: tuple[str, ...]  # spec per seat
    index: int
    env_seed: int
    agent_seeds: tuple[int, ...]
    keep_actions: bool = False  # add the action log to the record (large for KdK)


# -- playing ------------------------------------------------------------------------------


def play_game(job: Job) -> dict[str, Any]:
    """Play one game on the raw env and return its record (scores, winners, timing)."""
    env = env_class(job.game)(**job.options)
    rules, n = env.rules, len(job.specs)
    agents = [_agent(spec, job, seed) for spec, seed in zip(job.specs, job.agent_seeds)]
    for seat, agent in enumerate(agents):
        agent.reset(seat)
    env.reset(seed=job.env_seed)
    # Per seat: thinking time and count of all moves, and of decisions (>1 legal move).
    clock = {key: [0.0] * n for key in ("think", "moves", "decision_think", "decisions")}
    step = 0
    while not rules.is_terminal(env.game_state):
        _take_turn(env, agents, job, step, clock)
        step += 1
    state = env.game_state
    record = {
        "index": job.index,
        "seed": job.env_seed,
        "specs": list(job.specs),
        "scores": [float(x) for x in rules.scores(state)],
        "winners": [int(s) for s in rules.winners(state)],
        "steps": step,
        **clock,
    }
    if job.keep_actions:
        record["actions"] = list(env.action_log)
    return record


def _take_turn(env: Any, agents: list, job: Job, step: int, clock: dict[str, list]) -> None:
    """Ask the seat to move for an action, check it against the mask, play it."""
    seat = env.agent_name_mapping[env.agent_selection]
    obs = env.observe(env.agent_selection)
    view = GameView(env.rules, env.config, env.game_state, seat)
    t0 = time.perf_counter()
    try:
        action = agents[seat].act(obs["observation"], obs["action_mask"], view)
    except Exception as err:
        err.add_note(f"while {_where(job, seat, step)}")
        raise
    spent = time.perf_counter() - t0
    clock["think"][seat] += spent
    clock["moves"][seat] += 1
    if obs["action_mask"].sum() > 1:
        clock["decision_think"][seat] += spent
        clock["decisions"][seat] += 1
    _check_legal(action, obs["action_mask"], job, seat, step)
    env.step(int(action))


_POLICY_CACHE: dict[tuple, Any] = {}
TRAINED = ("ppo:", "rllib:")  # specs of trained policies: loaded once, checked against options


def _agent(spec: str, job: Job, seed: int) -> Any:
    """A fresh agent per game (seeded by the game), except trained policies, loaded once."""
    if not spec.startswith(TRAINED):
        return make_agent(spec, job.game, seed=seed)
    # Loading a network per game would dominate the run; a policy acts on its inputs only.
    key = (spec, job.game, tuple(sorted(job.options.items())))
    if key not in _POLICY_CACHE:
        _POLICY_CACHE[key] = _make(spec, job.game, job.options, seed)
    return _POLICY_CACHE[key]


def _make(spec: str, game: str, options: dict[str, Any], seed: int | None = None) -> Any:
    """make_agent, giving a trained policy the game options its checkpoint is checked against."""
    if spec.startswith(TRAINED):
        return make_agent(spec, game, seed=seed, **options)
    return make_agent(spec, game, seed=seed)


def _where(job: Job, seat: int, step: int) -> str:
    return (
        f"agent {job.specs[seat]!r} (seat {seat}) played game {job.game!r} "
        f"(game {job.index}, seed {job.env_seed}) at step {step}"
    )


def _check_legal(action: Any, mask: np.ndarray, job: Job, seat: int, step: int) -> None:
    """Raise IllegalActionError unless ``action`` is an int the mask allows."""
    # True is an int to Python but no action id to the env.
    is_id = isinstance(action, (int, np.integer)) and not isinstance(action, bool)
    ok = is_id and 0 <= int(action) < mask.size
    if ok and mask[int(action)]:
        return
    legal = np.flatnonzero(mask).tolist()
    raise IllegalActionError(
        f"illegal action {action!r}: {_where(job, seat, step)}; legal actions: {legal}"
    )


# -- batched play -------------------------------------------------------------------------

CLOCK = ("think", "moves", "decision_think", "decisions")


def batch_policy(spec: str, agent: Any, game: str) -> Any | None:
    """``spec``'s ``act_batch(obs, mask, rng)``: the heuristic's batched form, a vectorised
    random draw, a policy agent's own (PPO, RLlib); None if the agent cannot act in batch."""
    from agents.catalog import batched_heuristic

    if spec == "heuristic":
        return batched_heuristic(game)
    if spec == "random":
        return _random_batch
    return getattr(agent, "act_batch", None)


def batch_policies(agents: dict[str, Any], game: str) -> dict[str, Any] | None:
    """Per spec, its batch policy (``agents``: spec to the agent it makes); None if some spec
    cannot act in batch."""
    policies = {spec: batch_policy(spec, agent, game) for spec, agent in agents.items()}
    return None if None in policies.values() else policies


def _random_batch(obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return random_actions(mask, rng)


class BatchedTournament:
    """The jobs played ``slots`` at a time on a :class:`VectorGame`; see "Batched play"."""

    def __init__(self, jobs: list[Job], policies: dict[str, Any], slots: int, seed: int):
        self.pending = iter(jobs)
        self.names = list(policies)
        self.policies = [policies[name] for name in self.names]
        size = min(slots, len(jobs))
        self.vg = VectorGame(jobs[0].game, size, seed=seed, keep_final=True, **jobs[0].options)
        streams = np.random.SeedSequence([seed, len(jobs), 2]).spawn(len(self.names) + 1)
        self.rngs = [np.random.default_rng(s) for s in streams]
        n = self.vg.num_players
        self.who = np.full((size, n), -1)  # spec number per slot and seat; -1: slot idle
        self.job: list[Job | None] = [None] * size
        self.steps = np.zeros(size, dtype=np.int64)
        self.clock = {key: np.zeros((size, n)) for key in CLOCK}

    def run(self, bar: Any) -> list[dict[str, Any]]:
        """Play every job; records in the order the games end."""
        vg, rows, records = self.vg, np.arange(self.vg.num_games), []
        self.obs, self.mask, self.seat = vg.reset()
        for i in rows:
            self.start(int(i))
        while any(job is not None for job in self.job):
            actions = self.decide(rows)
            self.obs, self.mask, self.seat, _, done = vg.step(actions)
            self.steps += 1
            for i in np.flatnonzero(done).tolist():
                if self.job[i] is not None:
                    records.append(self.record(i))
                    bar.update()
                    self.start(i)
        return records

    def start(self, i: int) -> None:
        """Load the next job's deal into slot i, or leave the slot idle when none is left."""
        job = self.job[i] = next(self.pending, None)
        if job is None:
            self.who[i] = -1
            return
        vg = self.vg
        state = vg.rules.initial_state(vg.config, np.random.default_rng(job.env_seed))
        vg.set_state(i, state, seed=job.env_seed)
        self.who[i] = [self.names.index(spec) for spec in job.specs]
        self.steps[i] = 0
        for counts in self.clock.values():
            counts[i] = 0
        self.obs[i] = vg.observation.encode(state, state.to_play)
        self.mask[i], self.seat[i] = vg.mask[i], state.to_play

    def decide(self, rows: np.ndarray) -> np.ndarray:
        """One batched call per spec over the slots where it is to move; idle slots play at
        random (their games are never recorded)."""
        mask, seat = self.mask, self.seat
        kind = self.who[rows, seat]
        actions = np.zeros(len(rows), dtype=np.int64)
        idle = kind < 0
        if idle.any():
            actions[idle] = random_actions(mask[idle], self.rngs[-1])
        decision = np.count_nonzero(mask, axis=1) > 1
        for k, policy in enumerate(self.policies):
            mine = np.flatnonzero(kind == k)
            if not mine.size:
                continue
            t0 = time.perf_counter()
            try:
                chosen = np.asarray(policy(self.obs[mine], mask[mine], self.rngs[k]))
            except Exception as err:
                i = int(mine[0])
                err.add_note(f"while {_where(self.job[i], int(seat[i]), int(self.steps[i]))}")
                raise
            spent = (time.perf_counter() - t0) / mine.size
            self.check(mine, chosen)
            actions[mine] = chosen
            self.clock["think"][mine, seat[mine]] += spent
            self.clock["moves"][mine, seat[mine]] += 1
            made = mine[decision[mine]]
            self.clock["decision_think"][made, seat[made]] += spent
            self.clock["decisions"][made, seat[made]] += 1
        return actions

    def check(self, rows: np.ndarray, chosen: np.ndarray) -> None:
        """IllegalActionError for the first of ``rows`` whose chosen action its mask forbids."""
        width = self.mask.shape[1]
        ok = (chosen.shape == rows.shape) and chosen.dtype.kind in "iu"
        if ok:
            inside = (chosen >= 0) & (chosen < width)
            legal = inside & self.mask[rows, np.where(inside, chosen, 0)]
            if legal.all():
                return
            at = int(np.argmin(legal))
        else:
            at = 0
        i = int(rows[at])
        _check_legal(
            chosen[at] if ok else chosen, self.mask[i], self.job[i], int(self.seat[i]),
            int(self.steps[i]),
        )  # fmt: skip

    def record(self, i: int) -> dict[str, Any]:
        """The record of the game that just ended in slot i, as :func:`play_game` makes it."""
        job, final, rules = self.job[i], self.vg.final_state(i), self.vg.rules
        return {
            "index": job.index,
            "seed": job.env_seed,
            "specs": list(job.specs),
            "scores": [float(x) for x in rules.scores(final)],
            "winners": [int(s) for s in rules.winners(final)],
            "steps": int(self.steps[i]),
            **{key: [float(x) if key.endswith("think") else int(x) for x in counts[i]]
               for key, counts in self.clock.items()},
        }  # fmt: skip


# -- scheduling ---------------------------------------------------------------------------


def make_jobs(
    game: str,
    agents: Sequence[str],
    games: int,
    seed: int,
    options: dict[str, Any],
    keep_actions: bool = False,
    seating: str = "rotate",
) -> list[Job]:
    """Games rounded up to whole rotations (``seating="rotate"``) or to every distinct seating
    of the lineup (``"permute"``); the deal seed is shared within them.

    When every seat has the same spec, rotating would only replay a deal, so each of exactly
    ``games`` games gets its own deal.
    """
    if seating not in SEATINGS:
        raise ValueError(f"seating must be one of {SEATINGS}; got {seating!r}")
    n = len(agents)
    if len(set(agents)) == 1:
        jobs = []
        for g in range(games):
            deal, *agent_seeds = np.random.SeedSequence([seed, g]).generate_state(n + 1)
            seeds = tuple(int(x) for x in agent_seeds)
            jobs.append(Job(game, options, tuple(agents), g, int(deal), seeds, keep_actions))
        return jobs
    seatings = seatings_of(agents, seating)
    m = len(seatings)
    jobs = []
    for g in range(-(-games // m) * m):
        deal = np.random.SeedSequence([seed, g // m]).generate_state(1)[0]
        agent_seeds = np.random.SeedSequence([seed, g, 1]).generate_state(n)
        seeds = tuple(int(x) for x in agent_seeds)
        jobs.append(Job(game, options, seatings[g % m], g, int(deal), seeds, keep_actions))
    return jobs


SEATINGS = ("rotate", "permute")


def seatings_of(agents: Sequence[str], seating: str) -> list[tuple[str, ...]]:
    """The seatings one deal is played in: the ``n`` rotations of the lineup, or every
    distinct order of it (``n!`` for ``n`` different specs, fewer with repeats)."""
    n = len(agents)
    if seating == "rotate":
        return [tuple(agents[(s - r) % n] for s in range(n)) for r in range(n)]
    return list(dict.fromkeys(itertools.permutations(agents)))


def run_jobs(jobs: list[Job], workers: int, progress: bool) -> list[dict[str, Any]]:
    """Play all jobs, in this process or in ``workers`` processes; records in job order."""
    bar = _progress_bar(len(jobs), progress)
    records = []
    for record in map_in_workers(play_game, jobs, workers):
        records.append(record)
        bar.update()
    bar.close()
    return sorted(records, key=lambda r: r["index"])


def map_in_workers(func: Callable[[Any], Any], items: list[Any], workers: int) -> Iterator[Any]:
    """``func(item)`` for every item, in this process or in ``workers`` spawned processes,
    yielded as each finishes (in any order); Ctrl-C or an error stops the workers at once.
    ``func`` must be importable by the workers (a module-level function)."""
    if workers <= 1:
        for item in items:
            yield func(item)
        return
    # spawn: safe even when the parent has imported torch (fork can deadlock its threads).
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(
        workers, mp_context=ctx, initializer=worker_start, initargs=(os.getpid(),)
    )
    finished = False
    try:
        # The workers start inside the first submits; started with Ctrl-C ignored, they
        # cannot be interrupted while still importing, before worker_start runs. The
        # other submits stay interruptible (thousands of them take a while).
        with _sigint_ignored():
            futures = [pool.submit(func, item) for item in items[:workers]]
        futures += [pool.submit(func, item) for item in items[workers:]]
        for fut in as_completed(futures):
            yield fut.result()
        finished = True
    finally:
        if not finished:
            _stop_workers(pool)
        pool.shutdown(wait=finished, cancel_futures=not finished)


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ignore Ctrl-C in this block (in the main thread; signals belong to it)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Terminate the pool's workers now (a game in progress would otherwise run to its end)."""
    # The executor has no public way to stop running work; _processes maps pid -> Process.
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()


def _progress_bar(total: int, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc="games", unit="game", disable=not enabled)


# -- statistics ---------------------------------------------------------------------------


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion (``successes`` may be fractional)."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # Rounding can put a bound a hair past p at 0 or n successes (a negative error bar).
    return (max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half)))


def game_ranks(scores: Sequence[float], winners: Sequence[int]) -> list[float]:
    """Place per seat (1 best) by (winner, score); tied seats share their mean place."""
    keys = [(s in winners, sc) for s, sc in enumerate(scores)]
    return [1 + sum(o > k for o in keys) + 0.5 * (sum(o == k for o in keys) - 1) for k in keys]


def win_shares(winners: Sequence[int], n: int) -> list[float]:
    """1/k for each of the k winners, 0 for the others."""
    return [1.0 / len(winners) if s in winners else 0.0 for s in range(n)]


def seat_wins(records: list[dict[str, Any]], spec: str) -> list[float]:
    """The win of each seat ``spec`` held in ``records``, in order: 1, 0, or 1/k for a win
    shared by k seats."""
    return [
        win_shares(rec["winners"], len(rec["specs"]))[seat]
        for rec in records
        for seat, s in enumerate(rec["specs"])
        if s == spec
    ]


def ratings(records: list[dict[str, Any]], specs: list[str]) -> dict[str, Any]:
    """OpenSkill Plackett-Luce ratings per spec over the games in order."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    current = {spec: model.rating(name=spec) for spec in specs}
    for rec in records:
        seats = rec["specs"]
        teams = [[model.rating(mu=current[s].mu, sigma=current[s].sigma)] for s in seats]
        new = model.rate(teams, ranks=game_ranks(rec["scores"], rec["winners"]))
        for spec in set(seats):
            mine = [new[i][0] for i, s in enumerate(seats) if s == spec]
            mu = current[spec].mu + float(np.mean([r.mu - current[spec].mu for r in mine]))
            sigma = float(np.mean([r.sigma for r in mine]))
            current[spec] = model.rating(mu=mu, sigma=sigma, name=spec)
    return current


def summarise(records: list[dict[str, Any]], specs: list[str]) -> list[dict[str, Any]]:
    """Per distinct spec, in order of first appearance: the statistics described above."""
    rated = ratings(records, specs)
    out = []
    for spec in specs:
        rows = [(rec, seat) for rec in records for seat, s in enumerate(rec["specs"]) if s == spec]
        n_players = len(records[0]["specs"])
        wins = seat_wins(records, spec)
        scores = [r["scores"][seat] for r, seat in rows]
        ranks = [game_ranks(r["scores"], r["winners"])[seat] for r, seat in rows]
        moves = sum(r["moves"][seat] for r, seat in rows)
        decisions = sum(r["decisions"][seat] for r, seat in rows)
        lo, hi = wilson(sum(wins), len(rows))
        out.append(
            {
                "spec": spec,
                "seat_games": len(rows),
                "games_per_seat": [sum(seat == k for _, seat in rows) for k in range(n_players)],
                "wins": float(sum(wins)),
                "outright_wins": sum(w == 1.0 for w in wins),
                "shared_wins": sum(0.0 < w < 1.0 for w in wins),
                "win_rate": float(np.mean(wins)),
                "win_rate_ci": [lo, hi],
                "mean_score": float(np.mean(scores)),
                "std_score": float(np.std(scores)),
                "mean_rank": float(np.mean(ranks)),
                "rating": rated[spec].mu,
                "rating_sigma": rated[spec].sigma,
                "rating_ordinal": rated[spec].ordinal(),
                "sec_per_move": sum(r["think"][seat] for r, seat in rows) / max(moves, 1),
                "sec_per_decision": sum(r["decision_think"][seat] for r, seat in rows)
                / max(decisions, 1),
            }
        )
    return out


# -- API ----------------------------------------------------------------------------------


def evaluate(
    game: str,
    agents: Sequence[str],
    games: int,
    seed: int,
    workers: int = 1,
    options: dict[str, Any] | None = None,
    progress: bool = False,
    keep_actions: bool = False,
    batch: int = 0,
    *,
    made: dict[str, Any] | None = None,
    seating: str = "rotate",
) -> dict[str, Any]:
    """Play a seat-rotated tournament and return metadata, per-spec statistics and games.

    ``batch`` > 0 plays ``batch`` games at a time on the batched engine (see "Batched play").
    ``seating="permute"`` plays each deal in every distinct order of the lineup, not only its
    rotations (see "How a tournament is played").
    ``made``: agents already built for these options, per spec (a crosstable builds each once;
    loading a trained policy takes about a second).
    """
    options = dict(options or {})
    check_game(game)
    agents = list(agents)
    n = options.setdefault("num_players", len(agents))
    if n != len(agents):
        raise ValueError(f"num_players is {n} but {len(agents)} agents were given: {agents}")
    if games < 1:
        raise ValueError(f"games must be >= 1; got {games}")
    env_class(game)(**options)  # validate the options before starting any worker
    # Fail fast on a bad spec, a missing file, a wrong model.
    given, made = made or {}, {}
    for spec in dict.fromkeys(agents):
        made[spec] = given[spec] if spec in given else _make(spec, game, options)
    specs = list(made)
    policies = _batched(batch, made, game, keep_actions)
    jobs = make_jobs(game, agents, games, seed, options, keep_actions, seating)
    t0 = time.perf_counter()
    if policies is None:
        records = run_jobs(jobs, workers, progress)
    else:
        bar = _progress_bar(len(jobs), progress)
        records = BatchedTournament(jobs, policies, batch, seed).run(bar)
        bar.close()
        records.sort(key=lambda r: r["index"])
    kept = ("index", "seed", "specs", "scores", "winners") + (("actions",) if keep_actions else ())
    return {
        "game": game,
        "options": options,
        "lineup": agents,
        "games": len(jobs),
        "games_requested": games,
        "seed": seed,
        "seating": seating,
        "fair_share": 1.0 / n,
        "agents": summarise(records, specs),
        "results": [{k: r[k] for k in kept} for r in records],
        "run": {
            "workers": 1 if policies else workers,
            "batch": batch if policies else 0,
            "seconds": time.perf_counter() - t0,
        },
    }


def _batched(
    batch: int, made: dict[str, Any], game: str, keep_actions: bool
) -> dict[str, Any] | None:
    """The batch policies for ``batch`` > 0 (ValueError if that cannot be), else None."""
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 0:
        raise ValueError(f"batch must be an integer >= 0 (0: play on raw_env); got {batch!r}")
    if not batch:
        return None
    if keep_actions:
        raise ValueError("batched games keep no action logs: give batch=0 to record games")
    policies = batch_policies(made, game)
    if policies is None:
        unable = next(s for s, agent in made.items() if batch_policy(s, agent, game) is None)
        raise ValueError(
            f"batched play needs agents that act in batch (random, heuristic, ppo:PATH, "
            f"rllib:DIR); {unable!r} does not"
        )
    return policies


# -- crosstables --------------------------------------------------------------------------


LINEUP_MODES = ("pairs", "all")


def crosstable(
    game: str,
    specs: Sequence[str],
    games: int,
    seed: int,
    options: dict[str, Any] | None = None,
    batch: int = 256,
    workers: int = 1,
    progress: bool = False,
    lineups: str = "pairs",
    seating: str = "rotate",
) -> dict[str, Any]:
    """Every ordered pair of specs, one alone against the other in every other seat, or with
    ``lineups="all"`` every table the specs can make; see "Crosstables"."""
    options = dict(options or {})
    check_game(game)
    options.setdefault("num_players", spec_of(game).default_players)
    for name, value, low in (("games", games, 1), ("seed", seed, 0), ("batch", batch, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"crosstable: {name} must be an integer >= {low}; got {value!r}")
    if lineups not in LINEUP_MODES:
        raise ValueError(f"crosstable: lineups must be one of {LINEUP_MODES}; got {lineups!r}")
    if seating not in SEATINGS:
        raise ValueError(f"crosstable: seating must be one of {SEATINGS}; got {seating!r}")
    env_class(game)(**options)  # validate the options before any game
    try:
        made = crosstable_agents(game, specs, options)
    except ValueError as err:
        raise ValueError(f"crosstable: {err}") from None
    names, n = list(made), options["num_players"]
    played = []
    t0 = time.perf_counter()
    for seats, lineup_seed in lineup_plan(len(names), n, seed, lineups):
        lineup = [names[i] for i in seats]
        used = {spec: made[spec] for spec in lineup}
        # Batched where every agent of the lineup can; the others play on the workers.
        slots = batch if batch and batch_policies(used, game) is not None else 0
        result = evaluate(
            game, lineup, games, lineup_seed, workers, options, progress, batch=slots,
            made=used, seating=seating,
        )  # fmt: skip
        rows = {row["spec"]: row for row in result["agents"]}
        played.append(
            {
                "seats": list(seats),
                "seed": lineup_seed,
                "batch": slots,
                "games": result["games"],
                "win_rate": [rows[s]["win_rate"] if s in rows else None for s in names],
                "ci": [rows[s]["win_rate_ci"] if s in rows else None for s in names],
                "results": result["results"],
            }
        )
    matrix, ci, games_played = _pair_cells(played, len(names), lineups)
    # Rated round-robin over the lineups (each one's first game, then each one's second...):
    # sequential ratings weigh games by their order, and lineup order would favour the first.
    rated = ratings([r for _, _, r in sorted(_game_order(played))], names)
    return {
        "game": game,
        "options": options,
        "specs": names,
        "games": games,
        "seed": seed,
        "lineup_mode": lineups,
        "seating": seating,
        "fair_share": 1.0 / n,
        "matrix": matrix,
        "ci": ci,
        "games_played": games_played,
        "mean_win_rate": [float(np.mean([x for x in row if x is not None])) for row in matrix],
        "overall": _overall([r for lineup in played for r in lineup["results"]], names),
        "ratings": [
            {"spec": s, "mu": rated[s].mu, "sigma": rated[s].sigma, "ordinal": rated[s].ordinal()}
            for s in names
        ],
        "lineups": played,
        "run": {"batch": batch, "workers": workers, "seconds": time.perf_counter() - t0},
    }


def lineup_plan(k: int, n: int, seed: int, mode: str) -> list[tuple[tuple[int, ...], int]]:
    """The lineups of a crosstable of ``k`` specs at ``n`` seats, as spec indices per seat,
    each with its tournament seed.

    ``pairs``: spec ``i`` then ``n - 1`` seats of spec ``j`` for every ordered pair, seeded by
    ``(seed, i, j)``. ``all``: every multiset of ``n`` specs with at least two distinct ones,
    in lexicographic order, all seeded by ``seed`` so that every lineup plays the same deals.
    """
    if mode == "pairs":
        return [
            ((i,) + (j,) * (n - 1), int(np.random.SeedSequence([seed, i, j]).generate_state(1)[0]))
            for i in range(k)
            for j in range(k)
            if i != j
        ]
    tables = itertools.combinations_with_replacement(range(k), n)
    return [(seats, seed) for seats in tables if len(set(seats)) > 1]


def _pair_cells(
    played: list[dict[str, Any]], k: int, mode: str
) -> tuple[list[list[Any]], list[list[Any]], list[list[Any]]]:
    """Matrix, intervals and games of "spec ``i`` alone against spec ``j`` in every other
    seat", read from the lineups of one spec alone against one other (None on the diagonal)."""
    matrix: list[list[Any]] = [[None] * k for _ in range(k)]
    ci: list[list[Any]] = [[None] * k for _ in range(k)]
    games: list[list[Any]] = [[None] * k for _ in range(k)]
    for lineup in played:
        seats = lineup["seats"]
        if len(set(seats)) != 2:
            continue
        # A pair's lineup lists its lone spec first; with "all", either spec may be alone.
        for i in [seats[0]] if mode == "pairs" else sorted(set(seats)):
            if seats.count(i) == 1:
                j = next(s for s in seats if s != i)
                matrix[i][j], ci[i][j] = lineup["win_rate"][i], lineup["ci"][i]
                games[i][j] = lineup["games"]
    return matrix, ci, games


def _game_order(played: list[dict[str, Any]]) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(game number in its lineup, lineup number, record) for every game played."""
    for number, lineup in enumerate(played):
        for g, record in enumerate(lineup["results"]):
            yield g, number, record


def _overall(records: list[dict[str, Any]], names: list[str]) -> list[dict[str, Any]]:
    """Per spec: wins per seat-game over every game of the crosstable, with its interval."""
    out = []
    for spec in names:
        wins = seat_wins(records, spec)
        out.append(
            {
                "spec": spec,
                "seat_games": len(wins),
                "win_rate": float(np.mean(wins)),
                "win_rate_ci": list(wilson(sum(wins), len(wins))),
            }
        )
    return out


def crosstable_agents(game: str, specs: Sequence[str], options: dict[str, Any]) -> dict[str, Any]:
    """The distinct specs, in order, each to the agent it makes; ValueError if fewer than 2 or
    one cannot be built."""
    if isinstance(specs, str):  # a lone string would read as its letters
        specs = [specs]
    names = list(dict.fromkeys(specs))
    if len(names) < 2:
        raise ValueError(f"needs at least 2 distinct specs; got {list(specs)}")
    made = {}
    for spec in names:
        try:
            made[spec] = _make(spec, game, options)
        except (ValueError, FileNotFoundError) as err:
            raise ValueError(str(err)) from None
    return made


# -- outputs ------------------------------------------------------------------------------

CSV_FIELDS = (
    "spec", "seat_games", "wins", "win_rate", "win_rate_lo", "win_rate_hi", "mean_score",
    "std_score", "mean_rank", "rating", "rating_sigma", "rating_ordinal", "sec_per_move",
    "sec_per_decision",
)  # fmt: skip


def write_outputs(result: dict[str, Any], out: Path) -> list[Path]:
    """Write ``out`` (JSON), the CSV and the PNG beside it; return the three paths."""
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out, result)
    csv_path, png_path = out.with_suffix(".csv"), out.with_suffix(".png")

    def write_csv(tmp: Path) -> None:
        with tmp.open("w", newline="") as f:
            writer = csv.DictWriter(f, CSV_FIELDS, extrasaction="ignore")
            writer.writeheader()
            for row in result["agents"]:
                lo, hi = row["win_rate_ci"]
                writer.writerow({**row, "win_rate_lo": lo, "win_rate_hi": hi})

    write_atomic(csv_path, write_csv)
    plot(result, png_path)
    return [out, csv_path, png_path]


def plot(result: dict[str, Any], path: Path) -> None:
    """Write :func:`draw_win_rates` of ``result`` to ``path`` (PNG), whole or not at all."""
    figure = draw_win_rates(result)
    write_atomic(path, lambda tmp: figure.savefig(tmp, dpi=100))


def draw_win_rates(result: dict[str, Any], ax: Axes | None = None) -> Figure:
    """Bar chart of win rates with their Wilson intervals and the fair share; its Figure.

    A bare ``matplotlib.figure.Figure`` unless ``ax`` is given: no pyplot, so no backend is
    needed on servers and CI, and a notebook's backend is left alone.
    """
    from matplotlib.figure import Figure

    rows = result["agents"]
    if ax is None:
        ax = Figure(figsize=(1.6 * len(rows) + 2.5, 3.5), layout="tight").subplots()
    rates = [r["win_rate"] for r in rows]
    err = [[r["win_rate"] - r["win_rate_ci"][0] for r in rows],
           [r["win_rate_ci"][1] - r["win_rate"] for r in rows]]  # fmt: skip
    ax.bar(range(len(rows)), rates, yerr=err, capsize=6, color="tab:blue")
    ax.axhline(result["fair_share"], color="grey", linestyle="--", label="fair share")
    ax.set_xticks(range(len(rows)), [r["spec"] for r in rows])
    ax.set_ylim(0, 1)
    ax.set_ylabel("win rate (95% Wilson CI)")
    ax.set_title(f"{result['game']}: {result['games']} games, seed {result['seed']}")
    ax.legend()
    return ax.figure


def table(result: dict[str, Any]) -> str:
    """A plain-text summary, one line per spec."""
    lines = [
        f"{result['game']} {result['options']}: {result['games']} games, seed {result['seed']}",
        f"{'spec':<24}{'win rate':>9}  {'95% CI':<15}{'score':>13}{'rank':>6}"
        f"{'rating':>8}{'s/decision':>11}",
    ]
    for r in result["agents"]:
        lo, hi = r["win_rate_ci"]
        lines.append(
            f"{r['spec']:<24}{r['win_rate']:>9.3f}  [{lo:.3f}, {hi:.3f}] "
            f"{r['mean_score']:>7.2f}±{r['std_score']:<5.2f}{r['mean_rank']:>6.2f}"
            f"{r['rating']:>8.2f}{r['sec_per_decision']:>11.4f}"
        )
    return "\n".join(lines)


def write_crosstable(result: dict[str, Any], out: Path) -> list[Path]:
    """Write a :func:`crosstable` result to ``out`` (JSON) and its heat map beside it (PNG)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out, result)
    paths = [out, out.with_suffix(".png")]
    figures = [draw_crosstable(result)]
    if result["lineup_mode"] == "all":
        paths.append(lineups_png(out))
        figures.append(draw_lineups(result))
    for path, figure in zip(paths[1:], figures):
        write_atomic(path, lambda tmp, figure=figure: figure.savefig(tmp, dpi=100))
    return paths


def lineups_png(out: Path) -> Path:
    """Where ``--lineups all`` writes its per-lineup heat map beside ``out``."""
    return out.with_name(out.stem + "_lineups.png")


def draw_crosstable(result: dict[str, Any], ax: Axes | None = None) -> Figure:
    """Heat map of a crosstable: win rate and Wilson interval per cell, coloured about the fair
    share; its Figure (a bare one, as :func:`draw_win_rates` makes, unless ``ax`` is given)."""
    names = result["specs"]
    k = len(names)
    ax = _heat_axes(ax, (1.5 * k + 3.5, 1.1 * k + 2.2))
    # Grey on the diagonal: a spec does not play itself.
    norm = _heat_map(ax, result["matrix"], result["fair_share"], "win rate")
    for i in range(k):
        for j in range(k):
            if i != j:
                rate, (lo, hi) = result["matrix"][i][j], result["ci"][i][j]
                _cell_text(ax, j, i, f"{rate:.2f}\n[{lo:.2f},{hi:.2f}]", norm(rate), 8)
    labels = [_short(name) for name in names]
    ax.set_xticks(range(k), labels, rotation=30, ha="right")
    ax.set_yticks(range(k), labels)
    ax.set_xlabel("spec in every other seat")
    ax.set_ylabel("spec alone")
    played = max(x for row in result["games_played"] for x in row if x is not None)
    ax.set_title(
        f"{result['game']}, {result['options']['num_players']} players: win rate of the spec "
        f"alone\n{played} games per {_unit(result)}, seed {result['seed']}"
    )
    return ax.figure


def draw_lineups(result: dict[str, Any], ax: Axes | None = None) -> Figure:
    """Heat map of every lineup of a crosstable (one row each) by spec (one column each): the
    spec's win rate per seat in that lineup, with its seat count, coloured about the fair share;
    its Figure (a bare one unless ``ax`` is given)."""
    names, played = result["specs"], result["lineups"]
    k, rows = len(names), len(played)
    ax = _heat_axes(ax, (1.5 * k + 3.5, 0.32 * rows + 2.4))
    rates = [lineup["win_rate"] for lineup in played]
    norm = _heat_map(ax, rates, result["fair_share"], "win rate per seat", aspect="auto")
    for r, lineup in enumerate(played):
        for i, rate in enumerate(lineup["win_rate"]):
            if rate is not None:
                _cell_text(ax, i, r, f"{rate:.2f} ×{lineup['seats'].count(i)}", norm(rate), 7)
    ax.set_xticks(range(k), [_short(name) for name in names], rotation=30, ha="right")
    ax.set_yticks(range(rows), [_lineup_label(lineup["seats"]) for lineup in played], fontsize=7)
    ax.set_xlabel("spec (×seats it holds)")
    ax.set_ylabel("lineup (spec indices)")
    ax.set_title(
        f"{result['game']}, {result['options']['num_players']} players: win rate per seat in "
        f"every lineup\n{played[0]['games']} games per lineup on the same deals, "
        f"seed {result['seed']}"
    )
    return ax.figure


def _heat_axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    """``ax``, or the axes of a new bare Figure of ``size`` inches."""
    from matplotlib.figure import Figure

    return ax if ax is not None else Figure(figsize=size, layout="tight").subplots()


def _heat_map(ax: Axes, rows: list[list[Any]], fair: float, label: str, **kwargs: Any) -> Any:
    """Draw win rates (None: a grey cell) in red-blue about the fair share with a colour bar;
    return the norm, which places a rate on the colour scale."""
    from matplotlib import colormaps
    from matplotlib.colors import TwoSlopeNorm

    values = np.ma.masked_invalid(
        np.array([[np.nan if x is None else x for x in row] for row in rows])
    )
    norm = TwoSlopeNorm(vcenter=fair, vmin=0.0, vmax=1.0)
    cmap = colormaps["RdBu"].with_extremes(bad="0.85")
    image = ax.imshow(values, cmap=cmap, norm=norm, **kwargs)
    ax.figure.colorbar(image, ax=ax, label=f"{label} (fair share {fair:.2f})")
    return norm


def _cell_text(ax: Axes, x: int, y: int, text: str, shade: float, size: int) -> None:
    # White text on the deep ends of the colormap, black in the pale middle.
    colour = "white" if abs(shade - 0.5) > 0.3 else "black"
    ax.text(x, y, text, ha="center", va="center", fontsize=size, color=colour)


def _unit(result: dict[str, Any]) -> str:
    """What ``games`` counts: the games of each ordered pair, or of each lineup."""
    return "lineup" if result["lineup_mode"] == "all" else "pair"


def _lineup_label(seats: Sequence[int]) -> str:
    """``[0, 0, 2]`` as ``0 0 2``."""
    return " ".join(str(i) for i in seats)


def _short(spec: str, width: int = 28) -> str:
    """A spec cut to ``width`` characters from the left (model paths are long; names end them)."""
    return spec if len(spec) <= width else "..." + spec[-(width - 3) :]


def crosstable_table(result: dict[str, Any]) -> str:
    """A plain-text crosstable (row spec alone against the column spec) and the ratings."""
    names, k = result["specs"], len(result["specs"])
    played = max(x for row in result["games_played"] for x in row if x is not None)
    width = max(len(name) for name in names) + 5
    lines = [
        f"{result['game']} {result['options']}: {played} games per {_unit(result)}, "
        f"seed {result['seed']}, seats {result['seating']}d, "
        f"fair share {result['fair_share']:.3f}",
        "win rate of the row spec alone against the column spec in every other seat [95% interval]",
        " " * width + "".join(f"{f'[{j}]':>19}" for j in range(k)) + f"{'mean':>8}",
    ]
    for i, name in enumerate(names):
        label = f"[{i}] {name}"
        cells = "".join(_rate_cell(x, ci) for x, ci in zip(result["matrix"][i], result["ci"][i]))
        lines.append(f"{label:<{width}}{cells}{result['mean_win_rate'][i]:>8.3f}")
    lines.append(
        f"{'ratings (OpenSkill, all games)':<{width}}{'mu':>8}{'sigma':>8}{'ordinal':>9}"
        f"{'win rate, all games':>22}"
    )
    for i, (r, pooled) in enumerate(zip(result["ratings"], result["overall"])):
        label = f"[{i}] {r['spec']}"
        lo, hi = pooled["win_rate_ci"]
        lines.append(
            f"{label:<{width}}{r['mu']:>8.2f}{r['sigma']:>8.2f}{r['ordinal']:>9.2f}"
            f"{pooled['win_rate']:>7.3f} [{lo:.3f}, {hi:.3f}]"
        )
    if result["lineup_mode"] == "all":
        lines += _lineup_lines(result, width)
    return "\n".join(lines)


def _rate_cell(rate: float | None, ci: Sequence[float] | None) -> str:
    """``  0.650 [0.60,0.70]``, 19 characters; a dash for the diagonal."""
    if rate is None or ci is None:
        return f"{'-':>19}"
    return f"{rate:>8.3f} [{ci[0]:.2f},{ci[1]:.2f}]"


def _lineup_lines(result: dict[str, Any], width: int) -> list[str]:
    """Every lineup of ``--lineups all``: each spec's win rate per seat it holds there."""
    k, width = len(result["specs"]), max(width, 23)
    lines = [
        f"every lineup ({result['lineups'][0]['games']} games each, the same deals): "
        "win rate per seat of each spec",
        f"{'lineup (spec indices)':<{width}}" + "".join(f"{f'[{j}]':>8}" for j in range(k)),
    ]
    for lineup in result["lineups"]:
        cells = "".join("       -" if x is None else f"{x:>8.3f}" for x in lineup["win_rate"])
        lines.append(f"{_lineup_label(lineup['seats']):<{width}}{cells}")
    return lines


# -- CLI ----------------------------------------------------------------------------------


def parse_option(text: str) -> tuple[str, Any]:
    """``--option KEY=VALUE`` as :func:`tablegym.options.parse_key_value` reads it."""
    try:
        return parse_key_value(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def build_parser() -> argparse.ArgumentParser:
    """The command line; see the module docstring."""
    p = OneLineParser(prog="tablegym-evaluate", description=__doc__.split("\n\n")[0])
    p.add_argument("--game", required=True, choices=list(GAMES), help="game to play")
    lineup = p.add_mutually_exclusive_group(required=True)
    lineup.add_argument(
        "--agents", nargs="+", metavar="SPEC",
        help="one agent spec per seat: random, heuristic, ismcts:N, ppo:PATH, rllib:DIR",
    )  # fmt: skip
    lineup.add_argument(
        "--crosstable", nargs="+", metavar="SPEC",
        help="instead of --agents, two or more specs: each plays alone in one seat against "
        "each other in every other seat, on duplicate deals; prints the win-rate matrix and "
        "ratings (--games per pair, --batch 256 unless given)",
    )  # fmt: skip
    p.add_argument("--games", type=int, default=100, help="games (rounded up to rotations); "
                   "per pair or lineup with --crosstable")  # fmt: skip
    p.add_argument(
        "--seating", choices=SEATINGS, default="rotate",
        help="each deal is replayed in every rotation of the lineup (default) or in every "
        "distinct order of it (permute: n! games a deal for n different agents)",
    )  # fmt: skip
    p.add_argument(
        "--lineups", choices=LINEUP_MODES,
        help="with --crosstable: 'pairs' (default), each spec alone against each other; 'all', "
        "every table of the specs with at least two of them, on the same deals",
    )  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="seed of the whole tournament")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes")
    p.add_argument(
        "--num-players", type=int,
        help="players; default: number of agents (--crosstable: the game's usual count)",
    )  # fmt: skip
    p.add_argument("--option", action="append", type=parse_option, default=[],
                   metavar="KEY=VALUE", help="game option, repeatable (e.g. level=8)")  # fmt: skip
    p.add_argument("--out", type=Path, help="write FILE.json, FILE.csv and FILE.png "
                   "(--crosstable: FILE.json and its heat map FILE.png; --lineups all: "
                   "FILE_lineups.png too)")  # fmt: skip
    p.add_argument("--record", type=Path, metavar="DIR|FILE.jsonl",
                   help="game records: a file per game in DIR, or one .jsonl file "
                   "(not with --crosstable)")  # fmt: skip
    p.add_argument(
        "--batch", type=int, default=None, metavar="SLOTS",
        help="play SLOTS games at a time on the batched engine (agents random, heuristic, "
        "ppo:PATH, rllib:DIR; no --record); 0: one game per worker on raw_env (default: 0; "
        "with --crosstable 256, the pairs of agents that cannot act in batch on the workers)",
    )  # fmt: skip
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return p


def check_args(args: argparse.Namespace) -> dict[str, Any]:
    """The game options; ValueError naming the option at fault (nothing is played or written).

    Sets ``args.batch`` when not given: 256 with ``--crosstable``, else 0.
    """
    if args.batch is None:
        args.batch = 256 if args.crosstable is not None else 0
    options = dict(args.option)
    if args.num_players is not None:
        options["num_players"] = args.num_players
    if args.crosstable is not None:
        args.lineups = args.lineups or "pairs"
        return _check_crosstable_args(args, options)
    if args.lineups is not None:
        raise ValueError("--lineups: only with --crosstable; --agents plays one lineup")
    n = options.setdefault("num_players", len(args.agents))
    if n != len(args.agents):
        raise ValueError(
            f"--num-players is {n} but --agents gave {len(args.agents)} specs; give one per seat"
        )
    for name, value, low in (("--games", args.games, 1), ("--workers", args.workers, 1),
                             ("--seed", args.seed, 0), ("--batch", args.batch, 0)):  # fmt: skip
        if value < low:
            raise ValueError(f"{name} must be an integer >= {low}; got {value}")
    try:
        env_class(args.game)(**options)
    except ValueError as err:
        raise ValueError(f"--option: {err}") from None
    made = {}
    for spec in dict.fromkeys(args.agents):
        try:
            made[spec] = _make(spec, args.game, options)
        except (ValueError, FileNotFoundError) as err:
            raise ValueError(f"--agents: {err}") from None
    try:
        _batched(args.batch, made, args.game, args.record is not None)
    except ValueError as err:
        raise ValueError(f"--batch: {err}") from None
    if args.out is not None:
        for path in (args.out, args.out.with_suffix(".csv"), args.out.with_suffix(".png")):
            check_writable(path, "--out")
    if args.record is not None:
        if args.record.suffix == ".json":  # a directory called x.json is surely a mistake
            raise ValueError(
                f"--record {args.record}: give a directory (a file per game) or a .jsonl file"
            )
        check_writable(args.record, "--record", directory=args.record.suffix != ".jsonl")
    return options


def _check_crosstable_args(args: argparse.Namespace, options: dict[str, Any]) -> dict[str, Any]:
    """check_args for ``--crosstable``: its game options, or ValueError naming the option."""
    if args.record is not None:
        raise ValueError(
            "--record: a crosstable keeps no game records; record one pairing with --agents"
        )
    for name, value, low in (("--games", args.games, 1), ("--workers", args.workers, 1),
                             ("--seed", args.seed, 0), ("--batch", args.batch, 0)):  # fmt: skip
        if value < low:
            raise ValueError(f"{name} must be an integer >= {low}; got {value}")
    options.setdefault("num_players", spec_of(args.game).default_players)
    try:
        env_class(args.game)(**options)
    except ValueError as err:
        given = args.num_players is not None and str(err).startswith("num_players")
        flag = "--num-players" if given else "--option"
        raise ValueError(f"{flag}: {err}") from None
    try:
        crosstable_agents(args.game, args.crosstable, options)
    except ValueError as err:
        raise ValueError(f"--crosstable: {err}") from None
    if args.out is not None:
        pictures = [args.out.with_suffix(".png")]
        if args.lineups == "all":
            pictures.append(lineups_png(args.out))
        for path in (args.out, *pictures):
            check_writable(path, "--out")
    return options


def write_records(result: dict[str, Any], where: Path) -> Path:
    """Each game of ``result`` (played with ``keep_actions``) as a record; see ``--record``."""
    records = [
        make_record(result["game"], result["options"], r["seed"], r["specs"], r["actions"],
                    r["scores"], r["winners"])
        for r in result["results"]
    ]  # fmt: skip
    if where.suffix == ".jsonl":
        return write_record_lines(where, records)
    for r, record in zip(result["results"], records):
        write_record(where / f"game_{r['index']:05d}.json", record)
    return where


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the CLI; returns the result dict."""
    require_extra("train", "tablegym-evaluate")  # progress bar, ratings, heat map, ppo: specs
    args = build_parser().parse_args(argv)
    options = check_args(args)
    if args.crosstable is not None:
        result = crosstable(
            args.game, args.crosstable, args.games, args.seed, options, batch=args.batch,
            workers=args.workers, progress=not args.no_progress, lineups=args.lineups,
            seating=args.seating,
        )  # fmt: skip
        print(crosstable_table(result))
        if args.out:
            for path in write_crosstable(result, args.out):
                print(f"wrote {path}")
        return result
    result = evaluate(
        args.game, args.agents, args.games, args.seed, args.workers, options,
        progress=not args.no_progress, keep_actions=args.record is not None, batch=args.batch,
        seating=args.seating,
    )  # fmt: skip
    print(table(result))
    if args.record is not None:
        print(
            f"wrote {len(result['results'])} game records to {write_records(result, args.record)}"
        )
        # The records hold the action logs; the result file stays small without them.
        kept = [{k: v for k, v in r.items() if k != "actions"} for r in result["results"]]
        result = {**result, "results": kept}
    if args.out:
        for path in write_outputs(result, args.out):
            print(f"wrote {path}")
    return result


def _terminate(signum: int, frame: Any) -> None:
    # SIGTERM as an exception, so that run_jobs stops its workers on the way out.
    raise SystemExit(128 + signum)


def cli() -> None:
    """Console entry point: bad input ends with one ``error: ...`` line, not a traceback."""
    signal.signal(signal.SIGTERM, _terminate)
    try:
        main()
    except (ValueError, FileNotFoundError) as err:
        sys.exit(f"error: {err}")
    except WriteError as err:  # a full disk after the games: the files before it are whole
        sys.exit(f"error: {err}")
    except KeyboardInterrupt:
        sys.exit("error: interrupted; the tournament was stopped and nothing was written")
    except SystemExit as stop:
        if stop.code == 128 + signal.SIGTERM:
            sys.exit("error: terminated; the tournament was stopped and nothing was written")
        raise


if __name__ == "__main__":
    cli()
