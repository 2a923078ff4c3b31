"""Choosing strategies: `choose` is ``strategy="auto"`` for one factor, `resolve` checks what was asked for.

auto reads the structure constants: diagonal -> identify; a cyclic group of dimension >= 64 -> gather (FFT);
one nonzero per (i, j) -> codegen while small, gather beyond; other sparse factors -> codegen while small and
sparse; the rest -> dense.

>>> from product_interactions.algebra import clifford, diagonal, matrix_algebra, translation
>>> from product_interactions.kernels.factor import Factor
>>> [choose(Factor.from_algebra(A)) for A in (diagonal(4), clifford(3, 0, 1), translation(256), matrix_algebra(2))]
['identify', 'codegen', 'gather', 'codegen']
>>> resolve("identify", [Factor.from_algebra(clifford(1))])  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: strategy: 'identify' cannot represent factor 0: lam[0, 1, 1] = 1 in clifford(1, 0, 0); identify needs ...
"""
from __future__ import annotations

from .strategies import STRATEGIES, codegen, dense, gather, identify

#: auto uses codegen up to this many nonzeros (one expression term each); beyond, gather or dense.
CODEGEN_MAX_TERMS = 2048

#: auto uses codegen for a factor with several nonzeros per (i, j) only up to this fraction of nonzeros.
CODEGEN_MAX_DENSITY = 0.25


def choose(factor) -> str:
    """The strategy auto picks for `factor`."""
    if identify.unsupported(factor) is None:
        return identify.NAME
    if gather.uses_fourier(factor):
        return gather.NAME
    small = factor.nnz <= CODEGEN_MAX_TERMS
    if factor.one_per_pair():
        return codegen.NAME if small else gather.NAME
    return codegen.NAME if small and factor.density <= CODEGEN_MAX_DENSITY else dense.NAME


def resolve(strategy, factors) -> tuple:
    """One checked strategy name per factor from ``"auto"``, a name, or a tuple with one entry per factor."""
    names = list(strategy) if isinstance(strategy, (tuple, list)) else [strategy] * len(factors)
    if len(names) != len(factors):
        raise ValueError(f"strategy: expected one entry per factor ({len(factors)}), got {len(names)}: {strategy!r}")
    resolved = []
    for position, (name, factor) in enumerate(zip(names, factors)):
        if name == "auto":
            resolved.append(choose(factor))
            continue
        if not isinstance(name, str) or name not in STRATEGIES:
            raise ValueError(f"strategy: expected 'auto' or one of {', '.join(map(repr, STRATEGIES))} (or a tuple "
                             f"with one per factor), got {name!r}")
        reason = STRATEGIES[name].unsupported(factor)
        if reason is not None:
            raise ValueError(f"strategy: {name!r} cannot represent factor {position}: {reason}")
        resolved.append(name)
    return tuple(resolved)


def fallback(name: str, factor) -> str:
    """`name` when it can represent `factor`, else auto's choice (used for the transposed kernels of VJPs)."""
    return name if STRATEGIES[name].unsupported(factor) is None else choose(factor)
