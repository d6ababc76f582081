"""Collectors on Ray: ``train.py --collectors K`` steps the self-play tables in K Ray actors.

Each collector is a Ray actor on a core of its own (on this machine, or on the nodes of a
cluster joined with ``--ray-address``). It holds the run's tables (``SelfPlayVecEnv``: the
batched engines, the heuristic and random seats, the pool's snapshots) and a copy of the
policy, and fills its share of each rollout with the same ``SelfPlayPPO.collect_rollouts`` as a
one-process run, GAE included. The main process is the learner: it merges the shares into one
rollout, runs sb3-contrib's PPO update, the league's exploiter, evaluation and checkpoints.

* **Policy lag: exactly one update**, as with the learner process (``training/learner.py``):
  the collectors fill rollout *k + 1* with the weights the update on rollout *k* starts from,
  while that update runs. PPO's ratio is taken against the log-probabilities the collectors
  recorded, the correction a one-update lag needs.
* **The pool** lives in the main process (snapshots, exploiters). Each collection sends every
  collector the ids of the pool's entries and the weights of the entries new to it, so all
  collectors deal their games from the same pool, each with its own PFSP statistics.
* A collector that dies ends the run with one line (:class:`CollectorError`) and a
  checkpoint; Ray's processes end with the run (a local Ray is shut down, a cluster's actors
  are killed).
"""

from __future__ import annotations

import copy
import io
import time
from typing import Any

import numpy as np

from training.learner import BUFFER_FIELDS


class CollectorError(RuntimeError):
    """A collector actor died or failed while the run needed it."""


def _policy_bytes(policy: Any) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save(policy.state_dict(), buffer)
    return buffer.getvalue()


def _load_policy(policy: Any, data: bytes) -> None:
    import torch

    policy.load_state_dict(torch.load(io.BytesIO(data), map_location="cpu", weights_only=True))


class Collector:
    """One collector (a Ray actor; a plain object in tests): its tables and a policy copy."""

    def __init__(self, settings: dict[str, Any], n_steps: int, seed: int):
        from stable_baselines3.common.callbacks import BaseCallback

        from agents.catalog import batched_heuristic
        from training.children import one_thread
        from training.collector import (
            PoolStats,
            SeatRolloutBuffer,
            SelfPlayPPO,
            SelfPlayVecEnv,
            fixed_players,
        )
        from training.features import policy_kwargs

        one_thread()
        s = settings
        heuristic = batched_heuristic(s["game"])
        fixed = fixed_players(s["fixed"], s["game"], s["tables"]) if s["fixed"] else None
        self.env = SelfPlayVecEnv(
            s["game"], s["tables"], s["num_games"], s["mix"], seed, heuristic, s["backend"],
            fixed, pfsp=PoolStats(power=s["pfsp_power"]), concentration=s["concentration"],
        )  # fmt: skip
        self.model = SelfPlayPPO(
            "MlpPolicy", self.env, n_steps=n_steps, batch_size=n_steps, gamma=s["gamma"],
            gae_lambda=s["gae_lambda"],
            policy_kwargs=policy_kwargs(s["game"], s["net_arch"], s["features"]),
            rollout_buffer_class=SeatRolloutBuffer, seed=seed, device="cpu",
        )  # fmt: skip
        self.model.policy.set_training_mode(False)
        self.pool_size = s["pool_size"]
        self.env.reset()

        class Quiet(BaseCallback):
            def _on_step(self) -> bool:
                return True

        self.callback = Quiet()
        self.callback.init_callback(self.model)

    def collect(self, weights: bytes, pool: list[tuple[int, str, bytes | None]]) -> dict:
        """Fill a rollout with ``weights`` against ``pool``; its arrays and what it measured."""
        started = time.process_time()
        _load_policy(self.model.policy, weights)
        self._sync_pool(pool)
        env, model = self.env, self.model
        model.collect_rollouts(env, self.callback, model.rollout_buffer, model.n_steps)
        buffer = model.rollout_buffer
        stats = env.game_stats
        result = {name: np.array(getattr(buffer, name)) for name in BUFFER_FIELDS}
        result.update(
            samples=buffer.buffer_size,
            games=(stats.reward, stats.games, copy.deepcopy(stats.wins)),
            decisions=dict(env.decisions),
            seconds=dict(env.seconds),
            seconds_env=env.seconds_env,
            cpu=time.process_time() - started,
        )
        env.game_stats.__init__()
        env.decisions = dict.fromkeys(env.decisions, 0)
        env.seconds = dict.fromkeys(env.seconds, 0.0)
        env.seconds_env = 0.0
        return result

    def _sync_pool(self, pool: list[tuple[int, str, bytes | None]]) -> None:
        """Hold exactly the main process's pool entries, under the same ids."""
        env = self.env
        for key, role, data in pool:
            if key in env.snapshots or data is None:
                continue
            policy = copy.deepcopy(self.model.policy)
            _load_policy(policy, data)
            env._next_id = key  # the main process's id for it
            env.add_snapshot(policy, self.pool_size, role=role)
        wanted = {key for key, _, _ in pool}
        for key in [k for k in env.snapshots if k not in wanted]:
            env.drop_snapshot(key)


class RayCollectors:
    """K :class:`Collector` actors on Ray and the rollout they fill next (see the module doc)."""

    def __init__(self, settings: dict[str, Any], count: int, n_steps: int, seed: int,
                 address: str | None):  # fmt: skip
        import ray

        self.started_ray = False
        if not ray.is_initialized():
            import logging

            quiet = {"logging_level": logging.ERROR, "log_to_driver": False}
            if address is None:
                ray.init(address="local", num_cpus=count + 1, include_dashboard=False, **quiet)
            else:
                ray.init(address=address, **quiet)
            self.started_ray = True
        have = ray.cluster_resources().get("CPU", 0)
        if count > have:
            self.close()
            raise ValueError(
                f"--collectors must be at most the cluster's {have:g} CPUs; got {count}"
            )
        actor = ray.remote(num_cpus=1, max_restarts=0)(Collector)
        shares = [n_steps // count + (k < n_steps % count) for k in range(count)]
        per_games = max(1, settings["num_games"] // count)
        self.actors = [
            actor.remote({**settings, "num_games": per_games}, share, seed + 10_007 * (k + 1))
            for k, share in enumerate(shares)
        ]
        self.sent: list[set[int]] = [set() for _ in self.actors]
        self.pending: list[Any] | None = None
        self.wait_seconds = 0.0  # the main process waiting for a rollout
        self.cpu_seconds = 0.0  # the collectors' own CPU time in the rollouts received

    def collect(self, model: Any, env: Any) -> list[dict]:
        """The rollout in flight (started now if none), and the next one started with the
        current weights before the update on this one runs."""
        import ray

        if self.pending is None:
            self.pending = self._launch(model, env)
        started = time.perf_counter()
        try:
            results = ray.get(self.pending)
        except ray.exceptions.RayActorError:
            self.pending = None
            raise CollectorError("a collector died (its Ray actor ended)") from None
        except ray.exceptions.RayError as err:
            self.pending = None
            raise CollectorError(f"a collector failed: {_first_line(err)}") from None
        self.wait_seconds += time.perf_counter() - started
        self.cpu_seconds += sum(r["cpu"] for r in results)
        self.pending = self._launch(model, env)
        return results

    def _launch(self, model: Any, env: Any) -> list[Any]:
        weights = _policy_bytes(model.policy)
        futures = []
        for k, actor in enumerate(self.actors):
            pool = []
            for key, policy in env.snapshots.items():
                new = key not in self.sent[k]
                pool.append((key, env.snapshot_role[key], _policy_bytes(policy) if new else None))
                self.sent[k].add(key)
            futures.append(actor.collect.remote(weights, pool))
        return futures

    def close(self) -> None:
        """Kill the actors; shut down a Ray this run started."""
        import ray

        for actor in getattr(self, "actors", []):
            ray.kill(actor)
        if self.started_ray:
            ray.shutdown()


def merge(results: list[dict], buffer: Any, env: Any) -> int:
    """Put the collectors' shares into ``buffer`` (full) and their measures into ``env``."""
    at = 0
    for r in results:
        n = r["samples"]
        for name in BUFFER_FIELDS:
            getattr(buffer, name)[at : at + n] = r[name]
        at += n
        reward, games, wins = r["games"]
        stats = env.game_stats
        stats.reward, stats.games = stats.reward + reward, stats.games + games
        for kind, (won, played) in wins.items():
            total = stats.wins.setdefault(kind, [0.0, 0])
            total[0], total[1] = total[0] + won, total[1] + played
        for kind, count in r["decisions"].items():
            env.decisions[kind] += count
            env.seconds[kind] += r["seconds"][kind]
        env.seconds_env += r["seconds_env"]
    buffer.pos, buffer.full, buffer.generator_ready = at, at == buffer.buffer_size, False
    return at


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__
