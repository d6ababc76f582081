"""Trained MaskablePPO policies as agents, and the checkpoint format that carries them.

A checkpoint is sb3-contrib's MaskablePPO zip with one extra entry in its saved data,
``tablegym_meta``: the game, its options, the observation and action sizes, and the step
count. Loading checks that entry against what the caller expects, so a policy trained for
another game, player count or observation layout is refused with a clear error instead of
failing later with a shape error (or, worse, playing nonsense).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import GAMES, Agent, GameView

FORMAT = "tablegym-ppo-1"


def game_meta(game: str, options: dict[str, Any]) -> dict[str, Any]:
    """What a checkpoint must agree on with the game it is used in."""
    if game not in GAMES:
        raise ValueError(f"unknown game {game!r}; known games: {', '.join(GAMES)}")
    module = importlib.import_module(GAMES[game])
    raw = module.raw_env(**options)
    return {
        "format": FORMAT,
        "game": game,
        "env_name": raw.metadata["name"],
        "options": dataclasses.asdict(raw.config),
        "obs_size": int(raw.observation_space(raw.possible_agents[0])["observation"].shape[0]),
        "num_actions": int(raw.action_space(raw.possible_agents[0]).n),
    }


def read_meta(path: str | os.PathLike) -> dict[str, Any]:
    """The tablegym metadata of a checkpoint; clear errors for missing or corrupt files."""
    from stable_baselines3.common.save_util import load_from_zip_file

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    try:
        data, _, _ = load_from_zip_file(path, load_data=True, device="cpu")
    except (zipfile.BadZipFile, ValueError, KeyError, EOFError, OSError, RuntimeError) as err:
        raise ValueError(f"corrupt checkpoint {path}: {err}") from err
    meta = (data or {}).get("tablegym_meta")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{path} is not a tablegym PPO checkpoint (no {FORMAT} metadata)")
    return meta


def check_meta(meta: dict[str, Any], expected: dict[str, Any], path: str | os.PathLike) -> None:
    """Raise ValueError naming the first field where a checkpoint differs from the game."""
    for key in ("game", "env_name", "obs_size", "num_actions"):
        if meta.get(key) != expected[key]:
            raise ValueError(
                f"checkpoint {path} was trained for {key}={meta.get(key)!r}, "
                f"but this game has {key}={expected[key]!r}"
            )
    # Player count changes the seats a policy learned about; other options (reward, rounds)
    # change what it optimised but not what it can read, so only the player count must agree.
    have, want = meta["options"].get("num_players"), expected["options"].get("num_players")
    if have != want:
        raise ValueError(
            f"checkpoint {path} was trained for num_players={have}, but this game has {want}"
        )


def load_model(path: str | os.PathLike, game: str, options: dict[str, Any] | None = None) -> Any:
    """A MaskablePPO model from ``path``, checked against ``game`` and its ``options``."""
    from sb3_contrib import MaskablePPO

    meta = read_meta(path)
    check_meta(meta, game_meta(game, options or {}), path)
    try:
        return MaskablePPO.load(path, device="cpu")
    except (zipfile.BadZipFile, ValueError, KeyError, EOFError, RuntimeError) as err:
        raise ValueError(f"corrupt checkpoint {path}: {err}") from err


class NumpyPolicy:
    """The actor of a MaskablePPO ``MlpPolicy`` as numpy arrays: logits without torch.

    Self-play opponents and evaluations call the policy once per move on a single
    observation; there torch's per-call overhead dwarfs the arithmetic, and a numpy forward
    pass of the same weights is several times faster. Only the layers ``MlpPolicy`` builds
    (flatten, Linear, Tanh/ReLU) are supported; anything else raises ValueError.
    """

    def __init__(self, policy: Any):
        import torch

        if not isinstance(policy.features_extractor.flatten, torch.nn.Flatten):
            raise ValueError("only MlpPolicy (flattened vector observations) is supported")
        self.layers: list[tuple[str, Any]] = []
        for module in [*policy.mlp_extractor.policy_net, policy.action_net]:
            if isinstance(module, torch.nn.Linear):
                weight = module.weight.detach().cpu().numpy().astype(np.float32)
                bias = module.bias.detach().cpu().numpy().astype(np.float32)
                self.layers.append(("linear", (weight.T.copy(), bias)))
            elif isinstance(module, (torch.nn.Tanh, torch.nn.ReLU)):
                self.layers.append((type(module).__name__.lower(), None))
            else:
                raise ValueError(f"unsupported policy layer {module!r}")

    def logits(self, observation: np.ndarray) -> np.ndarray:
        """Unmasked action logits for one observation vector."""
        x = np.asarray(observation, dtype=np.float32)
        for kind, params in self.layers:
            if kind == "linear":
                x = x @ params[0] + params[1]
            elif kind == "tanh":
                x = np.tanh(x)
            else:
                x = np.maximum(x, 0.0)
        return x


class PPOAgent(Agent):
    """Acts with a trained policy: the most likely legal action, or a sample from it."""

    def __init__(self, model: Any, spec: str = "ppo", deterministic: bool = True, seed: int = 0):
        self.model = model
        self.net = NumpyPolicy(model.policy)
        self.spec = spec
        self.deterministic = deterministic
        self.rng = np.random.default_rng(seed)

    def probabilities(self, observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """The policy's distribution over actions, restricted to the mask."""
        logits = self.net.logits(observation).astype(np.float64)
        logits[action_mask == 0] = -np.inf
        logits -= logits.max()
        probs = np.exp(logits)
        return probs / probs.sum()

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, view: GameView | None = None
    ) -> int:
        """A legal action id chosen by the policy under the mask."""
        if not action_mask.any():
            raise ValueError("the action mask allows no action: this agent is not to act")
        probs = self.probabilities(observation, action_mask)
        if self.deterministic:
            return int(np.argmax(probs))
        return int(self.rng.choice(probs.size, p=probs))


def load_ppo_agent(
    path: str | os.PathLike,
    game: str,
    options: dict[str, Any] | None = None,
    deterministic: bool = True,
    seed: int = 0,
) -> PPOAgent:
    """The agent behind the spec ``ppo:PATH``."""
    model = load_model(path, game, options)
    return PPOAgent(model, spec=f"ppo:{path}", deterministic=deterministic, seed=seed)


def export_policy(src: str | os.PathLike, dst: str | os.PathLike) -> Path:
    """A copy of checkpoint ``src`` without the optimiser's moment estimates, for play only.

    Adam keeps two tensors per weight, so a checkpoint is about three times the size of its
    policy; the copy loads as an agent (``ppo:DST``) in a third of the space, and resuming
    training from it starts a fresh optimiser. The metadata is kept, so checks still apply.
    """
    from training.train import save_atomic  # the one writer of checkpoints

    meta = read_meta(src)
    model = load_model(src, meta["game"], meta["options"])
    policy = model.policy
    policy.optimizer = policy.optimizer_class(
        policy.parameters(), lr=model.lr_schedule(1.0), **policy.optimizer_kwargs
    )
    model.num_timesteps = meta.get("num_timesteps", model.num_timesteps)
    dst = Path(dst)
    save_atomic(model, dst, {k: v for k, v in meta.items() if k != "num_timesteps"})
    return dst
