"""ISMCTS guided by a policy/value network: the prior steers the search, the network's values
stand in for rollouts, network options fail in one line."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import SCORE_BOT

from agents.base import GameView
from agents.ismcts import ISMCTSAgent
from tablegym.games import GAMES, observation_of, rules_of
from training.bots import builtin_bot_path
from training.registry import make_agent


def decision(game: str, seed: int = 3):
    """A dealt game at the first decision with at least three legal moves (4 players;
    KdK one round): view, observation and mask of the seat to play."""
    rules = rules_of(game)
    options = {"num_players": 4, **({"num_rounds": 1} if game == "kdk" else {})}
    config = rules.make_config(**options)
    rng = np.random.default_rng(seed)
    state = rules.initial_state(config, rng)
    while len(rules.legal_actions(state)) < 3:
        state = rules.apply_action(state, rules.legal_actions(state)[0], rng)
    seat = state.to_play
    mask = np.zeros(rules.NUM_ACTIONS, dtype=np.int8)
    mask[list(rules.legal_actions(state))] = 1
    obs = observation_of(game).encode(state, seat)
    return GameView(rules, config, state, seat), obs, mask


class StubNetwork:
    """Prior mass ``weight`` on ``favourite`` where it is legal, the rest spread evenly; a
    constant ``value``. Counts the rows it was asked about."""

    def __init__(self, favourite: int = -1, value: float = 0.5, weight: float = 0.98):
        self.favourite, self.value, self.weight = favourite, value, weight
        self.rows, self.calls = 0, 0

    def __call__(self, obs: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.rows += len(obs)
        self.calls += 1
        priors = masks / masks.sum(axis=1, keepdims=True)
        if 0 <= self.favourite < masks.shape[1]:
            has = masks[:, self.favourite]
            priors[has] *= (1 - self.weight) / np.maximum(1e-9, 1 - priors[has, self.favourite])[
                :, None
            ]
            priors[has, self.favourite] = self.weight
        return priors, np.full(len(obs), self.value)


@pytest.mark.parametrize("game", list(GAMES))
@pytest.mark.parametrize("backend", ["numba", "rules"])
def test_a_strong_prior_chooses_the_move_under_a_small_budget(game, backend):
    # With values that tell the moves apart not at all, 24 simulations follow the prior:
    # whichever legal move the network favours is the one played.
    view, obs, mask = decision(game)
    legal = np.flatnonzero(mask)
    for favourite in (int(legal[0]), int(legal[-1])):
        net = StubNetwork(favourite)
        agent = make_agent(
            "ismcts:24", game, seed=0, network=net, root="tree", backend=backend,
            encode=observation_of(game).encode,
        )  # fmt: skip
        assert agent.act(obs, mask, view) == favourite
        assert agent.last_visits[favourite] > 0.5


def test_without_a_network_the_search_does_not_pick_the_stubs_moves_alone():
    # The control: the same position and budget without a network visits moves by rollouts,
    # so the favourite of the test above is not forced (else that test could not fail).
    view, obs, mask = decision("kingup")
    legal = np.flatnonzero(mask)
    agent = make_agent("ismcts:24", "kingup", seed=0)
    agent.act(obs, mask, view)
    assert max(agent.last_visits[legal[0]], agent.last_visits[legal[-1]]) < 0.5


@pytest.mark.parametrize("game", list(GAMES))
def test_network_values_stand_in_for_rollouts(game):
    # value_weight=1: every leaf not at the end of the game is worth the network's value to
    # the searcher and an equal share of the rest to each other seat; 0: rollouts only.
    view, obs, mask = decision(game)
    seat, n = view.seat, 4
    net = StubNetwork(value=0.123)
    full = make_agent("ismcts:40", game, seed=1, network=net, root="tree", value_weight=1.0)
    root = full.guided_search(view, obs, mask)
    assert root.visits == 40
    assert root.total[seat] / root.visits == pytest.approx(0.123)
    others = [root.total[s] / root.visits for s in range(n) if s != seat]
    assert others == pytest.approx([(1 - 0.123) / (n - 1)] * (n - 1))
    rolled = make_agent("ismcts:40", game, seed=1, network=net, root="tree", value_weight=0.0)
    root = rolled.guided_search(view, obs, mask)
    assert root.total[seat] / root.visits != pytest.approx(0.123)


def test_network_calls_are_batched_across_determinisations():
    view, obs, mask = decision("kingup")
    net = StubNetwork()
    agent = make_agent("ismcts:64,batch=16", "kingup", seed=0, network=net)
    agent.act(obs, mask, view)
    assert net.calls == 1 + 64 // 16  # the root's call, then one per batch
    assert net.rows == 1 + 64  # one row per simulation (none reached the end of the game)


class ScriptedPosition:
    """A position whose seats to play and legal moves follow a script; records the moves."""

    def __init__(self, script: list[tuple[int, list[int]]]):
        self.script, self.played, self.observed = script, [], []

    def over(self) -> bool:
        return not self.script

    def to_play(self) -> int:
        return self.script[0][0]

    def legal(self) -> list[int]:
        return self.script[0][1]

    def observe(self, seat: int, out: np.ndarray) -> None:
        self.observed.append(seat)
        out[:] = seat

    def play(self, action: int) -> None:
        self.played.append(action)
        self.script.pop(0)


def test_network_opponents_play_the_networks_favourite_from_their_own_view():
    # opponents="network": each other seat's move is the network's most likely legal move,
    # asked with that seat's observation, for the whole wave in one call a round; the
    # searcher's own turn ends the advance (a root without a prior is a leaf at once).
    from agents.ismcts import Node

    net = StubNetwork(favourite=5)
    agent = make_agent("ismcts:8", "kingup", network=net, opponents="network")
    first = ScriptedPosition([(1, [2, 5, 7]), (2, [0, 1, 3]), (0, [4, 5])])
    second = ScriptedPosition([(3, [5, 6]), (0, [1])])
    root = Node(4)
    paths = agent.descend_wave(root, [first, second], seat=0, obs_size=3, num_actions=8)
    assert first.played == [5, 0]  # the favourite where legal, else the first of equal priors
    assert first.observed == [1, 2] and second.observed == [3]
    assert second.played == [5]
    assert paths == [[root], [root]] and root.visits == 2
    assert (net.calls, net.rows) == (2, 3)  # both positions in the first call


@pytest.mark.parametrize("backend", ["numba", "rules"])
def test_network_opponents_ask_the_network_for_the_other_seats(backend):
    # The same search with opponents="policy" asks the network once per simulation (and once
    # at the root); with "network", also for every move of the other three seats in the tree.
    view, obs, mask = decision("kingup")
    rows = {}
    for opponents in ("policy", "network"):
        net = StubNetwork()
        agent = make_agent("ismcts:32", "kingup", seed=0, network=net, opponents=opponents,
                           backend=backend, encode=observation_of("kingup").encode)  # fmt: skip
        agent.act(obs, mask, view)
        rows[opponents] = net.rows
    assert rows["policy"] == 1 + 32
    assert rows["network"] >= 1 + 32 + 3 * 32  # every simulation passes the others' turn


def test_visit_targets_are_a_distribution_over_legal_moves():
    view, obs, mask = decision("updown")
    agent = make_agent("ismcts:30", "updown", seed=0, network=StubNetwork())
    agent.act(obs, mask, view)
    visits = agent.last_visits
    assert visits.shape == (mask.size,) and visits.sum() == pytest.approx(1.0)
    assert np.all(visits[mask == 0] == 0) and np.all(visits >= 0)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"value_weight": 0.5}, "value_weight needs a network"),
        ({"network": StubNetwork()}, "a network on the rules backend needs encode"),
        ({"network": StubNetwork(), "value_weight": 1.5}, "value_weight must lie in"),
        ({"network": StubNetwork(), "value_weight": -1}, "value_weight must be a number"),
        ({"network": "ppo:kingup"}, "network must be callable"),
        ({"network": StubNetwork(), "opponents": "tree"}, "opponents must be 'policy'"),
        ({"opponents": "network"}, "opponents='network' needs a network"),
        ({"network": StubNetwork(), "puct": -1}, "puct must be a number >= 0"),
        ({"network": StubNetwork(), "batch": 0}, "batch must be an integer >= 1"),
    ],
)
def test_bad_network_options_give_one_line_errors(options, message):
    with pytest.raises(ValueError, match=message) as err:
        ISMCTSAgent(**options)
    assert "\n" not in str(err.value)


def test_a_race_cannot_take_a_network():
    with pytest.raises(ValueError, match="root must be 'tree'"):
        make_agent("ismcts:8,root=race", "kdk", network=StubNetwork())


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("ismcts:8,prior=heuristic", "prior must be ppo:GAME or ppo:PATH"),
        ("ismcts:8,prior=ppo:kdk", "cannot play kingup"),
        ("ismcts:8,prior=ppo:/nowhere.zip", "not found"),
    ],
)
def test_bad_priors_give_one_line_errors(spec, message):
    with pytest.raises((ValueError, FileNotFoundError), match=message) as err:
        make_agent(spec, "kingup")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("game", list(GAMES))
def test_the_builtin_bot_guides_the_search(game):
    agent = make_agent("ismcts:16,prior=ppo:" + game, game, seed=0)
    assert agent.root == "tree" and agent.network is not None  # KdK's race gives way
    view, obs, mask = decision(game)
    assert mask[agent.act(obs, mask, view)]
    priors, values = agent.network(obs[None], mask[None].astype(bool))
    assert priors.sum() == pytest.approx(1.0) and np.all(priors[0][mask == 0] == 0)
    assert 0.0 <= values[0] <= 1.0


def test_a_value_head_of_another_reward_guides_by_its_prior_alone():
    # k5 learned KdK's "score" return: its value is no win estimate.
    prior = f"prior=ppo:{SCORE_BOT}"
    agent = make_agent(f"ismcts:8,{prior}", "kdk", seed=0)
    assert agent.network.value_reward == "score" and agent.value_weight == 0.0
    with pytest.raises(ValueError, match="value_weight must be 0") as err:
        make_agent(f"ismcts:8,{prior},value_weight=0.5", "kdk")
    assert "\n" not in str(err.value)
    assert make_agent("ismcts:8,prior=ppo:kingup", "kingup").value_weight == 1.0


def test_an_exit_round_makes_the_value_a_win_estimate():
    from training.ppo_agent import value_reward

    assert value_reward({"options": {"reward": "score"}}) == "score"
    assert value_reward({"options": {"reward": "score"}, "exit_round": 1}) == "win"
    assert value_reward({"options": {}}) == "win"


def test_the_search_network_is_the_policys_own_forward_pass():
    # numpy priors and values equal torch's masked distribution and value head.
    import torch

    from training.checkpoints import load_model
    from training.ppo_agent import SearchNetwork

    policy = load_model(builtin_bot_path("kingup"), "kingup", {"num_players": 4}).policy
    rows = [decision("kingup", seed) for seed in range(4)]
    obs = np.stack([r[1] for r in rows]).astype(np.float32)
    masks = np.stack([r[2] for r in rows]).astype(bool)
    priors, values = SearchNetwork(policy)(obs, masks)
    with torch.no_grad():
        want = policy.get_distribution(torch.as_tensor(obs), action_masks=masks)
        want_values = policy.predict_values(torch.as_tensor(obs)).numpy()[:, 0]
    np.testing.assert_allclose(priors, want.distribution.probs.numpy(), atol=1e-5)
    np.testing.assert_allclose(values, np.clip((want_values + 1) / 2, 0, 1), atol=1e-5)
