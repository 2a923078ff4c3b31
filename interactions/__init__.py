"""Product interactions: the expression language, formulas, orders, architectures and experiments.

>>> from product_interactions.algebra import position, diagonal, tensor_product
>>> A = tensor_product(position(3), position(3), diagonal(2))
>>> X = Signal("x", A, units=[1])
>>> quadratic = X * Flip(X)                      # X T(X): every (query k, key l) pair
>>> order(Reduce(quadratic * Flip(X)), X)
3
"""
from ..kernels import Mask
from .compiler import compile
from .expression import Add, Expr, Linear, Mul, Parameter, Scale, Signal, multiplication_operator
from .formulas import formula
from .orders import order
from .pointwise import Pointwise
from .scan import Placeholder, Scan
from .feature_map import flatten, seq2tens, seq2tens_expression, signature
from .structural import (CausalReduce, Flip, Lag, NeighbourhoodReduce, RankProjection, Reduce, ScalarProjection)

__all__ = [
    "Expr", "Signal", "Parameter", "Placeholder", "Mul", "Add", "Scan", "Linear", "Scale", "Pointwise", "Flip",
    "Reduce", "CausalReduce", "NeighbourhoodReduce", "ScalarProjection", "RankProjection", "Lag", "Mask",
    "multiplication_operator", "compile", "formula", "order", "seq2tens", "seq2tens_expression", "signature",
    "flatten",
]
