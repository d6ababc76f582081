"""King Up! rules core: pure functions over an immutable :class:`State`.

No PettingZoo, no printing, no global random state: the only chance in the game, the order of
the favourite deck, is drawn in :func:`initial_state` from the generator passed in, so every
later step is deterministic. Rules are cited by the section names of ``docs/kingup_rules.md``,
which also lists the interpretation choices.

Actions (``NUM_ACTIONS = 67``, the same ids for every agent); build and read them only with
:func:`place_action` / :func:`place_of` and :func:`climb_action` / :func:`climb_of`:

========  =============================================
0..51     place candidate ``c`` on floor ``f`` (1..4): ``place_action(c, f)``
52..64    move candidate ``c`` up one floor: ``climb_action(c)``
65        vote YES
66        vote NO
========  =============================================

Style: ``State`` is an immutable ``typing.NamedTuple`` of ints and tuples, the idiom of all three
games. A step builds the next state with ``state._replace(...)`` (or the constructor), never by
mutation, so a state can be shared, hashed, compared and kept in a search tree; tuple
construction is several times cheaper than a frozen dataclass's ``__init__`` on every step.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

import numpy as np

from tablegym.options import check_choice, check_options

NUM_CANDIDATES = 13
NUM_FLOORS = 6  # floors 0..5; the throne is above floor 5
CAPACITY = 4
MAX_PLAYERS = 6
MAX_ROUND_SCORE = 33
NAMES = (
    "Alighiero", "Beatrice", "Clemente", "Dario", "Erisco", "Fiorello", "Gasparo",
    "Iris", "Leone", "Merlino", "Natale", "Odessa", "Piero",
)  # fmt: skip
FLOOR_NAMES = ("servants", "craftsmen", "merchants", "officers", "dignitaries", "nobles")

# Positions of a candidate besides floors 0..5.
UNPLACED = -1
THRONE = 6
ELIMINATED = 7

# Action ids.
PLACE = 0
CLIMB = 52
YES = 65
NO = 66
NUM_ACTIONS = 67


def place_action(c: int, floor: int) -> int:
    """The id ``4*c + floor - 1`` of "place candidate ``c`` on ``floor`` (1..4)"; arrays too."""
    return PLACE + 4 * c + floor - 1


def place_of(action: int) -> tuple[int, int]:
    """``(candidate, floor)`` of a placement id, the inverse of :func:`place_action`."""
    c, f = divmod(action - PLACE, 4)
    return c, f + 1


def climb_action(c: int) -> int:
    """The id ``52 + c`` of "move candidate ``c`` up one floor"; works on numpy arrays too."""
    return CLIMB + c


def climb_of(action: int) -> int:
    """The candidate of a climbing id, the inverse of :func:`climb_action`."""
    return action - CLIMB


# Pending votes.
NOT_VOTED = -1
VOTED_YES = 0
VOTED_NO = 1

NO_CARDS = {3: 4, 4: 3, 5: 2, 6: 2}
PLACEMENTS = {3: 4, 4: 3, 5: 2, 6: 2}
REWARDS = ("win", "score", "relative")


def _favourite_cards() -> tuple[tuple[int, ...], ...]:
    # "Components": the 13 cyclic shifts of two base blocks form a 2-(13,6,5) design, so
    # every candidate is on 12 cards and every pair shares 5: a balanced stand-in for the
    # unpublished printed cards.
    bases = ((0, 1, 2, 3, 5, 9), (0, 1, 3, 6, 7, 11))
    return tuple(
        tuple(sorted((x + k) % NUM_CANDIDATES for x in base)) for base in bases for k in range(13)
    )


FAVOURITE_CARDS = _favourite_cards()
NUM_CARDS = len(FAVOURITE_CARDS)  # 26


class Phase(IntEnum):
    """What the player to act decides: a placement, a climb, a vote; or nothing any more."""

    PLACE = 0
    CLIMB = 1
    VOTE = 2
    GAME_OVER = 3


@dataclass(frozen=True, slots=True)
class Config:
    """Validated game options (see :func:`make_config`)."""

    num_players: int = 4
    num_rounds: int = 3
    reward: str = "win"


def make_config(
    num_players: int = 4, num_rounds: int = 3, reward: str = "win", **unknown: object
) -> Config:
    """Validated options; unknown names or values raise ValueError naming the allowed ones."""
    check_options(unknown, ("num_players", "num_rounds", "reward"))
    return Config(
        num_players=check_choice("num_players", num_players, (3, 4, 5, 6)),
        num_rounds=check_choice("num_rounds", num_rounds, (1, 3)),
        reward=check_choice("reward", reward, REWARDS),
    )


class State(NamedTuple):
    """Immutable game state; see "Style" in the module docstring."""

    num_players: int
    num_rounds: int
    round: int  # 0-based
    phase: Phase
    to_play: int  # seat to act; -1 once the game is over
    starter: int  # starting player of the current round
    floors: tuple[int, ...]  # per candidate: UNPLACED, 0..5, THRONE or ELIMINATED
    favourites: tuple[int, ...]  # private: favourite card id per seat (this round)
    deck: tuple[int, ...]  # private to nobody: the undealt favourite cards, top first
    no_left: tuple[int, ...]  # NO cards in hand per seat
    placements_left: tuple[int, ...]
    crown: int  # crown holder or -1
    candidate: int  # candidate on the throne being voted on, or -1
    votes: tuple[int, ...]  # private until all voted: NOT_VOTED / VOTED_YES / VOTED_NO
    no_voters: tuple[int, ...]  # per candidate, bitmask of seats that voted NO on it this round
    last_candidate: int  # candidate of the round's last failed election, or -1
    round_scores: tuple[tuple[int, ...], ...]  # one row per finished round
    revealed: tuple[tuple[int, ...], ...]  # public: favourite card per seat, per finished round
    king: int  # king of the last finished round, or -1


# -- setup --------------------------------------------------------------------------------


def initial_state(config: Config, rng: np.random.Generator) -> State:
    """A new game: the favourite deck shuffled once (Setup), round 1 started by seat 0."""
    n = config.num_players
    deck = tuple(int(c) for c in rng.permutation(NUM_CARDS))
    state = State(
        num_players=n,
        num_rounds=config.num_rounds,
        round=0,
        phase=Phase.PLACE,
        to_play=0,
        starter=0,
        floors=(UNPLACED,) * NUM_CANDIDATES,
        favourites=(-1,) * n,
        deck=deck,
        no_left=(0,) * n,
        placements_left=(0,) * n,
        crown=-1,
        candidate=-1,
        votes=(NOT_VOTED,) * n,
        no_voters=(0,) * NUM_CANDIDATES,
        last_candidate=-1,
        round_scores=(),
        revealed=(),
        king=-1,
    )
    return start_round(state, round_idx=0, starter=0)


def start_round(state: State, round_idx: int, starter: int) -> State:
    """A round step 1: new favourites from the deck, NO cards back, the castle emptied."""
    n = state.num_players
    return state._replace(
        round=round_idx,
        phase=Phase.PLACE,
        to_play=starter,
        starter=starter,
        floors=(UNPLACED,) * NUM_CANDIDATES,
        # Cards are not reshuffled between rounds: each round deals the next n from the top.
        favourites=state.deck[:n],
        deck=state.deck[n:],
        no_left=(NO_CARDS[n],) * n,
        placements_left=(PLACEMENTS[n],) * n,
        crown=-1,
        candidate=-1,
        votes=(NOT_VOTED,) * n,
        no_voters=(0,) * NUM_CANDIDATES,
        last_candidate=-1,
    )


# -- legality -----------------------------------------------------------------------------


def climb_room(floors: tuple[int, ...]) -> tuple[bool, ...]:
    """Per floor 0..5, whether a candidate there may move up (Climbing: only into a floor
    with fewer than 4; from floor 5 always, as the throne is empty whenever a climb is asked)."""
    return (*[k < CAPACITY for k in map(floors.count, range(1, NUM_FLOORS))], True)


def can_climb(floors: tuple[int, ...], c: int) -> bool:
    """Whether candidate ``c`` may move up one floor."""
    f = floors[c]
    return 0 <= f < NUM_FLOORS and climb_room(floors)[f]


# The ids per candidate, so that legal_actions builds none by arithmetic: place on 1..4, climb.
_PLACE_IDS = tuple(tuple(place_action(c, f) for f in range(1, 5)) for c in range(NUM_CANDIDATES))
_CLIMB_IDS = tuple(climb_action(c) for c in range(NUM_CANDIDATES))


def legal_actions(state: State) -> tuple[int, ...]:
    """Sorted action ids open to ``state.to_play``; empty once the game is over."""
    phase, floors = state.phase, state.floors
    if phase is Phase.PLACE:
        # Placement: an unplaced candidate onto floor 1..4 with fewer than 4 candidates.
        open_floors = [i for i in range(4) if floors.count(i + 1) < CAPACITY]
        return tuple(
            ids[i] for ids, f in zip(_PLACE_IDS, floors) if f == UNPLACED for i in open_floors
        )
    if phase is Phase.CLIMB:
        room = climb_room(floors)
        return tuple(a for a, f in zip(_CLIMB_IDS, floors) if 0 <= f < NUM_FLOORS and room[f])
    if phase is Phase.VOTE:
        return (YES, NO) if state.no_left[state.to_play] > 0 else (YES,)
    return ()


def is_legal(state: State, action: int) -> bool:
    """Whether ``action`` is in ``legal_actions(state)``, without building that tuple.

    ``apply_action`` checks every step with it; a test ties it to ``legal_actions``.
    """
    phase = state.phase
    if phase is Phase.PLACE and PLACE <= action < CLIMB:
        c, f = place_of(action)
        return state.floors[c] == UNPLACED and state.floors.count(f) < CAPACITY
    if phase is Phase.CLIMB and CLIMB <= action < YES:
        return can_climb(state.floors, climb_of(action))
    if phase is Phase.VOTE:
        return action == YES or (action == NO and state.no_left[state.to_play] > 0)
    return False


def describe_action(action: int) -> str:
    """Plain words for an action id, e.g. ``place Erisco on floor 3``."""
    if PLACE <= action < CLIMB:
        c, f = place_of(action)
        return f"place {NAMES[c]} on floor {f}"
    if CLIMB <= action < YES:
        return f"move {NAMES[climb_of(action)]} up"
    if action == YES:
        return "vote YES"
    if action == NO:
        return "vote NO"
    return f"unknown action {action}"


# -- transitions --------------------------------------------------------------------------


def apply_action(state: State, action: int, rng: np.random.Generator | None = None) -> State:
    """The state after ``state.to_play`` takes ``action``; ValueError if it is illegal.

    ``rng`` is accepted for the common rules interface; King Up draws all chance at setup.
    """
    if not is_legal(state, action):
        legal = legal_actions(state)
        raise ValueError(
            f"illegal action {action} ({describe_action(action)}) for seat {state.to_play} "
            f"in phase {state.phase.name}; legal actions: {list(legal)}"
        )
    if state.phase is Phase.PLACE:
        return apply_place(state, action)
    if state.phase is Phase.CLIMB:
        return apply_climb(state, climb_of(action))
    return apply_vote(state, action == NO)


def _set(values: tuple[int, ...], i: int, v: int) -> tuple[int, ...]:
    return values[:i] + (v,) + values[i + 1 :]


def apply_place(state: State, action: int) -> State:
    """Placement phase: one unplaced candidate onto floor 1..4, then the next player."""
    c, f = place_of(action)
    p, n = state.to_play, state.num_players
    floors = _set(state.floors, c, f)
    left = _set(state.placements_left, p, state.placements_left[p] - 1)
    if any(left):
        return state._replace(floors=floors, placements_left=left, to_play=(p + 1) % n)
    # Every still unplaced candidate goes to floor 0; climbing continues clockwise, which is
    # the starting player again because every seat placed the same number.
    floors = tuple(0 if x == UNPLACED else x for x in floors)
    return state._replace(
        floors=floors, placements_left=left, phase=Phase.CLIMB, to_play=(p + 1) % n
    )


def apply_climb(state: State, c: int) -> State:
    """Climbing phase: move one candidate up; reaching the throne opens an election."""
    p, n = state.to_play, state.num_players
    floors = _set(state.floors, c, state.floors[c] + 1)
    if floors[c] != THRONE:
        return state._replace(floors=floors, to_play=(p + 1) % n)
    # Election: the mover takes the crown; votes are asked from the crown holder clockwise.
    return state._replace(
        floors=floors,
        phase=Phase.VOTE,
        crown=p,
        candidate=c,
        votes=(NOT_VOTED,) * n,
        to_play=p,
    )


def apply_vote(state: State, vote_no: bool) -> State:
    """Record one hidden vote; the last vote reveals all and resolves the election."""
    p, n = state.to_play, state.num_players
    votes = _set(state.votes, p, VOTED_NO if vote_no else VOTED_YES)
    nxt = (p + 1) % n
    if nxt != state.crown:
        return state._replace(votes=votes, to_play=nxt)
    if VOTED_NO not in votes:
        return crown_king(state)
    return eliminate(state, votes)


def eliminate(state: State, votes: tuple[int, ...]) -> State:
    """At least one NO: the candidate leaves the round and each NO voter spends a NO card."""
    c, n = state.candidate, state.num_players
    mask = sum(1 << s for s in range(n) if votes[s] == VOTED_NO)
    return state._replace(
        floors=_set(state.floors, c, ELIMINATED),
        no_left=tuple(k - (v == VOTED_NO) for k, v in zip(state.no_left, votes)),
        no_voters=_set(state.no_voters, c, mask),
        last_candidate=c,
        votes=(NOT_VOTED,) * n,
        candidate=-1,
        phase=Phase.CLIMB,
        to_play=(state.crown + 1) % n,
    )


def crown_king(state: State) -> State:
    """All YES: the candidate is king, the round is scored, and the next round or the end."""
    points = tuple(
        score_card(state.floors, FAVOURITE_CARDS[card], state.round) for card in state.favourites
    )
    # Scoring: "each player reveals their card", so every card of the round becomes public.
    done = state._replace(
        round_scores=state.round_scores + (points,),
        revealed=state.revealed + (state.favourites,),
        king=state.candidate,
        votes=(NOT_VOTED,) * state.num_players,
    )
    if state.round + 1 >= state.num_rounds:
        return done._replace(phase=Phase.GAME_OVER, to_play=-1)
    # The next round is started by the player to the left of the crown holder.
    return start_round(done, state.round + 1, (state.crown + 1) % state.num_players)


# -- scoring ------------------------------------------------------------------------------


def candidate_points(position: int) -> int:
    """Scoring: the king 10, floor f f points, eliminated 0."""
    if position == THRONE:
        return 10
    return position if 0 <= position < NUM_FLOORS else 0


def score_card(floors: tuple[int, ...], card: tuple[int, ...], round_idx: int) -> int:
    """One player's points for a round; in round 3 exactly 0 becomes 33."""
    points = sum(candidate_points(floors[c]) for c in card)
    if round_idx == 2 and points == 0:
        return MAX_ROUND_SCORE
    return points


def totals(state: State) -> tuple[int, ...]:
    """Points per seat over the finished rounds."""
    return tuple(sum(col) for col in zip(*state.round_scores)) or (0,) * state.num_players


def in_castle(state: State, seat: int) -> int:
    """Tie-break count: the seat's favourites of the last round not eliminated (king counts)."""
    return sum(state.floors[c] != ELIMINATED for c in FAVOURITE_CARDS[state.favourites[seat]])


def winners(state: State) -> tuple[int, ...]:
    """Seats that win: highest total, then most favourites still in the castle; else shared."""
    if state.phase is not Phase.GAME_OVER:
        return ()
    tot = totals(state)
    best = max(tot)
    tied = [s for s in range(state.num_players) if tot[s] == best]
    if len(tied) == 1:
        return tuple(tied)
    kept = {s: in_castle(state, s) for s in tied}
    most = max(kept.values())
    return tuple(s for s in tied if kept[s] == most)


def scores(state: State) -> tuple[float, ...]:
    """Game score per seat (total points so far)."""
    return tuple(float(t) for t in totals(state))


def is_terminal(state: State) -> bool:
    """True once the last round has been scored."""
    return state.phase is Phase.GAME_OVER


def rewards(before: State, after: State, config: Config) -> tuple[float, ...]:
    """Per-seat reward for the transition ``before -> after`` under ``config.reward``."""
    n = after.num_players
    if config.reward == "win":
        if after.phase is not Phase.GAME_OVER:
            return (0.0,) * n
        won = set(winners(after))
        return tuple(1.0 if s in won else -1.0 for s in range(n))
    if len(after.round_scores) == len(before.round_scores):
        return (0.0,) * n
    points = after.round_scores[-1]
    if config.reward == "score":
        return tuple(p / MAX_ROUND_SCORE for p in points)
    total = sum(points)
    return tuple((p - (total - p) / (n - 1)) / MAX_ROUND_SCORE for p in points)


# -- determinisation ----------------------------------------------------------------------


def sample_state(state: State, seat: int, rng: np.random.Generator) -> State:
    """A full state that ``seat`` cannot tell from ``state``: unseen cards and votes redrawn.

    What ``seat`` has seen, with perfect recall ("Hidden information"): everything public,
    its own favourite card and its own pending vote. Cards of earlier rounds are known too:
    at each round's scoring "each player reveals their card"; ``State.revealed`` keeps them
    (the observation shows them), and they are in neither ``favourites`` nor ``deck``, so they
    are never redrawn. Unseen, and redrawn here:
    the other players' current cards and the undealt deck, dealt again uniformly from the pool
    of exactly those cards (so no card is ever duplicated or one already revealed); the
    others' cast but unrevealed votes of an open election, redrawn uniformly among their
    legal votes (NO only while holding a NO card; ``no_left`` drops only at the reveal).
    Nothing is inferred from how the others played: that is the searcher's business. Once
    the game is over every card has been revealed, so the state is returned unchanged.
    """
    if state.phase is Phase.GAME_OVER:
        return state
    others = [s for s in range(state.num_players) if s != seat]
    pool = [state.favourites[s] for s in others] + list(state.deck)
    drawn = [pool[i] for i in rng.permutation(len(pool))]
    favourites = list(state.favourites)
    for s, card in zip(others, drawn):
        favourites[s] = card
    votes = list(state.votes)
    for s in others:
        if votes[s] != NOT_VOTED:
            # A vote is redrawn only where a NO was possible; with no NO card it is YES.
            votes[s] = VOTED_NO if state.no_left[s] > 0 and rng.random() < 0.5 else VOTED_YES
    return state._replace(
        favourites=tuple(favourites), deck=tuple(drawn[len(others) :]), votes=tuple(votes)
    )
