"""`Fused`: a lazy einsum that expression lowering extends node by node and evaluates once.

A value of an expression over factors A_1 (x) ... (x) A_n is kept as a product of operands (arrays with index
labels) summed over the labels that are not outputs.  Per factor the value has either

* an output label and a *support* (the component indices its axis enumerates), or
* no label: the value is constant along that factor, i.e. it is (something) (x) g_0 where g_0 = sum_a g_a is
  the unit of a position / diagonal factor.  This is how X = sum_k x^(k) g_k (x) g_0 (x) e is stored without
  repeating x along the second position axis.

Products, flips, reductions, projections and linear maps only add operands or rename labels; a nonlinearity or
the output calls `evaluate`, which runs one contraction (`kernels.contract`: opt_einsum's order, found once per
shape and cached, with batched matrix products).  So P^0(X T(X)) becomes a single contraction of x, x and a
slice of lam, never the (n, n, d) product.

>>> import numpy as np
>>> labels = Labels()
>>> x = Fused.leaf(np.arange(6.).reshape(2, 3), (labels.new(), labels.new()), (range(2), range(3)), batched=False)
>>> x.reduce_sum(1).evaluate()
array([ 3., 12.])
"""
from __future__ import annotations

import functools

import numpy as np
import opt_einsum

from .contract import contract


class Labels:
    """A source of fresh einsum index symbols for one compilation."""

    def __init__(self):
        self._count = 0

    def new(self) -> str:
        self._count += 1
        return opt_einsum.get_symbol(self._count + 52)   # skip a-zA-Z so generated names never clash with '...'


@functools.lru_cache(maxsize=512)
def _expression(equation: str, shapes: tuple):
    return opt_einsum.contract_expression(equation, *shapes, optimize="auto-hq" if len(shapes) <= 6 else "auto")


class Fused:
    """A lazy contraction: operands [(array, labels, batched, constant)], one output label (or None) per factor."""

    def __init__(self, operands, out, support):
        self.operands = list(operands)
        self.out = tuple(out)
        self.support = tuple(None if s is None else tuple(s) for s in support)

    @classmethod
    def leaf(cls, array, out, support, batched: bool, constant: bool = False):
        """A value held by one array whose axes are the labelled factors (after batch axes if `batched`)."""
        labels = "".join(label for label in out if label is not None)
        return cls([(array, labels, batched, constant)], out, support)

    # ------------------------------------------------------------------ renaming
    def _renamed(self, mapping):
        rename = lambda labels: "".join(mapping.get(c, c) for c in labels)  # noqa: E731
        operands = [(a, rename(l), b, c) for a, l, b, c in self.operands]
        out = [None if label is None else mapping.get(label, label) for label in self.out]
        return Fused(operands, out, self.support)

    def fresh(self, labels: Labels) -> "Fused":
        """The same value with all its labels replaced by new ones (so it can meet itself in a product)."""
        used = {c for _, l, _, _ in self.operands for c in l}
        return self._renamed({c: labels.new() for c in sorted(used)})

    @property
    def batched(self) -> bool:
        return any(b for _, _, b, _ in self.operands)

    # ------------------------------------------------------------------ structural operations
    def with_factor(self, factor: int, label, support, operands=()) -> "Fused":
        out, supp = list(self.out), list(self.support)
        out[factor], supp[factor] = label, support
        return Fused(self.operands + list(operands), out, supp)

    def scaled(self, c: float) -> "Fused":
        """c times this value: a 0-d constant operand."""
        return Fused(self.operands + [(np.asarray(c), "", False, True)], self.out, self.support)

    def swap(self, a: int, b: int) -> "Fused":
        """Exchange the contents of factors a and b (the flip T)."""
        out, supp = list(self.out), list(self.support)
        out[a], out[b] = out[b], out[a]
        supp[a], supp[b] = supp[b], supp[a]
        return Fused(self.operands, out, supp)

    def labelled(self, factor: int, size: int, labels: Labels) -> "Fused":
        """Give a constant (unit) factor an explicit label: a ones operand of length `size`."""
        if self.out[factor] is not None:
            return self
        label = labels.new()
        return self.with_factor(factor, label, range(size), [(np.ones(size), label, False, True)])

    def reduce_sum(self, factor: int, mask=None, query: int | None = None, labels: Labels | None = None):
        """Sum over the factor's components (weighted by mask[query component, component]); the factor becomes
        constant (unit)."""
        value = self
        if mask is None:
            return value.with_factor(factor, None, None)
        value = value.labelled(query, mask.shape[0], labels).labelled(factor, mask.shape[1], labels)
        q, f = value.out[query], value.out[factor]
        restricted = mask[np.ix_(value.support[query], value.support[factor])]
        return Fused(value.operands + [(restricted, q + f, False, True)], value.out, value.support) \
            .with_factor(factor, None, None)

    def select(self, factor: int, keep, labels: Labels) -> "Fused":
        """Restrict a labelled factor to the components in `keep` (a projection)."""
        support = self.support[factor]
        positions = [i for i, component in enumerate(support) if component in set(keep)]
        if len(positions) == len(support):
            return self
        label = self.out[factor]
        holders = [n for n, (_, l, _, _) in enumerate(self.operands) if label in l]
        if len(holders) == 1 and self.operands[holders[0]][3]:
            array, l, b, c = self.operands[holders[0]]
            axis = l.index(label) + (array.ndim - len(l))
            operands = list(self.operands)
            operands[holders[0]] = (np.take(array, positions, axis=axis), l, b, c)
            return Fused(operands, self.out, self.support).with_factor(
                factor, label, [support[i] for i in positions])
        new = labels.new()
        selection = np.zeros((len(positions), len(support)))
        selection[np.arange(len(positions)), positions] = 1.0
        renamed = self._renamed({label: new})
        return renamed.with_factor(factor, label, [support[i] for i in positions],
                                   [(selection, label + new, False, True)])

    # ------------------------------------------------------------------ evaluation
    def equation(self):
        inputs = [("..." if b else "") + l for _, l, b, _ in self.operands]
        output = ("..." if self.batched else "") + "".join(label for label in self.out if label is not None)
        return ",".join(inputs) + "->" + output

    def evaluate(self):
        """Run the contraction: an array with batch axes, then one axis per labelled factor (its support)."""
        variable = [a for a, _, _, constant in self.operands if not constant]
        dtype = np.result_type(*[a.dtype for a in variable]) if variable else np.float64
        arrays = [np.asarray(a, dtype=dtype) if constant else a for a, _, _, constant in self.operands]
        inputs, output = self.equation().split("->")
        if inputs == output:
            return arrays[0]
        backend = next((type(a).__module__.split(".")[0] for a in arrays if not isinstance(a, np.ndarray)), "numpy")
        if backend in ("numpy", "autograd"):
            return contract(self.equation(), *arrays)
        return _expression(self.equation(), tuple(np.shape(a) for a in arrays))(*arrays, backend=backend)

    def materialised(self, labels: Labels) -> "Fused":
        """This value as a single evaluated operand (fresh labels)."""
        out = [None if label is None else labels.new() for label in self.out]
        return Fused.leaf(self.evaluate(), out, self.support, batched=self.batched)


#: A factor's structure constants enter a fused contraction as a dense block while it takes at most this many
#: bytes; past it, a group-like factor (one nonzero per pair) is lowered by gathering instead.
BLOCK_BYTES = 2**24


def multiply(k: Fused, x: Fused, factors, labels: Labels) -> Fused:
    """The product k x, factor by factor; `factors` are the `kernels.factor.Factor`s of the algebra's factors.

    Per factor: a side constant there (g_0, the unit) passes the other through; a diagonal factor
    (e_i e_j = c_i delta_ij e_i) shares one label; otherwise the structure constants restricted to the two
    supports join the contraction as a constant block, or, when that block would be large and the factor is
    group-like, x is gathered along the factor, one row per component k holds (a convolution by index
    arithmetic).
    """
    x = x.fresh(labels)
    gathered = [f for f, factor in enumerate(factors)
                if k.out[f] is not None and x.out[f] is not None and factor.diagonal() is None
                and len(k.support[f]) * len(x.support[f]) * factor.shape[2] * 8 > BLOCK_BYTES
                and _gatherable(factor, k.support[f])]
    if gathered:
        x = x.materialised(labels)
        for f in gathered:
            x = _gather(x, f, factors[f], k.support[f], k.out[f], labels)
    out, support, extra, rename = [], [], [], {}
    for f, factor in enumerate(factors):
        lk, lx, sk, sx = k.out[f], x.out[f], k.support[f], x.support[f]
        if f in gathered or lk is None or lx is None:
            out.append(lk if lx is None else lx)
            support.append(sk if lx is None else sx)
            continue
        coefficients = factor.diagonal()
        if coefficients is not None:
            common = [c for c in sk if c in set(sx)]
            k, x = k.select(f, common, labels), x.select(f, common, labels)
            rename[x.out[f]] = k.out[f]
            if np.any(coefficients[common] != 1):
                extra.append((coefficients[common], k.out[f], False, True))
            out.append(k.out[f])
            support.append(common)
        else:
            block, components = _block(factor, sk, sx)
            label = labels.new()
            extra.append((block, lk + lx + label, False, True))
            out.append(label)
            support.append(components)
    x = x._renamed(rename)
    return Fused(k.operands + x.operands + extra, out, support)


def _block(factor, rows, columns):
    """lam restricted to rows x columns (positions in the supports) and to its nonzero outputs."""
    i, j, m = factor.indices.T
    row_of = np.full(factor.shape[0], -1)
    row_of[list(rows)] = np.arange(len(rows))
    column_of = np.full(factor.shape[1], -1)
    column_of[list(columns)] = np.arange(len(columns))
    keep = (row_of[i] >= 0) & (column_of[j] >= 0)
    components = np.unique(m[keep])
    block = np.zeros((len(rows), len(columns), len(components)))
    block[row_of[i[keep]], column_of[j[keep]], np.searchsorted(components, m[keep])] = factor.values[keep]
    return block, components.tolist()


def _gatherable(factor, rows) -> bool:
    """Each (row i, output m) receives at most one term: the output can be gathered from the other side."""
    i, _, m = factor.indices.T
    keep = np.isin(i, list(rows))
    pairs = i[keep] * factor.shape[2] + m[keep]
    return factor.one_per_pair() and len(np.unique(pairs)) == len(pairs)


def _gather(x: Fused, f: int, factor, rows, row_label: str, labels: Labels) -> Fused:
    """On a single-operand x: the axis of factor f becomes (row, output) with
    x'[..., r, m] = lam[i_r, j, m] x[..., j], one j per (r, m); the row axis takes `row_label`."""
    i, j, m = factor.indices.T
    row_of = np.full(factor.shape[0], -1)
    row_of[list(rows)] = np.arange(len(rows))
    position = np.full(factor.shape[1], -1)
    position[list(x.support[f])] = np.arange(len(x.support[f]))
    keep = (row_of[i] >= 0) & (position[j] >= 0)
    index = np.zeros((len(rows), factor.shape[2]), dtype=np.int64)
    weight = np.zeros((len(rows), factor.shape[2]))
    index[row_of[i[keep]], m[keep]] = position[j[keep]]
    weight[row_of[i[keep]], m[keep]] = factor.values[keep]
    (array, held, batched, _), = x.operands
    axis = np.ndim(array) - len(held) + held.index(x.out[f])
    gathered = array[(slice(None),) * axis + (index,)]          # (..., rows, outputs, ...)
    weight = weight.reshape(weight.shape + (1,) * (np.ndim(array) - axis - 1)).astype(array.dtype)
    output = labels.new()
    result = Fused([(gathered * weight, held.replace(x.out[f], row_label + output), batched, False)],
                   x.out, x.support)
    return result.with_factor(f, output, range(factor.shape[2]))
