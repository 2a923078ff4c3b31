"""Arrays of other libraries reach identify and dense kernels through opt_einsum's backend dispatch."""
import sys
import types

import numpy as np
import pytest
from kernel_cases import operands, reference, relative_error

from product_interactions import kernels
from product_interactions.algebra import clifford, position, quaternions, tensor_product


class Wrapped:
    """A stand-in for a torch or jax array: its own class and module, holding a numpy array."""

    def __init__(self, array):
        self.array = np.asarray(array)

    shape = property(lambda self: self.array.shape)
    dtype = property(lambda self: self.array.dtype)

    def __mul__(self, other):
        return Wrapped(self.array * other.array)


def _unwrap(a):
    return a.array if isinstance(a, Wrapped) else a


CALLS = []


def _function(name):
    def call(*args, **kwargs):
        CALLS.append(name)
        return Wrapped(getattr(np, name)(*(_unwrap(a) for a in args), **kwargs))
    return call


# One module for the whole file: opt_einsum caches the functions it imports from a backend.
LIBRARY = types.ModuleType("fakearrays")
for _name in ("einsum", "tensordot", "transpose"):
    setattr(LIBRARY, _name, _function(_name))


@pytest.fixture
def library(monkeypatch):
    """The module 'fakearrays' with the functions opt_einsum and the kernels call on its arrays."""
    CALLS.clear()
    monkeypatch.setitem(sys.modules, "fakearrays", LIBRARY)
    monkeypatch.setattr(Wrapped, "__module__", "fakearrays")
    return CALLS


@pytest.mark.parametrize("A, strategy, layout", [
    (quaternions(), "dense", "batch-first"), (tensor_product(position(3), clifford(1)), ("identify", "dense"),
                                              "component-major"),
    (tensor_product(position(3), position(2)), "auto", "batch-first")])
def test_other_libraries_run_identify_and_dense_kernels(library, A, strategy, layout):
    x, y = operands(A, batch=(5,))
    kernel = kernels.product(A, strategy=strategy, layout=layout)
    move = (lambda a: a) if layout == "batch-first" else (lambda a: np.moveaxis(a, 0, -1))
    z = kernel(Wrapped(move(x)), Wrapped(move(y)))
    assert isinstance(z, Wrapped)
    back = z.array if layout == "batch-first" else np.moveaxis(z.array, -1, 0)
    assert relative_error(back, reference(A, x, y)) <= 1e-12
    assert ("tensordot" in library or "einsum" in library) == ("dense" in kernel.strategies)


def test_other_libraries_are_refused_by_gather_and_codegen(library):
    with pytest.raises(TypeError, match="fakearrays arrays run through opt_einsum, for identify and dense factors only"):
        kernels.product(quaternions(), strategy="codegen")(Wrapped(np.ones(4)), Wrapped(np.ones(4)))
    with pytest.raises(TypeError, match="x, y: expected arrays of one library, got autograd and fakearrays"):
        from autograd.tracer import new_box
        kernels.product(quaternions())(new_box(np.ones(4), 0, None), Wrapped(np.ones(4)))
