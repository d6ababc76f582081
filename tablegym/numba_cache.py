"""The one rule for numba's on-disk cache: a module's cached kernels are dropped when anything
compiled into them changes.

numba keys a cached kernel on its own source file only. A kernel that calls compiled functions
of another module (an engine's per-row rules, say) or reads its constants (a rules module's
action ids, an observation layout's offsets) has them frozen into it, so after that module
changes the cache still returns the old code: wrong results, silently.

The rule, for every module with ``@njit(cache=True)`` kernels (``tests/test_numba_cache.py``
checks each one):

- it declares ``CACHE_FROZEN``: the modules of this project it imports (what its kernels may
  read as globals), or ``()`` if it imports none;
- if that is not empty, it calls ``drop_stale(__file__, *CACHE_FROZEN)`` at import, before any
  of its kernels runs.

:func:`drop_stale` digests the sources of those modules and of every module of this project
they import in turn (a rules module under an engine under a rollout twin), and removes the
module's cache files when the digest differs from the one stamped when they were written;
numba then compiles afresh. An edit anywhere below a module costs one compilation, never a
stale result.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
from pathlib import Path
from types import ModuleType


def _is_module(name: str) -> bool:
    """Whether ``name`` is an importable module (its parent packages get imported to tell)."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def project_imports(path: Path, module: str) -> set[str]:
    """The modules of ``module``'s own top-level package or of ``tablegym`` that ``path`` (the
    source of ``module``) imports: ``from p import m`` counts as ``p.m`` where that is a
    module, else as ``p`` (whose names it takes)."""
    own = {module.split(".")[0], "tablegym"}
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [
                f"{node.module}.{alias.name}"
                if _is_module(f"{node.module}.{alias.name}")
                else node.module
                for alias in node.names
                if node.module.split(".")[0] in own
            ]
        else:
            continue
        found.update(name for name in names if name.split(".")[0] in own)
    return found


def frozen_sources(*dependencies: ModuleType) -> dict[str, Path]:
    """Source files of ``dependencies`` and of every module of this project they import,
    recursively, by module name (this module, the guard itself, left out)."""
    todo = {module.__name__: Path(module.__file__) for module in dependencies}
    seen: dict[str, Path] = {}
    while todo:
        name, path = todo.popitem()
        seen[name] = path
        for child in project_imports(path, name) - seen.keys() - {__name__}:
            spec = importlib.util.find_spec(child)
            if spec is not None and spec.origin and spec.origin.endswith(".py"):
                todo[child] = Path(spec.origin)
    return seen


def drop_stale(module_file: str, *dependencies: ModuleType) -> bool:
    """Remove numba's cache files of ``module_file`` if the source of a dependency, or of a
    module of this project below one, changed since they were written; True if files were
    removed. Where the cache folder cannot be written (numba then caches elsewhere), nothing
    is done."""
    path = Path(module_file)
    cache = path.parent / "__pycache__"
    digest = hashlib.sha256()
    for name, source in sorted(frozen_sources(*dependencies).items()):
        digest.update(name.encode() + b"\0" + source.read_bytes())
    stamp = cache / f"{path.stem}.deps"
    try:
        if stamp.read_text() == digest.hexdigest():
            return False
    except OSError:
        pass  # no stamp yet: files of unknown age
    removed = False
    try:
        for old in cache.glob(f"{path.stem}.*.nb[ic]"):
            old.unlink(missing_ok=True)
            removed = True
        cache.mkdir(exist_ok=True)
        stamp.write_text(digest.hexdigest())
    except OSError:
        return removed
    return removed
