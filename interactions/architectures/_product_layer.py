"""`product_layer`: multiplication by a learned element of any algebra, O_K(x) = L1(K L2(x)), as a model.

x has batch axes, then `d_in` features; the matrix ``L2`` (d, d_in) maps them into the algebra A (dimension d),
the learned element ``K`` of A multiplies them on the left in A's product, and ``L1`` (d_out, d) maps the result
out.  Without `d_in` (`d_out`) there is no L2 (L1): the input (the output) is an element of A.

A `symmetry` (an `algebra.symmetry.Action` on A) asks O_K to commute with it, g(K x) = K g(x):

* ``enforce="exact"``: K stays in the solution space of that constraint,
  ``solve(equivariant_constraints(symmetry, filter_of(A)))``: the model learns ``theta``, one number per basis
  vector, and K = sum_b theta_b basis_b (`element`);
* ``enforce="penalty"``: K is free and ``penalty(params)``, sum_g ||T_g L(K) - L(K) T_g||^2 with L(K) the matrix of
  x -> K x (the `algebra.symmetry.regulariser` of the same constraint), runs on any engine: add it to the loss.

>>> import numpy as np
>>> from product_interactions.algebra import quaternions
>>> from product_interactions.algebra.symmetry import finite_group
>>> H = quaternions()
>>> layer = product_layer(H)                           # z = K x in the quaternions
>>> layer.apply({"K": np.array([0., 1., 0., 0.])}, np.array([[0., 0., 1., 0.]]))      # i j = k
array([[0., 0., 0., 1.]])
>>> swap = finite_group([[[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, -1], [0, 0, 1, 0]]])  # j -> k -> -j
>>> exact = product_layer(H, symmetry=swap)            # K commutes with it: K in span(1, i)
>>> exact.parameters, exact.element({"theta": np.array([2., 3.])})
({'theta': (2,)}, array([2., 3., 0., 0.]))
>>> free = product_layer(H, symmetry=swap, enforce="penalty")
>>> float(free.penalty({"K": np.array([2., 3., 0., 0.])})), bool(free.penalty({"K": np.ones(4)}) > 0)
(0.0, True)
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...algebra import Algebra, diagonal
from ...algebra import limits
from ...algebra.algebra import check_choice
from ...algebra.symmetry import Action, equivariant_constraints, filter_of, regulariser, solve
from ...kernels.arrays import owner, with_jax_defaults
from ..expression import Expr, Linear, Parameter, Signal
from ._expression_model import ExpressionModel
from .model import check_params, check_signal, check_width

ENFORCE = ("exact", "penalty")


class ProductLayer(ExpressionModel):
    """See the module docstring.  Parameters: ``K`` (d,) or ``theta`` (solution dimension,), and ``L2``
    (d, d_in), ``L1`` (d_out, d) when asked for."""

    def __init__(self, algebra: Algebra, d_in: int | None, d_out: int | None, symmetry: Action | None,
                 enforce: str, scales: Mapping[str, float] | None) -> None:
        if not isinstance(algebra, Algebra):
            raise TypeError(f"algebra: expected an Algebra, got {type(algebra).__name__}")
        if len(algebra.factors) != 1:
            raise ValueError(f"algebra: expected one algebra (the product layer multiplies in it), got the tensor "
                             f"product {algebra.name}; build your expression and use expression_model")
        self.algebra, self.enforce = algebra, check_choice(enforce, ENFORCE, "enforce")
        self.d_in, self.d_out = (None if d is None else check_width(d, name) for d, name in
                                 ((d_in, "d_in"), (d_out, "d_out")))
        if symmetry is not None and not isinstance(symmetry, Action):
            raise TypeError(f"symmetry: expected an algebra.symmetry.Action on {algebra.name}, got "
                            f"{type(symmetry).__name__}")
        if symmetry is not None and (symmetry.shape != (algebra.dim,) or symmetry.algebras[0] not in (None, algebra)):
            on = symmetry.algebras[0].name if symmetry.algebras[0] is not None else f"shape {symmetry.shape}"
            raise ValueError(f"symmetry: expected an action on the {algebra.dim} components of {algebra.name}, got "
                             f"{symmetry.name} on {on}")
        self.symmetry, self.solution, self.residuals = symmetry, None, None
        if symmetry is not None:
            self.residuals = self._residuals(regulariser(symmetry, filter_of(algebra)).matrix)
        if symmetry is not None and self.enforce == "exact":
            self.solution = solve(equivariant_constraints(symmetry, filter_of(algebra)), progress=False)
            if self.solution.dim == 0:
                raise ValueError(f"symmetry: only K = 0 commutes with {symmetry.name} on {algebra.name}; use "
                                 f"enforce='penalty' or a smaller group")
        super().__init__(self._expression, (), "ProductLayer", None, None, fixed=True)
        self.scales = self._check_scales(scales)

    def _expression(self) -> tuple[Expr, Signal]:
        A = self.algebra
        X = Signal("x", A if self.d_in is None else diagonal(self.d_in))
        inner = X if self.d_in is None else Linear(Parameter("L2", (A.dim, self.d_in)), X, into=A)
        product = Parameter("K", A) * inner
        if self.d_out is None:
            return product, X
        return Linear(Parameter("L1", (self.d_out, A.dim)), product, into=diagonal(self.d_out)), X

    def _residuals(self, matrix: Any) -> np.ndarray:
        """The nonzero rows of the penalty's residual matrix, dense (within `algebra.limits.MAX_DENSE_BYTES`)."""
        matrix = matrix.tocsr()
        rows = np.flatnonzero(np.diff(matrix.indptr))
        if 8 * len(rows) * matrix.shape[1] > limits.MAX_DENSE_BYTES:
            raise ValueError(f"symmetry: the penalty's {len(rows):,} x {matrix.shape[1]:,} residuals pass "
                             f"algebra.limits.MAX_DENSE_BYTES = {limits.MAX_DENSE_BYTES:,}; use enforce='exact'")
        return matrix[rows].toarray()

    @property
    def parameters(self) -> dict[str, tuple[int, ...]]:
        shapes = super().parameters
        if self.solution is None:
            return shapes
        return {("theta" if name == "K" else name): ((self.solution.dim,) if name == "K" else shape)
                for name, shape in shapes.items()}

    def element(self, params: Mapping[str, Any]) -> Any:
        """K, the learned element's coefficients, in the parameters' library: ``params["K"]``, or ``theta @ basis``
        for an exact symmetry."""
        if self.solution is None:
            return params["K"]
        theta = params["theta"]
        return theta @ owner(theta).constant(self.solution.basis, theta)

    def penalty(self, params: Mapping[str, Any]) -> Any:
        """sum_g ||T_g L(K) - L(K) T_g||^2 over the symmetry's generators (to rounding 0 for an exact one), in the
        parameters' library."""
        if self.symmetry is None:
            raise ValueError("penalty: this layer has no symmetry; give product_layer(..., symmetry=action)")
        check_params(params, self.parameters)
        K = self.element(params)
        residual = owner(K).constant(self.residuals, K) @ K
        return (residual * residual).sum()

    def geometry_of(self, x: Any) -> tuple[int, ...]:
        d, what = (self.algebra.dim, f"the components of {self.algebra.name}") if self.d_in is None else (
            self.d_in, "d_in features")
        if np.ndim(x) < 1 or np.shape(x)[-1] != d:
            raise ValueError(f"x: expected shape (..., {d}) ({what}), got {np.shape(x)}")
        return ()

    @with_jax_defaults
    def apply(self, params: Mapping[str, Any], x: Any) -> Any:
        """The layer on a batch of inputs (batch axes, then d_in features or A's components)."""
        check_signal(x)
        check_params(params, self.parameters)
        inputs = {name: value for name, value in params.items() if name != "theta"}
        inputs["K"] = self.element(params)
        plan, call = self.checked(self.geometry_of(x), x, inputs)
        return plan.run(call)


def product_layer(algebra: Algebra, d_in: int | None = None, d_out: int | None = None,
                  symmetry: Action | None = None, enforce: str = "exact",
                  scales: Mapping[str, float] | None = None) -> ProductLayer:
    """O_K(x) = L1(K L2(x)) in `algebra`, free, or with a `symmetry` enforced ``"exact"`` or by ``"penalty"``; see
    the module docstring."""
    return ProductLayer(algebra, d_in, d_out, symmetry, enforce, scales)
