"""Commands and agent specs that need an extra say which, in one ``error:`` line.

The missing distributions are read from the installed package's requirements
(``tablegym.cli.missing_of_extra``); here an installation without them is simulated. The
wheel test (``.ci/wheel``) runs the same commands in a real core-only install.
"""

from __future__ import annotations

from importlib import metadata

import pytest

from tablegym import cli

REQUIRES = [
    "numpy>=1.24",
    'torch>=2.1; extra == "train"',
    'tqdm>=4.60; extra == "train"',
    'pytest>=7.4; extra == "dev"',
    'ray[rllib]<3,>=2.50; extra == "rllib"',
    'tablegym[train]; extra == "rllib"',
]


@pytest.fixture
def core_only(monkeypatch):
    """An installed tablegym whose extras' distributions are all missing."""

    def requires(dist):
        assert dist == "tablegym"
        return REQUIRES

    def distribution(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(cli.metadata, "requires", requires)
    monkeypatch.setattr(cli.metadata, "distribution", distribution)


def test_missing_of_an_extra_follows_the_requirements(core_only):
    assert cli.missing_of_extra("train") == ["torch", "tqdm"]
    assert cli.missing_of_extra("rllib") == ["ray", "torch", "tqdm"]  # it includes train
    assert cli.missing_of_extra("bench") == []


def test_nothing_is_missing_where_everything_is_installed():
    for extra in ("train", "rllib"):
        assert cli.missing_of_extra(extra) == []
        cli.require_extra(extra, "x")


def test_a_source_checkout_without_metadata_checks_nothing(monkeypatch):
    def requires(dist):
        raise metadata.PackageNotFoundError(dist)

    monkeypatch.setattr(cli.metadata, "requires", requires)
    assert cli.missing_of_extra("train") == []


def commands():
    from training import evaluate, exploit, play, train, train_rllib

    return [
        (train.main, ["--game", "updown"], "tablegym-train needs the train extra"),
        (evaluate.cli, ["--game", "updown", "--agents", "random", "random"],
         "tablegym-evaluate needs the train extra"),
        (exploit.cli, ["--game", "updown"], "tablegym-exploit needs the train extra"),
        (train_rllib.main, ["--game", "updown"], "tablegym-train-rllib needs the rllib extra"),
        (play.cli, ["--game", "updown", "--agents", "ppo:updown", "random"],
         "the agent spec ppo:updown needs the train extra"),
    ]  # fmt: skip


@pytest.mark.parametrize("index", range(5))
def test_each_command_names_its_extra_in_one_line(index, core_only, monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    entry, argv, message = commands()[index]
    monkeypatch.setattr("sys.argv", ["cmd", *argv])
    with pytest.raises(SystemExit) as stop:
        entry(argv) if entry.__name__ == "main" else entry()
    text = (stop.value.code if isinstance(stop.value.code, str) else "") + capsys.readouterr().err
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), text
    extra = message.rpartition(" ")[0].rpartition(" ")[2]
    assert message in lines[0] and f"pip install 'tablegym[{extra}]'" in lines[0]
    assert not list(tmp_path.iterdir())  # nothing written


def test_the_single_seat_env_names_the_extra_of_a_ppo_opponent(core_only):
    import gymnasium

    import training.gym_env  # noqa: F401

    with pytest.raises(ValueError, match=r"ppo:kingup needs the train extra") as raised:
        gymnasium.make("tablegym/KingUp-v1", opponents="ppo:kingup")
    assert "\n" not in str(raised.value)
