"""A lone dense factor runs in blocks of rows and of lam's columns on numpy and on torch with nothing recording
(kernels.products.leaf.dense_blocks), and in chunks of rows on torch with autograd and on JAX (Contraction._engine_dense),
in the outer form (d = 8) or the batched form (d = 24, 576 entries per row's matrix): forced into many small, ragged
blocks, with broadcast batch axes, it must equal the einsum over the structure constants, gradients too."""
from __future__ import annotations

import os

import numpy as np
import pytest

from product_interactions import kernels
from product_interactions.algebra import Algebra
from product_interactions.kernels.products import leaf


@pytest.fixture(params=[8, 24])
def d(request, monkeypatch):
    assert (request.param ** 2 >= leaf.BATCHED_ENTRIES) == (request.param == 24)
    monkeypatch.setattr(leaf, "ENGINE_ROWS_BYTES", request.param ** 2 * 8 * 3)       # 3 rows of float64 per chunk
    blocks = (request.param * 5 * 8 * 3, request.param ** 2 * 8 * 5)      # 3 rows of lam's columns for 5 slices
    for name in ("ONE_THREAD_BLOCKS", "THREADED_BLOCKS"):
        monkeypatch.setattr(leaf, name, blocks)
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


def test_numpy_blocks_equal_the_einsum(d):
    lam, kernel, x, y = _case(d)
    np.testing.assert_allclose(kernel(x, y), np.einsum("bri,rj,ijk->brk", x, y, lam), rtol=1e-12, atol=1e-12)
    z = kernel(x.astype(np.float32), y)                                      # promoted to float64
    assert z.dtype == np.float64
    np.testing.assert_allclose(z, np.einsum("bri,rj,ijk->brk", x.astype(np.float32), y, lam), rtol=1e-12)


def test_torch_blocks_in_place_equal_the_einsum_in_either_dtype(d, monkeypatch):
    torch = pytest.importorskip("torch")
    lam, kernel, x, y = _case(d)
    expected = np.einsum("bri,rj,ijk->brk", x, y, lam)
    blocks, dense_blocks = [], leaf.dense_blocks
    monkeypatch.setattr(leaf, "dense_blocks", lambda *arguments: blocks.append(dense_blocks(*arguments)))
    with torch.no_grad():                            # nothing records: the blocks are written in place
        np.testing.assert_allclose(kernel(torch.tensor(x, requires_grad=True), torch.tensor(y)).numpy(), expected,
                                   rtol=1e-12, atol=1e-12)
    assert len(blocks) == 1
    z = kernel(torch.tensor(x, dtype=torch.float32), torch.tensor(y))        # mixed dtypes: promoted
    assert z.dtype == torch.float64
    np.testing.assert_allclose(z.numpy(), np.einsum("bri,rj,ijk->brk", x.astype(np.float32), y, lam), rtol=1e-12)
    z = kernel(torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32))
    np.testing.assert_allclose(z.numpy(), expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


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


@pytest.mark.parametrize("limit", [1, 2])
def test_numpy_blocks_follow_the_blas_threads(d, monkeypatch, limit):
    from threadpoolctl import threadpool_limits
    from product_interactions.kernels.arrays import NUMPY
    with threadpool_limits(limit, user_api="blas"):                        # set at run time: seen
        threads = NUMPY.threads()
    assert threads == limit
    monkeypatch.setattr(leaf, "ONE_THREAD_BLOCKS", (1, 2))
    monkeypatch.setattr(leaf, "THREADED_BLOCKS", (3, None))
    monkeypatch.setattr(NUMPY, "threads", lambda: threads)
    sizes, dense_blocks = [], leaf.dense_blocks
    monkeypatch.setattr(leaf, "dense_blocks",
                        lambda *arguments: sizes.append(arguments[-2:]) or dense_blocks(*arguments))
    lam, kernel, x, y = _case(d)
    np.testing.assert_allclose(kernel(x, y), np.einsum("bri,rj,ijk->brk", x, y, lam), rtol=1e-12, atol=1e-12)
    assert sizes == [(1, 2) if threads == 1 else (3, None)]
