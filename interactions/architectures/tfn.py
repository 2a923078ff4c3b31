"""Tensor Field Network layer: O_K(S) = P(K T(S)) on position (x) position (x) CG(lmax) (x) channels.

S = sum_a s(r_a) g_a (x) g_0 (x) e^l_m lives in position(n) (x) position(n) (x) clebsch_gordan(lmax), with channel
factors position(c_out) (x) position(c_in) (S constant along the output channels).  The filter
K(r_a - r_b) = R(|r_ab|) Y(r_hat_ab) puts, on each pair of points, the real spherical harmonics of the direction
times a learnable radial function per (filter degree l, output channel, input channel): a small MLP on Gaussian
radial features, cut off smoothly at `radius` (so the reduction over keys is the neighbourhood reduction P^N).
The Clebsch-Gordan product couples filter and feature degrees; the reductions sum over input channels and
neighbours.  Rotating the cloud and the features by R rotates the output by D(R); translations change nothing.

>>> import numpy as np
>>> model = tfn(lmax=1, channels_in=2, channels_out=3)
>>> model.order()
1
>>> params = model.init(seed=0)
>>> points = np.random.default_rng(1).standard_normal((2, 5, 3))
>>> features = np.random.default_rng(2).standard_normal((2, 5, 4, 2))       # (batch, points, (lmax+1)^2, c_in)
>>> model.apply(params, points, features).shape
(2, 5, 4, 3)
"""
from __future__ import annotations

import autograd.numpy as anp
import numpy as np

from algebra import position, tensor_product
from algebra.algebra import check_count
from algebra.so3 import clebsch_gordan, spherical_harmonics

from ..expression import Parameter, Signal
from ..structural import Flip, Reduce
from .model import Model


class TensorFieldNetwork(Model):
    """See the module docstring.  Parameters: ``W_radial`` (hidden, basis), ``b_radial`` (hidden,) and
    ``W_out`` ((lmax + 1) * c_out * c_in, hidden), the radial MLP."""

    def __init__(self, lmax, channels_in, channels_out, radius, basis, hidden, points):
        super().__init__()
        self.lmax = check_count(lmax, "lmax", minimum=0)
        self.channels_in, self.channels_out = check_count(channels_in, "channels_in"), check_count(
            channels_out, "channels_out")
        self.basis, self.hidden = check_count(basis, "basis"), check_count(hidden, "hidden")
        if not np.isscalar(radius) or not radius > 0:
            raise ValueError(f"radius: expected a positive number, got {radius!r}")
        self.radius, self.geometry = float(radius), (check_count(points, "points"),)
        self.features = clebsch_gordan(self.lmax)

    def build(self, geometry):
        (n,) = geometry
        algebra = tensor_product(position(n), position(n), self.features, position(self.channels_out),
                                 position(self.channels_in))
        S = Signal("s", algebra, units=[1, 3])
        K = Signal("k", algebra)
        return Reduce(Reduce(K * Flip(S), factor=4), factor=1), S

    @property
    def parameters(self) -> dict:
        paths = (self.lmax + 1) * self.channels_out * self.channels_in
        return {"W_radial": (self.hidden, self.basis), "b_radial": (self.hidden,), "W_out": (paths, self.hidden)}

    def filter(self, params, points):
        """K[b, a, c, (l, m), o, i] = R_{l,o,i}(|r_ac|) cutoff(|r_ac|) Y_lm(r_ac / |r_ac|)."""
        difference = points[..., :, None, :] - points[..., None, :, :]
        distance = np.sqrt(np.sum(difference ** 2, axis=-1))
        centres = np.linspace(0.0, self.radius, self.basis)
        width = self.radius / self.basis
        gaussians = np.exp(-((distance[..., None] - centres) / width) ** 2)
        cutoff = np.where(distance < self.radius, 0.5 * (np.cos(np.pi * distance / self.radius) + 1), 0.0)
        hidden = gaussians @ params["W_radial"].T + params["b_radial"]
        hidden = hidden / (1 + anp.exp(-hidden))                                     # silu
        radial = (hidden @ params["W_out"].T) * cutoff[..., None]
        radial = anp.reshape(radial, distance.shape + (self.lmax + 1, self.channels_out, self.channels_in))
        degrees = np.repeat(np.arange(self.lmax + 1), 2 * np.arange(self.lmax + 1) + 1)
        harmonics = spherical_harmonics(self.lmax, difference)                     # (..., n, n, F)
        return harmonics[..., :, None, None] * radial[..., degrees, :, :]

    def apply(self, params, points, features):
        """Features (batch, n, (lmax+1)^2, c_in) at points (batch, n, 3) -> (batch, n, (lmax+1)^2, c_out)."""
        points = np.asarray(points, dtype=float)
        if points.ndim < 2 or points.shape[-1] != 3:
            raise ValueError(f"points: expected shape (batch, n, 3), got {points.shape}")
        n = points.shape[-2]
        expected = (n, (self.lmax + 1) ** 2, self.channels_in)
        if tuple(np.shape(features)[-3:]) != expected:
            raise ValueError(f"features: expected shape (batch, {', '.join(map(str, expected))}), got "
                             f"{np.shape(features)}")
        _, _, compiled = self._get((n,))
        return compiled({"s": features, "k": self.filter(params, points)}, {})


def tfn(lmax: int = 2, channels_in: int = 4, channels_out: int = 4, radius: float = 2.0, basis: int = 8,
        hidden: int = 16, points: int = 4) -> TensorFieldNetwork:
    """A TFN layer; `points` only sets the inspected expression."""
    return TensorFieldNetwork(lmax, channels_in, channels_out, radius, basis, hidden, points)
