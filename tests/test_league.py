"""The league (PFSP pool, fixed external players, exploiters) and the best-response probe."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("sb3_contrib")

import training.collector as collector  # noqa: E402
from training.collector import (  # noqa: E402
    FIXED,
    LEARNER,
    SNAPSHOT,
    PoolStats,
    SeatRolloutBuffer,
    SelfPlayPPO,
    SelfPlayVecEnv,
    parse_mix,
)

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parent.parent


def first_legal(obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A deliberately weak player: always its first legal move."""
    return mask.argmax(axis=1)


def test_pfsp_weights_favour_the_entries_that_beat_the_learner():
    stats = PoolStats(window=50, power=2.0, floor=0.05)
    for key in (0, 1, 2):
        stats.add(key)
    np.testing.assert_allclose(stats.weights(np.array([0, 1, 2])), [1 / 3] * 3)  # unknown: even
    stats.record(np.array([0] * 40), np.ones(40))  # entry 0 keeps beating the learner
    stats.record(np.array([1] * 40), np.zeros(40))  # entry 1 always loses
    stats.record(np.array([2] * 40), np.full(40, 0.5))
    w = stats.weights(np.array([0, 1, 2]))
    assert w[0] > w[2] > w[1] > 0  # the mastered entry keeps a small share
    assert stats.rate(0) > 0.95 and stats.rate(1) < 0.05
    uniform = PoolStats(power=0.0)
    for key in (0, 1):
        uniform.add(key)
    uniform.record(np.array([0] * 10), np.ones(10))
    np.testing.assert_allclose(uniform.weights(np.array([0, 1])), [0.5, 0.5])


def test_the_pool_entry_that_beats_the_learner_is_met_most_and_outcomes_are_scored():
    env = SelfPlayVecEnv("updown", [{"num_players": 2}], 400, parse_mix("snapshot=1"), seed=3)
    strong, weak = env.add_snapshot("strong", 5), env.add_snapshot("weak", 5)
    env.pfsp.record(np.array([strong] * 100), np.ones(100))
    env.pfsp.record(np.array([weak] * 100), np.tile([0.0, 0.0, 0.0, 1.0], 25))  # rate 1/4
    env.reset()
    met = env.slot_snapshot
    assert (met == strong).mean() > 0.8 and (met == weak).any()
    # Every non-learner seat of a game holds its game's entry.
    for slot in range(env.num_envs):
        others = env.kinds[slot][env.kinds[slot] != LEARNER]
        assert (others == SNAPSHOT + met[slot]).all()
    # A game that the entry's seat ends ahead counts as a win for the entry, and back.
    env.returns[:] = 0
    slots = np.flatnonzero(met == weak)[:1]
    seat = int(np.flatnonzero(env.kinds[slots[0]] == SNAPSHOT + weak)[0])
    env.returns[slots[0], seat] = 1.0
    before = env.pfsp.rate(weak)
    env._score_games(slots)
    assert env.pfsp.rate(weak) > before


def test_a_fixed_external_policy_is_what_plays_the_opposing_seats():
    calls = []

    def recorded(obs, mask, rng):
        chosen = first_legal(obs, mask, rng)
        calls.append((obs.copy(), chosen))
        return chosen

    env = SelfPlayVecEnv(
        "kingup", [{"num_players": 4}], 8, parse_mix("fixed=1"), seed=0, fixed=recorded
    )
    env.reset()
    assert ((env.kinds[:, :4] == FIXED).sum(axis=1) == 3).all()  # one learner seat per game
    rng = np.random.default_rng(0)
    for _ in range(60):
        rows = np.arange(env.num_envs)
        theirs = ~env.learner
        expected = first_legal(env.obs, env.mask, rng)
        learner_moves = collector.random_actions(env.mask, rng)
        calls.clear()
        played = env._opponent_actions(learner_moves)
        if theirs.any():
            assert len(calls) == 1  # one batched call for all the fixed seats
            np.testing.assert_array_equal(played[theirs], expected[theirs])
            np.testing.assert_array_equal(calls[0][0], env.obs[rows[theirs]])
        np.testing.assert_array_equal(played[~theirs], learner_moves[~theirs])
        env.step_async(learner_moves)
        env.step_wait()
    assert env.decisions["fixed"] > 0


def test_a_fixed_mix_needs_its_player_and_the_spec_must_play_in_batch():
    with pytest.raises(ValueError, match="needs the fixed policy"):
        SelfPlayVecEnv("kingup", [{"num_players": 4}], 4, parse_mix("fixed=1"))
    with pytest.raises(ValueError, match="must play in batch"):
        collector.fixed_player("ismcts:5", "kingup", {"num_players": 4})
    with pytest.raises(ValueError, match="--fixed nonsense: unknown agent spec"):
        collector.fixed_player("nonsense", "kingup", {"num_players": 4})


def test_each_table_size_has_its_own_fixed_player():
    seen = {2: [], 3: []}

    def sized(size):
        def act(obs, mask, rng):
            seen[size].append(len(obs))
            return first_legal(obs, mask, rng)

        return act

    tables = [{"num_players": 2}, {"num_players": 3}]
    env = SelfPlayVecEnv(
        "updown", tables, 16, parse_mix("fixed=1"), seed=0, fixed={2: sized(2), 3: sized(3)}
    )
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(40):
        learner_moves = collector.random_actions(env.mask, rng)
        theirs = ~env.learner
        for calls in seen.values():
            calls.clear()
        env._opponent_actions(learner_moves)
        for size, calls in seen.items():
            rows = theirs & (env.players == size)
            assert calls == ([int(rows.sum())] if rows.any() else [])  # one call per size
        env.step_async(learner_moves)
        env.step_wait()
    with pytest.raises(ValueError, match=r"no player at \[3\] players"):
        SelfPlayVecEnv("updown", tables, 4, parse_mix("fixed=1"), fixed={2: sized(2)})
    # One player holding both sizes plays all its seats in one call.
    env = SelfPlayVecEnv("updown", tables, 16, parse_mix("fixed=1"), seed=0, fixed=sized(2))
    env.reset()
    seen[2].clear()
    env._opponent_actions(collector.random_actions(env.mask, rng))
    assert seen[2] == [int((~env.learner).sum())]


def test_a_mixture_of_fixed_players_draws_one_per_game():
    calls = {"a": [], "b": []}

    def named(name):
        def act(obs, mask, rng):
            calls[name].append(len(obs))
            return first_legal(obs, mask, rng)

        return act

    a, b = named("a"), named("b")
    tables = [{"num_players": 2}, {"num_players": 3}]
    env = SelfPlayVecEnv(
        "updown", tables, 64, parse_mix("fixed=1"), seed=0, fixed={2: (a, b), 3: (a,)}
    )
    env.reset()
    assert set(env.slot_fixed[env.players == 3]) == {0}  # only a holds 3 players
    drawn = env.slot_fixed[env.players == 2]
    assert 0.3 < drawn.mean() < 0.7  # a and b about equally often
    rng = np.random.default_rng(0)
    redrawn = 0
    for _ in range(200):
        held = env.slot_fixed.copy()
        learner_moves = collector.random_actions(env.mask, rng)
        theirs = ~env.learner
        for seen in calls.values():
            seen.clear()
        env._opponent_actions(learner_moves)
        for k, seen in enumerate(calls.values()):
            rows = theirs & (held == k)
            assert seen == ([int(rows.sum())] if rows.any() else [])  # one call per player
        env.step_async(learner_moves)
        env.step_wait()
        kept = ~env.done
        np.testing.assert_array_equal(env.slot_fixed[kept], held[kept])  # whole games
        redrawn += int((env.slot_fixed[~kept] != held[~kept]).sum())
    assert redrawn > 0  # a new game draws its player anew
    with pytest.raises(ValueError, match=r"no player at \[3\] players"):
        SelfPlayVecEnv("updown", tables, 4, parse_mix("fixed=1"), fixed={2: (a, b), 3: ()})


def test_fixed_specs_each_hold_the_first_size_they_play(monkeypatch):
    def only_two(spec, game, options):  # "two" stands for a checkpoint trained at 2 players
        if spec == "two" and options["num_players"] != 2:
            raise ValueError(f"--fixed two: trained for 2 players, not {options['num_players']}")
        return lambda obs, mask, rng, name=spec: name

    monkeypatch.setattr(collector, "fixed_player", only_two)
    tables = [{"num_players": n} for n in (2, 3, 4)]

    def names(chosen):
        return {n: [play(None, None, None) for play in group] for n, group in chosen.items()}

    chosen = collector.fixed_players("two heuristic", "updown", tables)
    assert names(chosen) == {2: ["two"], 3: ["heuristic"], 4: ["heuristic"]}
    both = collector.fixed_players("heuristic", "updown", tables)
    assert both[2][0] is both[3][0] is both[4][0]  # one spec, one policy: its seats in one call
    # A mixture holds a size when each member plays it; its members keep one policy each.
    chosen = collector.fixed_players("two+random heuristic+random", "updown", tables)
    assert names(chosen) == {
        2: ["two", "random"],
        3: ["heuristic", "random"],
        4: ["heuristic", "random"],
    }
    assert chosen[2][1] is chosen[3][1] and chosen[3][0] is chosen[4][0]
    with pytest.raises(ValueError, match=r"--fixed names no agent spec in 'two\+ heuristic'"):
        collector.fixed_players("two+ heuristic", "updown", tables)
    with pytest.raises(ValueError, match=r"--fixed two\+random: it plays at none"):
        collector.fixed_players("heuristic two+random", "updown", tables)
    with pytest.raises(ValueError, match=r"no spec plays at 3 players \(--fixed two: trained"):
        collector.fixed_players("two", "updown", tables)
    with pytest.raises(ValueError, match="--fixed two: it plays at none of this run's"):
        collector.fixed_players("heuristic two", "updown", tables)
    with pytest.raises(ValueError, match="--fixed names no agent spec"):
        collector.fixed_players(" ", "updown", tables)


def test_the_probe_beats_a_deliberately_weak_target(monkeypatch):
    from training import exploit

    real = collector.fixed_player
    monkeypatch.setattr(
        collector,
        "fixed_player",
        lambda spec, game, options: first_legal if spec == "first" else real(spec, game, options),
    )
    args = exploit.ProbeArgs(
        game="updown", target="first", cpu_minutes=0, timesteps=50_000, eval_games=400,
        curve_points=2, curve_games=100, num_games=64, progress=False,
    ).check()  # fmt: skip
    result = exploit.probe(args)
    assert result["samples"] >= 50_000 and result["fair"] == 0.5
    low, high = result["win_rate_ci"]
    assert low > 0.6 and result["gain"] > 0.1  # well above its fair share
    assert low <= result["win_rate"] <= high and result["games"] == 400
    curve = result["curve"]
    assert [r["samples"] for r in curve] == sorted(r["samples"] for r in curve)
    assert curve[0]["samples"] == 0 and len(curve) >= 3
    fixed = result["heuristic"]  # the heuristic alone against the same target, same deals
    assert fixed["games"] == 400 and fixed["win_rate"] > 0.6
    assert fixed["gain"] == pytest.approx(fixed["win_rate"] - 0.5)
    assert result["floor_gain"] == max(result["gain"], fixed["gain"])


def test_a_fixed_player_is_measured_against_the_target_as_the_learner_is():
    from agents.catalog import batched_heuristic
    from training.collector import evaluate_batched

    heuristic = batched_heuristic("updown")
    options = {"num_players": 2}
    against_random = evaluate_batched(heuristic, "updown", options, "random", 200, seed=3)
    assert against_random["games"] == 200 and against_random["win_rate"] > 0.9
    first = evaluate_batched(first_legal, "updown", options, heuristic, 200, seed=3)
    assert first["win_rate"] < 0.2  # the first legal move loses to the heuristic


def test_a_shared_win_counts_one_share_so_a_mirror_wins_its_fair_share():
    from agents.catalog import batched_heuristic
    from training.collector import evaluate_batched

    # Up & Down at 4 players shares about one game in five; counted whole, those lifted the
    # heuristic against three copies of itself to 0.29-0.33.
    heuristic = batched_heuristic("updown")
    mirror = evaluate_batched(heuristic, "updown", {"num_players": 4}, heuristic, 800, seed=1)
    assert abs(mirror["win_rate"] - 0.25) < 0.03


def test_the_probe_learner_keeps_its_pinned_settings_when_the_trainer_defaults_move(
    monkeypatch,
):
    import dataclasses

    import kdk_env.spec
    from tablegym.spec import Default
    from training import exploit
    from training.train import Args

    spec = kdk_env.spec.SPEC
    moved = dataclasses.replace(
        spec.training, ent_coef=Default(0.3, "moved"), n_epochs=Default(4, "moved")
    )
    monkeypatch.setattr(kdk_env.spec, "SPEC", dataclasses.replace(spec, training=moved))
    assert (Args(game="kdk").entropy(), Args(game="kdk").epochs()) == (0.3, 4)  # train.py moved
    pinned = exploit.ProbeArgs(game="kdk", target="random").check().train_args()
    assert (pinned.entropy(), pinned.epochs(), pinned.clip()) == (0.01, 2, 0.1)
    assert pinned.warm_start == 500 and pinned.learning_rate == 3e-4


def test_the_probe_learner_can_be_changed_one_setting_at_a_time():
    from training import exploit

    args = exploit.ProbeArgs(
        game="kingup", target="random", learner=["ent_coef=0.02", "anneal=lr,ent", "n_steps=4096"]
    ).check()
    settings = args.learner_settings()
    assert (settings["ent_coef"], settings["anneal"], settings["n_steps"]) == (0.02, "lr,ent", 4096)
    assert settings["clip_range"] == 0.1 and args.train_args().entropy() == 0.02
    no_warm = exploit.ProbeArgs(game="kingup", target="random", warm_start=False)
    assert no_warm.train_args().warm_start == 0
    for item, message in (
        ("foo=1", "'foo' is not one of the learner's settings"),
        ("ent_coef=abc", "ent_coef takes a number, like 0.05"),
        ("n_steps=1.5", "n_steps takes a whole number, like 8192"),
        ("ent_coef", "--learner: expected KEY=VALUE"),
    ):
        with pytest.raises(ValueError, match=message):
            exploit.ProbeArgs(game="kingup", target="random", learner=[item]).check()


def test_probe_cli_writes_its_results_and_curve(tmp_path):
    out = tmp_path / "probe.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "training" / "exploit.py"), "--game", "kingup", "--target",
         "random", "--timesteps", "3000", "--cpu-minutes", "0", "--eval-games", "40",
         "--curve-points", "1", "--curve-games", "20", "--num-games", "16", "--out", str(out),
         "--save-learner", str(tmp_path / "learner.zip")],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    from training.checkpoints import read_meta
    from training.ppo_agent import load_ppo_agent

    meta = read_meta(tmp_path / "learner.zip")  # the learner as it ended, a bot of its own
    assert meta["player_counts"] == [4] and meta["num_timesteps"] >= 3000
    agent = load_ppo_agent(tmp_path / "learner.zip", "kingup", {"num_players": 4})
    assert agent.spec.startswith("ppo:")
    assert "target random: learner wins" in proc.stdout and "gain" in proc.stdout
    assert "the heuristic alone wins" in proc.stdout and "gains at least" in proc.stdout
    result = json.loads(out.read_text())
    assert result["target"] == "random" and result["num_players"] == 4
    assert result["learner"]["ent_coef"] == 0.05 and result["learner"]["n_epochs"] == 2
    assert out.with_suffix(".png").stat().st_size > 0
    lines = out.with_suffix(".csv").read_text().splitlines()
    assert lines[0].startswith("cpu_minutes,samples,win_rate") and len(lines) >= 3


def test_probe_curves_plot_against_samples_too():
    from training.exploit import draw_probes

    rows = [{"cpu_minutes": m, "samples": 2_000_000 * m, "win_rate": 0.5, "ci_low": 0.4,
             "ci_high": 0.6} for m in (1, 2)]  # fmt: skip
    result = {"game": "updown", "num_players": 2, "target": "t", "fair": 0.5, "curve": rows}
    ax = draw_probes([result], x="samples").axes[0]
    assert list(ax.lines[0].get_xdata()) == [2.0, 4.0] and "samples" in ax.get_xlabel()
    assert list(draw_probes([result]).axes[0].lines[0].get_xdata()) == [1, 2]
    with pytest.raises(ValueError, match="x must be one of cpu_minutes, samples"):
        draw_probes([result], x="games")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "--target is required"),
        (["--target", "ismcts:5"], "a fixed player must play in batch"),
        (["--target", "ppo:nowhere.zip"], "ppo agent file not found"),
        (["--target", "random", "--cpu-minutes", "0"], "give the learner a budget"),
        (["--target", "random", "--num-players", "9"], "--num-players must be one of"),
        (["--target", "ppo:updown"], "cannot play kingup"),
        (["--target", "random", "--eval-games", "0"], "--eval-games must be a number >= 1"),
        (["--target", "random", "--save-learner", "l.pt"], "--save-learner must name a .zip"),
        (["--target", "random", "--learner", "foo=1"], "--learner foo=1: 'foo' is not one"),
    ],
)
def test_probe_bad_input_is_one_error_line(argv, message, tmp_path):
    out = tmp_path / "p.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "training" / "exploit.py"), "--game", "kingup", *argv,
         "--out", str(out)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert message in lines[0]
    assert not out.exists()


def test_an_exploiter_that_beats_its_target_joins_the_pool(tmp_path, monkeypatch):
    import training.league as league
    from training.train import Args

    args = Args(game="updown", num_games=16, n_steps=256, batch_size=128, n_epochs=1,
                net_arch="16", exploiter_check=256, exploiter_share=0.5, eval_games=20,
                warm_start=0).check()  # fmt: skip
    tables = args.table_options()
    env = SelfPlayVecEnv("updown", tables, 16, parse_mix("self=1,snapshot=1"), seed=0)
    main = SelfPlayPPO(
        "MlpPolicy", env, n_steps=256, batch_size=128, n_epochs=1, device="cpu",
        rollout_buffer_class=SeatRolloutBuffer, policy_kwargs={"net_arch": [16]},
    )  # fmt: skip
    env.add_snapshot(league.frozen(main.policy), 5)
    (tmp_path / "pool").mkdir()
    lg = league.League(args, tables, tmp_path, heuristic=None)
    lg.start(main, main.policy.state_dict())
    exploiter = lg.exploiters[0]

    class Log:
        def record(self, key, value):
            pass

    outcome = {"win_rate": 0.2}
    monkeypatch.setattr(league, "evaluate_batched", lambda *a, **k: {"games": 200, **outcome})
    main.num_timesteps = 256  # the main agent made 256 samples: 256 are due to the exploiter
    lg.advance(main, env, Log())
    assert exploiter.model.num_timesteps >= 256 and lg.joined == 0
    assert lg.log[-1]["joined"] is False and len(env.snapshots) == 1
    outcome["win_rate"] = 0.9
    main.num_timesteps = 512
    lg.advance(main, env, Log())
    assert lg.joined == 1 and lg.log[-1]["joined"] is True
    roles = list(env.snapshot_role.values())
    assert roles == ["main", "exploiter"]
    assert len(list((tmp_path / "pool").glob("expl_*.pt"))) == 1
    # It restarts from the starting policy, aimed at the newest main agent.
    assert exploiter.samples_on_target == 0 and exploiter.tests == []
    lg.save()
    assert (tmp_path / "exploiter_0.pt").is_file()
    assert json.loads((tmp_path / "league.json").read_text())["joined"] == 1


def test_an_exploiter_learns_at_the_runs_rate_when_the_main_agent_anneals_it():
    # Each learn() call of an exploiter is one rollout: a schedule over the call would be at
    # its end, a learning rate of zero, at every update.
    from training.league import Exploiter
    from training.train import Args, new_model

    args = Args(game="updown", num_games=16, n_steps=256, batch_size=128, n_epochs=1,
                net_arch="16", anneal="lr,ent", warm_start=0, eval_games=0).check()  # fmt: skip
    tables = args.table_options()
    main = new_model(args, SelfPlayVecEnv("updown", tables, 16, parse_mix("self=1"), 0), None)
    exploiter = Exploiter(args, tables, None, main.policy.state_dict(), main.policy, 0)
    before = {k: v.clone() for k, v in exploiter.model.policy.state_dict().items()}
    exploiter.learn(256)
    exploiter.learn(256)
    assert exploiter.model.policy.optimizer.param_groups[0]["lr"] == args.learning_rate
    after = exploiter.model.policy.state_dict()
    assert not torch.equal(before["action_net.weight"], after["action_net.weight"])


def test_an_exploiters_rollouts_leave_nothing_in_the_temporary_directory(tmp_path, monkeypatch):
    # SB3 makes an SB3-<time> folder under tempfile.gettempdir() at every learn() of a model
    # without a logger of its own: thousands of them in a long league run.
    from training.league import Exploiter
    from training.train import Args, new_model

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    args = Args(game="updown", num_games=16, n_steps=128, batch_size=128, n_epochs=1,
                net_arch="16", warm_start=0, eval_games=0).check()  # fmt: skip
    tables = args.table_options()
    main = new_model(args, SelfPlayVecEnv("updown", tables, 16, parse_mix("self=1"), 0), None)
    exploiter = Exploiter(args, tables, None, main.policy.state_dict(), main.policy, 0)
    exploiter.learn(128)
    main.learn(128)
    assert exploiter.model.num_timesteps >= 128 and main.num_timesteps >= 128
    assert [p.name for p in tmp_path.glob("SB3-*")] == []  # (torch keeps one cache folder)


@pytest.mark.parametrize("game", ["kingup", "updown", "kdk"])
def test_a_tiny_league_run_per_game(game, tmp_path):
    run = tmp_path / game
    fast = ["--option", "num_rounds=1", "--option", "max_round_steps=200"] if game == "kdk" else []
    proc = subprocess.run(
        [sys.executable, str(ROOT / "training" / "train.py"), "--game", game, "--out", str(run),
         "--timesteps", "2048", "--num-games", "8", "--n-steps", "256", "--batch-size", "128",
         "--n-epochs", "1", "--snapshot-every", "512", "--eval-every", "1024", "--eval-games",
         "6", "--net-arch", "16", "--warm-start", "4", "--warm-epochs", "1", "--exploiter-check",
         "256", "--exploiter-share", "0.5", "--no-progress", *fast],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    config = json.loads((run / "config.json").read_text())
    assert config["opponent_mix"].startswith("self=") and config["exploiters"] == 1
    tests = json.loads((run / "league.json").read_text())["tests"]
    assert tests and all(t["games"] == 6 for t in tests)  # the exploiter was trained and tested
    assert (run / "exploiter_0.pt").is_file()
    curve = json.loads((run / "curve.json").read_text())
    assert {r["opponent"] for r in curve} == {"random", "heuristic", "pool"}
    summary = json.loads((run / "summary.json").read_text())
    kinds = {part.split("=")[0] for part in config["opponent_mix"].split(",")}
    assert {"self", "snapshot", "heuristic"} <= kinds
    assert all(summary["decisions"][kind] > 0 for kind in kinds)  # every kind of the mix played


def test_a_run_from_init_starts_its_exploiters_from_the_heuristics_imitation(tmp_path):
    # Exploiters start where the probe's learner starts (the heuristic's imitation), not from
    # the bot they hunt; a run from --init makes that imitation for them.
    from training.train import policy_weights

    tiny = [sys.executable, str(ROOT / "training" / "train.py"), "--game", "updown",
            "--timesteps", "512", "--num-games", "8", "--n-steps", "256", "--batch-size", "128",
            "--n-epochs", "1", "--eval-games", "0", "--net-arch", "16", "--warm-start", "0",
            "--exploiter-share", "0.5", "--exploiter-check", "256", "--no-progress"]  # fmt: skip
    first = subprocess.run([*tiny, "--out", str(tmp_path / "a")], capture_output=True,
                           text=True, timeout=300, cwd=ROOT)  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert not (tmp_path / "a" / "exploiter_start.pt").exists()  # no --init: the run's own start
    init = tmp_path / "a" / "checkpoint.zip"
    second = subprocess.run(
        [*tiny, "--out", str(tmp_path / "b"), "--init", str(init), "--warm-start", "20",
         "--warm-epochs", "2"], capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    start = torch.load(tmp_path / "b" / "exploiter_start.pt")
    inherited = policy_weights(init)
    names = [n for n in start if n.startswith("action_net")]
    assert names and not all(torch.equal(start[n], inherited[n]) for n in names)


def test_a_small_concentration_makes_whole_tables_of_one_kind_common():
    mix = parse_mix("heuristic=0.5,random=0.5")
    counts = {}
    for alpha in (0.0, 0.2):
        env = SelfPlayVecEnv(
            "kingup", [{"num_players": 6}], 2000, mix, seed=1, heuristic=first_legal,
            concentration=alpha,
        )  # fmt: skip
        env.reset()
        others = env.kinds[:, :6]
        others = np.where(others == LEARNER, -1, others)
        uniform = [(row[row >= 0] == row[row >= 0][0]).all() for row in others]
        counts[alpha] = np.mean(uniform)
        share = (others == collector.RANDOM).sum() / (others >= 0).sum()
        assert abs(share - 0.5) < 0.05  # the kinds keep their shares on average
    # Five opponents of one kind: 2 * 0.5**5 = 6% of games when each seat is drawn alone.
    assert counts[0.0] < 0.1 and counts[0.2] > 0.5


def test_resume_reloads_the_exploiters_of_the_pool(tmp_path):
    from training.callbacks import load_pool
    from training.league import frozen

    env = SelfPlayVecEnv("updown", [{"num_players": 2}], 4, parse_mix("self=1,snapshot=1"))
    model = SelfPlayPPO(
        "MlpPolicy", env, n_steps=64, batch_size=64, device="cpu",
        rollout_buffer_class=SeatRolloutBuffer, policy_kwargs={"net_arch": [8]},
    )  # fmt: skip
    for name in ("snap_0000000000", "snap_0000000100", "expl_0000000050"):
        torch.save(frozen(model.policy).state_dict(), tmp_path / f"{name}.pt")
    fresh = SelfPlayVecEnv("updown", [{"num_players": 2}], 4, parse_mix("self=1,snapshot=1"))
    load_pool(model, fresh, tmp_path, size=5)
    assert list(fresh.snapshot_role.values()) == ["main", "main", "exploiter"]


def test_a_probe_or_an_exploiter_that_makes_no_samples_says_so(tmp_path, monkeypatch):
    # A learner that makes no samples would measure nothing, and the league would wait for
    # an exploiter's samples forever.
    import training.league as league
    from training import exploit
    from training.train import Args

    monkeypatch.setattr(SelfPlayPPO, "learn", lambda self, *args, **kwargs: self)
    args = exploit.ProbeArgs(
        game="updown", target="random", cpu_minutes=0, timesteps=1000, eval_games=10,
        curve_points=0, num_games=8, warm_start=False, progress=False,
    ).check()  # fmt: skip
    with pytest.raises(RuntimeError, match="the learner made no samples"):
        exploit.probe(args)
    args = Args(game="updown", num_games=16, n_steps=256, batch_size=128, n_epochs=1,
                net_arch="16", warm_start=0).check()  # fmt: skip
    tables = args.table_options()
    env = SelfPlayVecEnv("updown", tables, 16, parse_mix("self=1"), seed=0)
    main = SelfPlayPPO("MlpPolicy", env, n_steps=256, batch_size=128, device="cpu",
                       rollout_buffer_class=SeatRolloutBuffer,
                       policy_kwargs={"net_arch": [16]})  # fmt: skip
    lg = league.League(args, tables, tmp_path, heuristic=None)
    lg.start(main, main.policy.state_dict())
    main.num_timesteps = 4096
    with pytest.raises(RuntimeError, match="exploiter 0 made no samples"):
        lg.advance(main, env, logger=None)
