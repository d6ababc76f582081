"""Settings for every test run, notebooks included."""

import os

# Notebooks read TABLEGYM_BUDGET: "small" shrinks their tournaments to seconds. Their kernels
# inherit this process's environment.
os.environ.setdefault("TABLEGYM_BUDGET", "small")
