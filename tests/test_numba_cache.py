"""tablegym.numba_cache: a module's cached kernels go when a module compiled into them changes."""

from __future__ import annotations

import types

from tablegym.numba_cache import drop_stale


def test_cache_files_go_when_a_dependency_changes_and_stay_otherwise(tmp_path):
    module, dependency = tmp_path / "twin.py", tmp_path / "engine.py"
    module.write_text("# kernels\n")
    dependency.write_text("X = 1\n")
    engine = types.SimpleNamespace(__file__=str(dependency))
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


def test_an_unwritable_cache_folder_is_left_alone(tmp_path):
    module = tmp_path / "twin.py"
    module.write_text("")
    (tmp_path / "__pycache__").write_text("a file where the folder would be")
    assert not drop_stale(str(module), types.SimpleNamespace(__file__=str(module)))
