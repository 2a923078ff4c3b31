"""Product kernels inside ``torch.autocast`` (mixed-precision training) take their operands as torch's matrix
products do: float32 ones in the autocast's dtype, float64 ones as they are, and nothing outside an enabled
autocast of the operands' device.  Before, every strategy gave float32 there (it runs below autocast, or writes
into float32 buffers), so a product in a mixed-precision model ran at float32 speed while a hand ``torch.einsum``
of the same structure constants ran in bfloat16; the architectures' compiled expressions (torch operations) already
followed autocast."""
from __future__ import annotations

import numpy as np
import pytest
from kernel_cases import STRATEGY_NAMES, builtin_algebras

from product_interactions import kernels

torch = pytest.importorskip("torch")

ALGEBRAS = builtin_algebras()


def representing(A):
    for name in (*STRATEGY_NAMES, "auto"):
        try:
            yield name, kernels.product(A, strategy=name, dtype=np.float32)
        except ValueError:
            continue


def operands(A, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(6, *A.shape, generator=g, dtype=dtype, requires_grad=True) for _ in range(2)]


@pytest.mark.parametrize("name", list(ALGEBRAS))
@pytest.mark.parametrize("half", [torch.bfloat16, torch.float16])
def test_every_strategy_computes_in_the_autocast_dtype(name, half):
    """The values and gradients of the operands cast by hand: the result in the autocast's dtype (the dtype
    ``torch.einsum`` of the dense constants gives under the same autocast), the gradients in the operands' float32."""
    A = ALGEBRAS[name]
    x, y = operands(A)
    weights = torch.linspace(-1, 1, 6 * A.dim).view(6, *A.shape)
    for strategy, kernel in representing(A):
        with torch.autocast("cpu", dtype=half):
            z = kernel(x, y)
            hand = torch.einsum("bi,bj,ijk->bk", x.reshape(6, -1), y.reshape(6, -1),
                                torch.tensor(A.structure_constants(), dtype=torch.float32))
        assert z.dtype == hand.dtype == half, strategy
        cast = [a.detach().to(half).requires_grad_() for a in (x, y)]
        expected = kernel(*cast)
        torch.testing.assert_close(z, expected, rtol=0, atol=0, msg=strategy)
        got = torch.autograd.grad((z.float() * weights).sum(), [x, y])
        want = torch.autograd.grad((expected.float() * weights).sum(), cast)
        for g, w in zip(got, want):
            assert g.dtype == torch.float32
            torch.testing.assert_close(g, w.float(), rtol=0, atol=0, msg=strategy)


def test_float64_operands_and_calls_outside_an_autocast_are_as_they_were():
    A = ALGEBRAS["quaternions"]
    kernel = kernels.product(A)
    x64, y64 = operands(A, torch.float64)
    x, y = operands(A)
    exact = kernel(x64, y)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert kernel(x64, y64).dtype == torch.float64
        torch.testing.assert_close(kernel(x64, y), exact, rtol=0, atol=0)    # float64 asked for: y not cast
        with torch.autocast("cpu", enabled=False):
            assert kernel(x, y).dtype == torch.float32
        assert kernel(x, y.detach().numpy()).dtype == torch.bfloat16    # the numpy operand converted into x's
    assert kernel(x, y).dtype == torch.float32


def test_an_autocast_of_another_device_type_leaves_the_operands_as_they_are(meta_as_gpu):
    """A CPU autocast does not reach tensors of the GPU stand-in (torch has no autocast for meta; asking whether
    one is enabled raises there)."""
    A = ALGEBRAS["quaternions"]
    x = torch.zeros(5, 4, device=meta_as_gpu)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert kernels.product(A)(x, x).dtype == torch.float32


def test_a_compiled_call_under_autocast_gives_the_eager_dtype_and_values():
    A = ALGEBRAS["quaternions"]
    kernel = kernels.product(A)
    x, y = operands(A)
    compiled = torch.compile(lambda a, b: kernel(a, b) * 2, fullgraph=True, backend="eager")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        traced, eager = compiled(x, y), kernel(x, y) * 2
    assert traced.dtype == torch.bfloat16
    scale = float(eager.detach().abs().max())           # to bfloat16's rounding: the operator's body records nothing
    torch.testing.assert_close(traced, eager, rtol=0, atol=2**-7 * scale)
    got = torch.autograd.grad(traced.float().sum(), [x, y])
    for g, w in zip(got, torch.autograd.grad(eager.float().sum(), [x, y])):
        assert g.dtype == torch.float32
        torch.testing.assert_close(g, w, rtol=2**-7, atol=2**-7)
