"""The checkpoint format of trained policies: the one writer and the one reader.

A checkpoint is sb3-contrib's MaskablePPO zip with one extra entry in its saved data,
``tablegym_meta``: the game, its options, the observation and action sizes, and the step
count. Loading checks that entry against what the caller expects, so a policy trained for
another game, player count or observation layout is refused with a clear error instead of
failing later with a shape error (or, worse, playing nonsense).
"""

from __future__ import annotations

import dataclasses
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from tablegym.files import WriteError, write_atomic
from tablegym.games import env_class

FORMAT = "tablegym-ppo-1"
# Env versions whose observation is the prefix of the next one's: a policy of the old version
# becomes one of the new with zero weights on the new inputs (:func:`upgrade_policy`).
UPGRADES = {"updown_v1": "updown_v2"}


def game_meta(game: str, options: dict[str, Any]) -> dict[str, Any]:
    """What a checkpoint must agree on with the game it is used in."""
    raw = env_class(game)(**options)
    return {
        "format": FORMAT,
        "game": game,
        "env_name": raw.metadata["name"],
        "options": dataclasses.asdict(raw.config),
        "obs_size": int(raw.observation_space(raw.possible_agents[0])["observation"].shape[0]),
        "num_actions": int(raw.action_space(raw.possible_agents[0]).n),
    }


def training_meta(game: str, tables: list[dict[str, Any]]) -> dict[str, Any]:
    """The metadata of a policy trained on ``tables`` (one options dict per table size)."""
    counts = sorted({int(t["num_players"]) for t in tables})
    return {**game_meta(game, tables[0]), "player_counts": counts}


def save_atomic(model: Any, path: str | os.PathLike, meta: dict[str, Any]) -> None:
    """Write ``model`` to ``path`` via a temporary file and a rename: never half a file.

    A failed write (a full disk) leaves the previous file and raises
    :class:`tablegym.files.WriteError`.
    """
    model.tablegym_meta = {**meta, "num_timesteps": int(model.num_timesteps)}
    write_atomic(path, model.save)


def save_or_keep(model: Any, path: str | os.PathLike, meta: dict[str, Any]) -> str:
    """Save ``model`` to ``path`` once more after a failed write; what ``path`` now holds.

    For the last words of a run that failed to write something: the checkpoint is retried, and
    where the retry fails too the previous checkpoint, if any, is what remains.
    """
    path = Path(path)
    try:
        save_atomic(model, path, meta)
        return f"retried the checkpoint: saved {path} at step {model.num_timesteps}"
    except WriteError:
        pass
    try:
        kept = read_meta(path)["num_timesteps"]
    except (FileNotFoundError, ValueError):
        return f"the checkpoint could not be saved either, and {path} holds none"
    return f"the checkpoint could not be saved either; kept {path} at step {kept}"


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
            hint = ""
            if UPGRADES.get(meta.get("env_name")) == expected["env_name"]:
                hint = "; training.checkpoints.upgrade_policy converts it, playing the same"
            raise ValueError(
                f"checkpoint {path} was trained for {key}={meta.get(key)!r}, "
                f"but this game has {key}={expected[key]!r}{hint}"
            )
    # Player count changes the seats a policy learned about; other options (reward, rounds)
    # change what it optimised but not what it can read, so only the player count must agree:
    # it must be one of the table sizes the policy was trained at.
    have = meta.get("player_counts") or [meta["options"].get("num_players")]
    want = expected["options"].get("num_players")
    if want not in have:
        shown = ", ".join(map(str, have))
        raise ValueError(
            f"checkpoint {path} was trained for num_players {shown}, but this game has {want}"
        )


def load_model(
    path: str | os.PathLike,
    game: str,
    options: dict[str, Any] | None = None,
    env: Any = None,
) -> Any:
    """A MaskablePPO model from ``path``, checked against ``game`` and its ``options``.

    With ``env`` (a VecEnv) the model is ready to continue training, optimiser state included.
    """
    from sb3_contrib import MaskablePPO

    check_meta(read_meta(path), game_meta(game, options or {}), path)
    try:
        return MaskablePPO.load(path, env=env, device="cpu")
    except (zipfile.BadZipFile, ValueError, KeyError, EOFError, RuntimeError) as err:
        raise ValueError(f"corrupt checkpoint {path}: {err}") from err


def export_policy(src: str | os.PathLike, dst: str | os.PathLike) -> Path:
    """A copy of checkpoint ``src`` without the optimiser's moment estimates, for play only.

    Adam keeps two tensors per weight, so a checkpoint is about three times the size of its
    policy; the copy loads as an agent (``ppo:DST``) in a third of the space, and resuming
    training from it starts a fresh optimiser. The metadata is kept, so checks still apply.
    """
    meta = read_meta(src)
    model = load_model(src, meta["game"], meta["options"])
    policy = model.policy
    policy.optimizer = policy.optimizer_class(
        policy.parameters(), lr=model.lr_schedule(1.0), **policy.optimizer_kwargs
    )
    model.num_timesteps = meta.get("num_timesteps", model.num_timesteps)
    model._last_obs = None  # the training env's last batch of observations: half the file
    dst = Path(dst)
    save_atomic(model, dst, {k: v for k, v in meta.items() if k != "num_timesteps"})
    return dst


def upgrade_policy(src: str | os.PathLike, dst: str | os.PathLike) -> Path:
    """Checkpoint ``src`` of an old env version (``UPGRADES``) as a policy of the new one.

    The new observation holds the old one as its first values, so the first layer of each
    network gets zero weights on the inputs in between the old observation and anything the
    features extractor appends after it: the policy plays and values every position exactly as
    before, and training can start from it. The optimiser starts afresh (its moments have the
    old shapes); ``dst`` may be ``src``.
    """
    import torch
    from gymnasium import spaces
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.save_util import load_from_zip_file

    meta = read_meta(src)
    new_name = UPGRADES.get(meta["env_name"])
    if new_name is None:
        raise ValueError(f"{src}: no newer version of {meta['env_name']} to upgrade to")
    new = game_meta(meta["game"], meta["options"])
    if new["env_name"] != new_name:
        raise ValueError(f"{src}: {meta['env_name']} upgrades to {new_name}, not {new['env_name']}")
    old_size, size = int(meta["obs_size"]), int(new["obs_size"])
    data, params, _ = load_from_zip_file(src, device="cpu")
    data["observation_space"] = spaces.Box(0.0, 1.0, (size,), dtype=np.float32)
    model = MaskablePPO(data["policy_class"], env=None, device="cpu", _init_setup_model=False)
    model.__dict__.update(data)
    model._setup_model()
    weights = {}
    for key, fresh in model.policy.state_dict().items():
        old = params["policy"][key]
        if old.shape != fresh.shape:  # a first layer: widen its inputs at the old size
            gap = torch.zeros(old.shape[0], size - old_size, dtype=old.dtype)
            old = torch.cat([old[:, :old_size], gap, old[:, old_size:]], dim=1)
        weights[key] = old
    model.policy.load_state_dict(weights)
    model._last_obs = None
    save_atomic(model, dst, {**meta, "env_name": new_name, "obs_size": size})
    return Path(dst)
