"""Sparse matrices over any number type: exact sympy values on the exact path, floats on the numeric one.

Every equivariance constraint is a sum of Kronecker products of representation matrices.  Writing that
formula once, over this small type, lets the exact and the numeric path share it: only the entries differ.

>>> S = Sparse.from_dense([[0, 1], [1, 0]])
>>> (S.kron(Sparse.identity(2)) - Sparse.identity(4)).rows()
[{0: -1, 2: 1}, {1: -1, 3: 1}, {0: 1, 2: -1}, {1: 1, 3: -1}]
>>> S.map(float).to_dense()
array([[0., 1.],
       [1., 0.]])
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import scipy.sparse
from numpy.typing import ArrayLike, DTypeLike

from ..exact import to_exact


class Sparse:
    """An immutable (rows, cols) matrix stored as ``{(r, c): value}`` without zeros."""

    __slots__ = ("shape", "entries")

    def __init__(self, shape: Iterable[int], entries: Mapping[tuple[int, int], Any]) -> None:
        self.shape = tuple(shape)
        self.entries = {key: value for key, value in entries.items() if value != 0}

    # ------------------------------------------------------------------ constructors
    @classmethod
    def identity(cls, n: int) -> "Sparse":
        return cls((n, n), {(i, i): 1 for i in range(n)})

    @classmethod
    def zeros(cls, n: int) -> "Sparse":
        return cls((n, n), {})

    @classmethod
    def from_dense(cls, matrix: ArrayLike, argument: str = "matrix") -> "Sparse":
        """From a 2-D array-like of exact numbers (entries converted with `algebra.exact.to_exact`)."""
        array = np.array(matrix, dtype=object)
        if array.ndim != 2:
            raise ValueError(f"{argument}: expected a 2-D matrix, got shape {array.shape}")
        return cls(array.shape, {(r, c): to_exact(v, f"{argument}[{r}, {c}]")
                                 for (r, c), v in np.ndenumerate(array) if v != 0})

    @classmethod
    def from_floats(cls, array: np.ndarray) -> "Sparse":
        """From a 2-D float array (the numeric path)."""
        return cls(array.shape, {(int(r), int(c)): float(array[r, c]) for r, c in zip(*np.nonzero(array))})

    @classmethod
    def vstack(cls, blocks: Iterable[Sparse], ncols: int) -> "Sparse":
        entries: dict[tuple[int, int], Any] = {}
        offset = 0
        for block in blocks:
            entries.update({(r + offset, c): v for (r, c), v in block.entries.items()})
            offset += block.shape[0]
        return cls((offset, ncols), entries)

    # ------------------------------------------------------------------ arithmetic
    def map(self, convert: Callable[[Any], Any]) -> "Sparse":
        """The same matrix with every entry passed through `convert` (e.g. ``float``)."""
        return Sparse(self.shape, {key: convert(v) for key, v in self.entries.items()})

    @property
    def T(self) -> "Sparse":
        return Sparse(self.shape[::-1], {(c, r): v for (r, c), v in self.entries.items()})

    def kron(self, other: "Sparse") -> "Sparse":
        rows, cols = other.shape
        return Sparse((self.shape[0] * rows, self.shape[1] * cols),
                      {(r1 * rows + r2, c1 * cols + c2): v1 * v2
                       for (r1, c1), v1 in self.entries.items() for (r2, c2), v2 in other.entries.items()})

    def __add__(self, other: "Sparse") -> "Sparse":
        entries = dict(self.entries)
        for key, v in other.entries.items():
            entries[key] = entries.get(key, 0) + v
        return Sparse(self.shape, entries)

    def __neg__(self) -> "Sparse":
        return Sparse(self.shape, {key: -v for key, v in self.entries.items()})

    def __sub__(self, other: "Sparse") -> "Sparse":
        return self + (-other)

    def __matmul__(self, other: "Sparse") -> "Sparse":
        by_row: dict[int, list[tuple[int, Any]]] = {}
        for (r, c), v in other.entries.items():
            by_row.setdefault(r, []).append((c, v))
        entries: dict[tuple[int, int], Any] = {}
        for (r, k), v1 in self.entries.items():
            for c, v2 in by_row.get(k, ()):
                entries[r, c] = entries.get((r, c), 0) + v1 * v2
        return Sparse((self.shape[0], other.shape[1]), entries)

    # ------------------------------------------------------------------ export
    def rows(self) -> list[dict[int, Any]]:
        """The nonzero rows as ``{column: value}`` dicts, in row order (the input of `algebra.linear`)."""
        rows: dict[int, dict[int, Any]] = {}
        for (r, c), v in sorted(self.entries.items()):
            rows.setdefault(r, {})[c] = v
        return list(rows.values())

    def to_scipy(self) -> scipy.sparse.csr_array:
        keys = list(self.entries)
        data = np.array([float(self.entries[key]) for key in keys], dtype=float)
        index = np.array(keys, dtype=np.int64).reshape(-1, 2)
        return scipy.sparse.csr_array((data, (index[:, 0], index[:, 1])), shape=self.shape)

    def to_dense(self, dtype: DTypeLike = float) -> np.ndarray:
        array = np.zeros(self.shape, dtype=dtype)
        for key, v in self.entries.items():
            array[key] = v
        return array

    def __repr__(self) -> str:
        return f"<Sparse {self.shape[0]}x{self.shape[1]}, nnz {len(self.entries)}>"
