"""Batched self-play for sb3-contrib's MaskablePPO: B games at once, every learner seat learns.

The games run in :class:`tablegym.vector.VectorGame` tables (the numba engine where the game
has one, the readable rules core otherwise). Each seat of each game is held by one *kind* of
player, drawn when the game is dealt from ``mix`` (one seat is always the learner):

``self``       the current policy; its decisions are the training samples
``snapshot``   a frozen policy from the pool, one per game, drawn by prioritised fictitious
               self-play (:class:`PoolStats`: the snapshots that still beat the learner most)
``heuristic``  the game's rule-of-thumb agent
``random``     a uniformly random legal action
``fixed``      a fixed external policy (any agent spec that plays in batch, ``--fixed SPEC``;
               several specs, one per table size, for a run at several sizes; specs joined
               by ``+`` share a size, each game drawing one of them)

At every tick each table steps once, and the decisions of each kind are taken in one batched
call: one torch forward for all learner seats, one per snapshot, one vectorised draw for the
random seats, one call of the heuristic's batched twin (``agents.catalog.BATCHED_HEURISTICS``)
for the heuristic seats.

Every learner decision is a sample. Samples form one *stream* per (game slot, seat): a seat's
rewards, earned while others act, are credited to its last decision, and GAE runs along each
stream (:class:`SeatRolloutBuffer`). SB3's ``collect_rollouts`` assumes one sample per env and
step, which a table where several seats, or none, of the learner act per tick cannot give; so
:class:`SelfPlayPPO` overrides only that method and keeps sb3-contrib's PPO update as it is.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.buffers import (
    MaskableRolloutBuffer,
    MaskableRolloutBufferSamples,
)
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv

from agents.catalog import BatchPolicy
from tablegym.vector import VectorGame, random_actions
from training.ppo_agent import actor_logits

KINDS = ("self", "snapshot", "heuristic", "random", "fixed")
# Seat codes; SNAPSHOT + k is pool entry k.
LEARNER, RANDOM, HEURISTIC, FIXED, SNAPSHOT = 0, 1, 2, 3, 4
_KIND_OF = {LEARNER: "self", RANDOM: "random", HEURISTIC: "heuristic", FIXED: "fixed"}


def parse_mix(text: str) -> dict[str, float]:
    """``"self=0.4,snapshot=0.3,heuristic=0.2,random=0.1"`` -> normalised weights."""
    mix: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        if name not in KINDS:
            raise ValueError(
                f"unknown player kind {name!r} in the mix; allowed: {', '.join(KINDS)}"
            )
        try:
            mix[name] = float(value)
        except ValueError:
            raise ValueError(f"mix entry {part!r} needs a number, e.g. {name}=0.5") from None
        if not mix[name] >= 0:
            raise ValueError(f"mix weight of {name} must be >= 0; got {value}")
    total = sum(mix.values())
    if total <= 0:
        raise ValueError(f"mix {text!r} gives no kind a positive weight")
    return {k: v / total for k, v in mix.items()}


def policy_actions(
    policy: Any,
    obs: np.ndarray,
    mask: np.ndarray,
    deterministic: bool = False,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Actions of an SB3 maskable policy for a batch: the actor's logits in one forward pass,
    then the most likely legal action or (Gumbel-max) a sample under the mask drawn with
    ``rng``. The actor alone: no value head and no distribution object, which cost more than
    the network on small batches."""
    logits = np.where(mask, actor_logits(policy, obs), -np.inf)
    if not deterministic:
        logits = logits + (rng or np.random.default_rng()).gumbel(size=logits.shape)
    return logits.argmax(axis=1)


def sample_decisions(
    policy: Any, obs: th.Tensor, masks: np.ndarray
) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
    """What ``policy(obs, action_masks=masks)`` of a maskable ``MlpPolicy`` over a discrete
    action space gives: (actions, values, log-probabilities). The values are sb3-contrib's bit
    for bit; the log-probabilities are its masked ones to within a few float32 roundings (one
    ``log_softmax`` where ``MaskableCategorical`` normalises twice); the actions are drawn
    from the same probabilities by Gumbel-max from torch's generator (another sequence of
    draws than its ``torch.multinomial``). No distribution objects: sb3-contrib builds three
    ``Categorical`` per call, each checking its arguments, and those, ``multinomial`` and the
    double normalisation cost as much as the network on the learner's rows of a tick
    (benchmarks/bench_lean.py)."""
    features = policy.extract_features(obs)
    if policy.share_features_extractor:
        latent_pi, latent_vf = policy.mlp_extractor(features)
    else:
        latent_pi = policy.mlp_extractor.forward_actor(features[0])
        latent_vf = policy.mlp_extractor.forward_critic(features[1])
    logits = policy.action_net(latent_pi)
    masks = th.as_tensor(masks, dtype=th.bool, device=logits.device).reshape(logits.shape)
    logits = logits.masked_fill(~masks, -1e8).log_softmax(dim=-1)  # MaskableCategorical's fill
    # Uniforms kept above zero, so that every Gumbel noise is finite and a masked action
    # (-1e8) never wins.
    uniform = th.rand_like(logits).clamp_(min=th.finfo(logits.dtype).tiny)
    actions = (logits - th.log(-th.log(uniform))).argmax(dim=-1)
    log_probs = logits.gather(-1, actions[:, None]).flatten()
    return actions, policy.value_net(latent_vf), log_probs


class RunningRate:
    """A rate over the last ``window`` outcomes (a running mean once that many were seen)."""

    def __init__(self, window: int = 200, start: float = 0.5):
        self.window, self.rate, self.games = window, start, 0

    def record(self, outcomes: Any) -> None:
        """Fold in outcomes in [0, 1], one per game."""
        for x in np.asarray(outcomes, dtype=np.float64).tolist():
            self.add(x)

    def add(self, outcome: float) -> None:
        """Fold in one game's outcome."""
        self.games += 1
        self.rate += (outcome - self.rate) / min(self.games, self.window)


class PoolStats:
    """Prioritised fictitious self-play (AlphaStar's PFSP) over the snapshot pool.

    Each entry keeps ``rate``: how often it beat the learner in its recent games (a
    :class:`RunningRate` over ``window`` games, starting at one half). Entries are drawn with
    weight ``max(rate, floor) ** power`` (AlphaStar's ``f_hard``): the learner mostly meets the
    snapshots it still loses to, and the ones it has mastered keep a small share (``floor``)
    so that forgetting them would show.
    """

    def __init__(self, window: int = 200, power: float = 2.0, floor: float = 0.05):
        self.window, self.power, self.floor = window, power, floor
        self.entries: dict[int, RunningRate] = {}

    def add(self, key: int) -> None:
        self.entries[key] = RunningRate(self.window)

    def remove(self, key: int) -> None:
        self.entries.pop(key, None)

    def record(self, keys: np.ndarray, outcomes: np.ndarray) -> None:
        """Outcomes (1: the entry beat the learner, 0: it lost, 0.5: a tie) of games with it."""
        for key, x in zip(np.asarray(keys).tolist(), np.asarray(outcomes).tolist()):
            if key in self.entries:
                self.entries[key].add(x)

    def rate(self, key: int) -> float:
        return self.entries[key].rate

    def weights(self, keys: np.ndarray) -> np.ndarray:
        """Normalised PFSP weights of ``keys``."""
        rates = np.array([self.entries[k].rate for k in np.asarray(keys).tolist()])
        w = np.maximum(rates, self.floor) ** self.power
        return w / w.sum()


def _kind_means(returns: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """``(games, 5)``: per game the mean return of the seats of each kind, in the order of
    the codes (learner, random, heuristic, fixed, then every snapshot together); NaN where a
    game has no seat of that kind."""
    kind = np.minimum(kinds, SNAPSHOT)  # -1: no such seat
    where = kind[:, :, None] == np.arange(SNAPSHOT + 1)
    count = where.sum(axis=1)
    total = np.where(where, returns[:, :, None], 0.0).sum(axis=1)
    return np.divide(total, count, out=np.full(total.shape, np.nan), where=count > 0)


def _beats(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """1 where ``a > b``, 0 where ``a < b``, one half where they tie."""
    return (a > b) + 0.5 * (a == b)


class GameStats:
    """Sums over finished training games since the last :meth:`take`: the learner's reward
    per game and, per opponent kind at the table, how often the learner beat it."""

    def __init__(self) -> None:
        self.reward, self.games = 0.0, 0
        self.wins: dict[str, list[float]] = {}  # kind -> [wins, games]

    def record(self, mine: np.ndarray, theirs: dict[str, np.ndarray]) -> None:
        """Fold in games: the learner's mean reward per game, each kind's (NaN: absent)."""
        self.reward += float(mine.sum())
        self.games += mine.size
        rewards = np.stack(list(theirs.values()), axis=1)  # all kinds at once
        met = ~np.isnan(rewards)
        wins = np.where(met, _beats(mine[:, None], rewards), 0.0).sum(axis=0)
        for kind, won, games in zip(theirs, wins.tolist(), met.sum(axis=0).tolist()):
            if games:
                total = self.wins.setdefault(kind, [0.0, 0])
                total[0] += won
                total[1] += games

    def take(self) -> tuple[float | None, dict[str, float]]:
        """The mean reward per game (None without games) and the win rate per kind met;
        the sums start again."""
        reward = self.reward / self.games if self.games else None
        rates = {kind: wins / games for kind, (wins, games) in self.wins.items()}
        self.__init__()
        return reward, rates


class SelfPlayVecEnv(VecEnv):
    """The self-play tables as one SB3 VecEnv: env i is game slot i.

    ``step(actions)`` takes the learner's actions (rows where no learner seat is to act are
    ignored), plays every other seat with its kind, and steps every table once. What a
    :class:`SelfPlayPPO` needs beyond the VecEnv API is in attributes: ``learner`` (rows where
    a learner seat is to act), ``seat``, ``seat_rewards`` (every seat's reward of the last
    step, ``(B, max_players)``), ``done`` and ``kinds`` (per slot and seat).
    """

    def __init__(
        self,
        game: str,
        table_options: Sequence[dict[str, Any]],
        num_games: int,
        mix: dict[str, float],
        seed: int = 0,
        heuristic: BatchPolicy | None = None,
        backend: str = "auto",
        fixed: BatchPolicy | dict[int, BatchPolicy | Sequence[BatchPolicy]] | None = None,
        pfsp: PoolStats | None = None,
        concentration: float = 0.0,
    ):
        if mix.get("heuristic", 0) > 0 and heuristic is None:
            raise ValueError("a mix with heuristic seats needs the batched heuristic")
        if mix.get("fixed", 0) > 0 and fixed is None:
            raise ValueError("a mix with fixed seats needs the fixed policy (--fixed SPEC)")
        per_table = max(1, num_games // len(table_options))
        self.tables = [
            VectorGame(game, per_table, seed=seed + 7919 * k, backend=backend, **opts)
            for k, opts in enumerate(table_options)
        ]
        self.max_players = max(t.num_players for t in self.tables)
        first = self.tables[0]
        self.render_mode = None  # SB3 asks; the tables render nothing
        obs_space = spaces.Box(0.0, 1.0, (first.obs_size,), dtype=np.float32)
        super().__init__(
            per_table * len(self.tables), obs_space, spaces.Discrete(first.num_actions)
        )
        self.game, self.mix, self.heuristic = game, mix, heuristic
        self.fixed_policies, self.fixed_members = self._group_fixed(fixed)
        self.concentration = concentration
        self.rng = np.random.default_rng(seed)
        self.snapshots: dict[int, Any] = {}  # pool id -> frozen policy
        self.snapshot_role: dict[int, str] = {}  # pool id -> "main" or "exploiter"
        self.pfsp = PoolStats() if pfsp is None else pfsp
        self.fixed_rate = RunningRate()  # how often the learner beats the fixed seats
        self._next_id = 0
        size = self.num_envs
        self.players = np.concatenate([np.full(t.num_games, t.num_players) for t in self.tables])
        self.kinds = np.full((size, self.max_players), -1, dtype=np.int64)
        self.slot_snapshot = np.full(size, -1, dtype=np.int64)  # the pool entry of each game
        self.slot_fixed = np.zeros(size, dtype=np.int64)  # the fixed player of each game
        self.returns = np.zeros((size, self.max_players), dtype=np.float64)  # so far this game
        self.seat_rewards = np.zeros((size, self.max_players), dtype=np.float32)
        self.done = np.zeros(size, dtype=bool)
        self._actions: np.ndarray | None = None
        self._infos = [{} for _ in range(size)]
        # Decisions and seconds per kind, for the cost report of a run.
        self.decisions = dict.fromkeys(KINDS, 0)
        self.seconds = dict.fromkeys(KINDS, 0.0)
        self.seconds_env = 0.0  # stepping the tables (rules or engine)
        self.game_stats = GameStats()

    # -- seats -------------------------------------------------------------------------
    def _deal_kinds(self, slots: np.ndarray) -> None:
        """Draw who holds each seat of the new games in ``slots``; one seat is the learner.

        With ``concentration`` α > 0 each game first draws its own weights from
        Dirichlet(α · mix), so that whole tables of one kind (all random, all heuristic) are
        common while the kinds keep their shares on average; α = 0 draws every seat from the
        mix itself. All the snapshot seats of one game hold the same pool entry, drawn by
        PFSP, so that the game's outcome measures that entry against the learner.
        """
        names = [k for k, w in self.mix.items() if w > 0]
        weights = np.array([self.mix[k] for k in names])
        codes = np.array([self._code(k) for k in names], dtype=np.int64)
        self.returns[slots] = 0.0
        k = slots.size
        # All games at once (one generator call per draw, not per game: the same
        # distributions as drawing game by game, another sequence of numbers).
        p = np.broadcast_to(weights, (k, len(names)))
        if self.concentration > 0 and len(names) > 1:
            p = self.rng.dirichlet(self.concentration * weights, size=k)
            bad = ~(p.sum(axis=1) > 0)  # NaN or zeros: underflow of tiny weights
            if bad.any():
                p[bad] = weights
        cdf = np.cumsum(p, axis=1)
        cdf /= cdf[:, -1:]
        # Generator.choice with p: the first kind whose cumulative weight exceeds a uniform.
        uniform = self.rng.random((k, self.max_players))
        kinds = codes[(uniform[:, :, None] >= cdf[:, None, :-1]).sum(axis=2)]
        players = self.players[slots]
        learner = (self.rng.random(k) * players).astype(np.int64)  # uniform over the seats
        kinds[np.arange(k), learner] = LEARNER
        if players.min() < self.max_players:  # tables of fewer players: no such seats
            kinds[np.arange(self.max_players) >= players[:, None]] = -1
        entries = np.full(k, -1, dtype=np.int64)
        met = (kinds == SNAPSHOT).any(axis=1)
        if self.snapshots and met.any():
            ids = np.array(list(self.snapshots), dtype=np.int64)
            cdf = np.cumsum(self.pfsp.weights(ids))
            drawn = np.searchsorted(cdf, self.rng.random(int(met.sum())) * cdf[-1], side="right")
            entries[met] = ids[np.minimum(drawn, ids.size - 1)]
            kinds = np.where(kinds == SNAPSHOT, SNAPSHOT + entries[:, None], kinds)
        self.slot_snapshot[slots] = entries
        self.kinds[slots] = kinds
        if len(self.fixed_policies) > 1:  # one player needs no index: it holds every seat
            self.slot_fixed[slots] = self._draw_fixed(players)

    def _draw_fixed(self, players: np.ndarray) -> np.ndarray:
        """The fixed player of new games at tables of ``players``: a size held by several
        draws one of them per game, uniformly, so each plays whole games."""
        drawn = np.empty(players.size, dtype=np.int64)
        for size, members in self.fixed_members.items():
            at = players == size
            if members.size == 1:
                drawn[at] = members[0]
            elif at.any():
                drawn[at] = members[self.rng.integers(members.size, size=int(at.sum()))]
        return drawn

    def _code(self, name: str) -> int:
        if name == "self" or (name == "snapshot" and not self.snapshots):
            return LEARNER
        return {"snapshot": SNAPSHOT, "random": RANDOM, "fixed": FIXED}.get(name, HEURISTIC)

    def add_snapshot(self, policy: Any, pool_size: int, role: str = "main") -> int:
        """Add a frozen policy to the pool; its id. The pool keeps the first entry and the
        ``pool_size`` newest of each role (``"main"``: the learner's own snapshots;
        ``"exploiter"``: policies trained to beat it).

        The first is the policy training started from, after the warm start an imitation of
        the heuristic: kept for good, so that the pool always holds a heuristic-like policy.
        """
        new = self._next_id
        self.snapshots[new] = policy
        self.snapshot_role[new] = role
        self.pfsp.add(new)
        self._next_id += 1
        same = [k for k in list(self.snapshots)[1:] if self.snapshot_role[k] == role]
        for old in same[:-pool_size]:
            self.drop_snapshot(old)
        return new

    def drop_snapshot(self, key: int) -> None:
        """Remove pool entry ``key``; seats of games under way that it held pass to the
        newest entry."""
        del self.snapshots[key], self.snapshot_role[key]
        self.pfsp.remove(key)
        newest = max(self.snapshots)
        self.kinds[self.kinds == SNAPSHOT + key] = SNAPSHOT + newest
        self.slot_snapshot[self.slot_snapshot == key] = newest

    def _score_games(self, slots: np.ndarray) -> None:
        """Who beat whom in the games that just ended in ``slots`` (pool and fixed rates).

        The learner beats an opponent kind in a game when its seats end with more reward on
        average than that kind's seats (a tie counts one half): no winner rule is needed, and
        the measure is the same under every reward option.
        """
        means = _kind_means(self.returns[slots], self.kinds[slots])
        mine, theirs, fixed = means[:, LEARNER], means[:, SNAPSHOT], means[:, FIXED]
        entries = self.slot_snapshot[slots]
        met = entries >= 0
        if met.any():
            self.pfsp.record(entries[met], _beats(theirs[met], mine[met]))
        met = ~np.isnan(fixed)
        if met.any():
            self.fixed_rate.record(_beats(mine[met], fixed[met]))
        self.game_stats.record(mine, {
            "random": means[:, RANDOM],
            "heuristic": means[:, HEURISTIC],
            "pool": theirs,
            "fixed": fixed,
        })  # fmt: skip

    @property
    def learner(self) -> np.ndarray:
        """Rows whose seat to act is held by the learner."""
        return self.kinds[np.arange(self.num_envs), self.seat] == LEARNER

    def stream_ids(self, rows: np.ndarray) -> np.ndarray:
        """Stream id (slot, seat) of the decisions in ``rows``."""
        return rows * self.max_players + self.seat[rows]

    # -- VecEnv ------------------------------------------------------------------------
    def reset(self) -> np.ndarray:
        outs = [t.reset() for t in self.tables]
        self.obs, self.mask, self.seat = (np.concatenate(parts) for parts in zip(*outs))
        self._deal_kinds(np.arange(self.num_envs))
        return self.obs

    def action_masks(self) -> np.ndarray:
        """Legal actions of the seat to act in every slot."""
        return self.mask

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions, dtype=np.int64)

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        actions = self._opponent_actions(self._actions)
        outs, start = [], 0
        started = time.perf_counter()
        for t in self.tables:
            outs.append(t.step(actions[start : start + t.num_games]))
            start += t.num_games
        self.seconds_env += time.perf_counter() - started
        obs, mask, seat, rewards, done = zip(*outs)
        join = np.concatenate if len(outs) > 1 else lambda parts: parts[0]  # fresh arrays
        self.obs, self.mask, self.seat = join(obs), join(mask), join(seat)
        self.seat_rewards[:] = 0
        start = 0
        for r in rewards:
            self.seat_rewards[start : start + len(r), : r.shape[1]] = r
            start += len(r)
        self.done = join(done)
        self.returns += self.seat_rewards
        if self.done.any():
            ended = np.flatnonzero(self.done)
            self._score_games(ended)
            self._deal_kinds(ended)
        learner_reward = np.where(self.kinds == LEARNER, self.seat_rewards, 0).sum(axis=1)
        return self.obs, learner_reward, self.done, self._infos

    def _group_fixed(
        self, fixed: BatchPolicy | dict[int, BatchPolicy | Sequence[BatchPolicy]] | None
    ) -> tuple[list[BatchPolicy], dict[int, np.ndarray]]:
        """The distinct fixed players, and for each table size the indices of those sharing
        its fixed seats (one policy for all sizes, or one or several per size); ValueError
        naming the sizes that have none."""
        if fixed is None:
            return [], {}
        sizes = sorted({t.num_players for t in self.tables})
        by_size = dict.fromkeys(sizes, fixed) if callable(fixed) else fixed
        missing = [n for n in sizes if not by_size.get(n)]
        if missing:
            raise ValueError(f"the fixed seats have no player at {missing} players")
        players: list[BatchPolicy] = []
        index: dict[int, int] = {}  # id -> index: a player at several sizes is one player
        members = {}
        for n in sizes:
            held = [by_size[n]] if callable(by_size[n]) else list(by_size[n])
            for policy in held:
                if id(policy) not in index:
                    index[id(policy)] = len(players)
                    players.append(policy)
            members[n] = np.array([index[id(policy)] for policy in held])
        return players, members

    def _fixed_actions(self, sel: np.ndarray, out: np.ndarray) -> None:
        """Fill ``out[sel]``, rows held by fixed seats: one batched call per fixed player."""
        if len(self.fixed_policies) == 1:
            out[sel] = self.fixed_policies[0](self.obs[sel], self.mask[sel], self.rng)
            return
        which = self.slot_fixed[sel]
        for k in np.unique(which).tolist():
            rows = sel[which == k]
            out[rows] = self.fixed_policies[k](self.obs[rows], self.mask[rows], self.rng)

    def _opponent_actions(self, actions: np.ndarray) -> np.ndarray:
        """``actions`` with every row not held by the learner filled by its seat's kind."""
        rows = np.arange(self.num_envs)
        codes = self.kinds[rows, self.seat]
        out = actions.copy()
        for code in np.unique(codes).tolist():
            sel = np.flatnonzero(codes == code)
            kind = _KIND_OF.get(code, "snapshot")
            self.decisions[kind] += sel.size
            if code == LEARNER:
                continue
            started = time.perf_counter()
            if code == RANDOM:
                out[sel] = random_actions(self.mask[sel], self.rng)
            elif code == HEURISTIC:
                out[sel] = self.heuristic(self.obs[sel], self.mask[sel], self.rng)
            elif code == FIXED:
                self._fixed_actions(sel, out)
            else:
                policy = self.snapshots[code - SNAPSHOT]
                out[sel] = policy_actions(policy, self.obs[sel], self.mask[sel], rng=self.rng)
            self.seconds[kind] += time.perf_counter() - started
        return out

    def observe_streams(self, streams: np.ndarray) -> np.ndarray:
        """What the seats of ``streams`` see now (for bootstrapping unfinished streams)."""
        slots, seats = np.divmod(streams, self.max_players)
        obs = np.empty((len(streams), self.observation_space.shape[0]), dtype=np.float32)
        start = 0
        for t in self.tables:
            inside = (slots >= start) & (slots < start + t.num_games)
            for q in np.unique(seats[inside]).tolist():
                pick = np.flatnonzero(inside & (seats == q))
                obs[pick] = t.observe(np.full(t.num_games, q))[slots[pick] - start]
            start += t.num_games
        return obs

    def close(self) -> None:
        self.tables = []

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return [getattr(self, attr_name)] * len(self._get_indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list:
        if method_name == "action_masks":
            return list(self.mask[self._get_indices(indices)])
        raise AttributeError(f"SelfPlayVecEnv has no per-env method {method_name!r}")

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False] * len(self._get_indices(indices))

    def seed(self, seed: int | None = None) -> list[int | None]:
        self.rng = np.random.default_rng(seed)
        return [seed] * self.num_envs


# The arrays of MaskableRolloutBuffer that SeatRolloutBuffer keeps from rollout to rollout.
_REUSED = ("observations", "actions", "rewards", "returns", "episode_starts", "values",
           "log_probs", "advantages", "action_masks")  # fmt: skip


class SeatRolloutBuffer(MaskableRolloutBuffer):
    """A flat buffer of learner decisions whose GAE follows each (slot, seat) stream.

    ``buffer_size`` is the number of samples of one rollout (``n_envs`` is 1): a sample's
    successor in its stream is ``next_pos`` (-1: none yet), a stream that ended with its game
    is ``terminal``, and one cut short by the end of the rollout bootstraps from ``bootstrap``.
    """

    def __init__(self, buffer_size: int, *args: Any, n_envs: int = 1, **kwargs: Any) -> None:
        # SB3 passes the VecEnv's slot count; samples of all slots share one flat axis here.
        super().__init__(buffer_size, *args, n_envs=1, **kwargs)

    def reset(self) -> None:
        # SB3 allocates every array anew for each rollout, and the first writes to fresh
        # pages cost more than the writes (the observations alone are megabytes); here each
        # rollout reuses the first one's arrays. Nothing is read before it is written again:
        # add_decisions writes every field of a sample (the reward too), GAE every advantage.
        if getattr(self, "_arrays", None) is None:
            super().reset()
            self._arrays = {name: self.__dict__[name] for name in _REUSED}
        else:
            self.__dict__.update(self._arrays)  # get() replaced them by flattened views
            self.pos, self.full, self.generator_ready = 0, False, False
        self.next_pos = np.full(self.buffer_size, -1, dtype=np.int64)
        self.terminal = np.zeros(self.buffer_size, dtype=bool)
        self.bootstrap = np.zeros(self.buffer_size, dtype=np.float32)
        # Per stream id its last sample while the stream is open, else -1 (grown on demand).
        self.ends = np.full(0, -1, dtype=np.int64)
        self.added: list[tuple[int, int]] = []  # (start, stop) of each add_decisions call

    def space(self) -> int:
        return self.buffer_size - self.pos

    def open_streams(self) -> np.ndarray:
        """The ids of the streams still open, ascending."""
        return np.flatnonzero(self.ends >= 0)

    def _ends_of(self, streams: np.ndarray) -> np.ndarray:
        """The last sample of each stream (-1: closed or never seen); makes room for new ids."""
        streams = np.asarray(streams, dtype=np.int64)
        if streams.size and streams.max() >= self.ends.size:
            grown = np.full(max(2 * self.ends.size, int(streams.max()) + 1), -1, dtype=np.int64)
            grown[: self.ends.size] = self.ends
            self.ends = grown
        return self.ends[streams]

    def add_decisions(
        self,
        obs: np.ndarray,
        actions: np.ndarray,
        values: np.ndarray,
        log_probs: np.ndarray,
        masks: np.ndarray,
        streams: np.ndarray,
    ) -> None:
        """Append one sample per row, linking each to its stream's previous sample; a stream
        decides at most once per call (one seat of a game acts at a time)."""
        k = len(obs)
        if np.unique(streams).size != k:
            raise ValueError("add_decisions: a stream may add one decision per call")
        at = slice(self.pos, self.pos + k)
        self.observations[at, 0] = obs
        self.actions[at, 0, 0] = actions
        self.values[at, 0] = values
        self.log_probs[at, 0] = log_probs
        self.action_masks[at, 0] = masks
        self.rewards[at, 0] = 0.0
        at = np.arange(self.pos, self.pos + k)
        prev = self._ends_of(streams)
        linked = prev >= 0
        self.next_pos[prev[linked]] = at[linked]
        self.ends[streams] = at
        self.added.append((self.pos, self.pos + k))
        self.pos += k
        self.full = self.pos == self.buffer_size

    def credit(self, streams: np.ndarray, rewards: np.ndarray) -> None:
        """Add each stream's reward to its last sample (rewards of closed streams are dropped)."""
        pos = self._ends_of(streams)
        open_ = pos >= 0
        np.add.at(self.rewards[:, 0], pos[open_], np.asarray(rewards)[open_])

    def close_streams(self, streams: np.ndarray, values: np.ndarray | None = None) -> None:
        """End streams: at their game's end (no ``values``) or cut, bootstrapping ``values``."""
        pos = self._ends_of(streams)
        open_ = pos >= 0
        if values is None:
            self.terminal[pos[open_]] = True
        else:
            self.bootstrap[pos[open_]] = np.asarray(values)[open_]
        self.ends[np.asarray(streams, dtype=np.int64)] = -1

    def _get_samples(  # type: ignore[override]
        self, batch_inds: np.ndarray, env: Any = None
    ) -> MaskableRolloutBufferSamples:
        """sb3-contrib's minibatch: the same tensors, each copied once, not twice (its
        ``to_torch`` copies what numpy's indexing has just copied)."""
        data = (
            self.observations[batch_inds],
            self.actions[batch_inds],
            self.values[batch_inds].flatten(),
            self.log_probs[batch_inds].flatten(),
            self.advantages[batch_inds].flatten(),
            self.returns[batch_inds].flatten(),
            self.action_masks[batch_inds].reshape(-1, self.mask_dims),
        )
        return MaskableRolloutBufferSamples(*(self.to_torch(x, copy=False) for x in data))

    def compute_returns_and_advantage(self, last_values: Any = None, dones: Any = None) -> None:
        """GAE along each stream, from the last sample back. A sample's successor in its
        stream was added by a later call, so each call's samples are computed at once, the
        last call's first: the same float32 operations, in the same order, as one sample at a
        time (tests/test_collector.py holds that loop and compares)."""
        gamma, lam = self.gamma, self.gae_lambda
        values, rewards = self.values[:, 0], self.rewards[:, 0]
        adv = np.zeros(self.buffer_size, dtype=np.float32)
        for start, stop in reversed(self.added):
            nxt, r, v = self.next_pos[start:stop], rewards[start:stop], values[start:stop]
            chained = r + gamma * values[nxt] - v + gamma * lam * adv[nxt]
            ended = np.where(
                self.terminal[start:stop], r - v, r + gamma * self.bootstrap[start:stop] - v
            )
            adv[start:stop] = np.where(nxt >= 0, chained, ended)
        self.advantages[:, 0] = adv
        self.returns = self.advantages + self.values


def quiet_logger(model: Any) -> None:
    """Give ``model`` a logger that writes nothing. Without one, every ``learn()`` of a model
    with no TensorBoard folder makes an empty ``SB3-<time>`` folder in the system's temporary
    directory (SB3's ``configure``): one per rollout of each league exploiter."""
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(folder=None, output_formats=[]))


class SelfPlayPPO(MaskablePPO):
    """MaskablePPO whose rollouts come from :class:`SelfPlayVecEnv` (see the module doc).

    ``seconds`` splits the time of learning: the learner's forward passes while collecting
    (``inference``), GAE (``advantages``) and the PPO update (``update``); the env keeps the
    time of the tables and of each opponent kind.
    """

    seconds: dict[str, float]
    #: ``(start, end)`` on ``time.monotonic()`` of a run's time budget; ``None``: samples only.
    budget: tuple[float, float] | None = None
    #: The entropy bonus at the start; it falls with the learning rate when not ``None``.
    ent_start: float | None = None
    #: The learner process (``training.learner``) that runs the updates; None: this process.
    learner: Any = None
    #: Ray actors that collect the rollouts (``training.collectors``); None: this process.
    collectors: Any = None

    def _setup_model(self) -> None:
        super()._setup_model()
        self.seconds = {"inference": 0.0, "advantages": 0.0, "update": 0.0}

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "learner", "collectors"]

    def _update_current_progress_remaining(self, num_timesteps: int, total_timesteps: int) -> None:
        # Schedules follow whichever budget runs out first: samples or time.
        super()._update_current_progress_remaining(num_timesteps, total_timesteps)
        if self.budget is not None:
            start, end = self.budget
            left = (end - time.monotonic()) / max(end - start, 1e-9)
            self._current_progress_remaining = min(self._current_progress_remaining, left)
        self._current_progress_remaining = max(0.0, self._current_progress_remaining)

    def train(self) -> None:
        """The PPO update; with a learner process, the update of the last rollout is taken
        (waited for) and this rollout's update started there (``training.learner``)."""
        started = time.perf_counter()
        if self.ent_start is not None:
            self.ent_coef = self.ent_start * self._current_progress_remaining
            self.logger.record("train/ent_coef", self.ent_coef)
        if self.learner is None:
            super().train()
        else:
            from training.learner import settle

            settle(self)
            self.learner.submit(self)
        self.seconds["update"] += time.perf_counter() - started

    def collect_rollouts(  # type: ignore[override]
        self,
        env: SelfPlayVecEnv,
        callback: BaseCallback,
        rollout_buffer: SeatRolloutBuffer,
        n_rollout_steps: int,
        use_masking: bool = True,
    ) -> bool:
        self.policy.set_training_mode(False)
        # The update leaves its last minibatch's distribution on the policy, tensors in
        # autograd's graph that deepcopy (snapshots, the league) refuses; sb3-contrib's own
        # forward pass replaced it at the first decision, sample_decisions makes none.
        self.policy.action_dist.distribution = None
        rollout_buffer.reset()
        callback.on_rollout_start()
        if self.collectors is not None:
            return self._collect_remote(env, callback, rollout_buffer)
        while not rollout_buffer.full:
            rows = np.flatnonzero(env.learner)
            actions = np.zeros(env.num_envs, dtype=np.int64)
            if rows.size:
                started = time.perf_counter()
                obs, mask = env.obs[rows], env.mask[rows]  # gathered once: torch, then buffer
                with th.no_grad():
                    tensor = th.as_tensor(obs, device=self.device)
                    decided = sample_decisions(self.policy, tensor, mask)
                act, values, log_probs = (x.cpu().numpy().ravel() for x in decided)
                self.seconds["inference"] += time.perf_counter() - started
                actions[rows] = act
                kept = self._record(env, rollout_buffer, rows, obs, mask, act, values, log_probs)
                self.num_timesteps += kept
            env.step_async(actions)
            env.step_wait()
            self._credit(env, rollout_buffer)
            callback.update_locals(locals())
            if not callback.on_step():
                return False
        started = time.perf_counter()
        self._bootstrap(env, rollout_buffer)
        rollout_buffer.compute_returns_and_advantage()
        self.seconds["advantages"] += time.perf_counter() - started
        callback.on_rollout_end()
        return True

    def _collect_remote(
        self, env: SelfPlayVecEnv, callback: BaseCallback, rollout_buffer: SeatRolloutBuffer
    ) -> bool:
        """The rollout from the Ray collectors (``training.collectors``), GAE done there."""
        from training.collectors import merge

        results = self.collectors.collect(self, env)
        self.num_timesteps += merge(results, rollout_buffer, env)
        self.seconds["collectors"] = self.collectors.wait_seconds
        callback.update_locals(locals())
        if not callback.on_step():
            return False
        callback.on_rollout_end()
        return True

    @staticmethod
    def _record(
        env: SelfPlayVecEnv,
        buffer: SeatRolloutBuffer,
        rows: np.ndarray,
        obs: np.ndarray,
        mask: np.ndarray,
        actions: np.ndarray,
        values: np.ndarray,
        log_probs: np.ndarray,
    ) -> int:
        """Store the learner's decisions (of ``rows``) that fit; cut the streams of those
        that do not."""
        keep = min(rows.size, buffer.space())
        streams = env.stream_ids(rows)
        if keep < rows.size:
            # The decision is made but not stored: its stream ends here, valued at this point.
            buffer.close_streams(streams[keep:], values[keep:])
        buffer.add_decisions(
            obs[:keep], actions[:keep], values[:keep], log_probs[:keep], mask[:keep], streams[:keep]
        )
        return keep

    @staticmethod
    def _credit(env: SelfPlayVecEnv, buffer: SeatRolloutBuffer) -> None:
        slots, seats = np.nonzero(env.seat_rewards)
        if slots.size:
            buffer.credit(slots * env.max_players + seats, env.seat_rewards[slots, seats])
        ended = np.flatnonzero(env.done)
        if ended.size:
            seats = np.arange(env.max_players)
            buffer.close_streams((ended[:, None] * env.max_players + seats).ravel())

    def _bootstrap(self, env: SelfPlayVecEnv, buffer: SeatRolloutBuffer) -> None:
        """Value the streams still open when the buffer is full from what their seats see."""
        streams = buffer.open_streams()
        if streams.size:
            with th.no_grad():
                obs = th.as_tensor(env.observe_streams(streams), device=self.device)
                values = self.policy.predict_values(obs).flatten().cpu().numpy()
            buffer.close_streams(streams, values)


def evaluate_batched(
    policy: Any,
    game: str,
    options: dict[str, Any],
    opponent: str | BatchPolicy,
    games: int,
    seed: int,
    heuristic: BatchPolicy | None = None,
    num_games: int = 64,
    backend: str = "auto",
) -> dict[str, float]:
    """Win rate of ``policy`` against ``opponent`` in every other seat.

    ``policy`` is an SB3 maskable policy (its most likely legal action) or a ``BatchPolicy``
    (the batched heuristic, say: what a fixed player wins against the same opponent).

    ``opponent`` is ``"random"``, ``"heuristic"`` (played by ``heuristic``) or any
    ``BatchPolicy``. ``games`` games in batches of ``num_games`` slots, the policy's seat
    rotated from game to game. Wins are read from the ``"win"`` reward: a seat that ends with
    +1 is a winner, and a win shared by ``k`` seats counts ``1/k``, as in
    ``training.evaluate`` (counted whole, tied games would lift every rate above the fair
    share ``1/n``: 12-19% of Up & Down's games at 3 and 4 players are shared).
    """
    if isinstance(opponent, str):
        if opponent not in ("random", "heuristic"):
            raise ValueError(
                f"opponent must be 'random', 'heuristic' or a batch policy; got {opponent!r}"
            )
        if opponent == "heuristic" and heuristic is None:
            raise ValueError("evaluation against heuristic needs the batched heuristic")
        if opponent == "random":
            opponent = _random_policy
        else:
            opponent = heuristic
    size = max(1, min(num_games, games))
    vg = VectorGame(game, size, seed=seed, backend=backend, **{**options, "reward": "win"})
    n = vg.num_players
    rng = np.random.default_rng(seed)
    slots = np.arange(size)
    quota = games // size + (slots < games % size)
    played = np.zeros(size, dtype=np.int64)
    mine = slots % n  # the policy's seat in each slot's current game
    wins = 0.0
    obs, mask, seat = vg.reset()
    player = greedy_player(policy) if isinstance(policy, th.nn.Module) else policy
    while (played < quota).any():
        actions = np.zeros(size, dtype=np.int64)
        ours = seat == mine
        if ours.any():
            actions[ours] = player(obs[ours], mask[ours], rng)
        theirs = np.flatnonzero(~ours)
        if theirs.size:
            actions[theirs] = opponent(obs[theirs], mask[theirs], rng)
        obs, mask, seat, rewards, done = vg.step(actions)
        for i in np.flatnonzero(done & (played < quota)).tolist():
            winners = rewards[i] > 0
            wins += float(winners[mine[i]]) / max(1, int(winners.sum()))
            played[i] += 1
            mine[i] = (i + played[i]) % n
    return {"games": int(played.sum()), "win_rate": wins / max(1, int(played.sum()))}


def _random_policy(obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return random_actions(mask, rng)


def snapshot_player(policy: Any) -> BatchPolicy:
    """A frozen SB3 policy as a ``BatchPolicy`` that samples its moves, as in training."""

    def act(obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return policy_actions(policy, obs, mask, rng=rng)

    return act


def greedy_player(policy: Any) -> BatchPolicy:
    """A frozen SB3 policy as a ``BatchPolicy`` that plays its most likely legal move."""

    def act(obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return policy_actions(policy, obs, mask, deterministic=True)

    return act


def fixed_player(spec: str, game: str, options: dict[str, Any]) -> BatchPolicy:
    """The ``BatchPolicy`` of agent ``spec`` at a table of ``options`` (``--fixed SPEC``);
    ValueError naming the spec if it cannot be built or cannot play in batch."""
    from training.evaluate import TRAINED, batch_policy
    from training.registry import make_agent

    try:
        trained = spec.startswith(TRAINED)
        agent = make_agent(spec, game, seed=0, **(options if trained else {}))
    except (ValueError, FileNotFoundError) as err:
        raise ValueError(f"--fixed {spec}: {err}") from None
    policy = batch_policy(spec, agent, game)
    if policy is None:
        raise ValueError(
            f"--fixed {spec}: a fixed player must play in batch "
            "(random, heuristic, ppo:PATH, rllib:DIR)"
        )
    return policy


def fixed_players(
    specs: str, game: str, table_options: Sequence[dict[str, Any]]
) -> dict[int, tuple[BatchPolicy, ...]]:
    """The fixed players of each table size in ``table_options`` from ``--fixed SPECS``.

    ``specs`` is one agent spec, or several separated by spaces: each table size is held by
    the first spec that plays at it (a ``ppo:PATH`` checkpoint plays only the sizes it was
    trained at, ``random`` and ``heuristic`` play every size). Specs joined by ``+`` are one
    mixture: it plays a size when each of them does, and each game there draws one of them.
    ValueError naming the size no spec plays, or the spec that plays no size of the run.
    """
    names = specs.split()
    if not names or any("" in name.split("+") for name in names):
        raise ValueError(f"--fixed names no agent spec{f' in {specs!r}' if names else ''}")
    chosen: dict[int, tuple[BatchPolicy, ...]] = {}
    built: dict[str, BatchPolicy] = {}  # a spec that holds several sizes plays them in one call
    used: set[str] = set()
    for options in table_options:
        size = options["num_players"]
        errors = []
        for name in names:
            try:  # fixed_player checks that the spec plays at this size
                players = {spec: fixed_player(spec, game, options) for spec in name.split("+")}
            except ValueError as err:
                errors.append(str(err))
                continue
            chosen[size] = tuple(built.setdefault(spec, p) for spec, p in players.items())
            used.add(name)
            break
        if size not in chosen:
            raise ValueError(f"--fixed: no spec plays at {size} players ({'; '.join(errors)})")
    idle = [name for name in names if name not in used]
    if idle:
        raise ValueError(f"--fixed {idle[0]}: it plays at none of this run's table sizes")
    return chosen
