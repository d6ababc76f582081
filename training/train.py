"""Self-play MaskablePPO for the tablegym games.

    python training/train.py --game kingup

The default budget is 25 minutes (``--max-minutes``) or ``--timesteps`` learner samples,
whichever comes first, warm start included. The policy first imitates the game's heuristic
(``--warm-start`` games, ``training.imitation``), then PPO improves it from reward.
``--anneal lr,ent`` lowers the learning rate and the entropy bonus linearly to zero over that
budget: PPO's schedules see the larger of the samples' and the minutes' fraction used. A
resumed run anneals from where its samples stand, over its new ``--max-minutes``.

``--num-games`` games run at once in one process (``training.collector``; the batched numba
engine where the game has one). By default the run is a league (``training.league``, design
and parameters in its docstring and ``docs/training.md``): every seat of every game is drawn
from ``--opponent-mix`` (the current policy, whose seats all learn; an entry of the snapshot
pool chosen by prioritised fictitious self-play; the heuristic and random play as anchors; or
a ``fixed`` external player, ``--fixed SPEC``), one seat always the learner's;
``--exploiters`` exploiters train against the frozen policy beside it and join the pool when
they beat it. ``--num-players 3,4,5,6`` trains one policy over tables of every listed size.
Every ``--eval-every`` samples the current policy plays ``--eval-games`` games against random
players, heuristic players and the pool (seats rotated, in batch); ``best.zip`` keeps the
policy with the best mean gain over the three, never the heuristic alone.

A run directory holds ``config.json`` (the exact config), ``checkpoint.zip`` (latest, written
atomically), ``best.zip``, ``pool/`` (snapshots and exploiters), ``exploiter_K.pt`` and
``league.json`` (the exploiters and their tests), ``curve.csv`` / ``curve.json`` and
``curves.png`` (evaluations), ``warm_start.json``, ``summary.json`` (results, samples/s, where
the time went) and ``tb/`` (TensorBoard). A directory that holds a run is never reused
silently: continue it with ``--resume DIR`` (to its recorded ``--timesteps``, or a new target;
settings that change the model are refused, others are listed and kept in config.json's
``history``) or start afresh with ``--overwrite`` (the old run is removed only once the new one
has a checkpoint: ``training.rundir``). A checkpoint is written as PPO starts and every
``--checkpoint-every`` samples or ``--checkpoint-minutes``; Ctrl-C and SIGTERM save one at the
current step and exit with one line, and so does a full disk (docs/training.md, "Run
directories").
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
from typing import TYPE_CHECKING, Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tablegym.cli import dataclass_parser, given_flags, require_extra  # noqa: E402
from tablegym.files import WriteError, thread_write_errors_quiet, write_json_atomic  # noqa: E402
from tablegym.games import GAMES, check_game, spec_of  # noqa: E402
from tablegym.options import parse_options  # noqa: E402
from training.rundir import (  # noqa: E402
    ASIDE,
    HISTORY,
    describe_changes,
    drop_aside,
    remove,
    restore_aside,
    set_aside,
    write_config,
)

if TYPE_CHECKING:
    from agents.catalog import BatchPolicy

# On a GPU the update and the batched forward passes cost little per row, and every tick and
# every minibatch costs a fixed launch overhead: more games per tick and larger rollouts and
# minibatches spread it (docs/results.md, "GPU"). Used where the flag is not given.
GPU_SIZES = {"num_games": 4096, "n_steps": 65536, "batch_size": 16384}


def per_game(text: str, name: str) -> str:
    """``text (default: kingup 500; updown 4000; kdk 500)``: a help text with the per-game
    defaults of the training setting ``name`` (each game's ``spec.training``)."""
    values = {g: getattr(spec_of(g).training, name).value for g in GAMES}
    shown = "; ".join(f"{g} {v!r}" if v == "" else f"{g} {v}" for g, v in values.items())
    return f"{text} (default: {shown})"


def game_default(game: str, name: str) -> Any:
    """The game's default of the training setting ``name`` (``<game>_env/spec.py``)."""
    return getattr(spec_of(game).training, name).value


# What a run directory holds; --overwrite removes exactly these.
RUN_FILES = (
    "config.json", "checkpoint.zip", "best.zip", "pool", "curve.csv", "curve.json",
    "curves.png", "warm_start.json", "summary.json", "tb", "league.json",
)  # fmt: skip
RUN_GLOBS = ("exploiter_*.pt",)  # the league's exploiters (training.league)
# Settings a resumed run must keep: they define the model or what it learns from.
MODEL_SETTINGS = ("game", "num_players", "option", "net_arch", "features")


@dataclass
class Args:
    """Every option of a training run; each field's ``help`` is its ``--help`` text."""

    game: str = field(default="kingup", metadata={"help": f"game: {', '.join(GAMES)}"})
    num_players: str = field(
        default="",
        metadata={
            "help": "players, or a list such as 3,4,5,6 (default: kingup 4, updown 2, kdk 3)"
        },
    )
    option: list[str] = field(
        default_factory=list, metadata={"help": "more game options as KEY=VALUE (repeatable)"}
    )
    timesteps: int = field(
        default=100_000_000,
        metadata={"help": "learner samples of the run (the 25-minute budget ends it first here)"},
    )
    max_minutes: float = field(
        default=25.0,
        metadata={"help": "stop cleanly after this many minutes, warm start included (0: none)"},
    )
    out: str = field(default="", metadata={"help": "run directory (default runs/GAME)"})
    overwrite: bool = field(default=False, metadata={"help": "replace a run already in --out"})
    seed: int = field(default=0, metadata={"help": "seed of games, opponents and PPO"})
    num_games: int = field(default=256, metadata={"help": "games stepped together"})
    backend: str = field(
        default="auto", metadata={"help": "game backend: auto (engine if any), numba, rules"}
    )
    warm_start: int | None = field(
        default=None,
        metadata={"help": per_game("heuristic games imitated before PPO starts", "warm_start")
                  + "; 0: start from a random policy"},
    )  # fmt: skip
    init: str = field(
        default="",
        metadata={"help": "start from the weights of a trained policy of this game (a "
                  "checkpoint path or ppo:PATH, or a game name or ppo:GAME for its built-in "
                  "bot) instead of the warm start; it may have been trained at other table "
                  "sizes, and a narrower network is widened to --net-arch without changing "
                  "its play"},
    )  # fmt: skip
    warm_epochs: int | None = field(
        default=None, metadata={"help": per_game("epochs of imitation", "warm_epochs")}
    )
    opponent_mix: str | None = field(
        default=None,
        metadata={"help": per_game("kinds of player and their weights, drawn per seat and game",
                                   "mix")},
    )  # fmt: skip
    mix_concentration: float = field(
        default=1.0,
        metadata={"help": "each game draws its seat weights from Dirichlet(this * mix): small "
                  "values make whole tables of one kind common; 0: every seat from the mix"},
    )  # fmt: skip
    fixed: str = field(
        default="",
        metadata={"help": "agent spec holding the fixed seats of the mix (e.g. --opponent-mix "
                  "fixed=1 --fixed ppo:PATH); any spec that plays in batch; several, "
                  "space-separated, for several table sizes: each size takes the first that "
                  "plays it; specs joined by + share a size, each game drawing one"},
    )  # fmt: skip
    snapshot_every: int = field(default=1_000_000, metadata={"help": "samples between snapshots"})
    pool_size: int = field(
        default=5, metadata={"help": "snapshots kept in the pool (and as many exploiters)"}
    )
    pfsp_power: float = field(
        default=2.0,
        metadata={"help": "PFSP: a pool entry is drawn with weight (its rate of beating the "
                  "learner) ** this; 0: uniformly"},
    )  # fmt: skip
    exploiters: int = field(
        default=1, metadata={"help": "exploiters training against the frozen policy (0: none)"}
    )
    exploiter_share: float = field(
        default=0.2, metadata={"help": "share of all samples that the exploiters make"}
    )
    exploiter_check: int = field(
        default=500_000, metadata={"help": "exploiter samples between its tests"}
    )
    exploiter_budget: int = field(
        default=2_000_000,
        metadata={"help": "exploiter samples against one target before it takes the newest"},
    )
    eval_every: int = field(default=2_000_000, metadata={"help": "samples between evaluations"})
    eval_games: int = field(
        default=200, metadata={"help": "games per evaluation and baseline (0: no evaluation)"}
    )
    checkpoint_every: int = field(
        default=1_000_000, metadata={"help": "samples between checkpoints"}
    )
    # A checkpoint of the default run (King Up!, 256 games, 128,128) is 1.5 MB written in
    # 11-14 ms (docs/training.md, "Run directories"): every 2 minutes is 0.01% of the run.
    checkpoint_minutes: float = field(
        default=2.0,
        metadata={"help": "minutes between checkpoints as well (0: by samples only); one is "
                  "also written as PPO starts, so a killed run loses at most this much"},
    )  # fmt: skip
    learning_rate: float = field(default=3e-4, metadata={"help": "Adam learning rate"})
    n_steps: int = field(default=8192, metadata={"help": "learner samples per PPO update"})
    batch_size: int = field(default=1024, metadata={"help": "minibatch size"})
    n_epochs: int | None = field(
        default=None, metadata={"help": per_game("epochs per update", "n_epochs")}
    )
    gamma: float = field(default=0.995, metadata={"help": "discount per decision of a seat"})
    gae_lambda: float = field(default=0.95, metadata={"help": "GAE lambda"})
    ent_coef: float | None = field(
        default=None, metadata={"help": per_game("entropy bonus", "ent_coef")}
    )
    clip_range: float | None = field(
        default=None, metadata={"help": per_game("PPO's clip range", "clip_range")}
    )
    anneal: str | None = field(
        default=None,
        metadata={"help": per_game("what falls linearly to zero over the budget (samples or "
                  "minutes, whichever ends the run first): lr, ent, lr,ent or ''",
                  "anneal")},
    )  # fmt: skip
    net_arch: str = field(default="128,128", metadata={"help": "hidden layer sizes"})
    features: str = field(
        default="none",
        metadata={"help": "what the network reads besides the observation: none, or cards "
                  "(per-card features the game computes from it, training/features.py; "
                  "updown only)"},
    )  # fmt: skip
    device: str = field(
        default="cpu",
        metadata={"help": "where the learner and the policies' batched forward passes run: "
                  "cpu, cuda, cuda:N or auto (cuda when torch sees a GPU); on a GPU "
                  "--num-games, --n-steps and --batch-size default to "
                  + ", ".join(f"{v}" for v in GPU_SIZES.values())},
    )  # fmt: skip
    workers: int | None = field(
        default=None,
        metadata={"help": "processes of the run: 1 collects and learns in turn; 2 runs each PPO "
                  "update in a second process while the first collects the next rollout with "
                  "weights one update old (default: 2 where this process may use two cores "
                  "or more, else 1)"},
    )  # fmt: skip
    collectors: int = field(
        default=0,
        metadata={"help": "Ray actors that step the tables, one core each, while this process "
                  "updates (0: none, collect here); with --ray-address on a cluster's nodes"},
    )  # fmt: skip
    ray_address: str | None = field(
        default=None,
        metadata={"help": "the Ray cluster of the --collectors (HOST:PORT of its head, or "
                  "auto); default: a local Ray started for the run"},
    )  # fmt: skip
    resume: str | None = field(default=None, metadata={"help": "run directory to continue"})
    config: str | None = field(default=None, metadata={"help": "JSON file with any of these"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})

    # -- derived values and checks ----------------------------------------------------------
    def player_counts(self) -> list[int]:
        """The table sizes to train on."""
        if not self.num_players:
            return [spec_of(self.game).default_players]
        try:
            counts = [int(x) for x in str(self.num_players).split(",") if x.strip()]
        except ValueError:
            counts = []
        allowed = spec_of(self.game).player_counts
        if not counts or any(n not in allowed for n in counts):
            shown = ", ".join(map(str, allowed))
            raise ValueError(
                f"--num-players must be one of {shown} or a comma list of them; "
                f"got {self.num_players!r}"
            )
        return sorted(set(counts))

    def game_options(self) -> dict[str, Any]:
        """Game options besides the player count (``--option KEY=VALUE``)."""
        try:
            options = parse_options(self.option)
        except ValueError as err:
            raise ValueError(f"--option: {err}") from None
        if "num_players" in options:
            raise ValueError("--option num_players=...: use --num-players")
        return options

    def table_options(self) -> list[dict[str, Any]]:
        """Options of each table size, checked by the game."""
        from tablegym.games import rules_of

        tables = [{**self.game_options(), "num_players": n} for n in self.player_counts()]
        for options in tables:
            rules_of(self.game).make_config(**options)
        return tables

    def layers(self) -> list[int]:
        """``--net-arch`` as layer sizes."""
        try:
            sizes = [int(x) for x in self.net_arch.split(",")]
        except ValueError:
            sizes = []
        if not sizes or min(sizes) < 1:
            raise ValueError(
                f"--net-arch must be positive layer sizes such as 256,256; got {self.net_arch!r}"
            )
        return sizes

    def annealed(self) -> frozenset[str]:
        """The settings of ``--anneal``: a subset of {"lr", "ent"}."""
        text = self.annealing()
        text = text if isinstance(text, str) else "?"
        parts = frozenset(p.strip() for p in text.split(",") if p.strip())
        if not parts <= {"lr", "ent"}:
            raise ValueError(f"--anneal must be empty, lr, ent or lr,ent; got {self.anneal!r}")
        return parts

    def warm_start_games(self) -> int:
        return game_default(self.game, "warm_start") if self.warm_start is None else self.warm_start

    def resolved(self) -> Args:
        """This config with the per-game defaults written out (for config.json), no --config."""
        return dataclasses.replace(
            self,
            config=None,
            opponent_mix=self.mix(),
            warm_start=self.warm_start_games(),
            warm_epochs=self.warm_start_epochs(),
            ent_coef=self.entropy(),
            n_epochs=self.epochs(),
            clip_range=self.clip(),
            anneal=self.annealing(),
        )

    def mix(self) -> str:
        return game_default(self.game, "mix") if self.opponent_mix is None else self.opponent_mix

    def entropy(self) -> float:
        return game_default(self.game, "ent_coef") if self.ent_coef is None else self.ent_coef

    def annealing(self) -> str:
        return game_default(self.game, "anneal") if self.anneal is None else self.anneal

    def clip(self) -> float:
        return game_default(self.game, "clip_range") if self.clip_range is None else self.clip_range

    def epochs(self) -> int:
        return game_default(self.game, "n_epochs") if self.n_epochs is None else self.n_epochs

    def warm_start_epochs(self) -> int:
        if self.warm_epochs is None:
            return game_default(self.game, "warm_epochs")
        return self.warm_epochs

    def processes(self) -> int:
        """``--workers`` resolved for this machine."""
        from training.learner import default_workers

        if self.collectors:
            return 1  # the collectors are on Ray; this process learns
        return default_workers() if self.workers is None else self.workers

    def run_dir(self) -> Path:
        return Path(self.out or f"runs/{self.game}")

    def torch_device(self) -> str:
        """``--device`` resolved: ``cpu`` or a CUDA device torch can use (ValueError otherwise)."""
        name = str(self.device)
        if name == "cpu":
            return name
        if name != "auto" and name != "cuda" and not name.removeprefix("cuda:").isdigit():
            raise ValueError(f"--device must be cpu, cuda, cuda:N or auto; got {name!r}")
        import torch

        if not torch.cuda.is_available():
            if name == "auto":
                return "cpu"
            raise ValueError(f"--device {name}: torch sees no CUDA GPU here; use cpu or auto")
        index = int(name.removeprefix("cuda:")) if name.startswith("cuda:") else 0
        if index >= torch.cuda.device_count():
            raise ValueError(
                f"--device {name}: torch sees {torch.cuda.device_count()} GPU(s) (cuda:0...)"
            )
        return f"cuda:{index}"

    def sized_for_device(self, given: frozenset[str]) -> Args:
        """This config with :data:`GPU_SIZES` where the run is on a GPU and they were not given."""
        if self.torch_device() == "cpu":
            return self
        return dataclasses.replace(self, **{k: v for k, v in GPU_SIZES.items() if k not in given})

    def check(self) -> Args:
        """ValueError naming the first bad option and what it allows; ``self`` otherwise."""
        check_game(self.game)
        self.table_options()
        self.layers()
        self.annealed()
        from training.collector import fixed_players, parse_mix
        from training.features import policy_kwargs

        policy_kwargs(self.game, self.layers(), self.features)

        parse_mix(self.mix())
        positive = ("timesteps", "num_games", "n_steps", "batch_size", "n_epochs", "pool_size",
                    "exploiter_check", "exploiter_budget")  # fmt: skip
        at_least_zero = ("snapshot_every", "eval_every", "eval_games", "checkpoint_every",
                         "checkpoint_minutes", "max_minutes", "exploiters", "pfsp_power",
                         "mix_concentration")  # fmt: skip
        for name in positive + at_least_zero:
            value = self.epochs() if name == "n_epochs" else getattr(self, name)
            low = 1 if name in positive else 0
            if isinstance(value, bool) or not isinstance(value, int | float) or value < low:
                kind = "a positive integer" if low else "a number >= 0"
                raise ValueError(f"--{name.replace('_', '-')} must be {kind}; got {value!r}")
        for name in ("warm_start", "warm_epochs"):  # None: the game's default
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                flag = name.replace("_", "-")
                raise ValueError(f"--{flag} must be an integer >= 0; got {value!r}")
        for name, low, high in (("learning_rate", 0, 1), ("gamma", 0, 1), ("gae_lambda", 0, 1)):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not low < value <= high:
                raise ValueError(
                    f"--{name.replace('_', '-')} must lie in ({low}, {high}]; got {value!r}"
                )
        if not isinstance(self.entropy(), int | float) or self.entropy() < 0:
            raise ValueError(f"--ent-coef must be a number >= 0; got {self.ent_coef!r}")
        if not isinstance(self.exploiter_share, int | float) or not 0 < self.exploiter_share < 1:
            raise ValueError(f"--exploiter-share must lie in (0, 1); got {self.exploiter_share!r}")
        if not isinstance(self.clip(), int | float) or not 0 < self.clip() <= 1:
            raise ValueError(f"--clip-range must lie in (0, 1]; got {self.clip_range!r}")
        uses_fixed = parse_mix(self.mix()).get("fixed", 0) > 0
        if uses_fixed and not self.fixed:
            raise ValueError("--opponent-mix has fixed seats: name their player with --fixed SPEC")
        if self.fixed and not uses_fixed:
            raise ValueError(
                f"--fixed {self.fixed}: give the fixed seats a weight in "
                "--opponent-mix (e.g. fixed=1)"
            )
        if self.fixed:
            fixed_players(self.fixed, self.game, self.table_options())
        if self.init:
            check_init_widths(init_path(self), self.layers(), self.init, self.features)
        workers = self.workers
        if workers is not None and (isinstance(workers, bool) or workers not in (1, 2)):
            raise ValueError(f"--workers must be 1 or 2; got {workers!r}")
        if (
            isinstance(self.collectors, bool)
            or not isinstance(self.collectors, int)
            or (self.collectors < 0)
        ):
            raise ValueError(f"--collectors must be an integer >= 0; got {self.collectors!r}")
        if self.collectors and workers == 2:
            raise ValueError(
                "--collectors and --workers 2 exclude each other: with collectors this "
                "process is the learner"
            )
        if self.ray_address is not None and not self.collectors:
            raise ValueError("--ray-address needs --collectors N (N >= 1)")
        if self.collectors:
            from tablegym.cli import require_extra

            require_extra("rllib", "--collectors")
            if self.ray_address is not None:
                from training.train_rllib import check_address

                check_address(self.ray_address, flag="--ray-address")
        if self.backend not in ("auto", "numba", "rules"):
            raise ValueError(f"--backend must be one of auto, numba, rules; got {self.backend!r}")
        self.torch_device()
        return self


# -- command line -------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """argparse from the fields of :class:`Args`; defaults come from the dataclass."""
    return dataclass_parser(Args, "tablegym-train", __doc__.split("\n\n")[0], {"game": list(GAMES)})


def parse_args(argv: list[str] | None = None) -> tuple[Args, frozenset[str]]:
    """Checked Args and the names given on the command line (``--config`` fills the rest)."""
    argv = sys.argv[1:] if argv is None else argv
    values = vars(build_parser().parse_args(argv))
    given = given_flags(argv)
    if values["config"]:
        values.update({k: v for k, v in read_config(values["config"]).items() if k not in given})
        given |= frozenset(read_config(values["config"]))
    args = Args(**values).check()
    return args.sized_for_device(given), given


def read_config(path: str) -> dict[str, Any]:
    """The settings of a ``--config`` JSON file, each checked against its option's type."""
    try:
        values = json.loads(Path(path).read_text())
    except OSError as err:
        raise ValueError(f"--config {path}: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"--config {path}: invalid JSON ({err})") from None
    if not isinstance(values, dict):
        raise ValueError(f"--config {path}: expected a JSON object of options")
    values.pop(HISTORY, None)  # a run's config.json may serve as --config
    types = {f.name: f.type for f in dataclasses.fields(Args)}
    for key, value in values.items():
        if key not in types or key in ("config", "resume"):
            allowed = ", ".join(k for k in types if k not in ("config", "resume"))
            raise ValueError(f"--config {path}: unknown key {key!r}; allowed: {allowed}")
        if not _fits(types[key], value):
            raise ValueError(f"--config {path}: {key} must be {types[key]}; got {value!r}")
    return values


def _fits(kind: str, value: Any) -> bool:
    if value is None:
        return "None" in kind
    if "bool" in kind:
        return isinstance(value, bool)
    if "list" in kind:
        return isinstance(value, list) and all(isinstance(x, str) for x in value)
    if isinstance(value, bool):
        return False
    if "int" in kind:
        return isinstance(value, int)
    if "float" in kind:
        return isinstance(value, int | float)
    return isinstance(value, str)


# -- the run directory --------------------------------------------------------------------


def prepare_run(args: Args, given: frozenset[str]) -> tuple[Args, Path, int]:
    """Check the run directory and settle the config; nothing is written here.

    Returns the config of the run, its directory and the step it starts from. A new run needs
    an empty or absent directory (or ``--overwrite``); ``--resume DIR`` takes the config
    recorded in DIR, refuses changes to the model's settings and applies every other flag
    given on the command line (a new ``--timesteps`` target, ``--max-minutes``, ...).
    """
    from training.checkpoints import read_meta

    if not args.resume:
        run = args.run_dir()
        if run.exists() and not run.is_dir():
            raise ValueError(f"--out {run} is a file, not a directory")
        held = [name for name in RUN_FILES if (run / name).exists()]
        if held and not args.overwrite:
            raise ValueError(_refusal(run, held))
        _check_writable(run)
        return args, run, 0
    run = Path(args.resume)
    if run.is_file():  # a checkpoint path names its run directory
        run = run.parent
    recorded_path = run / "config.json"
    if not recorded_path.is_file():
        held = [name for name in RUN_FILES if (run / name).exists()]
        fix = f"replace its files with --out {run} --overwrite" if held else "start one with --out"
        raise ValueError(f"--resume {run}: no run there (config.json missing); {fix}")
    checkpoint = run / "checkpoint.zip"
    # A run stopped before its first checkpoint starts again from the beginning.
    step = int(read_meta(checkpoint)["num_timesteps"]) if checkpoint.exists() else 0
    settings = {k: v for k, v in read_recorded(recorded_path).items() if k != HISTORY}
    recorded = Args(**{**settings, "resume": None, "config": None})
    for name in MODEL_SETTINGS:
        if name in given and getattr(args, name) != getattr(recorded, name):
            raise ValueError(
                f"--resume {run}: the run was trained with --{name.replace('_', '-')} "
                f"{getattr(recorded, name)!r}; it cannot change to {getattr(args, name)!r}"
            )
    fixed = ("resume", "config", "out", "overwrite")  # the run directory is the resumed one
    changes = {name: getattr(args, name) for name in given if name not in fixed}
    merged = dataclasses.replace(recorded, **changes, out=str(run), resume=str(run))
    _check_writable(run)
    return merged.check(), run, step


def _refusal(run: Path, held: list[str]) -> str:
    """Why a new run may not start in ``run``, and the commands that would work there."""
    if (run / "config.json").is_file():
        message = (f"{run} already holds a run ({held[0]}); continue it with --resume {run} "
                   "or replace it with --overwrite")  # fmt: skip
    else:
        message = (f"{run} holds files of a run ({held[0]}) but no config.json to resume; "
                   "replace them with --overwrite or choose another --out")  # fmt: skip
    if (run / ASIDE).exists():
        message += f" ({run / ASIDE} keeps the run an interrupted --overwrite was replacing)"
    return message


def read_recorded(path: Path) -> dict[str, Any]:
    """The settings recorded in a run's config.json (ValueError if unreadable)."""
    try:
        values = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: invalid JSON ({err})") from None
    unknown = set(values) - {f.name for f in dataclasses.fields(Args)} - {HISTORY}
    if unknown:
        raise ValueError(f"{path}: unknown settings {', '.join(sorted(unknown))}")
    return values


def _check_writable(run: Path) -> None:
    """ValueError naming ``run`` if the run's files could not be written there."""
    probe_dir = run
    while not probe_dir.exists():
        probe_dir = probe_dir.parent
    if not probe_dir.is_dir() or not os.access(probe_dir, os.W_OK | os.X_OK):
        raise ValueError(f"--out {run}: cannot write in {probe_dir}")


def run_paths(run: Path) -> list[Path]:
    """The files of a run in ``run`` (those of RUN_FILES and RUN_GLOBS that exist)."""
    named = [run / name for name in RUN_FILES if (run / name).exists()]
    return named + [p for pattern in RUN_GLOBS for p in run.glob(pattern)]


def clean_run(run: Path, resume_step: int | None, overwrite: bool = False) -> None:
    """Make ``run`` ready: emptied of an old run or of what followed its checkpoint.

    A new run's ``--overwrite`` moves the old run aside (``training.rundir``) until the new
    one has a checkpoint; other leftovers (a run that never saved one) are removed. On resume,
    evaluations newer than the checkpoint are dropped (a killed run may have written some),
    TensorBoard is told to discard its points from that step on, and temporary files of
    interrupted writes are removed.
    """
    from training.callbacks import drop_curve_after, purge_tensorboard

    if resume_step is None:
        if overwrite:
            set_aside(run, run_paths(run))
        else:
            remove(run_paths(run))
    else:
        drop_curve_after(run, resume_step)
        purge_tensorboard(run / "tb", resume_step)
    for tmp in [*run.glob(".*.tmp*"), *run.glob("pool/.*.tmp*")]:
        tmp.unlink(missing_ok=True)


# -- the run ------------------------------------------------------------------------------


def ppo_settings(args: Args) -> dict[str, Any]:
    """The PPO settings of the run, for a new model and for one resumed (they may change)."""
    from stable_baselines3.common.utils import LinearSchedule

    lr = args.learning_rate
    return {
        "learning_rate": LinearSchedule(lr, 0.0, 1.0) if "lr" in args.annealed() else lr,
        "n_steps": args.n_steps,
        "batch_size": args.batch_size,
        "n_epochs": args.epochs(),
        "gamma": args.gamma,
        "gae_lambda": args.gae_lambda,
        "ent_coef": args.entropy(),
        "clip_range": args.clip(),
    }


def new_model(args: Args, env: Any, run: Path | None) -> Any:
    """A fresh :class:`training.collector.SelfPlayPPO` with the run's PPO settings
    (TensorBoard logs in ``run/tb``; no logs at all without ``run``)."""
    from training.collector import SeatRolloutBuffer, SelfPlayPPO, quiet_logger
    from training.features import policy_kwargs

    model = SelfPlayPPO(
        "MlpPolicy",
        env,
        **ppo_settings(args),
        policy_kwargs=policy_kwargs(args.game, args.layers(), args.features),
        rollout_buffer_class=SeatRolloutBuffer,
        tensorboard_log=None if run is None else str(run / "tb"),
        seed=args.seed,
        device=args.torch_device(),
        verbose=0,
    )
    if run is None:
        quiet_logger(model)
    return model


def warm_start(
    model: Any, args: Args, tables: list[dict[str, Any]], heuristic: BatchPolicy
) -> dict[str, Any] | None:
    """Imitate the heuristic (``training.imitation``) before PPO; its stats (None: no games)."""
    games = args.warm_start_games()
    if games <= 0:
        return None
    from training.imitation import collect, pretrain

    started = time.monotonic()
    demos = collect(
        args.game, tables, games, seed=args.seed + 1_000_000, gamma=args.gamma,
        teacher=heuristic, num_games=args.num_games, backend=args.backend,
    )  # fmt: skip
    collected = time.monotonic() - started
    stats = pretrain(
        model, demos, epochs=args.warm_start_epochs(), seed=args.seed, progress=args.progress
    )
    stats = {"games": games, "decisions": len(demos), **stats}
    stats.update(collect_seconds=round(collected, 1), seconds=round(time.monotonic() - started, 1))
    if args.progress:
        print(f"warm start: {json.dumps(stats)}", flush=True)
    return stats


def init_path(args: Args) -> Path:
    """The checkpoint ``--init`` names, checked against the game (ValueError otherwise)."""
    from training.bots import builtin_bot_path
    from training.checkpoints import read_meta, training_meta

    name = args.init.removeprefix("ppo:")  # the agent spec's spelling works too, as in exit.py
    path = builtin_bot_path(name) if name in GAMES else Path(name)
    try:
        meta = read_meta(path)
    except FileNotFoundError as err:
        raise ValueError(f"--init {args.init}: {err}") from None
    except ValueError as err:
        raise ValueError(f"--init {args.init}: {err}") from None
    expected = training_meta(args.game, args.table_options())
    for key in ("game", "env_name", "obs_size", "num_actions"):
        if meta.get(key) != expected[key]:
            raise ValueError(
                f"--init {args.init}: the policy was trained for {key}={meta.get(key)!r}; "
                f"this run has {key}={expected[key]!r}"
            )
    return path


def policy_weights(path: Path) -> dict[str, Any]:
    """The policy's state dict saved in checkpoint ``path`` (its ``policy.pth``), read without
    building the model around it."""
    import zipfile

    import torch

    with zipfile.ZipFile(path) as archive, archive.open("policy.pth") as f:
        return torch.load(f, map_location="cpu", weights_only=True)


def check_init_widths(path: Path, layers: list[int], spec: str, features: str = "none") -> None:
    """ValueError unless ``layers`` is ``path``'s network or a wider one of the same depth, and
    ``features`` reads what it read (a network without features may start one with them)."""
    from training.checkpoints import read_meta

    weights = policy_weights(path)
    inputs = int(weights["mlp_extractor.policy_net.0.weight"].shape[1])
    if features == "none" and inputs > int(read_meta(path)["obs_size"]):
        raise ValueError(
            f"--init {spec}: its network reads per-card features; add --features cards"
        )
    layer_keys = [k for k in weights if k.startswith("mlp_extractor.policy_net.") and "weight" in k]
    widths = [
        int(weights[k].shape[0]) for k in sorted(layer_keys, key=lambda k: int(k.split(".")[2]))
    ]
    if len(widths) != len(layers) or any(w > n for w, n in zip(widths, layers, strict=True)):
        given = ",".join(map(str, layers))
        raise ValueError(
            f"--init {spec}: its layers are {','.join(map(str, widths))}; --net-arch {given} "
            "must have as many layers, each as wide or wider"
        )


def load_weights(model: Any, path: Path) -> None:
    """Copy the policy weights of checkpoint ``path`` into ``model``: the same network, or a
    narrower one of the same depth, widened without changing what it plays (:func:`widen`)."""
    try:
        model.policy.load_state_dict(widen(policy_weights(path), model.policy.state_dict()))
    except (RuntimeError, ValueError):
        raise ValueError(
            f"--init {path}: its network is neither the shape of --net-arch nor a narrower one "
            "with as many layers; give --net-arch as wide or wider, layer by layer"
        ) from None


def widen(source: dict[str, Any], target: dict[str, Any]) -> dict[str, Any]:
    """``source``'s weights in ``target``'s shapes, computing the same function (Net2Net-style).

    Each weight matrix's leading block is the source's. The new units keep ``target``'s fresh
    weights from every input, and every old unit and output head gets zero weights from the new
    units, so the widened network's logits and value equal the narrow one's until training
    moves those zeros (the gradient reaches them through the new units' activations).
    ValueError where a tensor is missing or wider in ``source``.
    """
    widened = {}
    for key, fresh in target.items():
        old = source.get(key)
        if (
            old is None
            or old.dim() != fresh.dim()
            or any(a > b for a, b in zip(old.shape, fresh.shape, strict=True))
        ):
            raise ValueError(f"{key}: {None if old is None else tuple(old.shape)}")
        value = fresh.clone()
        if value.dim() == 2:
            value[: old.shape[0], old.shape[1] :] = 0
        value[tuple(slice(0, n) for n in old.shape)] = old
        widened[key] = value
    return widened


class _Stopped(KeyboardInterrupt):
    """SIGTERM, raised where the run is so that it ends like Ctrl-C."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Stopped


def train(args: Args, run: Path, start_step: int) -> dict[str, Any]:
    """Run (or resume) training in ``run``; returns the summary (also in summary.json)."""
    from agents.catalog import batched_heuristic
    from training.callbacks import TrainingCallback, load_pool
    from training.checkpoints import check_meta, read_meta, save_atomic, save_or_keep, training_meta
    from training.children import one_thread
    from training.collector import (
        PoolStats,
        SelfPlayPPO,
        SelfPlayVecEnv,
        fixed_players,
        parse_mix,
    )
    from training.collectors import CollectorError
    from training.learner import LearnerError, attach, settle
    from training.learner import start as start_learner

    one_thread()
    started = time.monotonic()
    checkpoint = run / "checkpoint.zip"
    # A run stopped before its first checkpoint starts again from the beginning.
    resuming = args.resume is not None and checkpoint.is_file()
    tables = args.table_options()
    meta = training_meta(args.game, tables)
    heuristic = batched_heuristic(args.game)
    mix = parse_mix(args.mix())
    fixed = fixed_players(args.fixed, args.game, tables) if args.fixed else None
    env = SelfPlayVecEnv(
        args.game, tables, args.num_games, mix, args.seed, heuristic, args.backend, fixed,
        pfsp=PoolStats(power=args.pfsp_power), concentration=args.mix_concentration,
    )  # fmt: skip
    if resuming:
        check_meta(read_meta(checkpoint), meta, checkpoint)
    recorded = read_recorded(run / "config.json") if args.resume else None
    created = not run.exists()
    model = None
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    learner = collectors = None
    try:
        if args.processes() == 2:
            learner = start_learner(args.torch_device(), args.seed + 2)
        run.mkdir(parents=True, exist_ok=True)
        clean_run(run, start_step if resuming else None, overwrite=args.overwrite)
        (run / "pool").mkdir(exist_ok=True)
        changed = write_config(
            run / "config.json", dataclasses.asdict(args.resolved()), start_step, recorded
        )
        _say_resumed(args, run, resuming, changed)
        if resuming:
            settings = ppo_settings(args)
            model = SelfPlayPPO.load(
                run / "checkpoint.zip", env=env, device=args.torch_device(), **settings
            )
            load_pool(model, env, run / "pool", args.pool_size)
        else:
            model = new_model(args, env, run)
            if args.init:
                load_weights(model, init_path(args))
            else:
                stats = warm_start(model, args, tables, heuristic)
                if stats is not None:
                    write_json_atomic(run / "warm_start.json", stats)
        model.ent_start = args.entropy() if "ent" in args.annealed() else None
        if not resuming:  # the warm start's work is kept, and an old run replaced only now
            save_atomic(model, checkpoint, meta)
            drop_aside(run)
        if learner is not None:
            attach(model, learner)
        if args.collectors:
            collectors = model.collectors = start_collectors(args, tables)
        callback = TrainingCallback(args, tables, meta, run, env, heuristic, started)
        model.learn(
            total_timesteps=max(0, args.timesteps - model.num_timesteps),
            callback=callback,
            reset_num_timesteps=not resuming,
            tb_log_name="ppo",
        )
        settle(model)  # the last rollout's update, in the learner process
        if model.num_timesteps <= start_step:
            raise SystemExit(f"error: the run made no samples (it stayed at step {start_step})")
        return callback.finish(model)
    except (LearnerError, CollectorError) as err:
        _ignore_signals()
        last_words(model, run, meta, str(err), error=True)  # with its last update's weights
    except KeyboardInterrupt as stop:
        _ignore_signals()  # the save below must not be cut short
        what = "stopped" if isinstance(stop, _Stopped) else "interrupted"
        if model is not None and checkpoint.is_file():
            with contextlib.suppress(LearnerError):  # a dead learner: keep the acting weights
                settle(model)
            last_words(model, run, meta, what, error=False)
        raise SystemExit(f"{what} before the first checkpoint; {_discard(run, created)}") from None
    except OSError as err:  # a full disk, from any writer (TensorBoard's has no file name)
        _ignore_signals()
        cause = err if isinstance(err, WriteError) else f"{err.filename or run}: {err.strerror}"
        if model is None or not checkpoint.is_file():
            raise SystemExit(f"error: {cause}; {_discard(run, created)}") from None
        kept = save_or_keep(model, checkpoint, meta)
        raise SystemExit(f"error: {cause}; {kept} (continue with --resume {run})") from None
    except BaseException:
        if model is None or not checkpoint.is_file():
            _discard(run, created)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        if learner is not None:
            learner.close()
        if collectors is not None:
            collectors.close()
        env.close()


def start_collectors(args: Args, tables: list[dict[str, Any]]) -> Any:
    """``--collectors`` Ray actors with the run's tables, mix and PPO settings."""
    from training.collector import parse_mix
    from training.collectors import RayCollectors

    settings = {
        "game": args.game, "tables": tables, "num_games": args.num_games,
        "mix": parse_mix(args.mix()), "backend": args.backend, "fixed": args.fixed,
        "pfsp_power": args.pfsp_power, "concentration": args.mix_concentration,
        "pool_size": args.pool_size, "gamma": args.gamma, "gae_lambda": args.gae_lambda,
        "net_arch": args.layers(), "features": args.features,
    }  # fmt: skip
    return RayCollectors(settings, args.collectors, args.n_steps, args.seed, args.ray_address)


def last_words(model: Any, run: Path, meta: dict[str, Any], what: str, error: bool) -> None:
    """Save ``model`` and end the run with one line: ``what`` happened (an error or a stop),
    and what ``run`` keeps."""
    from training.checkpoints import save_atomic, save_or_keep

    checkpoint = run / "checkpoint.zip"
    try:
        save_atomic(model, checkpoint, meta)
    except WriteError as err:
        raise SystemExit(f"error: {what}; {err}; {save_or_keep(model, checkpoint, meta)}") from None
    raise SystemExit(
        f"{'error: ' if error else ''}{what} at step {model.num_timesteps}; saved {checkpoint} "
        f"(continue with --resume {run})"
    ) from None


def _ignore_signals() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _say_resumed(args: Args, run: Path, resuming: bool, changed: dict[str, list[Any]]) -> None:
    """One line on how a resume starts: from the beginning, and with which changes."""
    if args.resume and not resuming:
        print(f"{run} has no checkpoint: its run starts from the beginning", flush=True)
    if changed:
        print(f"resume: changed {describe_changes(changed)} (history in config.json)", flush=True)


def _discard(run: Path, created: bool) -> str:
    """Undo a start that saved nothing: remove a directory it made, or put back the run an
    ``--overwrite`` set aside; what the directory holds now, in words."""
    if created:
        shutil.rmtree(run, ignore_errors=True)
        return "nothing saved"
    if restore_aside(run, run_paths(run)):
        return f"nothing saved; {run} holds the run it was replacing again"
    return "nothing saved"


def main(argv: list[str] | None = None) -> None:
    """Console entry point ``tablegym-train``."""
    try:
        require_extra("train", "tablegym-train")
        args, given = parse_args(argv)
        args, run, step = prepare_run(args, given)
        if args.resume and step >= args.timesteps:
            raise ValueError(
                f"{run} is at step {step}, at or past --timesteps {args.timesteps}: nothing to "
                f"do; continue it with --resume {run} --timesteps N for a larger N"
            )
        with thread_write_errors_quiet():  # TensorBoard's writer thread: one line, not two
            summary = train(args, run, step)
    except (ValueError, FileNotFoundError) as err:
        sys.exit(f"error: {err}")
    print(f"done: {json.dumps(summary, indent=2)}")


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        main()
