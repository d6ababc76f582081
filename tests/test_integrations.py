"""PettingZoo registration, the ``mask_in_info`` wrapper and the recipes of docs/integrations.md.

Each recipe is cut out of the Markdown and executed as it stands, so the documentation cannot
drift from what works. AgileRL's recipe needs its own environment and runs in
``tests/test_integrations_heavy.py`` (``.ci/integrations``).
"""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium
import numpy as np
import pettingzoo
import pytest
from pettingzoo import AECEnv
from pettingzoo.test import api_test, parallel_api_test
from pettingzoo.utils.conversions import aec_to_parallel, turn_based_aec_to_parallel
from pettingzoo.utils.env_logger import EnvLogger

import kdk_env
import kingup_env
import updown_env
from tablegym import registration
from tablegym.wrappers import mask_in_info

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "integrations.md"
GAMES = [
    (kingup_env, {"num_players": 5}),
    (updown_env, {"num_players": 2}),
    (kdk_env, {"num_players": 3}),
]
GAME_IDS = ["kingup", "updown", "kdk"]
HEAVY_RECIPES = {"agilerl"}


def recipes() -> dict[str, str]:
    """The ```python blocks of docs/integrations.md, by their ``<!-- recipe: NAME -->`` tag."""
    found = re.findall(r"<!-- recipe: (\w+) -->\n```python\n(.*?)```", DOC.read_text(), re.S)
    return dict(found)


def run_recipe(name: str) -> dict:
    """Execute one recipe as a script; its globals, after checking it made no illegal move."""
    EnvLogger.mqueue.clear()
    namespace: dict = {"__name__": "__main__"}
    exec(compile(recipes()[name], f"{DOC}:{name}", "exec"), namespace)
    illegal = [m for m in EnvLogger.mqueue if "Illegal move" in str(m)]
    assert not illegal, f"recipe {name} made illegal moves: {illegal[:1]}"
    return namespace


def version_of(module) -> int:
    return int(module.raw_env.metadata["name"].rpartition("_v")[2])


# -- registration -------------------------------------------------------------------------------
@pytest.mark.parametrize(("module", "kwargs"), GAMES, ids=GAME_IDS)
def test_registered_under_the_metadata_version(module, kwargs):
    game = module.raw_env.metadata["name"].rpartition("_v")[0]
    versioned = f"tablegym/{game}-v{version_of(module)}"
    assert versioned in pettingzoo.aec_registry
    assert pettingzoo.spec("aec", f"tablegym/{game}").id == versioned
    for env_id in (versioned, f"tablegym/{game}"):
        made = pettingzoo.make("aec", env_id, **kwargs)
        assert type(made) is type(module.env())  # the standard wrappers, as env() applies them
        assert type(made.unwrapped) is module.raw_env
        assert made.unwrapped.config.num_players == kwargs["num_players"]


def test_make_passes_options_and_rejects_bad_ones():
    made = pettingzoo.make("aec", "tablegym/kingup", num_players=5, num_rounds=1)
    made.reset(seed=0)
    assert made.possible_agents == [f"player_{i}" for i in range(5)]
    with pytest.raises(ValueError, match="num_players"):
        pettingzoo.make("aec", "tablegym/kingup", num_players=9)


def test_registration_when_a_game_is_imported_before_tablegym():
    # A game package imports tablegym while its own env module is half loaded.
    code = (
        "import kdk_env, pettingzoo; "
        "print(sorted(k for k in pettingzoo.aec_registry if k.startswith('tablegym/')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    expected = sorted(
        f"tablegym/{m.raw_env.metadata['name'].rpartition('_v')[0]}-v{version_of(m)}"
        for m, _ in GAMES
    )
    assert out.stdout.strip() == str(expected)


def test_register_envs_again_is_silent_and_returns_the_ids():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ids = registration.register_envs()
    assert ids == [f"tablegym/{g}-v{version_of(m)}" for g, (m, _) in zip(GAME_IDS, GAMES)]


def test_without_a_registry_registration_does_nothing(monkeypatch):
    monkeypatch.delattr(pettingzoo, "register")
    assert registration.register_envs() == []


@pytest.mark.parametrize("name", ["kingup", "kingup_vX", "_v1", "kingup-v1"])
def test_env_id_rejects_names_without_a_version(name):
    with pytest.raises(ValueError, match="<game>_v<N>"):
        registration.env_id(name)


# -- mask_in_info ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("module", "kwargs"), GAMES, ids=GAME_IDS)
@pytest.mark.parametrize("factory", ["env", "raw_env"])
def test_mask_in_info_passes_api_test(module, kwargs, factory):
    game = mask_in_info(getattr(module, factory)(**kwargs))
    api_test(game, num_cycles=300)
    space = game.observation_space("player_0")
    assert isinstance(space, gymnasium.spaces.Box) and space.dtype == np.float32


@pytest.mark.parametrize(("module", "kwargs"), GAMES, ids=GAME_IDS)
def test_turn_based_parallel_of_mask_in_info_passes_parallel_api_test(module, kwargs):
    parallel_api_test(turn_based_aec_to_parallel(mask_in_info(module.env(**kwargs))), 300)


@pytest.mark.parametrize(("module", "kwargs"), GAMES, ids=GAME_IDS)
def test_infos_hold_the_masks_of_the_dict_observation(module, kwargs):
    inner = module.env(**kwargs)
    game = mask_in_info(inner)
    game.reset(seed=3)
    rng = np.random.default_rng(3)
    steps = 0
    for agent in game.agent_iter(max_iter=400):
        obs, _, termination, truncation, info = game.last()
        for other, other_info in game.infos.items():
            expected = inner.observe(other)
            np.testing.assert_array_equal(other_info["action_mask"], expected["action_mask"])
            assert other_info["action_mask"].dtype == np.int8
        np.testing.assert_array_equal(obs, inner.observe(agent)["observation"])
        if termination or truncation:
            assert not info["action_mask"].any()
            game.step(None)
            continue
        acting = [a for a, i in game.infos.items() if i["action_mask"].any()]
        assert acting == [agent]
        game.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        steps += 1
    assert steps > 20


def test_masks_are_cleared_when_an_illegal_move_ends_the_game():
    game = mask_in_info(updown_env.env(num_players=2))
    game.reset(seed=0)
    _, _, _, _, info = game.last()
    illegal = int(np.flatnonzero(info["action_mask"] == 0)[0])
    game.step(illegal)
    assert all(game.terminations.values())
    assert not any(i["action_mask"].any() for i in game.infos.values())


def test_info_masks_are_read_only():
    game = mask_in_info(kingup_env.raw_env())
    game.reset(seed=0)
    for info in game.infos.values():
        with pytest.raises(ValueError, match="read-only"):
            info["action_mask"][0] = 1


class _OtherGame(AECEnv):
    metadata = {"name": "other_v0"}
    possible_agents = ["a"]


@pytest.mark.parametrize(
    ("make", "error", "problem"),
    [
        (lambda: turn_based_aec_to_parallel(kingup_env.env()), TypeError, "got a ParallelEnv"),
        (lambda: gymnasium.make("CartPole-v1"), TypeError, "got TimeLimit"),
        (lambda: "kingup", TypeError, "got str"),
        (_OtherGame, ValueError, "got other_v0"),
        (lambda: mask_in_info(kingup_env.env()), ValueError, "already wrapped"),
    ],
    ids=["parallel", "gymnasium", "string", "other-aec", "twice"],
)
def test_mask_in_info_refuses_what_it_cannot_wrap(make, error, problem):
    with pytest.raises(error) as raised:
        mask_in_info(make())
    message = str(raised.value)
    assert problem in message and "\n" not in message
    assert "kingup_env.env()" in message  # names what is allowed


# -- recipes ----------------------------------------------------------------------------------
def test_recipe_links_in_readme_and_doc_point_at_headings():
    doc = DOC.read_text()
    links = re.findall(r"\(#([\w-]+)\)", doc)
    links += re.findall(r"docs/integrations\.md#([\w-]+)", (ROOT / "README.md").read_text())
    # GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens.
    anchors = {
        re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-")
        for h in re.findall(r"^## (.+)$", doc, re.M)
    }
    assert len(set(links)) >= len(recipes()) and set(links) <= anchors


def test_every_recipe_is_run_by_a_test():
    tested = {"sb3", "tianshou", "parallel", "supersuit", "cleanrl"} | HEAVY_RECIPES
    tested |= {"gym_maskable", "gym_ppo"}  # tests/test_gym_env.py
    assert set(recipes()) == tested


def test_recipe_sb3_maskable_ppo_self_play():
    pytest.importorskip("sb3_contrib")
    ns = run_recipe("sb3")
    assert ns["model"].num_timesteps >= 256
    assert set(ns["returns"].values()) <= {-1.0, 1.0} and 1.0 in ns["returns"].values()


def test_recipe_tianshou():
    pytest.importorskip("tianshou")
    ns = run_recipe("tianshou")
    assert ns["result"].update_step > 0
    assert ns["result"].test_episode >= 2


def test_recipe_parallel():
    ns = run_recipe("parallel")
    assert not ns["par"].agents and any(ns["returns"].values())


def test_aec_to_parallel_refuses_as_the_doc_says():
    with pytest.raises(AssertionError, match="parallelizable"):
        aec_to_parallel(kingup_env.env())


def test_recipe_supersuit():
    pytest.importorskip("supersuit")
    ns = run_recipe("supersuit")
    assert ns["game"].observation_space("player_0").shape == (3 * kingup_env.OBS_SIZE + 4,)
    assert not ns["game"].agents  # the game was played to the end


def test_recipe_cleanrl_style():
    pytest.importorskip("torch")
    ns = run_recipe("cleanrl")
    assert ns["update"] == 2 and np.isfinite(ns["loss"].item())
