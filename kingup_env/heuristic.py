"""A King Up! heuristic that plays the way a careful human does, from its observation only.

The strategy in plain words:

* **Know what the others want.** Every player holds one of the 26 known favourite cards. Start
  from "any card but mine and those revealed at the end of earlier rounds" for each opponent
  and update on the revealed votes: a player who voted NO on a candidate rarely holds it, one
  who let an eliminated candidate pass with YES more often does. This gives, per opponent and
  candidate, the chance that the candidate is on that opponent's card.
* **Judge a castle like the scorer does.** My points are my favourites' floors (king 10); each
  opponent's are the same sum weighted by those chances. A castle is good by how far my total
  is ahead of the others' (half the mean opponent, half the best one).
* **Place and push my favourites** - they are the only ones that score for me - and prefer the
  ones the others are least likely to share.
* **Keep them below the kill floor.** A favourite on floor 5 (and, less so, floor 4) can be
  pushed onto the throne by anyone and voted out with a single NO card, losing me its floor.
  Its points up there are discounted by the chance that someone holding a NO card without
  that candidate on their card kills it, so I push it there only when the others are short
  of NO cards.
* **Vote NO on candidates that hurt me when I can afford it.** A king who is not mine gives 10
  points to whoever holds him. Compare "he is king and the round ends" with "he is out and we
  play on" (the future is uncertain, so a lead I would keep by ending now is worth more than a
  lead that has to survive more play); a NO card costs more when it is my last.
* **Count the others' NO cards.** Every NO is revealed, so the observation holds how many NO
  cards each player has left. When the others can still say NO, a candidate I dislike will
  likely fall without my card, so I save it; when they cannot, my NO is the only one.

The module also holds :func:`rollout_policy`, the fast full-state policy that ISMCTS uses in
its rollouts (it reads a determinised state, so it is a search component, not an agent).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from kingup_env.observation import LAYOUT
from kingup_env.rules import (
    CLIMB,
    ELIMINATED,
    FAVOURITE_CARDS,
    MAX_ROUND_SCORE,
    NO,
    NUM_CANDIDATES,
    NUM_CARDS,
    THRONE,
    UNPLACED,
    YES,
    Phase,
    climb_of,
    legal_actions,
    place_of,
)
from tablegym.agent import Agent, GameView, legal_ids

# The 26 x 13 incidence matrix of the favourite cards: CARDS[k, c] = 1 if c is on card k.
CARDS = np.zeros((NUM_CARDS, NUM_CANDIDATES))
for _k, _card in enumerate(FAVOURITE_CARDS):
    CARDS[_k, list(_card)] = 1.0
_CARD_ID = {frozenset(card): k for k, card in enumerate(FAVOURITE_CARDS)}

# Likelihood of a revealed vote given that the voter holds the candidate on the throne: a NO
# on one's own favourite is rare, a YES on a candidate that others killed is more likely.
NO_ON_HELD = 0.15
YES_ON_HELD = 1.8
# How often a player without the candidate says NO when they hold a NO card.
P_NO_IF_NOT_HELD = 0.8
# A lead kept by ending the round now is sure; a lead that must survive more play is worth
# only this fraction of itself.
CARRY_ON = 0.7
# Weight of a favourite's floor lost when it sits where it can be pushed up and killed,
# by floor after the move (floor 5 is one push away, floor 4 two).
EXPOSURE = {4: 0.3, 5: 1.0}


class HeuristicKingUp(Agent):
    """Rule-of-thumb King Up! player; reads only ``LAYOUT.decode(observation, raw=True)``."""

    spec = "heuristic"

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
        board = Board(LAYOUT.decode(observation, raw=True))
        values = board.action_values(legal) + self.rng.random(legal.size) * 1e-6
        return int(legal[np.argmax(values)])


class Board:
    """One decision point: the raw observation plus the opponent model built from it."""

    def __init__(self, obs: dict[str, np.ndarray]):
        self.n = int(obs["seats"].sum())
        self.round = int(np.argmax(obs["round"]))
        self.mine = obs["my_favourites"]
        # Positions: castle column 0 unplaced, 1..6 floors 0..5, 7 throne, 8 eliminated.
        self.pos = np.argmax(obs["castle"], axis=1) - 1
        self.no_left = obs["no_cards_left"][: self.n].astype(int)
        self.totals = obs["totals"][: self.n]
        self.held = self._opponent_model(obs, _dealt_cards(obs))
        # Chance per candidate that some opponent holding a NO card votes NO on it.
        armed = self.held[self.no_left[1:] > 0]
        self.p_killed = 1.0 - np.prod(1.0 - P_NO_IF_NOT_HELD * (1.0 - armed), axis=0)

    def _opponent_model(self, obs: dict[str, np.ndarray], excluded: list[int]) -> np.ndarray:
        """(n-1) x 13: chance that each opponent (relative seat 1..) holds each candidate."""
        prior = np.ones(NUM_CARDS)
        prior[excluded] = 0.0
        eliminated = np.flatnonzero(self.pos == ELIMINATED)
        no_votes = obs["no_votes"][:, : self.n]
        rows = []
        for r in range(1, self.n):
            w = prior.copy()
            for c in eliminated:
                # Every seat voted in a failed election: NO is revealed, the rest were YES.
                w *= np.where(CARDS[:, c] > 0, NO_ON_HELD if no_votes[c, r] else YES_ON_HELD, 1)
            rows.append(w @ CARDS / w.sum())
        return np.array(rows)

    # -- values ----------------------------------------------------------------------------

    def values(self, pos: np.ndarray, final: bool = False) -> np.ndarray:
        """Per row of ``pos`` (k x 13): my lead over the others if the round were scored so.

        ``final``: the round does end so (a king is crowned), which is when "third round
        only: exactly 0 scores 33" applies; before that a zero is only a passing state.
        """
        pts = np.where((pos >= 0) & (pos < THRONE), pos, 0) + 10.0 * (pos == THRONE)
        mine = pts @ self.mine
        if final and self.round == 2:
            mine = np.where(mine == 0, float(MAX_ROUND_SCORE), mine)
        opp = self.totals[1:] + pts @ self.held.T
        return self.totals[0] + mine - 0.5 * opp.mean(axis=1) - 0.5 * opp.max(axis=1)

    def exposure(self, cs: np.ndarray, floors: np.ndarray) -> np.ndarray:
        """Expected loss of my favourites ``cs`` at ``floors`` from being pushed up and killed."""
        weight = np.select([floors == 4, floors == 5], [EXPOSURE[4], EXPOSURE[5]], 0.0)
        return self.mine[cs] * weight * self.p_killed[cs] * floors

    def no_card_cost(self) -> float:
        """What spending a NO card costs me: little while I have spares, more for the last."""
        return 1.0 if self.no_left[0] >= 2 else 2.5

    def vote_value(self, c: int, vote_no: bool) -> float:
        """Expected value of my vote on ``c``, given the others' NO cards and their tastes.

        Crowned, the round ends as it stands; out, play goes on and the lead is discounted.
        """
        crowned_pos, out_pos = self.pos.copy(), self.pos.copy()
        crowned_pos[c], out_pos[c] = THRONE, ELIMINATED
        crowned = self.values(crowned_pos[None], final=True)[0]
        out = CARRY_ON * self.values(out_pos[None])[0]
        if vote_no:
            return out - self.no_card_cost()
        p_pass = 1.0 - self.p_killed[c]
        return p_pass * crowned + (1.0 - p_pass) * out

    def my_vote_is_no(self, c: int) -> bool:
        """How I will vote on ``c``: never NO on my own favourite, else by vote_value."""
        if self.mine[c] or self.no_left[0] == 0:
            return False
        return self.vote_value(c, True) > self.vote_value(c, False)

    # -- actions ---------------------------------------------------------------------------

    def action_values(self, legal: np.ndarray) -> np.ndarray:
        """Heuristic value of each legal action (all of one phase)."""
        if legal[0] >= YES:
            c = int(np.flatnonzero(self.pos == THRONE)[0])
            return np.array([self.vote_value(c, a == NO) for a in legal])
        if legal[0] >= CLIMB:
            # Moving up: one floor more, or, from floor 5, an election I can foresee.
            cs = climb_of(legal)
            floors = self.pos[cs] + 1
            base = self.pos
        else:
            # Placing: its points now; the candidates nobody places will go to floor 0.
            cs, floors = place_of(legal)
            base = np.where(self.pos == UNPLACED, 0, self.pos)
        after = np.tile(base, (legal.size, 1))
        after[np.arange(legal.size), cs] = floors
        values = self.values(after) - self.exposure(cs, floors)
        for i in np.flatnonzero(floors == THRONE):
            c = int(cs[i])
            values[i] = self.vote_value(c, self.my_vote_is_no(c))
        return values


def _dealt_cards(obs: dict[str, np.ndarray]) -> list[int]:
    """Cards nobody else can hold now: mine and every card revealed at an earlier round end."""
    shown = obs["revealed_cards"].reshape(-1, NUM_CANDIDATES)
    rows = [obs["my_favourites"], *(row for row in shown if row.any())]
    return [_CARD_ID[frozenset(np.flatnonzero(row).tolist())] for row in rows]


# -- search support -----------------------------------------------------------------------

_CARD_SETS = tuple(frozenset(card) for card in FAVOURITE_CARDS)
# Rates measured on this heuristic in self-play, so rollouts resemble how players play:
# a NO on someone else's candidate about 1 time in 4 while holding spare NO cards, hardly
# ever with the last one; pushes of one's own low favourites, and of others' high ones.
P_ROLLOUT_NO = {1: 0.05, 2: 0.3}
P_PLACE_OWN = 0.85
P_CLIMB_OWN = 0.45
P_PUSH_OTHER = 0.35


def rollout_policy(state: Any, rand: random.Random) -> int:
    """A fast full-state policy for search rollouts: each seat plays by its own card.

    Used only inside a determinisation, where every card is known: this is not an agent.
    """
    p = state.to_play
    card = _CARD_SETS[state.favourites[p]]
    if state.phase is Phase.VOTE:
        if state.candidate in card or state.no_left[p] == 0:
            return YES
        return NO if rand.random() < P_ROLLOUT_NO[min(state.no_left[p], 2)] else YES
    legal = legal_actions(state)
    r = rand.random()
    floors = state.floors
    if state.phase is Phase.PLACE:
        # Own favourites onto floors 2..4.
        group = [a for a in legal if _place_own_high(a, card)] * (r < P_PLACE_OWN)
    elif r < P_CLIMB_OWN:
        group = [a for a in legal if climb_of(a) in card and floors[climb_of(a)] < 4]
    elif r < P_CLIMB_OWN + P_PUSH_OTHER:
        group = [a for a in legal if climb_of(a) not in card and floors[climb_of(a)] >= 4]
    else:
        group = []
    group = group or legal
    return group[int(rand.random() * len(group))]


def _place_own_high(action: int, card: frozenset[int]) -> bool:
    """Whether a placement puts one of ``card``'s candidates on floor 2, 3 or 4."""
    c, floor = place_of(action)
    return c in card and floor > 1
