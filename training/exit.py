"""Expert iteration: a network learns the search's moves and outcomes, then guides the search.

    python training/exit.py --game kingup --rounds 3 --games 32 --simulations 200

Every round (Anthony et al. 2017; AlphaZero's loop without its self-play scale):

1. **generate**: ``--games`` games with ISMCTS in every seat (``training.search_targets``:
   ``--workers`` processes, shards written as they finish). The search is guided by the
   current network (``prior=ppo:DIR/checkpoint.zip``, leaf values mixed with rollouts by
   ``--value-weight``) once there is one: from round 1 with ``--init``, from round 2 for a
   fresh network, whose round 1 searches with rollouts alone.
2. **fit** the MaskablePPO policy to the last ``--buffer-rounds`` rounds' targets: cross-entropy
   of the policy (over the legal actions) to the root's visit distribution, plus half the
   squared error of the value head to the game's outcome for the acting seat (+1 win, -1
   otherwise: the ``"win"`` reward, which the checkpoint's options record whatever the
   ``--init`` bot learned, KdK's ``"score"`` included), ``--epochs`` passes of
   Adam at ``--learning-rate``. The round's last shards (``--holdout`` of its games) stay out
   of its fit and are measured before and after it (``held_out`` in ``rounds.json``). With
   ``--keep-best`` (default) the policy ends at the epoch with the lowest held-out
   cross-entropy and the value head at the epoch with the lowest held-out squared error (0:
   as the round began), their ``epochs_kept``: early stopping, each head on its own, which the
   two heads' separate layers allow. The held-out losses then chose the epochs, so they
   flatter the fit a little.
3. **save** the network as ``checkpoint.zip`` (``training.checkpoints.save_atomic``, the
   trainer's metadata plus ``exit_round``), so ``ppo:DIR/checkpoint.zip`` plays it,
   ``prior=ppo:...`` searches with it and ``tablegym-train --init`` fine-tunes it.

The network starts as ``--init`` (a game name for its built-in bot, ``ppo:GAME``, or a
checkpoint path) or fresh (``--net-arch``). A run directory (``--out``, default
``runs/exit_GAME``) holds ``config.json``, ``checkpoint.zip``, ``rounds/round_KKK/`` (the
targets' shards) and ``rounds.json`` (per round: decisions, the generation's wall and CPU
seconds, the fit's losses and seconds). As ``training/train.py`` it refuses to reuse a
directory that holds a run without ``--resume DIR`` (which continues the round count up to
``--rounds``; shards of an unfinished round are kept) or ``--overwrite`` (the old run goes
once the new one has its first checkpoint, ``training.rundir``); Ctrl-C and SIGTERM end it
with one line, keeping the last round's checkpoint and the finished shards.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tablegym.cli import dataclass_parser, given_flags, require_extra  # noqa: E402
from tablegym.files import WriteError, write_json_atomic  # noqa: E402
from tablegym.games import GAMES, check_game, rules_of, spec_of  # noqa: E402
from tablegym.options import parse_key_value, parse_options  # noqa: E402
from training.rundir import (  # noqa: E402
    HISTORY,
    describe_changes,
    drop_aside,
    remove,
    restore_aside,
    set_aside,
    write_config,
)

RUN_FILES = ("config.json", "checkpoint.zip", "rounds", "rounds.json")
# Settings a resumed run must keep: they define the network or the games it learns from.
MODEL_SETTINGS = ("game", "num_players", "option", "net_arch", "init")


@dataclass
class Args:
    """Every option of an expert-iteration run; each field's ``help`` is its ``--help``."""

    game: str = field(default="kingup", metadata={"help": f"game: {', '.join(GAMES)}"})
    num_players: int = field(
        default=0, metadata={"help": "players (0: the game's default table size)"}
    )
    option: list[str] = field(
        default_factory=list, metadata={"help": "more game options as KEY=VALUE (repeatable)"}
    )
    rounds: int = field(default=3, metadata={"help": "rounds of the run (a resume continues)"})
    games: int = field(default=32, metadata={"help": "search games per round"})
    simulations: int = field(default=200, metadata={"help": "search simulations per decision"})
    value_weight: float = field(
        default=0.5,
        metadata={"help": "share of the network's value in a leaf's value (the rest: rollout)"},
    )
    puct: float = field(default=1.0, metadata={"help": "the search's PUCT constant"})
    search: str = field(
        default="", metadata={"help": "more search options, KEY=VALUE,... (agents/ismcts.py)"}
    )
    buffer_rounds: int = field(
        default=2, metadata={"help": "recent rounds whose targets the network is fitted to"}
    )
    holdout: float = field(
        default=0.1,
        metadata={"help": "share of each round's games kept out of its fit and measured after "
                  "it (whole shards, at least one of two or more; 0: none)"},
    )  # fmt: skip
    epochs: int = field(default=10, metadata={"help": "passes over the buffer per round"})
    keep_best: bool = field(
        default=True,
        metadata={"help": "keep the policy and the value head each from the epoch (0: the "
                  "round's start) with the lowest loss on the held-out games"},
    )  # fmt: skip
    batch_size: int = field(default=256, metadata={"help": "minibatch size of the fit"})
    learning_rate: float = field(default=1e-3, metadata={"help": "Adam learning rate"})
    init: str = field(
        default="",
        metadata={"help": "start from this policy: a game name or ppo:GAME for its built-in "
                  "bot, or a checkpoint path (default: a fresh network)"},
    )  # fmt: skip
    net_arch: str = field(default="128,128", metadata={"help": "hidden layers of a fresh network"})
    workers: int = field(default=2, metadata={"help": "processes playing the search games"})
    shard_games: int = field(default=2, metadata={"help": "games per shard file"})
    seed: int = field(default=0, metadata={"help": "seed of the games, searches and fits"})
    out: str = field(default="", metadata={"help": "run directory (default runs/exit_GAME)"})
    overwrite: bool = field(default=False, metadata={"help": "replace a run already in --out"})
    resume: str | None = field(default=None, metadata={"help": "run directory to continue"})
    progress: bool = field(default=True, metadata={"help": "show progress bars"})

    def table(self) -> dict[str, Any]:
        """The game options of the run's table, checked by the game."""
        try:
            options = parse_options(self.option)
        except ValueError as err:
            raise ValueError(f"--option: {err}") from None
        if "num_players" in options:
            raise ValueError("--option num_players=...: use --num-players")
        if options.get("reward", "win") != "win":
            raise ValueError(
                f"--option reward={options['reward']}: the value head is fitted to the games' "
                "outcomes, the 'win' reward; leave reward out or give reward=win"
            )
        n = self.num_players or spec_of(self.game).default_players
        options["num_players"] = n
        options["reward"] = "win"  # what the checkpoint's value head estimates
        rules_of(self.game).make_config(**options)
        return options

    def layers(self) -> list[int]:
        try:
            sizes = [int(x) for x in self.net_arch.split(",")]
        except ValueError:
            sizes = []
        if not sizes or min(sizes) < 1:
            raise ValueError(f"--net-arch must be positive layer sizes; got {self.net_arch!r}")
        return sizes

    def init_path(self) -> Path | None:
        """The checkpoint ``--init`` names (None: fresh), checked against the game."""
        if not self.init:
            return None
        from training.bots import builtin_bot_path
        from training.checkpoints import check_meta, read_meta, training_meta

        name = self.init.removeprefix("ppo:")
        path = builtin_bot_path(name) if name in GAMES else Path(name)
        try:
            meta = read_meta(path)
            check_meta(meta, training_meta(self.game, [self.table()]), path)
        except (FileNotFoundError, ValueError) as err:
            raise ValueError(f"--init {self.init}: {err}") from None
        return path

    def search_options(self) -> list[str]:
        """``--search`` as KEY=VALUE items (checked when the first search is built)."""
        items = [s.strip() for s in self.search.split(",") if s.strip()]
        for item in items:
            try:
                parse_key_value(item)
            except ValueError as err:
                raise ValueError(f"--search: {err}") from None
            if item.split("=")[0].strip() in ("prior", "root", "value_weight", "puct"):
                raise ValueError(f"--search {item}: set by the run; use its own flag")
        return items

    def teacher(self, network: Path | None) -> str:
        """The search spec of a round: guided by ``network`` if there is one."""
        spec = f"ismcts:{self.simulations},root=tree"
        if network is not None:
            if "," in str(network):
                raise ValueError(f"--out {self.run_dir()}: a path with commas cannot be a prior")
            # A value head not yet fitted to outcomes (round 1 from a KdK bot, which learned its
            # score return) is no win estimate: that round's search takes the prior alone.
            weight = self.value_weight if network_reward(network) == "win" else 0.0
            spec += f",prior=ppo:{network},value_weight={weight},puct={self.puct}"
        return ",".join([spec, *self.search_options()])

    def run_dir(self) -> Path:
        return Path(self.out or f"runs/exit_{self.game}")

    def check(self) -> Args:
        """ValueError naming the first bad option and what it allows; ``self`` otherwise."""
        check_game(self.game)
        self.table()
        self.layers()
        for name in ("rounds", "games", "simulations", "buffer_rounds", "epochs", "batch_size",
                     "workers", "shard_games"):  # fmt: skip
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                flag = name.replace("_", "-")
                raise ValueError(f"--{flag} must be an integer >= 1; got {value!r}")
        if not 0 <= self.value_weight <= 1:
            raise ValueError(f"--value-weight must lie in [0, 1]; got {self.value_weight!r}")
        if self.puct < 0:
            raise ValueError(f"--puct must be a number >= 0; got {self.puct!r}")
        if not 0 <= self.holdout < 1:
            raise ValueError(f"--holdout must lie in [0, 1); got {self.holdout!r}")
        if not 0 < self.learning_rate <= 1:
            raise ValueError(f"--learning-rate must lie in (0, 1]; got {self.learning_rate!r}")
        self.search_options()
        self.init_path()
        from training.search_targets import teacher

        teacher(self.teacher(None), self.game, self.seed)  # a bad --search fails now
        return self


# -- the run directory --------------------------------------------------------------------


def prepare_run(args: Args, given: frozenset[str]) -> tuple[Args, Path]:
    """The run's config and directory; nothing is written here. A new run needs an empty
    directory (or ``--overwrite``); ``--resume DIR`` takes DIR's config, refuses changes to
    :data:`MODEL_SETTINGS` and applies the other flags given (``--rounds`` ...)."""
    if not args.resume:
        run = args.run_dir()
        if run.exists() and not run.is_dir():
            raise ValueError(f"--out {run} is a file, not a directory")
        held = [name for name in RUN_FILES if (run / name).exists()]
        if held and not args.overwrite:
            raise ValueError(
                f"{run} already holds a run ({held[0]}); continue it with --resume {run} "
                "or replace it with --overwrite"
            )
        return args, run
    run = Path(args.resume)
    try:
        settings = json.loads((run / "config.json").read_text())
    except FileNotFoundError:
        raise ValueError(f"--resume {run}: no run there (config.json missing)") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"--resume {run}: invalid config.json ({err})") from None
    settings.pop(HISTORY, None)
    recorded = Args(**{**settings, "resume": None})
    for name in MODEL_SETTINGS:
        if name in given and getattr(args, name) != getattr(recorded, name):
            raise ValueError(
                f"--resume {run}: the run was made with --{name.replace('_', '-')} "
                f"{getattr(recorded, name)!r}; it cannot change to {getattr(args, name)!r}"
            )
    changes = {n: getattr(args, n) for n in given if n not in ("resume", "out", "overwrite")}
    return dataclasses.replace(recorded, **changes, out=str(run), resume=str(run)).check(), run


def rounds_done(run: Path) -> int:
    """The rounds the run's checkpoint has learned from (0: none yet, or no checkpoint)."""
    from training.checkpoints import read_meta

    checkpoint = run / "checkpoint.zip"
    return int(read_meta(checkpoint).get("exit_round", 0)) if checkpoint.is_file() else 0


# -- the network --------------------------------------------------------------------------


def new_network(args: Args) -> Any:
    """The round-0 network: ``--init``'s policy, or a fresh MaskablePPO ``MlpPolicy``."""
    from sb3_contrib import MaskablePPO

    init = args.init_path()
    if init is not None:
        return MaskablePPO.load(init, device="cpu")
    from training.gym_env import SingleSeatEnv

    env = SingleSeatEnv(args.game, opponents="random", **args.table())
    return MaskablePPO(
        "MlpPolicy", env, policy_kwargs={"net_arch": args.layers()}, seed=args.seed, device="cpu"
    )


def fit(model: Any, data: Any, args: Args, seed: int, held: Any = None) -> dict[str, Any]:
    """Fit ``model.policy`` to targets (``training.search_targets.Targets``): cross-entropy to
    the visit distributions over the legal actions, half the squared error of the values to
    the outcomes, ``--epochs`` passes. With ``held`` targets and ``--keep-best``, each head
    ends at its best epoch on them (:class:`BestEpochs`). Then :func:`measure` on ``data``."""
    import numpy as np
    import torch

    policy = model.policy
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.learning_rate)
    obs, masks, visits, outcomes = tensors(data)
    rng = np.random.default_rng(seed)
    best = BestEpochs(policy, held) if held is not None and args.keep_best else None
    for epoch in range(1, args.epochs + 1):
        policy.set_training_mode(True)
        for idx in np.array_split(rng.permutation(len(data)), max(1, len(data) // args.batch_size)):
            ce, value_loss = losses(policy, obs[idx], masks[idx], visits[idx], outcomes[idx])
            optimizer.zero_grad()
            (ce + 0.5 * value_loss).backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
            optimizer.step()
        policy.set_training_mode(False)
        if best is not None:
            best.offer(epoch)
    stats: dict[str, Any] = {}
    if best is not None:
        stats["epochs_kept"] = best.restore()
    return {**measure(policy, data), **stats}


# SB3's names of the layers that only the value head and only the policy use (``net_arch`` as
# a list gives each its own MLP; nothing is shared but a parameter-free flatten).
VALUE_PARAMETERS = ("mlp_extractor.value_net.", "value_net.")
POLICY_PARAMETERS = ("mlp_extractor.policy_net.", "action_net.")


class BestEpochs:
    """Early stopping of each head on held-out targets: the policy's parameters at the epoch
    of lowest held-out cross-entropy, the value head's at the epoch of lowest held-out squared
    error. A policy whose two heads share parameters is judged on their sum instead."""

    def __init__(self, policy: Any, held: Any):
        self.policy, self.held = policy, tensors(held)
        names = [name for name, _ in policy.named_parameters()]
        self.value = {n for n in names if n.startswith(VALUE_PARAMETERS)}
        acting = {n for n in names if n.startswith(POLICY_PARAMETERS)}
        self.separate = len(self.value) + len(acting) == len(names)
        self.kept = {"policy": (float("inf"), 0, {}), "value": (float("inf"), 0, {})}
        self.offer(0)

    def offer(self, epoch: int) -> None:
        """Keep the current parameters of each head that is better on the held-out targets."""
        import torch

        with torch.no_grad():
            ce, mse = (float(x) for x in losses(self.policy, *self.held))
        scores = {"policy": ce, "value": mse} if self.separate else {"policy": ce + 0.5 * mse}
        state = self.policy.state_dict()
        for head, score in scores.items():
            if score < self.kept[head][0]:
                saved = {k: v.clone() for k, v in state.items() if self._part(k) == head}
                self.kept[head] = (score, epoch, saved)

    def _part(self, key: str) -> str:
        return "value" if self.separate and key in self.value else "policy"

    def restore(self) -> dict[str, int]:
        """Load the kept parameters; the epoch each head was kept from."""
        heads = ("policy", "value") if self.separate else ("policy",)
        for head in heads:
            self.policy.load_state_dict(self.kept[head][2], strict=False)
        return {head: self.kept[head][1] for head in heads}


def measure(policy: Any, data: Any) -> dict[str, float]:
    """How well ``policy`` matches targets: the cross-entropy to the visit distributions, the
    KL from them (the cross-entropy less their entropy), the values' squared error to the
    outcomes and how often the policy's favourite is the search's most visited move."""
    import numpy as np
    import torch

    obs, masks, visits, outcomes = tensors(data)
    with torch.no_grad():
        ce, value_mse = (float(x) for x in losses(policy, obs, masks, visits, outcomes))
        probs = policy.get_distribution(obs, action_masks=masks).distribution.probs.numpy()
    target = data.visits
    entropy = -np.sum(np.where(target > 0, target * np.log(np.maximum(target, 1e-12)), 0), axis=1)
    return {
        "cross_entropy": round(ce, 4),
        "kl": round(ce - float(entropy.mean()), 4),
        "value_mse": round(value_mse, 4),
        "agreement": round(float(np.mean(probs.argmax(1) == target.argmax(1))), 4),
    }


def tensors(data: Any) -> tuple[Any, ...]:
    """The targets' observations, masks, visit distributions and outcomes as torch tensors."""
    import torch

    return tuple(
        torch.as_tensor(x) for x in (data.observations, data.masks, data.visits, data.outcomes)
    )


def held_out(shards: int, share: float) -> int:
    """How many of a round's ``shards`` (the last ones) stay out of its fit: ``share`` of them,
    rounded, at least one where there are two or more, never all."""
    if share <= 0 or shards < 2:
        return 0
    return min(shards - 1, max(1, round(share * shards)))


def losses(policy: Any, obs: Any, masks: Any, visits: Any, outcomes: Any) -> tuple[Any, Any]:
    """The policy's cross-entropy to ``visits`` and its values' squared error to ``outcomes``."""
    import torch

    log_probs = policy.get_distribution(obs, action_masks=masks).distribution.logits
    # Illegal actions hold a huge negative log-probability and a zero target: leave them out.
    ce = -torch.where(visits > 0, visits * log_probs, torch.zeros_like(log_probs)).sum(1).mean()
    values = policy.predict_values(obs).flatten()
    return ce, torch.nn.functional.mse_loss(values, outcomes)


# -- the run ------------------------------------------------------------------------------


class _Stopped(KeyboardInterrupt):
    """SIGTERM, raised where the run is so that it ends like Ctrl-C."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Stopped


def run_rounds(args: Args, run: Path) -> dict[str, Any]:
    """Play and fit rounds until ``args.rounds`` are done; the summary of the rounds."""
    from training.checkpoints import save_atomic, training_meta
    from training.children import one_thread
    from training.search_targets import generate

    one_thread(numba_too=False)  # torch: small fits, and more threads are slower on small machines
    checkpoint, log_path = run / "checkpoint.zip", run / "rounds.json"
    meta = training_meta(args.game, [args.table()])
    done = rounds_done(run)
    log = json.loads(log_path.read_text()) if done and log_path.is_file() else []
    if done:
        from training.checkpoints import load_model

        model = load_model(checkpoint, args.game, args.table())
    else:
        model = new_network(args)
        # The run's first checkpoint: the --init bot's value head still estimates its own reward.
        save_atomic(model, checkpoint, {**first_meta(meta, args.init_path()), "exit_round": 0})
        drop_aside(run)
    guided = done > 0 or bool(args.init)
    for r in range(done + 1, args.rounds + 1):
        spec = args.teacher(checkpoint if guided else None)
        started = time.process_time()
        data, cost = generate(
            args.game, args.table(), spec, args.games, args.seed * 100_003 + r,
            run / "rounds" / f"round_{r:03d}", args.workers, args.shard_games, args.progress,
        )  # fmt: skip
        fitted, held = round_targets(args, run, r)
        fit_started = time.process_time()
        before = measure(model.policy, held) if held is not None else None
        stats = fit(model, fitted, args, seed=args.seed + r, held=held)
        if held is not None:
            stats["held_out"] = {"decisions": len(held), "before": before,
                                 **measure(model.policy, held)}  # fmt: skip
        model.num_timesteps += len(data)  # the decisions learned from, as PPO counts samples
        save_atomic(model, checkpoint, {**meta, "exit_round": r})
        entry = {"round": r, "teacher": spec, "decisions": len(data),
                 "buffer": len(fitted), **cost, **stats,
                 "fit_cpu_seconds": round(time.process_time() - fit_started, 2),
                 "main_cpu_seconds": round(time.process_time() - started, 2)}  # fmt: skip
        log.append(entry)
        write_json_atomic(log_path, log)
        if args.progress:
            print(f"round {r}: {json.dumps(entry)}", flush=True)
        guided = True
    return {"run": str(run), "rounds": len(log), "checkpoint": str(checkpoint), "log": log[-1:]}


def network_reward(path: Path) -> str:
    """The reward the value head of checkpoint ``path`` estimates (``"win"`` once fitted)."""
    from training.checkpoints import read_meta
    from training.ppo_agent import value_reward

    return value_reward(read_meta(path))


def first_meta(meta: dict[str, Any], init: Path | None) -> dict[str, Any]:
    """The metadata of a run's round-0 checkpoint: the reward its value head estimates is the
    ``--init`` bot's (a KdK bot may have learned the ``"score"`` return) until round 1 fits it."""
    if init is None:
        return meta
    return {**meta, "options": {**meta["options"], "reward": network_reward(init)}}


def round_targets(args: Args, run: Path, r: int) -> tuple[Any, Any]:
    """Round ``r``'s targets to fit (its shards but the held-out ones, then the whole shards
    of the buffer's earlier rounds) and its held-out targets (None where none are held out)."""
    from training.search_targets import Targets, shard_paths

    def load(paths: list[Path]) -> Targets:
        return Targets.concat([Targets.load(p) for p in paths])

    shards = shard_paths(run / "rounds" / f"round_{r:03d}", args.games, args.shard_games)
    kept = len(shards) - held_out(len(shards), args.holdout)
    earlier = [
        load(sorted(d.glob("shard_*.npz")))
        for k in range(max(1, r - args.buffer_rounds + 1), r)
        if (d := run / "rounds" / f"round_{k:03d}").is_dir()
    ]
    held = load(shards[kept:]) if kept < len(shards) else None
    return Targets.concat([load(shards[:kept]), *earlier]), held


def train(args: Args, run: Path) -> dict[str, Any]:
    """Run (or resume) the rounds in ``run``, with the trainer's run-directory guarantees."""
    resuming = args.resume is not None
    created = not run.exists()
    recorded = json.loads((run / "config.json").read_text()) if resuming else None
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    start = rounds_done(run) if resuming else 0
    try:
        run.mkdir(parents=True, exist_ok=True)
        paths = [run / name for name in RUN_FILES if (run / name).exists()]
        if not resuming and args.overwrite:
            set_aside(run, paths)  # kept until the new run's first checkpoint
        elif not resuming:
            remove(paths)
        changed = write_config(run / "config.json", dataclasses.asdict(args), start, recorded)
        if changed:
            print(f"resume: changed {describe_changes(changed)} (history in config.json)")
        summary = run_rounds(args, run)
        if summary["rounds"] <= start:
            raise SystemExit(f"error: the run made no round (it stayed at round {start})")
        return summary
    except KeyboardInterrupt as stop:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        what = "stopped" if isinstance(stop, _Stopped) else "interrupted"
        if (run / "checkpoint.zip").is_file():
            raise SystemExit(
                f"{what} after round {rounds_done(run)}; kept {run / 'checkpoint.zip'} and the "
                f"finished shards (continue with --resume {run})"
            ) from None
        raise SystemExit(f"{what} before the first checkpoint; {_discard(run, created)}") from None
    except WriteError as err:
        raise SystemExit(f"error: {err} (the last round's checkpoint is kept)") from None
    except BaseException:
        if not (run / "checkpoint.zip").is_file():
            _discard(run, created)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)


def _discard(run: Path, created: bool) -> str:
    """Undo a start that saved nothing (see ``training.train``)."""
    if created:
        shutil.rmtree(run, ignore_errors=True)
        return "nothing saved"
    paths = [run / name for name in RUN_FILES if (run / name).exists()]
    if restore_aside(run, paths):
        return f"nothing saved; {run} holds the run it was replacing again"
    return "nothing saved"


def build_parser() -> argparse.ArgumentParser:
    """argparse from the fields of :class:`Args`."""
    return dataclass_parser(Args, "tablegym-exit", __doc__.split("\n\n")[0], {"game": list(GAMES)})


def main(argv: list[str] | None = None) -> None:
    """Console entry point ``tablegym-exit``."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        require_extra("train", "tablegym-exit")
        args = Args(**vars(build_parser().parse_args(argv))).check()
        args, run = prepare_run(args, given_flags(argv))
        if args.resume and rounds_done(run) >= args.rounds:
            raise ValueError(
                f"{run} has done {rounds_done(run)} rounds, at or past --rounds {args.rounds}: "
                f"nothing to do; continue it with --resume {run} --rounds N for a larger N"
            )
        # The search workers' small matrix products: one BLAS thread each (two per core
        # wait on each other on a busy machine); spawned workers read it as numpy loads.
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        summary = train(args, run)
    except (ValueError, FileNotFoundError) as err:
        sys.exit(f"error: {err}")
    print(f"done: {json.dumps(summary, indent=2)}")


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        main()
