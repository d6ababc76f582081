"""Self-play PPO for the tablegym games on Ray RLlib, from one machine to a cluster.

    python training/train_rllib.py --game kingup --iterations 100 --out runs/kingup-rllib
    python training/train_rllib.py --game kingup --address HEAD_IP:6379 --num-env-runners 16

RLlib's own PPO (new API stack) and RLlib's ``ActionMaskingTorchRLModule`` learn on
``tablegym.rllib``'s multi-agent envs. Every seat is an agent. The league is RLlib's
multi-agent module mapping: the learning module ``main`` and ``--pool-size`` frozen modules
``past_0`` ... (copies of ``main``, refreshed in turn every ``--snapshot-every`` iterations;
at the start all are copies of the untrained ``main``). In each episode one seat, drawn per
episode, is ``main``; every other seat is a frozen past policy with probability
``--opponent-share`` and ``main`` otherwise, so in most episodes several seats learn at once.
Only ``main`` is trained.

Env runners sample in parallel (``--num-env-runners``, one CPU each; 0 samples in this
process). Without ``--address`` a local Ray sized to this machine is started; with it the run
joins an existing cluster, whose env runners may sit on any node. Every ``--eval-every``
iterations the policy plays tournaments against random and heuristic seats through
``training.evaluate`` (the ``rllib:DIR`` agent spec).

A run directory holds ``config.json``, ``checkpoint/`` (RLlib's ``algo.save_to_path``, with
``tablegym_meta.json`` beside it), ``league.json`` (which iteration each past module is
from), ``progress.jsonl`` (one line of metrics per iteration: steps, returns, losses, env steps
by Ray node, illegal moves), ``curve.csv`` / ``curve.json`` / ``curves.png`` (evaluations, as
``train.py`` writes them), ``tb/`` (TensorBoard) and ``summary.json``. ``--resume DIR``
continues a run from its checkpoint up to ``--iterations`` in total.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import functools
import json
import os
import random
import shutil
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tablegym.cli import dataclass_parser, given_flags, require_extra  # noqa: E402
from tablegym.files import (  # noqa: E402
    WriteError,
    os_error,
    thread_write_errors_quiet,
    write_atomic,
    write_json_atomic,
    write_text_atomic,
)
from tablegym.games import GAMES, rules_of, spec_of  # noqa: E402
from tablegym.options import check_int, parse_options  # noqa: E402
from training import tags  # noqa: E402

MAIN = "main"
BASELINES = ("random", "heuristic")
CURVE_FIELDS = ("step", "opponent", "win_rate", "ci_low", "ci_high", "mean_score", "fair")


@dataclass
class Args:
    """Every option of an RLlib run; each field's ``help`` is its ``--help`` text."""

    game: str = field(default="kingup", metadata={"help": f"game: {', '.join(GAMES)}"})
    num_players: int | None = field(
        default=None, metadata={"help": "players (default: kingup 4, updown 2, kdk 3)"}
    )
    option: list[str] = field(
        default_factory=list, metadata={"help": "more game options as KEY=VALUE (repeatable)"}
    )
    iterations: int = field(default=100, metadata={"help": "training iterations of the run"})
    out: str = field(default="", metadata={"help": "run directory (default runs/GAME-rllib)"})
    num_env_runners: int = field(
        default=2, metadata={"help": "env runner actors, one CPU each (0: sample in-process)"}
    )
    envs_per_runner: int = field(default=1, metadata={"help": "environments per env runner"})
    address: str | None = field(
        default=None,
        metadata={"help": "join this Ray cluster (HOST:PORT or auto; default: a local Ray)"},
    )
    num_cpus: int = field(
        default=0, metadata={"help": "CPUs of the local Ray (0: this machine's count)"}
    )
    resume: str | None = field(default=None, metadata={"help": "run directory to continue"})
    seed: int = field(default=0, metadata={"help": "seed of environments, league and PPO"})
    train_batch_size: int = field(default=4000, metadata={"help": "env steps per iteration"})
    minibatch_size: int = field(default=256, metadata={"help": "minibatch size"})
    num_epochs: int = field(default=5, metadata={"help": "epochs per iteration"})
    lr: float = field(default=3e-4, metadata={"help": "Adam learning rate"})
    gamma: float = field(default=0.995, metadata={"help": "discount"})
    gae_lambda: float = field(default=0.95, metadata={"help": "GAE lambda"})
    entropy_coeff: float = field(default=0.001, metadata={"help": "entropy bonus"})
    hidden: str = field(default="256,256", metadata={"help": "hidden layer sizes"})
    pool_size: int = field(default=3, metadata={"help": "frozen past policies in the league"})
    snapshot_every: int = field(
        default=5, metadata={"help": "iterations between refreshing a past policy (0: never)"}
    )
    opponent_share: float = field(
        default=0.5, metadata={"help": "chance that a non-learner seat is a past policy"}
    )
    eval_every: int = field(default=10, metadata={"help": "iterations between evaluations"})
    eval_games: int = field(default=100, metadata={"help": "games per evaluation and baseline"})
    checkpoint_every: int = field(default=1, metadata={"help": "iterations between checkpoints"})
    progress: bool = field(default=True, metadata={"help": "print a line per iteration"})

    def game_options(self) -> dict[str, Any]:
        """The game's options: player count plus every ``--option KEY=VALUE``."""
        options = parse_options(self.option)
        options["num_players"] = self.num_players or spec_of(self.game).default_players
        return options

    def run_dir(self) -> Path:
        """Where the run's files go."""
        return Path(self.out or f"runs/{self.game}-rllib")

    def hidden_sizes(self) -> tuple[int, ...]:
        """``--hidden`` as layer sizes; ValueError naming the option if malformed."""
        try:
            sizes = tuple(int(x) for x in self.hidden.split(",") if x.strip())
        except ValueError:
            sizes = ()
        if not sizes or min(sizes) < 1:
            raise ValueError(
                f"--hidden must be positive integers like 256,256; got {self.hidden!r}"
            )
        return sizes


# -- command line -------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """argparse from the fields of :class:`Args`; defaults come from the dataclass."""
    return dataclass_parser(
        Args, "tablegym-train-rllib", __doc__.split("\n\n")[0], {"game": sorted(GAMES)}
    )


def parse_args(argv: list[str] | None = None) -> Args:
    """Args from the command line."""
    return Args(**vars(build_parser().parse_args(argv)))


# -- checks before any work ---------------------------------------------------------------


def validate(args: Args, given: frozenset[str] = frozenset()) -> Args:
    """The args to run with; ValueError naming the bad option before anything is written.

    On ``--resume`` the run's recorded config is used; only ``--iterations`` may grow and
    ``--address``, ``--num-env-runners`` and ``--num-cpus`` may change.
    """
    if args.resume:
        args = _args_for_resume(args, given)
    for name, low in (
        ("iterations", 1), ("num_env_runners", 0), ("envs_per_runner", 1), ("num_cpus", 0),
        ("train_batch_size", 1), ("minibatch_size", 1), ("num_epochs", 1), ("pool_size", 1),
        ("snapshot_every", 0), ("eval_every", 0), ("eval_games", 0), ("checkpoint_every", 1),
    ):  # fmt: skip
        check_int("--" + name.replace("_", "-"), getattr(args, name), low)
    if not 0.0 <= args.opponent_share <= 1.0:
        raise ValueError(f"--opponent-share must be from 0 to 1; got {args.opponent_share!r}")
    if args.minibatch_size > args.train_batch_size:
        raise ValueError(
            f"--minibatch-size must be at most --train-batch-size ({args.train_batch_size}); "
            f"got {args.minibatch_size}"
        )
    args.hidden_sizes()
    rules_of(args.game).make_config(**args.game_options())  # names the bad game option
    if args.address is not None:
        check_address(args.address)
    elif args.num_env_runners > local_cpus(args):
        raise ValueError(
            f"--num-env-runners must be at most the local Ray's {local_cpus(args)} CPUs "
            f"(one each; raise --num-cpus to oversubscribe); got {args.num_env_runners}"
        )
    run = args.run_dir()
    if not args.resume and (run / "checkpoint").exists():
        raise ValueError(
            f"--out {run} already holds a run; continue it with --resume {run} "
            "or choose another --out"
        )
    return args


def local_cpus(args: Args) -> int:
    """CPUs of the local Ray: ``--num-cpus`` or this machine's count."""
    return args.num_cpus or os.cpu_count() or 1


def check_address(address: str, timeout: float = 5.0, flag: str = "--address") -> None:
    """ValueError naming ``flag`` unless a Ray head answers there within ``timeout`` s.

    ``ray.init`` on a dead address retries for a minute or more; a plain TCP connection to
    the head's GCS port says within seconds whether anything is there.
    """
    if address == "auto":
        return  # ray.init finds the local cluster or says at once that there is none
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(
            f"{flag} must be HOST:PORT (the Ray head's GCS port) or auto; got {address!r}"
        )
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise ValueError(f"{flag} {address}: no Ray cluster answers there ({reason})") from None


def _args_for_resume(args: Args, given: frozenset[str]) -> Args:
    """The recorded config of ``--resume DIR`` with the options allowed to change."""
    from training.rllib_agent import read_meta

    run = Path(args.resume)
    recorded = run / "config.json"
    if not (run / "checkpoint").is_dir() or not recorded.is_file():
        raise ValueError(
            f"--resume {run}: not a train_rllib.py run (no checkpoint/ or config.json)"
        )
    base = Args(**json.loads(recorded.read_text()))
    meta = read_meta(run / "checkpoint")
    if "game" in given and args.game != meta["game"]:
        raise ValueError(f"--resume {run} was trained for game={meta['game']!r}, not {args.game!r}")
    changeable = {"iterations", "address", "num_env_runners", "num_cpus", "progress", "resume"}
    fixed = sorted((given - changeable - {"game"}) & {f.name for f in dataclasses.fields(Args)})
    for name in fixed:
        if getattr(args, name) != getattr(base, name):
            raise ValueError(
                f"--resume {run} was run with --{name.replace('_', '-')} "
                f"{getattr(base, name)!r}; it cannot change to {getattr(args, name)!r}"
            )
    return dataclasses.replace(base, **{k: getattr(args, k) for k in changeable}, out=str(run))


# -- the league ---------------------------------------------------------------------------


def past_modules(pool_size: int) -> list[str]:
    """The ids of the frozen league members."""
    return [f"past_{i}" for i in range(pool_size)]


def league_mapping(
    agent_id: str,
    episode: Any,
    *,
    num_players: int,
    pool_size: int,
    opponent_share: float,
    **kwargs: Any,
) -> str:
    """The module that plays seat ``agent_id`` in ``episode``: one seat is always ``main``.

    Decided from the episode's id alone, so every call for one episode agrees, in any process.
    """
    learner = random.Random(f"{episode.id_}/learner").randrange(num_players)
    seat = int(agent_id.rpartition("_")[2])
    rng = random.Random(f"{episode.id_}/{agent_id}")
    if seat == learner or rng.random() >= opponent_share:
        return MAIN
    return f"past_{rng.randrange(pool_size)}"


def make_callbacks() -> type:
    """RLlib callbacks: one torch thread per env runner, env steps by Ray node, illegal moves."""
    from ray.rllib.callbacks.callbacks import RLlibCallback

    class TableGymCallbacks(RLlibCallback):
        def on_environment_created(self, *, env_runner: Any, **kwargs: Any) -> None:
            import torch

            torch.set_num_threads(1)  # an env runner is one CPU: don't contend with the others

        def on_sample_end(self, *, env_runner: Any, metrics_logger: Any, samples: Any, **kw: Any):
            import ray

            node = ray.get_runtime_context().get_node_id() if ray.is_initialized() else "local"
            steps = sum(e.env_steps() for e in samples)
            _log_total(metrics_logger, ("env_steps_by_node", node), steps)

        def on_episode_end(self, *, episode: Any, metrics_logger: Any, **kwargs: Any) -> None:
            infos = episode.get_infos(-1)
            illegal = any("illegal_action" in (i or {}) for i in infos.values())
            _log_total(metrics_logger, "illegal_moves", int(illegal))

    return TableGymCallbacks


def _log_total(metrics_logger: Any, key: Any, value: int) -> None:
    """Add ``value`` to a run-long total: ``lifetime_sum`` in newer Ray; before it, a ``sum``
    was never cleared, which is the same total."""
    try:
        metrics_logger.log_value(key, value, reduce="lifetime_sum")
    except ValueError:
        metrics_logger.log_value(key, value, reduce="sum")


# -- building the algorithm ---------------------------------------------------------------


def build_config(args: Args, options: dict[str, Any], seed: int | None = None) -> Any:
    """RLlib's PPOConfig for this run: envs, league, modules, PPO settings.

    ``seed`` (default ``--seed``) seeds PPO and, offset by worker index, every env runner.
    """
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec

    from tablegym.rllib import ENVS, action_masking_spec

    spec = action_masking_spec(args.game, options, args.hidden_sizes())
    modules = [MAIN, *past_modules(args.pool_size)]
    mapping = functools.partial(
        league_mapping,
        num_players=options["num_players"],
        pool_size=args.pool_size,
        opponent_share=args.opponent_share,
    )
    return (
        PPOConfig()
        .environment(ENVS[args.game], env_config=dict(options))
        .env_runners(
            num_env_runners=args.num_env_runners,
            num_envs_per_env_runner=args.envs_per_runner,
            num_cpus_per_env_runner=1,
        )
        .learners(num_learners=0)  # the learner runs in this process, on CPU
        .multi_agent(policies=set(modules), policy_mapping_fn=mapping, policies_to_train=[MAIN])
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=dict.fromkeys(modules, spec)))
        .training(
            train_batch_size_per_learner=args.train_batch_size,
            minibatch_size=args.minibatch_size,
            num_epochs=args.num_epochs,
            lr=args.lr,
            gamma=args.gamma,
            lambda_=args.gae_lambda,
            entropy_coeff=args.entropy_coeff,
        )
        .callbacks(make_callbacks())
        .debugging(seed=args.seed if seed is None else seed, log_level="ERROR")
    )


def start_ray(args: Args) -> bool:
    """Join ``--address`` or start a local Ray of ``local_cpus`` CPUs; False if Ray was up.

    A Ray already initialised in this process (a notebook's, a test's) is used as it is.
    """
    import logging

    import ray

    if ray.is_initialized():
        return False
    quiet = {"logging_level": logging.ERROR, "log_to_driver": False}
    if args.address is None:
        # RAY_ADDRESS (set by `ray job submit`) would make ray.init join a cluster: honour it.
        if os.environ.get("RAY_ADDRESS"):
            ray.init(**quiet)
        else:
            # address="local": a new Ray of its own, even where /tmp/ray still names a cluster
            # that another run started (and that may be gone), which plain ray.init would join.
            ray.init(address="local", num_cpus=local_cpus(args), include_dashboard=False, **quiet)
        return True
    try:
        ray.init(address=args.address, **quiet)
    except (ConnectionError, RuntimeError) as err:
        raise ValueError(f"--address {args.address}: {err}") from None
    need = args.num_env_runners
    have = ray.cluster_resources().get("CPU", 0)
    if need > have:
        ray.shutdown()
        raise ValueError(
            f"--num-env-runners must be at most the cluster's {have:g} CPUs (one each); got {need}"
        )
    return True


# -- the run ------------------------------------------------------------------------------


class Run:
    """The files of a run directory and the work between iterations."""

    def __init__(self, args: Args, options: dict[str, Any], algo: Any, steps: int = 0):
        from torch.utils.tensorboard import SummaryWriter

        from training.checkpoints import game_meta

        self.args, self.options, self.algo = args, options, algo
        self.dir = args.run_dir()
        self.meta = {**game_meta(args.game, options), "format": "tablegym-rllib-1"}
        self.curve: list[dict[str, Any]] = _read_json(self.dir / "curve.json", [])
        self.progress = _read_progress(self.dir / "progress.jsonl")
        self.league = _read_json(self.dir / "league.json", {"next": 0, "from_iteration": []})
        self.tb = SummaryWriter(str(self.dir / "tb"))
        self.steps = steps  # env steps sampled over the whole run (all seats' decisions)

    def start_league(self) -> None:
        """A new run's past modules are copies of the untrained ``main``."""
        for _ in range(self.args.pool_size):
            self.snapshot(0)

    def snapshot(self, iteration: int) -> None:
        """Copy ``main`` into the next past module, on the learner and on every env runner."""
        slot = self.league["next"] % self.args.pool_size
        module = f"past_{slot}"
        weights = self.algo.learner_group.get_weights(module_ids=[MAIN])[MAIN]
        self.algo.learner_group.set_weights({module: weights})
        self.algo.env_runner_group.sync_weights(
            from_worker_or_learner_group=self.algo.learner_group,
            policies=[module],
            inference_only=True,
        )
        history = self.league["from_iteration"]
        history.extend([None] * (slot + 1 - len(history)))
        history[slot] = iteration
        self.league["next"] = slot + 1
        _write_json(self.dir / "league.json", self.league)

    def record(self, result: dict[str, Any]) -> dict[str, Any]:
        """One progress line and the TensorBoard scalars of an iteration's result."""
        runners = result.get("env_runners", {})
        learner = result.get("learners", {}).get(MAIN, {})
        self.steps = int(runners.get("num_env_steps_sampled_lifetime", 0))
        row = {
            "iteration": int(result["training_iteration"]),
            "env_steps": self.steps,
            "seconds": round(float(result.get("time_this_iter_s", 0.0)), 3),
            # This iteration's decisions of the learning module (the others' are not trained on).
            "main_steps": int(runners.get("num_module_steps_sampled", {}).get(MAIN, 0)),
            # RLlib's timers are smoothed over iterations (EMA), unlike "seconds".
            "sample_seconds": result.get("timers", {}).get("env_runner_sampling_timer"),
            "learn_seconds": result.get("timers", {}).get("learner_update_timer"),
            "episodes": int(runners.get("num_episodes_lifetime", 0)),
            "episode_len_mean": runners.get("episode_len_mean"),
            "main_return_mean": runners.get("module_episode_returns_mean", {}).get(MAIN),
            "policy_loss": learner.get("policy_loss"),
            "vf_loss": learner.get("vf_loss"),
            "entropy": learner.get("entropy"),
            "illegal_moves": int(runners.get("illegal_moves", 0)),
            "env_steps_by_node": {
                k: int(v) for k, v in runners.get("env_steps_by_node", {}).items()
            },
        }
        row = {k: (float(v) if hasattr(v, "item") else v) for k, v in row.items()}
        # Rows from iterations a resumed run does again (saved after its checkpoint) go.
        self.progress = [r for r in self.progress if r["iteration"] < row["iteration"]] + [row]
        lines = "".join(json.dumps(r) + "\n" for r in self.progress)
        write_text_atomic(self.dir / "progress.jsonl", lines)  # whole or not at all
        step = self.steps
        for key, tag in (
            ("main_return_mean", tags.EPISODE_REWARD),
            ("episode_len_mean", "charts/episode_len_mean"),
            ("illegal_moves", "charts/illegal_moves"),
            ("policy_loss", "losses/policy_loss"),
            ("vf_loss", "losses/vf_loss"),
            ("entropy", "losses/entropy"),
        ):
            if row[key] is not None:
                self.tb.add_scalar(tag, row[key], step)
        if row["seconds"]:
            self.tb.add_scalar(
                "charts/env_steps_per_second", self.args.train_batch_size / row["seconds"], step
            )
            self.tb.add_scalar(tags.SAMPLES_PER_SECOND, row["main_steps"] / row["seconds"], step)
        return row

    def checkpoint(self) -> Path:
        """Save the algorithm (RLlib's format) and the tablegym metadata beside it, atomically."""
        final = self.dir / "checkpoint"
        tmp = self.dir / f".checkpoint.{os.getpid()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            self.algo.save_to_path(str(tmp.resolve()))
        except Exception as err:  # a full disk: the previous checkpoint stays
            shutil.rmtree(tmp, ignore_errors=True)
            cause = os_error(err)
            if cause is None:
                raise
            raise WriteError(final, cause) from None
        progress = {"env_steps": self.steps, "iteration": int(self.algo.iteration)}
        _write_json(tmp / "tablegym_meta.json", {**self.meta, **progress})
        old = self.dir / f".checkpoint.{os.getpid()}.old"
        if final.exists():
            os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
        return final

    def evaluate(self, iteration: int) -> None:
        """Tournaments of the checkpointed policy against random and heuristic seats."""
        if self.args.eval_games <= 0:
            return
        from training.evaluate import evaluate

        n = self.options["num_players"]
        spec = f"rllib:{self.dir / 'checkpoint'}"
        for opponent in BASELINES:
            result = evaluate(
                self.args.game, [spec] + [opponent] * (n - 1), games=self.args.eval_games,
                seed=self.args.seed + iteration, workers=1, options=self.options,
            )  # fmt: skip
            me = next(a for a in result["agents"] if a["spec"] == spec)
            row = {
                "step": self.steps, "opponent": opponent, "win_rate": me["win_rate"],
                "ci_low": me["win_rate_ci"][0], "ci_high": me["win_rate_ci"][1],
                "mean_score": me["mean_score"], "fair": 1 / n,
            }  # fmt: skip
            self.curve.append(row)
            self.tb.add_scalar(tags.EVAL_WIN_RATE.format(opponent), row["win_rate"], self.steps)
            self.tb.add_scalar(f"eval/mean_score_vs_{opponent}", row["mean_score"], self.steps)
            if self.args.progress:
                print(
                    f"iteration {iteration}: win rate vs {opponent} {row['win_rate']:.3f} "
                    f"[{row['ci_low']:.3f}, {row['ci_high']:.3f}] (fair {1 / n:.3f})"
                )
        self._write_curve()

    def _write_curve(self) -> None:
        _write_json(self.dir / "curve.json", self.curve)

        def write_csv(tmp: Path) -> None:
            with tmp.open("w", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=CURVE_FIELDS)
                writer.writeheader()
                writer.writerows(self.curve)

        write_atomic(self.dir / "curve.csv", write_csv)

    def finish(self, iteration: int, started: float) -> dict[str, Any]:
        """Plot, summary.json; the run's summary."""
        if self.curve:
            from training.callbacks import plot_curves

            plot_curves(self.curve, self.dir / "curves.png", self.args.game)
        last = self.curve[-1]["step"] if self.curve else None
        final = {r["opponent"]: r for r in self.curve if r["step"] == last}
        summary = {
            "run": str(self.dir),
            "iterations": iteration,
            "env_steps": self.steps,
            "seconds": round(time.monotonic() - started, 1),
            "league_from_iteration": self.league["from_iteration"],
            "final": final,
        }
        _write_json(self.dir / "summary.json", summary)
        self.tb.close()
        return summary


def _read_json(path: Path, default: Any) -> Any:
    return json.loads(path.read_text()) if path.is_file() else default


def _read_progress(path: Path) -> list[dict[str, Any]]:
    """The rows of ``progress.jsonl``; a torn last line (a run that an older version wrote,
    killed mid-line) is dropped."""
    rows = []
    for line in path.read_text().splitlines() if path.is_file() else []:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def _write_json(path: Path, value: Any) -> None:
    write_json_atomic(path, value, indent=1)


class NoSamplesError(RuntimeError):
    """The run's iterations sampled no env steps: nothing was trained."""


def train(args: Args, given: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Run (or resume) an RLlib training run; returns the summary (also in summary.json)."""
    started = time.monotonic()
    args = validate(args, given)
    import ray
    import torch

    torch.set_num_threads(1)  # the learner shares the machine with the env runners
    options = args.game_options()
    run_dir = args.run_dir()
    saved = _read_json(run_dir / "checkpoint" / "tablegym_meta.json", {}) if args.resume else {}
    owns_ray = start_ray(args)
    run_dir.mkdir(parents=True, exist_ok=True)  # only once Ray is there: a failure writes nothing
    try:
        # A resumed run deals new games: its env runners are seeded past the iterations done.
        algo = build_config(args, options, args.seed + saved.get("iteration", 0)).build_algo()
        try:
            run = Run(args, options, algo, steps=saved.get("env_steps", 0))
            if args.resume:
                algo.restore_from_path(str((run_dir / "checkpoint").resolve()))
            else:
                _write_json(run_dir / "config.json", dataclasses.asdict(args))
                run.start_league()
                if args.eval_every:  # the untrained policy, at step 0, as train.py does
                    run.checkpoint()
                    run.evaluate(0)
            iteration = first = algo.iteration
            while iteration < args.iterations:
                result = algo.train()
                iteration = algo.iteration
                row = run.record(result)
                if args.progress:
                    print(
                        f"iteration {iteration}: {row['env_steps']} env steps, "
                        f"{row['seconds']:.1f}s, main return {row['main_return_mean']}"
                    )
                last = iteration >= args.iterations
                if args.snapshot_every and iteration % args.snapshot_every == 0:
                    run.snapshot(iteration)
                evaluate_now = args.eval_every and iteration % args.eval_every == 0
                if last or evaluate_now or iteration % args.checkpoint_every == 0:
                    run.checkpoint()
                if evaluate_now or last:
                    run.evaluate(iteration)
            check_sampled(run.steps, saved.get("env_steps", 0), iteration - first)
            return run.finish(iteration, started)
        finally:
            algo.stop()
    finally:
        if owns_ray:
            ray.shutdown()


def check_sampled(steps: int, steps_before: int, iterations: int) -> None:
    """NoSamplesError unless the ``iterations`` run since ``steps_before`` sampled env steps.

    RLlib ends an iteration whose env runners return nothing within its sample timeout with
    zero steps and no error; a loaded machine made every iteration of a run end that way.
    """
    if iterations > 0 and steps <= steps_before:
        raise NoSamplesError(
            f"the run sampled no env steps in {iterations} iteration(s) (RLlib's env runners "
            "returned nothing within its sample timeout); nothing was trained"
        )


def main(argv: list[str] | None = None) -> None:
    """Console entry point ``tablegym-train-rllib``."""
    argv = sys.argv[1:] if argv is None else argv
    args = Args()
    try:
        require_extra("rllib", "tablegym-train-rllib")
        args = parse_args(argv)
        with thread_write_errors_quiet():  # TensorBoard's writer thread: one line, not two
            summary = train(args, given_flags(argv))
    except KeyboardInterrupt:
        sys.exit(130)
    except (ValueError, FileNotFoundError, NoSamplesError) as err:
        sys.exit(f"error: {err}")
    except OSError as err:  # a full disk, from any writer (TensorBoard's has no file name)
        cause = err if isinstance(err, WriteError) else f"{err.filename}: {err.strerror}"
        saved = args.run_dir() / "checkpoint"
        kept = f"kept {saved} as last saved" if saved.is_dir() else "no checkpoint was saved"
        sys.exit(f"error: {cause}; {kept}")
    print(f"done: {json.dumps(summary, indent=2)}")


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        main()
