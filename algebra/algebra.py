"""`Algebra`: a finite-dimensional real algebra given by sparse structure constants, exact by default.

``lam[i, j, k]`` is the coefficient of e_k in e_i e_j.  Coefficients are sympy numbers (integers, rationals,
algebraic numbers) or expressions in sympy symbols; they are stored sparsely as ``{(i, j): {k: c}}``.  Asked
for with ``exact=False``, an algebra keeps float constants instead and answers its queries within a tolerance
(`algebra.scalars`): learned constants can be asked "nearly associative?".

>>> import sympy
>>> C = Algebra.from_function(2, lambda i, j: {(i + j) % 2: -1 if i == j == 1 else 1}, basis=["1", "i"],
...                           name="C")
>>> C.is_commutative(), C.is_associative(), C.unit()
(True, True, 1)
>>> z = C.symbols("z"); w = C.symbols("w")
>>> z * w
(w_0*z_0 - w_1*z_1)*1 + (w_0*z_1 + w_1*z_0)*i
"""
from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import sympy
from numpy.typing import ArrayLike, DTypeLike

from . import identities, limits, numeric_laws
from .element import Element, check_element_size
from .exact import Entry, check_assumptions, check_dtype, object_array
from .labels import BasisLike, Key, Label
from .limits import check_size
from .scalars import EXACT, Exact, Floats, common

#: Structure constants stored sparsely: ``{(i, j): {k: c}}`` with each c a nonzero value of the algebra's scalars
#: (a sympy value, or a float in a numeric algebra).
Table = dict[tuple[int, int], dict[int, sympy.Expr]]


#: The largest dimension for the queries that multiply generic (symbolic) elements: quartic polynomials in
#: this many symbols per coefficient.
MAX_GENERIC_DIM = 16
#: The tolerance of a numeric algebra (``exact=False``) when none is given.
DEFAULT_TOL = 1e-9


def check_basis(basis: BasisLike | None, dim: int, argument: str = "basis") -> tuple[Label, ...]:
    """`dim` distinct string (or tuple of strings) labels, default e_0.., or a TypeError / ValueError naming `argument`."""
    check_size(dim, argument, "basis labels", "use a structured builder (diagonal, translation, ...) for "
               "algebras this large")
    if basis is None:
        return tuple(f"e_{i}" for i in range(dim))
    if isinstance(basis, (str, bytes)) or not hasattr(basis, "__iter__") or getattr(basis, "ndim", 1) == 0:
        raise TypeError(f"{argument}: expected a sequence of {dim} labels, got {type(basis).__name__}")
    labels = tuple(tuple(b) if isinstance(b, list) else b for b in basis)
    if len(labels) != dim:
        raise ValueError(f"{argument}: expected {dim} labels (one per basis element), got {len(labels)}")
    for label in labels:
        if not isinstance(label, (str, tuple)) or isinstance(label, tuple) and not all(
                isinstance(part, str) for part in label):
            raise TypeError(f"{argument}: expected string labels, got {type(label).__name__} {label!r}")
    seen = set()
    for label in labels:
        if label in seen:
            raise ValueError(f"{argument}: labels must be distinct, {label!r} appears more than once")
        seen.add(label)
    return labels


def _length(basis: object) -> int | None:
    """The number of labels in a sequence `basis` (None for None, strings and what has no length)."""
    if basis is None or isinstance(basis, (str, bytes)):
        return None
    try:
        return len(basis)  # type: ignore[arg-type]  # anything else: None below
    except TypeError:
        return None


#: The largest float, as a Python float: comparing a huge int with it is exact, where numpy's would overflow.
_LARGEST_FLOAT = float(np.finfo(float).max)


def check_tolerance(value: object, argument: str) -> float:
    """A finite real number >= 0 (a tolerance), as a float, or a ValueError naming `argument`."""
    number = int(value) if isinstance(value, (int, np.integer)) else float(value) \
        if isinstance(value, (float, np.floating)) else None          # Python numbers compare exactly, any size
    if isinstance(value, (bool, np.bool_)) or number is None or not 0 <= number <= _LARGEST_FLOAT:
        raise ValueError(f"{argument}: expected a finite number >= 0, got {value!r:.60}")
    return float(number)


def check_algebras(values: object, plain: bool, argument: str = "algebras") -> tuple[Algebra, ...]:
    """`values` (an iterable) as a non-empty tuple of Algebras, plain ones (one axis) with `plain`; else a
    TypeError or ValueError naming ``algebras[i]``."""
    if isinstance(values, (str, bytes, Algebra)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{argument}: expected a list of Algebras, got {type(values).__name__} {values!r:.60}")
    parts = tuple(values)
    if not parts:
        raise ValueError(f"{argument}: expected at least one algebra, got none")
    for position, algebra in enumerate(parts):
        if not isinstance(algebra, Algebra):
            raise TypeError(f"{argument}[{position}]: expected an Algebra, got {type(algebra).__name__} "
                            f"{algebra!r:.60}")
        if plain and len(algebra.shape) != 1:
            raise ValueError(f"{argument}[{position}]: expected a plain algebra (one axis), got {algebra.name} "
                             f"with shape {algebra.shape}")
    return parts


def check_count(value: object, argument: str, minimum: int = 1) -> int:
    """An int (numpy ints too, not bool) >= minimum, or a TypeError / ValueError naming `argument`."""
    kind = {0: "a non-negative int", 1: "a positive int"}.get(minimum, f"an int >= {minimum}")
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{argument}: expected {kind}, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{argument}: expected {kind}, got {value}")
    return int(value)


def check_seed(seed: object, allow_none: bool = False) -> np.random.Generator:
    """The generator a seeded draw uses: `seed` a non-negative int, a Generator (used as it is) or, with
    `allow_none`, None (fresh entropy); else a TypeError / ValueError naming ``seed``."""
    if isinstance(seed, np.random.Generator) or seed is None and allow_none:
        return np.random.default_rng(seed)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        kinds = "None, " if allow_none else ""
        raise TypeError(f"seed: expected {kinds}a non-negative int or a numpy.random.Generator, got "
                        f"{type(seed).__name__} {seed!r}")
    if seed < 0:
        raise ValueError(f"seed: expected a non-negative int, got {seed}")
    return np.random.default_rng(seed)


def check_flag(value: object, argument: str) -> bool:
    """A bool (numpy's np.bool_ too) as a bool, or a TypeError naming `argument` (ints and strings are refused)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{argument}: expected a bool, got {type(value).__name__} {value!r}")
    return bool(value)


def check_choice(value: object, choices: Sequence[str], argument: str) -> str:
    """One of the strings `choices`, or a ValueError naming `argument` (arrays and other objects included, which
    ``value in choices`` would compare elementwise or not at all)."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{argument}: expected one of {', '.join(map(repr, choices))}, got {value!r:.80}")
    return value


def check_index(value: object, dim: int, argument: str) -> int:
    """An int index in 0..dim-1 (numpy ints too, not bool), or a TypeError / ValueError naming `argument`."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{argument}: expected an int index, got {type(value).__name__} {value!r}")
    if not 0 <= value < dim:
        raise ValueError(f"{argument}: index {value} out of range for an algebra of dimension {dim}")
    return int(value)


def check_scalars(exact: object, tol: object) -> Exact | Floats:
    """The scalars asked for by a constructor's ``exact`` and ``tol``, or a TypeError / ValueError naming them."""
    if not check_flag(exact, "exact"):
        return Floats(DEFAULT_TOL if tol is None else check_tolerance(tol, "tol"))
    if tol is not None:
        raise ValueError(f"tol: a tolerance applies to numeric algebras; pass exact=False with tol={tol!r:.40}")
    return EXACT


def _add_entry(table: Table, scalars: Exact | Floats, i: int, j: int, k: int, value: object, argument: str) -> None:
    try:
        value = scalars.convert(value, argument)
    except TypeError as error:
        if isinstance(value, (float, np.floating)):
            raise TypeError(f"{error}; for float constants, build a numeric algebra with exact=False") from None
        raise
    if scalars.nonzero(value):
        row = table.setdefault((i, j), {})
        row[k] = row.get(k, scalars.zero) + value
        if not scalars.nonzero(row[k]):
            del row[k]
            if not row:
                del table[i, j]


class Algebra:
    """A finite-dimensional real algebra given by structure constants (see the module docstring).

    Build one with `from_structure_constants`, `from_function` or `from_left_multiplication`, or with a
    builder (`tensor_algebra`, `clifford`, ...).  Instances are immutable.
    """

    _scalars: Exact | Floats = EXACT

    def __init__(self, table: Mapping[tuple[int, int], Mapping[int, sympy.Expr]], basis: Sequence[Label],
                 name: str | None = None, scalars: Exact | Floats = EXACT) -> None:
        """Internal: `table` is an already validated ``{(i, j): {k: nonzero value of scalars}}``."""
        self._table = {key: dict(row) for key, row in table.items()}
        self._basis = tuple(basis)
        self._index = {label: i for i, label in enumerate(self._basis)}
        self._scalars = scalars
        self.name = name if name is not None else f"Algebra(dim={len(self._basis)})"

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_structure_constants(cls, lam: ArrayLike | Mapping[tuple[int, int], Mapping[int, object]],
                                 basis: BasisLike | None = None, name: str | None = None,
                                 dim: int | None = None, exact: bool = True, tol: float | None = None) -> Algebra:
        """From a dense (d, d, d) array-like ``lam[i, j, k]`` or a sparse mapping ``{(i, j): {k: c}}``.

        For a mapping, the dimension is ``dim``, else ``len(basis)``, else one more than the largest index.
        ``exact=False`` keeps float constants, and the queries answer within ``tol`` (default `DEFAULT_TOL`).

        >>> A = Algebra.from_structure_constants({(0, 0): {0: 1}, (0, 1): {1: 1}, (1, 0): {1: 1}}, dim=2)
        >>> A.unit()
        e_0
        >>> B = Algebra.from_structure_constants({(0, 0): {0: 1}, (0, 1): {1: 0.1}, (1, 0): {1: 0.1}}, dim=2,
        ...                                      exact=False, tol=1e-6)
        >>> B.is_commutative(), B.tol
        (True, 1e-06)
        """
        scalars = check_scalars(exact, tol)
        if isinstance(lam, Mapping):
            return cls._from_mapping(lam, basis, name, dim, scalars)
        sparse = "pass the nonzero constants as a mapping {(i, j): {k: c}}"
        if isinstance(lam, np.ndarray):
            check_size(lam.size, "lam", f"entries in a dense array of shape {lam.shape}", sparse)
        array = object_array(lam, "lam", "a (d, d, d) array-like or a mapping {(i, j): {k: c}}")
        check_size(array.size, "lam", f"entries in a dense array of shape {array.shape}", sparse)
        if array.ndim != 3 or not array.shape[0] == array.shape[1] == array.shape[2] or array.shape[0] == 0:
            raise ValueError(f"lam: expected shape (d, d, d), got {array.shape}")
        d = array.shape[0]
        if dim is not None and check_count(dim, "dim") != d:
            raise ValueError(f"dim: lam has shape {array.shape}, so dim must be {d}, got {dim}")
        basis = check_basis(basis, d)
        table: Table = {}
        for (i, j, k), value in np.ndenumerate(array):
            if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value == 0:
                continue                              # a bool is refused by name in _add_entry, False too
            _add_entry(table, scalars, i, j, k, value, f"lam[{i}, {j}, {k}]")
        return cls(table, basis, name, scalars)

    @classmethod
    def _from_mapping(cls, lam: Mapping[tuple[int, int], Mapping[int, object]], basis: BasisLike | None,
                      name: str | None, dim: int | None, scalars: Exact | Floats) -> Algebra:
        for key, row in lam.items():
            if not (isinstance(key, tuple) and len(key) == 2):
                raise TypeError(f"lam: expected keys (i, j), got {key!r}")
            if not isinstance(row, Mapping):
                raise TypeError(f"lam[{key}]: expected a mapping {{k: coefficient}}, got {type(row).__name__}")
        check_size(sum(len(row) for row in lam.values()), "lam", "structure constants",
                   "use a structured builder for algebras this large")
        indices = [i for (i, j), row in lam.items() for i in (i, j, *row)]
        labels, source = _length(basis), "dim"
        if dim is None:
            if labels is not None:
                dim, source = labels, "basis"
            elif indices and all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in indices):
                dim, source = max(max(indices) + 1, 1), "lam"   # negative indices are refused below, by name
            else:
                raise ValueError("lam: an empty or non-integer mapping needs dim= or basis= to fix the dimension")
        dim = check_count(dim, "dim")
        check_size(dim, source, "basis labels", "use a structured builder for algebras this large")
        if labels is not None and labels != dim:
            raise ValueError(f"dim, basis: dim = {dim}, but basis has {labels} labels")
        basis = check_basis(basis, dim)
        table: Table = {}
        for (i, j), row in lam.items():
            i, j = check_index(i, dim, f"lam key ({i!r}, {j!r})"), check_index(j, dim, f"lam key ({i!r}, {j!r})")
            for k, value in row.items():
                k = check_index(k, dim, f"lam[({i}, {j})] key {k!r}")
                _add_entry(table, scalars, i, j, k, value, f"lam[({i}, {j})][{k}]")
        return cls(table, basis, name, scalars)

    @classmethod
    def from_function(cls, dim: int, mul: Callable[[int, int], Mapping[int, object]], basis: BasisLike | None = None,
                      name: str | None = None, exact: bool = True, tol: float | None = None) -> Algebra:
        """From ``mul(i, j) -> {k: c}`` on basis indices 0..dim-1 (``exact``, ``tol``: as in
        `from_structure_constants`).

        >>> Z3 = Algebra.from_function(3, lambda i, j: {(i + j) % 3: 1})
        >>> Z3.is_commutative()
        True
        """
        scalars = check_scalars(exact, tol)
        dim = check_count(dim, "dim")
        check_size(dim * dim, "dim", f"calls of mul for dim = {dim}", "use a structured builder for algebras "
                   "this large")
        if not callable(mul):
            raise TypeError(f"mul: expected a callable mul(i, j) -> {{k: c}}, got {type(mul).__name__}")
        lam = {}
        for i, j in itertools.product(range(dim), repeat=2):
            row = mul(i, j)
            if not isinstance(row, Mapping):
                raise TypeError(f"mul({i}, {j}): expected a mapping {{k: c}}, got {type(row).__name__} {row!r}")
            lam[i, j] = row
        return cls._from_mapping(lam, basis, name, dim, scalars)

    @classmethod
    def from_left_multiplication(cls, matrices: ArrayLike, basis: BasisLike | None = None,
                                 name: str | None = None, exact: bool = True, tol: float | None = None) -> Algebra:
        """From the left-multiplication matrices: ``matrices[i][k][j]`` is the e_k coefficient of e_i e_j
        (``exact``, ``tol``: as in `from_structure_constants`).

        >>> A = Algebra.from_left_multiplication([[[1, 0], [0, 1]], [[0, -1], [1, 0]]])
        >>> A.is_commutative()
        True
        """
        array = object_array(matrices, "matrices", "d matrices of shape (d, d)")
        if array.ndim != 3 or not array.shape[0] == array.shape[1] == array.shape[2]:
            raise ValueError(f"matrices: expected d matrices of shape (d, d), i.e. shape (d, d, d), "
                             f"got shape {array.shape}")
        return cls.from_structure_constants(np.transpose(array, (0, 2, 1)), basis=basis, name=name, exact=exact,
                                            tol=tol)

    # ------------------------------------------------------------------ basic data
    @property
    def name(self) -> str:
        """The display name (a str, kept by `to_json`)."""
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"name: expected a str, got {type(value).__name__} {value!r}")
        self._name = value

    @property
    def dim(self) -> int:
        """The dimension d."""
        return len(self._basis)

    @property
    def scalars(self) -> Exact | Floats:
        """The scalars: `algebra.scalars.EXACT`, or floats within a tolerance for a numeric algebra."""
        return self._scalars

    @property
    def tol(self) -> float | None:
        """The tolerance of a numeric algebra's queries, None for an exact algebra."""
        return self.scalars.tol

    def describe(self) -> str:
        """The name, with ``(numeric, tol ...)`` for a numeric algebra: what error messages call it."""
        return self.name if self.tol is None else f"{self.name} (numeric, tol {self.tol:g})"

    def numeric(self, tol: float = DEFAULT_TOL) -> Algebra:
        """This algebra with float constants, answering within `tol` (`algebra.numeric`).

        >>> from product_interactions.algebra import quaternions
        >>> H = quaternions().numeric()
        >>> H.is_associative(), H.basis_element("i") * H.basis_element("j")
        (True, k)
        """
        from . import numeric
        return numeric.numeric_algebra(self, tol)

    def exact(self, tol: float | None = None, max_denominator: int = 10**4) -> Algebra:
        """This algebra with exact constants: each float as the nearest rational with a denominator up to
        `max_denominator`, or the square root of one, within `tol` (default: the algebra's own); see
        `algebra.numeric`."""
        from . import numeric
        return numeric.exact_algebra(self, tol, max_denominator)

    @property
    def shape(self) -> tuple[int, ...]:
        """One entry per tensor factor: ``(d,)`` for a plain algebra."""
        return (self.dim,)

    @property
    def factors(self) -> tuple[Algebra, ...]:
        """The tensor factors, ``(self,)`` for a plain algebra."""
        return (self,)

    @property
    def basis(self) -> tuple[Label, ...]:
        """The basis labels, in index order."""
        return self._basis

    def label(self, i: int) -> Label:
        """The basis label of index i."""
        return self.basis[check_index(i, self.dim, "i")]

    def sparsity(self) -> tuple[Any, ...] | None:
        """Where the nonzero structure constants are, as a rule kernels use without reading the table, or None
        where no rule is known (the table is the truth).  The builders with such a rule say it:

        * ``("diagonal",)``: lam[i, j, k] = [i == j == k] (diagonal and position algebras);
        * ``("cyclic", 1, 1)``: lam[i, j, k] = [k = i + j mod n] (cyclic translations);
        * ``("truncated",)``: lam[i, j, k] = [k = i + j < n] (truncated translations);
        * ``("graded", width, degree)``: the truncated tensor algebra, words concatenated;
        * ``("one per pair",)``: every e_i e_j has at most one nonzero coefficient (Clifford, matrix units);
        * ``("blocks",)``: an SO(3) path algebra, dense blocks by (l1, l2, l) (its ``blocks()``).

        >>> from product_interactions.algebra import translation
        >>> from product_interactions.algebra import octonions
        >>> translation(5).sparsity(), octonions().sparsity()
        (('cyclic', 1, 1), None)
        """
        return None

    @property
    def nnz(self) -> int:
        """The number of nonzero structure constants."""
        return sum(len(row) for row in self._table.values())

    def index(self, label: Key, argument: str = "label") -> int:
        """The position of a basis label (an int index is checked and returned); errors name `argument`."""
        if isinstance(label, (int, np.integer)) and not isinstance(label, bool):
            return check_index(label, self.dim, argument)
        try:
            return self._index[label]  # type: ignore[index]  # any other key: the ValueError below
        except (KeyError, TypeError):
            raise ValueError(f"{argument}: {label!r} is not a basis label of {self.name} "
                           f"(labels: {', '.join(map(str, self._basis[:8]))}{', ...' if self.dim > 8 else ''})")

    def entries(self) -> list[Entry]:
        """The nonzero structure constants as a sorted list of ``(i, j, k, c)``."""
        return sorted((i, j, k, c) for (i, j), row in self._table.items() for k, c in row.items())

    def product_of_basis(self, i: Key, j: Key) -> dict[int, sympy.Expr]:
        """``{k: c}`` with e_i e_j = sum_k c e_k (labels or indices)."""
        return dict(self._table.get((self.index(i, "i"), self.index(j, "j")), {}))

    def structure_constants(self, dtype: DTypeLike = float, max_bytes: int | None = None) -> np.ndarray:
        """The dense (d, d, d) numpy array of lam; ``dtype=object`` keeps the values as stored (exact sympy values,
        or floats in a numeric algebra).

        `dtype` is a float or complex dtype, or object.  Refuses (ValueError) when the array would exceed
        `max_bytes` (default `algebra.limits.MAX_DENSE_BYTES`).
        """
        dtype = check_dtype(dtype, allow_object=True)
        if max_bytes is not None and (isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer))):
            raise TypeError(f"max_bytes: expected an int number of bytes or None, got {type(max_bytes).__name__} "
                            f"{max_bytes!r}")
        size = self.dim**3
        limit = limits.MAX_DENSE_BYTES if max_bytes is None else int(max_bytes)
        if size * dtype.itemsize > limit:
            raise ValueError(
                f"structure_constants: the dense (d, d, d) array of {self.name} would take "
                f"{size * dtype.itemsize:,} bytes (d = {self.dim}), more than max_bytes = {limit:,}; use "
                f"sparse_structure_constants() or the per-factor constants of .factors")
        entries = self.entries()
        lam = np.zeros((self.dim,) * 3, dtype=dtype)
        for i, j, k, c in entries:
            lam[i, j, k] = c if dtype == object else self._number(c, f"lam[{i}, {j}, {k}]", dtype)
        return lam

    def _number(self, value: Any, where: str, dtype: np.dtype) -> float | complex:
        """A constant as a number of `dtype`'s kind, or a TypeError naming it where it holds symbols."""
        if isinstance(value, sympy.Basic) and value.free_symbols:
            raise TypeError(f"dtype: {where} = {value} of {self.name} is symbolic, so it has no {dtype} value; use "
                            f"dtype=object, or substitute values for {', '.join(sorted(map(str, value.free_symbols)))}"
                            f" first")
        return complex(value) if dtype.kind == "c" else float(value)

    def sparse_structure_constants(self, dtype: DTypeLike = float) -> tuple[np.ndarray, np.ndarray]:
        """``(indices, values)``: an (nnz, 3) int array of (i, j, k) and the matching values."""
        dtype = check_dtype(dtype, allow_object=True)
        entries = self.entries()
        indices = np.array([e[:3] for e in entries], dtype=np.int64).reshape(-1, 3)
        values = [c if dtype == object else self._number(c, f"lam[{i}, {j}, {k}]", dtype) for i, j, k, c in entries]
        return indices, np.array(values, dtype=dtype)

    # ------------------------------------------------------------------ elements
    def element(self, coefficients: ArrayLike) -> Element:
        """An element from coefficients of shape ``self.shape`` (or a flat sequence of length dim)."""
        return Element(self, coefficients)

    def basis_element(self, label: Key) -> Element:
        """The basis element e_label (a label or an index)."""
        index = self.index(label)
        check_element_size(self, "basis_element")
        return Element(self, [int(i == index) for i in range(self.dim)])

    def zero(self) -> Element:
        """The zero element."""
        check_element_size(self, "zero")
        return Element(self, [0] * self.dim)

    def symbols(self, name: str = "x", **assumptions: bool) -> Element:
        """A generic element with symbolic coefficients ``name_0 .. name_{d-1}`` (real by default).

        >>> A = Algebra.from_function(2, lambda i, j: {0: 1} if i == j else {1: 1})
        >>> A.symbols("x") * A.symbols("y")
        (x_0*y_0 + x_1*y_1)*e_0 + (x_0*y_1 + x_1*y_0)*e_1
        """
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"name: expected an identifier such as 'x', got {name!r}")
        if self.tol is not None:
            raise TypeError(f"symbols: {self.name} is numeric (its elements hold floats); symbolic elements need "
                            f"an exact algebra, such as .exact()")
        check_element_size(self, "symbols")
        assumptions = {"real": True, **check_assumptions(assumptions)}
        return Element(self, [sympy.Symbol(f"{name}_{suffix}", **assumptions) for suffix in self._symbol_suffixes()])

    def _symbol_suffixes(self) -> list[str]:
        return [str(i) for i in range(self.dim)]

    def _multiply(self, x: Sequence[sympy.Expr], y: Sequence[sympy.Expr]) -> list[sympy.Expr]:
        """Coefficients of x * y from coefficient lists (flat, index order)."""
        result = [self.scalars.zero] * self.dim
        for (i, j), row in self._table.items():
            if x[i] != 0 and y[j] != 0:
                xy = x[i] * y[j]
                for k, c in row.items():
                    result[k] += c * xy
        return result

    # ------------------------------------------------------------------ queries
    # Each query is exact for an exact algebra, and decided within tol for a numeric one (`numeric_laws`).
    def is_commutative(self) -> bool:
        """True when x y = y x for all x, y."""
        if self.tol is not None:
            return numeric_laws.is_commutative(self)
        return identities.is_symmetric(self.entries(), +1)

    def is_anticommutative(self) -> bool:
        """True when x y = -y x for all x, y, so also x x = 0."""
        if self.tol is not None:
            return numeric_laws.is_anticommutative(self)
        return identities.is_symmetric(self.entries(), -1)

    def is_associative(self) -> bool:
        """True when (x y) z = x (y z) for all x, y, z."""
        if self.tol is not None:
            return numeric_laws.is_associative(self)
        return identities.is_associative(self.entries(), self.dim)

    def is_alternative(self) -> bool:
        """True when (x x) y = x (x y) and (y x) x = y (x x) for all x, y: the octonions are, the sedenions are
        not."""
        if self.tol is not None:
            return numeric_laws.is_alternative(self)
        return identities.is_alternative(self.entries())

    def is_flexible(self) -> bool:
        """True when (x y) x = x (y x) for all x, y."""
        if self.tol is not None:
            return numeric_laws.is_flexible(self)
        return identities.is_flexible(self.entries())

    def is_lie(self) -> bool:
        """True when the product is a Lie bracket: anticommutative, and (x y) z + (y z) x + (z x) y = 0."""
        if not self.is_anticommutative():
            return False
        if self.tol is not None:
            return numeric_laws.satisfies_jacobi(self)
        return identities.satisfies_jacobi(self.entries())

    def is_jordan(self) -> bool:
        """True when commutative with (x x y) x = (x x)(y x) for all x, y (exact: on generic elements, up to
        `MAX_GENERIC_DIM` dimensions)."""
        if self.tol is not None:
            return numeric_laws.is_jordan(self)
        if not self.is_commutative():
            return False
        x, y = self._generic("is_jordan", "x"), self.symbols("y")
        square = x * x
        return (square * y) * x == square * (y * x)

    def is_power_associative(self) -> bool:
        """True when every element generates an associative subalgebra: x^2 x = x x^2 and (x^2 x) x = x^2 x^2
        (Albert: enough in characteristic 0; exact: for a generic x, up to `MAX_GENERIC_DIM` dimensions)."""
        if self.tol is not None:
            return numeric_laws.is_power_associative(self)
        x = self._generic("is_power_associative", "x")
        square = x * x
        return square * x == x * square and (square * x) * x == square * square

    def _generic(self, query: str, name: str) -> Element:
        if self.dim > MAX_GENERIC_DIM:
            raise ValueError(f"{query}: {self.name} has dimension {self.dim}; the exact check multiplies generic "
                             f"elements, polynomials in {self.dim} symbols, and stops at MAX_GENERIC_DIM = "
                             f"{MAX_GENERIC_DIM}")
        return self.symbols(name)

    def unit(self) -> Element | None:
        """The two-sided unit as an Element, solved once per algebra (exactly, or within the tolerance of a numeric
        algebra), or None when there is none."""
        return self._unit

    @functools.cached_property
    def _unit(self) -> Element | None:
        table = self._table                    # refuses structure constants past MAX_ENTRIES before the work below
        kept = [{pair[side] for pair, row in table.items() if pair[side] in row} for side in (1, 0)]
        if min(map(len, kept)) < self.dim:             # some u e_j = e_j (or e_j u = e_j) has no e_j term
            return None
        equations: dict[tuple[str, int, int], dict[int, sympy.Expr]] = {
            (side, j, j): {} for side in "lr" for j in range(self.dim)}
        for (i, j), row in table.items():
            for k, c in row.items():
                equations.setdefault(("l", j, k), {})[i] = c      # u e_j = e_j: sum_i u_i lam[i, j, k]
                right = equations.setdefault(("r", i, k), {})     # e_i u = e_i: sum_j u_j lam[i, j, k]
                right[j] = right.get(j, 0) + c
        rows = list(equations.values())
        rhs = [sympy.Integer(int(j == k)) for _, j, k in equations]
        guess = self._rational_unit_guess(rows, rhs) if self.tol is None else None
        if guess is not None and self._is_unit(guess):
            return Element(self, guess)
        solution = self.scalars.solve(rows, rhs, self.dim)
        return None if solution is None else Element(self, solution)

    def _rational_unit_guess(self, rows: Sequence[Mapping[int, sympy.Expr]],
                            rhs: Sequence[sympy.Expr]) -> list[sympy.Expr] | None:
        """Rational candidates from least squares in floating point, to be verified exactly (a fast path only:
        a float residual never decides that there is no unit), or None when the coefficients are symbolic."""
        if any(c.free_symbols for row in self._table.values() for c in row.values()):
            return None
        r, c, v = zip(*[(n, col, float(value)) for n, row in enumerate(rows) for col, value in row.items()]) \
            if any(rows) else ((), (), ())
        if not all(np.isfinite(v)) or 0.0 in v:                   # out of float range: solve exactly only
            return None
        import scipy.sparse.linalg                                # 0.2 s to import: only when a unit is asked for

        matrix = scipy.sparse.csr_matrix((v, (r, c)), shape=(len(rows), self.dim))
        target = np.array([float(b) for b in rhs])
        solution = scipy.sparse.linalg.lsqr(matrix, target, atol=1e-14, btol=1e-14)[0]
        return [sympy.Rational(Fraction(float(u)).limit_denominator(10**6)) for u in solution]

    def _is_unit(self, coefficients: Sequence[sympy.Expr]) -> bool:
        """Exact check that u e_j = e_j = e_j u for every basis element."""
        u = [sympy.Integer(0) if c == 0 else c for c in coefficients]
        for j in range(self.dim):
            e = [sympy.Integer(int(i == j)) for i in range(self.dim)]
            for product in (self._multiply(u, e), self._multiply(e, u)):
                if not all(self.scalars.is_zero(p - q) for p, q in zip(product, e)):
                    return False
        return True

    def _regular(self, x: Element | Key, side: str) -> sympy.Matrix | np.ndarray:
        check_size(self.dim**2, f"{side}_regular", f"entries in the matrix of {self.name}", "use the kernels")
        x = self._as_element(x, "x")
        entries: dict[tuple[int, int], sympy.Expr] = {}
        for (i, j), row in self._table.items():
            coefficient, column = (x.flat[i], j) if side == "left" else (x.flat[j], i)
            if coefficient != 0:
                for k, c in row.items():
                    entries[k, column] = entries.get((k, column), self.scalars.zero) + coefficient * c
        return self.scalars.matrix(self.dim, self.dim, entries)

    def left_regular(self, x: Element | Key) -> sympy.Matrix | np.ndarray:
        """The matrix of y -> x y (columns indexed by the basis of y): exact, or a float array when numeric."""
        return self._regular(x, "left")

    def right_regular(self, x: Element | Key) -> sympy.Matrix | np.ndarray:
        """The matrix of y -> y x: exact, or a float array when numeric."""
        return self._regular(x, "right")

    def center(self) -> list[Element]:
        """A basis (list of Elements) of the commutant {z : z x = x z for all x}.

        For an associative algebra this is the centre.
        """
        check_size(self.dim**2, "center", f"coefficients in a basis of the centre of {self.name} (at most)",
                   "use the kernels")
        rows: dict[tuple[int, int], dict[int, sympy.Expr]] = {}
        for (i, j), row in self._table.items():
            for k, c in row.items():
                equation = rows.setdefault((j, k), {})          # (e_i e_j - e_j e_i)_k z_i = 0
                equation[i] = equation.get(i, 0) + c
                mirrored = rows.setdefault((i, k), {})
                mirrored[j] = mirrored.get(j, 0) - c
        return [Element(self, [vector.get(c, 0) for c in range(self.dim)])
                for vector in self.scalars.nullspace(list(rows.values()), self.dim)]

    def derived_algebra(self) -> list[Element]:
        """A basis of the span of all products x y (`algebra.structure`)."""
        from . import structure
        return structure.derived_algebra(self)

    def ideal(self, generators: Sequence[Element]) -> list[Element]:
        """A basis of the smallest two-sided ideal containing `generators` (`algebra.structure`)."""
        from . import structure
        return structure.ideal(self, generators)

    def radical(self) -> list[Element]:
        """A basis of the largest nilpotent ideal of an associative algebra (`algebra.structure`)."""
        from . import structure
        return structure.radical(self)

    def killing_form(self) -> sympy.Matrix | np.ndarray:
        """The Killing form tr(ad_x ad_y) of a Lie algebra on the basis (`algebra.structure`)."""
        from . import structure
        return structure.killing_form(self)

    def is_semisimple(self) -> bool:
        """No radical (associative) or a nondegenerate Killing form (Lie) (`algebra.structure`)."""
        from . import structure
        return structure.is_semisimple(self)

    def derivations(self) -> list[sympy.Matrix] | list[np.ndarray]:
        """A basis of Der(A), matrices D with D(x y) = D(x) y + x D(y): the infinitesimal symmetries of the
        product (`algebra.structure`)."""
        from . import structure
        return structure.derivations(self)

    def is_homomorphism(self, matrix: ArrayLike, other: Algebra) -> bool:
        """True when the linear map with `matrix` (shape (other.dim, self.dim)) preserves products."""
        if not isinstance(other, Algebra):
            raise TypeError(f"other: expected an Algebra, got {type(other).__name__}")
        check_size(self.dim**2 * other.dim, "is_homomorphism", f"coefficients of the images of the products of "
                   f"{self.name}", "ask on smaller algebras")
        scalars = common([self.scalars, other.scalars])          # numeric when either is, within its tolerance
        array = object_array(matrix, "matrix", f"shape ({other.dim}, {self.dim})")
        if array.shape != (other.dim, self.dim):
            raise ValueError(f"matrix: expected shape ({other.dim}, {self.dim}) (other.dim, self.dim), "
                             f"got {array.shape}")
        columns = [[scalars.convert(v, f"matrix[{r}, {c}]") for r, v in enumerate(array[:, c])]
                   for c in range(self.dim)]
        for i, j in itertools.product(range(self.dim), repeat=2):
            image = [scalars.zero] * other.dim
            for k, c in self._table.get((i, j), {}).items():
                image = [a + c * b for a, b in zip(image, columns[k])]
            product = other._multiply(columns[i], columns[j])
            if not all(scalars.is_zero(a - b) for a, b in zip(image, product)):
                return False
        return True

    def _as_element(self, x: Element | Key, argument: str) -> Element:
        if isinstance(x, Element):
            if x.algebra != self:
                raise ValueError(f"{argument}: expected an element of {self.describe()}, got one of "
                                 f"{x.algebra.describe()}")
            return x
        self.index(x, argument)                                  # a label or index, checked by name
        return self.basis_element(x)

    # ------------------------------------------------------------------ serialisation, comparison
    def to_json(self) -> str:
        """JSON text, exact (a numeric algebra's floats as JSON numbers); `Algebra.from_json` reads it back without
        evaluating any code."""
        from .serialization import dumps
        return dumps(self)

    @staticmethod
    def from_json(text: str) -> Algebra:
        """Read an algebra written by `to_json` (coefficients parsed by a whitelist, never evaluated)."""
        from .serialization import loads
        return loads(text)

    def _same_structure(self, other: Algebra) -> bool:
        """Equal labels and structure constants (materialised for a rule-based algebra, within its limits)."""
        return (self.shape == other.shape and self.scalars == other.scalars and self.nnz == other.nnz
                and self.basis == other.basis and self._table == other._table)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Algebra):
            return NotImplemented
        return self is other or self._same_structure(other)

    def __hash__(self) -> int:
        return hash((self.shape, self.nnz))

    def __repr__(self) -> str:
        kind = "" if self.tol is None else f", numeric tol {self.tol:g}"
        return f"<{type(self).__name__} {self.name}: dim {self.dim}, nnz {self.nnz}{kind}>"

    def _repr_html_(self) -> str:
        """A summary, and the multiplication table when small (`algebra.display`)."""
        from . import display
        return display.html(self)

    def _repr_latex_(self) -> str:
        """The multiplication table in LaTeX when small, else a summary (`algebra.display`)."""
        from . import display
        return display.latex(self)
