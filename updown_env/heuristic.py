"""An Up & Down heuristic that plays the way a careful human does, from its observation only.

:class:`HeuristicUpDown` counts the cards still out and scores every legal action by the
chance that it wins the trick (see its docstring for the strategy in plain words). It is the
``heuristic`` spec of ``training/registry.py`` for ``updown``: about 1 ms per move, strong
enough to be a baseline, deterministic up to exact ties.

The module also holds :func:`rollout_policy`, the fast full-state policy that ISMCTS uses in
its rollouts and for the other seats inside its tree (it reads a determinised state, so it is a
search component, not an agent).
"""

from __future__ import annotations

import random
from functools import cache
from math import comb, exp, prod
from typing import Any

import numpy as np

from tablegym.agent import Agent, GameView, legal_ids
from updown_env.observation import decode
from updown_env.rules import (
    DOWN,
    FLIP,
    MIN_VALUE,
    NUM_CARDS,
    NUM_SUITS,
    NUM_VALUES,
    PLAY,
    ROLL,
    UP,
    Phase,
    card_suit,
    card_value,
    own_suits,
    played_card,
    rotate_action,
    rotated_suit,
)

VALUES = range(MIN_VALUE, MIN_VALUE + NUM_VALUES)
# 2d6: P(sum = t) = (6 - |t - 7|) / 36 ("Components").
DICE = {t: (6 - abs(t - 7)) / 36 for t in VALUES}


@cache
def best_weights(u: int, k: int) -> tuple[float, ...]:
    """Chance that the i-th ranked of ``u`` unseen cards is the best of ``k`` dealt from them.

    The best is the i-th when the i ranked above it are all missed and it is dealt:
    ``C(u - 1 - i, k - 1) / C(u, k)``.
    """
    total = comb(u, k)
    return tuple(comb(u - 1 - i, k - 1) / total for i in range(u))


class HeuristicUpDown(Agent):
    """Card-counting Up & Down player; reads only ``observation.decode(obs)`` (raw values).

    The strategy in plain words:

    * **Count the cards.** My hand and every card revealed in this round are known; the cards
      "still out" are the rest. They lie in the others' hands, in their face-down choices and
      (with 2 or 3 players) in the set-aside pile; each opponent holds as many of them as
      their public hand size (plus the card they have already chosen in this trick).
    * **Know which of my cards can win.** A card of mine can take the trick only if it is a
      trump or of my own suit. It still loses if an opponent plays the same value (the two
      neutralise), a better card of their own suit (higher under UP, lower under DOWN), or a
      trump when mine is not one - unless two opponents play trumps, which cancel each
      other. For each opponent I estimate the chance of such a card from the cards still
      out: half of the time they play as a strong player would (their best card: a trump,
      else their best own-suit card, so the danger is that they *hold* a spoiler), half of
      the time they play any card (the danger is the share of spoilers among the cards out).
    * **Play the card most likely to win the trick and the pot it carries; when I cannot
      win, play the card that costs least:** one that may deny an opponent the trick by
      matching the value of their likely winner, and otherwise a middle, off-trump card
      rather than a 2, a queen or a trump, which are worth more later.
    * **As leader, change the rules in my favour.** Try each of the five legal changes -
      FLIP, the three ROTATEs (a suit I hold strong cards of can be made mine) and ROLL
      (valued by its expectation over the 2d6 sum conditioned on a new value, since I pick
      my card after the roll) - and take the one under which my best card for this trick
      scores highest, with a small bonus for how many of my cards could win under the new
      rules (the next leaders change only one thing at a time).

    ``view`` is ignored: the agent never looks at the hidden state.
    """

    spec = "heuristic"
    # Share of the time an opponent is assumed to play their strongest card (else any card).
    strong = 0.5
    # What a card kept for later is worth, in tricks, per unit of ``Table.future``: enough to
    # throw a middle card rather than a queen when neither can win, too little to hold back a
    # card that can (tournaments against itself found larger values lose).
    keep = 0.05
    # Weight of a trick the opponents may take (shared among them with more than one): my
    # card can deny it by matching the value of their likely winner.
    deny = 1.0
    # Weight of the rest of my hand when the leader compares rule changes: the rules I leave
    # behind persist except for the one thing each later leader changes.
    hand = 0.1

    def __init__(self, seed: int | None = None):
        # Only breaks exact ties, so two equal moves are not always chosen in id order.
        self.rng = np.random.default_rng(seed)

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, view: GameView | None = None
    ) -> int:
        """The legal action with the best heuristic value; ``view`` is ignored."""
        legal = legal_ids(action_mask)
        if legal.size == 1:
            return int(legal[0])
        table = Table(decode(observation), self)
        values = np.array([table.action_value(int(a)) for a in legal])
        values += self.rng.random(values.size) * 1e-9
        return int(legal[np.argmax(values)])


class Table:
    """One decision point: the raw observation and the count of the cards still out."""

    def __init__(self, obs: dict[str, np.ndarray], weights: HeuristicUpDown):
        self.w = weights
        self.n = int(np.argmax(obs["num_players"])) + 2
        self.hand = np.flatnonzero(obs["hand"]).tolist()
        seen = obs["hand"] + obs["my_choice"] + obs["played"].sum(axis=0)
        self.out = [c for c in range(NUM_CARDS) if seen[c] == 0]
        # Suits of the seats, relative: 0 is me, then clockwise.
        self.suits = np.argmax(obs["suits"][: self.n], axis=1).tolist()
        self.side = int(np.argmax(obs["side"]))
        self.trump = int(np.argmax(obs["trump"])) + MIN_VALUE
        self.pot = int(obs["pot"][0])
        # Cards an opponent held when the trick began: a chosen card is one of them.
        held = obs["hand_sizes"] + obs["chosen"]
        self.held = [int(held[j]) for j in range(1, self.n)]
        self._now: list[tuple[float, float]] | None = None

    # -- the opponents ---------------------------------------------------------------------

    def opponent_cards(self, side: int, suits: list[int], trump: int) -> list[list[tuple]]:
        """Per opponent, ``(value, eligible, chance)`` of each card still out being theirs
        to play in this trick under the given rules.

        A strong player plays their best eligible card: the trumps, then their own suit from
        the best value down (UP: highest first, DOWN: lowest first); holding none, any card.
        With ``k`` of the ``u`` cards out in hand, the i-th ranked is their best with chance
        ``best_weights(u, k)[i]``. The rest of the time they play any card, ``1 / u`` each.
        """
        out, strong = self.out, self.w.strong
        u = len(out)
        if u == 0:
            return [[] for _ in self.held]  # nothing unseen: no opponent card can interfere
        plain = (1.0 - strong) / u
        result = []
        for j, k in enumerate(self.held, start=1):
            sj = suits[j]
            trumps = [c for c in out if card_value(c) == trump]
            own = [c for c in out if card_suit(c) == sj and card_value(c) != trump]
            own.sort(reverse=side == UP)
            ranked = trumps + own
            best = best_weights(u, min(k, u))
            cards = [(card_value(c), True, strong * best[i] + plain) for i, c in enumerate(ranked)]
            idle = u - len(ranked)
            if idle:
                # Holding nothing eligible (the chance the last ranked card is not reached),
                # they throw any of their cards.
                p_none = 1.0 - sum(best[: len(ranked)])
                chance = strong * p_none / idle + plain
                eligible = set(ranked)
                cards += [(card_value(c), False, chance) for c in out if c not in eligible]
            result.append(cards)
        return result

    # -- my cards --------------------------------------------------------------------------

    def card_scores(self, side: int, suits: list[int], trump: int) -> list[tuple[float, float]]:
        """Per card in hand: (score to play it now, chance it wins) under the given rules.

        The score is the trick and the pot I may take, less those an opponent may take (my
        card denies them a trick by matching the value of their winner, "A trick" 3a), less
        what the card would be worth kept for later.
        """
        opponents = self.opponent_cards(side, suits, trump)
        stake = 1.0 + self.pot
        deny = self.w.deny / (self.n - 1)
        keep = self.w.keep if len(self.hand) > 1 else 0.0  # the last card has no future
        scores = []
        for card in self.hand:
            suit, v = card_suit(card), card_value(card)
            mine = v == trump or suit == suits[0]  # 3b: a trump or my own suit
            threat = 0.0
            # Per opponent, the chance of a trump (one alone beats my card; two or more
            # neutralise each other, 3a) and of any other card that spoils mine.
            trumps, others = [], []
            for cards in opponents:
                t = o = 0.0
                for w, eligible, chance in cards:
                    if w == v:
                        o += chance  # 3a: equal values neutralise, trumps too
                    elif w == trump:
                        t += chance
                        threat += chance
                    elif eligible and (not mine or beats(w, v, side, trump)):
                        o += chance
                        threat += chance  # their card would win if no one else interferes
                trumps.append(t)
                others.append(o)
            p_win = 0.0
            if mine:
                # No spoiler at all, less the cases where exactly one trump is played.
                p_win = prod(1.0 - o for o in others)
                for j, t in enumerate(trumps):
                    if t:
                        p_win -= t * prod(
                            1.0 - ti - oi
                            for i, (ti, oi) in enumerate(zip(trumps, others))
                            if i != j
                        )
            score = stake * (p_win - deny * threat) - keep * self.future(card, trump)
            scores.append((score, p_win))
        return scores

    def future(self, card: int, trump: int) -> float:
        """What keeping ``card`` is worth later: extreme values and the trump value."""
        v = card_value(card)
        return abs(v - 7) / 5 + (0.5 if v == trump else 0.0)

    def rules_value(self, side: int, suits: list[int], trump: int) -> float:
        """How good rules are for me: my best play now, plus my hand's winning chances."""
        scores = self.card_scores(side, suits, trump)
        return max(s for s, _ in scores) + self.w.hand * sum(p for _, p in scores)

    # -- actions ---------------------------------------------------------------------------

    def action_value(self, a: int) -> float:
        """Heuristic value of a legal action."""
        if a > ROLL:  # a card
            if self._now is None:  # one pass scores every card under the current rules
                self._now = self.card_scores(self.side, self.suits, self.trump)
            return self._now[self.hand.index(played_card(a))][0]
        if a == FLIP:
            return self.rules_value(DOWN if self.side == UP else UP, self.suits, self.trump)
        if a == ROLL:
            # "A trick" 1: re-rolled until it differs, so 2d6 conditioned on a new value.
            rest = 1.0 - DICE[self.trump]
            return sum(
                DICE[t] / rest * self.rules_value(self.side, self.suits, t)
                for t in VALUES
                if t != self.trump
            )
        # ROTATE: the suit comes to me and every seat's suit turns by the same step.
        step = (rotated_suit(a) - self.suits[0]) % NUM_SUITS
        suits = [(s + step) % NUM_SUITS for s in self.suits]
        return self.rules_value(self.side, suits, self.trump)


def beats(w: int, v: int, side: int, trump: int) -> bool:
    """Whether an eligible value ``w`` beats my eligible ``v`` (different values; "A trick" 3c)."""
    if v == trump:
        return False  # my trump beats everything that does not match it
    if w == trump:
        return True
    return w > v if side == UP else w < v


# -- search support -----------------------------------------------------------------------
# The same plan as the agent's, counted on bitmasks so that one move costs microseconds: each
# seat reads only its own hand and what is public (it never peeks at the others' hands or at
# their face-down choices, though the determinised state holds them).

SUIT_BITS = (1 << NUM_VALUES) - 1
ALL_CARDS = (1 << NUM_CARDS) - 1
# Within one suit's 11-bit chunk, the bits of the values better than value index i.
BETTER = {
    UP: tuple(SUIT_BITS & ~((1 << (i + 1)) - 1) for i in range(NUM_VALUES)),
    DOWN: tuple((1 << i) - 1 for i in range(NUM_VALUES)),
}
# Per value index, the mask of its four cards; per card, (value index, suit).
VALUE_CARDS = tuple(
    sum(1 << (s * NUM_VALUES + i) for s in range(NUM_SUITS)) for i in range(NUM_VALUES)
)
CARD = tuple(divmod(c, NUM_VALUES)[::-1] for c in range(NUM_CARDS))
# What keeping a card is worth later, per value index and trump flag (``Table.future``).
FUTURE = tuple(
    (abs(i + MIN_VALUE - 7) / 5, abs(i + MIN_VALUE - 7) / 5 + 0.5) for i in range(NUM_VALUES)
)
# Threats actually played per threat held: the others play strong cards more than their share.
ROLLOUT_AGGRESSION = 1.5
# What a card kept for later is worth, per unit of future value (the agent's ``keep``).
ROLLOUT_KEEP = 0.05
# What spoiling one unseen card an opponent could win with is worth, per card I hold: the same
# value in an opponent's own suit, or any unseen trump for my trump ("A trick" 3a). As a player
# against three heuristics (4 players, 4,000 games each on seeds 11 and 12) 0.4 won 0.262 and
# 0.244 of the games, 0 won 0.223 and 0.226; 0.3, 0.5 and 0.6 about 0.248, 1.5 0.227, 3 0.200.
ROLLOUT_DENY = 0.4


def rollout_policy(state: Any, rand: random.Random) -> int:
    """A fast full-state policy for search rollouts: the heuristic's plan on bitmask counts.

    Card choice: the card with the best chance to take the trick and the pot (a trump or an
    own-suit card, spoiled by each unseen card of the same value, each unseen trump and each
    better unseen card of an opponent's own suit), less what it is worth kept, plus what it
    spoils for the others (``ROLLOUT_DENY``); a seat that cannot win throws its cheapest card
    or the one that spoils the most. Leader: the rule change under which its best card
    is strongest (ROLL judged on one sampled new trump, as the dice will decide anyway).
    """
    p = state.to_play
    hand = state.hands[p]
    seen = hand
    for m in state.played:
        seen |= m
    unseen = ALL_CARDS & ~seen
    cards = _cards(hand)
    hold = len(cards)  # about the others' hand size
    suits = own_suits(state)
    trump = state.trump
    if state.phase is Phase.CHOOSE:
        counts = _unseen_counts(suits, p, trump, unseen)
        chances = _win_chances(cards, state.side, suits[p], counts, unseen, hold)
        keep = ROLLOUT_KEEP if hold > 1 else 0.0
        stake = 1.0 + state.pot
        t, trumps, others = counts
        best, best_v = 0, -1e9
        for c, chance in zip(cards, chances):
            i = CARD[c][0]
            spoiled = trumps if i == t else sum(m >> i & 1 for m in others)
            v = stake * chance - keep * FUTURE[i][i == t] + ROLLOUT_DENY * spoiled / hold
            v += rand.random() * 1e-9
            if v > best_v:
                best, best_v = c, v
        return PLAY + best
    side, mine = state.side, suits[p]
    new_trump = trump
    while new_trump == trump:  # ROLL: one sample of the conditioned 2d6
        new_trump = 2 + int(rand.random() * 6) + int(rand.random() * 6)
    choices = [(FLIP, side ^ 1, suits, trump), (ROLL, side, suits, new_trump)]
    for suit in range(NUM_SUITS):
        if suit != mine:
            step = suit - mine
            turned = tuple((x + step) % NUM_SUITS for x in suits)
            choices.append((rotate_action(suit), side, turned, trump))
    best, best_v = FLIP, -1e9
    for a, side2, suits2, trump2 in choices:
        counts = _unseen_counts(suits2, p, trump2, unseen)
        v = max(_win_chances(cards, side2, suits2[p], counts, unseen, hold))
        v += rand.random() * 1e-9
        if v > best_v:
            best, best_v = a, v
    return best


def _cards(mask: int) -> list[int]:
    """Card ids of a bitmask."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def _unseen_counts(
    suits: tuple[int, ...], p: int, trump: int, unseen: int
) -> tuple[int, int, list[int]]:
    """What seat ``p`` counts among the cards it has not seen under one rule set: the trump's
    value index, the unseen trumps, and per opponent its unseen own-suit cards that are not
    trumps (bit ``i`` for value index ``i``)."""
    t = trump - MIN_VALUE
    no_trump = SUIT_BITS & ~(1 << t)
    others = [unseen >> (s * NUM_VALUES) & no_trump for q, s in enumerate(suits) if q != p]
    return t, (unseen & VALUE_CARDS[t]).bit_count(), others


def _win_chances(
    cards: list[int],
    side: int,
    mine: int,
    counts: tuple[int, int, list[int]],
    unseen: int,
    hold: int,
) -> list[float]:
    """Per card of a seat whose own suit is ``mine``, a rough chance to take the trick ("A
    trick" 3), 0 if it cannot, from its ``_unseen_counts``.

    Spoilers counted among the cards the seat has not seen: the same value (3a), a trump (3c),
    a better card of an opponent's own suit; each is played about ``1 / hold`` of the time.
    """
    t, trumps, others = counts
    better = BETTER[side]
    scale = -ROLLOUT_AGGRESSION / hold
    out = []
    for c in cards:
        i, suit = CARD[c]
        if i == t:
            threats = trumps  # another trump neutralises mine
        elif suit != mine:
            out.append(0.0)  # 3b: neither a trump nor my own suit
            continue
        else:
            threats = (unseen & VALUE_CARDS[i]).bit_count() + trumps
            b = better[i]
            for m in others:
                threats += (m & b).bit_count()
        out.append(exp(scale * threats))
    return out
