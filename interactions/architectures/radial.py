"""Learned rotation-equivariant edge filters K(r_a - r_b) = R(|r_ab|) Y(r_hat_ab) for point-cloud layers.

R is a small MLP on Gaussian radial features, one output per (filter degree l, output channel, input channel),
cut off smoothly at `radius`; Y are the real spherical harmonics of `algebra.so3`.  The filter is an array
(batch, a, b, (lmax+1)^2, c_out, c_in): the coefficients of an element of position (x) position (x) CG (x)
channels, fed to the layers as a signal.

>>> import numpy as np
>>> radial = RadialFilter("K", lmax=1, channels_out=2, channels_in=3, radius=2.0, basis=4, hidden=5)
>>> sorted(radial.parameters.items())
[('K_W_out', (12, 5)), ('K_W_radial', (5, 4)), ('K_b_radial', (5,))]
"""
from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import DTypeLike

from ...algebra.so3 import solid_harmonics, spherical_harmonics
from ...kernels.arrays import NUMPY, adopt, frozen, library, owner, silu
from .model import check_positive, check_signal, check_width

if TYPE_CHECKING:
    from ...kernels.arrays import Engine


class RadialFilter:
    """See the module docstring; parameter names start with `prefix`."""

    def __init__(self, prefix: str, lmax: int, channels_out: int, channels_in: int, radius: float, basis: int,
                 hidden: int) -> None:
        self.prefix, self.lmax = prefix, check_width(lmax, "lmax", minimum=0)
        self.channels_out, self.channels_in = check_width(channels_out, "channels_out"), check_width(
            channels_in, "channels_in")
        self.basis, self.hidden = check_width(basis, "basis"), check_width(hidden, "hidden")
        self.radius = check_positive(radius, "radius")

    @functools.cached_property
    def centres(self) -> np.ndarray:
        """The Gaussians' centres, one array (`Engine.constant` converts it onto a device once; made on first use,
        so that a filter pickled before it existed has it too)."""
        return frozen(np.linspace(0.0, self.radius, self.basis))

    @functools.cached_property
    def degrees(self) -> np.ndarray:
        """Each harmonic's degree l, (lmax + 1)**2 of them (made on first use, as `centres`)."""
        return frozen(np.repeat(np.arange(self.lmax + 1), 2 * np.arange(self.lmax + 1) + 1))

    @property
    def parameters(self) -> dict[str, tuple[int, ...]]:
        paths = (self.lmax + 1) * self.channels_out * self.channels_in
        return {f"{self.prefix}_W_radial": (self.hidden, self.basis), f"{self.prefix}_b_radial": (self.hidden,),
                f"{self.prefix}_W_out": (paths, self.hidden)}

    def __call__(self, params: Mapping[str, Any], points: Any, dtype: DTypeLike | None = None) -> Any:
        """K[..., a, b, (l, m), o, i] = R_{l,o,i}(|r_ab|) cutoff(|r_ab|) Y_lm(r_ab / |r_ab|), r_ab = r_a - r_b
        (numpy: in `dtype` when given and no gradient is traced; torch and JAX: in the points' library)."""
        engine, arrays = adopt({"points": points, **{name: params[name] for name in self.parameters}})
        points, (W_radial, b_radial, W_out) = arrays["points"], (arrays[name] for name in self.parameters)
        difference = points[..., :, None, :] - points[..., None, :, :]
        squared = engine.sum(difference ** 2, axis=-1)
        apart = squared != 0           # sqrt's slope is infinite at 0 (a point and itself): 0 there, not NaN
        divisor = engine.sqrt(engine.where(apart, squared, 1.0))           # |r_ab|, 1 where the points coincide
        distance = engine.where(apart, divisor, 0.0)
        centres = engine.constant(self.centres, points)
        gaussians = engine.exp(-((distance[..., None] - centres) * self.basis / self.radius) ** 2)
        cutoff = engine.where(distance < self.radius, 0.5 * (engine.cos(np.pi * distance / self.radius) + 1), 0.0)
        hidden = silu(gaussians @ engine.swapaxes(W_radial, 0, 1) + b_radial, engine)
        radial = (hidden @ engine.swapaxes(W_out, 0, 1)) * cutoff[..., None]
        radial = engine.reshape(radial, tuple(distance.shape) + (self.lmax + 1, self.channels_out, self.channels_in))
        harmonics = self._harmonics(engine, difference, divisor)[..., :, None, None]
        radial = engine.take(radial, self.degrees, -3)
        if dtype is not None and isinstance(radial, np.ndarray):          # no gradient traced: compute in dtype
            return harmonics.astype(dtype) * radial.astype(dtype)
        return harmonics * radial

    def _harmonics(self, engine: Engine, difference: Any, divisor: Any) -> Any:
        """Y_lm of the directions `difference` / `divisor` (0 beyond l = 0 where two points coincide)."""
        if library(difference) == "numpy":                   # not traced by autograd: the exact table
            return spherical_harmonics(self.lmax, difference)
        unit = difference / divisor[..., None]
        return solid_harmonics(self.lmax, unit[..., 0], unit[..., 1], unit[..., 2], engine.stack)

    def neighbours(self, points: Any) -> Any:
        """The 0/1 mask of pairs closer than the radius (each point is its own neighbour), in the points' library."""
        engine = owner(points)
        difference = points[..., :, None, :] - points[..., None, :, :]
        return engine.floats(engine.sum(difference ** 2, axis=-1) < self.radius ** 2, points)


def check_cloud(points: Any, features: Any, lmax: int, channels_in: int) -> Any:
    """Points (batch, n, 3) as floats (numpy ones as float64; torch and JAX ones as they are) and features
    (batch, n, (lmax+1)^2, channels_in), or a ValueError."""
    if owner(points) is NUMPY and library(points) != "autograd":      # (autograd's traced points stay as they are)
        points = np.asarray(check_signal(points, "points"), dtype=float)
    if len(points.shape) < 2 or points.shape[-1] != 3:
        raise ValueError(f"points: expected shape (batch, n, 3), got {tuple(points.shape)}")
    check_signal(points, "points")
    expected = (points.shape[-2], (lmax + 1) ** 2, channels_in)
    if tuple(np.shape(features)[-3:]) != expected:
        raise ValueError(f"features: expected shape (batch, {', '.join(map(str, expected))}), got "
                         f"{np.shape(features)}")
    check_signal(features, "features")
    return points
