"""Information-set Monte Carlo tree search (single-observer ISMCTS), generic over the games.

The search never looks at what its seat cannot see. Each simulation starts from a fresh
*determinisation*: ``rules.sample_state(view.state, view.seat, rng)`` replaces every hidden
part of the true state (others' cards, the deck, unrevealed choices) by a sample consistent
with the seat's observations. One tree, keyed by action sequences from the root, is shared by
all determinisations (Cowling, Powley & Whitehouse 2012, "Information Set Monte Carlo Tree
Search"), so the visit counts at the root are aggregated over all of them by construction.

One simulation:

1. **Select** down the tree with UCT (``exploration`` c), using only the children whose
   action is legal in this determinisation and, in the exploration term, how often each child
   was *available* (ISMCTS availability counts) instead of the parent's visits. Each node
   stores the summed result vector of all seats and the seat to move picks by its own entry
   (max^n), so the same search serves 2 to 6 players.
2. **Expand** one untried legal action (``expansion="all"``), or only a move the rollout
   policy proposes there (``"policy"``: progressive widening guided by the policy).
3. **Roll out** with the rollout policy (without one, uniformly random legal moves; the
   rules' own ``rng`` draws any chance). With ``cutoff="end"`` the rollout plays to the end of the
   game; with ``cutoff="score"`` it stops as soon as any seat's ``rules.scores`` changes,
   i.e. once the current round (King Up, KdK) or trick (Up & Down) is scored: play through
   later rounds adds mostly noise and time. ``"auto"`` (the default) is ``"score"``; the
   registry's ``ismcts`` takes the game's ``search.cutoff`` (``<game>_env/spec.py``): Up &
   Down's is ``"end"``, as a one-trick horizon makes the search spend its best cards at once.
4. **Back up** the result vector: at the end of the game each of the ``k`` winners gets
   ``1/k`` and the others 0; at a cutoff, half of that computed on the current scores plus
   half the seat's margin over the others' mean score, scaled by the score range to [0, 1].

Opponents. With ``opponents="tree"`` every seat's moves are tree nodes. In a single-observer
tree the others' nodes are shared by all determinisations, so there an opponent chooses as if
it did not know its own cards, which is badly wrong in a game like King Up! where a vote
follows the voter's card. Every game therefore supplies a *rollout policy*
(``search.policy`` of its spec, beside its game's heuristic), a fast function
``policy(state, random.Random) -> action`` over the full (determinised) state that reads only
what the seat to play could see; with ``opponents="policy"`` (the default when a policy is
given) the others play by it also inside the tree, which then branches on this seat's
decisions only.

Options (``ISMCTSAgent(...)``, or ``ismcts:N,KEY=VALUE`` through ``training.registry``):

=================  =========================================================================
``simulations``    simulations per decision (int >= 1; in a race, rollouts); the registry's
                   bare ``ismcts`` uses the game's ``search.simulations``
``time_limit``     None, or CPU seconds of this process per decision (> 0): the search stops
                   after the simulation that crosses it. CPU time, not wall time, so that a
                   busy shared machine does not shrink the search; a limit makes the result
                   depend on the machine's speed, so it is off by default
``exploration``    the UCT constant c (>= 0; results are in [0, 1]), default 0.7
``cutoff``         ``"auto"`` (default), ``"score"`` or ``"end"``, see 3. above
``opponents``      ``"auto"`` (default: ``"policy"`` with a rollout policy, else ``"tree"``),
                   ``"tree"``, ``"policy"`` or ``"network"`` (with a network: see "With a
                   network")
``expansion``      ``"all"`` (default) or ``"policy"``, see 2. above (``"all"`` without a
                   policy)
``bias``           progressive bias toward the rollout policy's move at this seat's tree
                   nodes (>= 0): it is expanded first and its UCT value gets
                   ``bias / (visits + 1)``, so a few noisy rollouts do not talk the search
                   out of a sound move. None (default): 0; the registry's ``ismcts`` takes
                   the game's ``search.bias``
``rollout_policy`` the full-state policy, or None for uniform random rollouts (the registry's
                   ``rollout=random``)
``root``           ``"auto"`` (default: ``"tree"``; the registry's ``ismcts`` takes the
                   game's ``search.root``), ``"tree"`` or ``"race"`` (needs a rollout
                   policy), see below; KdK's spec names ``"race"``
``race_z``         the race's threshold in standard errors of the paired mean (>= 0),
                   default 1.5
``backend``        where determinisations are played: ``"auto"`` (default: ``"numba"`` when
                   ``twin`` is given, else ``"rules"``), ``"numba"`` or ``"rules"``, see below
``twin``           None, or the module of the rollout policy's compiled twin (the game's
                   ``search.twin``, which the registry's ``ismcts`` passes)
``network``        None, or a policy/value network: ``network(obs, mask) -> (priors,
                   values)`` over rows (float32 ``(k, obs_size)``, bool ``(k, A)``) giving
                   each row's prior over its legal actions (``(k, A)``, zero off the mask)
                   and the observing seat's value in [0, 1] (``(k,)``); see "With a
                   network" below. The registry's ``prior=ppo:GAME`` or ``prior=ppo:PATH``
                   builds it from a MaskablePPO checkpoint
``puct``           with a network: the PUCT constant (>= 0), default 1.0
``value_weight``   with a network: the share of the network's value in a leaf's value, the
                   rest a rollout's (0..1), default 1.0 (no rollout). A network whose
                   ``value_reward`` is not ``"win"`` (a value head fitted to KdK's score
                   return) takes 0 by default and refuses more
``batch``          with a network: determinisations descended before one network call
                   (int >= 1), default 8
``encode``         with a network on the ``"rules"`` backend: ``encode(state, seat) -> obs``
                   (the game's ``observation.encode``, which the registry passes)
``seed``           seeds the determinisations, the rules' chance and the rollouts
=================  =========================================================================

Bad options raise a one-line ``ValueError`` naming the option and what it accepts.

Root race (``root="race"``). A policy whose rollout values differ by less than their noise
(KdK: a dozen moves, a few hundred simulations) gains nothing from a tree that compares
moves on different determinisations. The race compares them on the same ones, as a rollout
algorithm does (Tesauro & Galperin 1996, "On-line policy improvement using Monte-Carlo
search"): each round samples one determinisation and plays every move still in the race
from it, then on by the rollout policy for every seat, with the same random numbers. After
``RACE_MIN`` rounds a move leaves the race when its paired mean lies more than ``race_z``
standard errors below the leader's; the policy's own move never leaves. The search ends at
the budget or when only the policy's move is left, and plays the leader if it beats the
policy's move by more than ``race_z`` standard errors, else the policy's move: the policy
improved by one step of lookahead, departing from it only on evidence.

Backends. ``"rules"`` plays every determinisation on the readable rules core, with the Python
rollout policy. ``"numba"`` loads each determinisation into one row of the game's batched
engine (``engine.from_state``) and plays it there: the other seats' moves inside the tree, the
rollouts and the race's rounds run in numba with the policy's compiled twin
(``agents/engine_rollout.py``), which makes the same moves from the same random numbers; only
the tree itself stays in Python. Its generator is the engine's, so the same seed gives other
(equally distributed) games than ``"rules"`` does.

With a network (AlphaZero's PUCT at information-set nodes; Anthony et al. 2017, "Thinking
fast and slow with deep learning and tree search"). The tree holds the searcher's decisions
only (``opponents="policy"``; the others play by the rollout policy, which knows their cards)
and the root is a tree. Each node keeps the network's prior from the first determinisation
that reached it (the root's from the real observation); selection takes the legal action with
the largest ``Q + puct * P * sqrt(N) / (1 + n)``, with ``P`` renormalised over the actions
legal in this determinisation and an unvisited action valued at its parent's mean. A leaf is
the position after a new action and the other seats' replies: its value for the searcher is
``value_weight`` times the network's plus the rest times a rollout's, and every other seat gets
an equal share of the remainder (the win shares sum to one). ``batch`` determinisations are
descended at a time, each visit counted on the way down (a virtual loss that spreads them over
the tree), and their leaves are evaluated in one network call. With ``opponents="network"``
the other seats inside the tree play the network's most likely move from their own view of the
determinisation (each seat's observation; the wave's questions in one call a round) instead
of the rollout policy's: a search that models its opponents as itself, as self-play search
does, where the rollout policy makes the teacher's moves replies to the heuristic
(``docs/results.md``, "Expert iteration").
``expansion`` and ``bias`` do not apply: the prior is what widens the tree and what biases it.

With the tree, the move is the most visited legal root action (ties: the best mean result
for the seat).
Needs from the rules module: ``NUM_ACTIONS``, ``legal_actions``, ``apply_action``, ``is_terminal``,
``winners``, ``scores``, ``sample_state`` and ``state.to_play``.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from agents.base import Agent, GameView, legal_ids
from agents.engine_rollout import EngineRollouts
from tablegym.options import check_choice, check_int

CUTOFFS = ("score", "end")
ROOTS = ("tree", "race")
# Race: paired comparisons begin after this many determinisations (a standard error from
# fewer samples is too rough to drop a move on).
RACE_MIN = 4
OPPONENTS = ("auto", "tree", "policy", "network")
BACKENDS = ("auto", "numba", "rules")
EXPANSIONS = ("all", "policy")


# network(observations, masks) -> (priors over actions, the observing seat's values in [0, 1])
Network = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


class Node:
    """A tree node: children by action, visits, availability and summed results per seat;
    with a network, its prior over actions (None until a leaf evaluation gives one)."""

    __slots__ = ("children", "visits", "avail", "total", "prior")

    def __init__(self, num_players: int):
        self.children: dict[int, Node] = {}
        self.visits = 0
        self.avail = 0
        self.total = [0.0] * num_players
        self.prior: list[float] | None = None


class ISMCTSAgent(Agent):
    """Single-observer ISMCTS over the rules core; ``spec`` is ``ismcts:<simulations>``."""

    def __init__(
        self,
        simulations: int = 400,
        seed: int | None = None,
        exploration: float = 0.7,
        cutoff: str = "auto",
        rollout_policy: Callable[[Any, random.Random], int] | None = None,
        opponents: str = "auto",
        expansion: str = "all",
        time_limit: float | None = None,
        bias: float | None = None,
        root: str = "auto",
        race_z: float = 1.5,
        backend: str = "auto",
        twin: str | None = None,
        network: Network | None = None,
        puct: float = 1.0,
        value_weight: float | None = None,
        batch: int = 8,
        encode: Callable[[Any, int], np.ndarray] | None = None,
    ):
        check_int("simulations", simulations, 1)
        self.network = network
        self.puct = _check_number("puct", puct, 0.0)
        self.batch = check_int("batch", batch, 1)
        self.encode = encode
        self.value_weight = self.check_network(network, value_weight, root, opponents)
        check_choice("root", root, ("auto", *ROOTS))
        if root == "auto":
            root = "tree"
        self.race_z = _check_number("race_z", race_z, 0.0)
        if root == "race" and rollout_policy is None:
            raise ValueError("root='race' needs a rollout policy to race against; got None")
        self.root = root
        check_choice("backend", backend, BACKENDS)
        if twin is not None and rollout_policy is None:
            raise ValueError(f"twin {twin!r} needs the rollout policy it is the twin of; got None")
        if backend == "auto":
            backend = "numba" if twin else "rules"
        elif backend == "numba" and not twin:
            raise ValueError(
                "backend='numba' needs the module of the rollout policy's compiled twin "
                "(twin=...); got none"
            )
        self.backend = backend
        if network is not None and backend == "rules" and encode is None:
            raise ValueError("a network on the rules backend needs encode(state, seat); got None")
        self.twin = twin
        self.engines: dict[Any, EngineRollouts] = {}  # per table, made at first use
        self.engine_rngs = np.ones(1, dtype=np.uint64)  # the numba backend's generator
        _check_number("exploration", exploration, 0.0)
        if time_limit is not None:
            _check_number("time_limit", time_limit, 0.0, strict=True)
        if rollout_policy is not None and not callable(rollout_policy):
            raise ValueError(f"rollout_policy must be callable or None; got {rollout_policy!r}")
        check_choice("cutoff", cutoff, ("auto", *CUTOFFS))
        if cutoff == "auto":
            cutoff = "score"
        check_choice("opponents", opponents, OPPONENTS)
        check_choice("expansion", expansion, EXPANSIONS)
        if bias is None:
            bias = 0.0
        self.bias = _check_number("bias", bias, 0.0)
        if self.bias and rollout_policy is None:
            raise ValueError("bias needs a rollout policy to favour; got rollout_policy=None")
        if opponents == "auto":
            # A network's tree holds the searcher's nodes only: without a rollout policy the
            # others then play uniformly at random.
            no_policy = rollout_policy is None and network is None
            opponents = "tree" if no_policy else "policy"
        self.opponents = opponents
        # Without a policy there is nothing to propose moves: every legal move is expanded.
        self.expansion = expansion if rollout_policy is not None else "all"
        self.simulations = simulations
        self.time_limit = time_limit
        self.exploration = exploration
        self.cutoff = cutoff
        self.rollout_policy = rollout_policy
        self.spec = f"ismcts:{simulations}"
        self.last_simulations = 0  # taken by the latest decision (rollouts in a race)
        # The latest tree search's root visits over actions, as a distribution (None: a race).
        self.last_visits: np.ndarray | None = None
        self.rng = np.random.default_rng(seed)
        # Python's generator picks rollout moves: numpy's per-call overhead would dominate.
        self.py_rng = random.Random(int(self.rng.integers(2**63)))

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, view: GameView | None = None
    ) -> int:
        """The search's move; ``last_simulations`` then holds the simulations it took."""
        self.last_simulations = 0
        legal = legal_ids(action_mask)
        if legal.size == 1:
            return int(legal[0])
        if view is None:
            raise ValueError("ISMCTSAgent needs a GameView (rules, config, state, seat)")
        if self.root == "race":
            self.last_visits = None
            return self.race(view, legal.tolist())
        if self.network is None:
            root = self.search(view)
        else:
            root = self.guided_search(view, observation, action_mask)
        self.last_simulations = root.visits
        self.last_visits = visit_distribution(root, legal, np.asarray(action_mask).size)
        return best_action(root, legal.tolist(), view.seat)

    def check_network(
        self, network: Network | None, value_weight: float | None, root: str, opponents: str
    ) -> float:
        """The value weight; ValueError for a network option that cannot apply."""
        if network is None:
            if value_weight is not None:
                raise ValueError("value_weight needs a network (prior=...); got none")
            if opponents == "network":
                raise ValueError("opponents='network' needs a network (prior=...); got none")
            return 0.0
        if not callable(network):
            raise ValueError(f"network must be callable or None; got {network!r}")
        if root == "race":
            raise ValueError("a network guides the tree: root must be 'tree' or 'auto'; got 'race'")
        if opponents == "tree":
            raise ValueError(
                "a network guides the searcher's own nodes: opponents must be 'policy', "
                "'network' or 'auto'; got 'tree'"
            )
        # A value head fitted to another reward (KdK's "score" return) is no
        # estimate of a win: such a network guides by its prior alone, with rollout values.
        reward = getattr(network, "value_reward", "win")
        default = 1.0 if reward == "win" else 0.0
        weight = default if value_weight is None else _check_number("value_weight", value_weight, 0)
        if weight > 1:
            raise ValueError(f"value_weight must lie in [0, 1]; got {value_weight!r}")
        if weight > 0 and reward != "win":
            raise ValueError(
                f"the network's value head estimates the {reward!r} reward, not a win: "
                f"value_weight must be 0 (its prior with rollout values); got {value_weight!r}"
            )
        return weight

    def search(self, view: GameView) -> Node:
        """Run the simulations and return the root of the shared tree."""
        rules = view.rules
        n = len(rules.scores(view.state))
        root = Node(n)
        # The limit is on this process's CPU time: on a shared machine, wall time would
        # shrink the search with the load. It makes the result depend on the machine's speed.
        deadline = None if self.time_limit is None else time.process_time() + self.time_limit
        sample, seat, rng = rules.sample_state, view.seat, self.rng
        engine = self.engine_for(view)
        for _ in range(self.simulations):
            state = sample(view.state, seat, rng)
            if engine is None:
                pos: StatePosition | RowPosition = StatePosition(self, rules, state)
            else:
                pos = RowPosition(engine, engine.row(state), self.engine_rngs)
            self.simulate(root, pos, seat)
            if deadline is not None and time.process_time() > deadline:
                break
        return root

    def guided_search(
        self, view: GameView, observation: np.ndarray, action_mask: np.ndarray
    ) -> Node:
        """PUCT with the network's priors and values (see "With a network"): ``batch``
        determinisations descend, then one network call evaluates their leaves."""
        rules, seat = view.rules, view.seat
        root = Node(len(rules.scores(view.state)))
        obs = np.asarray(observation, dtype=np.float32)[None]
        root.prior = self.network(obs, np.asarray(action_mask, dtype=bool)[None])[0][0].tolist()
        deadline = None if self.time_limit is None else time.process_time() + self.time_limit
        engine = self.engine_for(view)
        done = 0
        while done < self.simulations:
            positions = []
            for _ in range(min(self.batch, self.simulations - done)):
                state = rules.sample_state(view.state, seat, self.rng)
                if engine is None:
                    positions.append(StatePosition(self, rules, state))
                else:
                    positions.append(RowPosition(engine, engine.row(state), self.engine_rngs))
            paths = self.descend_wave(root, positions, seat, obs.shape[1], len(action_mask))
            wave = list(zip(paths, positions))
            self.evaluate(wave, seat, obs.shape[1], len(action_mask))
            done += len(wave)
            if deadline is not None and time.process_time() > deadline:
                break
        return root

    def descend_wave(
        self, root: Node, positions: list[Any], seat: int, obs_size: int, num_actions: int
    ) -> list[list[Node]]:
        """Each position's path down the tree (:meth:`descend`), the descents run side by
        side so that the other seats' moves asked of the network (``opponents="network"``)
        are answered for the whole wave in one call per round."""
        descents = [self.descend(root, pos, seat) for pos in positions]
        paths: list[list[Node] | None] = [None] * len(descents)
        asks = {k: self.step(d, None, paths, k) for k, d in enumerate(descents)}
        while asks := {k: ask for k, ask in asks.items() if ask is not None}:
            obs = np.empty((len(asks), obs_size), dtype=np.float32)
            masks = np.zeros((len(asks), num_actions), dtype=bool)
            for j, (pos, p, legal) in enumerate(asks.values()):
                pos.observe(p, obs[j : j + 1])
                masks[j, legal] = True
            priors = self.network(obs, masks)[0]
            moves = [max(ask[2], key=row.__getitem__) for ask, row in zip(asks.values(), priors)]
            asks = {k: self.step(descents[k], m, paths, k) for k, m in zip(asks, moves)}
        return paths  # type: ignore[return-value]

    @staticmethod
    def step(descent: Any, move: int | None, paths: list, k: int) -> Any:
        """Resume ``descent`` with ``move``: its next question, or None once it has its path
        (stored in ``paths[k]``)."""
        try:
            return descent.send(move)
        except StopIteration as done:
            paths[k] = done.value
            return None

    def descend(self, root: Node, pos: StatePosition | RowPosition, seat: int) -> Any:
        """The path of one simulation down to a leaf, each node's visit counted on the way
        (a virtual loss until :meth:`evaluate` adds the result); ``pos`` ends at the leaf. A
        generator: it yields ``(pos, seat to play, legal moves)`` for each other seat's move
        the network must choose (``opponents="network"``) and returns the path."""
        node, path = root, [root]
        root.visits += 1
        while True:
            yield from self.advance(pos, seat)
            if pos.over() or node.prior is None:  # the end, or a leaf awaiting its prior
                return path
            a = self.puct_choice(node, pos.legal(), seat)
            child = node.children.get(a)
            fresh = child is None
            if fresh:
                child = node.children[a] = Node(len(root.total))
            child.visits += 1
            path.append(child)
            pos.play(a)
            if fresh:
                yield from self.advance(pos, seat)
                return path
            node = child

    def advance(self, pos: StatePosition | RowPosition, seat: int) -> Any:
        """The other seats' moves until ``seat`` is to play or the game ends: the rollout
        policy's, or with ``opponents="network"`` the network's most likely move from each
        seat's own observation, asked by yielding ``(pos, seat to play, legal moves)``."""
        if self.opponents != "network":
            pos.advance(seat)
            return
        while not pos.over() and (p := pos.to_play()) != seat:
            pos.play((yield pos, p, pos.legal()))

    def puct_choice(self, node: Node, legal: list[int], seat: int) -> int:
        """The legal action of largest ``Q + puct * P * sqrt(N) / (1 + n)``."""
        prior = node.prior
        total = sum(prior[a] for a in legal)
        scale = self.puct * math.sqrt(node.visits) / (total if total > 0 else 1.0)
        # An unvisited action is valued at its parent's mean (first-play urgency).
        fpu = node.total[seat] / node.visits if node.visits else 0.5
        best, best_u = legal[0], -math.inf
        for a in legal:
            child = node.children.get(a)
            p = prior[a] if total > 0 else 1.0
            if child is None or child.visits == 0:
                u = fpu + scale * p
            else:
                u = child.total[seat] / child.visits + scale * p / (1 + child.visits)
            if u > best_u:
                best, best_u = a, u
        return best

    def evaluate(
        self, wave: list[tuple[list[Node], Any]], seat: int, obs_size: int, num_actions: int
    ) -> None:
        """Value the wave's leaves (one network call for those not over), give each leaf
        node its prior, and add every path's result."""
        live = [k for k, (_, pos) in enumerate(wave) if not pos.over()]
        values = {}
        if live:
            obs = np.empty((len(live), obs_size), dtype=np.float32)
            masks = np.zeros((len(live), num_actions), dtype=bool)
            for j, k in enumerate(live):
                pos = wave[k][1]
                pos.observe(seat, obs[j : j + 1])
                masks[j, pos.legal()] = True
            priors, net_values = self.network(obs, masks)
            for j, k in enumerate(live):
                leaf = wave[k][0][-1]
                if leaf.prior is None:
                    leaf.prior = priors[j].tolist()
                values[k] = float(net_values[j])
        w = self.value_weight
        for k, (path, pos) in enumerate(wave):
            n = len(path[0].total)
            if k in values:
                v = values[k]
                result = [(1.0 - v) / (n - 1)] * n
                result[seat] = v
                if w < 1.0:
                    rolled = pos.value()
                    result = [w * x + (1.0 - w) * y for x, y in zip(result, rolled)]
            else:
                result = pos.value()  # the game is over: its outcome
            for nd in path:
                tot = nd.total
                for i in range(n):
                    tot[i] += result[i]

    def engine_for(self, view: GameView) -> EngineRollouts | None:
        """The compiled rollouts for this table with ``backend="numba"``, else None."""
        if self.backend != "numba":
            return None
        engine = self.engines.get(view.config)
        if engine is None:
            if not self.engines:  # drawn at first use: the rules backend's draws stay as they were
                self.engine_rngs[0] = self.rng.integers(1, 2**63)
            score = self.cutoff == "score"
            engine = EngineRollouts(self.twin, view.config, view.rules.NUM_ACTIONS, score)
            self.engines[view.config] = engine
        return engine

    def race(self, view: GameView, legal: list[int]) -> int:
        """The policy's move, unless paired rollouts show another legal move to be better.

        Every round samples one determinisation and plays each move still in the race from
        it, then on by the rollout policy with the same random numbers, so the moves differ
        only by themselves. A move whose paired mean is below the leader's by more than
        ``race_z`` standard errors leaves the race; the policy's own move never does. The
        answer is the leader if it beats the policy's move by ``race_z`` standard errors.
        """
        rules, seat = view.rules, view.seat
        hint = self.rollout_policy(view.state, self.py_rng)
        values: dict[int, list[float]] = {a: [] for a in legal}
        deadline = None if self.time_limit is None else time.process_time() + self.time_limit
        engine = self.engine_for(view)
        done = 0
        while done < self.simulations and len(values) > 1:
            state = rules.sample_state(view.state, seat, self.rng)
            seed = int(self.rng.integers(2**63))
            moves = list(values)
            if engine is None:
                row = self.race_round(rules, state, moves, seed, deadline, seat)
                if row is None:
                    break  # the time ran out within the round
            else:
                row = engine.race(engine.row(state), moves, seed)[:, seat].tolist()
            done += len(row)
            self.last_simulations = done
            for a, v in zip(moves, row):
                values[a].append(v)
            if len(values[hint]) >= RACE_MIN:
                values = self.survivors(values, hint)
            if deadline is not None and time.process_time() > deadline:
                break
        leader = max(values, key=lambda a: _mean(values[a]) if values[a] else -1.0)
        if leader != hint and _paired_z(values[leader], values[hint]) > self.race_z:
            return leader
        return hint

    def race_round(
        self,
        rules: ModuleType,
        state: Any,
        moves: list[int],
        seed: int,
        deadline: float | None,
        seat: int,
    ) -> list[float] | None:
        """``seat``'s value of each move played from ``state`` and then on by the policy, all
        with the same random numbers from ``seed``; None if the deadline passes first."""
        row = []
        for a in moves:
            self.py_rng.seed(seed)
            rng = np.random.default_rng(seed)
            row.append(self.rollout(rules, rules.apply_action(state, a, rng), rng)[seat])
            if deadline is not None and time.process_time() > deadline:
                return None
        return row

    def survivors(self, values: dict[int, list[float]], hint: int) -> dict[int, list[float]]:
        """The moves not clearly worse than the leader (paired), and the policy's move."""
        leader = max(values, key=lambda a: _mean(values[a]))
        top = values[leader]
        return {
            a: v
            for a, v in values.items()
            if a in (leader, hint) or _paired_z(top, v) <= self.race_z
        }

    def simulate(self, root: Node, pos: StatePosition | RowPosition, seat: int) -> None:
        """One select-expand-rollout-backup pass through ``pos``, a determinisation."""
        node, path = root, [root]
        c, n = self.exploration, len(root.total)
        tree_all = self.opponents == "tree"
        bias = self.bias
        while True:
            if not tree_all:
                pos.advance(seat)  # the other seats play by the policy, which knows their cards
            if pos.over():
                break
            p = pos.to_play()
            children = node.children
            untried = []
            best, best_ucb = None, -1.0
            hint = pos.hint() if bias else -1
            for a in pos.legal():
                child = children.get(a)
                if child is None:
                    untried.append(a)
                    continue
                child.avail += 1
                # UCT with availability counts (ISMCTS), the mover's own result entry.
                u = child.total[p] / child.visits + c * math.sqrt(
                    math.log(child.avail) / child.visits
                )
                if a == hint:
                    u += bias / (child.visits + 1)  # progressive bias toward the policy
                if u > best_ucb:
                    best, best_ucb = a, u
            a = hint if hint in untried else self.expand_choice(pos, untried)
            if a is not None:
                node = children[a] = Node(n)
                node.avail = 1
                path.append(node)
                pos.play(a)
                break
            node = children[best]
            path.append(node)
            pos.play(best)
        result = pos.value()
        for nd in path:
            nd.visits += 1
            tot = nd.total
            for i in range(n):
                tot[i] += result[i]

    def rollout(
        self, rules: ModuleType, state: Any, rng: np.random.Generator | None = None
    ) -> list[float]:
        """Play on by the rollout policy to the end, or to the first change of scores under
        ``cutoff="score"``; ``rng`` draws the chance (default: the search's own)."""
        apply, is_terminal, scores = rules.apply_action, rules.is_terminal, rules.scores
        act = self.default_action
        rng = self.rng if rng is None else rng
        if self.cutoff == "score":
            start = scores(state)
            while not is_terminal(state):
                state = apply(state, act(rules, state), rng)
                now = scores(state)
                if now != start and not is_terminal(state):
                    return cutoff_value(now)
        else:
            while not is_terminal(state):
                state = apply(state, act(rules, state), rng)
        return terminal_value(rules.winners(state), len(rules.scores(state)))

    def expand_choice(self, pos: StatePosition | RowPosition, untried: list[int]) -> int | None:
        """The move to add to the tree here, or None to select among the tried ones.

        ``expansion="all"``: any untried move, until none is left. ``"policy"``: only a move
        the rollout policy proposes now (progressive widening guided by the policy).
        """
        if not untried:
            return None
        if self.expansion == "policy":
            proposal = pos.hint()
            return proposal if proposal in untried else None
        return untried[int(self.py_rng.random() * len(untried))]

    def default_action(self, rules: ModuleType, state: Any) -> int:
        """The rollout move: the game's rollout policy if given, else uniformly random."""
        if self.rollout_policy is not None:
            return self.rollout_policy(state, self.py_rng)
        legal = rules.legal_actions(state)
        return legal[int(self.py_rng.random() * len(legal))]


class StatePosition:
    """A determinisation as a readable ``rules.State``, played by the rules' own functions
    (the ``"rules"`` backend)."""

    __slots__ = ("agent", "rules", "state")

    def __init__(self, agent: ISMCTSAgent, rules: ModuleType, state: Any) -> None:
        self.agent, self.rules, self.state = agent, rules, state

    def over(self) -> bool:
        return self.rules.is_terminal(self.state)

    def to_play(self) -> int:
        return self.state.to_play

    def legal(self) -> list[int]:
        return self.rules.legal_actions(self.state)

    def play(self, action: int) -> None:
        self.state = self.rules.apply_action(self.state, action, self.agent.rng)

    def hint(self) -> int:
        """The rollout policy's move here."""
        return self.agent.rollout_policy(self.state, self.agent.py_rng)

    def advance(self, seat: int) -> None:
        """The other seats' moves by the rollout policy, until ``seat`` is to play or the end."""
        rules, agent, state = self.rules, self.agent, self.state
        while not rules.is_terminal(state) and state.to_play != seat:
            state = rules.apply_action(state, agent.default_action(rules, state), agent.rng)
        self.state = state

    def value(self) -> list[float]:
        """Every seat's value of a rollout from here."""
        return self.agent.rollout(self.rules, self.state)

    def observe(self, seat: int, out: np.ndarray) -> None:
        """What ``seat`` sees here (the network's input) into ``out``, shape (1, obs_size)."""
        out[0] = self.agent.encode(self.state, seat)


class RowPosition:
    """A determinisation as one row of the game's engine, played by the compiled twin of the
    rollout policy (the ``"numba"`` backend, ``agents/engine_rollout.py``)."""

    __slots__ = ("engine", "row", "rngs")

    def __init__(self, engine: EngineRollouts, row: np.ndarray, rngs: np.ndarray) -> None:
        self.engine, self.row, self.rngs = engine, row, rngs

    def over(self) -> bool:
        return self.engine.module.is_over(self.row)

    def to_play(self) -> int:
        return self.engine.module.to_play(self.row)

    def legal(self) -> list[int]:
        return self.engine.legal(self.row)

    def play(self, action: int) -> None:
        self.engine.module.apply(self.row, self.engine.consts, action, self.rngs)

    def hint(self) -> int:
        """The rollout policy's move here."""
        return self.engine.module.policy(self.row, self.engine.consts, self.rngs)

    def advance(self, seat: int) -> None:
        """The other seats' moves by the rollout policy, until ``seat`` is to play or the end."""
        self.engine.advance(self.row, self.rngs, seat)

    def value(self) -> list[float]:
        """Every seat's value of a rollout from here."""
        return self.engine.value(self.row, self.rngs)

    def observe(self, seat: int, out: np.ndarray) -> None:
        """What ``seat`` sees here (the network's input) into ``out``, shape (1, obs_size)."""
        self.engine.observe(self.row, seat, out)


def _check_number(name: str, value: Any, low: float, strict: bool = False) -> float:
    """``value`` if it is a real number above ``low`` (``strict``) or at least ``low``."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < low or (strict and value == low):
        bound = f"> {low}" if strict else f">= {low}"
        raise ValueError(f"{name} must be a number {bound}; got {value!r}")
    return float(value)


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _paired_z(xs: list[float], ys: list[float]) -> float:
    """How many standard errors the mean of ``xs - ys`` (paired) lies above zero."""
    d = [x - y for x, y in zip(xs, ys)]
    k = len(d)
    if k < 2:
        return 0.0
    m = sum(d) / k
    var = sum((x - m) ** 2 for x in d) / (k - 1)
    if var == 0.0:
        return math.inf if m > 0 else (-math.inf if m < 0 else 0.0)
    return m / math.sqrt(var / k)


def best_action(root: Node, legal: list[int], seat: int) -> int:
    """Most visited legal root action; ties go to the better mean result for ``seat``."""

    def key(a: int) -> tuple[int, float]:
        ch = root.children.get(a)
        return (0, 0.0) if ch is None else (ch.visits, ch.total[seat] / ch.visits)

    return int(max(legal, key=key))


def visit_distribution(root: Node, legal: np.ndarray, num_actions: int) -> np.ndarray:
    """The root's visits over actions as a distribution (float32): zero off ``legal``; uniform
    over ``legal`` if none was visited."""
    out = np.zeros(num_actions, dtype=np.float32)
    for a in legal.tolist():
        child = root.children.get(a)
        out[a] = 0 if child is None else child.visits
    total = out.sum()
    if total == 0:
        out[legal] = 1.0
        total = float(legal.size)
    return out / total


def terminal_value(winners: tuple[int, ...], n: int) -> list[float]:
    """1/k for each of the k winners, 0 for the others."""
    share = 1.0 / len(winners) if winners else 0.0
    return [share if s in winners else 0.0 for s in range(n)]


def cutoff_value(scores: tuple[float, ...]) -> list[float]:
    """Half a win share by the current scores, half the margin over the others' mean in [0, 1]."""
    n = len(scores)
    best, spread = max(scores), max(scores) - min(scores)
    leaders = [s for s in range(n) if scores[s] == best]
    wins = terminal_value(tuple(leaders), n)
    total = sum(scores)
    out = []
    for s in range(n):
        margin = 0.0
        if spread > 0:
            margin = (scores[s] - (total - scores[s]) / (n - 1)) / spread
        out.append(0.5 * wins[s] + 0.25 * (1.0 + max(-1.0, min(1.0, margin))))
    return out
