"""Text rendering of a KdK position. Shows hidden cards only to their owner (``viewer``)."""

from __future__ import annotations

from kdk_env.rules import ACTIVE, ELIMINATED, FIGURE_NAMES, FINISHED, Phase, State, winners

_STATUS = {ACTIVE: "active", FINISHED: "finished", ELIMINATED: "out (SP)"}


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
