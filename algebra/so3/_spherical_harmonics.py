"""Real spherical harmonics Y_l^m: numeric and batched for any lmax, exact sympy formulas for small l.

Conventions (pinned by the tests):

- **axes**: points are (x, y, z) with **z the polar axis**: theta is the angle from +z, phi the azimuth from +x
  towards +y.
- **order**: degree l ascending, then m = -l, ..., l (component ``l*l + l + m``; see `basis`).
- **real basis, no Condon-Shortley phase**: with P_l^m the associated Legendre function *without* the
  (-1)^m factor, N_l^m = sqrt((2l + 1) / (4 pi) * (l - m)! / (l + m)!) and m > 0,

      Y_l^m  = sqrt(2) N_l^m P_l^m(cos theta) cos(m phi),
      Y_l^0  = N_l^0 P_l(cos theta),
      Y_l^-m = sqrt(2) N_l^m P_l^m(cos theta) sin(m phi),

  so Y_1 = sqrt(3 / (4 pi)) (y, z, x) on the unit sphere: the table of real spherical harmonics on Wikipedia.
- **normalisation**: orthonormal on the sphere, integral of Y_l^m Y_l'^m' dOmega = delta_ll' delta_mm'.

``spherical_harmonics(lmax, points, normalize=False)`` gives the *solid* harmonics r^l Y_l^m(x / r), homogeneous
polynomials of degree l in (x, y, z), which is what `spherical_harmonic_formula` writes out.

>>> import numpy as np
>>> Y = spherical_harmonics(1, [0.0, 0.0, 2.0])
>>> np.round(Y * np.sqrt(4 * np.pi), 12) + 0.0
array([1.        , 0.        , 1.73205081, 0.        ])
>>> spherical_harmonic_formula(1, -1)
sqrt(3)*y/(2*sqrt(pi))
>>> spherical_harmonic_formula(2, 2)
sqrt(15)*(x**2 - y**2)/(4*sqrt(pi))
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import sympy
from numpy.typing import ArrayLike

from ..algebra import check_flag
from ..limits import check_size
from .basis import check_lmax, check_order, feature_dim

#: The largest degree `spherical_harmonic_formula` builds (l = 64 takes seconds).
MAX_FORMULA_DEGREE = 64


def check_points(points: ArrayLike, argument: str = "points") -> np.ndarray:
    """`points` as a floating array of shape ``(..., 3)`` (float32 and float64 kept, integers to float64)."""
    try:
        array = np.asarray(points)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{argument}: expected a real array of shape (..., 3), got {type(points).__name__} "
                        f"({error})") from None
    if array.dtype.kind not in "fiub":
        raise TypeError(f"{argument}: expected a real array of shape (..., 3), got dtype {array.dtype}")
    if array.ndim == 0 or array.shape[-1] != 3:
        raise ValueError(f"{argument}: expected an array of shape (..., 3) (x, y, z last), got shape {array.shape}")
    return array if array.dtype.kind == "f" else array.astype(np.float64)


def _recurrence_constants(lmax: int) -> tuple[list[float], dict[tuple[int, int], float], dict[tuple[int, int], float]]:
    """Start values sqrt(2) N_m^m P_m^m (N_0^0 for m = 0) and the coefficients (a, b) of the l-recurrence.

    With Q_l^m the normalised solid Legendre parts, Q_l^m = a z Q_{l-1}^m - b r^2 Q_{l-2}^m.
    """
    start = [1 / math.sqrt(4 * math.pi)]
    for m in range(1, lmax + 1):
        start.append(start[-1] * math.sqrt((2 * m + 1) / (2 * m)) * (math.sqrt(2) if m == 1 else 1.0))
    a = {(l, m): math.sqrt((4 * l * l - 1) / (l * l - m * m)) for m in range(lmax + 1) for l in range(m + 1, lmax + 1)}
    b = {(l, m): math.sqrt((2 * l + 1) * ((l - 1) ** 2 - m * m) / ((2 * l - 3) * (l * l - m * m)))
         for m in range(lmax + 1) for l in range(m + 2, lmax + 1)}
    return start, a, b


def spherical_harmonics(lmax: int, points: ArrayLike, normalize: bool = True) -> np.ndarray:
    """All real spherical harmonics up to degree `lmax` at `points`, shape ``(..., (lmax + 1)**2)``.

    `points` has shape ``(..., 3)``.  With ``normalize=True`` (default) they are first scaled to unit length
    (a zero vector stays zero, so it gets Y_0^0 = 1 / sqrt(4 pi) and 0 for l > 0); with ``normalize=False`` the
    result is the solid harmonic r^l Y_l^m.  Computed by the three-term recurrence in l of the normalised
    associated Legendre functions and the recurrence of (x + i y)^m; float32 input stays float32.
    """
    lmax = check_lmax(lmax)
    check_size((lmax + 1) ** 2, "lmax", f"harmonics per point up to lmax = {lmax}", "use a smaller lmax")
    array = check_points(points)
    normalize = check_flag(normalize, "normalize")
    batch = array.shape[:-1]
    flat = array.reshape(-1, 3)
    if normalize:
        radius = np.linalg.norm(flat, axis=-1, keepdims=True)
        flat = flat / np.where(radius > 0, radius, 1).astype(flat.dtype)
    x, y, z = np.ascontiguousarray(flat.T)
    r2 = x * x + y * y + z * z
    start, a, b = _recurrence_constants(lmax)
    out = np.empty((feature_dim(lmax), len(flat)), dtype=flat.dtype)
    cos_m, sin_m = np.ones_like(x), np.zeros_like(x)          # Re and Im of (x + i y)^m
    previous: Any                                              # None until two degrees are known
    for m in range(lmax + 1):
        if m:
            cos_m, sin_m = x * cos_m - y * sin_m, x * sin_m + y * cos_m
        previous, current = None, np.full_like(x, start[m])
        for l in range(m, lmax + 1):
            if l > m:
                following = z * current
                following *= a[l, m]
                if l > m + 1:                                  # previous is no longer needed: reuse it
                    np.multiply(r2, previous, out=previous)
                    previous *= b[l, m]
                    following -= previous
                previous, current = current, following
            centre = l * l + l
            if m == 0:
                out[centre] = current
            else:
                np.multiply(current, cos_m, out=out[centre + m])
                np.multiply(current, sin_m, out=out[centre - m])
    return out.T.reshape(batch + (out.shape[0],))


def solid_harmonics(lmax: int, x: Any, y: Any, z: Any, stack: Callable[..., Any]) -> Any:
    """The solid harmonics r^l Y_l^m at coordinates x, y, z of any array library: the recurrence of
    `spherical_harmonics` written with arithmetic operators only, the (lmax + 1)**2 components joined by
    ``stack(list, axis=-1)`` (the library's stack).  Divide the coordinates by r first for Y_l^m on the sphere.

    >>> import numpy as np
    >>> x, y, z = np.array([0.3]), np.array([-1.2]), np.array([0.5])
    >>> bool(np.allclose(solid_harmonics(3, x, y, z, np.stack),
    ...                  spherical_harmonics(3, np.stack([x, y, z], -1), normalize=False)))
    True
    """
    lmax = check_lmax(lmax)
    check_size((lmax + 1) ** 2, "lmax", f"harmonics per point up to lmax = {lmax}", "use a smaller lmax")
    for argument, value in (("x", x), ("y", y), ("z", z)):
        dtype = str(getattr(value, "dtype", "none")).split(".")[-1]      # numpy, autograd, torch or JAX
        if not hasattr(value, "shape") or not re.fullmatch(r"b?float(16|32|64|128)|u?int(8|16|32|64)", dtype):
            raise TypeError(f"{argument}: expected an array of real numbers, got {type(value).__name__} of dtype "
                            f"{dtype}")
        if type(value).__module__.startswith("torch") and re.fullmatch(r"uint(16|32|64)", dtype):
            raise TypeError(f"{argument}: expected a tensor of a dtype torch computes with, got {dtype} (torch "
                            f"has no arithmetic for it; convert to a floating dtype)")
    if not tuple(x.shape) == tuple(y.shape) == tuple(z.shape):
        raise ValueError(f"x, y, z: expected arrays of one shape, got {tuple(x.shape)}, {tuple(y.shape)} and "
                         f"{tuple(z.shape)}")
    if not callable(stack):
        raise TypeError(f"stack: expected a callable stack(list, axis=-1), got {type(stack).__name__}")
    r2 = x * x + y * y + z * z
    start, a, b = _recurrence_constants(lmax)
    out: list[Any] = [None] * feature_dim(lmax)
    cos_m, sin_m = x * 0 + 1, x * 0                            # Re and Im of (x + i y)^m
    for m in range(lmax + 1):
        if m:
            cos_m, sin_m = x * cos_m - y * sin_m, x * sin_m + y * cos_m
        previous, current = None, x * 0 + start[m]
        for l in range(m, lmax + 1):
            if l > m:
                following = a[l, m] * z * current
                if l > m + 1:
                    following = following - b[l, m] * r2 * previous
                previous, current = current, following
            centre = l * l + l
            if m == 0:
                out[centre] = current
            else:
                out[centre + m], out[centre - m] = current * cos_m, current * sin_m
    return stack(out, axis=-1)


def spherical_harmonic_formula(l: int, m: int, x: sympy.Expr | None = None, y: sympy.Expr | None = None,
                               z: sympy.Expr | None = None) -> sympy.Expr:
    """The exact Y_l^m as a homogeneous polynomial of degree l in x, y, z (real sympy symbols by default).

    On the unit sphere it is Y_l^m; elsewhere r^l Y_l^m(x / r).  Built independently of the numeric
    recurrence, from the m-th derivative of the Legendre polynomial P_l and Re / Im of (x + i y)^|m|.
    Meant for small l: the cost grows quickly with l, so l > `MAX_FORMULA_DEGREE` is refused.
    """
    l = check_lmax(l, "l")
    if l > MAX_FORMULA_DEGREE:
        raise ValueError(f"l: the exact formula is built for l <= MAX_FORMULA_DEGREE = {MAX_FORMULA_DEGREE} (its "
                         f"cost grows quickly with l), got {l}; use spherical_harmonics for numeric values")
    m = check_order(l, m)
    for argument, value in (("x", x), ("y", y), ("z", z)):
        if value is not None and not isinstance(value, sympy.Expr):
            raise TypeError(f"{argument}: expected a sympy expression or None (a real symbol), got "
                            f"{type(value).__name__} {value!r:.60}")
    x, y, z = (sympy.Symbol(name, real=True) if s is None else s for name, s in zip("xyz", (x, y, z)))
    k = abs(m)
    t = sympy.Symbol("t")
    derivative = sympy.Poly(sympy.diff(sympy.legendre(l, t), t, k), t)
    r2 = x**2 + y**2 + z**2
    # r^(l-k) P_l^(k)(z / r): only powers t^j with l - k - j even occur, so r^(l-k-j) is a power of r^2
    legendre_part = sum(c * z**j * r2 ** ((l - k - j) // 2) for (j,), c in derivative.terms())
    azimuthal = sympy.expand((x + sympy.I * y) ** k)
    azimuthal = sympy.im(azimuthal) if m < 0 else sympy.re(azimuthal)
    norm = sympy.sqrt(sympy.Rational((2 * l + 1) * sympy.factorial(l - k), sympy.factorial(l + k)) / (4 * sympy.pi))
    return sympy.factor_terms(norm * (sympy.sqrt(2) if m else 1) * sympy.expand(legendre_part * azimuthal))
