"""tablegym.numba_cache: one rule for numba's on-disk cache, kept by every cached module.

A module's cached kernels go when a module compiled into them changes, however deep below it;
every module with ``@njit(cache=True)`` kernels declares what it freezes and guards its cache;
and an edited KdK observation layout reaches the KdK engine at the next import.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from tablegym.games import GAMES
from tablegym.numba_cache import drop_stale, frozen_sources, project_imports

ROOT = Path(__file__).resolve().parent.parent


def has_cached_kernels(source: str) -> bool:
    """Whether a function of ``source`` is decorated ``...(cache=True)`` (``njit``, ``nb.njit``)."""
    return any(
        isinstance(decorator, ast.Call)
        and any(
            k.arg == "cache" and getattr(k.value, "value", None) is True for k in decorator.keywords
        )
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef)
        for decorator in node.decorator_list
    )


CACHED = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts)
    for package in ("tablegym", "agents", "training", *GAMES.values())
    for path in (ROOT / package).rglob("*.py")
    if has_cached_kernels(path.read_text())
)


def test_cache_files_go_when_a_dependency_changes_and_stay_otherwise(tmp_path):
    module, dependency = tmp_path / "twin.py", tmp_path / "engine.py"
    module.write_text("# kernels\n")
    dependency.write_text("X = 1\n")
    engine = types.SimpleNamespace(__name__="engine", __file__=str(dependency))
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    kept = cache / "twin_other.f-3.py311.nbi"  # another module's cache stays
    kept.write_text("")

    def cached() -> list[str]:
        names = ("twin.policy-12.py311.nbi", "twin.policy-12.py311.1.nbc")
        for name in names:
            (cache / name).write_text("")
        return sorted(p.name for p in cache.glob("twin.*.nb[ic]"))

    assert len(cached()) == 2
    assert drop_stale(str(module), engine)  # no stamp yet: files of unknown age go
    assert not list(cache.glob("twin.*.nb[ic]")) and kept.exists()
    cached()
    assert not drop_stale(str(module), engine)  # unchanged: the cache stays
    assert len(list(cache.glob("twin.*.nb[ic]"))) == 2
    dependency.write_text("X = 2\n")
    assert drop_stale(str(module), engine)
    assert not list(cache.glob("twin.*.nb[ic]")) and kept.exists()
    assert not drop_stale(str(module), engine)


def test_a_change_below_a_dependency_drops_the_cache_too(tmp_path, monkeypatch):
    # twin -> engine -> rules: the twin declares only the engine, yet a changed rules constant
    # is frozen into its kernels through the engine's.
    package = tmp_path / "game_x"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "rules.py").write_text("PLAY = 1\n")
    (package / "engine.py").write_text("from game_x import rules\n\nPLAY = rules.PLAY\n")
    (package / "twin.py").write_text("# kernels\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    engine = importlib.import_module("game_x.engine")
    assert set(frozen_sources(engine)) == {"game_x.engine", "game_x.rules"}
    twin = str(package / "twin.py")
    drop_stale(twin, engine)
    (package / "__pycache__" / "twin.f-1.py311.nbi").write_text("")
    assert not drop_stale(twin, engine)
    (package / "rules.py").write_text("PLAY = 2\n")
    assert drop_stale(twin, engine)


def test_an_unwritable_cache_folder_is_left_alone(tmp_path):
    module = tmp_path / "twin.py"
    module.write_text("")
    (tmp_path / "__pycache__").write_text("a file where the folder would be")
    itself = types.SimpleNamespace(__name__="twin", __file__=str(module))
    assert not drop_stale(str(module), itself)


def test_the_cached_modules_are_found():
    assert has_cached_kernels("@nb.njit(cache=True, inline='always')\ndef f():\n    pass\n")
    assert not has_cached_kernels('"""@njit(cache=True)"""\n@njit\ndef f():\n    pass\n')
    assert {"tablegym.kernels", "kdk_env.engine", "kdk_env.rollout"} <= set(CACHED)
    assert "tablegym.numba_cache" not in CACHED


@pytest.mark.parametrize("name", CACHED)
def test_every_cached_module_declares_what_it_freezes_and_guards_its_cache(name):
    module = importlib.import_module(name)
    path = Path(module.__file__)
    declared = {frozen.__name__ for frozen in module.CACHE_FROZEN}
    imported = project_imports(path, name) - {"tablegym.numba_cache"}
    assert imported <= declared, f"{name} imports {sorted(imported - declared)} undeclared"
    if not declared:
        return
    # The guard is a statement of the module itself, before the first function: it runs at
    # import, before any kernel can load from the cache.
    body = ast.parse(path.read_text()).body
    first_def = next(i for i, node in enumerate(body) if isinstance(node, ast.FunctionDef))
    guard = ast.parse("drop_stale(__file__, *CACHE_FROZEN)").body[0]
    assert any(ast.dump(node) == ast.dump(guard) for node in body[:first_def]), (
        f"{name} must call drop_stale(__file__, *CACHE_FROZEN) before its first function"
    )


# Writes the KdK engine's observation of a dealt game beside observation.encode's. The engine
# kernel is compiled on the first run and loaded from numba's cache on the second.
OBSERVE = """
import json, numpy as np
import kdk_env.engine as E, kdk_env.observation as O, kdk_env.rules as R
config = R.make_config(num_players=3)
state = R.initial_state(config, np.random.default_rng(0))
cfg, deck, scale, shift, base = E.setup(config)
obs = np.zeros(O.OBS_SIZE, dtype=np.float32)
E.observe_row(E.from_state(state, config), 0, cfg, scale, shift, base, obs)
print(json.dumps({"file": E.__file__, "engine": obs.tolist(),
                  "encode": O.encode(state, 0).tolist()}))
"""


def _observe(copy: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    env.pop("NUMBA_CACHE_DIR", None)  # the cache beside the copied sources
    done = subprocess.run(
        [sys.executable, "-c", OBSERVE],
        cwd=copy,  # not the checkout, which ``-c`` would put first on the path
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_an_edited_observation_layout_reaches_the_cached_kdk_engine(tmp_path):
    # Before the rule, one field added to this layout left the cached engine writing the old
    # offsets: 200 of 200 observations wrong until the cache was deleted by hand.
    shutil.copytree(
        ROOT / "kdk_env", tmp_path / "kdk_env", ignore=shutil.ignore_patterns("__pycache__")
    )
    first = _observe(tmp_path)
    assert Path(first["file"]).is_relative_to(tmp_path)
    assert first["engine"] == first["encode"]
    layout = tmp_path / "kdk_env" / "observation.py"
    source = layout.read_text()
    assert source.count('Field("hand", F') == 1 and source.count('Field("own_draw", F') == 1
    # Swap two fields of the same size and scale: only their offsets change.
    source = source.replace('Field("hand", F', 'Field("@", F')
    source = source.replace('Field("own_draw", F', 'Field("hand", F')
    layout.write_text(source.replace('Field("@", F', 'Field("own_draw", F'))
    second = _observe(tmp_path)
    assert second["encode"] != first["encode"]  # the edit moved the hand
    assert second["engine"] == second["encode"]
