"""Policies trained by ``training/train_rllib.py`` as agents: the spec ``rllib:DIR``.

``DIR`` is a run directory (``--out`` of ``train_rllib.py``), or its ``checkpoint/`` (an
RLlib Algorithm checkpoint), or a module directory inside one (``.../rl_module/main``).
Only the learning module ``main`` is loaded, through ``RLModule.from_checkpoint`` with
``inference_only=True``, on CPU: no Ray cluster is started, and no env runner, learner or
optimiser state is read. The checkpoint's ``tablegym_meta.json`` (game, options, sizes) is
checked like a ``ppo:PATH`` checkpoint's, so a policy of another game or player count is
refused with a clear error. Given no game options (``evaluate.py`` passes none to specs other
than ``ppo:``), the player count is checked on the first move instead, from the ``GameView``.
Loaded modules are cached per checkpoint file, so a tournament loads each policy once.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import GameView, PolicyAgent, legal_ids
from training.checkpoints import check_meta, game_meta

FORMAT = "tablegym-rllib-1"
META_FILE = "tablegym_meta.json"
MODULE_PATH = Path("learner_group", "learner", "rl_module")


def locate(path: str | os.PathLike, module_id: str = "main") -> tuple[Path, Path]:
    """``(checkpoint dir, module dir)`` for a run dir, a checkpoint dir or a module dir."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"rllib agent directory not found: {path}")
    candidates = [path / "checkpoint", path]
    for ckpt in candidates:
        if (ckpt / MODULE_PATH / module_id).is_dir():
            return ckpt, ckpt / MODULE_PATH / module_id
    # A module directory: .../checkpoint/learner_group/learner/rl_module/main
    if path.parent.name == "rl_module" and (path / "module_state.pkl").exists():
        return path.parents[3], path
    raise ValueError(
        f"{path} is not an RLlib run or checkpoint of train_rllib.py "
        f"(no {Path('checkpoint') / MODULE_PATH / module_id} inside)"
    )


def read_meta(checkpoint: str | os.PathLike) -> dict[str, Any]:
    """The tablegym metadata written beside an RLlib checkpoint by ``train_rllib.py``."""
    path = Path(checkpoint) / META_FILE
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(
            f"{checkpoint} has no {META_FILE}: not written by train_rllib.py"
        ) from None
    except json.JSONDecodeError as err:
        raise ValueError(f"corrupt {path}: {err}") from err
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{path} is not tablegym RLlib metadata (format {FORMAT!r})")
    return meta


class RLlibAgent(PolicyAgent):
    """Acts with an RLlib ``ActionMaskingTorchRLModule``: its most likely legal action, or a
    sample from its masked distribution."""

    def __init__(
        self,
        module: Any,
        spec: str = "rllib",
        deterministic: bool = True,
        seed: int = 0,
        num_players: int | None = None,
    ):
        import torch

        super().__init__(spec, deterministic, seed)
        self.torch = torch
        self.module = module
        self.num_players = num_players

    def logits(self, observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """The module's logits (the base class makes the mask exact: the module only adds
        log(mask) clamped to float32's minimum)."""
        torch = self.torch
        batch = {
            "obs": {
                # Copies: the env hands out read-only arrays, which torch will not wrap.
                "observations": torch.tensor(observation, dtype=torch.float32)[None],
                "action_mask": torch.tensor(action_mask, dtype=torch.float32)[None],
            }
        }
        with torch.no_grad():
            return self.module.forward_inference(batch)["action_dist_inputs"][0].numpy()

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, view: GameView | None = None
    ) -> int:
        """A legal action id chosen by the module under the mask, at the table sizes it was
        trained for."""
        legal_ids(action_mask)  # ValueError if this agent is not to act
        if view is not None and self.num_players not in (None, view.config.num_players):
            raise ValueError(
                f"{self.spec} was trained for num_players {self.num_players}, "
                f"but this game has {view.config.num_players}"
            )
        return super().act(observation, action_mask, view)


_MODULES: dict[str, tuple[int, Any]] = {}


def load_module(path: str | os.PathLike, game: str, options: dict[str, Any] | None = None) -> Any:
    """The ``main`` RLModule of an RLlib run, checked against ``game`` and its ``options``.

    Without ``options`` the player count is taken from the checkpoint (see the module doc).
    """
    checkpoint, module_dir = locate(path)
    meta = read_meta(checkpoint)
    if meta.get("game") != game:
        raise ValueError(f"{checkpoint} was trained for game={meta.get('game')!r}, not {game!r}")
    if not options:
        options = {"num_players": meta.get("options", {}).get("num_players")}
    check_meta(meta, game_meta(game, options), checkpoint)
    key = str(module_dir.resolve())
    stamp = (module_dir / "module_state.pkl").stat().st_mtime_ns
    cached = _MODULES.get(key)
    if cached is None or cached[0] != stamp:
        from ray.rllib.core.rl_module.rl_module import RLModule  # seconds: only once checked

        # RLlib reads paths as URIs: a relative one has no scheme and is refused.
        module = RLModule.from_checkpoint(module_dir.resolve(), inference_only=True)
        module.eval()
        _MODULES[key] = (stamp, module)
    return _MODULES[key][1]


def load_rllib_agent(
    path: str | os.PathLike,
    game: str,
    options: dict[str, Any] | None = None,
    deterministic: bool = True,
    seed: int = 0,
) -> RLlibAgent:
    """The agent behind the spec ``rllib:DIR``."""
    module = load_module(path, game, options)
    players = (options or {}).get("num_players") or read_meta(locate(path)[0])["options"].get(
        "num_players"
    )
    return RLlibAgent(
        module, spec=f"rllib:{path}", deterministic=deterministic, seed=seed, num_players=players
    )
