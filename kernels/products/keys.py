"""Kernels named by a key that is the same in every process, held weakly: how a traced program names a kernel (the
torch operator of `kernels.products.torch_operator`, whose compiled graphs torch keeps on disk, and the JAX
primitive of `kernels.products.jax_primitive`, by the kernel's `Recipe`) without keeping it alive.

>>> from product_interactions import kernels
>>> from product_interactions.algebra import quaternions
>>> K = kernels.product(quaternions())
>>> found = kernel_for(K.key)                   # K, or an equal kernel alive elsewhere: any of them serves
>>> found.key == K.key, kernel_for(K.key + "^T0") is found.transposed(0)
(True, True)
"""
from __future__ import annotations

import hashlib
import threading
import weakref
from dataclasses import dataclass
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .factor import Factor
    from .kernel import Kernel

#: key -> weak references to the live kernels of that key (equal kernels share a key; any of them serves).
_KERNELS: dict[str, list[weakref.ref[Kernel]]] = {}
#: Held while `_KERNELS` changes or is read (threads build kernels at once).
_REGISTRY = threading.RLock()
#: Rule-based factors are named by their rule, the others by a hash of their table.
RULES = ("diagonal", "cyclic", "truncated", "graded")


def identity(kernel: Kernel) -> str:
    """A name of `kernel` that is the same in every process for the same factors, strategies (as requested and as
    chosen), dtype and layout."""
    digest = hashlib.sha256(repr((kernel.requested, kernel.strategies, kernel.dtype.str, kernel.layout)).encode())
    for factor in kernel.factors:
        digest.update(repr((factor.shape, factor.sparsity if factor.sparsity and factor.sparsity[0] in RULES
                            else None)).encode())
        if not (factor.sparsity and factor.sparsity[0] in RULES):
            digest.update(np.ascontiguousarray(factor.indices).tobytes())
            digest.update(np.ascontiguousarray(factor.values).tobytes())
    return digest.hexdigest()[:32]


def register(kernel: Kernel) -> str:
    """`kernel`'s key (`identity`), the kernel held weakly under it."""
    key = identity(kernel)

    def forget(reference: weakref.ref[Kernel]) -> None:
        with _REGISTRY:
            kept = _KERNELS.get(key, [])
            if reference in kept:
                kept.remove(reference)
            if not kept:
                _KERNELS.pop(key, None)
    reference = weakref.ref(kernel, forget)         # made first: a collection it starts may run another's forget
    with _REGISTRY:
        kept = _KERNELS.get(key)
        if kept is None:
            _KERNELS[key] = [reference]
        else:
            kept.append(reference)
    return key


def kernel_for(key: str) -> Kernel:
    """The kernel of `key`: a registered one, or ``KEY^T0`` / ``KEY^T1``, the kernels of KEY's vector-Jacobian
    products (`Kernel.transposed`)."""
    with _REGISTRY:
        references = list(_KERNELS.get(key, ()))
    for reference in references:
        found = reference()
        if found is not None:
            return found
    parent, mark, argument = key.rpartition("^T")
    if mark and argument in ("0", "1"):
        return kernel_for(parent).transposed(int(argument))
    raise KeyError(f"key: no kernel {key!r} lives in this process (a compiled program outlived its kernel)")


@dataclass(frozen=True, eq=False)
class Recipe:
    """What builds a kernel of `key` again, equal and hashed by the key: a traced program's name for its kernel,
    which holds the factors but not the kernel (its generated programs), and finds the kernel wherever it still
    lives.  A program may outlive the kernel it was traced with (one made inside a differentiated function is
    dropped before the backward pass runs); it is then built again."""
    key: str
    factors: tuple[Factor, ...]
    layout: str
    build: Callable[[], Kernel]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Recipe) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def kernel(self) -> Kernel:
        """A live kernel of this key, or one built again."""
        try:
            return kernel_for(self.key)
        except KeyError:
            return self.build()
