"""AgileRL's recipe from docs/integrations.md, in the environment ``.ci/integrations`` makes.

AgileRL 2.58 pins pettingzoo 1.26.1 (which has no registry) and needs peft, so it cannot share
CI's environment; without it installed these tests are skipped.
"""

from __future__ import annotations

import subprocess
import sys

import pettingzoo
import pytest
from pettingzoo.test import api_test, parallel_api_test
from pettingzoo.utils.conversions import turn_based_aec_to_parallel
from test_integrations import GAME_IDS, GAMES, ROOT, recipes

from tablegym import registration
from tablegym.wrappers import mask_in_info

pytest.importorskip("agilerl")


def test_recipe_agilerl_ippo(tmp_path):
    # A script of its own: AsyncPettingZooVecEnv starts worker processes.
    script = tmp_path / "agilerl_recipe.py"
    script.write_text(recipes()["agilerl"])
    run = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "fitness per evaluation:" in run.stdout


@pytest.mark.skipif(hasattr(pettingzoo, "register"), reason="this PettingZoo has a registry")
def test_without_a_registry_import_registers_nothing():
    assert registration.register_envs() == []


@pytest.mark.parametrize(("module", "kwargs"), GAMES, ids=GAME_IDS)
def test_mask_in_info_api_tests_under_agilerls_pettingzoo(module, kwargs):
    api_test(mask_in_info(module.env(**kwargs)), num_cycles=300)
    parallel_api_test(turn_based_aec_to_parallel(mask_in_info(module.env(**kwargs))), 300)
