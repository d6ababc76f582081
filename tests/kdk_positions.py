"""KdK positions shared by the KdK test modules: hand-built states, random play, a greedy policy."""

from __future__ import annotations

import numpy as np

from kdk_env import rules as R
from kdk_env.rules import ACTIVE, Phase

DEFAULT_PILE = tuple(range(1, 11))  # top card last: 10


def counts(*figures: int) -> tuple[int, ...]:
    """A multiset of figures as counts per figure."""
    c = [0] * R.NUM_FIGURES
    for f in figures:
        c[f] += 1
    return tuple(c)


def build(level: int, n: int, *, phase: Phase, hands: dict, to_play: int = 0, **kw) -> R.State:
    """A hand-built position: unnamed per-seat fields take neutral defaults (spec §10 preamble).

    Per-seat fields are given as ``{seat: value}`` under their short names (``draws``,
    ``serves``, ``laid``, ``combo``, ...); any other ``State`` field is set as given.
    """
    cfg = R.make_config(
        num_players=n,
        level=level,
        num_rounds=kw.pop("num_rounds", 2),
        deck_mode=kw.pop("deck_mode", "one_colour"),
        auto_pass=kw.pop("auto_pass", False),
        first_opener=0,
    )
    base = R.initial_state(cfg, np.random.default_rng(0))

    def row(name: str, default):
        vals = [default] * n
        for p, v in kw.pop(name, {}).items():
            vals[p] = v
        return tuple(vals)

    announced = row("announced", 0)
    fields = dict(
        phase=phase,
        to_play=to_play,
        hand=tuple(counts(*hands.get(p, ())) for p in range(n)),
        draw=row("draws", DEFAULT_PILE),
        played=row("played", (0,) * R.NUM_FIGURES),
        slots=row("slots", (-1, -1, -1)),
        status=row("status", ACTIVE),
        place=row("place", 0),
        announced=announced,
        serves_since=row("serves", 0),
        laid_since=row("laid", False),
        combo_len=row("combo", 0),
        combo_pts=row("combo_pts", 0),
    )
    made = row("ann_made", False)
    fields["ann_made"] = tuple(m or a > 0 for m, a in zip(made, announced))
    fields.update(kw)
    return base._replace(**fields)


def longest_run(hand: tuple[int, ...]) -> int:
    """Cards in the longest chain of consecutive numbered figures (pairs count twice)."""
    best = cur = 0
    for f in range(1, 12):
        cur = cur + hand[f] if hand[f] else 0
        best = max(best, cur)
    return best


def greedy(state: R.State, rng: np.random.Generator | None = None, eps: float = 0.0) -> int:
    """The play-out policy: lay the lowest plain figure, announce a run that covers all but one
    card, claim late; with probability ``eps`` a uniformly random legal action."""
    legal = R.legal_actions(state)
    if rng is not None and rng.random() < eps:
        return legal[rng.integers(len(legal))]
    ph = state.phase
    if ph == Phase.FINISH:
        return R.CLAIM_LATE if R.CLAIM_LATE in legal else legal[0]
    if ph == Phase.SLOT_PICK:
        return legal[-1]  # the highest figure into the last allowed slot
    if ph in (Phase.SP_DECLARE, Phase.SWAP):
        return R.PASS
    hand = state.hand[state.to_play]
    if R.ANNOUNCE in legal:
        run = longest_run(hand)
        if run >= 3 and run + 1 >= sum(hand):
            return R.announce_action(min(run, R.MAX_ANNOUNCE))
    lays = [a for a in legal if a < R.PASS]
    if lays:
        return ([a for a in lays if a != R.TRAITOR] or lays)[0]
    return R.PASS if R.PASS in legal else legal[0]


def positions(n: int, level: int, deck_mode: str, seed: int, every: int = 4) -> list[R.State]:
    """Every ``every``-th state of a 4-round game (and every between-round state).

    Play mixes uniformly random actions (announcements, aborts, top-ups, slot actions) with
    lays, so that rounds get deep and every phase occurs; slots are rarely taken and SP is
    rarely declared, so that rounds with slot swaps follow (§6.2 step 5). Every third seed
    plays with ``auto_pass``.
    """
    rng = np.random.default_rng(seed)
    cfg = R.make_config(
        num_players=n, level=level, deck_mode=deck_mode, num_rounds=4, auto_pass=seed % 3 == 0
    )
    s = R.initial_state(cfg, rng)
    out, step = [], 0
    while not R.is_terminal(s):
        if step % every == 0 or s.phase > Phase.FINISH:
            out.append(s)
        legal = R.legal_actions(s)
        lays = [a for a in legal if a < R.PASS]
        pool = lays if lays and rng.random() < 0.6 else legal
        if rng.random() < 0.9:  # keep slots for the SWAP phase more often than not
            pool = [a for a in pool if not R.TAKE_SLOT <= a < R.SECURE] or pool
        if s.phase == Phase.SP_DECLARE and rng.random() < 0.8:
            pool = (R.PASS,)
        s = R.apply_action(s, pool[rng.integers(len(pool))], rng)
        step += 1
    out.append(s)
    return out
