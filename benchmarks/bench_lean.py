"""Training against a lean loop: ``train.py``'s collector and PPO update beside a CleanRL-style
PPO loop on the same engines, opponents and network, and the torch floor (issue 33, item 4).

Usage::

    python benchmarks/bench_lean.py [--games kingup updown kdk] [--rounds 3] [--num-games 256]

Per game, in one process, torch and numba on one thread as ``train.py`` sets them, with
``train.py``'s defaults for the game (table, ``--num-games``, ``--n-steps``, ``--batch-size``,
epochs, ``--net-arch``, opponent mix and its Dirichlet concentration):

* ``ours``: :class:`training.collector.SelfPlayVecEnv` and ``SelfPlayPPO`` built as
  ``train.py`` builds them (``train.new_model``), one snapshot in the pool, driven one pass of
  ``MaskablePPO.learn``'s loop at a time (rollout, schedules, logs, update); warm start,
  evaluation, checkpoints and the league's exploiter are left out (they are not the loop);
* ``lean``: the same work written plainly: one ``VectorGame``, seats dealt from the same mix,
  the learner's forward pass, the opponents by kind (the same batched heuristic, random
  legal actions, one frozen copy of the net as the snapshot), rewards credited to each seat's
  last decision through an array of stream ends, GAE along the streams a tick at a time, and
  MaskablePPO's update (clipped surrogate, value loss, entropy, per-minibatch advantage
  normalisation, Adam, gradient clipping at 0.5) on the same MLP;
* ``floor``: the torch work alone: one no-grad forward of actor and critic per sample, in
  batches the size of the lean loop's learner rows per tick, plus the update's forward and
  backward passes and Adam steps (epochs x minibatches).

Every figure is samples per second of this process's CPU time (``time.process_time``: others'
load on the shared machine counts for nothing); the collector's own time split is read on the
same clock. One untimed round of each first (numba's cache, torch's warm-up), then ``--rounds``
rounds interleaved (ours, lean, floor, again) so that drift of the machine hits all alike; the
rate is total samples over total seconds. The time split is microseconds per sample: env (the
engine's steps), each opponent kind, inference (the learner's forward), advantages (GAE and the
bootstrap), update, and glue (the rest of the rollout: the loop's own Python and numpy).
"""

from __future__ import annotations

import argparse
import copy
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.catalog import batched_heuristic  # noqa: E402
from tablegym.vector import VectorGame, random_actions  # noqa: E402
from training import collector  # noqa: E402
from training.collector import (  # noqa: E402
    HEURISTIC,
    LEARNER,
    RANDOM,
    SNAPSHOT,
    parse_mix,
)
from training.train import Args, ppo_settings  # noqa: E402

GAMES = ("kingup", "updown", "kdk")
PARTS = ("env", "random", "heuristic", "snapshot", "inference", "glue", "advantages", "update")
CODES = {"self": LEARNER, "random": RANDOM, "heuristic": HEURISTIC, "snapshot": SNAPSHOT}


def clock() -> float:
    return time.process_time()


# The collector times its parts with time.perf_counter; read on the process's CPU clock here,
# its split adds up with the totals measured below (time.monotonic, for budgets, stays).
collector.time = types.SimpleNamespace(perf_counter=clock, monotonic=time.monotonic)


class Ours:
    """train.py's collector and SelfPlayPPO, one rollout and update per :meth:`round`;
    ``module`` is ``training.collector`` or an earlier version of it (:func:`collector_at`)."""

    def __init__(self, args: Args, module: types.ModuleType = collector):
        tables = args.table_options()
        self.env = module.SelfPlayVecEnv(
            args.game, tables, args.num_games, module.parse_mix(args.mix()), args.seed,
            batched_heuristic(args.game), args.backend,
            pfsp=module.PoolStats(power=args.pfsp_power), concentration=args.mix_concentration,
        )  # fmt: skip
        # train.new_model, with this module's classes.
        self.model = module.SelfPlayPPO(
            "MlpPolicy", self.env, **ppo_settings(args),
            policy_kwargs={"net_arch": args.layers()},
            rollout_buffer_class=module.SeatRolloutBuffer, seed=args.seed, device="cpu",
        )  # fmt: skip
        collector.quiet_logger(self.model)  # as new_model: no SB3-<time> folder in /tmp
        snapshot = copy.deepcopy(self.model.policy)
        snapshot.set_training_mode(False)
        self.env.add_snapshot(snapshot, args.pool_size)  # as the callback does at the start
        # model.learn's own set-up (the env's reset), once, as train.py calls it once.
        self.total, self.callback = self.model._setup_learn(1 << 62, None, True, "ppo", False)
        self.callback.on_training_start(locals(), globals())
        self.iteration = 0

    def parts(self) -> dict[str, float]:
        env, model = self.env, self.model
        return {
            "env": env.seconds_env,
            **{k: env.seconds[k] for k in ("random", "heuristic", "snapshot")},
            **model.seconds,
        }

    def round(self) -> tuple[float, int, dict[str, float]]:
        """CPU seconds, samples and the split of one rollout and its update."""
        model, before, started = self.model, self.parts(), clock()
        steps = model.num_timesteps
        # One pass of the loop of MaskablePPO.learn: a rollout, the schedules, logs, update.
        model.collect_rollouts(self.env, self.callback, model.rollout_buffer, model.n_steps)
        self.iteration += 1
        model._update_current_progress_remaining(model.num_timesteps, self.total)
        model.dump_logs(self.iteration)
        model.train()
        took = clock() - started
        split = {k: v - before[k] for k, v in self.parts().items()}
        split["glue"] = took - sum(split.values())
        return took, self.model.num_timesteps - steps, split


class LeanNet(nn.Module):
    """SB3's MlpPolicy network for ``net_arch=[h, ...]``: separate actor and critic MLPs with
    tanh, orthogonal initialisation (gains sqrt 2, 0.01 for the logits, 1 for the value)."""

    def __init__(self, obs_size: int, num_actions: int, layers: list[int]):
        super().__init__()
        self.actor = self._mlp(obs_size, layers, num_actions, 0.01)
        self.critic = self._mlp(obs_size, layers, 1, 1.0)

    @staticmethod
    def _mlp(size: int, layers: list[int], out: int, gain: float) -> nn.Sequential:
        parts: list[nn.Module] = []
        for width in layers:
            parts += [nn.Linear(size, width), nn.Tanh()]
            size = width
        parts.append(nn.Linear(size, out))
        for i, layer in enumerate(p for p in parts if isinstance(p, nn.Linear)):
            nn.init.orthogonal_(layer.weight, gain if i == len(layers) else np.sqrt(2))
            nn.init.zeros_(layer.bias)
        return nn.Sequential(*parts)


def masked(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return logits.masked_fill(~mask, -1e8)  # sb3-contrib's MaskableCategorical fill


class Lean:
    """The lean loop: collection on one VectorGame and MaskablePPO's update, written plainly."""

    def __init__(self, args: Args):
        game, (table,) = args.game, args.table_options()
        self.vg = VectorGame(game, args.num_games, seed=args.seed, backend=args.backend, **table)
        self.slots, self.players = args.num_games, self.vg.num_players
        self.heuristic = batched_heuristic(game)
        mix = parse_mix(args.mix())
        self.names = [k for k, w in mix.items() if w > 0]
        self.weights = np.array([mix[k] for k in self.names])
        self.codes = np.array([CODES[k] for k in self.names])
        self.alpha = args.mix_concentration
        self.net = LeanNet(self.vg.obs_size, self.vg.num_actions, args.layers())
        self.snapshot = copy.deepcopy(self.net)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=args.learning_rate, eps=1e-5)
        self.n, self.batch, self.epochs = args.n_steps, args.batch_size, args.epochs()
        self.gamma, self.lam = args.gamma, args.gae_lambda
        self.clip, self.ent = args.clip(), args.entropy()
        self.rng = np.random.default_rng(args.seed)
        self.kinds = np.zeros((self.slots, self.players), dtype=np.int64)
        self.obs, self.mask, self.seat = self.vg.reset()
        self.deal(np.arange(self.slots))
        n, size, width = self.n, self.vg.obs_size, self.vg.num_actions
        self.b_obs = np.zeros((n, size), np.float32)
        self.b_mask = np.zeros((n, width), bool)
        self.b_act = np.zeros(n, np.int64)
        self.b_logp, self.b_value = np.zeros(n, np.float32), np.zeros(n, np.float32)
        self.b_reward, self.b_boot = np.zeros(n, np.float32), np.zeros(n, np.float32)
        self.b_next, self.b_term = np.zeros(n, np.int64), np.zeros(n, bool)
        self.rows_per_tick: list[int] = []

    def deal(self, slots: np.ndarray) -> None:
        """Seats of new games: per game Dirichlet(alpha * mix) weights, one learner seat."""
        k = slots.size
        p = np.broadcast_to(self.weights, (k, len(self.names)))
        if self.alpha > 0 and len(self.names) > 1:
            p = self.rng.dirichlet(self.alpha * self.weights, size=k)
        cum = np.cumsum(p / p.sum(axis=1, keepdims=True), axis=1)
        drawn = (self.rng.random((k, self.players, 1)) > cum[:, None, :-1]).sum(axis=2)
        self.kinds[slots] = self.codes[drawn]
        self.kinds[slots, self.rng.integers(self.players, size=k)] = LEARNER

    def round(self) -> tuple[float, int, dict[str, float]]:
        split = dict.fromkeys(PARTS, 0.0)
        started = clock()
        self.collect(split)
        t = clock()
        self.update()
        split["update"] = clock() - t
        took = clock() - started
        split["glue"] = took - sum(split.values())
        return took, self.n, split

    def collect(self, split: dict[str, float]) -> None:
        size, players, n = self.slots, self.players, self.n
        last = np.full(size * players, -1, dtype=np.int64)  # each stream's newest sample
        self.b_next[:], self.b_term[:], self.b_reward[:], self.b_boot[:] = -1, False, 0, 0
        chunks, pos, slots = [], 0, np.arange(size)
        while pos < n:
            codes = self.kinds[slots, self.seat]
            actions = np.zeros(size, dtype=np.int64)
            rows = np.flatnonzero(codes == LEARNER)
            if rows.size:
                t = clock()
                with torch.no_grad():
                    obs = torch.from_numpy(self.obs[rows])
                    logits = masked(self.net.actor(obs), torch.from_numpy(self.mask[rows]))
                    values = self.net.critic(obs).flatten().numpy()
                    logp = torch.log_softmax(logits, 1)
                    uniform = torch.rand_like(logits).clamp_(min=torch.finfo(torch.float32).tiny)
                    gumbel = -torch.log(-torch.log(uniform))
                    act = (logits + gumbel).argmax(1)
                    logp = logp.gather(1, act[:, None]).flatten().numpy()
                act = act.numpy()
                split["inference"] += clock() - t
                actions[rows] = act
                self.rows_per_tick.append(rows.size)
                streams = rows * players + self.seat[rows]
                k = min(rows.size, n - pos)
                at = np.arange(pos, pos + k)
                self.b_obs[at], self.b_mask[at] = self.obs[rows[:k]], self.mask[rows[:k]]
                self.b_act[at], self.b_logp[at], self.b_value[at] = act[:k], logp[:k], values[:k]
                prev = last[streams[:k]]
                self.b_next[prev[prev >= 0]] = at[prev >= 0]
                last[streams[:k]] = at
                cut = streams[k:]  # decided, not stored: the stream ends valued here
                ends = last[cut]
                self.b_boot[ends[ends >= 0]] = values[k:][ends >= 0]
                last[cut] = -1
                chunks.append((pos, pos + k))
                pos += k
            for code, part in ((HEURISTIC, "heuristic"), (RANDOM, "random")):
                sel = np.flatnonzero(codes == code)
                if sel.size:
                    t = clock()
                    play = self.heuristic if code == HEURISTIC else None
                    mask = self.mask[sel]
                    actions[sel] = (
                        play(self.obs[sel], mask, self.rng)
                        if play
                        else random_actions(mask, self.rng)
                    )
                    split[part] += clock() - t
            sel = np.flatnonzero(codes == SNAPSHOT)
            if sel.size:
                t = clock()
                with torch.no_grad():
                    logits = self.snapshot.actor(torch.from_numpy(self.obs[sel])).numpy()
                logits = np.where(self.mask[sel], logits, -np.inf)
                actions[sel] = (logits + self.rng.gumbel(size=logits.shape)).argmax(1)
                split["snapshot"] += clock() - t
            t = clock()
            self.obs, self.mask, self.seat, rewards, done = self.vg.step(actions)
            split["env"] += clock() - t
            got, seats = np.nonzero(rewards)
            ends = last[got * players + seats]
            np.add.at(self.b_reward, ends[ends >= 0], rewards[got, seats][ends >= 0])
            ended = np.flatnonzero(done)
            if ended.size:
                streams = (ended[:, None] * players + np.arange(players)).ravel()
                ends = last[streams]
                self.b_term[ends[ends >= 0]] = True
                last[streams] = -1
                self.deal(ended)
        t = clock()
        self.bootstrap(last)
        self.gae(chunks)
        split["advantages"] += clock() - t

    def bootstrap(self, last: np.ndarray) -> None:
        """Value the open streams from what their seats see now."""
        streams = np.flatnonzero(last >= 0)
        slots, seats = np.divmod(streams, self.players)
        obs = np.empty((streams.size, self.vg.obs_size), np.float32)
        for q in np.unique(seats).tolist():
            pick = seats == q
            obs[pick] = self.vg.observe(np.full(self.slots, q))[slots[pick]]
        with torch.no_grad():
            self.b_boot[last[streams]] = self.net.critic(torch.from_numpy(obs)).flatten().numpy()

    def gae(self, chunks: list[tuple[int, int]]) -> None:
        """GAE along each stream: a tick's samples at once, the last tick first (a sample's
        successor in its stream comes at a later tick)."""
        g, lam = self.gamma, self.lam
        v, r, nxt = self.b_value, self.b_reward, self.b_next
        adv = np.zeros(self.n, np.float32)
        for a, b in reversed(chunks):
            j = nxt[a:b]
            has = j >= 0
            later = np.where(has, g * v[j] + g * lam * adv[j], 0)
            end = np.where(self.b_term[a:b], 0, g * self.b_boot[a:b])
            adv[a:b] = r[a:b] - v[a:b] + np.where(has, later, end)
        self.adv, self.ret = adv, adv + v

    def update(self) -> None:
        obs, mask = torch.from_numpy(self.b_obs), torch.from_numpy(self.b_mask)
        act, old = torch.from_numpy(self.b_act), torch.from_numpy(self.b_logp)
        adv, ret = torch.from_numpy(self.adv), torch.from_numpy(self.ret)
        for _ in range(self.epochs):
            for idx in torch.randperm(self.n).split(self.batch):
                logits = masked(self.net.actor(obs[idx]), mask[idx])
                logp_all = torch.log_softmax(logits, 1)
                logp = logp_all.gather(1, act[idx, None]).flatten()
                entropy = -(logp_all.exp() * logp_all).sum(1)
                a = adv[idx]
                a = (a - a.mean()) / (a.std() + 1e-8)
                ratio = torch.exp(logp - old[idx])
                clipped = torch.clamp(ratio, 1 - self.clip, 1 + self.clip)
                policy_loss = -torch.min(a * ratio, a * clipped).mean()
                value_loss = nn.functional.mse_loss(ret[idx], self.net.critic(obs[idx]).flatten())
                loss = policy_loss - self.ent * entropy.mean() + 0.5 * value_loss
                self.opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(self.net.parameters(), 0.5)
                self.opt.step()
        self.snapshot.load_state_dict(self.net.state_dict())  # a recent frozen opponent


class Floor:
    """The torch work of one rollout and update, nothing else."""

    def __init__(self, args: Args, lean: Lean):
        self.lean, self.n = lean, args.n_steps
        self.net = LeanNet(lean.vg.obs_size, lean.vg.num_actions, args.layers())
        self.opt = torch.optim.Adam(self.net.parameters(), lr=args.learning_rate, eps=1e-5)
        self.batch, self.epochs = args.batch_size, args.epochs()
        rng = np.random.default_rng(0)
        self.obs = torch.from_numpy(rng.random((self.n, lean.vg.obs_size), dtype=np.float32))
        self.target = torch.from_numpy(rng.random(self.n, dtype=np.float32))

    def round(self) -> tuple[float, int, dict[str, float]]:
        tick = max(1, round(float(np.mean(self.lean.rows_per_tick or [64]))))
        started = clock()
        with torch.no_grad():
            for rows in self.obs.split(tick):
                self.net.actor(rows), self.net.critic(rows)
        middle = clock()
        for _ in range(self.epochs):
            for idx in torch.randperm(self.n).split(self.batch):
                x = self.obs[idx]
                loss = self.net.actor(x).logsumexp(1).mean()
                loss = loss + (self.net.critic(x).flatten() - self.target[idx]).pow(2).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
        end = clock()
        split = dict.fromkeys(PARTS, 0.0)
        split["inference"], split["update"] = middle - started, end - middle
        return end - started, self.n, split


def collector_at(commit: str) -> types.ModuleType:
    """``training/collector.py`` as it was at ``commit``, imported beside today's."""
    source = subprocess.run(
        ["git", "show", f"{commit}:training/collector.py"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    module = sys.modules[f"collector_{commit}"] = types.ModuleType(f"collector_{commit}")
    exec(compile(source, f"{commit}:training/collector.py", "exec"), module.__dict__)
    module.time = collector.time  # the same clock
    return module


def measure(
    game: str, rounds: int, num_games: int, before: types.ModuleType | None
) -> dict[str, dict]:
    args = Args(game=game, num_games=num_games)
    lean = Lean(args)
    runners = {"ours": Ours(args), "lean": lean, "floor": Floor(args, lean)}
    if before is not None:
        runners = {"before": Ours(args, before), **runners}
    for runner in runners.values():
        runner.round()  # untimed: compilation, caches, torch's first calls
    totals = {who: {"seconds": 0.0, "samples": 0, "split": dict.fromkeys(PARTS, 0.0)}
              for who in runners}  # fmt: skip
    for r in range(rounds):
        for who, runner in runners.items():
            took, samples, split = runner.round()
            total = totals[who]
            total["seconds"] += took
            total["samples"] += samples
            for part, s in split.items():
                total["split"][part] += s
            print(f"  {game} round {r} {who:5}: {samples / took:8,.0f} samples/CPU-s", flush=True)
    env = runners["ours"].env
    totals["ours"]["us_per_decision"] = {
        k: 1e6 * env.seconds[k] / env.decisions[k]
        for k in ("random", "heuristic", "snapshot")
        if env.decisions[k]
    }
    return totals


def report(results: dict[str, dict[str, dict]]) -> None:
    print("\nsamples per CPU-second (one thread); ours as a share of the lean loop and floor:")
    print("| game | floor | lean | before | ours | before / lean | ours / lean | ours / floor |")
    print("|---|---|---|---|---|---|---|---|")
    for game, totals in results.items():
        rate = {who: t["samples"] / t["seconds"] for who, t in totals.items()}
        floor, lean, ours = rate["floor"], rate["lean"], rate["ours"]
        before = rate.get("before", float("nan"))
        print(f"| {game} | {floor:,.0f} | {lean:,.0f} | {before:,.0f} | {ours:,.0f} "
              f"| {before / lean:.2f} | {ours / lean:.2f} | {ours / floor:.2f} |")  # fmt: skip
    print("\nmicroseconds of CPU per sample:")
    print("| game | loop | " + " | ".join(PARTS) + " | total |")
    print("|---|---|" + "---|" * (len(PARTS) + 1))
    for game, totals in results.items():
        for who in ("lean", "before", "ours"):
            if who in totals:
                t = totals[who]
                us = [1e6 * t["split"][p] / t["samples"] for p in PARTS]
                cells = " | ".join(f"{x:.1f}" for x in us)
                total = 1e6 * t["seconds"] / t["samples"]
                print(f"| {game} | {who} | {cells} | {total:.1f} |")
    print("\nours: microseconds of CPU per opponent decision (batched calls):")
    for game, totals in results.items():
        costs = totals["ours"]["us_per_decision"]
        print(f"  {game}: " + ", ".join(f"{k} {v:.1f}" for k, v in costs.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", nargs="+", default=list(GAMES), choices=GAMES)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per loop and game")
    parser.add_argument("--num-games", type=int, default=256, help="games stepped together")
    parser.add_argument(
        "--before", default="", help="also measure training/collector.py of this commit"
    )
    args = parser.parse_args()
    if args.rounds < 1 or args.num_games < 1:
        parser.error("--rounds and --num-games must be positive")
    torch.set_num_threads(1)  # as train.py sets them
    import numba

    numba.set_num_threads(1)
    torch.manual_seed(0)
    before = collector_at(args.before) if args.before else None
    results = {game: measure(game, args.rounds, args.num_games, before) for game in args.games}
    report(results)


if __name__ == "__main__":
    main()
