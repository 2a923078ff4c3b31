"""The leaf of a product kernel: one contraction over the factors whose strategy is a leaf (identify, dense).

Each leaf strategy gives its factor's axis a term (`kernels.products.strategies`): labels for x, y and z and, when it
has constants, their labels.  All terms form one opt_einsum contraction with the constants as constants, built
once per pair of input shapes (path included) and cached; constants come first in the equation so that
intermediates keep the batch axes first, and with one dense factor x meets its lam in one matrix product, then
y (numpy arrays, and torch tensors that nothing records, in blocks sized for the cache, written in place:
`dense_blocks`; on torch with autograd and on JAX, where small batched products cost more, the outer product of
x and y meets lam in one matrix product instead, unless the factor's size favours the batched form:
`BATCHED_ENTRIES`).  Factors are contracted one at a time, never through a Kronecker product.  When every term is
a bare shared label the leaf is ``x * y``.

>>> import numpy as np
>>> from product_interactions.algebra import quaternions
>>> from product_interactions.kernels.products.factor import Factor
>>> leaf = build([(Factor.from_algebra(quaternions()), "dense")], np.float64)
>>> leaf.equation
'abc,...a,...b->...c'
>>> leaf(np.eye(4)[1], np.eye(4)[2])        # i j = k
array([0., 0., 0., 1.])
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import DTypeLike
import opt_einsum as oe

from ..arrays import numpy_backend
from ..arrays.bounded_cache import BoundedCache
from ..arrays.axes import broadcast_batch
from ..arrays.example_sizes import symbolic
from .cost import Cost
from ..arrays import NUMPY, owner
from .strategies import STRATEGIES
from .strategies.identify import Elementwise

if TYPE_CHECKING:
    from .factor import Factor


#: Contract expressions kept per leaf (one per pair of input shapes).
EXPRESSIONS_KEPT = 64
#: On torch and JAX, a lone dense factor whose per-row (d2, d3) matrices have at least this many entries runs as
#: x @ lam then a batched product with y; smaller ones as (x outer y) @ lam.  Measured on torch 2.13 (2 threads),
#: batched / outer: 0.69-0.93 for CG(4), CG(5), Clifford(5) and matrix_algebra(6) (625 to 1,296 entries) at 1,000
#: rows, 0.8-0.9 for random dense d = 49 and 64 in chunks (2,401 and 4,096); 1.3-2.1 for 256 entries (PGA,
#: random d = 16, at 10,000 rows), in both dtypes.
BATCHED_ENTRIES = 513
#: A lone dense factor on numpy arrays, and on torch tensors that nothing records (`Engine.in_place`), runs in
#: blocks (`dense_blocks`): rows of x times a block of lam's columns (whole (d2) slices) into a buffer.  Their sizes
#: in bytes (the x @ lam block, lam's block or None for whole) where the matrix products run on one thread: both
#: in the L2 cache of this project's machine; d = 64, batch 4096, numpy: 69-71% of the GEMM peak in float64 and
#: 69-72% in float32, against 59-62% and 64-67% for 2 MiB with lam whole (measured 2026-12-04).
ONE_THREAD_BLOCKS: tuple[int, int | None] = (2**20, 256 * 2**10)
#: The same where they run on several threads (each takes a part of every product): numpy on 2 threads 57-61% and
#: 49-55% (42-44% with `ONE_THREAD_BLOCKS`); torch on 2 threads 74-79% and 66-76% of its GEMM peak, against
#: 53-58% and 63-67% for the allocating form (every fresh block of the x @ lam product costs page faults).
THREADED_BLOCKS: tuple[int, int | None] = (16 * 2**20, None)
#: Where they cannot be written in place (torch with autograd, JAX), a lone dense factor runs in chunks of rows
#: whose block of either form (`Contraction._engine_dense`) takes about this many bytes: d = 64,
#: 4,096 rows, torch on 2 threads, blocks of 8 MiB took 0.75-0.85x the time of 2 MiB and 0.36-0.38x that of 32 MiB
#: or more (the block then leaves the cache) in both dtypes; at 1,000 rows of d = 25 to 49, 8 MiB was within 15 %
#: of one piece.
ENGINE_ROWS_BYTES = 8 * 2**20
#: At most this many chunks of rows per call on torch and JAX (each is a step of the Python loop, or of JAX's trace).
ENGINE_CHUNKS = 64


def cost(parts: Sequence[tuple[Factor, str]]) -> Cost:
    """The leaf's cost per batch row: the strategies' own costs composed when at most one factor has constants
    of three axes (the calibrated single-contraction case), else opt_einsum's count for the whole contraction."""
    symbols = (oe.get_symbol(n) for n in range(3 * len(parts) + 3))
    terms = [STRATEGIES[name].term(factor, symbols.__next__) for factor, name in parts]
    if sum(1 for t in terms if t[3] is not None and len(t[3]) == 3) <= 1:
        total = Cost.elementwise(1)
        for factor, name in parts:
            total = STRATEGIES[name].cost(factor, total)
        return total
    return Contraction.count(parts, terms)


def build(parts: Sequence[tuple[Factor, str]], dtype: DTypeLike) -> Elementwise | Contraction:
    """The leaf for `parts`, a list of (factor, leaf strategy name) for the trailing axes in order."""
    symbols = (oe.get_symbol(n) for n in range(3 * len(parts) + 3))
    terms = [STRATEGIES[name].term(factor, symbols.__next__) for factor, name in parts]
    if all(t[3] is None and t[0] == t[1] == t[2] for t in terms):
        return Elementwise(math.prod(factor.shape[0] for factor, _ in parts))
    return Contraction(parts, terms, dtype)


class Contraction:
    """The leaf contraction; see the module docstring."""

    #: Few large chunks: every matrix product synchronises the BLAS threads, which costs most on a loaded machine.
    #: A lone dense factor takes the batch whole: `dense_blocks` sizes its own blocks for the cache.
    chunk_bytes: int | None = 16 * 2**20

    def __init__(self, parts: Sequence[tuple[Factor, str]], terms: Sequence[tuple[str, str, str, str | None]],
                 dtype: DTypeLike) -> None:
        self.dtype = np.dtype(dtype)
        x, y, z = ("".join(t[role] for t in terms)  # type: ignore[misc]  # roles 0-2: labels, never None
                   for role in range(3))
        constant = [(factor, name, t[3]) for (factor, name), t in zip(parts, terms) if t[3] is not None]
        self.equation = ",".join([*(labels for _, _, labels in constant), f"...{x}", f"...{y}"]) + f"->...{z}"
        self._constant_parts = [(factor, name) for factor, name, _ in constant]
        self._shapes = [tuple(factor.shape[:1]) if len(labels) == 1 else factor.shape
                        for factor, _, labels in constant]
        self._path = self._single_dense_path([labels for _, _, labels in constant])
        self._dense_alone = len(parts) == 1 and len(constant) == 1 and len(constant[0][2]) == 3
        if self._dense_alone:
            self.chunk_bytes = None
        self._constants: list[np.ndarray] | None = None
        self._dense_forms: tuple[np.ndarray, np.ndarray] | None = None
        self._expressions: BoundedCache[tuple[tuple[int, ...], tuple[int, ...]], tuple[Any, Any]] = \
            BoundedCache(EXPRESSIONS_KEPT)
        self.cost = self.count(parts, terms)
        if self._dense_alone:                       # `dense_blocks` keeps a block of partial sums besides
            self.cost = self.cost.plus(temporary=self.cost.z)

    @staticmethod
    def count(parts: Sequence[tuple[Factor, str]], terms: Sequence[tuple[str, str, str, str | None]]) -> Cost:
        """The contraction's cost per batch row, by opt_einsum's path for 1024 rows: its FLOPs at the speed of
        per-row loops (several dense factors contract through einsum steps more than through large matrix
        products), one row loop per pairwise step, and every intermediate as a temporary (each is held to the end
        of the call)."""
        x, y, z = ("".join(t[role] for t in terms)  # type: ignore[misc]  # roles 0-2: labels, never None
                   for role in range(3))
        constant = [(factor, t[3]) for (factor, _), t in zip(parts, terms) if t[3] is not None]
        equation = ",".join([*(labels for _, labels in constant), f"...{x}", f"...{y}"]) + f"->...{z}"
        shapes = [tuple(factor.shape[:1]) if len(labels) == 1 else factor.shape for factor, labels in constant]
        sizes = [math.prod(f.shape[r] for f, _ in parts) for r in range(3)]
        rows = 1024
        many = [(rows, *(f.shape[r] for f, _ in parts)) for r in (0, 1)]
        info = oe.contract_path(equation, *shapes, *many, shapes=True)[1]
        steps = len(info.contraction_list)
        return Cost(*sizes,  # type: ignore[misc]  # sizes: x, y and z
                    flops=float(info.opt_cost) / rows, moved=sum(sizes) + 2 * sum(info.size_list) / rows,
                    temporary=sum(info.size_list[:-1]) / rows, fixed=sum(map(math.prod, shapes)),
                    calls=steps + 25, loop=float(info.opt_cost) / rows, row_calls=steps)

    @staticmethod
    def _single_dense_path(terms: Sequence[str]) -> str | list[tuple[int, ...]]:
        """With one dense factor: x into its lam first (one matrix product, batch axes first, lam not transposed;
        it beat the outer product of x and y first, then lam), then the rest in one step; with several dense
        factors, opt_einsum's optimiser chooses."""
        dense = [n for n, term in enumerate(terms) if len(term) == 3]
        if len(dense) != 1:
            return "auto"
        return [(dense[0], len(terms)), tuple(range(len(terms) + 1))]

    def constants(self) -> list[np.ndarray]:
        """The constant operands in the kernel's dtype (built on first use)."""
        if self._constants is None:
            self._constants = [STRATEGIES[name].constant(factor, self.dtype) for factor, name in self._constant_parts]
        return self._constants

    def expression(self, x_shape: Sequence[int], y_shape: Sequence[int]) -> tuple[Any, Any]:
        """The cached ``contract_expression`` for these input shapes, and its path information."""
        def make() -> tuple[Any, Any]:
            constants = self.constants()
            path, info = oe.contract_path(self.equation, *self._shapes, x_shape, y_shape, shapes=True,
                                          optimize=self._path)
            return oe.contract_expression(self.equation, *constants, x_shape, y_shape,
                                          constants=range(len(constants)), optimize=path), info
        return self._expressions.kept((tuple(x_shape), tuple(y_shape)), make)

    def __call__(self, x: Any, y: Any) -> Any:
        engine = owner(x)
        if engine is NUMPY:
            plain = type(x) is np.ndarray and type(y) is np.ndarray
            if plain and self._dense_alone:
                return self._lone_dense(x, y)
            backend = numpy_backend.NAME if plain else "autograd"
            return self.expression(tuple(x.shape), tuple(y.shape))[0](x, y, backend=backend)
        like = x if engine.owns(x) else y             # torch, JAX: the constants on the operands' device
        if self._dense_alone:
            return self._engine_dense(engine, x, y, like)
        return engine.contract(self.equation, *(engine.constant(c, like) for c in self.constants()), x, y)

    def _engine_dense(self, engine: Any, x: Any, y: Any, like: Any) -> Any:
        """A lone dense factor on torch or JAX (operands of two dtypes promoted): `dense_blocks` where the engine may
        write in place and the batch is a number, else in chunks of rows whose intermediate takes about
        `ENGINE_ROWS_BYTES` (they keep it in cache; whole for torch.export's dynamic batch): x @ lam then a batched
        product with y for matrices of `BATCHED_ENTRIES` or more, else (x outer y) @ lam, one matrix product."""
        d1, d2, d3 = self._shapes[0]
        outer, by_x = self.dense_forms()
        x, y, batch = broadcast_batch(x, y, engine)
        if x.dtype != y.dtype:                       # torch's matrix products do not promote
            x, y = engine.promoted(x, y)
            like = x
        rows = math.prod(batch)
        x, y = engine.reshape(x, (rows, d1)), engine.reshape(y, (rows, d2))
        if engine.in_place(x, y) and not symbolic(batch):
            z = engine.empty((rows, 1, d3), like)
            dense_blocks(engine.matmul, lambda size: engine.empty((size,), like), x, engine.reshape(y, (rows, 1, d2)),
                         engine.constant(by_x, like), z,
                         *(ONE_THREAD_BLOCKS if engine.threads() == 1 else THREADED_BLOCKS))
            return engine.reshape(z, batch + (d3,))
        if d2 * d3 >= BATCHED_ENTRIES:
            lam, width = engine.constant(by_x, like), d2 * d3

            def chunk(x: Any, y: Any) -> Any:
                into = engine.reshape(engine.matmul(x, lam), (-1, d2, d3))
                return engine.matmul(y[:, None, :], into)[:, 0, :]
        else:
            lam, width = engine.constant(outer, like), d1 * d2

            def chunk(x: Any, y: Any) -> Any:
                return engine.matmul(engine.reshape(x[:, :, None] * y[:, None, :], (-1, d1 * d2)), lam)
        if symbolic(batch):                 # torch.export's dynamic batch: whole (chunks would be its example's)
            return engine.reshape(chunk(x, y), batch + (d3,))
        step = max(1, -(-rows // ENGINE_CHUNKS),
                   min(rows, ENGINE_ROWS_BYTES // (width * engine.dtype(like).itemsize)))
        parts = [chunk(x[start:start + step], y[start:start + step]) for start in range(0, max(rows, 1), step)]
        z = parts[0] if len(parts) == 1 else engine.concatenate(parts, axis=0)
        return engine.reshape(z, batch + (d3,))

    def _lone_dense(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """A lone dense factor on numpy arrays, by `dense_blocks` (promoted to one dtype)."""
        d1, d2, d3 = self._shapes[0]
        _, by_x = self.dense_forms()
        x, y, batch = broadcast_batch(x, y, NUMPY)
        rows = math.prod(batch)
        dtype = np.result_type(x, y, by_x)
        z = np.empty((rows, 1, d3), dtype)
        dense_blocks(np.matmul, lambda size: np.empty(size, dtype), x.reshape(rows, d1).astype(dtype, copy=False),
                     y.reshape(rows, 1, d2).astype(dtype, copy=False), by_x.astype(dtype, copy=False), z,
                     *(ONE_THREAD_BLOCKS if NUMPY.threads() == 1 else THREADED_BLOCKS))
        return z.reshape(batch + (d3,))

    def dense_forms(self) -> tuple[np.ndarray, np.ndarray]:
        """A lone dense factor's lam as (d1 d2, d3) and (d1, d2 d3) matrices, for the engines' matrix products
        (built once: the engines cache constants by identity)."""
        if self._dense_forms is None:
            lam = self.constants()[0]
            d1, d2, d3 = lam.shape
            self._dense_forms = lam.reshape(d1 * d2, d3), lam.reshape(d1, d2 * d3)
        return self._dense_forms

    def describe(self) -> list[str]:
        lines = [f"leaf: opt_einsum contract_expression {self.equation!r}, structure constants as constants"]
        if self._dense_alone:
            lines.append("  numpy arrays (torch tensors nothing records): per block of rows and of lam's columns, "
                         "x @ lam's block by one matrix product, then a batched product with y")
        for (x_shape, y_shape), (_, info) in self._expressions.items():
            steps = "; ".join(step[2] for step in info.contraction_list)
            lines.append(f"  x {x_shape}, y {y_shape}: {steps}")
        return lines


def dense_blocks(matmul: Callable[..., Any], empty: Callable[[int], Any], x: Any, y: Any, by_x: Any, z: Any,
                 rows_bytes: int, columns_bytes: int | None) -> None:
    """z (rows, 1, d3) = the product of x (rows, d1) and y (rows, 1, d2) through lam as by_x (d1, d2 d3), written in
    place: per block of rows and of (d2) slices of lam's columns, x @ lam's block (one matrix product into a buffer
    of about `rows_bytes`, lam's block about `columns_bytes`, or whole for None), then each row's (slices, d3) part
    of it times that row's y entries (one batched product), the blocks' products summed into z.  `matmul` takes
    ``out=`` (numpy's, torch's); `empty` makes a flat buffer of the operands' dtype.

    >>> lam = np.arange(8.0).reshape(2, 2, 2)
    >>> z = np.empty((1, 1, 2))
    >>> dense_blocks(np.matmul, np.empty, np.ones((1, 2)), np.ones((1, 1, 2)), lam.reshape(2, 4), z, 16, 16)
    >>> z, np.einsum("bi,bj,ijk->bk", np.ones((1, 2)), np.ones((1, 2)), lam)
    (array([[[12., 16.]]]), array([[12., 16.]]))
    """
    rows, (d1, columns), d3 = x.shape[0], by_x.shape, z.shape[-1]
    d2, itemsize = columns // d3, by_x.dtype.itemsize
    width = d2 if columns_bytes is None else max(1, min(d2, columns_bytes // (d1 * d3 * itemsize)))
    step = max(1, min(rows, rows_bytes // (width * d3 * itemsize)))
    work = empty(step * (width + 1) * d3)            # the block of x @ lam, then one block of partial sums
    partial = work[step * width * d3:]
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        count = stop - start
        for first in range(0, d2, width):
            last = min(d2, first + width)
            block = work[:count * (last - first) * d3].reshape(count, (last - first) * d3)
            matmul(x[start:stop], by_x[:, first * d3:last * d3], out=block)
            into = z[start:stop] if first == 0 else partial[:count * d3].reshape(count, 1, d3)
            matmul(y[start:stop, :, first:last], block.reshape(count, last - first, d3), out=into)
            if first:
                z[start:stop] += into
