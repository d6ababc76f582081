"""Named fields of a flat float32 vector: the one place that knows position *and* scale.

A :class:`Layout` is declared once per game as a list of :class:`Field`. Each field has a
shape and a raw range ``low..high``; the vector stores ``(raw - low) / (high - low)``, so every
entry of a valid observation lies in [0, 1] and a network sees comparable magnitudes. Encoders
write **raw** values (counts, seats, one-hots) at ``layout.at[name] + offset`` and call
:meth:`Layout.pack` once: one scatter, then one affine map. Readers get raw values back by name
with ``layout.decode(vec, raw=True)``; docs get their index table from :meth:`Layout.table`.

A bound may depend on the game's options (the number of rounds, the deck): it is then a
callable of the layout's *parameters* (keyword arguments given to ``pack``, ``affine`` and
``decode``), and ``range_doc`` says in words what it is. Fields with ``seats=True`` have one
row per seat, observer first; rows of seats not in play (``num_players`` parameter) stay 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

Bound = float | Callable[..., Any]


class Field(NamedTuple):
    """One named part of a layout; ``high``/``low`` are the raw range (numbers or callables)."""

    name: str
    shape: int | tuple[int, ...]
    high: Bound = 1.0
    doc: str = ""
    low: Bound = 0.0
    seats: bool = False  # first axis is the seat, observer first
    range_doc: str = ""  # the raw range in words, for bounds that depend on the options


class Layout:
    """Fields of a flat float32 vector, in order; see the module docstring."""

    def __init__(self, fields: Sequence[Field | tuple]):
        self.fields = tuple(Field(*f) for f in fields)
        self.slices: dict[str, slice] = {}
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.at: dict[str, int] = {}  # start index of each field
        start = 0
        for f in self.fields:
            if f.name in self.slices:
                raise ValueError(f"field {f.name!r} declared twice")
            shape = (f.shape,) if isinstance(f.shape, int) else tuple(f.shape)
            size = int(np.prod(shape))
            self.slices[f.name] = slice(start, start + size)
            self.shapes[f.name] = shape
            self.at[f.name] = start
            start += size
        self.size = start
        self.low = np.zeros(self.size, dtype=np.float32)
        self.high = np.ones(self.size, dtype=np.float32)
        self._affine = lru_cache(maxsize=64)(self._make_affine)

    def __len__(self) -> int:
        return self.size

    # -- writing -------------------------------------------------------------------------
    def affine(self, **params: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(scale, shift)`` float32 vectors: stored = raw * scale + shift, for ``params``."""
        return self._affine(tuple(sorted(params.items())))

    def _make_affine(self, key: tuple) -> tuple[np.ndarray, np.ndarray]:
        params = dict(key)
        scale = np.ones(self.size, dtype=np.float32)
        shift = np.zeros(self.size, dtype=np.float32)
        for f in self.fields:
            shape = self.shapes[f.name]
            low = np.broadcast_to(_bound(f.low, params), shape).astype(np.float64)
            high = np.broadcast_to(_bound(f.high, params), shape).astype(np.float64)
            if np.any(high <= low):
                raise ValueError(f"field {f.name!r}: high must exceed low for {params}")
            s = (1.0 / (high - low)).astype(np.float32)
            b = (-low * s).astype(np.float32)
            if f.seats and "num_players" in params:
                b[params["num_players"] :] = 0  # seats not in play stay 0
            scale[self.slices[f.name]] = s.ravel()
            shift[self.slices[f.name]] = b.ravel()
        scale.flags.writeable = False
        shift.flags.writeable = False
        return scale, shift

    def pack(self, idx: Sequence[int], raw: Sequence[float], **params: Any) -> np.ndarray:
        """A new vector with raw values ``raw`` at indices ``idx`` (0 elsewhere), scaled."""
        vec = np.zeros(self.size, dtype=np.float32)
        vec[idx] = raw
        return self.scale(vec, **params)

    def scale(self, raw: np.ndarray, **params: Any) -> np.ndarray:
        """Raw vector(s) ``(..., size)`` to stored values, in place where ``raw`` is float32."""
        scale, shift = self.affine(**params)
        out = raw if raw.dtype == np.float32 else raw.astype(np.float32)
        out *= scale
        out += shift
        return out

    # -- reading -------------------------------------------------------------------------
    def views(self, vec: np.ndarray) -> dict[str, np.ndarray]:
        """Views of ``vec`` (``(..., size)``), one per field, in the field's shape."""
        lead = vec.shape[:-1]
        return {n: vec[..., s].reshape(lead + self.shapes[n]) for n, s in self.slices.items()}

    def decode(self, vec: np.ndarray, raw: bool = False, **params: Any) -> dict[str, np.ndarray]:
        """Each field of ``vec`` by name: stored values, or raw values with ``raw=True``.

        Raw values are float64, rounded to integers where the stored value is within float32
        rounding of one (every raw value of these games is a count, a seat or a flag).
        """
        vec = np.asarray(vec)
        if vec.shape[-1:] != (self.size,):
            raise ValueError(f"expected vectors of length {self.size}, got shape {vec.shape}")
        if raw:
            scale, shift = self.affine(**params)
            vec = (vec.astype(np.float64) - shift) / scale
            near = np.rint(vec)
            vec = np.where(np.abs(vec - near) < 1e-3, near, vec)
        return {n: np.array(v) for n, v in self.views(vec).items()}

    # -- docs ----------------------------------------------------------------------------
    def starts_with(self, other: Layout) -> bool:
        """Whether this layout's fields begin with all of ``other``'s, in order."""
        return self.fields[: len(other.fields)] == other.fields

    def table(self, after: Layout | None = None) -> str:
        """The index table of the docs (Markdown): index range, field, shape, raw range, content.

        ``after``: a layout tabled just before, which this one starts with; its fields become
        one row instead of being listed again.
        """
        rows = ["| index | field | shape | raw range | content |", "|---|---|---|---|---|"]
        fields = self.fields
        if after is not None and self.starts_with(after):
            rows.append(
                f"| 0–{after.size - 1} | (the table above) | {after.size} | | "
                "every field of the table above, in its order |"
            )
            fields = fields[len(after.fields) :]
        for f in fields:
            s = self.slices[f.name]
            span = f"{s.start}" if s.stop - s.start == 1 else f"{s.start}–{s.stop - 1}"
            shape = self.shapes[f.name]
            shown = str(shape[0]) if len(shape) == 1 else "×".join(map(str, shape))
            rows.append(f"| {span} | `{f.name}` | {shown} | {_range_text(f)} | {f.doc} |")
        return "\n".join(rows)


def _bound(bound: Bound, params: dict[str, Any]) -> Any:
    return bound(**params) if callable(bound) else bound


def _range_text(f: Field) -> str:
    if f.range_doc:
        return f.range_doc
    if callable(f.low) or callable(f.high):
        raise ValueError(f"field {f.name!r}: a bound that depends on the options needs range_doc")
    low, high = (int(x) if float(x).is_integer() else x for x in (f.low, f.high))
    return "0/1" if (low, high) == (0, 1) else f"{low}–{high}"
