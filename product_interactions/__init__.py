"""Product Interactions: algebra-first deep-learning architectures.

Three subpackages, one direction of dependency: `interactions` (expressions, formulas, orders, architectures,
experiments, the command line) uses `kernels` (numeric lowering), which uses `algebra` (exact algebras).  Each is
an attribute of the package, imported on first use (`product_interactions.lazy`).

>>> import product_interactions as pi
>>> pi.algebra.quaternions().dim
4
"""
from .lazy import attach

__version__ = "0.1.0"

__all__ = ["algebra", "interactions", "kernels"]
attach(__name__)
