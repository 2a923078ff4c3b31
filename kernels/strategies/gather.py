"""gather: one nonzero per (i, j) (group algebras, Clifford algebras, truncated translations, T(V)).

For each component x_a (or y_a, whichever needs fewer steps) the kernel gathers the y components it meets,
multiplies once, and adds the result into the output components they land on, with the sign as an addition or
subtraction: index arithmetic, no multiplications by zero.  Index runs with a constant step are slices (views).
A cyclic group of dimension >= `FOURIER_MIN_DIM` goes through the FFT instead (`fourier`).

>>> import numpy as np
>>> from product_interactions.algebra import translation
>>> from product_interactions.kernels.factor import Factor
>>> from product_interactions.kernels.strategies.identify import Elementwise
>>> level = Gather(Factor.from_algebra(translation(3, cyclic=False)), -1, Elementwise(1))
>>> level(np.array([1.0, 2.0, 0.0]), np.array([1.0, 1.0, 0.0]))     # (1 + 2t)(1 + t) truncated at t^2
array([1., 3., 2.])
"""
from __future__ import annotations

import itertools

import numpy as np

from ..axes import align, components, restore, stack
from . import fourier
from .level import Level

NAME = "gather"

#: Cyclic groups at least this large use the FFT (it was faster than gather and codegen from n = 8 on, for
#: batches of 256 and 8192, on this project's benchmark machine).
FOURIER_MIN_DIM = 8

#: A step is cut into runs of slices (views, in-place adds) when its runs average at least this length.
RUN_LENGTH = 4


def unsupported(factor):
    """Why gather cannot represent `factor`, or None."""
    pair = factor.shared_pair()
    if pair is None:
        return None
    count = int(np.all(factor.indices[:, :2] == pair, axis=1).sum())
    return (f"e_{pair[0]} e_{pair[1]} has {count} nonzero coefficients in {factor.name}; gather needs at most "
            f"one per (i, j)")


def uses_fourier(factor) -> bool:
    """True when gather lowers `factor` through the FFT."""
    return factor.cyclic_signs() is not None and factor.shape[0] >= FOURIER_MIN_DIM


def level(factor, axis: int, inner):
    """The gather level for `factor` on `axis` (the FFT for large cyclic groups)."""
    return fourier.Fourier(factor, axis, inner) if uses_fourier(factor) else Gather(factor, axis, inner)


def _runs(others, outputs):
    """Cut a step's index lists where either stops advancing by a constant positive step."""
    cuts = [0]
    for n in range(2, len(others)):
        start = cuts[-1]
        if n - start >= 2 and (others[n] - others[n - 1] != others[start + 1] - others[start]
                               or outputs[n] - outputs[n - 1] != outputs[start + 1] - outputs[start]
                               or outputs[n] <= outputs[n - 1]):
            cuts.append(n)
    return [(others[a:b], outputs[a:b]) for a, b in zip(cuts, cuts[1:] + [len(others)])]


def _index(values):
    """A slice for a run with a constant positive step, else the index array."""
    values = np.asarray(values)
    steps = np.diff(values)
    if len(values) == 1 or steps[0] > 0 and np.all(steps == steps[0]):
        step = int(steps[0]) if len(values) > 1 else 1
        return slice(int(values[0]), int(values[-1]) + 1, step)
    return values


def _groups(factor, driver: int):
    """Steps (a, others, outputs, coefficient) driven by role `driver` (0: x, 1: y); outputs never repeat."""
    other = 1 - driver
    rows = sorted(zip(factor.indices[:, driver], factor.values, factor.indices[:, other], factor.indices[:, 2]))
    steps = []
    for (a, coefficient), block in itertools.groupby(rows, key=lambda row: (row[0], row[1])):
        rounds = []
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


class Gather(Level):
    """The gather level (see `Level`)."""

    strategy = NAME

    def __init__(self, factor, axis: int, inner):
        super().__init__(factor, axis, inner)
        by_x, by_y = _groups(factor, 0), _groups(factor, 1)
        self.driver = 0 if len(by_x) <= len(by_y) else 1
        self.steps = [(a, _index(b), _index(k), c) for a, b, k, c in (by_x if self.driver == 0 else by_y)]
        c = inner.cost
        d1, d2, d3 = factor.shape
        widest = max((len(b) for _, b, _, _ in (by_x if self.driver == 0 else by_y)), default=0)
        terms = factor.nnz
        self.cost = self.around(flops=terms * (c.flops + c.z) + np.sum(np.abs(factor.values) != 1) * c.z,
                                moved=terms * (c.moved + 3 * c.z + c.y) + 2 * (d1 * c.x + d2 * c.y + d3 * c.z),
                                temporary=d1 * c.x + d2 * c.y + d3 * c.z + widest * (c.y + c.z + c.temporary))

    def __call__(self, x, y):
        x, y = align(x, y)
        xc, yc = components(x, self.axis), components(y, self.axis)
        z = None
        for a, b, k, c in self.steps:
            w = self.inner(xc[a], yc[b]) if self.driver == 0 else self.inner(xc[b], yc[a])
            if z is None:
                z = np.zeros((self.factor.shape[2],) + w.shape[1:], dtype=w.dtype)
            if c == 1:
                z[k] += w
            elif c == -1:
                z[k] -= w
            else:
                z[k] += c * w
        if z is None:
            z = stack([None] * self.factor.shape[2], lambda: self.inner(xc[0], yc[0]))
        return restore(z, self.axis)

    def describe(self) -> list:
        driver = "xy"[self.driver]
        return [f"gather on axis {self.axis}: {len(self.steps)} steps, each z[K] += c * ({driver}_a times "
                f"the gathered components); {self.factor.nnz} terms, no multiplications by zero"]
