"""Text and matplotlib rendering of a KdK position. Hidden cards only to their owner."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kdk_env.rules import ACTIVE, ELIMINATED, FIGURE_NAMES, FINISHED, Phase, State, winners

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

_STATUS = {ACTIVE: "active", FINISHED: "finished", ELIMINATED: "out (SP)"}
LEGEND = """\
Legend: figures T (traitor) 1-10 K A. Box: the cards laid this trick, oldest first, each with
  its owner (p1 = player_1); * a WEITER traitor; top: the card to beat. duty: who must serve
  next; queue: who may still throw in this window. > the seat to act. Per player: status
  (#k: place this round; out (SP): eliminated by shuffle pressure), hand, draw and played pile
  sizes, ann (announced combo N; x announced and failed; - none), combo (cards in the combo),
  serves (since the announcement), slots (level 10 slot figures; . empty), score (game total)."""


def _cards(counts: tuple[int, ...]) -> str:
    return " ".join(FIGURE_NAMES[f] for f, c in enumerate(counts) for _ in range(c)) or "-"


def to_text(state: State, viewer: int | None = None) -> str:
    """The box and its top, duty, whose decision it is, combos, piles, slots and scores.

    ``viewer`` (a seat) also sees his own hand and draw-pile composition; ``None`` sees only
    public information.
    """
    cfg = state.config
    s = state
    lines = [
        f"KdK level {cfg.level}  round {s.round_idx}/{cfg.num_rounds}  "
        f"phase {Phase(s.phase).name}  step {s.steps}"
    ]
    box = " ".join(
        f"{FIGURE_NAMES[f]}{'*' if transparent else ''}(p{o})" for o, f, transparent in s.box
    )
    top = FIGURE_NAMES[s.top] if s.top >= 0 else "empty"
    lines.append(f"  Box: {box or '-'}   top: {top}   (* = WEITER traitor)")
    act = f"player_{s.to_play}" if s.to_play >= 0 else "-"
    duty = f"player_{s.duty}" if s.duty >= 0 else "-"
    queue = ", ".join(f"player_{q}" for q in s.queue) or "-"
    lines.append(f"  To act: {act}   duty: {duty}   queue: {queue}")
    lines.append("  Player    status    hand draw played  ann combo serves  slots     score")
    for p in range(cfg.num_players):
        mark = ">" if p == s.to_play else " "
        ann = str(s.announced[p]) if s.announced[p] else ("x" if s.ann_made[p] else "-")
        slots = ",".join(FIGURE_NAMES[f] if f >= 0 else "." for f in s.slots[p])
        place = f" #{s.place[p]}" if s.place[p] else ""
        lines.append(
            f" {mark}player_{p}  {_STATUS[s.status[p]] + place:<9}{sum(s.hand[p]):>4}"
            f"{len(s.draw[p]):>5}{sum(s.played[p]):>7}{ann:>5}{s.combo_len[p]:>6}"
            f"{s.serves_since[p]:>7}  {slots:<9}{s.score[p]:>6}"
        )
    if s.phase == Phase.GAME_OVER:
        lines.append("  Game over; winner(s): " + ", ".join(f"player_{p}" for p in winners(s)))
    if viewer is not None:
        lines.append(f"  player_{viewer} hand: {_cards(s.hand[viewer])}")
        comp = [0] * len(FIGURE_NAMES)
        for f in s.draw[viewer]:
            comp[f] += 1
        lines.append(f"  player_{viewer} draw pile (unordered): {_cards(tuple(comp))}")
    return "\n".join(lines)


_OWNER_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1")
_BOX_SHOWN = 14  # older box cards are summarised: only the top of the stack matters for play


def _figure_card(ax: Axes, x: float, y: float, figure: int, colour: str, hatch: str = "") -> None:
    from matplotlib.patches import Rectangle

    ax.add_patch(Rectangle((x, y), 0.7, 0.9, fc=colour, ec="k", alpha=0.85, hatch=hatch))
    ax.text(x + 0.35, y + 0.45, FIGURE_NAMES[figure], ha="center", va="center", fontsize=9)


def draw(state: State, viewer: int | None = None, ax: Axes | None = None) -> Figure:
    """The box as a stack of cards coloured by owner (WEITER traitors hatched, the top card at
    the right), a row per player (hand, draw and played counts, announcement, combo, slots,
    score) and ``viewer``'s hand."""
    from matplotlib.figure import Figure

    if ax is None:
        ax = Figure(figsize=(7.5, 4.6)).subplots()
    s, n = state, state.config.num_players
    top_y = n + 1.2
    shown = s.box[-_BOX_SHOWN:]
    hidden = len(s.box) - len(shown)
    older = f" ({hidden} older not shown)" if hidden else ""
    ax.text(0, top_y + 1.2, f"box: {len(s.box)} cards{older}", fontsize=9)
    for i, (owner, figure, transparent) in enumerate(shown):
        _figure_card(ax, 0.75 * i, top_y, figure, _OWNER_COLOURS[owner], "//" * transparent)
    header = "    player   status     hand draw played  ann combo  score   slots"
    ax.text(0, n + 0.4, header, fontsize=8, family="monospace")
    for p in range(n):
        y = n - 1 - p
        mark = (">" if p == s.to_play else " ") + ("D " if p == s.duty else "  ")
        ann = str(s.announced[p]) if s.announced[p] else ("x" if s.ann_made[p] else "-")
        status = _STATUS[s.status[p]] + (f" #{s.place[p]}" if s.place[p] else "")
        row = (
            f"{mark}player_{p} {status:<10}{sum(s.hand[p]):>4}{len(s.draw[p]):>5}"
            f"{sum(s.played[p]):>7}{ann:>5}{s.combo_len[p]:>6}{s.score[p]:>7}"
        )
        ax.text(0, y + 0.3, row, fontsize=8, family="monospace", color=_OWNER_COLOURS[p])
        for k, f in enumerate(x for x in s.slots[p] if x >= 0):
            _figure_card(ax, 8.2 + 0.75 * k, y + 0.05, f, _OWNER_COLOURS[p])
    if viewer is not None:
        ax.text(0, -0.9, f"hand of player_{viewer}:", fontsize=9)
        hand = [f for f, c in enumerate(s.hand[viewer]) for _ in range(c)]
        for i, f in enumerate(hand):
            _figure_card(ax, 2.6 + 0.75 * i, -1.2, f, "white")
    ax.set_title(
        f"KdK level {s.config.level}: round {s.round_idx}/{s.config.num_rounds}, "
        f"{Phase(s.phase).name.lower().replace('_', ' ')}  (> to act, D duty)",
        fontsize=10,
    )
    ax.set_xlim(-0.2, 11)
    ax.set_ylim(-1.5, top_y + 1.6)
    ax.set_axis_off()
    return ax.figure
