"""`Kernel`: a product z = x * y (or any bilinear map) lowered to numeric code, applied to batched arrays.

Build one with `kernels.product` or `kernels.bilinear`.  Arrays carry batch axes first, then one axis per
factor (``layout="component-major"`` puts the factor axes first instead).  numpy arrays run every strategy, in
chunks of the batch sized for the cache and within ``kernels.MEMORY_LIMIT``; autograd arrays run the same code
as one primitive with kernel VJPs (`kernels.products.autodiff`); torch and JAX arrays run the same program on their engine
(`kernels.arrays.registry`), differentiated by their own autodiff, on their device and in their dtype (a numpy operand
beside one of them is converted into it).  With ``strategy="auto"`` the
strategies are chosen for the batch of each call (the cost model weighs calls against arithmetic, so a small
batch may take other strategies than a large one); `strategies` are the choice for `select.NOMINAL_ROWS` rows.

Values that are not finite follow one rule on every strategy and engine: z_k is finite exactly when every nonzero
term lam[i, j, k] x_i y_j is, and then it is their sum (short of overflow in a partial sum: codegen and compiled
form sum_j lam[i, j, k] y_j before multiplying by x_i); a structural zero never meets an infinity (0 * inf would
make NaN of outputs the infinity has no term in).  Whether a non-finite z_k is inf, -inf or NaN depends on how a
strategy groups the terms (inf - inf, inf * 0).  Dense and fft multiply the zeros too: where their result is not
all finite, the call returns the result of gather or scatter instead; where no number can be read (arrays traced by
jax.jit or torch.func) or a read would wait for a GPU, they run on operands whose non-finite entries are zeroed and
give NaN to each output such an entry has a nonzero term in, with no read (the JAX primitive under jax.jit, where a
read costs less than those passes, runs them only where its result's sum is not finite: `Engine.branch`).  The
compiled strategy's C loop takes numpy arrays and torch CPU tensors: on JAX arrays and other devices gather or
scatter runs in its place.

>>> import numpy as np
>>> from product_interactions import kernels
>>> from product_interactions.algebra import quaternions
>>> K = kernels.product(quaternions(), strategy="codegen")
>>> K.strategies
('codegen',)
>>> i, j = np.eye(4)[1], np.eye(4)[2]
>>> K(i, j), K(np.stack([i, j]), j)          # i j = k, and a batch of two against one
(array([0., 0., 0., 1.]), array([[ 0.,  0.,  0.,  1.],
       [-1.,  0.,  0.,  0.]]))
"""
from __future__ import annotations

import contextvars
import functools
import math
import string
import sys
from dataclasses import replace
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import DTypeLike
from . import autodiff, select
from ..arrays import checks
from ..native import memory
from ..arrays.axes import even_rows
from ..arrays.example_sizes import example_shape, symbolic
from ..arrays import NUMPY, engine_of, owner, torch_compiling, with_jax_defaults
from . import jax_primitive, keys, torch_operator
from .lowering import levels, lower
from ..arrays.bounded_cache import BoundedCache
from ..arrays.precision import autocast
from ..arrays.rates import Rates
from .strategies import STRATEGIES

if TYPE_CHECKING:
    from ...algebra import Algebra
    from ..arrays import Engine
    from .factor import Factor
    from .strategies.level import Program


#: Strategies whose arithmetic multiplies the structural zeros too (0 * inf is NaN), and those that add only the
#: nonzero terms, which take over when a result is not finite (the first that represents the factor: scatter
#: represents all, in a few calls).
MEETS_ZEROS, TERM_BY_TERM = ("dense", "fft"), ("gather", "scatter")
#: Checked engine calls kept per kernel (one per signature: shapes, dtypes, devices and memory limit).
CALLS_KEPT = 64
#: The passes over x, y and z that mark the outputs a non-finite entry reaches without a read (`Kernel._marked`),
#: where a read costs more (`Kernel._engine_plan`).
MARKING_PASSES = 3
#: True while `Kernel.lowered` runs: a traced result's check may then be a branch taken at run time.
_LOWERING = contextvars.ContextVar("product_interactions_lowering", default=False)


def reach(factors: Sequence[Factor]) -> tuple[str, tuple[np.ndarray, ...] | None, tuple[np.ndarray, ...] | None]:
    """(equation, x's, y's): the 0/1 matrices per factor of which x (y) components have a nonzero term in each
    output component (None where every component reaches every output), and the contraction of an operand's marks
    with them into the outputs' marks.

    >>> from product_interactions.algebra import dual_numbers, quaternions
    >>> from product_interactions.kernels.products.factor import Factor
    >>> equation, (x,), (y,) = reach([Factor.from_algebra(dual_numbers())])    # 1 1 = 1, 1 e = e 1 = e, e e = 0
    >>> equation, x.tolist()
    ('...a,ab->...b', [[1.0, 1.0], [0.0, 1.0]])
    >>> reach([Factor.from_algebra(quaternions())])[1:]                     # e_i e_j = +-e_k, one k per j
    (None, None)
    """
    count = len(factors)
    inner, outer = string.ascii_letters[:count], string.ascii_letters[count:2 * count]
    equation = f"...{inner},{','.join(a + b for a, b in zip(inner, outer))}->...{outer}"
    matrices: list[tuple[np.ndarray, ...] | None] = []
    for role in (0, 1):
        per_factor = []
        for factor in factors:
            matrix = np.zeros((factor.shape[role], factor.shape[2]))
            matrix[factor.indices[:, role], factor.indices[:, 2]] = 1.0
            per_factor.append(matrix)
        matrices.append(None if all(m.all() for m in per_factor) else tuple(per_factor))
    return equation, matrices[0], matrices[1]


def _c_ordered(program: Program, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The program's result on numpy arrays, in C order (a copy only where it is not)."""
    return np.ascontiguousarray(program(x, y))


def _check_factors(factors: object) -> tuple[Factor, ...]:
    """A non-empty tuple of `kernels.products.factor.Factor`, or an error naming ``factors``."""
    from .factor import Factor
    if isinstance(factors, (str, bytes)) or not isinstance(factors, Iterable):
        raise TypeError(f"factors: expected an iterable of kernels.Factor, got {type(factors).__name__}")
    found = tuple(factors)
    if not found:
        raise ValueError("factors: expected at least one kernels.Factor, got none")
    for n, factor in enumerate(found):
        if not isinstance(factor, Factor):
            raise TypeError(f"factors[{n}]: expected a kernels.Factor, got {type(factor).__name__}")
    return found


def _check_sizes(factors: tuple[Factor, ...], itemsize: int, algebra: Algebra | None) -> None:
    """Refuse (`MemoryLimitError`, before any work) a factor whose side of d components holds more than
    ``kernels.MEMORY_LIMIT`` as numbers of `itemsize` bytes: every strategy builds an array of d numbers at least
    (the diagonal's coefficients, the FFT's index), and no element of that side would fit either."""
    for n, factor in enumerate(factors):
        needed = max(factor.shape) * itemsize
        if needed > memory.limit():
            where = f"A: {algebra.name}" if algebra is not None else f"factors[{n}]: {factor.name}"
            raise memory.MemoryLimitError(
                f"{where} has {max(factor.shape):,} components on a side ({memory.format_bytes(needed)} as numbers), "
                f"more than kernels.MEMORY_LIMIT = {memory.format_bytes(memory.limit())}: its kernel and its elements "
                f"would not fit")


class Kernel:
    """A lowered bilinear product; see the module docstring.  Immutable once built."""

    def __init__(self, factors: Iterable[Factor], strategy: str | Sequence[str] = "auto",
                 dtype: DTypeLike = np.float64, algebra: Algebra | None = None, layout: str = "batch-first") -> None:
        self.dtype = checks.check_dtype(dtype)
        layout = checks.check_layout(layout)
        self.factors = _check_factors(factors)
        _check_sizes(self.factors, self.dtype.itemsize, algebra)
        self.requested = strategy
        self.strategies = select.resolve(strategy, self.factors, itemsize=self.dtype.itemsize)
        self.algebra, self.layout = algebra, layout
        self.name = algebra.name if algebra is not None else " ⊗ ".join(f.name for f in self.factors)
        self.shapes = tuple(tuple(f.shape[role] for f in self.factors) for role in range(3))
        self._programs: dict[tuple[str, ...], Program] = {}
        self.program = self._program(self.strategies)
        self._choices: dict[tuple[int, int, Rates, int, int], tuple[str, ...]] = {}
        self._differentiable: Callable[..., Any] | None = None
        self._transposed: dict[int, Kernel] = {}
        self._calls: BoundedCache[tuple[Any, ...], tuple[tuple[str, ...], Callable[[Any, Any], Any]]] = \
            BoundedCache(CALLS_KEPT)
        self._direct: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[str, ...] | None] = {}
        #: The kernel's name for `kernels.products.torch_operator` (the same in every process).
        self.key = torch_operator.register(self)
        #: What builds it again, the JAX primitive's name for it (`kernels.products.keys.Recipe`).
        self.recipe = keys.Recipe(self.key, self.factors, layout,
                                  functools.partial(Kernel, self.factors, strategy, self.dtype, layout=layout))

    def _program(self, names: tuple[str, ...]) -> Program:
        """The lowered program for one choice of strategies (built once each)."""
        if names not in self._programs:
            self._programs[names] = lower(self.factors, names, self.dtype)
        return self._programs[names]

    def strategies_for(self, rows: int, engine: Engine = NUMPY, itemsize: int | None = None,
                       compiled: bool = True, rates: Rates | None = None, width: int = 1) -> tuple[str, ...]:
        """The strategies a call on `rows` batch rows of `itemsize`-byte numbers (the kernel's dtype by default)
        runs on `engine` (auto chooses per power-of-four bucket of rows, by `rates`, the device's
        `kernels.arrays.rates.Rates`: the engine's CPU rates by default; without the compiled loop where the arrays
        cannot enter it, `compiled` False; within the memory limit, `select.memory_chunks`, the batch's first axis
        holding `width` rows an entry, rounded up to a power of four)."""
        if self.requested != "auto":
            return self.strategies
        rates = engine.rates if rates is None else rates
        rates = rates if compiled else replace(rates, compiled64=0.0, compiled32=0.0)
        key = (max(int(rows), 1).bit_length() // 2, itemsize or self.dtype.itemsize, rates, memory.limit(),
               ((max(int(width), 1) - 1).bit_length() + 1) // 2)
        if key not in self._choices:
            self._choices[key] = select.resolve("auto", self.factors, 4**key[0], key[1], rates, 4**key[4])
        return self._choices[key]

    def _chunk_bytes(self, program: Program) -> int | None:
        return min((level.chunk_bytes for level in levels(program) if level.chunk_bytes), default=None)

    # ------------------------------------------------------------------ calling
    def __call__(self, x: Any, y: Any) -> Any:
        """z = x * y; see the module docstring for shapes, layouts and array types.  Traced by torch.compile, a
        call on torch tensors is one operator of its graph (`kernels.products.torch_operator`).  Inside an enabled
        ``torch.autocast``, float32 operands are cast to its dtype first, as torch's matrix products cast theirs,
        and the product runs with the autocast disabled, as the operator's body does
        (`kernels.arrays.precision.autocast`)."""
        x, y, kind = autocast(x, y)
        if kind is not None:
            with sys.modules["torch"].autocast(kind, enabled=False):
                return self._traced_or_run(x, y)
        return self._traced_or_run(x, y)

    def _traced_or_run(self, x: Any, y: Any) -> Any:
        """`run`, or where torch.compile traces the call, the operator of its graph (or a graph break)."""
        if torch_compiling():
            if torch_operator.applies(self, x, y):
                return torch_operator.OPERATOR[0](x, y, self.key)
            return sys.modules["torch"].compiler.disable(self.run)(x, y)
        return self.run(x, y)

    def run(self, x: Any, y: Any) -> Any:
        """z = x * y, as `__call__` where torch.compile does not trace it: on traced JAX arrays one primitive of the
        program (`kernels.products.jax_primitive`), else `compute`."""
        if jax_primitive.applies(self, x, y):
            return jax_primitive.product(self, x, y)
        return self.compute(x, y)

    @functools.partial(with_jax_defaults, batch_axis=None)       # every leading axis is a batch
    def compute(self, x: Any, y: Any) -> Any:
        """z = x * y by the kernel's program on the arrays' engine, here and now (what the JAX primitive lowers to)."""
        engine = owner(x)
        if owner(y) is engine and (engine is not NUMPY or type(x) is np.ndarray and type(y) is np.ndarray) and \
                not engine.staged(x):             # a jit (jax.export's symbols too): priced staged, nothing kept
            key = (engine, x.shape, y.shape, x.dtype, y.dtype, engine.device(x), engine.device(y), memory.limit(),
                   getattr(x, "layout", None), getattr(y, "layout", None))      # a sparse tensor: checked anew
            try:
                call = self._calls.get(key)       # operands of one library: checked once per signature
            except TypeError:                     # torch.export's dynamic batch: its symbol has no hash
                return self._checked_call(x, y)
            if call is None:
                call = self._calls.put(key, self._signature_call(engine, x, y))
            return call[1](x, y)
        return self._checked_call(x, y)

    def lowered(self, x: Any, y: Any) -> Any:
        """`compute` as the JAX primitive's lowering (`kernels.products.jax_primitive`) runs it: there nothing
        differentiates, batches or expands the program (the primitive's own rules do), so dense and fft check
        their traced result when the program runs (`Engine.branch`) and mark its non-finite outputs only where it is
        not finite.  (The term-by-term program in that branch, as an eager call takes, made translation(64)'s fft
        1.7 times as slow under jit on finite operands: XLA's gather in a conditional.)"""
        token = _LOWERING.set(True)
        try:
            return self.compute(x, y)
        finally:
            _LOWERING.reset(token)

    def result_shape(self, x: Any, y: Any) -> tuple[int, ...]:
        """The shape of x * y for operands like x and y, checked as a call checks them (an error names the argument).

        >>> from product_interactions import kernels
        >>> from product_interactions.algebra import quaternions
        >>> kernels.product(quaternions()).result_shape(np.ones((5, 1, 4)), np.ones((3, 4)))
        (5, 3, 4)
        """
        x, y = self._operand(x, "x", 0), self._operand(y, "y", 1)
        batch = checks.batch_shape(x, y, len(self.factors), self.layout)
        return batch + self.shapes[2] if self.layout == checks.LAYOUTS[0] else self.shapes[2] + batch

    def _checked_call(self, x: Any, y: Any) -> Any:
        """The call on any operands: checked, numpy ones beside another library's converted into it, autograd's
        traced ones through the differentiable primitive."""
        x, y = self._operand(x, "x", 0), self._operand(y, "y", 1)
        batch = checks.batch_shape(x, y, len(self.factors), self.layout)
        engine = engine_of({"x": x, "y": y})
        if engine is not NUMPY:
            like = x if owner(x) is engine else y
            x, y = (a if owner(a) is engine else engine.convert(np.asarray(a), like) for a in (x, y))
            return self._run_on_engine(*self._engine_plan(engine, batch, x), x, y)
        libraries = {checks.library(x), checks.library(y)}
        if libraries - {"numpy", "autograd"}:
            raise TypeError(f"x, y: expected numpy, autograd, torch or JAX arrays, got {', '.join(sorted(libraries))}")
        if libraries == {"numpy"}:
            return self._evaluate(*self._relayout(NUMPY, (x, y), True),  # type: ignore[call-arg]  # (x, y)
                                  batch, self.layout)
        if self._differentiable is None:
            self._differentiable = autodiff.differentiable(self)
        return self._relayout(NUMPY, self._differentiable(*self._relayout(NUMPY, (x, y), True)))

    def _signature_call(self, engine: Engine, x: Any, y: Any) -> tuple[tuple[str, ...], Callable[[Any, Any], Any]]:
        """For operands like x, y of one engine's library (checked here): the strategies the call runs, and the
        cheapest function of (x, y) that runs them: the program itself where nothing is done around it (batch-first
        layout, the batch whole, no check of the result, and on numpy the kernel's dtype; a C-ordered result), else
        the checked call."""
        given = (x.dtype, y.dtype)                        # numpy's before `_operand` converts them
        x, y = self._operand(x, "x", 0), self._operand(y, "y", 1)
        batch = checks.batch_shape(x, y, len(self.factors), self.layout)
        if engine is NUMPY:
            names = self.strategies_for(math.prod(batch), rates=NUMPY.rates_for(x), width=math.prod(batch[1:]))
            ready = given[0] == given[1] == self.dtype and bool(batch) and 0 not in batch and \
                self._rows(batch, names) >= batch[0]
            call = self._checked_call
        else:
            engine, names, rows, batch, marks = self._engine_plan(engine_of({"x": x, "y": y}), batch, x)
            ready = not batch or rows >= batch[0]
            call = functools.partial(self._run_on_engine, engine, names, rows, batch, marks)
        if ready and self.layout == checks.LAYOUTS[0] and self._term_by_term(names, MEETS_ZEROS) is None:
            program = self._program(names)
            call = program if engine is not NUMPY else functools.partial(_c_ordered, program)
        return names, call

    def _engine_plan(self, engine: Engine, batch: tuple[int, ...], x: Any
                     ) -> tuple[Engine, tuple[str, ...], int, tuple[int, ...], bool]:
        """(engine, strategies, rows per chunk, batch shape, whether to mark non-finite outputs rather than read
        whether there are any) for a call on `batch` rows like `x`: marks where the strategies meet structural zeros
        and a read costs more than the marks' passes over a chunk (`Engine.reads_dearly`: a GPU)."""
        compiled = engine.runs_compiled(x)
        itemsize = engine.dtype(x).itemsize
        example = example_shape(batch)              # torch.export's dynamic batch: priced at the example's
        names = self.strategies_for(math.prod(example), engine, itemsize, compiled, engine.rates_for(x),
                                    math.prod(example[1:]))
        if not compiled:
            names = self._term_by_term(names, ("compiled",)) or names
        rows = self._rows(example, names, cache_chunks=False)
        chunk = min(rows, math.prod(example))
        moved = MARKING_PASSES * chunk * sum(math.prod(shape) for shape in self.shapes) * itemsize
        marks = self._term_by_term(names, MEETS_ZEROS) is not None and engine.reads_dearly(x, moved)
        return engine, names, rows, batch, marks

    def _run_on_engine(self, engine: Engine, names: tuple[str, ...], rows: int, batch: tuple[int, ...], marks: bool,
                       x: Any, y: Any) -> Any:
        """The program on torch or JAX arrays: whole (their libraries allocate each temporary afresh, so
        cache-sized chunks gain nothing), or in the chunks of rows the memory limit allows, joined by the engine's
        concatenation, which its differentiation sees through (whole for torch.export's dynamic batch, whose chunks
        would be those of its example)."""
        x, y = self._relayout(engine, (x, y), True)
        if not batch or symbolic(batch) or rows >= batch[0]:
            z = self._run(names, engine, x, y, marks)
        else:
            parts = (self._chunk((x, y), start, rows, batch) for start in range(0, batch[0], rows))
            z = engine.concatenate([self._run(names, engine, a, b, marks) for a, b in parts], axis=0)
        return self._relayout(engine, z)

    def _run(self, names: tuple[str, ...], engine: Engine, x: Any, y: Any, marks: bool = False) -> Any:
        """The program of `names` on x, y, by the rule for values that are not finite (module docstring): where
        it multiplies structural zeros too (dense, fft) and its result is not all finite, the term-by-term
        program's result instead; with `marks` (a GPU) or where no number can be read (traced arrays), the
        outputs marked without a read (`_marked`), which in the JAX primitive's lowering (`lowered`) run only
        where the result is not finite, chosen when the program runs (`Engine.branch`)."""
        direct = self._term_by_term(names, MEETS_ZEROS)
        if direct is None:
            return self._program(names)(x, y)
        branch = engine.branch if _LOWERING.get() else None
        if marks or not (branch is not None or engine.concrete(x) and engine.concrete(y)):
            return self._marked(names, engine, x, y)
        z = self._program(names)(x, y)
        # One finite sum means every output is finite (one pass; torch's isfinite(z).all() costs 13 times more).
        # A sum that overflows from finite outputs only costs a recomputation with the same result.
        finite = engine.isfinite(engine.sum(z))
        if engine.concrete(finite):
            return z if bool(finite) else self._program(direct)(x, y)
        if branch is None:                  # concrete operands staged by an outer trace (captured by jax.jit)
            return self._marked(names, engine, x, y)
        return branch(finite, lambda: z, lambda: self._marked(names, engine, x, y))      # the primitive's lowering

    def _marked(self, names: tuple[str, ...], engine: Engine, x: Any, y: Any) -> Any:
        """The program on x and y with their non-finite entries zeroed, and NaN in each output that one of them has
        a nonzero term in: the rule for values that are not finite, with no number read back."""
        bad_x, bad_y = ~engine.isfinite(x), ~engine.isfinite(y)
        z = self._program(names)(engine.where(bad_x, 0.0, x), engine.where(bad_y, 0.0, y))
        equation, *reaches = self._reach
        count = len(self.factors)
        reached = 0
        for bad, matrices in zip((bad_x, bad_y), reaches):
            if matrices is None:            # each entry reaches every output: the rows that hold one
                marks = engine.sum(engine.floats(bad, z), axis=tuple(range(-count, 0)))
                reached = reached + engine.reshape(marks, tuple(marks.shape) + (1,) * count)
            else:
                reached = reached + engine.contract(equation, engine.floats(bad, z),
                                                    *(engine.constant(m, z) for m in matrices))
        return engine.where(reached != 0, np.nan, z)

    @functools.cached_property
    def _reach(self) -> tuple[str, tuple[np.ndarray, ...] | None, tuple[np.ndarray, ...] | None]:
        return reach(self.factors)

    def _term_by_term(self, names: tuple[str, ...], replaced: tuple[str, ...]) -> tuple[str, ...] | None:
        """`names` with each factor whose strategy is in `replaced` given to gather or scatter (the first that
        represents it; else it keeps dense or fft, and compiled becomes dense), or None when no factor changes: for
        results that are not finite (dense, fft) and for arrays the compiled loop cannot take."""
        key = (names, replaced)
        if key not in self._direct:
            direct = tuple(next((other for other in TERM_BY_TERM if STRATEGIES[other].unsupported(factor) is None),
                                "dense" if name == "compiled" else name) if name in replaced else name
                           for factor, name in zip(self.factors, names))
            self._direct[key] = None if direct == names else direct
        return self._direct[key]

    def _operand(self, value: Any, argument: str, role: int) -> Any:
        if hasattr(value, "algebra") and hasattr(value, "to_array"):          # an algebra.Element
            if self.algebra is None:
                raise TypeError(f"{argument}: an algebra Element needs a kernel built by kernels.product(algebra)")
            if value.algebra != self.algebra:
                raise ValueError(f"{argument}: expected an element of {self.algebra.name}, got one of "
                                 f"{value.algebra.name}")
            value = value.to_array(self.dtype)          # no batch axes: the same in either layout
        return checks.operand(value, argument, self.shapes[role], self.dtype, self.layout, self.name)

    def _relayout(self, engine: Engine, arrays: Any, forward: bool = False) -> Any:
        """Component-major <-> batch-first by a transposition (nothing for batch-first)."""
        if self.layout == checks.LAYOUTS[0]:
            return arrays
        count = len(self.factors)

        def move(a: Any) -> Any:
            rank = len(a.shape)
            order = [*range(count, rank), *range(count)] if forward else [*range(rank - count, rank),
                                                                         *range(rank - count)]
            return engine.transpose(a, order)
        return tuple(map(move, arrays)) if forward else move(arrays)

    def evaluate(self, x: Any, y: Any, layout: str = "batch-first") -> np.ndarray:
        """The product of numpy float arrays in batch-first layout (the autograd primitive's body), checked as
        calls are; the result in `layout`."""
        layout = checks.check_layout(layout)
        x, y = (checks.operand(a, name, self.shapes[role], self.dtype, checks.LAYOUTS[0], self.name)
                for a, name, role in ((x, "x", 0), (y, "y", 1)))
        count = len(self.factors)
        return self._evaluate(x, y, checks.broadcast(x.shape[:x.ndim - count], y.shape[:y.ndim - count]), layout)

    def _evaluate(self, x: np.ndarray, y: np.ndarray, batch: tuple[int, ...], layout: str) -> np.ndarray:
        """The batch is cut into chunks along its first axis, of the size the levels ask for (``chunk_bytes``:
        operands, result and temporaries one chunk touches) and always within ``kernels.MEMORY_LIMIT`` (checked
        before anything is allocated)."""
        count = len(self.factors)
        component_major = layout != checks.LAYOUTS[0]
        shape = self.shapes[2] + batch if component_major else batch + self.shapes[2]
        if 0 in batch:                                   # nothing to multiply
            return np.empty(shape, self.dtype)
        names = self.strategies_for(math.prod(batch), rates=NUMPY.rates_for(x), width=math.prod(batch[1:]))
        rows = self._rows(batch, names)
        whole = not batch or rows >= batch[0]
        z = self._run(names, NUMPY, x, y) if whole else None
        if whole and layout == checks.LAYOUTS[0] and z.flags.c_contiguous:  # type: ignore[union-attr]  # whole: z
            return z  # type: ignore[return-value]  # whole: z is the result
        out = np.empty(shape, self.dtype)
        view = np.moveaxis(out, range(count), range(-count, 0)) if component_major else out
        if whole:
            view[...] = z
            return out
        for start in range(0, batch[0], rows):
            view[start:start + rows] = self._run(names, NUMPY, *self._chunk((x, y), start, rows, batch))
        return out

    def _chunk(self, arrays: Sequence[Any], start: int, rows: int, batch: tuple[int, ...]) -> list[Any]:
        """The operands' rows start to start + rows of the batch (an operand broadcast along it stays whole)."""
        count = len(self.factors)
        return [a[start:start + rows] if len(a.shape) - count == len(batch) and a.shape[0] > 1 else a
                for a in arrays]

    def _rows(self, batch: tuple[int, ...], names: tuple[str, ...], cache_chunks: bool = True) -> int:
        """Batch rows per chunk of the program of strategies `names` (as the levels ask, with `cache_chunks`, evened
        out so that the chunks are of one size, and within the memory limit: a chunk's result counts among its
        temporaries, since the call's result is assembled from it); refuses when even one row's temporaries exceed
        the memory limit."""
        program = self._program(names)
        count = batch[0] if batch else 1
        rows = count
        chunk_bytes = self._chunk_bytes(program) if cache_chunks else None
        if chunk_bytes:
            working = program.cost.working() * self.dtype.itemsize * math.prod(batch[1:])
            rows = max(1, min(count, int(chunk_bytes // max(working, 1))))
            rows = even_rows(count, rows)
        fit = select.rows_within_limit(program.cost, max(rows, 1), self.dtype.itemsize, math.prod(batch[1:]),
                                       rows < count)
        if fit < 1:
            memory.refuse(f"<Kernel {self.name}: {', '.join(names)}, {self.dtype.name}> on batch shape {batch}",
                          sum(self._temporaries(batch, program, chunked=True)), self._alternatives(batch, names))
        return min(fit, rows)

    def _temporaries(self, batch: tuple[int, ...], program: Program | None = None, chunked: bool = False
                     ) -> tuple[float, float]:
        """(bytes of temporaries per batch row, bytes of constants) for this kernel on `batch`; `chunked`: the batch
        is cut in chunks, whose results are temporaries too."""
        cost, itemsize = (program or self.program).cost, self.dtype.itemsize
        return (cost.temporary + chunked * cost.z) * itemsize * math.prod(batch[1:]), cost.fixed * itemsize

    def _alternatives(self, batch: tuple[int, ...], names: tuple[str, ...]) -> dict[str, float]:
        """{strategy label: bytes needed for one batch row} of the lowerings of these factors other than `names`."""
        needs: dict[str, float] = {}
        seen = {names}
        for name in (*STRATEGIES, "auto"):
            try:
                other = Kernel(self.factors, name, self.dtype)
            except ValueError:
                continue
            if other.strategies not in seen:
                seen.add(other.strategies)
                label = repr(name) if name != "auto" else f"'auto' ({', '.join(other.strategies)})"
                needs[label] = sum(other._temporaries(batch, chunked=True))
        return needs

    # ------------------------------------------------------------------ derived kernels, inspection
    def transposed(self, argument: int) -> Kernel:
        """The kernel of the VJP with respect to x (0) or y (1): lam's roles permuted, batch-first; auto chooses its
        strategies per call where it chooses the kernel's."""
        if type(argument) is not int or argument not in (0, 1):
            raise ValueError(f"argument: expected 0 (x) or 1 (y), got {argument!r:.60}")
        if argument not in self._transposed:
            roles = autodiff.VJP_ROLES[argument]
            factors = [f.permuted(roles) for f in self.factors]
            names = "auto" if self.requested == "auto" else \
                tuple(select.fallback(n, f) for n, f in zip(self.strategies, factors))
            self._transposed[argument] = Kernel(factors, names, self.dtype)
        return self._transposed[argument]

    def explain(self, like: Any = None) -> str:
        """The lowering: strategy per factor, einsum strings or generated source, FLOPs and bytes moved; under
        ``"auto"``, also the strategies auto takes at each batch size on the engine and device of `like` (an array
        of operands to come; None: numpy's) and the rates it prices by (`kernels.arrays.rates`)."""
        cost, itemsize = self.program.cost, self.dtype.itemsize
        shapes = [checks.expected_shape(s, self.layout) for s in self.shapes]
        lines = [f"Kernel {self.name}: z{shapes[2]} = x{shapes[0]} * y{shapes[1]}, {self.dtype.name}, "
                 f"{self.layout} arrays"]
        for position, (factor, name) in enumerate(zip(self.factors, self.strategies)):
            d1, d2, d3 = factor.shape
            lines.append(f"factor {position}: {factor.name}, {d1} x {d2} -> {d3}, {factor.nnz} nonzeros "
                         f"({factor.density:.1%} of lam): {name}")
        for level in levels(self.program):
            lines += level.describe()
        lines.append(f"per batch element: {cost.flops:,.0f} FLOPs, {cost.moved * itemsize:,.0f} bytes moved, "
                     f"{cost.temporary * itemsize:,.0f} bytes of temporaries; constants "
                     f"{cost.fixed * itemsize:,.0f} bytes")
        if self.requested == "auto":
            like = np.zeros(1) if like is None else like
            engine = owner(like)
            staged = engine.staged_rates(like)
            lines += self._choices_by_rows(engine, like, engine.rates_for(like))
            if staged is not None and not engine.staged(like):
                lines += self._choices_by_rows(engine, like, staged)
        return "\n".join(lines)

    def _choices_by_rows(self, engine: Engine, like: Any, rates: Rates) -> list[str]:
        """auto's choice per range of batch rows (the buckets `strategies_for` chooses by) on `like`'s device, priced
        by `rates`."""
        compiled = engine is NUMPY or engine.runs_compiled(like)
        itemsize = engine.dtype(like).itemsize if engine.dtype(like).kind == "f" else self.dtype.itemsize
        runs: list[tuple[int, tuple[str, ...]]] = []
        for bucket in range(11):
            names = self.strategies_for(4 ** bucket, engine, itemsize, compiled, rates)
            if not runs or runs[-1][1] != names:
                runs.append((1 if bucket == 0 else 2 ** (2 * bucket - 1), names))
        ranges = [f"{start:,}-{runs[n + 1][0] - 1:,}" if n + 1 < len(runs) else f">= {start:,}"
                  for n, (start, _) in enumerate(runs)]
        return [f"auto on {engine.name}, {engine.place(like)}, by batch rows (rates: {rates.origin}):"] + \
            [f"  rows {span}: {', '.join(names)}" for span, (_, names) in zip(ranges, runs)]

    def __repr__(self) -> str:
        return f"<Kernel {self.name}: {', '.join(self.strategies)}, {self.dtype.name}>"
