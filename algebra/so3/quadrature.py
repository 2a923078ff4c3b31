"""A product quadrature on the unit sphere, exact for polynomials up to a given degree.

Gauss-Legendre nodes in cos(theta) (degree // 2 + 1 of them) times degree + 1 equally spaced azimuths: exact for
every polynomial in (x, y, z) of degree <= `degree` restricted to the sphere, so for products Y_l Y_l' with
l + l' <= degree.

>>> import numpy as np
>>> points, weights = sphere_quadrature(4)
>>> points.shape, round(float(weights.sum() / (4 * np.pi)), 12)
((15, 3), 1.0)
>>> round(float(weights @ points[:, 2] ** 4 / (4 * np.pi)), 12)       # the mean of z^4 on the sphere is 1/5
0.2
"""
from __future__ import annotations

import numpy as np

from ..limits import check_size
from .basis import check_lmax


def sphere_quadrature(degree: int) -> tuple[np.ndarray, np.ndarray]:
    """``(points, weights)``: points of shape (n, 3) on the unit sphere and weights summing to 4 pi."""
    degree = check_lmax(degree, "degree")
    check_size((degree // 2 + 1) * max(degree + 1, degree // 2 + 1), "degree",
               f"quadrature points (and Gauss-Legendre matrix entries) for degree {degree}", "use a smaller degree")
    cos_theta, weights = np.polynomial.legendre.leggauss(degree // 2 + 1)
    phi = 2 * np.pi * np.arange(degree + 1) / (degree + 1)
    sin_theta = np.sqrt(1 - cos_theta**2)[:, None]
    points = np.stack(np.broadcast_arrays(sin_theta * np.cos(phi), sin_theta * np.sin(phi), cos_theta[:, None]),
                      axis=-1)
    return points.reshape(-1, 3), np.repeat(weights, len(phi)) * (2 * np.pi / len(phi))
