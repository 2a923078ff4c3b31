"""LS2T's compiled functionals (`kernels.native.clib.low_rank_scan` and its gradient, `kernels.scans.low_rank`):
brute force on any shape, slots and strides, gradients of first and second order in x and V on numpy and torch
against the engines' blocks, torch.func, threads, auto's choice, and bad input."""
import itertools
import math

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from product_interactions import kernels
from product_interactions.interactions.architectures import ls2t
from product_interactions.kernels.native import build, clib
from product_interactions.kernels.scans.low_rank import low_rank, runs_compiled, slots

pytestmark = pytest.mark.skipif(build.unavailable() is not None, reason=f"{build.unavailable()}")


def brute_force(x, V, degree, independent):
    """Every prefix's levels, (rows, length, degree, N): level m at t is the sum over i_1 < ... < i_m <= t of
    prod_k <v^k_m, x_{i_k}>, one index tuple at a time; the slot of v^k_m read off the layout `low_rank` documents
    (group k of the independent slots starts after groups 1..k-1, which hold degree - j + 1 slots each)."""
    rows, length, _ = x.shape
    out = np.zeros((rows, length, degree, V.shape[2]))
    for m in range(1, degree + 1):
        factors = [sum(degree - j + 1 for j in range(1, k)) + m - k if independent else k - 1 for k in range(1, m + 1)]
        for t in range(length):
            for indices in itertools.combinations(range(t + 1), m):
                out[:, t, m - 1] += math.prod(x[:, i] @ V[:, s] for i, s in zip(indices, factors))
    return out


def functionals(degree, independent, h=3, width=2, seed=0):
    rng = np.random.default_rng(seed)
    count = degree * (degree + 1) // 2 if independent else degree
    return rng.standard_normal((h, count, width))


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 3), length=st.integers(1, 6), h=st.integers(1, 3), width=st.integers(1, 3),
       degree=st.integers(1, 4), independent=st.booleans(), reverse=st.booleans(), dtype=st.sampled_from(["f4", "f8"]))
def test_the_loop_equals_brute_force_for_any_shape_slots_and_strides(rows, length, h, width, degree, independent,
                                                                    reverse, dtype):
    rng = np.random.default_rng(rows + 10 * length + 100 * degree)
    x = rng.standard_normal((rows, length, 2 * h))[:, ::-1 if reverse else 1, ::2]       # strided, maybe backwards
    V = functionals(degree, independent, h, width, seed=length)
    expected = brute_force(x, V, degree, independent)
    x, V = x.astype(dtype), V.astype(dtype)
    tolerance = 1e-4 if dtype == "f4" else 1e-11
    parent, level = slots(degree, independent)
    everything = clib.low_rank_scan(x, V, parent, level, sequences=True)
    assert everything.dtype == dtype and everything.shape == expected.shape
    np.testing.assert_allclose(everything, expected, rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(clib.low_rank_scan(x, V, parent, level), expected[:, -1], rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("sequences", [False, True])
@pytest.mark.parametrize("independent", [False, True])
def test_the_gradient_loop_equals_autograd_through_the_blocks_over_many_segments(independent, sequences):
    rng = np.random.default_rng(1 + sequences)
    x, V = rng.standard_normal((5, 40, 3)), functionals(4, independent, width=4, seed=2) / 3   # 7 segments of 7
    g = rng.standard_normal((5, 40, 4, 4) if sequences else (5, 4, 4))

    def gradients(method):
        return autograd.grad(lambda x, V: anp.sum(low_rank(x, V, 4, independent, sequences, method) * g), (0, 1))(x, V)
    (dx, dV), (ex, eV) = gradients("compiled"), gradients("blocks")
    assert np.abs(ex).max() > 1 and np.abs(eV).max() > 1
    np.testing.assert_allclose(dx, ex, rtol=1e-10, atol=1e-10 * np.abs(ex).max())
    np.testing.assert_allclose(dV, eV, rtol=1e-10, atol=1e-10 * np.abs(eV).max())
    assert np.array_equal(clib.low_rank_scan_vjp(x, V, *slots(4, independent), g, sequences)[0], dx)


def test_an_ls2t_layer_s_gradients_equal_the_blocks_with_reversed_sequences_and_strided_gradients(monkeypatch):
    """Bidirectional with every prefix: the reversed direction's output gradient reaches the loop as a view
    running backwards, which the gradient loop copies; its copy had been freed before the loop read it (wrong
    gradients, or a crash, as the memory was reused)."""
    layer = ls2t(d_in=3, width=5, order=3, static=None, bidirectional=True, return_sequences=True)
    params = layer.init(seed=1)
    x = np.random.default_rng(8).standard_normal((4, 11, 3))

    def gradients():
        return autograd.grad(lambda p: anp.sum(layer.apply(p, x) ** 2))(params)
    ours = gradients()
    monkeypatch.setattr(build, "load", lambda: (None, "no C compiler found (test)"))     # auto takes the blocks
    expected = gradients()
    for name in params:
        np.testing.assert_allclose(ours[name], expected[name], rtol=1e-9, atol=1e-9 * np.abs(expected[name]).max(),
                                   err_msg=name)
    rng = np.random.default_rng(9)
    y, V, g = rng.standard_normal((64, 200, 3))[:, ::-1], functionals(3, False, width=3, seed=9), \
        rng.standard_normal((64, 3, 3, 200))
    strided = g.transpose(0, 3, 1, 2)[:, ::-1]
    for _ in range(3):
        np.testing.assert_array_equal(clib.low_rank_scan_vjp(y, V, *slots(3, False), strided, True)[1],
                                      clib.low_rank_scan_vjp(y, V, *slots(3, False), strided.copy(), True)[1])


def test_autograd_gradients_of_gradients_equal_the_blocks():
    rng = np.random.default_rng(3)
    x, V = rng.standard_normal((3, 6, 2)), functionals(3, False, h=2, seed=3)

    def gradient_norm(method):
        def loss(a, v):
            return anp.sum(low_rank(a, v, 3, False, method=method) ** 2)
        return autograd.grad(lambda v: anp.sum(autograd.grad(loss)(x, v) ** 2))(V)
    expected = gradient_norm("blocks")
    assert np.abs(expected).max() > 1 and np.allclose(gradient_norm("compiled"), expected, rtol=1e-10)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")      # inside torch.func
def test_torch_cpu_tensors_run_the_loop_with_first_and_second_derivatives_and_torch_func():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x = torch.tensor(rng.standard_normal((3, 5, 2)), requires_grad=True)
    V = torch.tensor(functionals(3, True, h=2, seed=4), requires_grad=True)
    for sequences in (False, True):
        def features(a, v):
            return low_rank(a, v, 3, True, sequences, method="compiled")
        assert torch.autograd.gradcheck(features, (x, V))
        assert torch.autograd.gradgradcheck(features, (x, V))
    blocks = lambda a, v: low_rank(a, v, 3, True, method="blocks")   # noqa: E731
    compiled = lambda a, v: low_rank(a, v, 3, True, method="compiled")   # noqa: E731
    stacked = torch.stack([x.detach(), -2 * x.detach()])
    for transform in (lambda f: torch.func.jacrev(f, argnums=(0, 1))(x.detach(), V.detach()),
                      lambda f: (torch.func.jacfwd(f, argnums=1)(x.detach(), V.detach()),),
                      lambda f: (torch.func.vmap(f, in_dims=(0, None))(stacked, V.detach()),)):
        ours, expected = transform(compiled), transform(blocks)
        assert len(ours) == len(expected)
        assert all(torch.allclose(a, b, rtol=1e-12, atol=1e-12) for a, b in zip(ours, expected))
    x32, V32 = (t.detach().float().requires_grad_() for t in (x, V))
    low_rank(x32, V32, 3, True).pow(2).sum().backward()
    low_rank(x, V, 3, True, method="blocks").pow(2).sum().backward()
    assert x32.grad.dtype == V32.grad.dtype == torch.float32
    assert torch.allclose(x32.grad.double(), x.grad, rtol=1e-4, atol=1e-4)
    assert torch.allclose(V32.grad.double(), V.grad, rtol=1e-4, atol=1e-4)


def test_torch_vectorised_jacobians_go_through_torch_s_own_operations():
    """``is_grads_batched`` (and ``jacobian(vectorize=True)``) hands the backward a batched gradient with no memory
    of its own: it goes through the blocks' VJP, as had failed ("Batching rule not implemented for aten::detach")."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10)
    x = torch.tensor(rng.standard_normal((2, 5, 3)), requires_grad=True)
    V = torch.tensor(functionals(2, False, seed=10))

    def jacobian(method):
        y = low_rank(x, V, 2, False, method=method)
        return torch.autograd.grad(y, x, torch.eye(y.numel(), dtype=y.dtype).view(-1, *y.shape), is_grads_batched=True)
    ours, expected = jacobian("compiled")[0], jacobian("blocks")[0]
    assert expected.abs().max() > 0.1 and torch.allclose(ours, expected, rtol=1e-12, atol=1e-12)
    hessian = torch.autograd.functional.hessian(lambda a: low_rank(a, V, 2, False).pow(2).sum(), x.detach(),
                                                vectorize=True)
    assert torch.allclose(hessian, torch.autograd.functional.hessian(
        lambda a: low_rank(a, V, 2, False, method="blocks").pow(2).sum(), x.detach()), rtol=1e-12, atol=1e-12)


def test_auto_takes_the_loop_on_numpy_and_torch_cpu_of_one_dtype(monkeypatch):
    x, V = np.zeros((2, 3, 4)), np.zeros((4, 2, 5))
    assert runs_compiled(x, V) and runs_compiled(x.astype("f4"), V.astype("f4"))
    assert not runs_compiled(x.astype("f4"), V) and not runs_compiled(x.astype("f2"), V.astype("f2"))
    calls = []
    loop = clib.low_rank_scan_keeping                   # low_rank_scan's too
    monkeypatch.setattr(clib, "low_rank_scan_keeping", lambda *a, **k: calls.append(a[0].dtype) or loop(*a, **k))
    layer = ls2t(d_in=4, width=5, order=2, static=None)
    params = layer.init(seed=0)
    rng = np.random.default_rng(5)
    layer.apply(params, rng.standard_normal((2, 7, 4)))
    torch = pytest.importorskip("torch")
    layer.apply({k: torch.tensor(v, dtype=torch.float32) for k, v in params.items()},
                torch.tensor(rng.standard_normal((2, 7, 4)), dtype=torch.float32))
    assert calls == [np.float64, np.float32]


def test_jax_arrays_mixed_dtypes_and_a_machine_without_a_compiler_take_the_blocks(monkeypatch):
    jnp = pytest.importorskip("jax.numpy")
    x, V = np.random.default_rng(6).standard_normal((2, 5, 3)), functionals(2, False, seed=6)
    assert not runs_compiled(jnp.asarray(x), jnp.asarray(V))
    with pytest.raises(ValueError, match="^method: 'compiled' cannot run here: .*got jax float(32|64)"):
        low_rank(jnp.asarray(x), jnp.asarray(V), 2, False, method="compiled")
    with pytest.raises(ValueError, match="^method: 'compiled' cannot run here: .*got numpy float32 x and numpy "
                                         "float64 V"):
        low_rank(x.astype("f4"), V, 2, False, method="compiled")
    with pytest.raises(ValueError, match="^method: expected one of .*'blocks'.*, got 'loop'"):
        low_rank(x, V, 2, False, method="loop")
    with pytest.raises(ValueError, match=r"^V: expected shape \(3, 3, N\) for x of shape \(2, 5, 3\), degree 2 and "
                                         r"independent=True, got \(3, 2, 2\)"):
        low_rank(x, V, 2, True)
    with pytest.raises(ValueError, match=r"^x: expected shape \(batch, length, h\), got \(5, 3\)"):
        low_rank(x[0], V, 2, False)
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="^method: 'compiled' cannot run here: .*got numpy float64 x and torch "
                                         "float64 V"):
        low_rank(x, torch.tensor(V), 2, False, method="compiled")
    monkeypatch.setattr(build, "load", lambda: (None, "no C compiler found (test)"))
    assert not runs_compiled(x, V)
    with pytest.raises(ValueError, match="^method: 'compiled' cannot run here: no C compiler found"):
        low_rank(x, V, 2, False, method="compiled")
    assert np.allclose(low_rank(x, V, 2, False), brute_force(x, V, 2, False)[:, -1], rtol=1e-12)


def test_threads_give_the_same_numbers_as_one(monkeypatch):
    rng = np.random.default_rng(7)
    x, V = rng.standard_normal((37, 11, 3)), functionals(3, True, width=5, seed=7)
    g = rng.standard_normal((37, 3, 5))
    parent, level = slots(3, True)
    monkeypatch.setattr(clib, "THREADS", 1)
    one = clib.low_rank_scan(x, V, parent, level), *clib.low_rank_scan_vjp(x, V, parent, level, g)
    monkeypatch.setattr(clib, "THREADS", 3)
    monkeypatch.setattr(clib, "WORK_PER_THREAD", 1)
    three = clib.low_rank_scan(x, V, parent, level), *clib.low_rank_scan_vjp(x, V, parent, level, g)
    assert np.array_equal(one[0], three[0]) and np.array_equal(one[1], three[1])
    assert np.allclose(one[2], three[2], rtol=1e-13)        # dV: each chunk's sum, then the sum of those
    for _ in range(10):                                     # in order, whichever thread ran a chunk
        assert np.array_equal(clib.low_rank_scan_vjp(x, V, parent, level, g)[1], three[2])


def test_no_paths_no_steps_or_no_coordinates():
    for sequences in (False, True):
        x, V = np.zeros((3, 0, 2)), np.ones((2, 2, 4))
        assert np.array_equal(low_rank(x, V, 2, False, sequences, "blocks"), low_rank(x, V, 2, False, sequences))
    parent, level = slots(2, False)
    for shape in ((0, 4, 2), (3, 0, 2), (3, 2, 0)):
        x, V = np.zeros(shape), np.ones((shape[2], 2, 3))
        assert clib.low_rank_scan(x, V, parent, level).shape == (shape[0], 2, 3)
        assert not clib.low_rank_scan(x, V, parent, level, sequences=True).any()
        dx, dV = clib.low_rank_scan_vjp(x, V, parent, level, np.ones(shape[:2] + (2, 3)), sequences=True)
        assert dx.shape == shape and dV.shape == V.shape and not dV.any()


def test_the_gradient_runs_on_as_many_threads_as_the_memory_limit_holds(monkeypatch):
    rng = np.random.default_rng(9)
    x, V, g = rng.standard_normal((8, 30, 2)), functionals(2, False, h=2, seed=9), rng.standard_normal((8, 2, 2))
    parent, level = slots(2, False)
    expected = clib.low_rank_scan_vjp(x, V, parent, level, g)
    counts = []
    threads = clib.threads
    monkeypatch.setattr(clib, "threads", lambda *args, **options: counts.append(threads(*args, **options)) or counts[-1])
    monkeypatch.setattr(clib, "WORK_PER_THREAD", 1)
    monkeypatch.setattr(clib, "THREADS", 4)
    needed = (5 + 12 + 3 + 4 * 2) * 4 * 8    # 5 states kept, a segment's 6 and their projections, 3 more, 4 dV sums
    monkeypatch.setattr(kernels, "MEMORY_LIMIT", needed * 3)
    got = clib.low_rank_scan_vjp(x, V, parent, level, g)
    assert counts == [3] and np.array_equal(got[0], expected[0]) and np.allclose(got[1], expected[1], rtol=1e-13)
    monkeypatch.setattr(kernels, "MEMORY_LIMIT", needed - 1)
    with pytest.raises(kernels.MemoryLimitError, match="^x: the functionals' gradient over 30 steps of 4 numbers"):
        clib.low_rank_scan_vjp(x, V, parent, level, g)


@pytest.mark.parametrize("call, error, message", [
    (lambda: clib.low_rank_scan(np.zeros((2, 3)), np.zeros((3, 1, 1)), [-1], [0]), TypeError,
     "^x: expected a float32 or float64 numpy array"),
    (lambda: clib.low_rank_scan(np.zeros((2, 3, 1), int), np.zeros((1, 1, 1)), [-1], [0]), TypeError,
     r"^x: .* got ndarray int64 \(2, 3, 1\)"),
    (lambda: clib.low_rank_scan(np.zeros((2, 3, 2)), np.zeros((3, 1, 1)), [-1], [0]), TypeError,
     r"^V: expected a float64 numpy array \(h = 2, slots, N\), got ndarray float64 \(3, 1, 1\)"),
    (lambda: clib.low_rank_scan(np.zeros((2, 3, 1)), np.zeros((1, 1, 1), "f4"), [-1], [0]), TypeError,
     "^V: expected a float64 numpy array .* got ndarray float32"),
    (lambda: clib.low_rank_scan(np.zeros((2, 3, 1)), np.zeros((1, 2, 1)), [-1, 1], [0]), ValueError,
     r"^parent: expected 2 slots' parents, each -1 or a smaller slot, got \[-1, 1\]"),
    (lambda: clib.low_rank_scan(np.zeros((2, 3, 1)), np.zeros((1, 2, 1)), [-1], [0]), ValueError,
     r"^parent: expected 2 slots' parents"),
    (lambda: clib.low_rank_scan(np.zeros((2, 3, 1)), np.zeros((1, 2, 1)), [-1, 0], [2]), ValueError,
     r"^level: expected slots below 2, got \[2\]"),
    (lambda: clib.low_rank_scan(np.zeros((2, 3, 1)), np.zeros((1, 1, 1)), [-1], [0], sequences=1), TypeError,
     "^sequences: expected True or False, got 1"),
    (lambda: clib.low_rank_scan_vjp(np.zeros((2, 3, 1)), np.zeros((1, 1, 1)), [-1], [0], np.zeros((2, 2))),
     ValueError, r"^gradient: expected shape \(2, 1, 1\), got \(2, 2\)"),
    (lambda: clib.low_rank_scan_vjp(np.zeros((2, 3, 1)), np.zeros((1, 1, 1)), [-1], [0], np.zeros((2, 1, 1), "f4")),
     TypeError, "^gradient: expected a float64 numpy array, got ndarray float32"),
])
def test_bad_input_is_refused_naming_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()
