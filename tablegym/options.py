"""Validation of game options with errors that name the option and what it allows."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def check_options(given: Mapping[str, Any], allowed: Iterable[str]) -> None:
    """Raise ValueError if ``given`` holds a key that is not an allowed option name."""
    allowed = tuple(allowed)
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ValueError(f"unknown option {unknown[0]!r}; allowed options: {', '.join(allowed)}")


def check_choice(name: str, value: Any, allowed: Iterable[Any]) -> Any:
    """Return ``value`` if it is one of ``allowed``, else raise ValueError naming both."""
    allowed = tuple(allowed)
    # bool is an int subclass: True must not pass for 1.
    if isinstance(value, bool) and not any(isinstance(a, bool) for a in allowed):
        ok = False
    else:
        ok = any(value == a and type(value) is type(a) or value is a for a in allowed)
    if not ok:
        shown = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"{name} must be one of {shown}; got {value!r}")
    return value


def check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    """Return ``value`` if it is an int in [low, high] (no upper bound if high is None)."""
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if not is_int or value < low or (high is not None and value > high):
        bound = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"
        raise ValueError(f"{name} must be {bound}; got {value!r}")
    return value
