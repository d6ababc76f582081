"""Text rendering of a King Up! position. Never shows a favourite card."""

from __future__ import annotations

from kingup_env.rules import (
    ELIMINATED,
    FLOOR_NAMES,
    NAMES,
    NO_CARDS,
    NUM_FLOORS,
    THRONE,
    Phase,
    State,
    totals,
)


def to_text(state: State, viewer: int | None = None) -> str:
    """The castle from the throne down, then votes, NO cards and scores.

    ``viewer`` is accepted for the common render interface; King Up shows every seat the
    same public picture.
    """
    lines = [f"King Up!  round {state.round + 1}/{state.num_rounds}  phase {state.phase.name}"]
    throne = [NAMES[c] for c, f in enumerate(state.floors) if f == THRONE]
    if state.phase is Phase.GAME_OVER and state.king >= 0:
        lines.append(f"  King: {NAMES[state.king]}")
    else:
        lines.append(f"  Throne: {', '.join(throne) or '-'}")
    for f in range(NUM_FLOORS - 1, -1, -1):
        here = [NAMES[c] for c, x in enumerate(state.floors) if x == f]
        lines.append(f"  {f} {FLOOR_NAMES[f]:<11} [{len(here)}/4] {', '.join(here)}")
    out = [NAMES[c] for c, f in enumerate(state.floors) if f == ELIMINATED]
    lines.append(f"  Eliminated: {', '.join(out) or '-'}")
    if state.crown >= 0:
        lines.append(f"  Crown: player_{state.crown}")
    if state.phase is Phase.VOTE:
        voted = [f"player_{s}" for s, v in enumerate(state.votes) if v >= 0]
        lines.append(f"  Vote on {NAMES[state.candidate]}; voted: {', '.join(voted) or '-'}")
    tot = totals(state)
    lines.append("  Player    NO left  NO spent  placements  total")
    for s in range(state.num_players):
        mark = ">" if s == state.to_play else " "
        spent = NO_CARDS[state.num_players] - state.no_left[s]
        lines.append(
            f" {mark}player_{s}  {state.no_left[s]:>7}  {spent:>8}  "
            f"{state.placements_left[s]:>10}  {tot[s]:>5}"
        )
    return "\n".join(lines)
