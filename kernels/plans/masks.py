"""`Mask`: which (query, key) pairs a masked reduction or softmax keeps, as a rule that fits any length or as a
fixed array.

A rule (every pair, causal: key <= query, a band |query - key| <= r) is materialised for the sizes of a call only,
in a bounded cache, so a plan that uses one serves every sequence length; a fixed array pins its sizes.  Masked
entries are left out (``where``), never multiplied by zero: a NaN or an infinity at a masked entry reaches no
output.

>>> Mask.causal().array(3, 3).astype(int)
array([[1, 0, 0],
       [1, 1, 0],
       [1, 1, 1]])
>>> Mask.band(1).array(2, 4).astype(int)
array([[1, 1, 0, 0],
       [1, 1, 1, 0]])
>>> Mask.fixed([[1, 0], [1, 1]]) == Mask.causal(), Mask.causal().generic, Mask.fixed([[1]]).generic
(False, True, False)
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ...algebra.algebra import check_choice, check_count
from ..native import memory

#: Materialised rule masks kept (per kind, radius and size).
CACHED_MASKS = 16
#: The kinds of mask: three rules and a fixed array.
KINDS = ("full", "causal", "band", "fixed")


class Mask:
    """A 0/1 pattern over (query, key) pairs: ``Mask.full()``, ``Mask.causal()``, ``Mask.band(radius)`` or
    ``Mask.fixed(array)``."""

    __slots__ = ("kind", "radius", "_array")

    def __init__(self, kind: str, radius: float | None = None, array: np.ndarray | None = None) -> None:
        """`kind` one of `KINDS`; a band takes its `radius` and a fixed mask its `array`, no other kind either."""
        self.kind = check_choice(kind, KINDS, "kind")
        if (radius is not None) != (kind == "band"):
            raise ValueError(f"radius: expected a radius for kind 'band' and None for the others, got {radius!r:.60} "
                             f"for kind {kind!r}")
        if (array is not None) != (kind == "fixed"):
            raise ValueError(f"array: expected an array for kind 'fixed' and None for the others, got "
                             f"{type(array).__name__} for kind {kind!r}")
        self.radius = None if radius is None else _radius(radius)
        self._array = None if array is None else _fixed_array(array, "array")

    @classmethod
    def full(cls) -> "Mask":
        """Every pair."""
        return cls("full")

    @classmethod
    def causal(cls) -> "Mask":
        """Pairs with key <= query."""
        return cls("causal")

    @classmethod
    def band(cls, radius: float | np.integer[Any] | np.floating[Any]) -> "Mask":
        """Pairs with ``|query - key| <= radius``."""
        return cls("band", _radius(radius))

    @classmethod
    def fixed(cls, array: Any, argument: str = "mask") -> "Mask":
        """A given 0/1 array of shape (queries, keys); errors name `argument`."""
        return cls("fixed", array=_fixed_array(array, argument))

    @property
    def generic(self) -> bool:
        """True for a rule (it fits any sizes)."""
        return self.kind != "fixed"

    @property
    def shape(self) -> tuple[int, ...] | None:
        """(queries, keys) of a fixed mask, None for a rule."""
        return None if self._array is None else self._array.shape

    def array(self, rows: int, columns: int) -> np.ndarray:
        """The bool (rows, columns) array (read-only; rules cached per size)."""
        rows, columns = check_count(rows, "rows", minimum=0), check_count(columns, "columns", minimum=0)
        if self._array is not None:
            if self._array.shape != (rows, columns):
                raise ValueError(f"mask: this fixed mask has shape {self._array.shape}, the call needs "
                                 f"({rows}, {columns})")
            return self._array
        return _rule_array(self.kind, self.radius, int(rows), int(columns))

    def _key(self) -> tuple[str, float | None, bytes | None, tuple[int, ...] | None]:
        return (self.kind, self.radius, None if self._array is None else self._array.tobytes(), self.shape)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mask) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        if self.kind == "band":
            return f"Mask.band({self.radius:g})"
        return f"Mask.fixed(shape {self.shape})" if self.kind == "fixed" else f"Mask.{self.kind}()"


def _radius(radius: object) -> float:
    """A band's radius: a non-negative real number (inf keeps every pair), or a ValueError naming ``radius``."""
    if isinstance(radius, (bool, np.bool_)) or not isinstance(radius, (int, float, np.integer, np.floating)) or \
            not radius >= 0:
        raise ValueError(f"radius: expected a non-negative number, got {radius!r:.60}")
    return float(radius)


def _fixed_array(array: Any, argument: str) -> np.ndarray:
    """A 0/1 (or bool) 2-D array as a read-only bool array, or an error naming `argument`."""
    if isinstance(array, np.ndarray) and array.dtype == bool and array.ndim == 2 and not array.flags.writeable:
        return array                                     # already checked
    try:
        values = np.asarray(array, dtype=float)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{argument}: expected a 2-D array of zeros and ones, got {type(array).__name__} "
                        f"({error})") from None
    if values.ndim != 2:
        raise ValueError(f"{argument}: expected a 2-D array (query, key), got shape {values.shape}")
    if not np.all((values == 0) | (values == 1)):
        raise ValueError(f"{argument}: expected only zeros and ones")
    values = values.astype(bool)
    values.setflags(write=False)
    return values


@functools.lru_cache(maxsize=CACHED_MASKS)
def _rule_array(kind: str, radius: float | None, rows: int, columns: int) -> np.ndarray:
    if rows * columns > memory.limit():
        raise memory.MemoryLimitError(f"mask: a {kind} mask over {rows:,} x {columns:,} positions needs "
                                      f"{memory.format_bytes(rows * columns)}, more than kernels.MEMORY_LIMIT = "
                                      f"{memory.format_bytes(memory.limit())}; shorten the sequences")
    query, key = np.arange(rows)[:, None], np.arange(columns)[None, :]
    if kind == "full":
        array = np.ones((rows, columns), dtype=bool)
    elif kind == "causal":
        array = key <= query
    else:
        array = np.abs(query - key) <= radius
    array.setflags(write=False)
    return array
