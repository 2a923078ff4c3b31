"""Linear recurrences h_t = a_t h_{t-1} + b_t, elementwise, along the leading (time) axis.

Three evaluations, one result:

* ``sequential``: one in-place update per step; the least work (2 operations per element);
* ``parallel``: odd-even reduction of the associative pairs (a, b) . (a', b') = (a' a, a' b + b'): log2(T)
  levels of whole-array operations, about 2.5 times the work;
* ``chunked``: about 2 sqrt(T) steps on whole chunks of time (`kernels.scans.chunked`), about twice the work: for a
  device whose every call is a kernel launch (a GPU).

``auto`` (see `choose`) takes ``parallel`` where the per-step update is too small to pay for a Python call (on
JAX the loop is one compiled ``lax.scan``, so never on its CPU), and ``chunked`` for long sequences where the
device's rates say so (`Engine.rates_for`).
`linear_scan` is differentiable with autograd: its adjoint l_t = g_t + a_{t+1} l_{t+1} is the same recurrence run
backwards (`reverse`).  Arrays may be real or complex, float32 or float64; the dtype is kept.  On torch and JAX
arrays the same methods run on their engine (the loop by `Engine.sequential_scan`, the parallel one as an
associative scan: JAX's own, or `kernels.arrays.prefix_scan`), differentiated by their own autodiff.

>>> import numpy as np
>>> a, b = np.full((4, 1), 0.5), np.ones((4, 1))
>>> linear_scan(a, b)[:, 0]
array([1.   , 1.5  , 1.75 , 1.875])
>>> bool(np.allclose(linear_scan(a, b, method="parallel"), linear_scan(a, b, method="sequential")))
True
"""
from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
from autograd.extend import defvjp_argnums, primitive
from autograd.numpy.numpy_vjps import match_complex

from ..arrays.checks import check_arrays
from ..arrays.precision import common_precision
from ..arrays import NUMPY, Rates, adopt, traced_as_operator
from .chunked import chunked

if TYPE_CHECKING:
    from ..arrays.engine import Engine

METHODS = ("auto", "sequential", "parallel", "chunked")


def choose(length: int, width: int, engine: Engine = NUMPY, rates: Rates | None = None) -> str:
    """The faster method for `length` steps of `width` elements each on `engine` (``auto``), by `rates` (the
    device's; None: the engine's CPU rates): chunked from their `chunked_scan_length` steps on, else the loop from
    their `loop_scan_width` elements per step on, or for 32 steps or fewer, else parallel.

    >>> from product_interactions.kernels.arrays.rates import CUDA_RATES
    >>> choose(1024, 16), choose(192, 65536), choose(4096, 65536, rates=CUDA_RATES)
    ('parallel', 'sequential', 'chunked')
    """
    rates = engine.rates if rates is None else rates
    if rates.chunked_scan_length is not None and length >= rates.chunked_scan_length:
        return "chunked"
    threshold = rates.loop_scan_width
    return "parallel" if threshold is None or (length > 32 and width < threshold) else "sequential"


def _output(a: np.ndarray, b: np.ndarray, initial: np.ndarray | None, out: np.ndarray | None) -> np.ndarray:
    if out is None:
        dtype = np.result_type(a, b, *(() if initial is None else (initial,)))
        out = np.empty(np.shape(b), dtype)
    return out


def sequential(a: np.ndarray, b: np.ndarray, initial: np.ndarray | None = None,
               out: np.ndarray | None = None) -> np.ndarray:
    """h_t = a_t h_{t-1} + b_t step by step, h_{-1} = `initial` (default 0), into `out` (which may be `b`)."""
    out = _output(a, b, initial, out)
    step = np.empty(out.shape[1:], out.dtype)
    h = initial
    for t in range(len(out)):
        state = out[t, ...]                          # a view, also a 0-dimensional one where b is (time,)
        if h is None:
            state[...] = b[t]
        else:
            np.multiply(a[t], h, out=step)
            np.add(b[t], step, out=state)
        h = state
    return out


def parallel(a: np.ndarray, b: np.ndarray, initial: np.ndarray | None = None,
             out: np.ndarray | None = None) -> np.ndarray:
    """The same recurrence by odd-even reduction: log2(T) levels of whole-array operations (`out` may be `b`)."""
    out = _output(a, b, initial, out)
    if len(out):
        out[0] = b[0] if initial is None else a[0] * initial + b[0]
        _reduce(a, b, out)
    return out


def _reduce(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """Given out[0], fill out[1:]: pair steps (2i, 2i+1), solve the half-length recurrence of the pairs for the
    odd steps, then each even step from the odd one before it."""
    n = len(out)
    if n == 1:
        return
    a_odd = a[1::2]
    pair_a = a_odd * a[0:n - 1:2]
    pair_b = a_odd * b[0:n - 1:2]
    pair_b += b[1::2]
    odd, even = out[1::2], out[2::2]
    odd[0] = a[1] * out[0] + b[1]
    _reduce(pair_a, pair_b, odd)
    np.add(b[2::2], a[2::2] * odd[:len(even)], out=even)


def in_chunks(a: np.ndarray, b: np.ndarray, initial: np.ndarray | None = None,
              out: np.ndarray | None = None) -> np.ndarray:
    """The same recurrence by `kernels.scans.chunked` (`out` may be `b`)."""
    out = _output(a, b, initial, out)
    if len(out):
        first = b[:1] if initial is None else a[:1] * initial + b[:1]
        out[...] = chunked(NUMPY, a, np.concatenate([first, b[1:]]))
    return out


SCANS: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None], np.ndarray]] = {
    "sequential": sequential, "parallel": parallel, "chunked": in_chunks}


def scan(a: np.ndarray, b: np.ndarray, initial: np.ndarray | None = None, method: str = "auto",
         out: np.ndarray | None = None) -> np.ndarray:
    """h_t = a_t h_{t-1} + b_t by `method` (plain numpy; `linear_scan` is the checked, differentiable entry)."""
    if method == "auto":
        method = choose(len(b), int(np.prod(np.shape(b)[1:], dtype=np.int64)))
    return SCANS[method](a, b, initial, out)


def reverse(a: np.ndarray, b: np.ndarray, final: np.ndarray | None = None, method: str = "auto") -> np.ndarray:
    """The adjoint recurrence l_t = b_t + a_{t+1} l_{t+1}, l_{T-1} = b_{T-1} + `final` (default 0).

    >>> import numpy as np
    >>> reverse(np.full((3, 1), 0.5), np.ones((3, 1)))[:, 0]
    array([1.75, 1.5 , 1.  ])
    """
    out = _output(a, b, final, None)
    out[-1] = b[-1] if final is None else b[-1] + final
    if len(out) > 1:
        scan(a[:0:-1], b[-2::-1], initial=out[-1], method=method, out=out[-2::-1])
    return out


@primitive
def _linear_scan(a: np.ndarray, b: np.ndarray, initial: np.ndarray | None, method: str) -> np.ndarray:
    return scan(a, b, initial, method)


def _linear_scan_vjp(argnums: tuple[int, ...], states: np.ndarray, args: tuple[Any, ...],
                     kwargs: dict[str, Any]) -> Callable[[np.ndarray], tuple[Any, ...]]:
    a, b, initial, method = args

    def vjp(g: np.ndarray) -> tuple[Any, ...]:
        adjoint = reverse(a, g, method=method)
        grads = {1: adjoint}
        if 0 in argnums:
            grads[0] = np.empty_like(adjoint)
            np.multiply(adjoint[1:], states[:-1], out=grads[0][1:])
            grads[0][0] = 0 if initial is None else adjoint[0] * initial
        if 2 in argnums:
            grads[2] = a[0] * adjoint[0]
        targets = {0: a, 1: b, 2: initial}
        return tuple(match_complex(targets[i], grads[i]) for i in argnums)
    return vjp


defvjp_argnums(_linear_scan, _linear_scan_vjp)


@functools.partial(traced_as_operator, batch_axis=1)          # time-first
def linear_scan(a: Any, b: Any, initial: Any = None, method: str = "auto") -> Any:
    """All states h_0..h_{T-1} of h_t = a_t h_{t-1} + b_t, h_{-1} = `initial` (default 0).

    `a` and `b` have the same shape (time, ...); `initial` has shape (...).  Differentiable in `a`, `b` and
    `initial` (first order) with autograd, torch or JAX.  Half precision runs in float32 (`arrays.precision`).
    """
    check_arrays({"a": a, "b": b, "initial": initial}, "fc", "floats (real or complex)", optional=("initial",))
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method: expected one of {', '.join(METHODS)}, got {method!r:.60}")
    shape = tuple(b.shape)
    if len(shape) < 1 or shape[0] < 1:
        raise ValueError(f"b: expected shape (time, ...) with at least one step, got {shape}")
    if tuple(a.shape) != shape:
        raise ValueError(f"a: expected the shape of b {shape}, got {tuple(a.shape)}")
    if initial is not None and tuple(initial.shape) != shape[1:]:
        raise ValueError(f"initial: expected shape {shape[1:]} (one state), got {tuple(initial.shape)}")
    engine, arrays = adopt({"a": a, "b": b, "initial": initial})
    arrays, half = common_precision(engine, arrays)
    run = _linear_scan if engine is NUMPY else functools.partial(on_engine, engine)
    h = run(arrays["a"], arrays["b"], arrays["initial"], method)
    return h if half is None else engine.cast(h, half)


def _combine(first: tuple[Any, ...], second: tuple[Any, ...]) -> tuple[Any, ...]:
    """(a, b) pairs composed: h -> a2 (a1 h + b1) + b2."""
    (a1, b1), (a2, b2) = first, second
    return a2 * a1, a2 * b1 + b2


def on_engine(engine: Engine, a: Any, b: Any, initial: Any = None, method: str = "auto") -> Any:
    """`linear_scan` on a torch or JAX engine: a loop over time, an associative scan of the (a, b) pairs, or
    chunks (``"auto"``: `choose`, by the rates of b's device)."""
    if method == "auto":
        method = choose(b.shape[0], math.prod(b.shape[1:]), engine, engine.rates_for(b))
    if method == "sequential":                     # step 0 here: h_0 = b_0 whatever a_0, as numpy's loop
        h = b[0] if initial is None else a[0] * initial + b[0]
        h = engine.cast(h, engine.common_dtype([a, b, h]))
        return engine.sequential_scan(_step, h, (a, b), first=h)[1]
    if initial is not None:
        b = engine.concatenate([a[:1] * initial + b[:1], b[1:]], axis=0)
    if method == "chunked":
        return chunked(engine, a, b)
    return engine.associative_scan(_combine, (a, b), axis=0)[1]


def _step(h: Any, inputs: tuple[Any, Any]) -> tuple[Any, Any]:
    """One step of the recurrence, h -> a_t h + b_t (`Engine.sequential_scan`'s step), giving the new state twice:
    as the carry and as the step's output."""
    a, b = inputs
    h = a * h + b
    return h, h
