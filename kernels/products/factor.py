"""`Factor`: one bilinear factor as the strategies see it: its shape, its structure, and its numeric constants
built only when a strategy needs them.

A factor maps x (dimension d1) and y (d2) to z (d3): z_k = sum lam[i, j, k] x_i y_j.  An algebra's factor has
d1 = d2 = d3; a general bilinear map need not.  An algebra says where its nonzero constants are by a rule
(`algebra.Algebra.sparsity`), so the structure queries the strategies choose by (diagonal, cyclic, graded, blocks,
one nonzero per pair) cost nothing at any size; the sparse float constants (``indices``, ``values``) are read from the algebra on first
use, and only by strategies that need them.

>>> from product_interactions.algebra import clifford, diagonal, position, translation
>>> f = Factor.from_algebra(clifford(0, 1))
>>> f.shape, f.nnz, f.one_per_pair(), f.diagonal() is None
((2, 2, 2), 4, True, True)
>>> Factor.from_algebra(diagonal(3)).diagonal()
array([1., 1., 1.])
>>> huge = Factor.from_algebra(position(10**9))          # no table is built
>>> huge.is_unit_diagonal(), huge.nnz
(True, 1000000000)
>>> T = Factor.from_algebra(translation(5))
>>> T.cyclic_signs(), T.permuted((1, 2, 0)).cyclic_signs()
((1, 1), (-1, 1))
"""
from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from numbers import Number
from typing import TYPE_CHECKING, Any

import numpy as np
import sympy
from numpy.typing import ArrayLike, DTypeLike

from ...algebra import Algebra

if TYPE_CHECKING:
    from ...algebra.so3.path_algebra import Block

#: Factors whose table would exceed this many nonzeros are never materialised by a strategy.
TABLE_LIMIT = 2**22


def _to_float(value: Any, where: str) -> float:
    try:
        result = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{where}: expected a number, got {type(value).__name__} {value!r} (symbolic "
                        f"coefficients must be substituted before lowering to a kernel)") from None
    if isinstance(value, complex) or isinstance(value, sympy.Expr) and value.is_real is False:
        raise TypeError(f"{where}: expected a real number, got {value!r}")
    if not np.isfinite(result):
        raise ValueError(f"{where}: expected a finite number, got {value!r}")
    return result


@functools.lru_cache(maxsize=128)
def _from_algebra(algebra: Algebra, name: str) -> Factor:
    return Factor((algebra.dim,) * 3, name, algebra=algebra, sparsity=algebra.sparsity())


#: The rules a factor's `sparsity` may name (see `Factor`, and `algebra.Algebra.sparsity`).
SPARSITIES = ("diagonal", "cyclic", "truncated", "graded", "one per pair", "blocks")


def _check_shape(shape: object) -> tuple[int, int, int]:
    """Three positive ints (d1, d2, d3), or an error naming ``shape``."""
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Iterable):
        raise TypeError(f"shape: expected three positive ints (d1, d2, d3), got {type(shape).__name__}")
    found = tuple(shape)
    if len(found) != 3 or not all(isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_))
                                  for n in found):
        raise TypeError(f"shape: expected three positive ints (d1, d2, d3), got {found!r:.60}")
    if min(found) < 1:
        raise ValueError(f"shape: expected three positive ints (d1, d2, d3), got {found!r:.60}")
    return tuple(int(n) for n in found)  # type: ignore[return-value]  # three, checked above


def _check_table(indices: ArrayLike, values: ArrayLike | None, shape: tuple[int, int, int]
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(indices (nnz, 3) sorted and distinct within `shape`, finite nonzero float64 values (nnz,); zero entries
    dropped), or an error naming the argument.  Sorting here is what every constructor relies on."""
    try:
        index_array = np.asarray(indices)
        value_array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(f"indices, values: expected an (nnz, 3) int array and nnz floats ({error})") from None
    if index_array.dtype.kind not in "iu" and index_array.size or index_array.ndim != 2 or index_array.shape[1] != 3:
        raise ValueError(f"indices: expected an (nnz, 3) array of ints, got shape {index_array.shape} and dtype "
                         f"{index_array.dtype}")
    index_array = index_array.astype(np.int64)
    if value_array.shape != (len(index_array),) or not np.all(np.isfinite(value_array)):
        raise ValueError(f"values: expected {len(index_array)} finite floats (one per row of indices), got shape "
                         f"{value_array.shape}")
    if len(index_array) and (index_array.min() < 0 or np.any(index_array.max(axis=0) >= shape)):
        raise ValueError(f"indices: expected rows (i, j, k) within shape {shape}")
    order = np.lexsort(index_array.T[::-1])
    index_array, value_array = index_array[order], value_array[order]
    if len(index_array) > 1 and not np.all(np.any(np.diff(index_array, axis=0) != 0, axis=1)):
        raise ValueError("indices: expected distinct rows (i, j, k), got a repeated one")
    nonzero = value_array != 0                                         # a zero entry is no structure constant
    return index_array[nonzero], value_array[nonzero]


class Factor:
    """Sparse float64 structure constants: ``indices`` (nnz, 3) sorted rows (i, j, k), ``values`` (nnz,), built
    lazily from `algebra` when not given; `sparsity` is where the nonzeros are, by a rule known without them (the
    algebra's `sparsity()`, or a transposed one's):

    * ``("diagonal",)``: lam[i, j, k] = [i == j == k] (coefficients 1);
    * ``("cyclic", s1, s2)``: lam[i, j, k] = [k = s1 i + s2 j mod n];
    * ``("truncated",)``: lam[i, j, k] = [k = i + j < n];
    * ``("graded", width, degree)``: the truncated tensor algebra, words concatenated;
    * ``("one per pair",)``: every e_i e_j has at most one nonzero coefficient (Clifford, matrix units);
    * ``("blocks",)``: an SO(3) path algebra, `blocks()` gives its dense blocks.
    """

    def __init__(self, shape: Iterable[int], name: str, indices: ArrayLike | None = None,
                 values: ArrayLike | None = None, algebra: Algebra | None = None,
                 sparsity: tuple[Any, ...] | None = None) -> None:
        self.shape = _check_shape(shape)
        if not isinstance(name, str):
            raise TypeError(f"name: expected a string, got {type(name).__name__}")
        if sparsity is not None and (not isinstance(sparsity, tuple) or not sparsity or sparsity[0] not in SPARSITIES):
            raise ValueError(f"sparsity: expected None or a tuple starting with one of {', '.join(SPARSITIES)}, got "
                             f"{sparsity!r:.60}")
        if algebra is not None and (not isinstance(algebra, Algebra) or self.shape != (algebra.dim,) * 3):
            raise ValueError(f"algebra: expected an Algebra of dimension {self.shape[0]} matching shape {self.shape}, "
                             f"got {algebra!r:.60}")
        if indices is None and (values is not None or algebra is None and sparsity is None):
            raise ValueError("indices: expected the nonzeros (indices and values), an algebra or a sparsity rule")
        self.name, self.algebra, self.sparsity = name, algebra, sparsity
        self._table: tuple[np.ndarray, np.ndarray] | None = None if indices is None else \
            _check_table(indices, values, self.shape)

    @classmethod
    def from_algebra(cls, algebra: Algebra) -> Factor:
        """The factor of a plain algebra (cached per algebra and name)."""
        return _from_algebra(algebra, algebra.name)

    @classmethod
    def from_array(cls, lam: Any, argument: str = "lam") -> Factor:
        """From a dense (d1, d2, d3) array-like of real numbers (floats, ints or exact sympy numbers)."""
        if isinstance(lam, (str, bytes)):
            raise TypeError(f"{argument}: expected a (d1, d2, d3) array of real numbers, got {type(lam).__name__}")
        if isinstance(lam, sympy.NDimArray):
            lam = lam.tolist()
        try:
            array = np.asarray(lam)
        except (ValueError, TypeError) as error:
            raise ValueError(f"{argument}: expected a (d1, d2, d3) array, got a ragged or invalid input ({error})")
        if array.ndim != 3 or 0 in array.shape:
            raise ValueError(f"{argument}: expected a (d1, d2, d3) array with positive sizes, got shape "
                             f"{array.shape}")
        if array.dtype.kind in "fiu":
            floats = array.astype(np.float64)
            if not np.all(np.isfinite(floats)):
                raise ValueError(f"{argument}: expected finite numbers, got inf or nan")
        elif array.dtype.kind == "O" and all(isinstance(v, (Number, sympy.Expr)) for v in array.flat):
            floats = np.array([_to_float(v, f"{argument}[{i}, {j}, {k}]")
                               for (i, j, k), v in np.ndenumerate(array)]).reshape(array.shape)
        else:
            raise TypeError(f"{argument}: expected real numbers (float, int or exact sympy), got dtype {array.dtype}")
        indices = np.argwhere(floats != 0)
        return cls(array.shape, argument, indices, floats[tuple(indices.T)])

    # ------------------------------------------------------------------ data
    def _materialised(self) -> tuple[np.ndarray, np.ndarray]:
        if self._table is None:
            if self.nnz > TABLE_LIMIT:
                raise ValueError(f"{self.name}: {self.nnz:,} nonzero structure constants are more than "
                                 f"kernels.products.factor.TABLE_LIMIT = {TABLE_LIMIT:,}; use a strategy that reads its "
                                 f"sparsity ({self.sparsity[0] if self.sparsity else 'none known'})")
            if self.sparsity and self.sparsity[0] in ("diagonal", "cyclic", "truncated"):
                self._table = self._sparsity_table()
                return self._table
            try:
                indices, values = self.algebra.sparse_structure_constants(  # type: ignore[union-attr]  # no table
                    dtype=float)                                            # and no such rule: an algebra's factor
            except TypeError:                  # a symbolic coefficient: find it, to name it
                indices, exact = self.algebra.sparse_structure_constants(dtype=object)  # type: ignore[union-attr]
                values = [_to_float(c, f"{self.name}: lam[{i}, {j}, {k}]") for (i, j, k), c in zip(indices, exact)]
            self._table = (np.asarray(indices, dtype=np.int64).reshape(-1, 3), np.asarray(values, np.float64))
        return self._table

    def _sparsity_table(self) -> tuple[np.ndarray, np.ndarray]:
        """(indices, values) of a diagonal, cyclic or truncated rule, by index arithmetic."""
        n = self.shape[2]
        if self.sparsity[0] == "diagonal":  # type: ignore[index]  # called only for a factor with a rule
            i: np.ndarray = np.arange(n)
            return np.stack([i, i, i], axis=1), np.ones(n)
        i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        s1, s2 = self.sparsity[1:] if self.sparsity[0] == "cyclic" else (1, 1)  # type: ignore[index]  # as above
        k = s1 * i + s2 * j
        keep = np.ones(k.shape, dtype=bool) if self.sparsity[0] == "cyclic" else (k < n)  # type: ignore[index]
        indices = np.stack([i[keep], j[keep], k[keep] % n], axis=1)
        return indices[np.lexsort(indices.T[::-1])], np.ones(int(keep.sum()))

    @property
    def indices(self) -> np.ndarray:
        """(nnz, 3) rows (i, j, k), sorted."""
        return self._materialised()[0]

    @property
    def values(self) -> np.ndarray:
        """(nnz,) float64 coefficients."""
        return self._materialised()[1]

    @property
    def key(self) -> tuple[tuple[int, ...], bytes, bytes]:
        """A hashable description of the constants (for caches of generated code)."""
        return (self.shape, self.indices.tobytes(), self.values.tobytes())

    @property
    def nnz(self) -> int:
        """The number of nonzero coefficients."""
        if self._table is not None:
            return len(self._table[1])
        if self.algebra is None:                               # a permuted rule
            n = self.shape[2]
            return n if self.sparsity == ("diagonal",) else n * n
        return self.algebra.nnz

    @property
    def density(self) -> float:
        """nnz / (d1 d2 d3)."""
        return self.nnz / float(np.prod(self.shape))

    def dense(self, dtype: DTypeLike) -> np.ndarray:
        """The dense (d1, d2, d3) array in `dtype`."""
        lam = np.zeros(self.shape, dtype=dtype)
        lam[tuple(self.indices.T)] = self.values
        return lam

    def restricted(self, rows: ArrayLike, columns: ArrayLike) -> Factor:
        """The factor restricted to x components `rows` and y components `columns` (renumbered 0..len - 1; z keeps
        its components).  Cyclic and truncated rules are restricted by index arithmetic, without the table."""
        rows, columns = np.asarray(rows, dtype=np.int64), np.asarray(columns, dtype=np.int64)
        if self.sparsity and self.sparsity[0] in ("cyclic", "truncated") and self._table is None:
            n = self.shape[2]
            i, j = np.meshgrid(np.arange(len(rows)), np.arange(len(columns)), indexing="ij")
            s1, s2 = self.sparsity[1:] if self.sparsity[0] == "cyclic" else (1, 1)
            k = s1 * rows[i] + s2 * columns[j]
            keep = np.ones(k.shape, dtype=bool) if self.sparsity[0] == "cyclic" else (k < n)
            indices = np.stack([i[keep], j[keep], k[keep] % n], axis=1)
            return Factor((len(rows), len(columns), n), self.name, indices, np.ones(len(indices)))
        i, j, m = self.indices.T
        row_of = np.full(self.shape[0], -1)
        row_of[rows] = np.arange(len(rows))
        column_of = np.full(self.shape[1], -1)
        column_of[columns] = np.arange(len(columns))
        keep = (row_of[i] >= 0) & (column_of[j] >= 0)
        indices = np.stack([row_of[i[keep]], column_of[j[keep]], m[keep]], axis=1)
        return Factor((len(rows), len(columns), self.shape[2]), self.name, indices, self.values[keep])

    def blocks(self) -> list[Block]:
        """The dense blocks of a ``("blocks",)`` factor (see `algebra.so3.path_algebra`)."""
        return self.algebra.blocks()  # type: ignore[union-attr]  # a ("blocks",) factor's algebra: a PathAlgebra

    def permuted(self, order: Sequence[int]) -> Factor:
        """The factor with its three roles permuted: role r of the result is role ``order[r]`` of this one.

        ``permuted((1, 2, 0))`` maps (y, g) to the x-space: the vector-Jacobian product with respect to x.  A
        diagonal or cyclic rule carries over; other factors are permuted through their table.
        """
        shape = [self.shape[r] for r in order]
        if self.sparsity == ("diagonal",):
            return Factor(shape, self.name, sparsity=self.sparsity)
        if self.sparsity and self.sparsity[0] == "cyclic":
            c = (self.sparsity[1], self.sparsity[2], -1)           # c0 i + c1 j + c2 k = 0 (mod n)
            signs = tuple(-c[order[r]] * c[order[2]] for r in (0, 1))
            return Factor(shape, self.name, sparsity=("cyclic", *signs))
        return Factor(shape, self.name, self.indices[:, list(order)], self.values)

    # ------------------------------------------------------------------ structure
    def is_unit_diagonal(self) -> bool:
        """True when lam[i, j, k] = [i == j == k] exactly (a shared index, no coefficients)."""
        if self.sparsity == ("diagonal",):
            return True
        coefficients = self.diagonal()
        return coefficients is not None and bool(np.all(coefficients == 1))

    def diagonal(self) -> np.ndarray | None:
        """The coefficients c with lam[i, j, k] = c_i [i == j == k], or None when lam is not of that form."""
        if self.sparsity == ("diagonal",):
            return np.ones(self.shape[0])
        if not self.shape[0] == self.shape[1] == self.shape[2] or self.nnz > self.shape[0]:
            return None                                  # a diagonal has at most one nonzero per index
        i, j, k = self.indices.T
        if np.any((i != j) | (j != k)):
            return None
        coefficients = np.zeros(self.shape[0])
        coefficients[i] = self.values
        return coefficients

    def off_diagonal(self) -> tuple[int, ...] | None:
        """The first (i, j, k) with a nonzero coefficient off the diagonal i == j == k, or None."""
        if self.sparsity == ("diagonal",):
            return None
        i, j, k = self.indices.T
        rows = np.flatnonzero((i != j) | (j != k))
        return tuple(int(v) for v in self.indices[rows[0]]) if len(rows) else None

    def shared_pair(self) -> tuple[int, ...] | None:
        """The first (i, j) whose product has two or more nonzero coefficients, or None."""
        if self.sparsity and self.sparsity[0] in ("diagonal", "cyclic", "truncated", "graded", "one per pair"):
            return None
        pairs = self.indices[:, :2]
        repeated = np.flatnonzero(np.all(pairs[1:] == pairs[:-1], axis=1))
        return tuple(int(v) for v in pairs[repeated[0]]) if len(repeated) else None

    def one_per_pair(self) -> bool:
        """True when every e_i e_j has at most one nonzero coefficient (group-like algebras, Clifford)."""
        return self.shared_pair() is None

    def cyclic_signs(self) -> tuple[int, ...] | None:
        """(s1, s2) in {1, -1}^2 when lam[i, j, k] = [k = s1 i + s2 j mod n] for all i, j (a cyclic group
        algebra and its transposes), else None."""
        if self.sparsity is not None:
            return self.sparsity[1:] if self.sparsity[0] == "cyclic" else None
        n = self.shape[0]
        if not n == self.shape[1] == self.shape[2] or self.nnz != n * n or np.any(self.values != 1):
            return None
        i, j, k = self.indices.T
        for signs in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
            if np.array_equal(k, (signs[0] * i + signs[1] * j) % n):
                return signs
        return None

    def graded(self) -> tuple[int, ...] | None:
        """(width, degree) of a truncated tensor algebra, else None."""
        return self.sparsity[1:] if self.sparsity and self.sparsity[0] == "graded" else None

    def __repr__(self) -> str:
        return f"<Factor {self.name}: {' x '.join(map(str, self.shape[:2]))} -> {self.shape[2]}, nnz {self.nnz}>"
