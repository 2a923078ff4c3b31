"""The selective scan of Mamba: h_t = exp(delta_t A) h_{t-1} + delta_t B_t u_t, y_t = C_t h_t (+ D u_t) (* silu(z_t)).

Time-major inside, in cache-sized chunks of time (`kernels.scans.recurrence` within each; exp(delta A), most of the
work, split over `THREADS` threads), with a hand-written gradient (autograd primitive) that recomputes each chunk
from the state before it instead of storing every state.  Causal: y_t reads u, delta, B and C at steps <= t only.

>>> import numpy as np
>>> u, delta = np.ones((1, 3, 1)), np.full((1, 3, 1), 0.5)
>>> selective_scan(u, delta, np.array([[-np.log(4.0)]]), np.ones((1, 3, 1)), np.ones((1, 3, 1)))[0, :, 0]
array([0.5  , 0.75 , 0.875])
"""
from __future__ import annotations

import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
from autograd.extend import defvjp_argnums, primitive

from ..arrays.bounded_cache import BoundedCache
from ..arrays.checks import check_arrays
from ..arrays.precision import common_precision
from ..arrays import NUMPY, adopt, engine_of, traced_as_operator
from .recurrence import METHODS, choose, on_engine, reverse, scan
from ..arrays.pointwise import silu

if TYPE_CHECKING:
    from ..arrays.engine import Engine

#: Bytes of one chunk's (time, batch, d_state, channels) arrays in the sequential selective scan: small enough to
#: stay in cache, large enough to amortise the Python calls.
CHUNK_BYTES = 1 << 21

#: Threads for exp(Delta A), most of the block's time (float64 exp costs about 10 ns an element without AVX-512;
#: numpy releases the GIL), from THREAD_ELEMENTS elements on; 1 computes it in the calling thread only.
THREADS, THREAD_ELEMENTS = min(2, os.cpu_count() or 1), 1 << 16
_pool: list[ThreadPoolExecutor] = []


# ---------------------------------------------------------------------- the selective scan
def _chunks(length: int, width: int, itemsize: int, method: str) -> list[tuple[int, int]]:
    """Time ranges scanned together: the whole sequence for the parallel scan, else about CHUNK_BYTES each."""
    size = length if method == "parallel" else max(1, CHUNK_BYTES // max(width * itemsize, 1))
    return [(start, min(start + size, length)) for start in range(0, length, size)]


def _exp(a: np.ndarray) -> np.ndarray:
    """exp in place, the batch axis split between THREADS threads for large arrays."""
    if THREADS < 2 or a.size < THREAD_ELEMENTS or a.shape[1] < 2:
        return np.exp(a, out=a)
    if not _pool:
        _pool.append(ThreadPoolExecutor(max_workers=THREADS - 1))
    parts = np.array_split(np.arange(a.shape[1]), THREADS)
    views = [a[:, part[0]:part[-1] + 1] for part in parts]
    futures = [_pool[0].submit(np.exp, view, out=view) for view in views[1:]]
    np.exp(views[0], out=views[0])
    for future in futures:
        future.result()
    return a


def _chunk_states(u: np.ndarray, delta: np.ndarray, AT: np.ndarray, B: np.ndarray, start: int, stop: int,
                  h: np.ndarray | None, method: str,
                  buffers: tuple[np.ndarray | None, np.ndarray | None] = (None, None)
                  ) -> tuple[np.ndarray, np.ndarray]:
    """exp(Delta_t A) and the states h_t for t in [start, stop) from h_{start-1} = h (None: zero), written into
    `buffers` (two arrays of at least stop - start steps) when given."""
    a, b = (None if buffer is None else buffer[:stop - start] for buffer in buffers)
    a = _exp(np.multiply(delta[start:stop, :, None, :], AT, out=a))
    b = np.multiply((delta[start:stop] * u[start:stop])[:, :, None, :], B[start:stop, :, :, None], out=b)
    return a, scan(a, b, initial=h, method=method, out=b)


def _plan(u: np.ndarray, A: np.ndarray, method: str) -> list[tuple[int, int]]:
    length, batch, channels = u.shape
    return _chunks(length, batch * channels * A.shape[1], u.dtype.itemsize, method)


@primitive
def _readout(u: np.ndarray, delta: np.ndarray, A: np.ndarray, B: np.ndarray, C: np.ndarray,
             method: str) -> np.ndarray:
    """y_t = C_t h_t on time-major arrays: u, delta (L, batch, channels), A (channels, N), B, C (L, batch, N)."""
    dtype, chunks = np.result_type(u, delta, A, B, C), _plan(u, A, method)
    y, h = np.empty(u.shape, dtype), None
    shape = (chunks[0][1],) + u.shape[1:2] + A.shape[::-1]                     # (time, batch, N, channels)
    buffers = (np.empty(shape, dtype), np.empty(shape, dtype))
    for start, stop in chunks:
        _, states = _chunk_states(u, delta, A.T, B, start, stop, h, method, buffers)
        np.matmul(C[start:stop, :, None, :], states, out=y[start:stop, :, None, :])
        h = states[-1].copy()                                                   # the buffers are reused
    return y


def _readout_vjp(argnums: tuple[int, ...], y: np.ndarray, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> Callable[[np.ndarray], tuple[np.ndarray, ...]]:
    """Backward through the chunks in reverse, each recomputed from the state before it (kept by a forward sweep):
    the adjoint l_t = C_t gy_t + a_{t+1} l_{t+1}, then the gradients from l_t, h_{t-1} and a_t = exp(Delta_t A)."""
    u, delta, A, B, C, method = args

    def vjp(gy: np.ndarray) -> tuple[np.ndarray, ...]:
        chunks, AT = _plan(u, A, method), A.T
        starts, h = [None], None                        # the state before each chunk, recomputed forwards
        for start, stop in chunks[:-1]:
            h = _chunk_states(u, delta, AT, B, start, stop, h, method)[1][-1]
            starts.append(h)
        gu, gdelta, gB, gC, gAT, carry = (np.empty_like(u), np.empty_like(delta), np.empty_like(B),
                                          np.empty_like(C), np.zeros_like(AT), None)
        for (start, stop), h in zip(reversed(chunks), reversed(starts)):
            t = slice(start, stop)
            a, states = _chunk_states(u, delta, AT, B, start, stop, h, method)
            np.matmul(states, gy[t, :, :, None], out=gC[t, :, :, None])
            adjoint = reverse(a, C[t, :, :, None] * gy[t, :, None, :], final=carry, method=method)
            carry = a[0] * adjoint[0]
            g_step = np.empty_like(states)               # gradient of Delta_t A: adjoint * h_{t-1} * a_t
            g_step[1:] = states[:-1]
            g_step[0] = 0 if h is None else h
            g_step *= adjoint
            g_step *= a
            gAT += np.sum(g_step * delta[t, :, None, :], axis=(0, 1))
            g_du = np.matmul(B[t, :, None, :], adjoint)[:, :, 0]               # gradient of Delta_t u_t
            np.matmul(adjoint, (delta[t] * u[t])[..., None], out=gB[t, :, :, None])
            gdelta[t] = np.sum(g_step * AT, axis=2) + g_du * u[t]
            gu[t] = g_du * delta[t]
        grads = (gu, gdelta, gAT.T, gB, gC)
        return tuple(grads[i] for i in argnums)
    return vjp


defvjp_argnums(_readout, _readout_vjp)


def _stepwise(engine: Engine, u: Any, delta: Any, A: Any, B: Any, C: Any) -> Any:
    """y_t = C_t h_t, h_t = exp(delta_t A) h_{t-1} + delta_t B_t u_t, one time step at a time on time-major torch
    or JAX arrays (`Engine.sequential_scan`: one compiled loop on JAX): no array of L x batch x N x channels numbers
    is made, whose passes through memory cost 4 times the loop's calls (Mamba at 196 steps, batch 64, 64 channels,
    N = 16).  Step 0 is taken here, h_0 = delta_0 B_0 u_0 (no exp(delta_0 A) meets the zero state: it may overflow)."""
    h = (delta[0] * u[0])[:, None, :] * B[0][:, :, None]
    h = engine.cast(h, engine.common_dtype([h, A, C]))
    first = engine.matmul(C[0][:, None, :], h)[:, 0, :]
    step = _SELECTIVE_STEPS.kept(engine.name, lambda: _selective_step(engine))
    return engine.sequential_scan(step, (h, engine.transpose(A, (1, 0))), (delta, u, B, C), first=first)[1]


#: The selective scan's step per engine (JAX keeps its compiled loop with the step function).
_SELECTIVE_STEPS: BoundedCache[str, Callable[..., Any]] = BoundedCache(8)


def _selective_step(engine: Engine) -> Callable[[tuple[Any, Any], tuple[Any, ...]], tuple[tuple[Any, Any], Any]]:
    """The selective scan's step on `engine`'s arrays: ((h, A^T), (delta_t, u_t, B_t, C_t)) -> ((h_t, A^T), y_t)."""
    def step(carry: tuple[Any, Any], inputs: tuple[Any, ...]) -> tuple[tuple[Any, Any], Any]:
        (h, transposed), (d, x, b, c) = carry, inputs
        h = engine.exp(d[:, None, :] * transposed) * h + (d * x)[:, None, :] * b[:, :, None]
        return (h, transposed), engine.matmul(c[:, None, :], h)[:, 0, :]
    return step


def time_major(u: Any, delta: Any, A: Any, B: Any, C: Any, D: Any, z: Any, method: str) -> Any:
    """`selective_scan` on time-major arrays (time first, then batch): u, delta, z (L, batch, channels), B, C
    (L, batch, N).  On torch and JAX arrays (differentiated by their own autodiff) the sequential method is
    `_stepwise`; the parallel and chunked ones run the states as one associative or chunked scan (L x batch x N x
    channels numbers)."""
    engine = engine_of({"u": u, "delta": delta, "A": A, "B": B, "C": C, "D": D, "z": z})
    if method == "auto":
        method = choose(u.shape[0], u.shape[1] * A.shape[0] * A.shape[1], engine, engine.rates_for(u))
    if engine is NUMPY:
        y = _readout(u, delta, A, B, C, method)
    elif method == "sequential":
        y = _stepwise(engine, u, delta, A, B, C)
    else:
        a = engine.exp(delta[:, :, None, :] * engine.transpose(A, (1, 0)))          # (L, batch, N, channels)
        states = on_engine(engine, a, (delta * u)[:, :, None, :] * B[:, :, :, None], method=method)
        y = engine.matmul(C[:, :, None, :], states)[:, :, 0, :]
    if D is not None:
        y = y + D * u
    return y if z is None else y * silu(z, engine)


@traced_as_operator
def selective_scan(u: Any, delta: Any, A: Any, B: Any, C: Any, D: Any = None, z: Any = None,
                   method: str = "auto") -> Any:
    """The selective scan: h_t = exp(delta_t A) h_{t-1} + delta_t B_t u_t, y_t = C_t h_t (+ D u_t) (* silu(z_t)).

    u, delta and z: (batch, length, channels); A: (channels, d_state); B, C: (batch, length, d_state); D:
    (channels,).  Returns y (batch, length, channels).  `method`: "sequential" (a loop over time, in cache-sized
    pieces), "parallel" (one log-depth scan over the whole sequence), "chunked" (about 2 sqrt(length) steps on
    whole chunks of time: `kernels.scans.chunked`, for a GPU) or "auto" (by the device's rates).  Differentiable
    with autograd, torch and JAX.  Half precision runs in float32, as Mamba's reference keeps its state
    (`arrays.precision`).

    >>> import numpy as np
    >>> u, delta = np.ones((1, 3, 1)), np.full((1, 3, 1), 0.5)
    >>> selective_scan(u, delta, np.array([[-np.log(4.0)]]), np.ones((1, 3, 1)), np.ones((1, 3, 1)))[0, :, 0]
    array([0.5  , 0.75 , 0.875])
    """
    growth = _check_selective(u, delta, A, B, C, D, z, method)
    engine, inputs = adopt({"u": u, "delta": delta, "A": A, "B": B, "C": C, "D": D, "z": z})
    inputs, half = common_precision(engine, inputs)
    swap = lambda v: None if v is None else engine.swapaxes(v, 0, 1)  # noqa: E731
    y = swap(time_major(swap(inputs["u"]), swap(inputs["delta"]), inputs["A"], swap(inputs["B"]), swap(inputs["C"]),
                        inputs["D"], swap(inputs["z"]), method))
    if growth > 0:                                      # a growing state: say so where it overflowed (issue 36)
        _warn_overflow(engine, y, growth, inputs)
    return y if half is None else engine.cast(y, half)


def _warn_overflow(engine: Engine, y: Any, growth: float, inputs: dict[str, Any]) -> None:
    """A RuntimeWarning naming A where `y` has non-finite values that finite inputs did not bring: with A > 0 the
    state grows by exp(delta A) at every step and overflows.  Read through `Engine.detached` (a JAX array under
    eager ``jax.grad`` is a tracer until then), and not at all where no number can be read (under ``jax.jit``)."""
    y = engine.detached(y)
    if not engine.concrete(y):
        return
    inputs = {name: engine.detached(v) for name, v in inputs.items() if v is not None}
    values = engine.value(y)
    bad = int(np.size(values) - np.count_nonzero(np.isfinite(values)))
    if not bad or not all(np.all(np.isfinite(engine.value(v))) for v in inputs.values()):
        return
    steps = float(np.max(engine.value(inputs["delta"])))
    warnings.warn(f"selective_scan: {bad:,} of {np.size(values):,} outputs are not finite, from finite inputs: A has "
                  f"positive entries (largest {growth:.3g}), so the state grows by exp(delta * A) (up to "
                  f"exp({steps * growth:.3g})) at every step and overflows; use a negative A (Mamba's "
                  f"A = -exp(A_log)), smaller delta or shorter sequences", RuntimeWarning, stacklevel=3)


def _extremes(delta: Any, A: Any) -> tuple[float, float]:
    """(delta's smallest step, A's largest entry), each reduced where it lives and both read in one transfer (on a
    GPU, copying the whole of delta to the host had cost more than the scan); (1, 0), which passes the checks and
    warns of nothing, where the values cannot be read: arrays traced by torch.compile (whose real call, the
    operator's body, checks them), by ``jax.jit`` or by a torch.func transform (where they are not checked), and
    for an empty batch (no step to check)."""
    engine, arrays = adopt({"delta": delta, "A": A})
    if 0 in tuple(arrays["delta"].shape):
        return 1.0, 0.0
    # detached only where that makes them readable (a JAX array under eager jax.grad): torch.export fails on a
    # constant tensor whose one operation, a detach nothing uses, it then removes
    delta, A = (arrays[name] if engine.concrete(arrays[name]) else engine.detached(arrays[name])
                for name in ("delta", "A"))
    if not (engine.concrete(delta) and engine.concrete(A)):
        return 1.0, 0.0
    smallest, largest = engine.value(engine.stack([-engine.amax(-delta), engine.amax(A)]))
    return float(smallest), float(largest)


def _check_selective(u: Any, delta: Any, A: Any, B: Any, C: Any, D: Any, z: Any, method: str) -> float:
    """A TypeError or ValueError naming the first argument that does not fit; else A's largest entry."""
    check_arrays({"u": u, "delta": delta, "A": A, "B": B, "C": C, "D": D, "z": z}, "f", "real floats",
                 optional=("D", "z"))
    if np.ndim(u) != 3 or 0 in np.shape(u)[1:]:
        raise ValueError(f"u: expected shape (batch, length, channels) with positive length and channels, got "
                         f"{np.shape(u)}")
    batch, length, channels = np.shape(u)
    if np.ndim(A) != 2 or np.shape(A)[0] != channels or np.shape(A)[1] < 1:
        raise ValueError(f"A: expected shape (channels, d_state) = ({channels}, d_state >= 1), got {np.shape(A)}")
    expected = {"delta": np.shape(u), "B": (batch, length, np.shape(A)[1]), "C": (batch, length, np.shape(A)[1]),
                "D": (channels,), "z": np.shape(u)}
    for name, value in (("delta", delta), ("B", B), ("C", C), ("D", D), ("z", z)):
        if value is not None and np.shape(value) != expected[name]:
            raise ValueError(f"{name}: expected shape {expected[name]}, got {np.shape(value)}")
    smallest, largest = _extremes(delta, A)
    if not smallest > 0:
        raise ValueError(f"delta: expected positive steps, got a minimum of {smallest}")
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method: expected one of {', '.join(METHODS)}, got {method!r:.60}")
    return largest


