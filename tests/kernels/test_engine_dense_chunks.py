"""A lone dense factor on torch and JAX runs in chunks of rows (kernels.leaf.Leaf._engine_dense), in the outer form
(d = 8) or the batched form (d = 24, 576 entries per row's matrix): forced into many small chunks, with broadcast
batch axes, it must equal the einsum over the structure constants, gradients too."""
from __future__ import annotations

import numpy as np
import pytest

from product_interactions import kernels
from product_interactions.algebra import Algebra
from product_interactions.kernels import leaf


@pytest.fixture(params=[8, 24])
def d(request, monkeypatch):
    assert (request.param ** 2 >= leaf.BATCHED_ENTRIES) == (request.param == 24)
    monkeypatch.setattr(leaf, "ENGINE_ROWS_BYTES", request.param ** 2 * 8 * 3)       # 3 rows of float64 per chunk
    return request.param


def _case(d):
    rng = np.random.default_rng(0)
    lam = rng.standard_normal((d, d, d))
    kernel = kernels.product(Algebra.from_structure_constants(lam, exact=False), strategy="dense")
    return lam, kernel, rng.standard_normal((5, 10, d)), rng.standard_normal((10, d))   # y broadcasts over 5


def test_torch_chunks_equal_the_einsum_with_their_gradients(d):
    torch = pytest.importorskip("torch")
    lam, kernel, x, y = _case(d)
    tx, ty = (torch.tensor(a, requires_grad=True) for a in (x, y))
    z = kernel(tx, ty)
    np.testing.assert_allclose(z.detach().numpy(), np.einsum("bri,rj,ijk->brk", x, y, lam), rtol=1e-12, atol=1e-12)
    weights = np.random.default_rng(1).standard_normal(z.shape)
    (z * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(tx.grad.numpy(), np.einsum("brk,rj,ijk->bri", weights, y, lam), rtol=1e-10)
    np.testing.assert_allclose(ty.grad.numpy(), np.einsum("brk,bri,ijk->rj", weights, x, lam), rtol=1e-10)


def test_jax_chunks_equal_the_einsum_under_jit(d):
    jax = pytest.importorskip("jax")
    lam, kernel, x, y = _case(d)
    z = jax.jit(kernel)(jax.numpy.asarray(x), jax.numpy.asarray(y))
    np.testing.assert_allclose(np.asarray(z), np.einsum("bri,rj,ijk->brk", x, y, lam), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("engine", ["torch", "jax"])
def test_empty_batches_give_empty_results_in_both_forms(d, engine):
    module = pytest.importorskip(engine)
    _, kernel, _, _ = _case(d)
    for x_batch, y_batch, expected in (((0,), (0,), (0,)), ((0, 1), (1, 4), (0, 4)), ((4, 0), (4, 0), (4, 0))):
        x, y = (np.ones(batch + (d,)) for batch in (x_batch, y_batch))
        convert = module.tensor if engine == "torch" else module.numpy.asarray
        assert tuple(kernel(convert(x), convert(y)).shape) == expected + (d,)
