"""Text rendering of an Up & Down position. Shows a hand only to its own ``viewer``."""

from __future__ import annotations

from updown_env.rules import (
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
