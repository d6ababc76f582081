"""Up & Down rules core: pure functions over an immutable :class:`State`.

No PettingZoo, no printing, no global random state: chance (the deal, the dice, the throw of
the U&D card) comes from the generator passed in. Each round's deal, dice and throw are drawn
when the round starts; only ROLL draws mid-round. Rules are cited by the section names of
``docs/updown_rules.md``.

Cards are ids ``suit * 11 + (value - 2)`` with suits in the cyclic order clubs, spades,
hearts, diamonds and values 2..12 (11 jack, 12 queen). Hands and played cards are bitmasks of
card ids.

Style: :class:`State` is an immutable ``typing.NamedTuple`` of ints and tuples, the idiom of
all three games: a step builds the next state with ``state._replace(...)`` (the cheapest
immutable record to build on every step; equality, hashing, copying and pickling come free).
Action ids that pack a number are made and read by one pair each: ``play_action(card)`` /
``played_card(action)`` and ``rotate_action(suit)`` / ``rotated_suit(action)``.

Actions (``NUM_ACTIONS = 50``, the same ids for every agent):

========  ===============================================================
0         FLIP the U&D card (UP <-> DOWN)
1..4      ROTATE so that suit ``id - 1`` faces the leader
5         ROLL the dice for a new trump value
6..49     play card ``id - 6`` (``6 + suit * 11 + (value - 2)``)
========  ===============================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

import numpy as np

from tablegym.options import check_choice, check_int, check_options

NUM_SUITS = 4
NUM_VALUES = 11  # 2..12
NUM_CARDS = NUM_SUITS * NUM_VALUES  # 44
MIN_VALUE = 2
SUIT_NAMES = ("clubs", "spades", "hearts", "diamonds")
CLUBS = 0
MAX_PLAYERS = 4
MAX_HAND = 15

# Action ids.
FLIP = 0
ROTATE = 1  # ROTATE + suit
ROLL = 5
PLAY = 6  # PLAY + card id
NUM_ACTIONS = PLAY + NUM_CARDS  # 50

# Sides of the U&D card.
UP = 0
DOWN = 1

# Pending choices and results of a trick besides a winning seat.
NO_CARD = -1
POT = -1  # no winner: the trick went into the pot
LOST = -2  # no winner in the last trick of a round: the pot is lost
NO_TRICK = -3  # no trick resolved yet

# "Components": the direction each seat faces, and "Setup of a round": the deal.
DIRECTIONS = {2: (0, 2), 3: (0, 1, 2), 4: (0, 1, 2, 3)}
HAND_SIZE = {2: 15, 3: 14, 4: 11}
# "Setup": the card is thrown so that some seat faces clubs; clubs faces direction -r.
THROW_ORIENTATIONS = {
    n: tuple(r for r in range(NUM_SUITS) if (-r) % NUM_SUITS in dirs)
    for n, dirs in DIRECTIONS.items()
}
REWARDS = ("win", "tricks")
# Public habits of each seat, counted over the game ("Observation"): the rule changes it made
# as leader, and the cards it revealed by what they were under the rules of their trick.
CHANGE_KINDS = ("flip", "rotate", "roll")
CARD_KINDS = ("trump", "own", "middle", "edge")  # edge: a 2 or a queen of another suit
Counts = tuple[tuple[int, ...], ...]  # per seat, per kind


def play_action(card: int) -> int:
    """The action id that plays card id ``card``."""
    return PLAY + card


def played_card(action: int) -> int:
    """The card id a PLAY action plays (the inverse of :func:`play_action`)."""
    return action - PLAY


def rotate_action(suit: int) -> int:
    """The action id that rotates ``suit`` to the leader."""
    return ROTATE + suit


def rotated_suit(action: int) -> int:
    """The suit a ROTATE action turns to the leader (the inverse of :func:`rotate_action`)."""
    return action - ROTATE


def _change_actions(own: int) -> tuple[int, ...]:
    # "A trick" 1: rotating to the leader's current suit would leave the rules unchanged.
    return (FLIP, *(rotate_action(s) for s in range(NUM_SUITS) if s != own), ROLL)


CHANGE_ACTIONS = tuple(_change_actions(own) for own in range(NUM_SUITS))
# Card ids of each 11-bit suit chunk of a hand mask (and their PLAY actions), so listing a
# hand is 4 table lookups.
_SUIT_CARDS = tuple(
    tuple(
        tuple(s * NUM_VALUES + b for b in range(NUM_VALUES) if m >> b & 1)
        for m in range(1 << NUM_VALUES)
    )
    for s in range(NUM_SUITS)
)
_SUIT_PLAYS = tuple(tuple(tuple(map(play_action, cs)) for cs in t) for t in _SUIT_CARDS)
_SUIT_MASK = (1 << NUM_VALUES) - 1


class Phase(IntEnum):
    CHANGE = 0  # the leader changes the rules
    CHOOSE = 1  # every player chooses a card, one at a time from the leader
    GAME_OVER = 2


@dataclass(frozen=True, slots=True)
class Config:
    num_players: int = 4
    num_rounds: int = 1
    reward: str = "win"


def make_config(
    num_players: object = 4, num_rounds: object = 1, reward: object = "win", **unknown: object
) -> Config:
    """Validated options; unknown names or values raise ValueError naming the allowed ones."""
    check_options(unknown, ("num_players", "num_rounds", "reward"))
    return Config(
        num_players=check_int("num_players", num_players, 2, MAX_PLAYERS),
        num_rounds=check_int("num_rounds", num_rounds, 1),
        reward=check_choice("reward", reward, REWARDS),
    )


class State(NamedTuple):
    num_players: int
    num_rounds: int
    round: int  # 0-based
    phase: Phase
    to_play: int  # seat to act; -1 once the game is over
    leader: int  # the trick leader ("Stich-Chef")
    side: int  # UP or DOWN
    orientation: int  # 0..3: the suit facing direction d is (d + orientation) % 4
    trump: int  # trump value 2..12
    hands: tuple[int, ...]  # private: bitmask of card ids per seat
    aside: int  # never seen: bitmask of the set-aside cards
    pending: tuple[int, ...]  # private until all have chosen: card id per seat or NO_CARD
    played: tuple[int, ...]  # public: per seat, bitmask of cards revealed this round
    last_trick: tuple[int, ...]  # public: card per seat of the last resolved trick
    last_result: int  # winner seat of that trick, POT, LOST or NO_TRICK
    pot: int  # tricks in the pot
    tricks: tuple[int, ...]  # tricks won per seat over all rounds
    lost: int  # tricks lost over all rounds (pots of a last trick without winner)
    changes: Counts  # public: per seat, rule changes made as leader, by CHANGE_KINDS
    kinds: Counts  # public: per seat, revealed cards by CARD_KINDS


# -- cards and seats -------------------------------------------------------------------------


def card_id(suit: int, value: int) -> int:
    """Card id of ``value`` (2..12) of ``suit`` (0 clubs .. 3 diamonds)."""
    return suit * NUM_VALUES + value - MIN_VALUE


def card_suit(card: int) -> int:
    """Suit index of a card id."""
    return card // NUM_VALUES


def card_value(card: int) -> int:
    """Value 2..12 of a card id."""
    return card % NUM_VALUES + MIN_VALUE


def change_kind(action: int) -> int:
    """Index in ``CHANGE_KINDS`` of a rule change: FLIP, any ROTATE, ROLL."""
    return 0 if action == FLIP else 2 if action == ROLL else 1


def card_kind(card: int, trump: int, own: int) -> int:
    """Index in ``CARD_KINDS`` of ``card`` played by the owner of suit ``own`` under trump
    value ``trump``: a trump, else of the player's own suit, else a middle value (3 to jack),
    else an edge value (2 or queen)."""
    value = card_value(card)
    if value == trump:
        return 0
    if card_suit(card) == own:
        return 1
    return 3 if value in (MIN_VALUE, MIN_VALUE + NUM_VALUES - 1) else 2


def _count(counts: Counts, seat: int, kind: int) -> Counts:
    row = counts[seat]
    return _set(counts, seat, _set(row, kind, row[kind] + 1))


def cards_of(mask: int) -> tuple[int, ...]:
    """Card ids in a bitmask, ascending."""
    return (
        _SUIT_CARDS[0][mask & _SUIT_MASK]
        + _SUIT_CARDS[1][mask >> 11 & _SUIT_MASK]
        + _SUIT_CARDS[2][mask >> 22 & _SUIT_MASK]
        + _SUIT_CARDS[3][mask >> 33 & _SUIT_MASK]
    )


def play_actions(mask: int) -> tuple[int, ...]:
    """PLAY action ids of the cards in a hand bitmask, ascending."""
    return (
        _SUIT_PLAYS[0][mask & _SUIT_MASK]
        + _SUIT_PLAYS[1][mask >> 11 & _SUIT_MASK]
        + _SUIT_PLAYS[2][mask >> 22 & _SUIT_MASK]
        + _SUIT_PLAYS[3][mask >> 33 & _SUIT_MASK]
    )


def seat_suit(num_players: int, orientation: int, seat: int) -> int:
    """A seat's own suit: the suit facing its direction ("Components")."""
    return (DIRECTIONS[num_players][seat] + orientation) % NUM_SUITS


def own_suits(state: State) -> tuple[int, ...]:
    """Every seat's own suit under the current orientation."""
    return tuple((d + state.orientation) % NUM_SUITS for d in DIRECTIONS[state.num_players])


def clubs_seat(num_players: int, orientation: int) -> int:
    """The seat facing clubs, or -1 if clubs faces an empty direction."""
    direction = -orientation % NUM_SUITS
    dirs = DIRECTIONS[num_players]
    return dirs.index(direction) if direction in dirs else -1


# -- setup ---------------------------------------------------------------------------------


def roll_dice(rng: np.random.Generator) -> int:
    """The sum of two six-sided dice."""
    a, b = rng.integers(1, 7, size=2)
    return int(a + b)


def initial_state(config: Config, rng: np.random.Generator) -> State:
    """A new game: round 1 set up (deal, dice, throw) from ``rng``."""
    n = config.num_players
    empty = State(
        num_players=n,
        num_rounds=config.num_rounds,
        round=0,
        phase=Phase.CHANGE,
        to_play=0,
        leader=0,
        side=UP,
        orientation=0,
        trump=MIN_VALUE,
        hands=(0,) * n,
        aside=0,
        pending=(NO_CARD,) * n,
        played=(0,) * n,
        last_trick=(NO_CARD,) * n,
        last_result=NO_TRICK,
        pot=0,
        tricks=(0,) * n,
        lost=0,
        changes=((0,) * len(CHANGE_KINDS),) * n,
        kinds=((0,) * len(CARD_KINDS),) * n,
    )
    return start_round(empty, 0, rng)


def start_round(state: State, round_idx: int, rng: np.random.Generator) -> State:
    """Deal, roll the trump, throw the U&D card; clubs leads ("Setup of a round")."""
    n = state.num_players
    h = HAND_SIZE[n]
    deck = rng.permutation(NUM_CARDS).tolist()
    hands = tuple(_mask(deck[s * h : (s + 1) * h]) for s in range(n))
    trump = roll_dice(rng)
    side = int(rng.integers(2))
    options = THROW_ORIENTATIONS[n]
    orientation = options[int(rng.integers(len(options)))]
    leader = clubs_seat(n, orientation)
    # Totals, the lost count, the last trick and the habits (public history) carry over
    # between rounds.
    return state._replace(
        round=round_idx,
        phase=Phase.CHANGE,
        to_play=leader,
        leader=leader,
        side=side,
        orientation=orientation,
        trump=trump,
        hands=hands,
        aside=_mask(deck[n * h :]),
        pending=(NO_CARD,) * n,
        played=(0,) * n,
        pot=0,
    )


def _mask(cards: list[int]) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


# -- legality ------------------------------------------------------------------------------


def legal_actions(state: State) -> tuple[int, ...]:
    """Sorted action ids open to ``state.to_play``; empty once the game is over."""
    if state.phase is Phase.CHANGE:
        return CHANGE_ACTIONS[seat_suit(state.num_players, state.orientation, state.leader)]
    if state.phase is Phase.CHOOSE:
        # "A trick" 2: any card in hand may be played; there is no duty to follow suit.
        return play_actions(state.hands[state.to_play])
    return ()


def card_name(card: int) -> str:
    """Plain words for a card id, e.g. ``queen of hearts``."""
    value = card_value(card)
    face = {11: "jack", 12: "queen"}.get(value, str(value))
    return f"{face} of {SUIT_NAMES[card_suit(card)]}"


def describe_action(action: int) -> str:
    """Plain words for an action id, e.g. ``ROTATE: hearts to the leader``."""
    if action == FLIP:
        return "FLIP the U&D card"
    if ROTATE <= action < ROLL:
        return f"ROTATE: {SUIT_NAMES[rotated_suit(action)]} to the leader"
    if action == ROLL:
        return "ROLL the dice"
    if PLAY <= action < NUM_ACTIONS:
        return f"play {card_name(played_card(action))}"
    return f"unknown action {action}"


# -- transitions ---------------------------------------------------------------------------


def apply_action(state: State, action: int, rng: np.random.Generator) -> State:
    """The state after ``state.to_play`` takes ``action``; ValueError if it is illegal."""
    action = int(action)
    if action not in legal_actions(state):
        raise ValueError(
            f"illegal action {action} ({describe_action(action)}) for seat {state.to_play} "
            f"in phase {state.phase.name}; legal actions: {list(legal_actions(state))}"
        )
    if state.phase is Phase.CHANGE:
        return change_rules(state, action, rng)
    return choose_card(state, played_card(action), rng)


def _set(values: tuple[int, ...], i: int, v: int) -> tuple[int, ...]:
    return values[:i] + (v,) + values[i + 1 :]


def change_rules(state: State, action: int, rng: np.random.Generator) -> State:
    """FLIP, ROTATE or ROLL ("A trick" 1); then the leader chooses a card first."""
    state = state._replace(changes=_count(state.changes, state.leader, change_kind(action)))
    if action == FLIP:
        return state._replace(side=1 - state.side, phase=Phase.CHOOSE)
    if action == ROLL:
        trump = state.trump
        while trump == state.trump:  # re-roll until the value differs
            trump = roll_dice(rng)
        return state._replace(trump=trump, phase=Phase.CHOOSE)
    # Suit s faces the leader's direction d when (d + r) % 4 == s.
    d = DIRECTIONS[state.num_players][state.leader]
    orientation = (rotated_suit(action) - d) % NUM_SUITS
    return state._replace(orientation=orientation, phase=Phase.CHOOSE)


def choose_card(state: State, card: int, rng: np.random.Generator) -> State:
    """A face-down choice ("A trick" 2); the last player's choice resolves the trick."""
    p = state.to_play
    hands = _set(state.hands, p, state.hands[p] & ~(1 << card))
    pending = _set(state.pending, p, card)
    nxt = (p + 1) % state.num_players
    if nxt != state.leader:
        return state._replace(hands=hands, pending=pending, to_play=nxt)
    return resolve_trick(state._replace(hands=hands, pending=pending), rng)


def trick_winner(
    cards: tuple[int, ...], side: int, orientation: int, trump: int, num_players: int
) -> int:
    """The seat whose card wins ("A trick" 3; one card per seat), or -1 if none is eligible."""
    values = [card_value(c) for c in cards]
    dirs = DIRECTIONS[num_players]
    best, best_value = -1, 0
    for seat, card in enumerate(cards):
        v = values[seat]
        if values.count(v) > 1:
            continue  # 3a: equal values neutralise, trumps included
        if v == trump:
            return seat  # 3c: the one remaining trump beats everything, UP or DOWN
        if card_suit(card) != (dirs[seat] + orientation) % NUM_SUITS:
            continue  # 3b: not a trump and not the player's own suit
        if best < 0 or (v > best_value if side == UP else v < best_value):
            best, best_value = seat, v
    return best


def resolve_trick(state: State, rng: np.random.Generator) -> State:
    """Reveal, award the trick and the pot, pass the lead clockwise ("A trick" 3-4)."""
    cards = state.pending
    n = state.num_players
    winner = trick_winner(cards, state.side, state.orientation, state.trump, n)
    last = state.hands[state.leader] == 0
    pot, lost, tricks = state.pot, state.lost, state.tricks
    kinds = state.kinds
    for seat, (card, own) in enumerate(zip(cards, own_suits(state))):
        kinds = _count(kinds, seat, card_kind(card, state.trump, own))
    if winner >= 0:
        tricks = _set(tricks, winner, tricks[winner] + 1 + pot)  # 3d: the pot goes along
        pot, result = 0, winner
    elif last:
        pot, lost, result = 0, lost + pot + 1, LOST  # 3d: the last trick's pot is lost
    else:
        pot, result = pot + 1, POT
    done = state._replace(
        pending=(NO_CARD,) * n,
        played=tuple(m | 1 << c for m, c in zip(state.played, cards)),
        last_trick=cards,
        last_result=result,
        pot=pot,
        tricks=tricks,
        lost=lost,
        kinds=kinds,
    )
    if not last:
        nxt = (state.leader + 1) % n  # 4: the next player clockwise leads
        return done._replace(phase=Phase.CHANGE, leader=nxt, to_play=nxt)
    if state.round + 1 < state.num_rounds:
        return start_round(done, state.round + 1, rng)
    return done._replace(phase=Phase.GAME_OVER, to_play=-1)


# -- scoring -------------------------------------------------------------------------------


def is_terminal(state: State) -> bool:
    """True once the last trick of the last round is resolved."""
    return state.phase is Phase.GAME_OVER


def scores(state: State) -> tuple[float, ...]:
    """Tricks per seat over all rounds so far."""
    return tuple(float(t) for t in state.tricks)


def winners(state: State) -> tuple[int, ...]:
    """Seats with the most tricks, a tie shared ("Game end"); () before the end."""
    if state.phase is not Phase.GAME_OVER:
        return ()
    best = max(state.tricks)
    return tuple(s for s, t in enumerate(state.tricks) if t == best)


def rewards(before: State, after: State, config: Config) -> tuple[float, ...]:
    """Per-seat reward for the transition ``before -> after`` under ``config.reward``."""
    if config.reward == "win":
        if after.phase is not Phase.GAME_OVER:
            return (0.0,) * after.num_players
        won = winners(after)
        return tuple(1.0 if s in won else -1.0 for s in range(after.num_players))
    return tuple(float(a - b) for a, b in zip(after.tricks, before.tricks))


def tricks_played(state: State) -> int:
    """Tricks resolved so far over all rounds."""
    return state.round * HAND_SIZE[state.num_players] + state.played[0].bit_count()


# -- determinisation ----------------------------------------------------------------------

_BIT = tuple(1 << c for c in range(NUM_CARDS))


def sample_state(state: State, seat: int, rng: np.random.Generator) -> State:
    """A full state that ``seat`` cannot tell from ``state``: the unseen cards dealt anew.

    What ``seat`` has seen ("Hidden information"): everything public (side, orientation,
    trump, leader, pot, tricks, the revealed cards of ``played`` and ``last_trick``, every hand
    size and who has chosen in this trick), its own hand and its own pending choice. Unseen,
    and redrawn here: the other players' hands, their chosen but unrevealed cards and the
    set-aside cards. Those places hold exactly the cards ``seat`` has not seen in this round,
    so their union is shuffled and dealt back into the same places with the same sizes
    (a hand keeps its size, a chosen card stays one card, the set-aside pile keeps its size);
    no card is duplicated or lost. Nothing is inferred from how the others played: that is
    the searcher's business.
    """
    n = state.num_players
    others = [s for s in range(n) if s != seat]
    hands, pending = list(state.hands), list(state.pending)
    # The pool is the union of the unseen places, a bitmask first so one lookup lists it.
    pool_mask = state.aside
    for s in others:
        pool_mask |= hands[s]
        if pending[s] != NO_CARD:
            pool_mask |= 1 << pending[s]
    if pool_mask == 0:
        return state
    pool = cards_of(pool_mask)
    # One permutation of indices is cheaper than shuffling a Python list card by card.
    deal = list(map(pool.__getitem__, rng.permutation(len(pool)).tolist()))
    i = 0
    for s in others:
        if pending[s] != NO_CARD:
            pending[s] = deal[i]
            i += 1
        k = hands[s].bit_count()
        hands[s] = sum(map(_BIT.__getitem__, deal[i : i + k]))
        i += k
    aside = sum(map(_BIT.__getitem__, deal[i:]))
    return state._replace(hands=tuple(hands), pending=tuple(pending), aside=aside)
