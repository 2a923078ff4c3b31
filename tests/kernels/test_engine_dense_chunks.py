"""A lone dense factor on torch and JAX runs in chunks of rows (kernels.leaf.Leaf._engine_dense): forced into many
small chunks, with broadcast batch axes, it must equal the einsum over the structure constants, gradients too."""
from __future__ import annotations

import numpy as np
import pytest

from product_interactions import kernels
from product_interactions.algebra import Algebra
from product_interactions.kernels import leaf


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(leaf, "ENGINE_ROWS_BYTES", 8 * 8 * 8 * 3)       # 3 rows of float64 per chunk


def _case():
    rng = np.random.default_rng(0)
    lam = rng.standard_normal((8, 8, 8))
    kernel = kernels.product(Algebra.from_structure_constants(lam, exact=False), strategy="dense")
    return lam, kernel, rng.standard_normal((5, 10, 8)), rng.standard_normal((10, 8))   # y broadcasts over 5


def test_torch_chunks_equal_the_einsum_with_their_gradients(small_chunks):
    torch = pytest.importorskip("torch")
    lam, kernel, x, y = _case()
    tx, ty = (torch.tensor(a, requires_grad=True) for a in (x, y))
    z = kernel(tx, ty)
    np.testing.assert_allclose(z.detach().numpy(), np.einsum("bri,rj,ijk->brk", x, y, lam), rtol=1e-12, atol=1e-12)
    weights = np.random.default_rng(1).standard_normal(z.shape)
    (z * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(tx.grad.numpy(), np.einsum("brk,rj,ijk->bri", weights, y, lam), rtol=1e-10)
    np.testing.assert_allclose(ty.grad.numpy(), np.einsum("brk,bri,ijk->rj", weights, x, lam), rtol=1e-10)


def test_jax_chunks_equal_the_einsum_under_jit(small_chunks):
    jax = pytest.importorskip("jax")
    lam, kernel, x, y = _case()
    z = jax.jit(kernel)(jax.numpy.asarray(x), jax.numpy.asarray(y))
    np.testing.assert_allclose(np.asarray(z), np.einsum("bri,rj,ijk->brk", x, y, lam), rtol=1e-12, atol=1e-12)
