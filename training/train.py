"""Self-play MaskablePPO for the tablegym games.

    python training/train.py --game kingup --out runs/kingup

The default budget is 1M learner steps or 25 minutes, whichever comes first. The policy first
imitates the game's heuristic agent (``--warm-start`` games, see ``training.imitation``), then
PPO improves it from reward. One seat learns per episode (drawn anew each time); the other
seats are an opponent pool of frozen snapshots of the learner (every ``--snapshot-every``
steps), the heuristic and the random agent (``--opponent-mix``). Several environments run in
parallel processes. Every ``--eval-every`` steps the current policy plays tournaments against
random and heuristic opponents (seats rotated) and the best policy by its win rate against the
heuristic is kept.

A run directory holds: ``config.json`` (the exact config), ``checkpoint.zip`` (latest, written
atomically), ``best.zip``, ``pool/`` (snapshots), ``curve.csv`` / ``curve.json`` (evaluations),
``curves.png`` (win rates over steps), ``tb/`` (TensorBoard). ``--resume runs/NAME/checkpoint.zip``
continues with the optimiser state and step count; Ctrl-C saves a checkpoint before exiting.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tablegym.games import DEFAULT_PLAYERS, GAMES  # noqa: E402
from tablegym.options import parse_options  # noqa: E402
from training.checkpoints import (  # noqa: E402
    game_meta,
    load_model,
    read_meta,
    save_atomic,
)

# KdK games are four times longer than the others, so fewer of them give as many decisions.
DEFAULT_WARM_START = {"kingup": 2000, "updown": 2000, "kdk": 1000}


@dataclass
class Args:
    """Every option of a training run; each field's ``help`` is its ``--help`` text."""

    game: str = field(default="kingup", metadata={"help": f"game: {', '.join(GAMES)}"})
    num_players: int | None = field(
        default=None, metadata={"help": "players (default: kingup 4, updown 2, kdk 3)"}
    )
    option: list[str] = field(
        default_factory=list, metadata={"help": "more game options as KEY=VALUE (repeatable)"}
    )
    timesteps: int = field(default=1_000_000, metadata={"help": "total learner steps of the run"})
    max_minutes: float = field(
        default=25.0,
        metadata={"help": "stop cleanly after this many minutes, warm start included (0: none)"},
    )
    out: str = field(default="", metadata={"help": "run directory (default runs/GAME)"})
    seed: int = field(default=0, metadata={"help": "seed of environments, opponents and PPO"})
    n_envs: int = field(default=4, metadata={"help": "environments run in parallel"})
    vec: str = field(default="subproc", metadata={"help": "subproc (processes) or dummy"})
    warm_start: int | None = field(
        default=None,
        metadata={
            "help": "heuristic games imitated before PPO starts (default: kingup 2000, "
            "updown 2000, kdk 1000; 0: start from a random policy)"
        },
    )
    warm_epochs: int = field(default=10, metadata={"help": "epochs of imitation"})
    opponent_mix: str = field(
        default="snapshot=0.4,heuristic=0.5,random=0.1",
        metadata={"help": "opponent kinds and weights, drawn per seat and episode"},
    )
    snapshot_every: int = field(default=25_000, metadata={"help": "steps between snapshots"})
    pool_size: int = field(default=5, metadata={"help": "snapshots kept in the pool"})
    eval_every: int = field(default=25_000, metadata={"help": "steps between evaluations"})
    eval_games: int = field(default=200, metadata={"help": "games per evaluation and baseline"})
    checkpoint_every: int = field(default=25_000, metadata={"help": "steps between checkpoints"})
    # Small steps and a small entropy bonus: PPO starts from the imitated policy and should
    # improve it, not wash it out in its first updates.
    learning_rate: float = field(default=1e-4, metadata={"help": "Adam learning rate"})
    n_steps: int = field(default=512, metadata={"help": "rollout steps per env and update"})
    batch_size: int = field(default=256, metadata={"help": "minibatch size"})
    n_epochs: int = field(default=5, metadata={"help": "epochs per update"})
    gamma: float = field(default=0.995, metadata={"help": "discount"})
    gae_lambda: float = field(default=0.95, metadata={"help": "GAE lambda"})
    ent_coef: float = field(default=0.001, metadata={"help": "entropy bonus"})
    net_arch: str = field(default="256,256", metadata={"help": "hidden layer sizes"})
    resume: str | None = field(default=None, metadata={"help": "checkpoint to continue from"})
    config: str | None = field(default=None, metadata={"help": "JSON file with any of these"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})

    def game_options(self) -> dict[str, Any]:
        """The game's options: player count plus every ``--option KEY=VALUE``."""
        players = self.num_players or DEFAULT_PLAYERS[self.game]
        return {"num_players": players, **parse_options(self.option)}

    def warm_start_games(self) -> int:
        return DEFAULT_WARM_START[self.game] if self.warm_start is None else self.warm_start

    def run_dir(self) -> Path:
        return Path(self.out or f"runs/{self.game}")


# -- command line -------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """argparse from the fields of :class:`Args`; defaults come from the dataclass."""
    parser = argparse.ArgumentParser(
        prog="tablegym-train",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    defaults = Args()
    for f in dataclasses.fields(Args):
        flag = "--" + f.name.replace("_", "-")
        kwargs: dict[str, Any] = {"help": f.metadata["help"], "default": getattr(defaults, f.name)}
        if f.name == "game":
            kwargs["choices"] = sorted(GAMES)
        if f.type == "bool":
            kwargs["action"] = argparse.BooleanOptionalAction
        elif f.name == "option":
            kwargs.update(action="append", metavar="KEY=VALUE", default=[])
        elif f.type in ("int | None", "int"):
            kwargs["type"] = int
        elif f.type == "float":
            kwargs["type"] = float
        parser.add_argument(flag, **kwargs)
    return parser


def parse_args(argv: list[str] | None = None) -> Args:
    """Args from the command line; ``--config FILE`` supplies values the command line lacks."""
    parser = build_parser()
    ns = parser.parse_args(argv)
    values = vars(ns)
    if ns.config:
        file_values = json.loads(Path(ns.config).read_text())
        known = {f.name for f in dataclasses.fields(Args)}
        unknown = sorted(set(file_values) - known)
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r} in {ns.config}; allowed: {sorted(known)}")
        given = _given_flags(argv if argv is not None else sys.argv[1:])
        for key, value in file_values.items():
            if key not in given:
                values[key] = value
    return Args(**values)


def _given_flags(argv: list[str]) -> set[str]:
    return {a[2:].split("=")[0].replace("-", "_") for a in argv if a.startswith("--")}


# -- the run ------------------------------------------------------------------------------


def make_vec_env(args: Args, options: dict[str, Any], snapshots: list[str]) -> Any:
    """``n_envs`` self-play environments, each seeded from ``args.seed``."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from training.selfplay import SelfPlayEnv, parse_mix

    mix = parse_mix(args.opponent_mix)

    def factory() -> SelfPlayEnv:
        return SelfPlayEnv(args.game, options, mix, snapshots)

    fns = [factory] * args.n_envs
    if args.vec == "subproc" and args.n_envs > 1:
        vec = SubprocVecEnv(fns, start_method="spawn" if sys.platform == "darwin" else "fork")
    elif args.vec in ("subproc", "dummy"):
        vec = DummyVecEnv(fns)
    else:
        raise ValueError(f"vec must be one of 'subproc', 'dummy'; got {args.vec!r}")
    vec.seed(args.seed)
    return vec


def new_model(args: Args, vec: Any, run: Path) -> Any:
    from sb3_contrib import MaskablePPO

    arch = [int(x) for x in args.net_arch.split(",") if x.strip()]
    return MaskablePPO(
        "MlpPolicy",
        vec,
        learning_rate=args.learning_rate,
        n_steps=args.n_steps,
        batch_size=args.batch_size,
        n_epochs=args.n_epochs,
        gamma=args.gamma,
        gae_lambda=args.gae_lambda,
        ent_coef=args.ent_coef,
        policy_kwargs={"net_arch": arch},
        tensorboard_log=str(run / "tb"),
        seed=args.seed,
        device="cpu",
        verbose=0,
    )


def warm_start(model: Any, args: Args, options: dict[str, Any], run: Path) -> None:
    """Imitate the heuristic (``training.imitation``) before PPO; stats go to warm_start.json."""
    games = args.warm_start_games()
    if games <= 0:
        return
    from training.imitation import collect, pretrain

    t0 = time.monotonic()
    demos = collect(args.game, options, games, seed=args.seed + 1_000_000, gamma=args.gamma)
    stats = pretrain(model, demos, epochs=args.warm_epochs, seed=args.seed, progress=args.progress)
    stats = {"games": games, "decisions": len(demos), **stats}
    stats["seconds"] = round(time.monotonic() - t0, 1)
    (run / "warm_start.json").write_text(json.dumps(stats, indent=2) + "\n")
    if args.progress:
        print(f"warm start: {json.dumps(stats)}")


def train(args: Args, given: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Run (or resume) training; returns the final summary (also written to the run dir).

    ``given`` names the options set on the command line; on resume they must agree with the
    run's recorded config.
    """
    import torch

    from training.callbacks import TrainingCallback

    torch.set_num_threads(1)  # the environments use the other core
    started = time.monotonic()
    if args.resume:
        args = _args_for_resume(args, given)
    options = args.game_options()
    meta = game_meta(args.game, options)
    run = args.run_dir()
    (run / "pool").mkdir(parents=True, exist_ok=True)
    (run / "config.json").write_text(json.dumps(dataclasses.asdict(args), indent=2) + "\n")
    snapshots = sorted(str(p) for p in (run / "pool").glob("snap_*.zip"))[-args.pool_size :]
    vec = make_vec_env(args, options, snapshots)
    try:
        if args.resume:
            # checked against this run's game; the optimiser state comes along
            model = load_model(args.resume, args.game, options, env=vec)
        else:
            model = new_model(args, vec, run)
            warm_start(model, args, options, run)
        callback = TrainingCallback(args, options, meta, run, snapshots, started)
        remaining = max(0, args.timesteps - model.num_timesteps)
        try:
            model.learn(
                total_timesteps=remaining,
                callback=callback,
                reset_num_timesteps=not args.resume,
                tb_log_name="ppo",
            )
        except KeyboardInterrupt:
            save_atomic(model, run / "checkpoint.zip", meta)
            print(f"\ninterrupted at step {model.num_timesteps}; saved {run / 'checkpoint.zip'}")
            raise
        return callback.finish(model)
    finally:
        vec.close()


def _args_for_resume(args: Args, given: frozenset[str]) -> Args:
    """Resuming keeps the run's recorded config; only the step target may grow.

    The checkpoint is read first, so a missing, corrupt or mismatched one is refused before
    anything is written.
    """
    path = Path(args.resume)
    meta = read_meta(path)
    if "game" in given and args.game != meta["game"]:
        raise ValueError(
            f"checkpoint {path} was trained for game={meta['game']!r}, not {args.game!r}"
        )
    if given & {"num_players", "option"}:
        for key, value in args.game_options().items():
            if meta["options"].get(key) != value:
                raise ValueError(
                    f"checkpoint {path} was trained with {key}={meta['options'].get(key)!r}, "
                    f"not {value!r}"
                )
    recorded = path.parent / "config.json"
    if recorded.is_file():
        base = Args(**json.loads(recorded.read_text()))
    else:
        base = dataclasses.replace(
            args, game=meta["game"], num_players=meta["options"]["num_players"]
        )
    return dataclasses.replace(
        base, resume=str(path), timesteps=max(args.timesteps, base.timesteps), out=str(path.parent)
    )


def main(argv: list[str] | None = None) -> None:
    """Console entry point ``tablegym-train``."""
    try:
        args = parse_args(argv)
        start = time.time()
        summary = train(args, frozenset(_given_flags(sys.argv[1:] if argv is None else argv)))
    except KeyboardInterrupt:
        sys.exit(130)
    except (ValueError, FileNotFoundError) as err:
        sys.exit(f"error: {err}")
    print(f"done in {time.time() - start:.0f}s: {json.dumps(summary, indent=2)}")


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        main()
