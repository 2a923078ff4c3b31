"""Finite-dimensional algebras given by structure constants: exact by default, numeric (float constants decided
within a tolerance, `algebra.scalars`) when asked for with ``exact=False`` or ``A.numeric()``.

>>> from product_interactions.algebra import clifford
>>> A = clifford(0, 1)
>>> z, w = A.symbols("z"), A.symbols("w")
>>> z * w
(w_0*z_0 - w_1*z_1)*1 + (w_0*z_1 + w_1*z_0)*e1
"""
from typing import TYPE_CHECKING

from ..lazy import attach

if TYPE_CHECKING:   # the exports; each submodule is imported on first use of its names (product_interactions.lazy)
    from .algebra import Algebra
    from ._cayley_dickson import cayley_dickson, octonions
    from ._clifford import Clifford, clifford, complex_numbers, dual_numbers, exterior_algebra, quaternions
    from ._diagonal import Diagonal, diagonal, position
    from ._direct_sum import DirectSum, direct_sum
    from .element import Element
    from ._group_algebra import cyclic_generators, dihedral_generators, group_algebra, symmetric_generators
    from ._jordan import jordan
    from ._lie_algebra import cross_product, lie_algebra
    from ._matrix_algebra import MatrixAlgebra, matrix_algebra
    from .structured import StructuredAlgebra
    from ._tensor_algebra import TensorAlgebra, tensor_algebra
    from ._tensor_product import TensorProduct, tensor_product
    from ._translation import Translation, translation
    from .so3 import PathAlgebra, clebsch_gordan, gaunt

__all__ = attach(__name__)
