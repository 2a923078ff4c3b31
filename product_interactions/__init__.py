"""Product Interactions: algebra-first deep-learning architectures.

Three subpackages, one direction of dependency: `interactions` (expressions, formulas, orders, architectures,
experiments, the command line) uses `kernels` (numeric lowering), which uses `algebra` (exact algebras).

>>> from product_interactions import algebra, kernels, interactions
>>> algebra.quaternions().dim
4
"""
__version__ = "0.1.0"
