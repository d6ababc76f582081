"""Named slices of a flat float32 vector: how observations and states are laid out.

A :class:`Layout` is declared once per game as a list of fields ``(name, shape, high)``. It
gives each field a slice of one flat vector, the bounds for a gymnasium ``Box``, writable
views for encoders, and :meth:`Layout.decode` so a user can read an observation by name.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class Layout:
    """Fields of a flat float32 vector, in order, each with a shape and an upper bound."""

    def __init__(
        self, fields: Sequence[tuple[str, int | tuple[int, ...], float]], low: float = 0.0
    ):
        self.fields = tuple(
            (name, (shape,) if isinstance(shape, int) else tuple(shape), float(high))
            for name, shape, high in fields
        )
        self.slices: dict[str, slice] = {}
        self.shapes: dict[str, tuple[int, ...]] = {}
        start = 0
        highs = []
        for name, shape, high in self.fields:
            if name in self.slices:
                raise ValueError(f"field {name!r} declared twice")
            size = int(np.prod(shape))
            self.slices[name] = slice(start, start + size)
            self.shapes[name] = shape
            highs.append(np.full(size, high, dtype=np.float32))
            start += size
        self.size = start
        self.high = np.concatenate(highs) if highs else np.zeros(0, np.float32)
        self.low = np.full(self.size, low, dtype=np.float32)

    def __len__(self) -> int:
        return self.size

    def zeros(self) -> np.ndarray:
        """A new all-zero vector of this layout."""
        return np.zeros(self.size, dtype=np.float32)

    def views(self, vec: np.ndarray) -> dict[str, np.ndarray]:
        """Writable views of ``vec``, one per field, in the field's shape."""
        return {name: vec[self.slices[name]].reshape(self.shapes[name]) for name in self.slices}

    def decode(self, vec: np.ndarray) -> dict[str, np.ndarray]:
        """Copies of each field of ``vec`` by name (for reading an observation)."""
        vec = np.asarray(vec)
        if vec.shape != (self.size,):
            raise ValueError(f"expected a vector of length {self.size}, got shape {vec.shape}")
        return {name: v.copy() for name, v in self.views(vec).items()}

    def table(self) -> str:
        """A Markdown table of the fields: index range, name, shape (for docs)."""
        rows = ["| index | field | shape |", "|---|---|---|"]
        for name, shape, _ in self.fields:
            s = self.slices[name]
            rows.append(f"| {s.start}–{s.stop - 1} | `{name}` | {shape} |")
        return "\n".join(rows)
