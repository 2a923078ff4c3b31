"""Mamba: the selective SSM block, an SSM whose step size, B and C are read from the input.

On (batch, length, d_model), with d_inner = expand * d_model:

    x, z = W_x X, W_z X;   u = silu(sum_k conv_k x_{t-k} + conv_bias)            (causal depthwise, d_conv taps)
    Delta_t = softplus(W_dt W_delta u_t + dt_bias),  B_t = u_t W_B,  C_t = u_t W_C,  A = -exp(A_log)
    h_t = exp(Delta_t A) h_{t-1} + Delta_t B_t u_t,   y_t = C_t h_t + D u_t,   out = W_out (y * silu(z))

with A real (d_inner, d_state), initialised to -(1..d_state).  In the algebra position(L) (x) diagonal(channels)
(x) diagonal(d_state) the input is X (x) f_0 (the unit of the hidden algebra); B_t = P(W_B u_t) and C_t = P(W_C u)
reduce the channels, the step is O_{exp(Delta A)}(H) + O_Delta(O_B(u_t)): the paper's discrete rule of Mamba.
`order()`: the input term Delta(u) B(u) u has order 3 (the paper's "Mamba is order 3"), the hidden term
exp(Delta A) H order 1, and the block order 5 (C_t h_t adds 1, the gate silu(z) 1).

The scan is public as `selective_scan`; the block's fast path runs it on time-major arrays, in cache-sized chunks
of time (`kernels.linear_scan` within each, exp(Delta A) split over `THREADS` threads) with a hand-written gradient.

>>> import numpy as np
>>> model = mamba(d_model=4, d_state=3)
>>> model.order()
Orders(input=3, hidden=1, output=5)
>>> params = model.init(seed=0)
>>> x = np.random.default_rng(1).standard_normal((2, 5, 4))
>>> bool(np.allclose(model.apply(params, x), model.apply(params, x, method="expression")))
True
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import autograd.numpy as anp
import numpy as np
import sympy
from autograd.extend import defvjp_argnums, primitive
from autograd.tracer import getval

from ...algebra import Element, diagonal, position, tensor_product
from ...algebra.algebra import check_count
from ...kernels.linear_scan import METHODS, choose, reverse, scan

from ..expression import Expr, Linear, Parameter, Scale, Signal, _check_factor
from ..pointwise import NUMERIC, Pointwise
from ..structural import Reduce
from .ssm import StateSpaceModel, check_steps

_silu, _softplus = NUMERIC["silu"], NUMERIC["softplus"]

#: Bytes of one chunk's (time, batch, d_state, channels) arrays in the sequential selective scan: small enough to
#: stay in cache, large enough to amortise the Python calls.
CHUNK_BYTES = 1 << 21

#: Threads for exp(Delta A), most of the block's time (float64 exp costs about 10 ns an element without AVX-512;
#: numpy releases the GIL), from THREAD_ELEMENTS elements on; 1 computes it in the calling thread only.
THREADS, THREAD_ELEMENTS = min(2, os.cpu_count() or 1), 1 << 16
_pool = []


class _Lag(Expr):
    """T_k on a position factor: x_t -> x_{t-k}, zero for t < k (the causal lattice translation).  Private here
    while `interactions.structural` has no such operator; the depthwise convolution is sum_k conv_k T_k(x)."""

    def __init__(self, X: Expr, lag: int, factor: int = 0):
        factor = _check_factor(X, factor)
        if factor in X.units:
            raise ValueError(f"factor: X is constant along factor {factor}; lag a factor it varies along")
        super().__init__(X.algebra, X.units)
        self.children, self.lag, self.factor = (X,), check_count(lag, "lag"), factor

    def _describe(self):
        return f"Lag[{self.lag}]"

    def _order(self, signal):
        return self.children[0]._order(signal)

    def _shifted(self, array, axis, zeros):
        n = np.shape(array)[axis]
        head = (slice(None),) * axis
        return anp.concatenate([zeros(array[head + (slice(0, min(self.lag, n)),)]),
                                array[head + (slice(0, max(n - self.lag, 0)),)]], axis=axis)

    def _symbolic(self, context):
        coefficients = context.value(self.children[0]).coefficients
        zeros = lambda block: np.full(block.shape, sympy.Integer(0), dtype=object)  # noqa: E731
        return Element(self.algebra, self._shifted(coefficients, self.factor, zeros))

    def _lower(self, context):
        array = context.full_array(self.children[0], self.units)
        axis = np.ndim(array) - len(self.shape) + sum(1 for f in range(self.factor) if f not in self.units)
        return context.leaf(self, self._shifted(array, axis, anp.zeros_like),
                            batched=np.ndim(array) > len(self.shape))


# ---------------------------------------------------------------------- the selective scan
def _chunks(length, width, itemsize, method):
    """Time ranges scanned together: the whole sequence for the parallel scan, else about CHUNK_BYTES each."""
    size = length if method == "parallel" else max(1, CHUNK_BYTES // (width * itemsize))
    return [(start, min(start + size, length)) for start in range(0, length, size)]


def _exp(a):
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


def _chunk_states(u, delta, AT, B, start, stop, h, method, buffers=(None, None)):
    """exp(Delta_t A) and the states h_t for t in [start, stop) from h_{start-1} = h (None: zero), written into
    `buffers` (two arrays of at least stop - start steps) when given."""
    a, b = (None if buffer is None else buffer[:stop - start] for buffer in buffers)
    a = _exp(np.multiply(delta[start:stop, :, None, :], AT, out=a))
    b = np.multiply((delta[start:stop] * u[start:stop])[:, :, None, :], B[start:stop, :, :, None], out=b)
    return a, scan(a, b, initial=h, method=method, out=b)


def _plan(u, A, method):
    length, batch, channels = u.shape
    return _chunks(length, batch * channels * A.shape[1], u.dtype.itemsize, method)


@primitive
def _readout(u, delta, A, B, C, method):
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


def _readout_vjp(argnums, y, args, kwargs):
    """Backward through the chunks in reverse, each recomputed from the state before it (kept by a forward sweep):
    the adjoint l_t = C_t gy_t + a_{t+1} l_{t+1}, then the gradients from l_t, h_{t-1} and a_t = exp(Delta_t A)."""
    u, delta, A, B, C, method = args

    def vjp(gy):
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


def _selective(u, delta, A, B, C, D, z, method):
    """`selective_scan` on time-major arrays."""
    if method == "auto":
        method = choose(np.shape(u)[0], np.shape(u)[1] * np.size(A))
    y = _readout(u, delta, A, B, C, method)
    if D is not None:
        y = y + D * u
    return y if z is None else y * _silu(z)


def selective_scan(u, delta, A, B, C, D=None, z=None, method: str = "auto"):
    """The selective scan: h_t = exp(delta_t A) h_{t-1} + delta_t B_t u_t, y_t = C_t h_t (+ D u_t) (* silu(z_t)).

    u, delta and z: (batch, length, channels); A: (channels, d_state); B, C: (batch, length, d_state); D:
    (channels,).  Returns y (batch, length, channels).  `method`: "sequential" (chunked), "parallel" (one log-depth
    scan over the whole sequence) or "auto".  Differentiable with autograd.

    >>> import numpy as np
    >>> u, delta = np.ones((1, 3, 1)), np.full((1, 3, 1), 0.5)
    >>> selective_scan(u, delta, np.array([[-np.log(4.0)]]), np.ones((1, 3, 1)), np.ones((1, 3, 1)))[0, :, 0]
    array([0.5  , 0.75 , 0.875])
    """
    _check_selective(u, delta, A, B, C, D, z, method)
    time_major = lambda v: None if v is None else anp.swapaxes(v, 0, 1)  # noqa: E731
    return time_major(_selective(*map(time_major, (u, delta)), A, *map(time_major, (B, C)), D, time_major(z),
                                 method))


def _check_selective(u, delta, A, B, C, D, z, method):
    if np.ndim(u) != 3:
        raise ValueError(f"u: expected shape (batch, length, channels), got {np.shape(u)}")
    batch, length, channels = np.shape(u)
    if np.ndim(A) != 2 or np.shape(A)[0] != channels or np.shape(A)[1] < 1:
        raise ValueError(f"A: expected shape (channels, d_state) = ({channels}, d_state >= 1), got {np.shape(A)}")
    expected = {"delta": np.shape(u), "B": (batch, length, np.shape(A)[1]), "C": (batch, length, np.shape(A)[1]),
                "D": (channels,), "z": np.shape(u)}
    for name, value in (("delta", delta), ("B", B), ("C", C), ("D", D), ("z", z)):
        if value is not None and np.shape(value) != expected[name]:
            raise ValueError(f"{name}: expected shape {expected[name]}, got {np.shape(value)}")
    if np.any(getval(delta) <= 0):
        raise ValueError(f"delta: expected positive steps, got a minimum of {np.min(getval(delta))}")
    if method not in METHODS:
        raise ValueError(f"method: expected one of {', '.join(METHODS)}, got {method!r}")


# ---------------------------------------------------------------------- the block
class Mamba(StateSpaceModel):
    """The Mamba block of the module docstring.  Parameters: ``W_x``, ``W_z`` (d_inner, d_model); ``conv_k``
    (k < d_conv) and ``conv_bias`` (d_inner,); ``W_delta`` (dt_rank, d_inner), ``W_dt`` (d_inner, dt_rank),
    ``dt_bias`` (d_inner,); ``A_log``, ``W_B``, ``W_C`` (d_inner, d_state); ``D`` (d_inner,); ``W_out``
    (d_model, d_inner)."""

    def __init__(self, d_model, d_state, expand, d_conv, dt_rank, dt_min, dt_max, length):
        super().__init__()
        self.width, self.d_state = check_count(d_model, "d_model"), check_count(d_state, "d_state")
        self.d_inner = check_count(expand, "expand") * self.width
        self.d_conv = check_count(d_conv, "d_conv")
        self.dt_rank = check_count(-(-self.width // 16) if dt_rank is None else dt_rank, "dt_rank")
        self.dt_min, self.dt_max = check_steps(dt_min, dt_max, "dt_min", "dt_max")
        self.geometry = (check_count(length, "length"),)
        taps = 1.0 / np.sqrt(self.d_conv)
        self.scales = {**{f"conv_{k}": taps for k in range(self.d_conv)}, "conv_bias": taps,
                       "W_B": 1.0 / np.sqrt(self.d_inner), "W_C": 1.0 / np.sqrt(self.d_inner)}

    def init(self, seed=0, dtype=np.float64) -> dict:
        """Normal weights (`scales`), A = -(1..d_state), D = 1, and dt_bias the inverse softplus of steps drawn
        log-uniformly in [dt_min, dt_max]."""
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        params = super().init(rng, dtype)
        step = np.exp(rng.uniform(np.log(self.dt_min), np.log(self.dt_max), self.d_inner))
        params["dt_bias"] = (step + np.log(-np.expm1(-step))).astype(dtype)
        params["A_log"] = np.log(np.tile(np.arange(1, self.d_state + 1), (self.d_inner, 1))).astype(dtype)
        params["D"] = np.ones(self.d_inner, dtype)
        return params

    def build(self, geometry):
        (length,) = geometry
        channels, hidden = diagonal(self.d_inner), diagonal(self.d_state)
        X = Signal("x", tensor_product(position(length), diagonal(self.width), hidden), units=[2])

        def project(name, value, into, factor=1):
            W = Parameter(name, (into.dim, value.factors[factor].dim))
            return Linear(W, value, factor=factor, into=into)

        x = project("W_x", X, channels)
        taps = [Parameter(f"conv_{k}", x.algebra, units=[0, 2]) * (_Lag(x, k) if k else x)
                for k in range(self.d_conv)]
        u = Pointwise("silu", sum(taps[1:], taps[0]) + Parameter("conv_bias", x.algebra, units=[0, 2]))

        def step(h, u_t):
            low = project("W_delta", u_t, diagonal(self.dt_rank), factor=0)
            delta = Pointwise("softplus", project("W_dt", low, channels, factor=0)
                              + Parameter("dt_bias", u_t.algebra, units=[1]))
            A = Scale(Pointwise("exp", Parameter("A_log", u_t.algebra)), -1)
            B = Reduce(Parameter("W_B", u_t.algebra) * u_t, factor=0, query=1)    # (no mask: query is unused)
            return Pointwise("exp", delta * A) * h, delta * B * u_t

        H = self.recurrence(step, u, tensor_product(channels, hidden))
        C = Reduce(Parameter("W_C", u.algebra, units=[0]) * u, factor=1)
        y = Reduce(C * H, factor=2) + Parameter("D", u.algebra, units=[0, 2]) * u
        return project("W_out", y * Pointwise("silu", project("W_z", X, channels)), diagonal(self.width)), X

    def fast(self, params, x, method):
        p, lag = params, self.d_conv - 1
        xt = anp.swapaxes(x, 0, 1)                                                  # (L, batch, d_model)
        x_in = xt @ p["W_x"].T
        padded = anp.concatenate([anp.zeros((lag,) + x_in.shape[1:], x_in.dtype), x_in])
        length = x_in.shape[0]
        conv = sum(p[f"conv_{k}"] * padded[lag - k:lag - k + length] for k in range(self.d_conv))
        u = _silu(conv + p["conv_bias"])
        delta = _softplus((u @ p["W_delta"].T) @ p["W_dt"].T + p["dt_bias"])
        y = _selective(u, delta, -anp.exp(p["A_log"]), u @ p["W_B"], u @ p["W_C"], p["D"], xt @ p["W_z"].T,
                       method)
        return anp.swapaxes(y @ p["W_out"].T, 0, 1)


def mamba(d_model: int = 64, d_state: int = 16, expand: int = 2, d_conv: int = 4, dt_rank: int | None = None,
          dt_min: float = 1e-3, dt_max: float = 1e-1, length: int = 3) -> Mamba:
    """A Mamba block on (batch, length, d_model); dt_rank defaults to ceil(d_model / 16); `length` only sets the
    inspected expression."""
    return Mamba(d_model, d_state, expand, d_conv, dt_rank, dt_min, dt_max, length)
