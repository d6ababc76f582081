"""Teardown for every test: no process a test started (``helpers.spawn``) outlives it."""

import pytest
from helpers import end_spawned


@pytest.fixture(autouse=True)
def _no_process_outlives_its_test():
    yield
    end_spawned()
