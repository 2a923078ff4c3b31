"""Symmetry: the linear constraints O T_g = T_g O puts on structure constants and filters, solved exactly.

From how a group acts on each factor (an `Action`), derive the linear system on the unknowns of a target
(`equivariant_constraints`), solve it (`solve`: a basis and a parametrisation; `estimate`: its cost first), or keep it soft
(`regulariser`), and check any operator numerically (`is_equivariant`).

Translation equivariance of O_K(x) = K x for every filter K, with lam unknown, gives convolution:

>>> from product_interactions.algebra.symmetry import bilinear_map, equivariant_constraints, solve, translations
>>> T = translations(4)
>>> solution = solve(equivariant_constraints((T.trivial_on(4), T, T), bilinear_map(4)))
>>> solution.method, solution.dim          # one circulant 4 x 4 matrix per filter component
('exact', 16)
"""
from .action import Action
from .check import is_equivariant
from .constraints import Constraints, equivariant_constraints
from .finite import finite_group
from ._permutations import permutations
from .product import diagonal_action, product_action
from ._product_symmetries import ProductSymmetries, product_symmetries
from ._regulariser import regulariser
from .rotations import rotations_so3
from ._solve import Cost, Solution, estimate, solve
from .targets import bilinear_map, filter_of, linear_map
from ._translations import translations

__all__ = [
    "Action", "Constraints", "Cost", "ProductSymmetries", "Solution",
    "translations", "permutations", "rotations_so3", "finite_group", "product_action", "diagonal_action",
    "linear_map", "bilinear_map", "filter_of", "equivariant_constraints", "estimate", "solve", "regulariser", "is_equivariant",
    "product_symmetries",
]
