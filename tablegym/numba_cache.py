"""Keep numba's on-disk cache of a module's kernels in step with the modules they compile in.

numba keys a cached kernel on its own source file only. A kernel that calls compiled functions
of another module (an engine's per-row rules, say) or reads its constants has their code
frozen into it, so after that module changes the cache still returns the old code. A module
that compiles others in calls :func:`drop_stale` at import, before any of its kernels runs: it
removes the module's cache files when the sources of those modules differ from what they were
when the files were written, and numba compiles afresh.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import ModuleType


def drop_stale(module_file: str, *dependencies: ModuleType) -> bool:
    """Remove numba's cache files of ``module_file`` if the source of a dependency changed
    since they were written; True if files were removed. Where the cache folder cannot be
    written (numba then caches elsewhere), nothing is done."""
    path = Path(module_file)
    cache = path.parent / "__pycache__"
    digest = hashlib.sha256()
    for module in dependencies:
        digest.update(Path(module.__file__).read_bytes())
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
