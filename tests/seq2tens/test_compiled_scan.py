"""The compiled Seq2Tens scan (`kernels.native.clib.tensor_scan` and its gradient): brute force on any shape, lift and
layout, gradients of first and second order on numpy and torch, auto's choice, and bad input.  (Every other
seq2tens test runs it too: they loop over `METHODS`.)"""
import itertools
import math

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from product_interactions import kernels
from product_interactions.interactions.feature_map import flatten, seq2tens, signature
from product_interactions.kernels.native import build, clib
from product_interactions.kernels.scans import seq2tens as kernel
from product_interactions.kernels.scans.seq2tens import choose_method, runs_compiled

pytestmark = pytest.mark.skipif(build.unavailable() is not None, reason=f"{build.unavailable()}")


def brute_force(x, degree, order):
    """Levels 1..degree of prod_t sum_{k<=order} x_t^k / k!, every word a sum over the ways of cutting it into
    consecutive runs, one run per time step (strictly increasing steps), each run of length k <= order carrying
    x_t^{(x)k} / k!: one path and one word at a time, with no recursion shared with the library."""
    length, d = x.shape
    levels = []
    for m in range(1, degree + 1):
        level = np.zeros(d ** m)
        for w, word in enumerate(itertools.product(range(d), repeat=m)):
            for cuts in itertools.product((False, True), repeat=m - 1):       # where a new run (time step) starts
                bounds = [0] + [i + 1 for i, cut in enumerate(cuts) if cut] + [m]
                runs = [word[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
                if max(map(len, runs)) > order:
                    continue
                for steps in itertools.combinations(range(length), len(runs)):
                    level[w] += math.prod(np.prod(x[t, list(run)]) / math.factorial(len(run))
                                          for t, run in zip(steps, runs))
        levels.append(level)
    return np.concatenate(levels)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 19), st.integers(1, 4), st.integers(1, 3), st.integers(1, 4), st.integers(1, 5),
       st.booleans(), st.sampled_from([np.float64, np.float32]), st.integers(0, 2**16))
def test_the_scan_equals_brute_force_for_any_shape_lift_and_strides(paths, length, d, degree, order, sequences,
                                                                     dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((length, paths, d + 1)).transpose(1, 0, 2)[:, :, 1:]        # time-major, strided
    result = clib.tensor_scan(x.astype(dtype), degree, order, sequences)
    words = sum(d ** m for m in range(1, degree + 1))
    assert result.dtype == dtype and result.shape == ((paths, length, words) if sequences else (paths, words))
    expected = np.array([[brute_force(x[p, :t + 1], degree, order) for t in range(length)] for p in range(paths)])
    expected = expected.reshape(paths, length, words)
    expected = expected if sequences else expected[:, -1]
    assert np.allclose(result, expected, rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-5 if dtype ==
                       np.float32 else 1e-12)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 11), st.integers(1, 40), st.integers(1, 3), st.integers(1, 4), st.integers(1, 4),
       st.booleans(), st.integers(0, 2**16))
def test_the_gradient_loop_equals_autograd_through_the_sequential_scan(paths, length, d, degree, order, sequences,
                                                                        seed):
    """Lengths around the segment sizes (1, 2, 4, 5, 9, 10, ... steps per segment) included."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((paths, length, d)) / 2
    words = sum(d ** m for m in range(1, degree + 1))
    g = rng.standard_normal((paths, length, words) if sequences else (paths, words))

    def inner(a):
        return anp.sum(anp.concatenate(kernel.scan(a, degree, order, "sequential", sequences), axis=-1) * g)
    expected = autograd.grad(inner)(x)
    assert np.allclose(clib.tensor_scan_vjp(x, g, degree, order, sequences), expected, rtol=1e-10, atol=1e-12)
    result32 = clib.tensor_scan_vjp(x.astype(np.float32), g.astype(np.float32), degree, order, sequences)
    assert result32.dtype == np.float32 and np.allclose(result32, expected, rtol=1e-3, atol=1e-4)


def test_signatures_agree_with_the_level_wise_scan_with_masks_and_every_prefix():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((13, 9, 3)).cumsum(axis=1)
    mask = (np.arange(9) < rng.integers(1, 10, size=13)[:, None]).astype(float)
    for options in ({}, {"mask": mask}, {"return_sequences": True, "mask": mask}):
        expected = signature(x, 4, method="levelwise", **options)
        assert np.allclose(signature(x, 4, method="compiled", **options), expected, rtol=1e-12, atol=1e-12)


def test_the_signature_of_a_straight_line_is_the_exponential_of_its_increment():
    """exp(v) = (v, v (x) v / 2, v (x) v (x) v / 6): whatever the number of steps the segment is cut into."""
    v = np.array([0.5, -1.0, 2.0])
    line = np.linspace(0, 1, 7)[None, :, None] * v
    expected = np.concatenate([v, np.outer(v, v).ravel() / 2, np.einsum("i,j,k->ijk", v, v, v).ravel() / 6])
    assert np.allclose(signature(line, 3, method="compiled")[0], expected, rtol=1e-13)


def test_autograd_gradients_of_gradients_equal_the_level_wise_scans():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 6, 2))

    def gradient_norm(method):
        def loss(a):
            return anp.sum(signature(a, 3, method=method) ** 3)
        return autograd.grad(lambda a: anp.sum(autograd.grad(loss)(a) ** 2))(x)
    assert np.allclose(gradient_norm("compiled"), gradient_norm("levelwise"), rtol=1e-10)


def test_torch_cpu_tensors_run_the_loop_with_first_and_second_derivatives_and_functorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x = torch.tensor(rng.standard_normal((4, 5, 2)), requires_grad=True)
    for options in ({"lift": "exp"}, {"return_sequences": True, "embedding_order": 2}):
        def feature_map(a):
            return flatten(seq2tens(a, 3, method="compiled", **options))
        assert torch.autograd.gradcheck(feature_map, (x,))
        assert torch.autograd.gradgradcheck(feature_map, (x,))
    functorch = torch.func.grad(lambda a: (signature(a, 3, method="compiled") ** 2).sum())(x.detach())
    expected = autograd.grad(lambda a: anp.sum(signature(a, 3, method="levelwise") ** 2))(x.detach().numpy())
    assert np.allclose(functorch.numpy(), expected, rtol=1e-12)
    x32 = x.detach().float().requires_grad_()
    (signature(x32, 3, method="compiled") ** 2).sum().backward()
    assert x32.grad.dtype == torch.float32 and np.allclose(x32.grad.numpy(), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")      # inside torch.func
def test_torch_func_transforms_equal_the_level_wise_scans():
    """vmap joins the mapped axis to the paths; jvp, and VJPs under a transform, go through the level-wise scan."""
    torch = pytest.importorskip("torch")
    x = torch.tensor(np.random.default_rng(10).standard_normal((9, 4, 2)))
    stacked = torch.stack([x, 2 * x, -x])

    def transforms(method):
        def feature_map(a):
            return flatten(seq2tens(a, 3, method=method))
        return (torch.func.vmap(feature_map)(stacked), torch.func.jacrev(lambda a: feature_map(a).sum(0))(x),
                torch.func.jacfwd(lambda a: feature_map(a).sum(0))(x),
                torch.func.vjp(feature_map, x)[1](torch.ones(9, 14, dtype=torch.float64))[0],
                torch.func.hessian(lambda a: feature_map(a).sum())(x[:2]),
                torch.func.vmap(torch.func.grad(lambda a: feature_map(a).pow(2).sum()))(stacked))
    for ours, expected in zip(transforms("compiled"), transforms("levelwise")):
        assert torch.allclose(ours, expected, rtol=1e-10, atol=1e-10)


def test_torch_vectorised_vjps_go_through_the_level_wise_scan():
    """``is_grads_batched`` (and ``jacobian(vectorize=True)``) hands the backward a batched gradient with no memory
    of its own: it takes the level-wise scan's VJP (it had failed: "Batching rule not implemented for
    aten::detach")."""
    torch = pytest.importorskip("torch")
    x = torch.tensor(np.random.default_rng(13).standard_normal((3, 4, 2)), requires_grad=True)

    def jacobian(method):
        y = signature(x, 2, method=method)
        return torch.autograd.grad(y, x, torch.eye(y.numel(), dtype=y.dtype).view(-1, *y.shape),
                                   is_grads_batched=True)[0]
    expected = jacobian("levelwise")
    assert expected.abs().max() > 0.1 and torch.allclose(jacobian("compiled"), expected, rtol=1e-12, atol=1e-12)


def test_torch_forward_mode_equals_the_level_wise_scans():
    torch = pytest.importorskip("torch")
    forward_ad = torch.autograd.forward_ad
    x, tangent = (torch.tensor(a) for a in np.random.default_rng(11).standard_normal((2, 8, 5, 2)))
    tangents = []
    for method in ("compiled", "levelwise"):
        with forward_ad.dual_level():
            tangents.append(forward_ad.unpack_dual(signature(forward_ad.make_dual(x, tangent), 3,
                                                             method=method)).tangent)
    assert torch.allclose(tangents[0], tangents[1], rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradcheck(lambda a: signature(a, 3, method="compiled"), (x.clone().requires_grad_(),),
                                    check_forward_ad=True)
    g = torch.Generator().manual_seed(12)
    y, tx, ty = (torch.randn(16, 5, 2, dtype=torch.float64, generator=g) for _ in range(3))

    def nested(method):                      # a jvp of a jvp: a custom jvp rule would lose the outer tangent
        inner = lambda a: torch.func.jvp(lambda b: signature(b, 3, method=method), (a,), (tx,))[1]  # noqa: E731
        return torch.func.jvp(inner, (y,), (ty,))[1]
    expected = nested("levelwise")
    assert expected.abs().max() > 1 and torch.allclose(nested("compiled"), expected, rtol=1e-12, atol=1e-12)


def test_auto_takes_the_loop_for_a_block_of_paths_and_the_level_wise_scan_for_fewer():
    assert choose_method((8, 100, 4), 4, False, 8, compiled=True) == "compiled"
    assert choose_method((8, 100, 4), 4, False, 4, compiled=True) == "levelwise"          # float32: 16 lanes
    assert choose_method((1, 4096, 2), 3, False, 8, compiled=True) == "levelwise"
    assert choose_method((1, 10**7, 2), 3, True, 8, compiled=True) == "compiled"       # level-wise would not fit
    assert choose_method((64, 100, 4), 4, False, 8, compiled=False) == "levelwise"
    x = np.zeros((16, 3, 2))
    assert runs_compiled(x) and runs_compiled(x.astype(np.float32)) and not runs_compiled(x.astype(np.float16))


def test_jax_arrays_and_a_machine_without_a_compiler_take_the_other_methods(monkeypatch):
    jnp = pytest.importorskip("jax.numpy")
    x = np.random.default_rng(6).standard_normal((16, 5, 2))
    assert not runs_compiled(jnp.asarray(x))
    with pytest.raises(ValueError, match="^method: 'compiled' cannot run here: .*got jax float(32|64) arrays"):
        signature(jnp.asarray(x), 2, method="compiled")
    monkeypatch.setattr(build, "load", lambda: (None, "no C compiler found (test)"))
    assert not runs_compiled(x)
    with pytest.raises(ValueError, match="^method: 'compiled' cannot run here: no C compiler found"):
        signature(x, 2, method="compiled")
    assert np.allclose(signature(x, 2), signature(x, 2, method="sequential"), rtol=1e-12)


def test_threads_give_the_same_numbers_as_one(monkeypatch):
    rng = np.random.default_rng(7)
    x, g = rng.standard_normal((37, 11, 3)), rng.standard_normal((37, 39))
    monkeypatch.setattr(clib, "THREADS", 1)
    one = clib.tensor_scan(x, 3, 3), clib.tensor_scan_vjp(x, g, 3, 3)
    monkeypatch.setattr(clib, "THREADS", 2)
    monkeypatch.setattr(clib, "WORK_PER_THREAD", 1)
    assert clib.threads(10) == 2
    two = clib.tensor_scan(x, 3, 3), clib.tensor_scan_vjp(x, g, 3, 3)
    assert all(np.array_equal(a, b) for a, b in zip(one, two))


def test_no_paths_no_steps_or_no_coordinates():
    for shape in ((0, 4, 2), (3, 0, 2), (3, 2, 0)):
        x, words = np.zeros(shape), 6 if shape[2] else 0
        assert clib.tensor_scan(x, 2, 2).shape == (shape[0], words) and not clib.tensor_scan(x, 2, 2).any()
        assert clib.tensor_scan(x, 2, 2, sequences=True).shape == shape[:2] + (words,)
        assert clib.tensor_scan_vjp(x, np.ones(shape[:2] + (words,)), 2, 2, sequences=True).shape == shape
        assert not clib.tensor_scan_vjp(x, np.ones((shape[0], words)), 2, 2).any()


def test_numpy_subclasses_are_taken_as_arrays(tmp_path):
    x = np.random.default_rng(8).standard_normal((9, 4, 2))
    mapped = np.memmap(tmp_path / "paths", dtype=np.float64, mode="w+", shape=x.shape)
    mapped[:] = x
    for paths in (mapped, np.ma.MaskedArray(x)):
        assert np.allclose(signature(paths, 3), signature(x, 3, method="levelwise"), rtol=1e-12)


def test_the_gradient_runs_on_as_many_threads_as_the_memory_limit_holds(monkeypatch):
    rng = np.random.default_rng(9)
    x, g = rng.standard_normal((40, 30, 2)), rng.standard_normal((40, 14))
    expected = clib.tensor_scan_vjp(x, g, 3, 3)
    needed = clib.tensor_scan_vjp_bytes(30, 2, 3)
    counts = []
    threads = clib.threads
    monkeypatch.setattr(clib, "threads", lambda *args, **options: counts.append(threads(*args, **options)) or counts[-1])
    monkeypatch.setattr(clib, "WORK_PER_THREAD", 1)
    monkeypatch.setattr(clib, "THREADS", 4)
    monkeypatch.setattr(kernels, "MEMORY_LIMIT", needed * 3 // 2)
    assert np.array_equal(clib.tensor_scan_vjp(x, g, 3, 3), expected) and counts == [1]
    monkeypatch.setattr(kernels, "MEMORY_LIMIT", needed * 3)
    assert np.array_equal(clib.tensor_scan_vjp(x, g, 3, 3), expected) and counts == [1, 3]
    monkeypatch.setattr(kernels, "MEMORY_LIMIT", needed // 2)
    with pytest.raises(kernels.MemoryLimitError, match="^x: the scan's gradient over 30 steps of levels 1..3 of d = 2"):
        clib.tensor_scan_vjp(x, g, 3, 3)


@pytest.mark.parametrize("call, error, message", [
    (lambda: clib.tensor_scan(np.zeros((2, 3)), 2, 2), TypeError, "^x: expected a float32 or float64 numpy array"),
    (lambda: clib.tensor_scan(np.zeros((2, 3, 1), int), 2, 2), TypeError, "^x: .* got ndarray int64 .2, 3, 1."),
    (lambda: clib.tensor_scan([[[1.0]]], 2, 2), TypeError, "^x: .* got list"),
    (lambda: clib.tensor_scan(np.zeros((2, 3, 1)), 0, 2), ValueError, "^degree: expected an int >= 1, got 0"),
    (lambda: clib.tensor_scan(np.zeros((2, 3, 1)), 2, 1.5), ValueError, "^order: expected an int >= 1, got 1.5"),
    (lambda: clib.tensor_scan_vjp(np.zeros((2, 3, 1)), np.zeros((2, 3)), 2, 2), ValueError,
     r"^gradient: expected shape \(2, 2\), got \(2, 3\)"),
    (lambda: clib.tensor_scan_vjp(np.zeros((2, 3, 1)), np.zeros((2, 2), np.float32), 2, 2), TypeError,
     "^gradient: expected a float64 numpy array, got ndarray float32"),
    (lambda: clib.tensor_scan(np.zeros((2, 3, 4)), 60, 60), kernels.MemoryLimitError,
     "^degree: levels 1..60 of d = 4 hold .* numbers a path"),
    (lambda: clib.tensor_scan(np.zeros((2, 3, 3)), 10**8, 1), kernels.MemoryLimitError,
     "^degree: levels 1..100000000 of d = 3 hold more than 2\\^128 numbers"),
    (lambda: clib.tensor_scan(np.zeros((2, 3, 1)), 2, 2, sequences="yes"), TypeError,
     "^sequences: expected True or False, got 'yes'"),
])
def test_bad_input_is_refused_naming_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()
