"""Ray RLlib: the MultiAgentEnvs, one training iteration per game, the rllib:DIR agent, a cluster.

One small local Ray (2 CPUs) is shared by the module's training tests and shut down after them.
The two-node test starts its own Ray head and worker node (``training.local_cluster``) and ends
exactly those processes (their process groups), never other Ray instances on the machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("ray.rllib")

from ray.rllib.utils.pre_checks.env import check_multiagent_environments  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

from tablegym.games import observation_of, rules_of  # noqa: E402
from tablegym.rllib import ENVS  # noqa: E402
from training import tags, train_rllib  # noqa: E402
from training.evaluate import evaluate  # noqa: E402
from training.local_cluster import LOOPBACK, LocalCluster, closed_port  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = [sys.executable, str(ROOT / "training" / "train_rllib.py")]
PLAYERS = {"kingup": 4, "updown": 2, "kdk": 3}
# KdK games run to thousands of steps; one short round keeps an iteration to a few games.
FAST = {"kdk": {"num_rounds": 1, "max_round_steps": 200}}
TINY = {
    "iterations": 1, "train_batch_size": 256, "minibatch_size": 128, "num_epochs": 1,
    "hidden": "32", "pool_size": 2, "snapshot_every": 1, "eval_every": 1, "eval_games": 2,
    "progress": False,
}  # fmt: skip


def options(game: str) -> dict:
    return {"num_players": PLAYERS[game], **FAST.get(game, {})}


def play_random(env, seed: int) -> tuple[list, dict, dict]:
    """A masked random game; returns the acting seats, the last rewards and observations."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    actors = []
    while True:
        assert len(obs) == 1, "only the seat to act is observed during play"
        ((agent, o),) = obs.items()
        actors.append(agent)
        seat = env.possible_agents.index(agent)
        assert env.game_state.to_play == seat
        # What the agent sees is exactly its own seat's view of the game, and its legal moves.
        np.testing.assert_array_equal(o["observations"], env.encoder.encode(env.game_state, seat))
        legal = np.flatnonzero(o["action_mask"])
        assert list(legal) == list(env.rules.legal_actions(env.game_state))
        obs, rewards, terminated, truncated, infos = env.step({agent: rng.choice(legal)})
        assert set(rewards) == set(env.possible_agents)
        assert truncated == {"__all__": False}
        if terminated["__all__"]:
            return actors, rewards, obs


@pytest.mark.parametrize("game", list(ENVS))
def test_env_passes_rllib_precheck_and_plays_masked_games(game):
    env = ENVS[game](options(game))
    for _ in range(10):  # the pre-check steps an unmasked random action: legal or not
        check_multiagent_environments(env)
    before = env.illegal_moves
    actors, rewards, last = play_random(env, seed=3)
    assert set(last) == set(env.possible_agents)  # every seat sees the end of the game
    assert all(not o["action_mask"].any() for o in last.values())
    assert env.illegal_moves == before
    again = ENVS[game](options(game))
    assert play_random(again, seed=3)[0] == actors  # seeded: the same game again
    space = env.observation_spaces["player_0"]
    assert set(space) == {"observations", "action_mask"}
    assert space["observations"].shape == (observation_of(game).OBS_SIZE,)
    assert space["action_mask"].shape == (rules_of(game).NUM_ACTIONS,)


def test_env_options_pass_through_and_bad_ones_are_refused():
    env = ENVS["kingup"]({"num_players": 6, "reward": "score"})
    assert env.possible_agents == [f"player_{i}" for i in range(6)]
    assert env.config.reward == "score"
    with pytest.raises(ValueError, match="num_players must be one of 3, 4, 5, 6; got 9"):
        ENVS["kingup"]({"num_players": 9})


def test_illegal_action_ends_the_game_with_a_penalty_as_env_does():
    env = ENVS["kingup"]({"num_players": 3})
    obs, _ = env.reset(seed=0)
    ((agent, o),) = obs.items()
    illegal = int(np.flatnonzero(o["action_mask"] == 0)[0])
    obs, rewards, terminated, _, infos = env.step({agent: illegal})
    assert terminated["__all__"]
    assert rewards[agent] == -1.0 and sum(rewards.values()) == -1.0
    assert infos == {agent: {"illegal_action": illegal}}
    assert env.illegal_moves == 1


def test_env_runners_deal_different_games_from_one_seed():
    """RLlib's EnvContext gives each env runner its index: same seed, different deals."""
    from ray.rllib.env.env_context import EnvContext

    states = []
    for worker in (1, 2):
        env = ENVS["kingup"](EnvContext({"num_players": 4, "seed": 7}, worker_index=worker))
        env.reset()
        states.append(env.game_state)
    assert states[0] != states[1]


def test_league_mapping_keeps_one_learner_seat_and_agrees_per_episode():
    seen = set()
    for i in range(200):
        episode = SimpleNamespace(id_=f"episode-{i}")
        modules = [
            train_rllib.league_mapping(
                f"player_{s}", episode, num_players=4, pool_size=3, opponent_share=1.0
            )
            for s in range(4)
        ]
        assert modules.count("main") == 1  # share 1: every other seat is a frozen policy
        seen.update(modules)
        again = [
            train_rllib.league_mapping(f"player_{s}", episode, num_players=4, pool_size=3,
                                       opponent_share=1.0)
            for s in range(4)
        ]  # fmt: skip
        assert again == modules
        share0 = {
            train_rllib.league_mapping(f"player_{s}", episode, num_players=4, pool_size=3,
                                       opponent_share=0.0)
            for s in range(4)
        }  # fmt: skip
        assert share0 == {"main"}  # pure self-play: every seat learns
    assert seen == {"main", "past_0", "past_1", "past_2"}


# -- training on a local Ray --------------------------------------------------------------


@pytest.fixture(scope="module")
def local_ray():
    import ray

    # A Ray of its own, whatever cluster /tmp/ray/ray_current_cluster names (the two-node test's).
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR")  # fmt: skip
    yield ray
    ray.shutdown()


@pytest.mark.parametrize("game", list(ENVS))
def test_one_iteration_trains_checkpoints_and_evaluates(game, local_ray, tmp_path):
    opts = options(game)
    args = train_rllib.Args(
        game=game, num_players=opts["num_players"],
        option=[f"{k}={v}" for k, v in opts.items() if k != "num_players"],
        out=str(tmp_path / "run"), num_env_runners=1 if game == "kingup" else 0, **TINY,
    )  # fmt: skip
    summary = train_rllib.train(args)
    run = tmp_path / "run"
    rows = [json.loads(line) for line in (run / "progress.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in rows] == [1]
    assert rows[0]["env_steps"] >= TINY["train_batch_size"]
    assert rows[0]["illegal_moves"] == 0
    assert sum(rows[0]["env_steps_by_node"].values()) == rows[0]["env_steps"]
    assert {r["opponent"] for r in summary["final"].values()} == {"random", "heuristic"}
    # header + two baselines before training (at step 0) and after the iteration
    assert (run / "curve.csv").read_text().count("\n") == 5
    assert [r["step"] for r in json.loads((run / "curve.json").read_text())][:2] == [0, 0]
    # The tags train.py writes too (training/tags.py), at the run's env steps.
    events = EventAccumulator(str(run / "tb")).Reload()
    written = set(events.Tags()["scalars"])
    baselines = train_rllib.BASELINES
    expected = {tags.SAMPLES_PER_SECOND, *(tags.EVAL_WIN_RATE.format(o) for o in baselines)}
    if rows[0]["main_return_mean"] is not None:
        expected.add(tags.EPISODE_REWARD)
    assert expected <= written
    assert json.loads((run / "league.json").read_text())["from_iteration"] == [1, 0]
    # The policy plays through the evaluation harness, which refuses any illegal move.
    lineup = [f"rllib:{run}"] + ["random"] * (opts["num_players"] - 1)
    result = evaluate(game, lineup, games=opts["num_players"], seed=1, options=opts)
    assert result["games"] == opts["num_players"]
    if game == "kingup":  # resume: the iteration count and the env steps go on
        # A run killed after its progress row of iteration 2 but before that checkpoint, and
        # one killed mid-line by an older version: iteration 2 runs again, written once.
        with (run / "progress.jsonl").open("a") as fh:
            fh.write(json.dumps({**rows[0], "iteration": 2}) + '\n{"iteration": 3, "env_st')
        more = train_rllib.Args(resume=str(run), iterations=2, progress=False)
        train_rllib.train(more, frozenset({"resume", "iterations"}))
        rows = [json.loads(line) for line in (run / "progress.jsonl").read_text().splitlines()]
        assert [r["iteration"] for r in rows] == [1, 2]
        assert rows[1]["env_steps"] > rows[0]["env_steps"]


def test_a_run_whose_iterations_sampled_nothing_fails(local_ray, tmp_path, monkeypatch):
    # On a loaded machine every iteration ended at RLlib's sample timeout with 0 env steps
    # and the run reported success. Here RLlib reports 0 steps sampled, as it did then.
    real = train_rllib.Run.record

    def nothing_sampled(self, result):
        runners = result.get("env_runners", {})
        runners.update(num_env_steps_sampled_lifetime=0, num_module_steps_sampled={})
        return real(self, result)

    monkeypatch.setattr(train_rllib.Run, "record", nothing_sampled)
    args = train_rllib.Args(game="updown", out=str(tmp_path / "run"), num_env_runners=0,
                            **{**TINY, "eval_games": 0})  # fmt: skip
    with pytest.raises(
        train_rllib.NoSamplesError, match=r"sampled no env steps in 1 iteration\(s\)"
    ):
        train_rllib.train(args)
    assert not (tmp_path / "run" / "summary.json").exists()


def test_a_checkpoint_on_a_full_disk_keeps_the_previous_one(tmp_path):
    from tablegym.files import WriteError

    class FullDisk:  # an algorithm whose save fills the disk halfway
        iteration = 3

        def save_to_path(self, path: str) -> None:
            Path(path).mkdir()
            (Path(path) / "module_state.pt").write_text("half")
            raise OSError(28, "No space left on device")

    run = tmp_path / "run"
    (run / "checkpoint").mkdir(parents=True)
    (run / "checkpoint" / "tablegym_meta.json").write_text("{}")
    args = train_rllib.Args(game="updown", out=str(run), **TINY)
    with pytest.raises(WriteError, match=f"cannot write {run / 'checkpoint'}: No space left"):
        train_rllib.Run(args, options("updown"), FullDisk()).checkpoint()
    assert sorted(p.name for p in run.iterdir()) == ["checkpoint", "tb"]
    assert [p.name for p in (run / "checkpoint").iterdir()] == ["tablegym_meta.json"]


def test_rllib_agent_refuses_another_game_and_player_count(local_ray, tmp_path, monkeypatch):
    from training.registry import make_agent

    monkeypatch.chdir(tmp_path)  # a relative run directory, as docs/rllib.md writes it
    args = train_rllib.Args(game="updown", out="run", num_env_runners=0,
                            **{**TINY, "eval_games": 0})  # fmt: skip
    train_rllib.train(args)
    agent = make_agent("rllib:run", "updown")
    assert agent.num_players == 2
    with pytest.raises(ValueError, match="trained for game='updown', not 'kingup'"):
        make_agent(f"rllib:{tmp_path / 'run'}", "kingup")
    with pytest.raises(ValueError, match="trained for num_players 2, but this game has 3"):
        make_agent(f"rllib:{tmp_path / 'run'}", "updown", num_players=3)
    with pytest.raises(ValueError, match="trained for num_players 2, but this game has 4"):
        evaluate("updown", [f"rllib:{tmp_path / 'run'}"] + ["random"] * 3, games=4, seed=0)
    with pytest.raises(FileNotFoundError, match="not found"):
        make_agent(f"rllib:{tmp_path / 'nothing'}", "updown")


# -- the command line ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--num-players", "9"], "error: num_players must be one of 3, 4, 5, 6; got 9"),
        (["--option", "colour=red"], "error: unknown option 'colour'; allowed options: "),
        (["--iterations", "0"], "error: --iterations must be an integer >= 1; got 0"),
        (["--num-env-runners", "64"], "error: --num-env-runners must be at most the local Ray's"),
        (["--address", "nowhere"], "error: --address must be HOST:PORT"),
        (["--resume", "no/such/run"], "error: --resume no/such/run: not a train_rllib.py run"),
    ],
)
def test_bad_input_is_one_line_before_any_work(argv, message, tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([*SCRIPT, "--out", str(out), *argv], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.startswith(message), proc.stderr
    assert proc.stderr.count("\n") == 1
    assert not out.exists()


def test_unreachable_address_fails_instead_of_waiting(tmp_path):
    address = f"127.0.0.1:{closed_port()}"
    # Ray's own connection retries would wait minutes: the timeout catches a hang.
    proc = subprocess.run([*SCRIPT, "--out", str(tmp_path / "run"), "--address", address],
                          capture_output=True, text=True, timeout=45, cwd=ROOT)  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        f"error: --address {address}: no Ray cluster answers there (Connection refused)"
    )


# -- a two-node cluster on this machine ---------------------------------------------------


@pytest.mark.slow
def test_two_node_cluster_samples_on_both_nodes(tmp_path):
    with LocalCluster([1, 1], logs=tmp_path) as cluster:
        run = tmp_path / "run"
        cmd = [*SCRIPT, "--game", "kingup", "--address", cluster.address,
               "--num-env-runners", "2", "--iterations", "2", "--train-batch-size", "400",
               "--minibatch-size", "200", "--num-epochs", "1", "--hidden", "32",
               "--eval-every", "0", "--eval-games", "4", "--out", str(run),
               "--no-progress"]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT,
                              env=LOOPBACK)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        last = json.loads((run / "progress.jsonl").read_text().splitlines()[-1])
        by_node = last["env_steps_by_node"]
        print(json.dumps(last, indent=1))
        assert len(by_node) == 2 and min(by_node.values()) > 0, by_node
        assert sum(by_node.values()) == last["env_steps"]
