"""`PlanBuilder`: the public API through which expressions are lowered into a `kernels.plans.plan.Plan`, once.

A value under construction (`Value`) is a lazy einsum: operands (inputs, computed registers, constants, masks)
with index labels, summed over the labels that are not outputs.  Per tensor factor a value has either an output
label and a *support* (`ALL` components, or an explicit tuple of them), or no label: it is constant along that
factor, i.e. (something) (x) g_0 with g_0 = sum_a g_a the unit of a position factor, and carries no axis for it.
Products, flips, reductions, projections and linear maps only add operands or rename labels; a nonlinearity, a
relayout or the output emits one `Contract` step, whose path is fixed per shape.  So P^0(X T(X)) is one
contraction of x, x and a slice of lam, never the (n, n, d) product.

Products choose per factor through the strategy registry (`kernels.products.select.in_plan`): a strategy with an
operand form puts the factor into the contraction (identify: a shared label; dense: a block of structure constants;
gather: a `Gather` step of index arithmetic), and when a level strategy (fft, codegen, graded, compiled, scatter)
beats them on a factor, the whole product runs as a `Product` step through a `kernels.Kernel`.  Masked reductions
leave the masked pairs out (``where``), never multiplying them by zero, so a NaN at step t reaches no output
before t.

Each factor's size is a `kernels.plans.plan.Dim`; position factors stay parametric (one plan for every length) until a
constant depends on their size.

>>> import numpy as np
>>> from product_interactions.algebra import diagonal, position
>>> builder = PlanBuilder()
>>> x = builder.signal("x", [position(3), diagonal(2)])
>>> plan = builder.finish(builder.reduce(x, 0), [position(3), diagonal(2)], units={0})
>>> plan({"x": np.arange(12.0).reshape(2, 3, 2)})          # the sum over positions, any length
array([[ 6.,  9.],
       [24., 27.]])
>>> plan({"x": np.ones((1, 5, 2))})
array([[5., 5.]])
"""
from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import opt_einsum

from ...algebra import Diagonal
from ...algebra.algebra import check_choice
from ..products import select
from .attend import fuse_attention
from ..products.factor import Factor
from ..products.kernel import Kernel
from .masks import Mask
from .plan import (Add, Constant, Contract, Dim, Expand, Gather, InputSpec, Lag, Map, MaskArray, Ones, Plan,
                   Product, Register, Scan, Softmax, View)
from ..arrays.pointwise import FUNCTIONS
from ..products.strategies import STRATEGIES
from ..products.strategies.operand import Block, Gathered, Shared

if TYPE_CHECKING:
    from ...algebra import Algebra
    from .plan import Step

#: What a value enumerates of one factor: `ALL` its components, or an explicit tuple of them.
Support = Any
#: The factors with no axis (constant along them: the unit of a position factor).
Units = Collection[int]

#: The support of a factor a value enumerates fully (its size may be parametric).
ALL = "all"


class Operand(NamedTuple):
    """One operand of a lazy contraction; `zero` = (mask, query label, key label) when its entries outside the
    mask are exactly 0 (a masked softmax's output)."""
    source: Any
    labels: str
    batched: bool
    zero: tuple[Any, str, str] | None = None


class Value:
    """A lazy contraction (see the module docstring); `pending` is a masked reduction not yet evaluated:
    (mask source, query label, key label)."""

    __slots__ = ("operands", "out", "support", "dims", "pending")

    def __init__(self, operands: Iterable[Operand], out: Iterable[str | None], support: Iterable[Support],
                 dims: Iterable[Dim], pending: tuple[Any, str, str] | None = None) -> None:
        self.operands, self.out, self.support = list(operands), tuple(out), tuple(support)
        self.dims, self.pending = tuple(dims), pending

    @property
    def batched(self) -> bool:
        return any(o.batched for o in self.operands)

    def _renamed(self, mapping: Mapping[str, str]) -> "Value":
        def rename(labels: str) -> str:
            return "".join(mapping.get(c, c) for c in labels)
        operands = [Operand(o.source, rename(o.labels), o.batched,
                            None if o.zero is None else (o.zero[0], rename(o.zero[1]), rename(o.zero[2])))
                    for o in self.operands]
        out = [None if label is None else mapping.get(label, label) for label in self.out]
        pending = None if self.pending is None else (self.pending[0], rename(self.pending[1]),
                                                     rename(self.pending[2]))
        return Value(operands, out, self.support, self.dims, pending)

    def with_factor(self, factor: int, label: str | None, support: Support,
                    operands: Iterable[Operand] = ()) -> "Value":
        out, supp = list(self.out), list(self.support)
        out[factor], supp[factor] = label, support
        return Value(self.operands + list(operands), out, supp, self.dims, self.pending)


def _components(support: Support, dim: Dim) -> tuple[int, ...]:
    """An explicit tuple of components (pinning the dim when the support was ALL)."""
    if support == ALL:
        dim.pin()
        return tuple(range(dim.size))
    return tuple(support)


def check_value_factor(value: Value, factor: object, argument: str = "factor") -> int:
    """A factor index 0..n-1 of `value`, or a ValueError naming `argument`."""
    n = len(value.out)
    if isinstance(factor, (bool, np.bool_)) or not isinstance(factor, (int, np.integer)) or not 0 <= factor < n:
        raise ValueError(f"{argument}: expected a factor index in 0..{n - 1}, got {factor!r:.60}")
    return int(factor)


def check_mask(mask: object) -> None:
    """None, a `Mask` or a register of per-batch masks, or a TypeError naming ``mask``."""
    if mask is not None and not isinstance(mask, (Mask, Register)):
        raise TypeError(f"mask: expected None, a kernels.Mask or a register, got {type(mask).__name__}")


def check_name(name: object) -> str:
    """An input's name: a str, or a TypeError naming ``name``."""
    if not isinstance(name, str):
        raise TypeError(f"name: expected a str, got {type(name).__name__} {name!r:.60}")
    return name


class PlanBuilder:
    """Builds one plan (see the module docstring).  Values come from `signal`, `parameter` and `placeholder`;
    operations return new values; `finish` returns the `Plan`.  `strategy` forces one strategy on every factor
    of a product it applies to (a level strategy through a `Product` step); "auto" prices them."""

    def __init__(self, parent: "PlanBuilder" | None = None, strategy: str = "auto") -> None:
        if not isinstance(strategy, str) or strategy != "auto" and strategy not in STRATEGIES:
            raise ValueError(f"strategy: expected 'auto' or one of {', '.join(map(repr, STRATEGIES))}, got "
                             f"{strategy!r:.60}")
        self.strategy = strategy if parent is None else parent.strategy
        self._parent = parent
        self._dims = {} if parent is None else parent._dims
        self._counter = [0] if parent is None else parent._counter
        self._registers = [0] if parent is None else parent._registers
        self.inputs = [] if parent is None else parent.inputs
        self.steps = []

    # ------------------------------------------------------------------ names
    def _label(self) -> str:
        self._counter[0] += 1
        return opt_einsum.get_symbol(self._counter[0] + 52)   # past a-zA-Z: never '.' or a batch letter

    def _register(self) -> int:
        self._registers[0] += 1
        return self._registers[0] - 1

    def dim(self, algebra: Algebra) -> Dim:
        """The size of a factor algebra: one `Dim` per distinct algebra; position-like ones start parametric."""
        key = (type(algebra).__name__, algebra.name, algebra.dim)
        if key not in self._dims:
            self._dims[key] = Dim(algebra.name, algebra.dim, isinstance(algebra, Diagonal))
        return self._dims[key]

    # ------------------------------------------------------------------ inputs
    def _leaf(self, register: int, factors: Sequence[Algebra], units: Units, support: Any,
              batched: bool) -> Value:
        dims = [self.dim(f) for f in factors]
        out = [None if f in units else self._label() for f in range(len(factors))]
        supports = [None if f in units else support.get(f, ALL) for f in range(len(factors))]
        for f, s in enumerate(supports):
            if s not in (None, ALL):
                dims[f].pin()
        labels = "".join(label for label in out if label is not None)
        return Value([Operand(Register(register), labels, batched)], out, supports, dims)

    def _axes(self, factors: Sequence[Algebra], units: Units, support: Any, pin: bool) -> list[Any]:
        axes = []
        for f, factor in enumerate(factors):
            if f in units:
                continue
            dim = self.dim(factor)
            if f in support:
                dim.pin()
                axes.append(len(support[f]))
            else:
                if pin:
                    dim.pin()
                axes.append(dim)
        return axes

    def signal(self, name: str, factors: Sequence[Algebra], units: Units = frozenset(), support: Any = None,
               describe_as: str = "") -> Value:
        """An input with batch axes, then one axis per factor not in `units` (components `support[f]`)."""
        check_name(name)
        support = support or {}
        register = self._register()
        self.inputs.append(InputSpec(name, "signal", self._axes(factors, units, support, False), register,
                                     describe_as))
        return self._leaf(register, factors, units, support, True)

    def parameter(self, name: str, factors: Sequence[Algebra], units: Units = frozenset(),
                  support: Any = None) -> Value:
        """A parameter: exactly one axis per factor not in `units` (its size fixed)."""
        check_name(name)
        support = support or {}
        register = self._register()
        self.inputs.append(InputSpec(name, "parameter", self._axes(factors, units, support, True), register))
        return self._leaf(register, factors, units, support, False)

    def matrix(self, name: str, shape: Any) -> int:
        """A parameter that is a plain array of `shape` (a linear map); its register."""
        check_name(name)
        if isinstance(shape, (str, bytes)) or not isinstance(shape, Iterable) or not all(
                isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_)) and n > 0 for n in shape):
            raise TypeError(f"shape: expected a sequence of positive ints, got {shape!r:.60}")
        register = self._register()
        self.inputs.append(InputSpec(name, "parameter", tuple(int(n) for n in shape), register))
        return register

    def placeholder(self, factors: Sequence[Algebra], units: Units = frozenset()) -> Value:
        """A value bound inside a scan body (the state, the current input): a register written by the scan."""
        return self._leaf(self._register(), factors, units, {}, True)

    # ------------------------------------------------------------------ evaluation
    def _emit(self, step: Step) -> int:
        self.steps.append(step)
        return step.output

    def evaluate(self, value: Value, order: Sequence[int] | None = None) -> Value:
        """Run the contraction: one array with batch axes, then one axis per labelled factor (in `order`, by
        default the factors' order)."""
        factors = [f for f, label in enumerate(value.out) if label is not None]
        order = factors if order is None else list(order)
        output = "".join(value.out[f] for f in order)
        if len(value.operands) == 1 and value.pending is None and value.operands[0].labels == output and \
                isinstance(value.operands[0].source, Register):
            if order == factors:
                return value
        inputs = [("..." if o.batched else "") + o.labels for o in value.operands]
        equation = ",".join(inputs) + "->" + ("..." if value.batched else "") + output
        exclusion = None
        if value.pending is not None:
            source, query, key = value.pending
            zero = {n for n, o in enumerate(value.operands)
                    if o.zero is not None and o.zero[1:] == (query, key) and _same_mask(o.zero[0], source)}
            exclusion = (source, query, key, zero)
        register = self._emit(Contract(self._register(), equation, [o.source for o in value.operands], exclusion))
        return Value([Operand(Register(register), output, value.batched)], value.out, value.support, value.dims)

    def fresh(self, value: Value) -> Value:
        """The same value with all its labels replaced by new ones (so it can meet itself in a product)."""
        used = {c for o in value.operands for c in o.labels}
        return value._renamed({c: self._label() for c in sorted(used)})

    def labelled(self, value: Value, factor: int) -> Value:
        """Give a constant (unit) factor an explicit label: a vector of ones along its dim."""
        if value.out[factor] is not None:
            return value
        label = self._label()
        return value.with_factor(factor, label, ALL, [Operand(Ones(value.dims[factor]), label, False)])

    # ------------------------------------------------------------------ structural operations
    def scale(self, value: Value, c: float) -> Value:
        """c times the value: a 0-d constant operand."""
        if isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, float, np.integer, np.floating)) or \
                not np.isfinite(c):
            raise TypeError(f"c: expected a finite real number, got {c!r:.60}")
        return Value(value.operands + [Operand(Constant(np.asarray(float(c))), "", False)], value.out,
                     value.support, value.dims, value.pending)

    def swap(self, value: Value, a: int, b: int) -> Value:
        """Exchange the contents of factors a and b (the flip T; both hold the same algebra)."""
        a, b = check_value_factor(value, a, "a"), check_value_factor(value, b, "b")
        if value.dims[a].size != value.dims[b].size:
            raise ValueError(f"b: expected a factor of the size of factor {a} ({value.dims[a].size}), got factor {b} "
                             f"of size {value.dims[b].size}")
        out, supp = list(value.out), list(value.support)
        out[a], out[b] = out[b], out[a]
        supp[a], supp[b] = supp[b], supp[a]
        return Value(value.operands, out, supp, value.dims, value.pending)

    def reduce(self, value: Value, factor: int, mask: Any = None, query: int | None = None) -> Value:
        """Sum over the factor's components, keeping only the (query, component) pairs `mask` keeps (a `Mask`,
        or a register holding one mask per batch entry); the factor becomes constant (unit)."""
        factor = check_value_factor(value, factor)
        check_mask(mask)
        if mask is None:
            return value.with_factor(factor, None, None)
        query = check_value_factor(value, query, "query")
        if query == factor:
            raise ValueError(f"query: expected a factor other than the reduced factor {factor}, got {query}")
        if value.pending is not None:
            value = self.evaluate(value)
        value = self.labelled(self.labelled(value, query), factor)
        if isinstance(mask, Register):
            if value.support[query] != ALL or value.support[factor] != ALL:
                raise ValueError("mask: a per-batch mask needs both factors fully supported")
            source = mask
        else:
            supports = [None if s == ALL else s for s in (value.support[query], value.support[factor])]
            if not mask.generic or any(s is not None for s in supports):
                value.dims[query].pin()
                value.dims[factor].pin()
            source = MaskArray(mask, (value.dims[query], value.dims[factor]), supports)
        reduced = value.with_factor(factor, None, None)
        reduced.pending = (source, value.out[query], value.out[factor])
        return reduced

    def select(self, value: Value, factor: int, keep: Sequence[int]) -> Value:
        """Restrict a labelled factor to the components in `keep` (a projection)."""
        factor = check_value_factor(value, factor)
        support = _components(value.support[factor], value.dims[factor])
        if isinstance(keep, (str, bytes)) or not isinstance(keep, Iterable) or not all(
                isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)) for k in keep):
            raise TypeError(f"keep: expected a sequence of component indices (ints), got {keep!r:.60}")
        wanted = set(keep)
        if not wanted or not wanted <= set(support):
            raise ValueError(f"keep: expected components of factor {factor} among {support[:8]}..., got {keep!r:.60}")
        positions = [i for i, component in enumerate(support) if component in wanted]
        if len(positions) == len(support):
            return value
        label = value.out[factor]
        holders = [n for n, o in enumerate(value.operands) if label in o.labels]
        if len(holders) == 1 and isinstance(value.operands[holders[0]].source, Constant):
            operand = value.operands[holders[0]]              # slice the constant itself (lam's e_0 part, say)
            array = operand.source.value
            sliced = np.take(array, positions, axis=operand.labels.index(label) + array.ndim - len(operand.labels))
            operands = list(value.operands)
            operands[holders[0]] = Operand(Constant(sliced), operand.labels, operand.batched, operand.zero)
            return Value(operands, value.out, value.support, value.dims, value.pending).with_factor(
                factor, label, tuple(support[i] for i in positions))
        selection = np.zeros((len(positions), len(support)))
        selection[np.arange(len(positions)), positions] = 1.0
        new = self._label()
        renamed = value._renamed({label: new})
        return renamed.with_factor(factor, label, tuple(support[i] for i in positions),
                                   [Operand(Constant(selection), label + new, False)])

    def linear(self, matrix: int, value: Value, sources: Sequence[int], source_dims: Sequence[int],
               target_factors: Sequence[Algebra]) -> Value:
        """The matrix (register of shape (prod target dims, prod source dims)), read as (target dims..., source
        dims...), applied to the adjacent `sources` factors, which `target_factors` replace."""
        for factor in sources:
            value = self.labelled(value, factor)
            value.dims[factor].pin()
        target_dims = [f.dim for f in target_factors]
        takes = [None if value.support[f] == ALL else list(value.support[f]) for f in sources]
        block = self._emit(View(self._register(), matrix, tuple(target_dims) + tuple(source_dims), takes,
                                len(target_dims)))
        new = [self._label() for _ in target_dims]
        operand = Operand(Register(block), "".join(new) + "".join(value.out[f] for f in sources), False)
        first, last = sources[0], sources[-1]
        dims = [self.dim(f) for f in target_factors]
        for d in dims:
            d.pin()
        out = value.out[:first] + tuple(new) + value.out[last + 1:]
        support = value.support[:first] + (ALL,) * len(target_dims) + value.support[last + 1:]
        return Value(value.operands + [operand], out, support, value.dims[:first] + tuple(dims) +
                     value.dims[last + 1:], value.pending)

    # ------------------------------------------------------------------ products
    def multiply(self, k: Value, x: Value, factors: Sequence[Algebra]) -> Value:
        """The product k x factor by factor (see the module docstring for how each factor is lowered)."""
        x = self.fresh(x)
        plans: dict[int, tuple[str, Factor, Any]] = {}
        # A level runs the whole product as one Kernel on full axes: only when no factor is constant on a side
        # (a Kernel's output varies along every factor, and it would expand the constant ones).
        levels = all(k.out[f] is not None and x.out[f] is not None for f in range(len(factors)))
        for f, factor in enumerate(factors):
            if k.out[f] is not None and x.out[f] is not None:
                rows, columns = (None if side.support[f] == ALL else side.support[f] for side in (k, x))
                name, lowered = select.in_plan(Factor.from_algebra(factor), rows, columns, self.strategy, levels)
                module = STRATEGIES[name]
                form = module.operand(lowered) if hasattr(module, "operand") else None
                if isinstance(form, (Block, Gathered)):
                    k.dims[f].pin()                         # a constant depends on the factor's size
                plans[f] = (name, lowered, form)
        if any(form is None for _, _, form in plans.values()):
            return self._product(k, x, factors, {f: name for f, (name, _, _) in plans.items()})
        gathered = [f for f, (_, _, form) in plans.items() if isinstance(form, Gathered)]
        if gathered:
            x = self.evaluate(x)
            for f in gathered:
                x = self._gather(x, f, plans[f][2], k.out[f])
        out, support, extra, rename = [], [], [], {}
        for f in range(len(factors)):
            lk, lx = k.out[f], x.out[f]
            if f in gathered or lk is None or lx is None:
                out.append(lk if lx is None else lx)
                support.append(k.support[f] if lx is None else x.support[f])
                continue
            form = plans[f][2]
            if isinstance(form, Shared):
                sk, sx = k.support[f], x.support[f]
                if sk == ALL and sx == ALL:
                    common = ALL
                else:
                    sk, sx = _components(sk, k.dims[f]), _components(sx, x.dims[f])
                    present = set(sx)
                    common = tuple(c for c in sk if c in present)
                    k, x = self.select(k, f, common), self.select(x, f, common)
                rename[x.out[f]] = k.out[f]
                if form.coefficients is not None:
                    k.dims[f].pin()
                    extra.append(Operand(Constant(form.coefficients[list(_components(common, k.dims[f]))]),
                                         k.out[f], False))
                out.append(k.out[f])
                support.append(common)
            else:                                                          # a block of lam
                label = self._label()
                extra.append(Operand(Constant(form.values), lk + lx + label, False))
                out.append(label)
                support.append(form.outputs)
        x = x._renamed(rename)
        pending = k.pending or x.pending
        if k.pending is not None and x.pending is not None:
            x = self.evaluate(x)
            pending = k.pending
        return Value(k.operands + x.operands + extra, out, support, k.dims, pending)

    def _gather(self, x: Value, f: int, table: Gathered, row_label: str) -> Value:
        """x (evaluated) gathered along factor f by `table`: x'[..., r, m] = weight[r, m] x[..., index[r, m]]."""
        (operand,) = x.operands
        axis = operand.labels.index(x.out[f]) - len(operand.labels)
        register = self._emit(Gather(self._register(), operand.source.index, axis, table.index, table.weight,
                                     table.valid))
        output = self._label()
        labels = operand.labels.replace(x.out[f], row_label + output)
        result = Value([Operand(Register(register), labels, operand.batched)], x.out, x.support, x.dims)
        return result.with_factor(f, output, tuple(range(table.index.shape[1])))

    def _product(self, k: Value, x: Value, factors: Sequence[Algebra], names: dict[int, str]) -> Value:
        """The product through a `Kernel` with these strategies (identify where no factor's is named): both values
        on full axes of every factor, then one `Product` step."""
        kernel = Kernel([Factor.from_algebra(f) for f in factors], tuple(names.get(f, "identify")
                                                                         for f in range(len(factors))))
        left = self.expand(k, frozenset(), full=True)
        right = self.expand(x, frozenset(), full=True)
        register = self._emit(Product(self._register(), left.operands[0].source.index,
                                      right.operands[0].source.index, kernel))
        dims = [self.dim(f) for f in factors]
        for d in dims:
            d.pin()
        out = [self._label() for _ in factors]
        return Value([Operand(Register(register), "".join(out), left.batched or right.batched)], out,
                     [ALL] * len(factors), dims)

    # ------------------------------------------------------------------ layouts
    def expand(self, value: Value, units: Units, full: bool = False) -> Value:
        """The value as one array: batch axes, then a full axis for every factor not in `units` (supported
        components placed, zeros elsewhere; a constant factor repeated, or kept as a size-1 axis unless `full`)."""
        value = self.evaluate(value)
        (operand,) = value.operands
        labelled = [f for f, label in enumerate(value.out) if label is not None]
        layout, out = [], []
        for f in range(len(value.out)):
            if f in units:
                if value.out[f] is not None:
                    raise ValueError(f"factor {f}: expected a value constant along it")
                out.append(None)
                continue
            if value.out[f] is None:
                layout.append(("repeat", value.dims[f]) if full else ("new",))
            else:
                axis = operand.labels.index(value.out[f])
                if value.support[f] == ALL:
                    layout.append(("keep", axis))
                else:
                    value.dims[f].pin()
                    layout.append(("scatter", axis, tuple(value.support[f]), value.dims[f]))
            out.append(self._label())
        trivial = all(entry == ("keep", n) for n, entry in enumerate(layout)) and len(layout) == len(labelled)
        register = operand.source.index if trivial else self._emit(Expand(self._register(), operand.source.index,
                                                                          layout))
        support = [None if label is None else ALL for label in out]
        return Value([Operand(Register(register), "".join(label for label in out if label is not None),
                              operand.batched)], out, support, value.dims)

    def add(self, a: Value, b: Value, units: Units) -> Value:
        """a + b; factors where only one side is constant broadcast."""
        left, right = self.expand(a, units), self.expand(b, units)
        register = self._emit(Add(self._register(), left.operands[0].source.index, right.operands[0].source.index))
        out = [None if f in units else self._label() for f in range(len(a.out))]
        return Value([Operand(Register(register), "".join(label for label in out if label is not None),
                              left.batched or right.batched)], out,
                     [None if label is None else ALL for label in out], a.dims)

    # ------------------------------------------------------------------ nonlinear steps
    def map(self, value: Value, function: str) -> Value:
        """F coefficient by coefficient (`kernels.arrays.pointwise`)."""
        check_choice(function, tuple(FUNCTIONS), "function")
        value = self.evaluate(value)
        (operand,) = value.operands
        register = self._emit(Map(self._register(), operand.source.index, function))
        return Value([Operand(Register(register), operand.labels, operand.batched)], value.out, value.support,
                     value.dims)

    def softmax(self, value: Value, factor: int, mask: Any = None, query: int | None = None) -> Value:
        """Softmax over `factor`, within `mask` over (query, factor) pairs (a `Mask` or a register of per-batch
        masks); masked entries come out exactly 0."""
        factor = check_value_factor(value, factor)
        check_mask(mask)
        value = self.labelled(value, factor)
        if mask is not None:
            query = check_value_factor(value, query, "query")
            if query == factor:
                raise ValueError(f"query: expected a factor other than the softmax's factor {factor}, got {query}")
            value = self.labelled(value, query)
        others = [f for f, label in enumerate(value.out)
                  if label is not None and f != factor and (mask is None or f != query)]
        order = others + ([query] if mask is not None else []) + [factor]
        value = self.evaluate(value, order)
        (operand,) = value.operands
        source = None
        if isinstance(mask, Register):
            source = mask
        elif mask is not None:
            supports = [None if s == ALL else s for s in (value.support[query], value.support[factor])]
            if not mask.generic or any(s is not None for s in supports):
                value.dims[query].pin()
                value.dims[factor].pin()
            source = MaskArray(mask, (value.dims[query], value.dims[factor]), supports)
        register = self._emit(Softmax(self._register(), operand.source.index, -1, source,
                                      None if mask is None else (-2, -1)))
        zero = None if mask is None else (source, value.out[query], value.out[factor])
        return Value([Operand(Register(register), operand.labels, operand.batched, zero)], value.out, value.support,
                     value.dims)

    def lag(self, value: Value, factor: int, lag: int, units: Units) -> Value:
        """x_t -> x_{t - lag} along a factor the value varies along (zeros first)."""
        factor = check_value_factor(value, factor)
        if isinstance(lag, (bool, np.bool_)) or not isinstance(lag, (int, np.integer)):
            raise TypeError(f"lag: expected an int, got {lag!r:.60}")
        if lag < 0:
            raise ValueError(f"lag: expected a delay of 0 or more steps, got {lag}")
        value = self.expand(value, units)
        (operand,) = value.operands
        axis = operand.labels.index(value.out[factor]) - len(operand.labels)
        register = self._emit(Lag(self._register(), operand.source.index, axis, lag))
        return Value([Operand(Register(register), operand.labels, operand.batched)], value.out, value.support,
                     value.dims)

    # ------------------------------------------------------------------ scans
    def body(self) -> "PlanBuilder":
        """A builder for a scan's body: the same registers and dims, its own steps."""
        return PlanBuilder(self)

    def scan(self, x: Value, time: int, initial: Any, body: "PlanBuilder", h: Value, x_t: Value, result: Value,
             x_t_units: Units, state_factors: Sequence[Algebra], return_sequences: bool) -> Value:
        """H(t) = body(H(t-1), X(t)) along factor `time` of x; `initial` a value without batch axes (or None)."""
        full = self.expand(x, frozenset())
        (operand,) = full.operands
        count = len(full.out)
        initial_register = None
        if initial is not None:
            initial_register = self.expand(initial, frozenset()).operands[0].source.index
        result = body.expand(result, frozenset(), full=True)
        hoisted, looped = _split_invariant(body.steps, {h.operands[0].source.index,
                                                        x_t.operands[0].source.index})
        self.steps.extend(hoisted)
        drop = sorted(x_t_units)
        state = [self.dim(f) for f in state_factors]
        register = self._emit(Scan(self._register(), operand.source.index, initial_register, time - count, count,
                                   h.operands[0].source.index, x_t.operands[0].source.index,
                                   result.operands[0].source.index, looped, drop, state, return_sequences))
        factors = ([full.dims[time]] if return_sequences else []) + state
        out = [self._label() for _ in factors]
        return Value([Operand(Register(register), "".join(out), True)], out, [ALL] * len(out), factors)

    # ------------------------------------------------------------------ the plan
    def finish(self, value: Value, factors: Sequence[Algebra], units: Units = frozenset(),
               name: str = "expression") -> Plan:
        """The plan whose output is `value` with batch axes, then one full axis per factor not in `units`."""
        del factors
        result = self.expand(value, units, full=True)
        output = result.operands[0].source.index
        return Plan(self.inputs, fuse_attention(self.steps, output), output, self._registers[0], name)


def _same_mask(a: Any, b: Any) -> bool:
    if isinstance(a, Register) or isinstance(b, Register):
        return a is b or (isinstance(a, Register) and isinstance(b, Register) and a.index == b.index)
    return a.mask == b.mask and a.supports == b.supports


def _split_invariant(steps: Sequence[Step], variant_registers: Collection[int]) -> tuple[list[Step], list[Step]]:
    """(steps that depend on neither loop register, the others) in order."""
    variant, hoisted, looped = set(variant_registers), [], []
    for step in steps:
        if variant & set(step.reads):
            variant.add(step.output)
            looped.append(step)
        else:
            hoisted.append(step)
    return hoisted, looped
