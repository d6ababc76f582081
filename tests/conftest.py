"""Teardown for every test: no process a test started (``helpers.spawn``) outlives it, and
nothing is left in the system's temporary directory."""

import pytest
from helpers import end_spawned


@pytest.fixture(autouse=True)
def _no_process_outlives_its_test():
    yield
    end_spawned()


@pytest.fixture(autouse=True)
def _sb3_logs_in_the_tests_own_folder(tmp_path_factory, monkeypatch):
    # Tests that build a bare MaskablePPO and call learn() would leave an empty SB3-<time>
    # folder in /tmp each (SB3's default logger); the project's own models have a quiet one.
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path_factory.getbasetemp() / "sb3"))
