"""Every strategy's product under torch.func transforms and forward mode equals the plain call: vmap (a slice's
non-finite values take the term-by-term result for that slice alone), jacrev and grad against the structure
constants, and jvp against the product's own linearisation x' y + x y'; and under torch's Python dispatch modes."""
from __future__ import annotations

import numpy as np
import pytest
from kernel_cases import STRATEGY_NAMES

from product_interactions import kernels
from product_interactions.algebra import (Algebra, diagonal, position, quaternions, tensor_algebra, tensor_product,
                                          translation)

torch = pytest.importorskip("torch")

CASES = [(quaternions(), "dense"), (quaternions(), "gather"), (quaternions(), "codegen"),
         (quaternions(), "compiled"), (quaternions(), "scatter"), (translation(8), "fft"), (translation(8), "gather"),
         (tensor_algebra(2, 2), "graded"), (diagonal(3), "identify"),
         (Algebra.from_structure_constants(np.random.default_rng(0).standard_normal((6, 6, 6)), exact=False), "dense")]
#: Elements with several axes: a strategy per factor, each moving its factor's axis (vmap had failed on torch's
#: moveaxis with ints, which has no batching rule).
PRODUCTS = [(tensor_product(translation(8), translation(4)), "fft"),
            (tensor_product(position(2), tensor_algebra(2, 2)), ("identify", "graded"))]


def test_the_cases_hold_every_strategy():
    assert {strategy for _, strategy in CASES} == set(STRATEGY_NAMES)


def _operands(shape, seed=1):
    rng = np.random.default_rng(seed)
    return (torch.tensor(rng.standard_normal((5, 3, *shape))) for _ in range(2))


@pytest.mark.parametrize("algebra, strategy", CASES + PRODUCTS, ids=lambda case: getattr(case, "name", None) or
                         "+".join([case] if isinstance(case, str) else case))
def test_vmap_equals_the_plain_call_slice_by_slice(algebra, strategy):
    kernel = kernels.product(algebra, strategy=strategy)
    x, y = _operands(algebra.shape)
    # slice 2 is not finite: its own result, term by term
    x[(2, 1) + (0,) * len(algebra.shape)] = float("inf")
    expected = torch.stack([kernel(a, b) for a, b in zip(x, y)])
    got = torch.func.vmap(kernel)(x, y)
    finite = torch.isfinite(expected)
    assert torch.equal(finite, torch.isfinite(got))
    assert torch.allclose(got[finite], expected[finite])
    assert torch.allclose(torch.func.vmap(kernel, in_dims=(0, None))(x[:2], y[0]),
                          torch.stack([kernel(x[0], y[0]), kernel(x[1], y[0])]))


@pytest.mark.parametrize("algebra, strategy", CASES, ids=lambda case: getattr(case, "name", case))
def test_jacrev_and_jvp_equal_the_structure_constants(algebra, strategy):
    kernel = kernels.product(algebra, strategy=strategy)
    lam = torch.tensor(np.asarray(algebra.structure_constants(), dtype=float))
    x, y = (a[0, 0] for a in _operands(algebra.shape))
    assert torch.allclose(torch.func.jacrev(kernel)(x, y), torch.einsum("j,ijk->ki", y, lam))
    assert torch.allclose(torch.func.grad(lambda b: kernel(x, b).sum())(y), torch.einsum("i,ijk->j", x, lam))
    tx, ty = (a[1, 1] for a in _operands(algebra.shape, seed=2))
    _, tangent = torch.func.jvp(kernel, (x, y), (tx, ty))
    assert torch.allclose(tangent, kernel(tx, y) + kernel(x, ty))


@pytest.mark.parametrize("algebra, strategy", CASES + PRODUCTS, ids=lambda case: getattr(case, "name", None) or
                         "+".join([case] if isinstance(case, str) else case))
def test_a_python_dispatch_mode_sees_every_strategy_s_product(algebra, strategy):
    """Under torch's Python dispatch modes (FlopCounterMode, a mode of one's own) the product and its gradient are
    the plain call's, and the mode sees the operations.  Generated code had failed there with
    ``KeyError: '__import__'``: torch imported through the builtins of that code's frame, which had none."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode

    class Counting(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.calls += 1
            return func(*args, **(kwargs or {}))
    kernel = kernels.product(algebra, strategy=strategy)
    x, y = (a.requires_grad_() for a in _operands(algebra.shape))
    expected = kernel(x, y)
    expected_gradient, = torch.autograd.grad(expected.sum(), [x])
    with FlopCounterMode(display=False), Counting() as counting:
        got = kernel(x, y)
        gradient, = torch.autograd.grad(got.sum(), [x])
    assert counting.calls > 0
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(gradient, expected_gradient, rtol=1e-12, atol=1e-12)
