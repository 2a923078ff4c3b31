"""`Factor`: the numeric structure constants of one bilinear factor, kept sparse, with the structure queries
the strategies choose by.

A factor maps x (dimension d1) and y (d2) to z (d3): z_k = sum lam[i, j, k] x_i y_j.  An algebra's factor has
d1 = d2 = d3; a general bilinear map need not.

>>> from product_interactions.algebra import clifford, diagonal, translation
>>> f = Factor.from_algebra(clifford(0, 1))
>>> f.shape, f.nnz, f.one_per_pair(), f.diagonal() is None
((2, 2, 2), 4, True, True)
>>> Factor.from_algebra(diagonal(3)).diagonal()
array([1., 1., 1.])
>>> T = Factor.from_algebra(translation(5))
>>> T.cyclic_signs(), T.permuted((1, 2, 0)).cyclic_signs()
((1, 1), (-1, 1))
"""
from __future__ import annotations

import functools
from numbers import Number

import numpy as np
import sympy


def _to_float(value, where: str) -> float:
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
def _from_algebra(algebra, name: str) -> "Factor":
    try:
        indices, floats = algebra.sparse_structure_constants(dtype=float)
    except TypeError:                      # a symbolic coefficient: find it, to name it
        indices, values = algebra.sparse_structure_constants(dtype=object)
        floats = [_to_float(c, f"{name}: lam[{i}, {j}, {k}]") for (i, j, k), c in zip(indices, values)]
    return Factor((algebra.dim,) * 3, indices, floats, name)


class Factor:
    """Sparse float64 structure constants: ``indices`` (nnz, 3) sorted rows (i, j, k), ``values`` (nnz,)."""

    def __init__(self, shape, indices, values, name: str):
        self.shape = tuple(int(n) for n in shape)
        self.indices = np.asarray(indices, dtype=np.int64).reshape(-1, 3)
        self.values = np.asarray(values, dtype=np.float64)
        self.name = name
        self.key = (self.shape, self.indices.tobytes(), self.values.tobytes())

    @classmethod
    def from_algebra(cls, algebra) -> "Factor":
        """The factor of a plain algebra (cached per algebra and name: converting large tables takes a while)."""
        return _from_algebra(algebra, algebra.name)

    @classmethod
    def from_array(cls, lam, argument: str = "lam") -> "Factor":
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
        return cls(array.shape, indices, floats[tuple(indices.T)], argument)

    # ------------------------------------------------------------------ data
    @property
    def nnz(self) -> int:
        """The number of nonzero coefficients."""
        return len(self.values)

    @property
    def density(self) -> float:
        """nnz / (d1 d2 d3)."""
        return self.nnz / float(np.prod(self.shape))

    def dense(self, dtype) -> np.ndarray:
        """The dense (d1, d2, d3) array in `dtype`."""
        lam = np.zeros(self.shape, dtype=dtype)
        lam[tuple(self.indices.T)] = self.values
        return lam

    def permuted(self, order) -> "Factor":
        """The factor with its three roles permuted: role r of the result is role ``order[r]`` of this one.

        ``permuted((1, 2, 0))`` maps (y, g) to the x-space: the vector-Jacobian product with respect to x.
        """
        indices = self.indices[:, list(order)]
        rows = np.lexsort(indices.T[::-1])
        return Factor([self.shape[r] for r in order], indices[rows], self.values[rows], self.name)

    # ------------------------------------------------------------------ structure
    def diagonal(self):
        """The coefficients c with lam[i, j, k] = c_i [i == j == k], or None when lam is not of that form."""
        i, j, k = self.indices.T
        if not self.shape[0] == self.shape[1] == self.shape[2] or np.any((i != j) | (j != k)):
            return None
        coefficients = np.zeros(self.shape[0])
        coefficients[i] = self.values
        return coefficients

    def off_diagonal(self):
        """The first (i, j, k) with a nonzero coefficient off the diagonal i == j == k, or None."""
        i, j, k = self.indices.T
        rows = np.flatnonzero((i != j) | (j != k))
        return tuple(int(v) for v in self.indices[rows[0]]) if len(rows) else None

    def shared_pair(self):
        """The first (i, j) whose product has two or more nonzero coefficients, or None."""
        pairs = self.indices[:, :2]
        repeated = np.flatnonzero(np.all(pairs[1:] == pairs[:-1], axis=1))
        return tuple(int(v) for v in pairs[repeated[0]]) if len(repeated) else None

    def one_per_pair(self) -> bool:
        """True when every e_i e_j has at most one nonzero coefficient (group-like algebras, Clifford)."""
        return self.shared_pair() is None

    def cyclic_signs(self):
        """(s1, s2) in {1, -1}^2 when lam[i, j, k] = [k = s1 i + s2 j mod n] for all i, j (a cyclic group
        algebra and its transposes), else None."""
        n = self.shape[0]
        if not n == self.shape[1] == self.shape[2] or self.nnz != n * n or np.any(self.values != 1):
            return None
        i, j, k = self.indices.T
        for signs in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
            if np.array_equal(k, (signs[0] * i + signs[1] * j) % n):
                return signs
        return None

    def __repr__(self):
        return f"<Factor {self.name}: {' x '.join(map(str, self.shape[:2]))} -> {self.shape[2]}, nnz {self.nnz}>"
