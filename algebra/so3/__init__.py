"""SO(3) and O(3): real spherical harmonics, Wigner-D matrices, real Clebsch-Gordan and Gaunt coefficients.

Conventions, pinned in the modules and the tests (tests/so3):

- axes (x, y, z), z polar; rotations act as x -> R x; Euler angles z-y-z, R = Rz(alpha) Ry(beta) Rz(gamma);
- basis: degree l ascending, m = -l..l inside (``basis_labels``: e^l_m; with parity e^le_m, e^lo_m);
- real spherical harmonics without Condon-Shortley phase, orthonormal on the sphere, Y_1 = sqrt(3/4pi) (y, z, x);
- D(R) with Y(R x) = D(R) Y(x); features f rotate as f -> D(R) f;
- real Clebsch-Gordan coefficients with the per-path phase (-i)^(l1+l2-l), so e^0_0 is the unit and
  1 x 1 -> 0, 1 x 1 -> 1 are x . y / sqrt(3) and x cross y / sqrt(2);
- `to_e3nn` / `from_e3nn` convert feature arrays to and from e3nn's basis (y polar).

>>> import numpy as np
>>> from product_interactions.algebra.so3 import clebsch_gordan_tensor, random_rotation, representation
>>> lam = clebsch_gordan_tensor(2)                 # the structure constants of clebsch_gordan(2), as floats
>>> rng = np.random.default_rng(0)
>>> x, y, D = rng.normal(size=9), rng.normal(size=9), representation(2, random_rotation(seed=1))
>>> product = lambda a, b: np.einsum("i,j,ijk->k", a, b, lam)
>>> bool(np.allclose(product(D @ x, D @ y), D @ product(x, y)))
True
"""
from typing import TYPE_CHECKING

from ...lazy import attach

if TYPE_CHECKING:   # the exports; each submodule is imported on first use of its names (product_interactions.lazy)
    from .basis import basis_index, basis_labels, feature_dim, irreps
    from ._clebsch_gordan import (clebsch_gordan, clebsch_gordan_coefficients, clebsch_gordan_path,
                                 clebsch_gordan_tensor)
    from .e3nn import from_e3nn, to_e3nn
    from ._gaunt import gaunt, gaunt_tensor
    from .path_algebra import Block, PathAlgebra
    from .quadrature import sphere_quadrature
    from .rotations import ROTATION_ATOL, check_rotation, random_rotation, rotation_from_euler
    from ._spherical_harmonics import solid_harmonics, spherical_harmonic_formula, spherical_harmonics
    from .wigner import representation, wigner_D, wigner_D_exact, wigner_D_from_euler

__all__ = attach(__name__)
