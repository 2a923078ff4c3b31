"""Seq2Tens numerics: products of truncated tensor-algebra elements level by level, and rank-1 functionals.

A *group-like* element of T(R^d) truncated at degree M, t = (1, t_1, ..., t_M), is held as the tuple of its
levels (t_1, ..., t_M), level m an array (..., d^m) (row-major words; level 0 is the implicit 1).  Products are
sums of outer products, (s . t)_m = s_m + t_m + sum_{0<i<m} s_i (x) t_{m-i}: never the (D, D, D) structure
constants.  A sequence x (..., L, d) is lifted step by step to sum_{k<=p} x_t^{(x)k} / k! (p = `order`: 1 is the
Seq2Tens lift (1, x, 0, ...), p >= M the exponential) and `scan` returns the product over time, three ways:

* ``"sequential"``: a loop over time multiplying the state by each lift (Horner's rule per level);
* ``"levelwise"``: the same recursion solved one level at a time for all times at once,
  Phi_m(t) = sum_{s<=t} sum_{k=1..p} Phi_{m-k}(s-1) (x) x_s^{(x)k} / k!, a cumulative sum over time per level;
  when only the whole product is wanted the top two levels are contractions over time (matrix products), so no
  array holds more than d^{M-2} numbers per time step; its arrays hold time last, so every elementwise loop runs
  along the time steps;
* ``"parallel"``: an associative prefix scan of the lifts (`kernels.arrays.prefix_scan`), log depth in L;
* ``"compiled"``: the sequential recursion as one C loop across blocks of paths (`kernels.native.clib.tensor_scan`), for
  numpy arrays and torch CPU tensors of float32 or float64 where a C compiler works; its gradient is a C loop too,
  which recomputes the states from every sqrt(L)-th one (kept by the forward where a gradient is taken:
  `kernels.scans.checkpoints`) instead of storing them all (gradients of gradients go through the level-wise scan).

`kernels.scans.low_rank` evaluates rank-1 functionals <v^1 (x) ... (x) v^m, Phi(x)> without forming tensors (the
LS2T layer).

>>> import numpy as np
>>> x = np.array([[[1., 0.], [0., 2.]]])                        # one sequence of two points in R^2
>>> [level[0] for level in scan(x, degree=2, order=1, method="levelwise")]     # (1, x1) (1, x2)
[array([1., 2.]), array([0., 2., 0., 0.])]
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import autograd
import numpy as np
from autograd.extend import defvjp, primitive

from ..native import build, clib
from ..arrays.axes import even_rows
from ..arrays.bounded_cache import BoundedCache
from ..arrays import NUMPY, owner
from ..arrays.prefix_scan import prefix_scan, tree_reduce
from .checkpoints import Handoff

METHODS = ("sequential", "levelwise", "parallel", "compiled")

#: Working memory (bytes) up to which `choose_method` takes the level-wise kernel; past it, the sequential one.
LEVELWISE_BYTES = 2 ** 28

#: The level-wise scan of plain numpy paths runs over the batch in chunks whose largest level takes about this many
#: bytes (measured best from 256 KB to 1 MB: 1.6x faster than the whole batch of 256 paths, length 128, in R^4).
LEVELWISE_CHUNK_BYTES = 2 ** 19


def _merge_last(a: Any) -> Any:
    shape = tuple(a.shape)
    return owner(a).reshape(a, shape[:-2] + (shape[-2] * shape[-1],))


def outer(a: Any, b: Any) -> Any:
    """Batched outer product flattened row-major: (..., p), (..., q) -> (..., p q).  Plain numpy arrays go through
    einsum, whose loop is 1.3-2x faster than broadcasting when q is a path's few channels."""
    if type(a) is np.ndarray and type(b) is np.ndarray:
        return np.einsum("...i,...j->...ij", a, b).reshape(np.broadcast_shapes(a.shape[:-1], b.shape[:-1]) +
                                                           (a.shape[-1] * b.shape[-1],))
    return _merge_last(a[..., :, None] * b[..., None, :])


def _series(lower: Sequence[Any], steps: Sequence[Any], m: int, order: int, skip: int = 0,
            product: Callable[[Any, Any], Any] = outer) -> Any:
    """sum_{k=skip+1..min(m, order)} lower[m-k] (x) x^{(x)(k-1-skip)} / k! by Horner's rule; `lower[j]` holds level j
    (lower[0] the unit: ones (..., 1)) and ``steps[k]`` is x / k (`_steps`).  With skip = 0,
    (lower . lift(x))_m = lower_m + this (x) x.  `product` is the outer product of the layout (`outer`, or
    `outer_in_time` for the level-wise scan); the unit's products are not formed."""
    q = min(m, order)
    if q <= skip + 1:
        return lower[m - q] / math.factorial(skip + 1) if skip else lower[m - q]
    acc = steps[q] + lower[1] if q == m else product(lower[m - q], steps[q]) + lower[m - q + 1]
    for k in range(q - 1, skip + 1, -1):
        acc = product(acc, steps[k]) + lower[m - k + 1]
    return acc / math.factorial(skip + 1) if skip else acc


def _steps(x: Any, order: int) -> list[Any]:
    """[None, x, x / 2, ..., x / order]: the scaled steps of `_series`, each computed once."""
    return [None, x] + [x / k for k in range(2, order + 1)]


def _unit(x: Any) -> Any:
    return owner(x).zeros(tuple(x.shape[:-1]) + (1,), x) + 1


def lift(x: Any, degree: int, order: int) -> tuple[Any, ...]:
    """Levels 1..degree of sum_{k<=order} x^{(x)k} / k! for x (..., d)."""
    levels, power = [], x
    for m in range(1, degree + 1):
        if m > 1:
            power = outer(power, x) / m
        levels.append(power if m <= order else power * 0)
    return tuple(levels)


def multiply(s: tuple[Any, ...], t: tuple[Any, ...]) -> tuple[Any, ...]:
    """The product of two group-like elements given by their levels 1..M."""
    return tuple(s[m] + t[m] + sum(outer(s[i], t[m - 1 - i]) for i in range(m)) for m in range(len(s)))


def _sequential(x: Any, degree: int, order: int, return_sequences: bool) -> tuple[Any, ...]:
    engine, d = owner(x), x.shape[-1]
    state = (_unit(x[..., 0, :]),) + tuple(engine.zeros(tuple(x.shape[:-2]) + (d ** m,), x)
                                           for m in range(1, degree + 1))
    step = _HORNER_STEPS.kept((degree, order, return_sequences), lambda: _horner_step(degree, order, return_sequences))
    state, levels = engine.sequential_scan(step, state, (engine.moveaxis(x, -2, 0),))
    if not return_sequences:
        return state[1:]
    return tuple(engine.moveaxis(level, 0, -2) for level in levels)


#: The sequential scan's steps per (degree, order, every prefix) (JAX keeps its compiled loop with the step function).
_HORNER_STEPS: BoundedCache[tuple[int, int, bool], Callable[..., Any]] = BoundedCache(64)


def _horner_step(degree: int, order: int, sequences: bool) -> Callable[[tuple[Any, ...], tuple[Any]],
                                                                         tuple[tuple[Any, ...], Any]]:
    """The sequential scan's step: the state (the unit, then levels 1..`degree`) times the lift of one step x_t
    of lift order `order`, Horner's rule per level; it gives levels 1..degree of the new state where `sequences`
    (every prefix), else nothing."""
    def step(state: tuple[Any, ...], inputs: tuple[Any]) -> tuple[tuple[Any, ...], Any]:
        (x,) = inputs
        steps = _steps(x, min(order, degree))
        state = state[:1] + tuple(state[m] + outer(_series(state, steps, m, order), x) for m in range(1, degree + 1))
        return state, (state[1:] if sequences else None)
    return step


def outer_in_time(a: Any, b: Any) -> Any:
    """The outer product at every time step with time last, (..., p, L), (..., q, L) -> (..., p q, L): each
    multiplication runs along the time steps, contiguous (the layout of the level-wise scan; 2-8x faster in numpy
    than words last when q is a path's few channels)."""
    product = a[..., :, None, :] * b[..., None, :, :]
    shape = tuple(product.shape)
    return owner(product).reshape(product, shape[:-3] + (shape[-3] * shape[-2], shape[-1]))


def _sum_outer(a: Any, b: Any) -> Any:
    """sum over time (time last) of a_t (x) b_t: (..., p, L), (..., q, L) -> (..., p q), one matrix product."""
    engine = owner(a)
    return _merge_last(engine.matmul(a, engine.swapaxes(b, -1, -2)))


def _top_levels(exclusive: Sequence[Any], steps: Sequence[Any], sums: Any, degree: int, order: int) -> list[Any]:
    """Levels M-1 and M summed over time without arrays of d^{M-1} entries per time step.  With I the series of
    level M-1, Phi_{M-1} = sum_s I(s) (x) x_s; Phi_M = sum_t (E_{M-1}(t) + G(t) (x) x_t) (x) x_t with
    E_{M-1}(t) = sum_{s<t} I(s) (x) x_s, so its first part is sum_s I(s) (x) x_s (x) (sum_{t>s} x_t).  Time last;
    `sums` are the prefix sums of the steps x = steps[1]."""
    x = steps[1]
    if degree == 1:
        return [sums[..., -1]]
    later = sums[..., -1:] - sums[..., 1:]
    if degree == 2:                         # Phi_2 = sum_s x_s (x) (sum_{t>s} x_t + x_s / 2): one matrix product
        return [sums[..., -1], _sum_outer(x, later + steps[2] if order > 1 else later)]
    inner = _series(exclusive, steps, degree - 1, order, product=outer_in_time)
    top = _sum_outer(inner, outer_in_time(x, later))
    if min(degree, order) > 1:
        top = top + _sum_outer(_series(exclusive, steps, degree, order, skip=1, product=outer_in_time),
                               outer_in_time(x, x))
    return [_sum_outer(inner, x), top]


def _levelwise(x: Any, degree: int, order: int, return_sequences: bool) -> tuple[Any, ...]:
    """Plain numpy paths (batch, L, d) run in chunks of the batch whose largest level takes about
    `LEVELWISE_CHUNK_BYTES`, so that each step's arrays stay in cache; others in one piece."""
    if type(x) is np.ndarray and x.ndim == 3 and x.shape[0] > 1:
        words = x.shape[2] ** (degree if return_sequences else max(degree - 2, 2))
        rows = max(1, LEVELWISE_CHUNK_BYTES // max(1, x.shape[1] * words * x.itemsize))
        rows = even_rows(x.shape[0], rows)
        if rows < x.shape[0]:
            parts = [_levelwise_whole(x[start:start + rows], degree, order, return_sequences)
                     for start in range(0, x.shape[0], rows)]
            return tuple(np.concatenate(level, axis=0) for level in zip(*parts))
    return _levelwise_whole(x, degree, order, return_sequences)


def _levelwise_whole(x: Any, degree: int, order: int, return_sequences: bool) -> tuple[Any, ...]:
    """Time last inside (see `outer_in_time`): x (..., L, d) is turned once, and so are the levels returned with
    `return_sequences`."""
    engine = owner(x)
    x = engine.contiguous(engine.swapaxes(x, -1, -2))
    time = len(x.shape) - 1
    steps, sums = _steps(x, min(order, degree)), engine.cumulative_sum(x, time)      # level 1: the sums of the steps
    exclusive, levels = [engine.zeros(tuple(x.shape[:-2]) + (1, x.shape[-1]), x) + 1], []
    for m in range(1, degree + 1 if return_sequences else degree - 1):
        prefixes = sums if m == 1 else engine.cumulative_sum(
            outer_in_time(_series(exclusive, steps, m, order, product=outer_in_time), x), time)
        levels.append(engine.swapaxes(prefixes[..., 1:], -1, -2) if return_sequences else prefixes[..., -1])
        exclusive.append(prefixes[..., :-1])
    return tuple(levels) if return_sequences else tuple(levels + _top_levels(exclusive, steps, sums, degree, order))


def _parallel(x: Any, degree: int, order: int, return_sequences: bool) -> tuple[Any, ...]:
    lifts = lift(x, degree, order)
    axis = len(x.shape) - 2
    return (prefix_scan if return_sequences else tree_reduce)(multiply, lifts, axis, engine=owner(x))


def runs_compiled(x: Any) -> bool:
    """True when the compiled scan takes x: a float32 or float64 numpy array (autograd's traced arrays too) or an
    array of an engine with `compiled_scan` that takes it, where the C library builds."""
    engine = owner(x)
    if engine is NUMPY:
        taken = engine.dtype(x) in clib.LANES
    else:
        taken = engine.scans_compiled(x)
    return taken and build.unavailable() is None


def _flat_levelwise(x: Any, degree: int, order: int, return_sequences: bool) -> Any:
    """The level-wise scan's levels concatenated: the compiled scan's result, by the engine's operations."""
    return owner(x).concatenate(list(_levelwise(x, degree, order, return_sequences)), axis=-1)


#: The forward's checkpoints, handed to the loop's gradient.
_CHECKPOINTS = Handoff()


@primitive
def _numpy_compiled(x: np.ndarray, degree: int, order: int, return_sequences: bool) -> np.ndarray:
    """The loop, traced by autograd (`_compiled` calls the loop itself otherwise), keeping its checkpoints."""
    return _CHECKPOINTS.keep(*clib.tensor_scan_keeping(x, degree, order, return_sequences))


def _numpy_compiled_vjp(result: Any, x: Any, degree: int, order: int,
                        return_sequences: bool) -> Callable[[Any], Any]:
    checkpoints = _CHECKPOINTS.take(result)

    def vjp(gradient: Any) -> Any:
        if NUMPY.traced(x) or NUMPY.traced(gradient):         # a gradient of a gradient: the level-wise scan's
            return autograd.make_vjp(_flat_levelwise)(x, degree, order, return_sequences)[0](gradient)
        return clib.tensor_scan_vjp(x, np.asarray(gradient, dtype=x.dtype), degree, order, return_sequences,
                                    checkpoints=checkpoints)
    return vjp


defvjp(_numpy_compiled, _numpy_compiled_vjp)


def _compiled(x: Any, degree: int, order: int, return_sequences: bool) -> tuple[Any, ...]:
    engine = owner(x)
    if not runs_compiled(x):
        why = build.unavailable() or f"it runs on float32 and float64 numpy arrays and torch CPU tensors (not " \
                                    f"while torch.jit.trace records), got {engine.name} {engine.dtype(x)} arrays"
        raise ValueError(f"method: 'compiled' cannot run here: {why}; use 'auto' or one of {METHODS[:3]}")
    lead, (length, d) = tuple(x.shape[:-2]), tuple(x.shape[-2:])
    paths = engine.reshape(x, (math.prod(lead), length, d))
    engine_scan = engine.compiled_scan                  # None: numpy (other engines without it are refused above)
    if engine_scan is None:
        flat = _numpy_compiled(paths, degree, order, return_sequences) if NUMPY.traced(paths) else \
            clib.tensor_scan(paths, degree, order, return_sequences)
    else:
        flat = engine_scan(paths, degree, order, return_sequences, _flat_levelwise)
    flat = engine.reshape(flat, lead + tuple(flat.shape[1:]))
    starts = clib.level_starts(d, degree)[1:]
    return tuple(flat[..., int(a):int(b)] for a, b in zip(starts[:-1], starts[1:]))


_SCANS: dict[str, Callable[[Any, int, int, bool], tuple[Any, ...]]] = {
    "sequential": _sequential, "levelwise": _levelwise, "parallel": _parallel, "compiled": _compiled}


def choose_method(shape: tuple[int, int, int], degree: int, return_sequences: bool, itemsize: int = 8,
                  compiled: bool = False) -> str:
    """"levelwise" if its arrays over all times fit in `LEVELWISE_BYTES`, else "sequential" (memory independent of
    the length).  With `compiled` (`runs_compiled`), "compiled" in their place while one thread's gradient working
    memory fits there (`clib.tensor_scan_vjp` runs on as many threads as `kernels.MEMORY_LIMIT` holds), when the
    paths fill a block of `clib.LANES` or the level-wise arrays would not fit (fewer paths leave lanes empty: one
    path of length 4,096 in R^2 took the loop 1.8x the level-wise time, a block of paths 0.2-0.8x).  "parallel"
    does more work than "levelwise" and holds as much, so "auto" never takes it."""
    batch, length, d = shape
    largest = degree if return_sequences else max(degree - 2, 2)      # per time step, see kernels.scans.seq2tens
    fits = 4 * batch * length * d ** largest * itemsize <= LEVELWISE_BYTES
    if compiled and clib.tensor_scan_vjp_bytes(length, d, degree) <= LEVELWISE_BYTES and \
            (batch >= clib.LANES[np.dtype(f"f{itemsize}")] or not fits):
        return "compiled"
    return "levelwise" if fits else "sequential"


def scan(x: Any, degree: int, order: int, method: str = "levelwise",
         return_sequences: bool = False) -> tuple[Any, ...]:
    """Levels 1..degree of prod_t lift(x_t) for x (..., L, d), L >= 1: each (..., d^m), or (..., L, d^m) (every
    prefix) with `return_sequences`.  A zero step lifts to the unit, so zeroed steps are left out."""
    return _SCANS[method](x, degree, order, return_sequences)
