"""The league: whom the learner meets, and the exploiters that hunt its weaknesses.

AlphaStar's league cut to what one process on a small machine runs, on the batched collector
(:mod:`training.collector`: every kind of player decides in one batched call per tick).

Main agent
    The policy ``train.py`` trains. Every seat of every game is drawn from ``--opponent-mix``:
    the policy itself (``self``: all its seats learn), a pool entry (``snapshot``), and the
    fixed anchors, the heuristic and random play, at a share of the seats so that the policy keeps
    beating them. One seat is always the learner's.
Pool
    The starting policy (the heuristic's imitation, kept for good), the ``--pool-size`` newest
    snapshots of the main agent (one every ``--snapshot-every`` samples) and the
    ``--pool-size`` newest exploiters that succeeded. All snapshot seats of one game hold the
    same entry, drawn by prioritised fictitious self-play (PFSP,
    :class:`training.collector.PoolStats`): each entry's recent rate of beating the learner,
    measured from the training games themselves at no extra cost, gives it the weight
    ``max(rate, 0.05) ** --pfsp-power``, so the learner mostly meets what still beats it.
Exploiters (``--exploiters``, each its own :class:`Exploiter`)
    A second PPO learner that starts from the heuristic's imitation, as the probe's learner does,
    and trains only against a frozen copy of the main agent (playing its most likely moves, as it
    plays when deployed) in every other seat: the best-response probe (:mod:`training.exploit`) run
    inside training. It gets ``--exploiter-share`` of the samples (its rollouts run after the main
    agent's) and learns at the run's starting rate, never annealed. Every ``--exploiter-check`` of
    its samples it plays ``--eval-games`` games against its target; when the lower end of the 95%
    interval of its win rate is above the fair share, it has found a weakness: it joins the pool
    (where PFSP makes the main agent meet it often), restarts from the imitation and takes the
    newest main agent as its target. One that has not succeeded after ``--exploiter-budget`` samples
    retargets to the newest main agent and keeps learning. In a fresh run the imitation is the main
    agent's own start (the warm start); a run from ``--init`` makes one for the exploiters
    (``--warm-start`` games, kept as ``exploiter_start.pt``). The probe's learner starts there and
    finds the weaknesses of bots made from ``--init`` (docs/results.md); AlphaStar's exploiters
    restart from their supervised policy likewise.
Selection
    Every ``--eval-every`` samples the main agent plays ``--eval-games`` games against random
    players, heuristic players and the pool (its entries in turn), in one seat against the
    same kind in all others. ``best.zip`` is the policy with the highest selection score, the
    mean over those three of its win rate minus the fair share. The pool grows stronger as
    training goes on, so a later policy must beat a harder pool to be chosen.

A resumed run reloads the pool and each exploiter's weights; PFSP rates start afresh at one
half, and each exploiter retargets to the resumed main agent.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from tablegym.files import write_atomic, write_json_atomic
from training import tags
from training.collector import (
    RunningRate,
    SelfPlayVecEnv,
    evaluate_batched,
    policy_actions,
)


class Exploiter:
    """A learner trained against a frozen copy of the main agent; see the module docstring."""

    def __init__(
        self,
        args: Any,
        tables: list[dict[str, Any]],
        heuristic: Any,
        start: dict[str, Any],
        target: Any,
        index: int,
    ):
        from training.train import new_model

        self.index, self.start = index, start
        self.target: Any = None
        seed = args.seed + 104_729 * (index + 1)
        self.env = SelfPlayVecEnv(
            args.game, tables, max(16, args.num_games // 4), {"fixed": 1.0}, seed, heuristic,
            args.backend, fixed=self.play_target,
        )  # fmt: skip
        # The run's starting learning rate, never annealed: each learn() call is one rollout,
        # and SB3's schedule over a call is at its end, a rate of zero, at every update.
        settings = dataclasses.replace(args, seed=seed, anneal=",".join(args.annealed() - {"lr"}))
        self.model = new_model(settings, self.env, None)
        self.model.policy.load_state_dict(start)
        self.retarget(target)

    def play_target(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> Any:
        """The frozen main agent's most likely moves (a ``BatchPolicy``)."""
        return policy_actions(self.target, obs, mask, deterministic=True)

    def retarget(self, main_policy: Any) -> None:
        """Aim at a frozen copy of ``main_policy`` from now on."""
        self.target = frozen(main_policy)
        self.env.fixed_rate = RunningRate()
        self.samples_on_target = 0
        self.tests: list[dict[str, Any]] = []  # its evaluations against this target

    def restart(self, main_policy: Any) -> None:
        """Back to the starting policy, aimed at ``main_policy``."""
        self.model.policy.load_state_dict(self.start)
        self.retarget(main_policy)

    def learn(self, samples: int) -> int:
        """Train for at least ``samples`` samples; how many it made."""
        before = self.model.num_timesteps
        self.model.learn(samples, reset_num_timesteps=False)
        made = self.model.num_timesteps - before
        if made <= 0:  # the league would wait for its samples forever
            raise RuntimeError(f"exploiter {self.index} made no samples in a rollout")
        self.samples_on_target += made
        return made


def frozen(policy: Any) -> Any:
    """A copy of an SB3 policy that training will not change, in evaluation mode.

    Built anew from the policy's constructor parameters and weights: a policy just updated
    holds tensors of the last backward pass, which ``copy.deepcopy`` refuses.
    """
    copied = type(policy)(**policy._get_constructor_parameters()).to(policy.device)
    copied.load_state_dict(policy.state_dict())
    copied.set_training_mode(False)
    return copied


class League:
    """The exploiters of a run and their schedule; the pool itself lives in the collector."""

    def __init__(self, args: Any, tables: list[dict[str, Any]], run: Path, heuristic: Any):
        self.args, self.tables, self.run, self.heuristic = args, tables, run, heuristic
        self.exploiters: list[Exploiter] = []
        self.owed = 0.0  # exploiter samples due for the main agent's samples so far
        self.last_main = 0
        self.joined = 0
        self.log: list[dict[str, Any]] = []
        self.seconds = 0.0  # spent on the exploiters: their rollouts, updates and tests

    def start(self, main: Any, start_policy: dict[str, Any]) -> None:
        """Make the exploiters (from ``start_policy``, the main agent's first policy, unless
        the run started from ``--init``: see the module docstring), aimed at ``main``."""
        import torch

        self.last_main = main.num_timesteps
        record = self.run / "league.json"
        if record.is_file():
            saved = json.loads(record.read_text())
            self.joined, self.log = saved["joined"], saved["tests"]
        for k in range(self.args.exploiters):
            exploiter = Exploiter(self.args, self.tables, self.heuristic, start_policy,
                                  main.policy, k)  # fmt: skip
            self.exploiters.append(exploiter)
        if self.exploiters and self.args.init:
            imitation = self._imitation(self.exploiters[0].model)
            for exploiter in self.exploiters:
                exploiter.start = imitation
                exploiter.model.policy.load_state_dict(imitation)
        for exploiter in self.exploiters:
            saved = self.run / f"exploiter_{exploiter.index}.pt"
            if saved.is_file():
                exploiter.model.policy.load_state_dict(torch.load(saved, map_location="cpu"))

    def _imitation(self, model: Any) -> dict[str, Any]:
        """The exploiters' start in a run from ``--init``: the heuristic's imitation, made
        once (on ``model``) and kept in the run directory for a resume."""
        import torch

        from training.train import warm_start

        path = self.run / "exploiter_start.pt"
        if path.is_file():
            return torch.load(path, map_location="cpu")
        if warm_start(model, self.args, self.tables, self.heuristic) is None:
            return copy.deepcopy(model.policy.state_dict())  # --warm-start 0: the init policy
        weights = copy.deepcopy(model.policy.state_dict())
        write_atomic(path, lambda tmp: torch.save(weights, tmp))
        return weights

    def advance(self, main: Any, selfplay: SelfPlayVecEnv, logger: Any) -> None:
        """Give the exploiters their share of the samples made since the last call."""
        started = time.monotonic()
        share = self.args.exploiter_share
        self.owed += share / (1 - share) * (main.num_timesteps - self.last_main)
        self.last_main = main.num_timesteps
        n_steps = self.args.n_steps
        while self.exploiters and self.owed >= n_steps * len(self.exploiters):
            for exploiter in self.exploiters:
                self.owed -= exploiter.learn(n_steps)
                self._check(exploiter, main, selfplay, logger)
        self.seconds += time.monotonic() - started

    def _check(self, exploiter: Exploiter, main: Any, selfplay: Any, logger: Any) -> None:
        """Test an exploiter that is due; it joins the pool when it beats its target."""
        from training.evaluate import wilson

        every = self.args.exploiter_check
        if exploiter.samples_on_target < every * (1 + len(exploiter.tests)):
            return
        options = main_table(self.tables, self.args.game)
        result = evaluate_batched(
            exploiter.model.policy, self.args.game, options, exploiter.play_target,
            self.args.eval_games or 200, seed=self.args.seed + 31 * main.num_timesteps + 17,
            backend=self.args.backend,
        )  # fmt: skip
        games, rate = result["games"], result["win_rate"]
        low, high = wilson(rate * games, games)
        fair = 1 / options["num_players"]
        entry = {
            "step": int(main.num_timesteps), "exploiter": exploiter.index,
            "samples_on_target": int(exploiter.samples_on_target), "win_rate": rate,
            "ci_low": low, "ci_high": high, "games": games, "fair": fair, "joined": low > fair,
        }  # fmt: skip
        exploiter.tests.append(entry)
        self.log.append(entry)
        logger.record(f"league/exploiter_{exploiter.index}_win_rate", rate)
        logger.record(tags.PROBE_GAIN, rate - fair)
        # Its rate of beating the target in its own training games, for the curves.
        logger.record(f"league/exploiter_{exploiter.index}_training_rate",
                      exploiter.env.fixed_rate.rate)  # fmt: skip
        if low > fair:
            self._join(exploiter, main, selfplay)
        elif exploiter.samples_on_target >= self.args.exploiter_budget:
            exploiter.retarget(main.policy)
        logger.record("league/exploiters_joined", self.joined)

    def _join(self, exploiter: Exploiter, main: Any, selfplay: Any) -> None:
        """Add the exploiter's policy to the pool, then restart it against the newest main."""
        import torch

        policy = frozen(exploiter.model.policy)
        path = self.run / "pool" / f"expl_{main.num_timesteps:010d}.pt"
        write_atomic(path, lambda tmp: torch.save(policy.state_dict(), tmp))
        selfplay.add_snapshot(policy, self.args.pool_size, role="exploiter")
        for old in sorted(path.parent.glob("expl_*.pt"))[: -self.args.pool_size]:
            old.unlink()
        self.joined += 1
        exploiter.restart(main.policy)

    def save(self) -> None:
        """Each exploiter's weights and the league's log, written atomically."""
        import torch

        for exploiter in self.exploiters:
            weights = exploiter.model.policy.state_dict()
            write_atomic(self.run / f"exploiter_{exploiter.index}.pt",
                         lambda tmp, w=weights: torch.save(w, tmp))  # fmt: skip
        write_json_atomic(self.run / "league.json", {"joined": self.joined, "tests": self.log},
                          indent=1)  # fmt: skip


def main_table(tables: list[dict[str, Any]], game: str) -> dict[str, Any]:
    """The options of the table evaluations play: the game's default size when trained."""
    from tablegym.games import spec_of

    default = [t for t in tables if t["num_players"] == spec_of(game).default_players]
    return (default or tables)[0]


def selection_score(rows: list[dict[str, Any]]) -> float:
    """Mean over the opponents evaluated at one step of win rate minus fair share."""
    return float(np.mean([r["win_rate"] - r["fair"] for r in rows]))
