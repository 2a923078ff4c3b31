"""State-space models: a Scan read out at every step; the diagonal linear SSM (S4D).

`StateSpaceModel` is the frame shared with `mamba` and `dynamical`.  Its expression holds one Scan whose step is
a *hidden term* (everything that involves H(t-1)) plus an *input term* I(t).  `order` reports per-step orders in
the layer's input with H(t-1) counted as order 0 (the paper's convention: an SSM is order 1, Mamba order 3) and the
order of the whole layer.  `apply` evaluates the expression (``method="expression"``) or a fast numeric path built
on `kernels.scans.recurrence` (``"sequential"``, ``"parallel"`` or ``"auto"``, which picks the faster).

The diagonal SSM: per channel c and mode n a complex A = -exp(log_A_real) + i A_imag, a learnable step
Delta_c = exp(log_step_c) and the zero-order hold Abar = exp(Delta A), Bbar = (Abar - 1) / A * B, so
h_t = Abar h_{t-1} + Bbar x_t and y_t = Re(sum_n C_n h_tn) + D x_t.  In position(L) (x) diagonal(channels) (x)
diagonal(modes) (x) complex_numbers() the input is x (x) f_0 (the unit of the modes; real: x + 0i), the step
the order-1 multiplication operators Abar H + Bbar X, and the readout P^0(P(C H) + D X) (P sums the modes, P^0
keeps the real part).  Unrolled, y is x convolved causally with K_k = Re(sum_n C_n Abar_n^k Bbar_n): the FFT
path ``method="convolution"``.

>>> import numpy as np
>>> model = ssm(channels=2, d_state=3)
>>> model.order()
Orders(input=1, hidden=0, output=1)
>>> params = model.init(seed=0)
>>> x = np.random.default_rng(1).standard_normal((2, 7, 2))
>>> bool(np.allclose(model.apply(params, x, method="convolution"), model.apply(params, x, method="sequential")))
True
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import DTypeLike

from ...algebra import Algebra, complex_numbers, diagonal, position, tensor_product
from ...algebra.algebra import check_count
from ...kernels import causal_convolution
from ...kernels.arrays import adopt, common_precision, counting, with_jax_defaults
from ...kernels import linear_scan

from ..expression import Expr, Parameter, Signal
from ..orders import order
from ..scan import Scan
from ..structural import Reduce, ScalarProjection
from .model import Model, check_dtype, check_params, check_seed, check_signal, check_width


if TYPE_CHECKING:
    from ...kernels.arrays import Engine


class Orders(NamedTuple):
    """Self-interaction orders in the layer's input: of the step's input term and hidden term (H(t-1) counted as
    order 0), and of the layer's output."""

    input: int
    hidden: int
    output: int


class StateSpaceModel(Model):
    """A `Model` whose expression contains one Scan built by `recurrence`; inputs (batch, length, `width`).

    Subclasses define ``build``, ``width`` and ``fast(engine, params, x, method)`` (x and params checked, and in
    the engine's library).
    """

    methods: tuple[str, ...] = ("auto", "expression", "sequential", "parallel", "chunked")
    width: int

    @staticmethod
    def recurrence(step: Callable[[Expr, Expr], tuple[Expr, Expr]], X: Expr, state: Algebra) -> Scan:
        """Scan(X) with H(t) = hidden + input for ``step(h, x_t) -> (hidden, input)``."""
        def body(h: Expr, x_t: Expr) -> Expr:
            hidden, term = step(h, x_t)
            return hidden + term
        return Scan(body, X, state=state)

    def order(self) -> Orders:  # type: ignore[override]  # three orders where a Model has one
        """The orders of the input term, the hidden term and the output (see `Orders`)."""
        scan = next(node for node in self.expr.walk() if isinstance(node, Scan))
        hidden, term = scan.body.children
        outer = order(scan.children[0], self.signal)
        return Orders(order(term, scan.x_t) * outer, order(hidden, scan.x_t) * outer, order(self.expr, self.signal))

    def geometry_of(self, x: Any) -> tuple[int, ...]:
        if np.ndim(x) != 3 or np.shape(x)[-1] != self.width:
            raise ValueError(f"x: expected shape (batch, length, {self.width}), got {np.shape(x)}")
        return (np.shape(x)[1],)

    @with_jax_defaults
    def apply(self, params: Mapping[str, Any], x: Any, method: str = "auto") -> Any:
        """The layer on x of shape (batch, length, width): the compiled expression or a fast path (`methods`)."""
        if method not in self.methods:
            raise ValueError(f"method: expected one of {', '.join(self.methods)}, got {method!r}")
        self.geometry_of(x)
        check_signal(x)
        engine, arrays = adopt({"x": x, **check_params(params, self.parameters)})
        # half precision in float32: the scans' exp and products of small numbers underflow in it, their sums
        # add up its rounding, and torch has no complex half numbers (S4D); the result in the half dtype
        arrays, half = common_precision(engine, arrays)
        x, params = arrays.pop("x"), arrays
        y = self.expression_apply(engine, params, x) if method == "expression" else self.fast(engine, params, x, method)
        return y if half is None else engine.cast(y, half)

    def expression_apply(self, engine: Engine, params: Mapping[str, Any], x: Any) -> Any:
        return super().apply(params, x)

    def fast(self, engine: Engine, params: Mapping[str, Any], x: Any, method: str) -> Any:
        raise NotImplementedError


def check_steps(low: float, high: float, low_name: str, high_name: str) -> tuple[float, float]:
    """Step sizes 0 < low <= high < inf as floats, or a ValueError naming both arguments."""
    if not (all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in (low, high))
            and 0 < low <= high < math.inf):
        raise ValueError(f"{low_name}, {high_name}: expected steps 0 < {low_name} <= {high_name}, got {low!r}, "
                         f"{high!r}")
    return float(low), float(high)


def _complex(pairs: Any) -> Any:
    return pairs[..., 0] + 1j * pairs[..., 1]


def _pairs(engine: Engine, z: Any) -> Any:
    return engine.stack([engine.real(z), engine.imag(z)], axis=-1)


class DiagonalSSM(StateSpaceModel):
    """The S4D layer of the module docstring.  Parameters ``log_step`` (channels,), ``log_A_real`` and ``A_imag``
    (channels, d_state), ``B`` and ``C`` (channels, d_state, 2) (complex numbers as (real, imaginary)), ``D``
    (channels,)."""

    methods = StateSpaceModel.methods + ("convolution",)

    def __init__(self, channels: int, d_state: int, step_min: float, step_max: float, length: int) -> None:
        super().__init__()
        self.width, self.d_state = check_width(channels, "channels"), check_width(d_state, "d_state")
        self.step_min, self.step_max = check_steps(step_min, step_max, "step_min", "step_max")
        self.geometry = (check_count(length, "length"),)

    @property
    def parameters(self) -> dict[str, tuple[int, ...]]:
        H, N = self.width, self.d_state
        return {"log_step": (H,), "log_A_real": (H, N), "A_imag": (H, N), "B": (H, N, 2), "C": (H, N, 2),
                "D": (H,)}

    def init(self, seed: int | np.random.Generator = 0, dtype: DTypeLike = np.float64) -> dict[str, np.ndarray]:
        """S4D-Lin: A_n = -1/2 + i pi n, B = 1, C and D standard normal (C with variance 1/2 per part), steps
        log-uniform in [step_min, step_max]."""
        rng, dtype = check_seed(seed), check_dtype(dtype)
        H, N = self.width, self.d_state
        values = {"log_step": rng.uniform(np.log(self.step_min), np.log(self.step_max), H),
                  "log_A_real": np.full((H, N), np.log(0.5)), "A_imag": np.tile(np.pi * np.arange(N), (H, 1)),
                  "B": np.stack([np.ones((H, N)), np.zeros((H, N))], axis=-1),
                  "C": np.sqrt(0.5) * rng.standard_normal((H, N, 2)), "D": rng.standard_normal(H)}
        return {name: np.asarray(value, dtype=dtype) for name, value in values.items()}

    def build(self, geometry: tuple[int, ...]) -> tuple[Expr, Signal]:
        (length,) = geometry
        state = tensor_product(diagonal(self.width), diagonal(self.d_state), complex_numbers())
        X = Signal("x", tensor_product(position(length), *state.factors), units=[2])
        Abar, Bbar = Parameter("Abar", state), Parameter("Bbar", state)
        H = self.recurrence(lambda h, x_t: (Abar * h, Bbar * x_t), X, state)
        C = Parameter("C", X.algebra, units=[0])
        D = Parameter("D", X.algebra, units=[0, 2], support={3: (0,)})
        return ScalarProjection(Reduce(C * H, factor=2) + D * X, factor=3), X

    def discretise(self, params: Mapping[str, Any], engine: Engine | None = None) -> tuple[Any, Any, Any, Any]:
        """Zero-order hold: (Delta A, Abar, Bbar, C) as complex arrays (channels, d_state), on the parameters'
        engine."""
        engine = engine or adopt(dict(params))[0]
        step = engine.exp(params["log_step"])[:, None]
        A = -engine.exp(params["log_A_real"]) + 1j * params["A_imag"]
        Abar = engine.exp(step * A)
        return step * A, Abar, (Abar - 1) / A * _complex(params["B"]), _complex(params["C"])

    def expression_apply(self, engine: Engine, params: Mapping[str, Any], x: Any) -> Any:
        _, Abar, Bbar, C = self.discretise(params, engine)
        values = {"Abar": _pairs(engine, Abar), "Bbar": _pairs(engine, Bbar), "C": _pairs(engine, C),
                  "D": params["D"][:, None]}
        pairs = engine.stack([x, x * 0], axis=-1)
        plan, call = self.checked(self.geometry_of(x), pairs, values)
        return plan.run(call)[..., 0]

    def fast(self, engine: Engine, params: Mapping[str, Any], x: Any, method: str) -> Any:
        step_A, Abar, Bbar, C = self.discretise(params, engine)
        if method in ("auto", "convolution"):          # measured: never slower than the scans (L >= 16, N >= 1)
            steps = engine.constant(counting(x.shape[1], "float64"), x)
            powers = engine.exp(step_A[..., None] * steps)                                # Abar^k, (H, N, L)
            kernel = engine.real(engine.einsum("hn,hnl->hl", C * Bbar, powers))
            y = engine.swapaxes(causal_convolution(engine.swapaxes(x, 1, 2), kernel), 1, 2)
        else:
            xt = engine.swapaxes(x, 0, 1)                                                # (L, batch, H)
            inputs = xt[..., None] * Bbar
            states = linear_scan(engine.broadcast_to(Abar[None, None], tuple(inputs.shape)) * 1, inputs,
                                 method=method)
            y = engine.swapaxes(engine.real(engine.einsum("lbhn,hn->lbh", states, C)), 0, 1)
        return y + params["D"] * x


def ssm(channels: int = 64, d_state: int = 64, step_min: float = 1e-3, step_max: float = 1e-1,
        length: int = 3) -> DiagonalSSM:
    """A diagonal SSM (S4D) on (batch, length, channels); `length` only sets the inspected expression."""
    return DiagonalSSM(channels, d_state, step_min, step_max, length)
