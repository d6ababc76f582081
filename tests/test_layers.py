"""The import layers: games and ``tablegym`` below ``agents``, ``agents`` below ``training``, and
no game imports another (each game's players live in its own package).

Every module's imports are read from its source with ``ast``, function-level imports included,
so an import that would make a cycle cannot hide inside a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tablegym.games import GAMES

ROOT = Path(__file__).resolve().parent.parent
# Package -> the top-level packages it must not import. tablegym sits below the games (it
# reaches them by name through tablegym.games), and a game reaches no other game.
FORBIDDEN = {
    **{package: {"agents", "training", *GAMES.values()} - {package} for package in GAMES.values()},
    "tablegym": {"agents", "training", *GAMES.values()},
    "agents": {"training"},
}


def imported_packages(source: str, module: str) -> set[str]:
    """Top-level packages that ``source`` (the module ``module``) imports anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's own package
                found.add(module.split(".")[0])
            else:
                found.add(node.module.split(".")[0])
    return found


def test_imports_are_found_at_every_level():
    source = (
        "import numpy as np\n"
        "from tablegym import games\n"
        "def later():\n"
        "    from training.registry import make_agent\n"
        "    class Inner:\n"
        "        import agents.base\n"
    )
    assert imported_packages(source, "x.y") == {"numpy", "tablegym", "training", "agents"}
    assert imported_packages("from . import rules\n", "kdk_env.env") == {"kdk_env"}


@pytest.mark.parametrize("package", list(FORBIDDEN))
def test_no_module_imports_a_higher_layer(package):
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"no modules found in {package}/"
    for path in files:
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        wrong = imported_packages(path.read_text(), module) & FORBIDDEN[package]
        assert not wrong, f"{module} imports {', '.join(sorted(wrong))}"
