"""fft: lam[i, j, k] = [k = s1 i + s2 j mod n] (cyclic groups and their transposes), through the DFT.

The DFT turns the circular convolution into a product per frequency; s = -1 (a reflected argument, as in the
vector-Jacobian products) conjugates a real spectrum and reflects a complex one.  Real inputs use rfft/irfft;
complex ones (a cyclic factor inside another's FFT, e.g. a 2-D lattice) use fft/ifft.

What it trades: the error of every output is bounded by the norms, not by that output.  Each z_k is off by
at most about ``ERROR_FACTOR * eps * log2(n) * ||x||_2 ||y||_2`` (eps the dtype's unit roundoff), so an output
much smaller than the largest products (inputs spanning many orders of magnitude) can lose all its digits, where
the direct strategies (gather, codegen, dense) get each output to its own precision.  `explain()` says so.

>>> import numpy as np
>>> from product_interactions.algebra import translation
>>> from product_interactions.kernels.products.factor import Factor
>>> from product_interactions.kernels.products.strategies.identify import Elementwise
>>> level = lower(Factor.from_algebra(translation(4)), -1, Elementwise(1))
>>> level(np.array([0.0, 1.0, 0.0, 0.0]), np.array([0.0, 0.0, 0.0, 1.0])).round(12)   # e_1 e_3 = e_0
array([1., 0., 0., 0.])
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ...arrays import owner
from ...arrays.constants import frozen
from ...arrays.precision import common_precision
from .level import Level, Program, around

if TYPE_CHECKING:
    from ..cost import Cost
    from ...arrays import Engine
    from ..factor import Factor

NAME = "fft"
ROLE = "level"
NESTING = 0                     # outermost: one transform for everything inside
NORMWISE = True                 # see "What it trades" above: auto takes it only for a clear gain
#: The constant of the normwise error bound in the module docstring (Higham, Accuracy and Stability of Numerical
#: Algorithms, section 24.1: about log2(n) eps per transform, three transforms and a product; with margin).
ERROR_FACTOR = 5


def unsupported(factor: Factor) -> str | None:
    """Why the FFT cannot represent `factor` (it needs a cyclic group or a transpose of one), or None."""
    if factor.cyclic_signs() is None:
        return f"{factor.name} is not a cyclic group algebra (lam[i, j, k] = [k = +-i +- j mod n]); fft needs one"
    return None


def cost(factor: Factor, inner: Cost) -> Cost:
    """Three transforms of 2.5 n log2 n FLOPs per inner element, and the inner product on n/2 + 1 complex
    frequencies (4 real products each).  As temporaries, the spectra of x and y, the copies of them an inner
    level makes when their axis moves in front, and the inner's product and temporaries, all complex."""
    c, n = inner, factor.shape[0]
    half = n // 2 + 1
    transform = 2.5 * n * math.log2(max(n, 2))
    transforms = transform * (c.x + c.y + c.z)
    return around(factor, c, flops=transforms + 4 * half * c.flops, moved=4 * n * (c.x + c.y + c.z) + 2 * half * c.moved,
                  temporary=2 * half * (2 * (c.x + c.y) + c.z + c.temporary), calls=6 + 4 * c.calls, repeats=4 * half,
                  entries=4, row_calls=c.x + c.y + c.z, transform=transforms)


def lower(factor: Factor, axis: int, inner: Program) -> Fourier:
    """The FFT level for `factor` on `axis` around `inner`."""
    return Fourier(factor, axis, inner)


class Fourier(Level):
    """The FFT level (see `Level`); `inner` multiplies spectra."""

    strategy = NAME

    def __init__(self, factor: Factor, axis: int, inner: Program) -> None:
        super().__init__(factor, axis, inner, cost(factor, inner.cost))
        self.n = factor.shape[0]
        self.signs: tuple[int, ...] = factor.cyclic_signs()  # type: ignore[assignment]  # fft applies: cyclic
        #: Where a spectrum's entries go when its operand is reversed (k -> -k mod n).
        self.reversal = frozen(-np.arange(self.n) % self.n)

    def _spectrum(self, engine: Engine, x: Any, sign: int, real: bool) -> Any:
        if real:
            spectrum = engine.rfft(x, axis=self.axis)
            return engine.conj(spectrum) if sign < 0 else spectrum
        spectrum = engine.fft(x, axis=self.axis)
        return engine.take(spectrum, self.reversal, self.axis) if sign < 0 else spectrum

    def __call__(self, x: Any, y: Any) -> Any:
        engine = owner(x)
        operands, half = common_precision(engine, {"x": x, "y": y})   # torch's FFTs refuse half precision
        x, y = operands["x"], operands["y"]
        real = engine.dtype(x).kind != "c" and engine.dtype(y).kind != "c"
        spectra = [self._spectrum(engine, a, s, real) for a, s in zip((x, y), self.signs)]
        if getattr(self.inner, "positional", True):
            product = engine.moveaxis(self.inner(*(engine.moveaxis(a, self.axis, 0) for a in spectra)), 0,
                                      self.axis)
        else:
            product = self.inner(*spectra)
        if not real:
            return engine.ifft(product, axis=self.axis)
        z = engine.irfft(product, n=self.n, axis=self.axis)
        return z if half is None else engine.cast(z, half)

    def describe(self) -> list[str]:
        s1, s2 = ("" if s > 0 else "-" for s in self.signs)
        return [f"fft on axis {self.axis}: z = irfft(rfft({s1}x) * rfft({s2}y)), n = {self.n} "
                f"(cyclic: k = {s1}i + {s2}j mod {self.n}); each output's error is up to about "
                f"{ERROR_FACTOR} eps log2({self.n}) ||x|| ||y||, so outputs far below the largest lose digits: "
                f"strategy='gather' computes each to its own precision"]
