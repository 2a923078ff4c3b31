"""The compiled loop on a GPU (`kernels.native.triton_loop`): its Triton kernel, run here in Triton's interpreter on
CPU tensors, against the dense contraction and the C loop; the torch engine running the ``compiled`` strategy
through it (forward, gradients, gradients of gradients) with the kernel put in the CPU's place (`LOOPS`); and where
auto takes it by CUDA's rates.  The same kernel compiled on a CUDA device runs in the last test, where there is one."""
import numpy as np
import pytest

from product_interactions import kernels
from product_interactions.algebra import clebsch_gordan, clifford, quaternions, translation
from product_interactions.kernels.arrays import ENGINES
from product_interactions.kernels.arrays.rates import CUDA_RATES
from product_interactions.kernels.native import build, clib
from product_interactions.kernels.products.factor import Factor

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
from product_interactions.kernels.arrays import torch_engine  # noqa: E402  # needs torch
from product_interactions.kernels.native import triton_loop  # noqa: E402  # needs Triton

ALGEBRAS = {"quaternions": quaternions(), "CG(2)": clebsch_gordan(2), "PGA": clifford(3, 0, 1),
            "translation(8)": translation(8)}


def _terms(algebra):
    factor = Factor.from_algebra(algebra)
    return factor, clib.Terms.from_table(factor.indices, factor.values, factor.shape[2])


def _operands(factor, rows, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((rows, factor.shape[0])), rng.standard_normal((rows, factor.shape[1]))


@pytest.mark.parametrize("name", ALGEBRAS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rows", [1, 130])                   # 130: two blocks of BLOCK rows, the second masked
def test_the_kernel_equals_the_dense_contraction(name, dtype, rows):
    factor, terms = _terms(ALGEBRAS[name])
    x, y = _operands(factor, rows, dtype)
    z = triton_loop.sparse_product(terms, torch.tensor(x, dtype=getattr(torch, dtype)),
                                   torch.tensor(y, dtype=getattr(torch, dtype)), factor.shape)
    expected = np.einsum("ri,rj,ijk->rk", x, y, factor.dense(np.float64))
    assert z.dtype == getattr(torch, dtype) and z.shape == (rows, factor.shape[2])
    assert z.t().is_contiguous()                                              # column-major: no second copy
    assert np.allclose(z.numpy(), expected, rtol=0, atol=1e-12 if dtype == "float64" else 1e-5)


def test_strided_operands_and_empty_batches():
    factor, terms = _terms(clebsch_gordan(1))
    x, y = _operands(factor, 6, "float64")
    wide = torch.tensor(np.repeat(x, 2, axis=1))[:, ::2]                      # column stride 2
    rows = torch.tensor(np.repeat(y, 2, axis=0))[::2]                         # row stride 2 * d
    expected = np.einsum("ri,rj,ijk->rk", x, y, factor.dense(np.float64))
    assert np.allclose(triton_loop.sparse_product(terms, wide, rows, factor.shape).numpy(), expected, atol=1e-14)
    transposed = torch.tensor(x.T.copy()).t()                                 # column-major already
    assert np.allclose(triton_loop.sparse_product(terms, transposed, torch.tensor(y), factor.shape).numpy(),
                       expected, atol=1e-14)
    empty = triton_loop.sparse_product(terms, torch.zeros(0, 4), torch.zeros(0, 4), factor.shape)
    assert empty.shape == (0, 4)
    no_terms = clib.Terms.from_table(np.zeros((0, 3), int), np.zeros(0), 3)                # the zero product
    zeros = triton_loop.sparse_product(no_terms, torch.ones(5, 2), torch.ones(5, 2), (2, 2, 3))
    assert zeros.tolist() == [[0.0] * 3] * 5


@pytest.mark.skipif(build.unavailable() is not None, reason="no C compiler")
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_the_kernel_meets_non_finite_numbers_as_the_c_loop_does():
    """Both add each output's terms grouped by x index, so infinities and NaNs land on the same outputs."""
    factor, terms = _terms(clebsch_gordan(2))
    x, y = _operands(factor, 5, "float64", seed=3)
    x[0, 1], y[1, 4], x[2, 0], y[3, 2] = np.inf, -np.inf, np.nan, 1e308
    x[3, 5] = 1e308
    c = clib.sparse_product(terms, x, y, factor.shape)
    z = triton_loop.sparse_product(terms, torch.tensor(x), torch.tensor(y), factor.shape).numpy()
    assert np.array_equal(np.isnan(z), np.isnan(c)) and np.array_equal(np.isinf(z), np.isinf(c))
    finite = np.isfinite(c)
    assert np.allclose(z[finite], c[finite], rtol=1e-14, atol=1e-14)


def test_bad_operands_are_refused_by_name():
    factor, terms = _terms(quaternions())
    with pytest.raises(ValueError, match=r"expected x \(rows, 4\) and y \(rows, 4\).*\(3, 4\) and \(2, 4\)"):
        triton_loop.sparse_product(terms, torch.zeros(3, 4), torch.zeros(2, 4), factor.shape)
    with pytest.raises(TypeError, match="one dtype, float32 or float64.*torch.float32.*torch.float64"):
        triton_loop.sparse_product(terms, torch.zeros(3, 4), torch.zeros(3, 4, dtype=torch.float64), factor.shape)
    with pytest.raises(TypeError, match="torch.int64"):
        triton_loop.sparse_product(terms, torch.zeros(3, 4, dtype=torch.int64), torch.zeros(3, 4, dtype=torch.int64),
                                   factor.shape)
    with pytest.raises(ValueError, match=r"within shape \(3, 4, 4\), got terms reaching \(4, 4\) with 4 outputs"):
        triton_loop.sparse_product(terms, torch.zeros(3, 3), torch.zeros(3, 4), (3, 4, 4))


@pytest.fixture
def triton_on_cpu(monkeypatch):
    """The torch engine runs CPU tensors' compiled loop through the Triton kernel (interpreted), as it runs CUDA's."""
    monkeypatch.setitem(torch_engine.LOOPS, "cpu", torch_engine.LOOPS["cuda"])


@pytest.mark.parametrize("name", ["quaternions", "CG(2)"])
def test_the_compiled_strategy_runs_and_differentiates_through_the_kernel(name, triton_on_cpu, monkeypatch):
    calls = []
    kernel_product = triton_loop.sparse_product
    monkeypatch.setattr(triton_loop, "sparse_product", lambda *a: calls.append(1) or kernel_product(*a))
    algebra = ALGEBRAS[name]
    compiled, dense = kernels.product(algebra, strategy="compiled"), kernels.product(algebra, strategy="dense")
    factor = Factor.from_algebra(algebra)
    x, y = (torch.tensor(a, requires_grad=True) for a in _operands(factor, 3, "float64", seed=1))
    u, v = (torch.tensor(a, requires_grad=True) for a in (x.detach().numpy(), y.detach().numpy()))
    z, reference = compiled(x, y), dense(u, v)
    assert len(calls) == 1 and torch.allclose(z, reference, atol=1e-14)
    weights = torch.tensor(np.random.default_rng(2).standard_normal(z.shape))
    gx, gy = torch.autograd.grad((z * weights).sum(), (x, y), create_graph=True)
    rx, ry = torch.autograd.grad((reference * weights).sum(), (u, v), create_graph=True)
    assert len(calls) == 3 and torch.allclose(gx, rx, atol=1e-13) and torch.allclose(gy, ry, atol=1e-13)
    second = torch.autograd.grad((gx ** 2).sum() + (gy * gx.flip(-1)).sum(), (x, y))
    expected = torch.autograd.grad((rx ** 2).sum() + (ry * rx.flip(-1)).sum(), (u, v))
    assert all(torch.allclose(a, b, atol=1e-12) for a, b in zip(second, expected))


def test_the_engine_runs_the_loop_only_where_one_runs(monkeypatch):
    engine = ENGINES["torch"]
    assert engine.runs_compiled(torch.zeros(2)) == (build.unavailable() is None)
    assert not engine.runs_compiled(torch.zeros(2, dtype=torch.float16))
    assert not engine.runs_compiled(torch.zeros(2, device="meta"))                  # no loop for that device
    assert not engine.scans_compiled(torch.zeros(2, device="meta"))
    missing = torch_engine.Loop(torch_engine.LOOPS["cuda"].run, lambda: "Triton is not installed")
    monkeypatch.setitem(torch_engine.LOOPS, "cpu", missing)
    assert not engine.runs_compiled(torch.zeros(2))
    kernel = kernels.product(quaternions(), strategy="compiled")                    # falls back, still exact
    x, y = torch.eye(4)[1], torch.eye(4)[2]
    assert kernel(x, y).tolist() == [0.0, 0.0, 0.0, 1.0]                            # i j = k


@pytest.mark.parametrize("name, algebra, rows", [("CG lmax 4", clebsch_gordan(4), 10**5),
                                                 ("CG lmax 6", clebsch_gordan(6), 5 * 10**4),
                                                 ("PGA", clifford(3, 0, 1), 10**6)])
def test_auto_takes_the_kernel_for_the_sparse_products_on_cuda(name, algebra, rows):
    """By CUDA's rates, the issue's sparse products take the one-launch loop where it runs, and one dense
    contraction (few launches, not gather's or codegen's many) where it does not."""
    kernel = kernels.product(algebra, dtype=np.float32)
    engine = ENGINES["torch"]
    for batch in (64, rows):
        assert kernel.strategies_for(batch, engine, 4, True, CUDA_RATES) == ("compiled",)
        assert kernel.strategies_for(batch, engine, 4, False, CUDA_RATES) == ("dense",)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("name", ALGEBRAS)
def test_on_a_cuda_device_the_compiled_kernel_equals_the_dense_one(name):
    algebra = ALGEBRAS[name]
    factor = Factor.from_algebra(algebra)
    x, y = (torch.tensor(a, device="cuda", requires_grad=True) for a in _operands(factor, 1000, "float64"))
    kernel = kernels.product(algebra)
    assert kernel.strategies_for(1000, ENGINES["torch"], 8, True, ENGINES["torch"].rates_for(x)) == ("compiled",)
    z, reference = kernel(x, y), kernels.product(algebra, strategy="dense")(x, y)
    assert torch.allclose(z, reference, atol=1e-12)
    assert all(torch.allclose(a, b, atol=1e-12) for a, b in
               zip(torch.autograd.grad(z.sum(), (x, y)), torch.autograd.grad(reference.sum(), (x, y))))
