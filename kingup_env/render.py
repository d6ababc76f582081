"""Text and matplotlib rendering of a King Up! position. A favourite card only to its viewer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kingup_env.rules import (
    CAPACITY,
    ELIMINATED,
    FAVOURITE_CARDS,
    FLOOR_NAMES,
    NAMES,
    NO_CARDS,
    NUM_FLOORS,
    THRONE,
    UNPLACED,
    VOTED_NO,
    VOTED_YES,
    Phase,
    State,
    totals,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def to_text(state: State, viewer: int | None = None) -> str:
    """The castle from the throne down, then votes, NO cards and scores.

    ``viewer`` (a seat) also sees his favourite card and his own vote while the election is
    open; ``None`` sees only public information.
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
    if viewer is not None:
        lines.append(
            f"  player_{viewer} favourites: {', '.join(_favourites(state, viewer)) or '-'}"
        )
        vote = {VOTED_YES: "YES", VOTED_NO: "NO"}.get(state.votes[viewer])
        if state.phase is Phase.VOTE and vote:
            lines.append(f"  player_{viewer} voted {vote} (hidden until all have voted)")
    return "\n".join(lines)


def round_summary(before: State, after: State) -> str | None:
    """What the table learns when the step ``before -> after`` ends a round: the candidate
    crowned, each seat's points and its favourites (revealed at the scoring); None otherwise."""
    if len(after.round_scores) == len(before.round_scores):
        return None
    points, cards = after.round_scores[-1], after.revealed[-1]
    lines = [f"Round {len(after.round_scores)} over: {NAMES[after.king]} is crowned king"]
    for seat, (got, card) in enumerate(zip(points, cards)):
        names = ", ".join(NAMES[c] for c in FAVOURITE_CARDS[card])
        lines.append(f"  player_{seat}: {got:+d} points (favourites {names})")
    return "\n".join(lines)


def _favourites(state: State, viewer: int) -> list[str]:
    """Names on ``viewer``'s favourite card; none before the deal and after the game."""
    card = state.favourites[viewer]
    return [NAMES[c] for c in FAVOURITE_CARDS[card]] if card >= 0 else []


# Floors 0..5 each get their own colour so a candidate's floor reads at a glance.
_FLOOR_COLOURS = ("#8d8d8d", "#a1887f", "#81c784", "#64b5f6", "#ba68c8", "#e57373")
_THRONE_COLOUR = "#ffd54f"


def draw(state: State, viewer: int | None = None, ax: Axes | None = None) -> Figure:
    """The castle as a picture: a row per floor, the throne on top, waiting and eliminated
    candidates beside it; ``viewer``'s favourites are outlined in gold."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    if ax is None:
        ax = Figure(figsize=(6.8, 5)).subplots()
    # -1 (no card dealt) must not index the last card of the deck.
    card = state.favourites[viewer] if viewer is not None else -1
    favourites = set(FAVOURITE_CARDS[card]) if card >= 0 else set()
    rows = [(f, FLOOR_NAMES[f], _FLOOR_COLOURS[f]) for f in range(NUM_FLOORS)]
    crowned = state.phase is Phase.GAME_OVER and state.king >= 0
    rows.append((THRONE, "king" if crowned else "throne", _THRONE_COLOUR))
    for y, (floor, name, colour) in enumerate(rows):
        ax.add_patch(Rectangle((0, y), CAPACITY, 1, facecolor=colour, alpha=0.25, ec="k"))
        label = name if floor == THRONE else f"{floor} {name}"
        ax.text(-0.1, y + 0.5, label, ha="right", va="center", fontsize=9)
        here = [c for c, x in enumerate(state.floors) if x == floor]
        for i, c in enumerate(here):
            gold = c in favourites
            ax.add_patch(
                Rectangle((i + 0.05, y + 0.12), 0.9, 0.76, facecolor=colour,
                          ec="goldenrod" if gold else "k", lw=3 if gold else 0.8)
            )  # fmt: skip
            ax.text(i + 0.5, y + 0.5, NAMES[c], ha="center", va="center", fontsize=8)
    side = {"waiting": UNPLACED, "eliminated": ELIMINATED}
    for x, (title, where) in zip((CAPACITY + 0.3, CAPACITY + 1.9), side.items()):
        names = [
            NAMES[c] + " *" * (c in favourites) for c, f in enumerate(state.floors) if f == where
        ]
        ax.text(x, NUM_FLOORS + 0.6, title, fontsize=9, weight="bold", va="top")
        ax.text(x, NUM_FLOORS + 0.1, "\n".join(names) or "-", fontsize=8, va="top")
    tot = totals(state)
    cells = [
        f"{'>' if s == state.to_play else ''}p{s}: NO {state.no_left[s]}, {tot[s]} pts"
        for s in range(state.num_players)
    ]
    # Three players a line: six on one line ran past the picture's right edge.
    lines = ["   ".join(cells[i : i + 3]) for i in range(0, len(cells), 3)]
    ax.text(0, -0.35, "\n".join(lines), fontsize=8, va="top")
    phase = state.phase.name.lower().replace("_", " ")
    ax.set_title(
        f"King Up!  round {state.round + 1}/{state.num_rounds}, {phase}"
        + (f", favourites of player_{viewer} in gold (*)" if viewer is not None else ""),
        fontsize=10,
    )
    ax.set_xlim(-1.8, CAPACITY + 3.4)
    ax.set_ylim(-0.55 - 0.35 * len(lines), NUM_FLOORS + 1.1)
    ax.set_axis_off()
    return ax.figure
