"""Batched tournaments (``evaluate(..., batch=SLOTS)``) and the agents' batched forms."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agents.base import PolicyAgent
from tablegym.games import env_class
from tablegym.vector import VectorGame, random_actions
from training.evaluate import (
    BatchedTournament,
    IllegalActionError,
    batch_policies,
    batch_policy,
    evaluate,
    make_jobs,
)
from training.ppo_agent import load_ppo_agent

ROOT = Path(__file__).resolve().parent.parent
UPDOWN_MODEL = ROOT / "notebooks" / "models" / "updown.zip"  # a 2-player Up & Down policy


def random_batch(obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return random_actions(mask, rng)


class NoBar:
    def update(self) -> None:
        pass


def positions(game: str, rows: int, **options) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks of the seats to act in ``rows`` randomly played games."""
    vg = VectorGame(game, rows, seed=3, **options)
    obs, mask, _ = vg.reset()
    rng = np.random.default_rng(0)
    for _ in range(7):
        obs, mask, *_ = vg.step(random_actions(mask, rng))
    return obs, mask


def test_ppo_act_batch_is_act_row_by_row():
    agent = load_ppo_agent(UPDOWN_MODEL, "updown", {"num_players": 2})
    obs, mask = positions("updown", 200, num_players=2)
    batch = agent.batch_logits(obs, mask)
    rows = np.stack([agent.logits(o, m) for o, m in zip(obs, mask)])
    np.testing.assert_allclose(batch, rows, rtol=1e-4, atol=1e-5)  # torch against numpy
    chosen = agent.act_batch(obs, mask)
    masked = np.where(mask, rows, -np.inf)
    top2 = np.sort(masked, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 1e-3  # rows where float rounding cannot swap the best
    assert clear.mean() > 0.9
    singly = np.array([agent.act(o, m) for o, m in zip(obs, mask)])
    np.testing.assert_array_equal(chosen[clear], singly[clear])


def test_sampling_act_batch_follows_the_policy_under_the_mask():
    agent = load_ppo_agent(UPDOWN_MODEL, "updown", {"num_players": 2}, deterministic=False)
    obs, mask = positions("updown", 1, num_players=2)
    obs, mask = np.repeat(obs, 4000, axis=0), np.repeat(mask, 4000, axis=0)
    drawn = agent.act_batch(obs, mask, np.random.default_rng(1))
    assert mask[0, drawn].all()
    counts = np.bincount(drawn, minlength=mask.shape[1]) / len(drawn)
    np.testing.assert_allclose(counts, agent.probabilities(obs[0], mask[0]), atol=0.03)


def test_each_game_starts_from_the_deal_of_raw_env():
    jobs = make_jobs("kdk", ["heuristic", "random", "random"], 6, 3, {"num_players": 3})
    policies = batch_policies({"heuristic": None, "random": None}, "kdk")
    tour = BatchedTournament(jobs, policies, slots=4, seed=3)
    tour.obs, tour.mask, tour.seat = tour.vg.reset()
    env = env_class("kdk")(num_players=3)
    for i in range(4):
        tour.start(i)
        env.reset(seed=jobs[i].env_seed)
        assert tour.vg.get_state(i) == env.game_state
        seen = env.observe(env.agent_selection)
        np.testing.assert_array_equal(tour.obs[i], seen["observation"])
        np.testing.assert_array_equal(tour.mask[i], seen["action_mask"].astype(bool))
        assert tour.who[i].tolist() == [["heuristic", "random"].index(s) for s in jobs[i].specs]


def test_batched_tournament_plays_every_job_once_and_agrees_with_raw_env():
    lineup = ["heuristic", "random"]
    raw = evaluate("updown", lineup, games=300, seed=2)
    batched = evaluate("updown", lineup, games=300, seed=2, batch=64)
    assert batched["run"]["batch"] == 64
    same = ("index", "seed", "specs")
    assert [{k: r[k] for k in same} for r in batched["results"]] == [
        {k: r[k] for k in same} for r in raw["results"]
    ]
    for rec in batched["results"]:
        assert len(rec["winners"]) >= 1 and sum(rec["scores"]) <= 15  # 15 tricks at 2 players
        best = max(rec["scores"])
        assert rec["winners"] == [s for s, x in enumerate(rec["scores"]) if x == best]
    # The heuristic beats a random player almost always, on either path.
    for result in (raw, batched):
        heuristic = result["agents"][0]
        assert heuristic["win_rate_ci"][0] > 0.85
    lo, hi = raw["agents"][0]["win_rate_ci"]
    assert lo - 0.05 <= batched["agents"][0]["win_rate"] <= hi + 0.05
    again = evaluate("updown", lineup, games=300, seed=2, batch=64)
    assert again["results"] == batched["results"]


def test_moves_and_decisions_are_counted_per_seat():
    lineup, options = ["heuristic", "random", "random"], {"num_players": 3, "num_rounds": 1}
    jobs = make_jobs("kingup", lineup, 6, 1, options)
    policies = batch_policies({"heuristic": None, "random": None}, "kingup")
    records = BatchedTournament(jobs, policies, slots=4, seed=1).run(bar=NoBar())
    assert sorted(r["index"] for r in records) == list(range(6))
    for rec in records:
        assert sum(rec["moves"]) == rec["steps"] > 0
        assert all(0 <= d <= m for d, m in zip(rec["decisions"], rec["moves"]))
        assert sum(rec["decisions"]) > 0
        assert all(t >= d >= 0 for t, d in zip(rec["think"], rec["decision_think"]))
    result = evaluate("kingup", lineup, 6, seed=1, batch=4, options=options)
    assert all(agent["sec_per_decision"] > 0 for agent in result["agents"])


def test_an_illegal_batched_move_names_the_spec_game_and_step():
    jobs = make_jobs("updown", ["cheat", "random"], 2, seed=0, options={"num_players": 2})

    def cheat(obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return np.argmin(mask, axis=1)  # a forbidden action in every row

    tour = BatchedTournament(jobs, {"cheat": cheat, "random": random_batch}, 2, 0)
    with pytest.raises(IllegalActionError, match=r"agent 'cheat' \(seat \d\) played game"):
        tour.run(bar=NoBar())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch": -1}, "batch must be an integer >= 0"),
        ({"batch": 8, "keep_actions": True}, "batched games keep no action logs"),
    ],
)
def test_bad_batch_requests_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        evaluate("updown", ["heuristic", "random"], 2, seed=0, **kwargs)


def test_agents_that_cannot_act_in_batch_are_named():
    with pytest.raises(ValueError, match="'ismcts:5' does not"):
        evaluate("updown", ["ismcts:5", "random"], 2, seed=0, batch=8)


def test_cli_batch_errors_are_one_line(tmp_path):
    evaluate_py = [sys.executable, str(ROOT / "training" / "evaluate.py"), "--no-progress"]
    for extra, message in (
        (["--batch", "-3"], "error: --batch must be an integer >= 0; got -3"),
        (["--batch", "8", "--record", str(tmp_path / "g")], "error: --batch: batched games"),
        (["--batch", "8", "--agents", "ismcts:5", "random"], "error: --batch: batched play"),
    ):
        args = ["--game", "updown", "--agents", "heuristic", "random", *extra]
        proc = subprocess.run([*evaluate_py, *args], capture_output=True, text=True, timeout=120)
        assert proc.returncode in (1, 2)
        assert proc.stderr.startswith(message) and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert not list(tmp_path.iterdir())


def test_without_chance_after_the_deal_batched_games_are_raw_env_games():
    """One round of King Up! draws nothing after the deal: deterministic agents then play the
    very games of raw_env (torch and numpy logits agree where the best action is clear)."""
    lineup = [f"ppo:{ROOT / 'notebooks' / 'models' / 'kingup.zip'}"] * 4
    options = {"num_rounds": 1}
    raw = evaluate("kingup", lineup, games=24, seed=3, options=options)
    batched = evaluate("kingup", lineup, games=24, seed=3, options=options, batch=8)
    assert batched["results"] == raw["results"]


class LinearAgent(PolicyAgent):
    """A policy agent with only the per-row ``logits`` (as RLlib's): act_batch falls back to it."""

    def __init__(self, weights: np.ndarray, deterministic: bool = True):
        super().__init__("linear", deterministic, seed=0)
        self.weights = weights

    def logits(self, observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        return observation @ self.weights


def test_policy_agents_without_a_batched_network_act_row_by_row():
    obs, mask = positions("kingup", 50, num_players=4)
    agent = LinearAgent(np.random.default_rng(2).normal(size=(obs.shape[1], mask.shape[1])))
    chosen = agent.act_batch(obs, mask)
    np.testing.assert_array_equal(chosen, [agent.act(o, m) for o, m in zip(obs, mask)])
    assert batch_policy("linear", agent, "kingup") == agent.act_batch
    assert batch_policy("ismcts:5", object(), "kingup") is None
