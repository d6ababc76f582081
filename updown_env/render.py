"""Text and matplotlib rendering of an Up & Down position. A hand only to its own ``viewer``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from updown_env.rules import (
    DIRECTIONS,
    HAND_SIZE,
    LOST,
    NO_CARD,
    NO_TRICK,
    POT,
    SUIT_NAMES,
    UP,
    Phase,
    State,
    card_suit,
    card_value,
    cards_of,
    own_suits,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

_FACES = {11: "J", 12: "Q"}


def card_text(card: int) -> str:
    """Short name of a card id: value (J, Q for 11, 12) and suit letter, e.g. ``QH``."""
    value = card_value(card)
    return f"{_FACES.get(value, value)}{SUIT_NAMES[card_suit(card)][0].upper()}"


def to_text(state: State, viewer: int | None = None) -> str:
    """Rules in force, whose turn, the last trick, tricks and pot; ``viewer``'s hand if given."""
    n = state.num_players
    size = HAND_SIZE[n]
    leading = state.leader if state.phase is not Phase.GAME_OVER else -1
    trick = min(state.played[0].bit_count() + 1, size)
    lines = [
        f"Up & Down, {n} players: round {state.round + 1}/{state.num_rounds}, trick {trick}/{size}",
        f"  Rules: {'UP' if state.side == UP else 'DOWN'}, trump value {state.trump}",
        "  Suits: "
        + ", ".join(
            f"player_{s} {SUIT_NAMES[suit]}{' (leader)' if s == leading else ''}"
            for s, suit in enumerate(own_suits(state))
        ),
        f"  {_turn(state)}",
        f"  Last trick: {_last_trick(state)}",
        "  Tricks: "
        + ", ".join(f"player_{s} {t}" for s, t in enumerate(state.tricks))
        + f"; pot {state.pot}; lost {state.lost}",
    ]
    if viewer is not None:
        hand = " ".join(card_text(c) for c in cards_of(state.hands[viewer]))
        lines.append(f"  Hand of player_{viewer}: {hand or '-'}")
        if state.pending[viewer] != NO_CARD:
            lines.append(f"  Chosen by player_{viewer}: {card_text(state.pending[viewer])}")
    return "\n".join(lines)


def _turn(state: State) -> str:
    if state.phase is Phase.GAME_OVER:
        return "Game over"
    if state.phase is Phase.CHANGE:
        return f"player_{state.to_play} (leader) changes the rules"
    chosen = [f"player_{s}" for s, c in enumerate(state.pending) if c != NO_CARD]
    return f"player_{state.to_play} chooses a card; chosen: {', '.join(chosen) or '-'}"


def _last_trick(state: State) -> str:
    if state.last_result == NO_TRICK:
        return "-"
    cards = ", ".join(f"player_{s} {card_text(c)}" for s, c in enumerate(state.last_trick))
    if state.last_result == POT:
        return f"{cards} -> no winner, into the pot"
    if state.last_result == LOST:
        return f"{cards} -> no winner, the pot is lost"
    return f"{cards} -> player_{state.last_result} wins"


_SYMBOLS = ("\u2663", "\u2660", "\u2665", "\u2666")  # clubs, spades, hearts, diamonds
_SUIT_COLOURS = ("black", "black", "red", "red")
# Directions 0..3 clockwise seen from above, direction 0 at the bottom: unit vectors.
_COMPASS = ((0, -1), (-1, 0), (0, 1), (1, 0))


def _card(ax: Axes, x: float, y: float, card: int, edge: str = "k", scale: float = 1.0) -> None:
    from matplotlib.patches import FancyBboxPatch

    w, h = 0.42 * scale, 0.6 * scale
    box = FancyBboxPatch((x - w / 2, y - h / 2), w, h, "round,pad=0.02", fc="white", ec=edge)
    box.set_linewidth(2.5 if edge != "k" else 1)
    ax.add_patch(box)
    suit, value = card_suit(card), card_value(card)
    label = f"{_FACES.get(value, value)}\n{_SYMBOLS[suit]}"
    ax.text(x, y, label, ha="center", va="center", color=_SUIT_COLOURS[suit], fontsize=9 * scale)


def draw(state: State, viewer: int | None = None, ax: Axes | None = None) -> Figure:
    """The table from above: the U&D card (side, suit facing each direction), the trump value,
    each seat with its tricks and its card of the last trick (the winner's in green), and
    ``viewer``'s hand along the bottom."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    if ax is None:
        ax = Figure(figsize=(6, 6.4)).subplots()
    ax.add_patch(Rectangle((-0.85, -0.85), 1.7, 1.7, fc="#fff3c4", ec="k", lw=1.5))
    up = state.side == UP
    ax.text(0, 0, ("\u2191 UP" if up else "\u2193 DOWN"), ha="center", va="center", fontsize=11)
    for d, (dx, dy) in enumerate(_COMPASS):
        suit = (d + state.orientation) % 4
        ax.text(0.65 * dx, 0.65 * dy, _SYMBOLS[suit], ha="center", va="center", fontsize=16,
                color=_SUIT_COLOURS[suit])  # fmt: skip
    leading = state.leader if state.phase is not Phase.GAME_OVER else -1
    hands = [h.bit_count() for h in state.hands]
    for seat, d in enumerate(DIRECTIONS[state.num_players]):
        dx, dy = _COMPASS[d]
        mark = ">" if seat == state.to_play else ""
        lead = " (leader)" if seat == leading else ""
        label = f"{mark}player_{seat}{lead}\n{state.tricks[seat]} tricks, {hands[seat]} cards"
        ax.text(2.3 * dx, 2.3 * dy, label, ha="center", va="center", fontsize=9)
        if state.last_result != NO_TRICK:
            won = state.last_result == seat
            _card(ax, 1.4 * dx, 1.4 * dy, state.last_trick[seat], "green" if won else "k")
    pot = f"pot {state.pot}" + (", last trick into the pot" if state.last_result == POT else "")
    ax.text(-2.9, 2.9, f"trump value {state.trump}", fontsize=11, va="top")
    ax.text(2.9, 2.9, pot, fontsize=9, va="top", ha="right")
    if viewer is not None:
        cards = cards_of(state.hands[viewer])
        ax.text(-2.9, -2.85, f"hand of\nplayer_{viewer}", fontsize=8, va="center")
        for i, card in enumerate(cards):
            _card(ax, -1.9 + 0.36 * i, -2.85, card, scale=0.8)
    trick = min(state.played[0].bit_count() + 1, HAND_SIZE[state.num_players])
    ax.set_title(
        f"Up & Down: round {state.round + 1}/{state.num_rounds}, trick {trick}, {_turn(state)}",
        fontsize=9,
    )
    ax.set_xlim(-3, 3)
    ax.set_ylim(-3.3, 3)
    ax.set_aspect("equal")
    ax.set_axis_off()
    return ax.figure
