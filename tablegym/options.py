"""Validation of game options with errors that name the option and what it allows."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from numbers import Integral
from typing import Any

# Option names of earlier releases: refused with the name that replaced them.
RENAMED = {"rounds": "num_rounds", "reward_mode": "reward", "players": "num_players"}


def check_options(given: Mapping[str, Any], allowed: Iterable[str]) -> None:
    """Raise ValueError if ``given`` holds a key that is not an allowed option name."""
    allowed = tuple(allowed)
    unknown = sorted(set(given) - set(allowed))
    for name in unknown:
        if RENAMED.get(name) in allowed:
            raise ValueError(f"option {name!r} is now called {RENAMED[name]!r}")
    if unknown:
        raise ValueError(f"unknown option {unknown[0]!r}; allowed options: {', '.join(allowed)}")


def as_int(value: Any) -> Any:
    """``value`` as a plain int if it is an integer of any kind (numpy's too) but not a bool."""
    if isinstance(value, Integral) and not isinstance(value, bool):
        return int(value)
    return value


def check_choice(name: str, value: Any, allowed: Iterable[Any]) -> Any:
    """Return ``value`` if it is one of ``allowed``, else raise ValueError naming both."""
    allowed = tuple(allowed)
    value = as_int(value)
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
    value = as_int(value)
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if not is_int or value < low or (high is not None and value > high):
        bound = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"
        raise ValueError(f"{name} must be {bound}; got {value!r}")
    return value


_WORDS = {"true": True, "false": False, "none": None, "null": None}


def parse_value(text: str) -> Any:
    """A ``KEY=VALUE`` value: an int, a float, true/false, none, or else the text itself."""
    word = _WORDS.get(text.strip().lower(), text)
    if word is not text:
        return word
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_key_value(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` -> ``(key, parse_value(value))``; ValueError naming the form otherwise."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise ValueError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), parse_value(value.strip())


def parse_options(items: Iterable[str]) -> dict[str, Any]:
    """Several ``KEY=VALUE`` items as a dict (a later key wins)."""
    return dict(parse_key_value(item) for item in items)
