"""gather: one nonzero per (i, j) (group algebras, Clifford algebras, truncated translations, T(V)).

For each component x_a (or y_a, whichever needs fewer steps) the kernel gathers the y components it meets,
multiplies once, and adds the result into the output components they land on, with the sign as an addition or
subtraction: index arithmetic, no multiplications by zero.  Index runs with a constant step are slices (views).

>>> import numpy as np
>>> from product_interactions.algebra import translation
>>> from product_interactions.kernels.products.factor import Factor
>>> from product_interactions.kernels.products.strategies.identify import Elementwise
>>> level = lower(Factor.from_algebra(translation(3, cyclic=False)), -1, Elementwise(1))
>>> level(np.array([1.0, 2.0, 0.0]), np.array([1.0, 1.0, 0.0]))     # (1 + 2t)(1 + t) truncated at t^2
array([1., 3., 2.])
"""
from __future__ import annotations

import functools
import itertools
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ...arrays import owner
from ...arrays.axes import align, components, restore, stack
from ..cost import Cost
from ..factor import TABLE_LIMIT
from .level import Level, Program, around
from .operand import Gathered

if TYPE_CHECKING:
    from ..factor import Factor

NAME = "gather"
ROLE = "level"
NESTING = 2

#: A step is cut into runs of slices (views, in-place adds) when its runs average at least this length.
RUN_LENGTH = 4


def unsupported(factor: Factor) -> str | None:
    """Why gather cannot represent `factor`, or None."""
    if factor.nnz > TABLE_LIMIT:
        return f"{factor.name} has {factor.nnz:,} nonzeros, more than kernels.products.factor.TABLE_LIMIT = {TABLE_LIMIT:,}"
    pair = factor.shared_pair()
    if pair is None:
        return None
    count = int(np.all(factor.indices[:, :2] == pair, axis=1).sum())
    return (f"e_{pair[0]} e_{pair[1]} has {count} nonzero coefficients in {factor.name}; gather needs at most "
            f"one per (i, j)")


def cost(factor: Factor, inner: Cost) -> Cost:
    """Per step: one inner product of the driving component with the gathered ones and one add into the output
    components, each a call; gathering or scattering through an index array (not a slice) moves the data again.
    The adds into the outputs are indexed traffic (`Cost.indexed`) through slices too: a JAX program makes each a
    scatter."""
    c, (d1, d2, d3) = inner, factor.shape
    steps, fancy_in, fancy_out = _step_profile(factor)
    scaled = int(np.sum(np.abs(factor.values) != 1))
    widest = max(d1, d2)
    moved = STRIDED * factor.nnz * (c.moved + 3 * c.z) + (2 * fancy_in + 4 * fancy_out) * c.z + \
        2 * (d1 * c.x + d2 * c.y + d3 * c.z)
    return around(factor, c, flops=factor.nnz * (c.flops + c.z) + scaled * c.z, moved=moved,
                  temporary=d1 * c.x + d2 * c.y + d3 * c.z + widest * (c.y + c.z + c.temporary),
                  calls=steps * (c.calls + 2) + 4, repeats=factor.nnz, entries=steps,
                  indexed=2 * STRIDED * factor.nnz * c.z + (2 * fancy_in + 4 * fancy_out) * c.z)


#: The runs of a step are strided views of the components: their traffic costs about this much more than that of
#: contiguous arrays (measured against codegen, whose components are contiguous).
STRIDED = 1.3


#: Factors up to this many nonzeros have their steps counted exactly for the cost (beyond, estimated).
EXACT_STEPS = 2**16


def _step_profile(factor: Factor) -> tuple[int, int, int]:
    """(steps, components gathered through index arrays, components scattered through index arrays)."""
    if factor.nnz > EXACT_STEPS:
        if factor.sparsity and factor.sparsity[0] in ("cyclic", "truncated"):
            return factor.shape[0] * (2 if factor.sparsity[0] == "cyclic" else 1), 0, 0
        return factor.nnz, 0, 0
    return _profile(factor.key)


@functools.lru_cache(maxsize=64)
def _profile(key: tuple[tuple[int, ...], bytes, bytes]) -> tuple[int, int, int]:
    shape, index_bytes, value_bytes = key
    factor = _Table(shape, np.frombuffer(index_bytes, np.int64).reshape(-1, 3), np.frombuffer(value_bytes))
    best: tuple[int, int, int] | None = None
    for driver in (0, 1):
        steps = _groups(factor, driver)
        indexed = [(_index(b), _index(k)) for _, b, k, _ in steps]
        profile = (len(steps), sum(len(b) for b, (bi, _) in zip((s[1] for s in steps), indexed)
                                   if not isinstance(bi, slice)),
                   sum(len(k) for k, (_, ki) in zip((s[2] for s in steps), indexed) if not isinstance(ki, slice)))
        best = profile if best is None or profile < best else best
    return best  # type: ignore[return-value]  # two drivers: set on the first


class _Table:
    """The indices and values `_groups` reads (a cached profile works from the factor's bytes)."""

    def __init__(self, shape: tuple[int, ...], indices: np.ndarray, values: np.ndarray) -> None:
        self.shape, self.indices, self.values = shape, indices, values


def _runs(others: list[np.int64], outputs: list[np.int64]) -> list[tuple[list[np.int64], list[np.int64]]]:
    """Cut a step's index lists where either stops advancing by a constant positive step."""
    cuts = [0]
    for n in range(2, len(others)):
        start = cuts[-1]
        if n - start >= 2 and (others[n] - others[n - 1] != others[start + 1] - others[start]
                               or outputs[n] - outputs[n - 1] != outputs[start + 1] - outputs[start]
                               or outputs[n] <= outputs[n - 1]):
            cuts.append(n)
    return [(others[a:b], outputs[a:b]) for a, b in zip(cuts, cuts[1:] + [len(others)])]


def _index(values: ArrayLike) -> slice | np.ndarray:
    """A slice for a run with a constant positive step, else the index array."""
    values = np.asarray(values)
    steps = np.diff(values)
    if len(values) == 1 or steps[0] > 0 and np.all(steps == steps[0]):
        step = int(steps[0]) if len(values) > 1 else 1
        return slice(int(values[0]), int(values[-1]) + 1, step)
    return values


def _groups(factor: Factor | _Table, driver: int) -> list[tuple[int, list[np.int64], list[np.int64], float]]:
    """Steps (a, others, outputs, coefficient) driven by role `driver` (0: x, 1: y); outputs never repeat."""
    other = 1 - driver
    rows = sorted(zip(factor.indices[:, driver], factor.values, factor.indices[:, other], factor.indices[:, 2]))
    steps = []
    for (a, coefficient), block in itertools.groupby(rows, key=lambda row: (row[0], row[1])):
        rounds: list[dict[np.int64, np.int64]] = []
        for _, _, b, k in block:
            free = next((r for r in rounds if k not in r), None)
            if free is None:
                free = {}
                rounds.append(free)
            free[k] = b
        for r in rounds:
            runs = _runs(list(r.values()), list(r))
            parts = runs if len(runs) * RUN_LENGTH <= len(r) else [(list(r.values()), list(r))]
            steps += [(int(a), b, k, float(coefficient)) for b, k in parts]
    return steps


def lower(factor: Factor, axis: int, inner: Program) -> Gather:
    """The gather level for `factor` on `axis` around `inner`."""
    return Gather(factor, axis, inner)


class Gather(Level):
    """The gather level (see `Level`)."""

    strategy = NAME

    def __init__(self, factor: Factor, axis: int, inner: Program) -> None:
        super().__init__(factor, axis, inner, cost(factor, inner.cost))
        by_x, by_y = _groups(factor, 0), _groups(factor, 1)
        self.driver = 0 if len(by_x) <= len(by_y) else 1
        self.steps = [(a, _index(b), _index(k), c) for a, b, k, c in (by_x if self.driver == 0 else by_y)]

    def __call__(self, x: Any, y: Any) -> Any:
        engine = owner(x)
        x, y = align(x, y)
        xc, yc = components(x, self.axis, engine), components(y, self.axis, engine)
        z: Any = None
        for a, b, k, c in self.steps:
            w = self.inner(xc[a], yc[b]) if self.driver == 0 else self.inner(xc[b], yc[a])
            if z is None:
                z = engine.zeros((self.factor.shape[2],) + tuple(w.shape[1:]), w)
            z = engine.add_at(z, k, w, c)
        if z is None:
            z = stack([None] * self.factor.shape[2], lambda: self.inner(xc[0], yc[0]), engine)
        return restore(z, self.axis, engine)

    def describe(self) -> list[str]:
        driver = "xy"[self.driver]
        return [f"gather on axis {self.axis}: {len(self.steps)} steps, each z[K] += c * ({driver}_a times "
                f"the gathered components); {self.factor.nnz} terms, no multiplications by zero"]


def operand_unsupported(factor: Factor) -> str | None:
    """In a plan's contraction the y side is gathered per (x component, output): each must receive at most one
    term (and each pair (i, j) give one)."""
    reason = unsupported(factor)
    if reason is not None:
        return reason
    i, _, k = factor.indices.T
    pairs = i * factor.shape[2] + k
    if len(np.unique(pairs)) != len(pairs):
        return f"an output of {factor.name} receives two terms with one x component; gather needs one"
    return None


def operand_cost(factor: Factor) -> Cost:
    """One pass over the (x components, outputs) table, then a contraction over the x components."""
    rows, columns, outputs = factor.shape
    return Cost(rows, columns, outputs, rows * outputs, 4 * rows * outputs, rows * outputs, calls=4)


def operand(factor: Factor) -> Gathered:
    """The index table: for x component r and output m, the one y component j with lam[r, j, m] != 0.

    >>> from product_interactions.algebra import translation
    >>> from product_interactions.kernels.products.factor import Factor
    >>> operand(Factor.from_algebra(translation(3))).index       # e_r e_j = e_(r + j mod 3)
    array([[0, 1, 2],
           [2, 0, 1],
           [1, 2, 0]])
    """
    i, j, k = factor.indices.T
    shape = (factor.shape[0], factor.shape[2])
    index, weight, valid = np.zeros(shape, np.int64), np.zeros(shape), np.zeros(shape, bool)
    index[i, k], weight[i, k], valid[i, k] = j, factor.values, True
    return Gathered(index, weight, valid)
