"""SO(3) and O(3): real spherical harmonics, Wigner-D matrices, real Clebsch-Gordan and Gaunt coefficients.

Conventions: axes (x, y, z), z polar; rotations act as x -> R x; Euler angles z-y-z, R = Rz(alpha) Ry(beta)
Rz(gamma); basis: degree l ascending, m = -l..l inside (``basis_labels``: e^l_m; with parity e^le_m, e^lo_m).
"""
from .basis import basis_index, basis_labels, feature_dim, irreps
from .clebsch_gordan import (clebsch_gordan, clebsch_gordan_coefficients, clebsch_gordan_path,
                             clebsch_gordan_tensor)
from .quadrature import sphere_quadrature
from .rotations import ROTATION_ATOL, check_rotation, random_rotation, rotation_from_euler
from .spherical_harmonics import spherical_harmonic_formula, spherical_harmonics
from .wigner import representation, wigner_D, wigner_D_exact, wigner_D_from_euler

__all__ = ["ROTATION_ATOL", "basis_index", "basis_labels", "check_rotation", "clebsch_gordan",
           "clebsch_gordan_coefficients", "clebsch_gordan_path", "clebsch_gordan_tensor", "feature_dim", "irreps",
           "random_rotation", "representation", "rotation_from_euler", "sphere_quadrature",
           "spherical_harmonic_formula", "spherical_harmonics", "wigner_D", "wigner_D_exact", "wigner_D_from_euler"]
