"""Tensor products of algebras, kept as their factors.

(a (x) b)(a' (x) b') = a a' (x) b b'.  A `TensorProduct` has one axis per factor (``shape`` is the tuple of the
factors' dimensions) and never builds the Kronecker product of structure constants unless asked for
``entries()`` or ``structure_constants()``, which refuse beyond a size limit.  Its queries are decided from the
factors: associativity, commutativity, the unit and the centre are inherited exactly.

>>> from product_interactions.algebra import position, diagonal
>>> A = tensor_product(position(2), diagonal(3))
>>> A.shape, A.basis[0], A.is_associative(), A.unit() == A.element([[1, 1, 1], [1, 1, 1]])
((2, 3), ('g_1', 'e_0'), True, True)
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import sympy

from . import identities
from .algebra import Algebra, check_algebras
from .element import Element, check_element_size
from .exact import Entry
from .limits import check_size
from .scalars import Exact, Floats, common
from .structured import StructuredAlgebra


def _ravel(parts: Iterable[int | np.integer], shape: Sequence[int]) -> int:
    """The flat row-major index of a multi-index (Python ints: no overflow at any size)."""
    flat = 0
    for part, size in zip(parts, shape):
        flat = flat * size + int(part)
    return flat


def _unravel(flat: int, shape: Sequence[int]) -> list[int]:
    """The multi-index of a flat row-major index."""
    parts = []
    for size in reversed(shape):
        flat, part = divmod(flat, size)
        parts.append(part)
    return parts[::-1]


class TensorProduct(StructuredAlgebra):
    """The tensor product of `factors` (each a plain algebra); see the module docstring.

    Its rule is the factors' rules: a label is the tuple of the factors' labels, an index a flat (row-major)
    multi-index, and e_i e_j the product of the factors' products, so building one costs nothing in the sizes of
    its factors.  Its scalars are `scalars`, by default numeric when a factor is (`algebra.scalars.common`), and
    each product is then a float.
    """

    def __init__(self, factors: Iterable[Algebra], name: str | None = None,
                 scalars: Exact | Floats | None = None) -> None:
        self._factors = check_algebras(factors, plain=True)
        self._scalars = common(f.scalars for f in self._factors) if scalars is None else scalars
        super().__init__(math.prod(f.dim for f in self._factors),
                         " ⊗ ".join(f.name for f in self._factors) if name is None else name)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(f.dim for f in self._factors)

    @property
    def factors(self) -> tuple[Algebra, ...]:
        return self._factors

    def _count(self) -> int:
        return math.prod(f.nnz for f in self._factors)

    def label(self, i: int) -> tuple[str, ...]:
        return tuple(f.label(p)  # type: ignore[misc]  # a factor's labels are strings (see algebra.labels)
                     for f, p in zip(self._factors, _unravel(self.index(i, "i"), self.shape)))

    def _parse(self, label: Any) -> int | None:
        if not isinstance(label, tuple) or len(label) != len(self._factors):
            return None
        if all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in label):
            if not all(0 <= i < n for i, n in zip(label, self.shape)):
                raise ValueError(f"label: {label!r} is not a multi-index for shape {self.shape}")
            return _ravel(label, self.shape)
        try:
            return _ravel([f.index(part) for f, part in zip(self._factors, label)], self.shape)
        except ValueError:
            return None

    def _spec(self) -> object:
        return self._factors

    def _same_structure(self, other: Algebra) -> bool:
        if isinstance(other, TensorProduct):
            return self.shape == other.shape and self.scalars == other.scalars and all(
                a == b for a, b in zip(self._factors, other._factors))
        return False

    def _rule(self, i: int, j: int) -> dict[int, sympy.Expr]:
        parts = [f.product_of_basis(a, b) for f, a, b in
                 zip(self._factors, _unravel(i, self.shape), _unravel(j, self.shape))]
        result = {}
        for combo in itertools.product(*(sorted(p.items()) for p in parts)):
            k = _ravel([m for m, _ in combo], self.shape)
            result[k] = self._constant(c for _, c in combo)
        return result

    def _rule_entries(self) -> Iterator[Entry]:
        for combo in itertools.product(*(f.entries() for f in self._factors)):
            i, j, k = (_ravel([e[axis] for e in combo], self.shape) for axis in range(3))
            yield i, j, k, self._constant(e[3] for e in combo)

    def _multiply(self, x: Sequence[sympy.Expr], y: Sequence[sympy.Expr]) -> list[sympy.Expr]:
        # the cheaper of two loops: over pairs of nonzero coefficients (the rule), or over the factors' entries
        pairs = sum(1 for v in x if v != 0) * sum(1 for v in y if v != 0)
        if pairs <= self.nnz:
            check_size(pairs, "*", f"pairs of nonzero coefficients in a product in {self.name}", "use the kernels")
            return super()._multiply(x, y)
        check_size(self.nnz, "*", f"structure constants visited by a product in {self.name}", "use the kernels")
        x_array = np.array(x, dtype=object).reshape(self.shape)
        y_array = np.array(y, dtype=object).reshape(self.shape)
        result = np.full(self.shape, self.scalars.zero, dtype=object)
        for combo in itertools.product(*(f.entries() for f in self._factors)):
            i, j, k = (tuple(e[axis] for e in combo) for axis in range(3))
            if x_array[i] != 0 and y_array[j] != 0:
                result[k] += self._constant(e[3] for e in combo) * x_array[i] * y_array[j]
        return list(result.reshape(-1))

    def _constant(self, parts: Iterable[sympy.Expr]) -> sympy.Expr:
        """The product of the factors' constants, a float when the scalars are."""
        value = math.prod(parts)
        return value if self.tol is None else self.scalars.convert(value, f"a structure constant of {self.name}")

    def _symbol_suffixes(self) -> list[str]:
        return ["_".join(map(str, index)) for index in np.ndindex(*self.shape)]

    # ------------------------------------------------------------------ inherited queries
    def _symmetric(self, sign: int) -> bool:
        # lam = (x)_f (S_f + N_f) with S_f, N_f the parts symmetric / antisymmetric in (i, j).  lam - sign*swap(lam)
        # is twice the sum of the terms with an odd (sign +1) or even (sign -1) number of N's; the terms lie in
        # independent symmetry sectors, so each must vanish: some factor's chosen part must be zero.
        no_antisymmetric = [f.is_commutative() for f in self._factors]
        no_symmetric = [f.is_anticommutative() for f in self._factors]
        for choice in itertools.product((False, True), repeat=len(self._factors)):
            if sum(choice) % 2 == (1 if sign > 0 else 0) and not any(
                    no_antisymmetric[f] if anti else no_symmetric[f] for f, anti in enumerate(choice)):
                return False
        return True

    # A numeric product is decided within its own tolerance on its constants (a factor's errors are scaled by the
    # other factors'), so only an exact one inherits the factors' answers.
    def is_commutative(self) -> bool:
        return super().is_commutative() if self.tol is not None else self._symmetric(+1)

    def is_anticommutative(self) -> bool:
        return super().is_anticommutative() if self.tol is not None else self._symmetric(-1)

    def is_associative(self) -> bool:
        if self.tol is not None:
            return super().is_associative()
        # (xy)z and x(yz) are the tensor products of the factors' sides L_f and R_f.  Both are zero when some L_f
        # and some R_g vanish; otherwise they agree exactly when L_f = c_f R_f for every factor with prod c_f = 1.
        sides = []
        for factor in self._factors:
            if factor.is_associative() and factor.unit() is not None:
                sides.append((False, False, sympy.Integer(1)))
                continue
            left, right, domain = identities.associator_tensors(factor.entries())
            sides.append((not left, not right, identities.proportionality(left, right, domain)))
        left_zero = any(s[0] for s in sides)
        right_zero = any(s[1] for s in sides)
        if left_zero or right_zero:
            return left_zero and right_zero
        ratios = [s[2] for s in sides]
        return None not in ratios and sympy.simplify(sympy.Mul(*ratios) - 1) == 0

    def unit(self) -> Element | None:
        check_element_size(self, "unit")
        units = [f.unit() for f in self._factors]
        if None in units:
            return None
        return Element(self, _outer([u.flat for u in units]))  # type: ignore[union-attr]  # None ruled out above

    def center(self) -> list[Element]:
        check_size(self.dim**2, "center", f"coefficients in a basis of the centre of {self.name} (at most)",
                   "use the kernels")
        units = [f.unit() for f in self._factors]
        if None in units:
            return super().center()
        bases = [[z.flat for z in f.center()] for f in self._factors]
        return [Element(self, _outer(vectors)) for vectors in itertools.product(*bases)]


def _outer(vectors: Iterable[Sequence[sympy.Expr]]) -> list[sympy.Expr]:
    result = np.array([sympy.Integer(1)], dtype=object)
    for vector in vectors:
        result = np.multiply.outer(result, np.array(vector, dtype=object)).reshape(-1)
    return list(result)


def tensor_product(*algebras: Algebra, name: str | None = None) -> Algebra:
    """A (x) B (x) ...; nested tensor products are flattened into one factor list.  With a numeric factor, the
    product is numeric within the largest tolerance (`algebra.scalars.common`).

    >>> from product_interactions.algebra import translation
    >>> tensor_product(translation(4), translation(5)).shape   # a 2-D lattice
    (4, 5)
    """
    factors: list[Algebra] = []
    for algebra in check_algebras(algebras, plain=False):
        factors.extend(algebra.factors)
    if len(factors) == 1:
        return factors[0]
    return TensorProduct(factors, name=name)
