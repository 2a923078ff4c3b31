"""`Action`: a group acting on a space of one or more tensor factors, given by exact generators.

Each generator has a kind and one exact matrix per factor:

- ``"discrete"``: a group element T acting as T_1 (x) T_2 (x) ... .  An operator O is equivariant when
  T O = O T for every generator; products of generators, hence the whole (finite or discrete) group, follow.
  Truncated translations are the one partial case: their shift is not invertible (see `translations`).
- ``"lie"``: a Lie-algebra element J acting as J_1 (x) 1 (x) ... + 1 (x) J_2 (x) ... + ... .  Equivariance under
  the connected group exp(t J) is the infinitesimal constraint: J O = O J for a linear O, and the derivation
  rule J B(x, y) = B(J x, y) + B(x, J y) for a bilinear B.

An action may be bound to an algebra per factor (`Action.on`); targets in another algebra are then refused.

>>> from product_interactions.algebra.symmetry import translations
>>> T = translations(3)
>>> T.kind, T.shape, T.matrices()[0]
('discrete', (3,), array([[0., 0., 1.],
       [1., 0., 0.],
       [0., 1., 0.]]))
>>> T.trivial_on(2).matrices()[0]
array([[1., 0.],
       [0., 1.]])
"""
from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import DTypeLike

from .space import Space, SpaceLike, as_space
from .sparse import Sparse

if TYPE_CHECKING:
    from ..algebra import Algebra

DISCRETE, LIE = "discrete", "lie"


def trivial_matrix(kind: str, n: int) -> Sparse:
    """How a generator of `kind` acts on a factor it leaves alone: the identity, or 0 for a Lie generator."""
    return Sparse.identity(n) if kind == DISCRETE else Sparse.zeros(n)


def same_group(actions: Sequence[Action], names: Sequence[str]) -> None:
    """Raise unless `actions` (described by `names`) are Actions listing generators of the same kinds."""
    for name, action in zip(names, actions):
        if not isinstance(action, Action):
            raise TypeError(f"{name}: expected an Action, got {type(action).__name__}")
        if action.kinds != actions[0].kinds:
            raise ValueError(f"{name}: expected generators of kinds {actions[0].kinds} like {names[0]} (one "
                             f"group acting on every space), got {action.kinds}")


class Action:
    """A group action by generators (see the module docstring); build one with `translations`, `permutations`,
    `rotations_so3`, `finite_group`, `product_action` or `diagonal_action`.  Instances are immutable.

    `generators` is a tuple of ``(kind, matrices)`` with one exact `Sparse` matrix per factor.
    """

    def __init__(self, generators: Iterable[tuple[str, Iterable[Sparse]]], name: str,
                 algebras: Iterable[Algebra | None] | None = None) -> None:
        self.generators = tuple((kind, tuple(matrices)) for kind, matrices in generators)
        self.name = name
        #: The space acted on: one dimension per factor, and the algebra each factor is bound to (or None).
        self.space = Space([m.shape[0] for m in self.generators[0][1]], algebras)

    @property
    def shape(self) -> tuple[int, ...]:
        """The dimension of each factor acted on."""
        return self.space.shape

    @property
    def dim(self) -> int:
        """The dimension of the whole space (the product of `shape`)."""
        return self.space.dim

    @property
    def algebras(self) -> tuple[Algebra | None, ...]:
        """Per factor, the algebra the action is bound to, or None."""
        return self.space.algebras

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kind of each generator, ``"discrete"`` or ``"lie"``."""
        return tuple(kind for kind, _ in self.generators)

    @property
    def kind(self) -> str:
        """``"discrete"``, ``"lie"``, or ``"mixed"`` for a product of both."""
        kinds = set(self.kinds)
        return kinds.pop() if len(kinds) == 1 else "mixed"

    def __len__(self) -> int:
        return len(self.generators)

    # ------------------------------------------------------------------ matrices
    def sparse(self, index: int) -> Sparse:
        """The exact matrix of generator `index` on the whole space (Kronecker product over the factors)."""
        return self._full[index]

    @functools.cached_property
    def _full(self) -> tuple[Sparse, ...]:
        full: list[Sparse] = []
        for kind, matrices in self.generators:
            if kind == DISCRETE:
                full.append(functools.reduce(Sparse.kron, matrices))
                continue
            lifts = [functools.reduce(Sparse.kron, [m if g == f else Sparse.identity(m.shape[0])
                                                    for g, m in enumerate(matrices)])
                     for f, matrix in enumerate(matrices) if matrix.entries]
            full.append(functools.reduce(Sparse.__add__, lifts, Sparse.zeros(self.dim)))
        return tuple(full)

    def matrices(self, dtype: DTypeLike = float) -> list[np.ndarray]:
        """The generators as dense (dim, dim) numpy arrays (``dtype=object`` keeps them exact)."""
        return [self.sparse(index).to_dense(dtype) for index in range(len(self))]

    # ------------------------------------------------------------------ derived actions
    def on(self, algebra: Algebra) -> Action:
        """The same action bound to `algebra` (its factors must have this action's dimensions)."""
        space = as_space(algebra, "algebra")
        self.check_fits(space, "the algebra", "algebra", "algebra")
        return Action(self.generators, self.name, space.algebras)

    def trivial_on(self, space: SpaceLike) -> Action:
        """The same group acting trivially on `space` (an int, a shape or an algebra).

        Use it for a slot a group leaves alone, such as the filter of a convolution.
        """
        acted_on = as_space(space, "space")
        return Action([(kind, [trivial_matrix(kind, n) for n in acted_on.shape]) for kind in self.kinds],
                      f"trivial({acted_on.name})", acted_on.algebras)

    # ------------------------------------------------------------------ checks
    def check_fits(self, space: Space, where: str, action_argument: str, space_argument: str) -> None:
        """Raise ValueError unless this action can act on `space` (described as `where`): a wrong dimension
        names `action_argument`, a factor in another algebra than the action's names `space_argument`."""
        mine = self.space
        if len(space.shape) != len(mine.shape):
            raise ValueError(f"{action_argument}: the action {self.name} acts on {len(mine.shape)} tensor "
                             f"factor(s) of shape {mine.shape}, but {where} ({space.name}) has shape {space.shape}")
        for f, (n, m, theirs, bound) in enumerate(zip(space.shape, mine.shape, space.algebras, mine.algebras)):
            if n != m:
                raise ValueError(f"{action_argument}: the action {self.name} has {m} x {m} matrices on factor {f}, "
                                 f"but {where} ({space.name}) has dimension {n} there")
            if bound is not None and theirs is not None and not _same_space(bound, theirs):
                raise ValueError(f"{space_argument}: {where} is {theirs.name} at factor {f}, but the action "
                                 f"{self.name} acts on {bound.name} there")

    def __repr__(self) -> str:
        return f"<Action {self.name}: {len(self)} {self.kind} generator(s) on {self.space.name}>"


def _same_space(bound: Algebra, theirs: Algebra) -> bool:
    """The action's algebra, or a numeric algebra on its basis labels: a learned product on the same space, whose
    symmetries are what a numeric check asks about."""
    return bound == theirs or theirs.tol is not None and theirs.basis == bound.basis
