"""The compiled strategy and its C library: brute force on any layout, gradients, and what happens without a
compiler.  (Every built-in algebra, dtype and non-finite case is in test_strategies, which runs every strategy.)"""
import os

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_cases import operands, reference, relative_error

from product_interactions import kernels
from product_interactions.algebra import clebsch_gordan, clifford, diagonal, quaternions, tensor_product, translation
from product_interactions.kernels.native import build, clib
from product_interactions.kernels.products import select
from product_interactions.kernels.products.factor import Factor

pytestmark = pytest.mark.skipif(build.unavailable() is not None, reason=f"{build.unavailable()}")


def brute_force(lam, x, y):
    """z[r, k] = sum_ij lam[i, j, k] x[r, i] y[r, j], one row and one term at a time."""
    z = np.zeros((x.shape[0], lam.shape[2]))
    for r in range(x.shape[0]):
        for i, j, k in zip(*np.nonzero(lam)):
            z[r, k] += lam[i, j, k] * x[r, i] * y[r, j]
    return z


def laid_out(a: np.ndarray, layout: str) -> np.ndarray:
    """The same values (rows, d) in another memory layout."""
    if layout == "component-major":
        return np.ascontiguousarray(a.T).T
    if layout == "padded rows":
        padded = np.zeros((len(a), a.shape[1] + 3), a.dtype)
        padded[:, 1:-2] = a
        return padded[:, 1:-2]
    if layout == "reversed":
        return np.ascontiguousarray(a[::-1, ::-1])[::-1, ::-1]
    return a


# Sizes across the loop's tiles of 8 x 8 numbers and its blocks of 32 to 128 rows (narrow and wide), with and without
# remainders.
@settings(max_examples=40, deadline=None)
@given(st.integers(1, 19), st.integers(1, 19), st.integers(1, 19), st.integers(0, 270), st.integers(0, 2**16),
       st.sampled_from([np.float64, np.float32]),
       st.sampled_from(["row-major", "component-major", "padded rows", "reversed"]), st.booleans())
def test_the_loop_equals_brute_force_for_random_sparse_maps_and_any_row_count(d1, d2, d3, rows, seed, dtype, layout,
                                                                              wide):
    rng = np.random.default_rng(seed)
    lam = rng.standard_normal((d1, d2, d3)) * (rng.random((d1, d2, d3)) < 0.3)
    x, y = rng.standard_normal((rows, d1)), rng.standard_normal((rows, d2))
    terms = clib.Terms.from_table(np.argwhere(lam), lam[lam != 0], d3)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(clib, "WIDE_BYTES", clib.WIDE_BYTES if wide else 0)
        assert clib.block_rows(np.dtype(dtype), lam.shape) == (clib.WIDE_BLOCK if wide else clib.BLOCK)[np.dtype(dtype)]
        z = clib.sparse_product(terms, laid_out(x.astype(dtype), layout), laid_out(y.astype(dtype), "padded rows"),
                                (d1, d2, d3))
    assert z.dtype == dtype and z.shape == (rows, d3)
    assert np.allclose(z, brute_force(lam, x, y), atol=1e-4 if dtype == np.float32 else 1e-12)


def test_terms_in_any_order_within_an_output_group_by_runs_of_one_x_index():
    """The loop multiplies each run of one x index once: interleaved x indices make more, smaller groups, and the
    same numbers; an output without terms gets zero."""
    i, j, values = np.array([1, 0, 1, 1, 0]), np.array([0, 1, 1, 2, 0]), np.array([2.0, -1.0, 3.0, 0.5, 4.0])
    terms = clib.Terms(np.array([0, 3, 3, 5]), i, j, values)             # z_0: 3 terms, z_1: none, z_2: 2 terms
    group_starts, group_i, group_terms = terms.groups
    assert group_starts.tolist() == [0, 3, 3, 5] and group_i.tolist() == [1, 0, 1, 1, 0]
    assert group_terms.tolist() == [0, 1, 2, 3, 4, 5]
    sorted_terms = clib.Terms.from_table(np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0], [1, 2, 2], [0, 0, 2]]), values, 3)
    assert sorted_terms.groups[0].tolist() == [0, 2, 2, 4]                  # z_0: x_0 once, x_1 once (two terms)
    lam = np.zeros((2, 3, 3))
    for t, k in enumerate([0, 0, 0, 2, 2]):
        lam[i[t], j[t], k] += values[t]
    x, y = np.random.default_rng(0).standard_normal((2, 19, 3))
    assert np.allclose(clib.sparse_product(terms, x[:, :2], y, (2, 3, 3)), brute_force(lam, x[:, :2], y), atol=1e-12)


def test_the_loop_reads_any_strides_and_broadcast_rows():
    lam = np.asarray(clebsch_gordan(1).structure_constants(), dtype=float)
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((4, 37)), rng.standard_normal(4)        # x component-major, y one row for all
    terms = clib.Terms.from_table(np.argwhere(lam), lam[lam != 0], 4)
    z = clib.sparse_product(terms, x.T, np.broadcast_to(y, (37, 4)), (4, 4, 4))
    assert np.allclose(z, brute_force(lam, x.T, np.tile(y, (37, 1))), atol=1e-12)


@pytest.mark.parametrize("A", [tensor_product(diagonal(3), quaternions()), tensor_product(quaternions(), diagonal(3)),
                               tensor_product(diagonal(2), clebsch_gordan(1), diagonal(3))],
                         ids=lambda A: A.name)
def test_shared_axes_on_either_side_broadcast_batches_and_the_component_major_layout(A):
    names = tuple("identify" if f.dim in (2, 3) and f.name.startswith("diagonal") else "compiled" for f in A.factors)
    x, y = operands(A, batch=(5, 1), seed=2)
    y = y[:1, :]                                                       # batch (1, 1): broadcast against (5, 1)
    kernel = kernels.product(A, strategy=names)
    assert kernel.strategies == names
    assert relative_error(kernel(x, y), reference(A, x, y)) <= 1e-12
    moved = kernels.product(A, strategy=names, layout="component-major")
    count = len(A.factors)
    to_front = lambda a: np.moveaxis(a, range(a.ndim - count, a.ndim), range(count))  # noqa: E731
    assert relative_error(moved(to_front(x), to_front(y)), to_front(reference(A, x, y))) <= 1e-12


def test_gradients_through_the_loop_equal_those_through_dense():
    A = clebsch_gordan(2)
    x, y = operands(A, batch=(6,), seed=3)
    weights = np.random.default_rng(4).standard_normal(x.shape)
    gradients = {}
    for name in ("compiled", "dense"):
        kernel = kernels.product(A, strategy=name)
        loss = lambda a, b: anp.sum(anp.tanh(kernel(a, b)) * weights)  # noqa: E731
        gradients[name] = autograd.grad(loss, (0, 1))(x, y)
        assert kernel.transposed(0).strategies == (name,)              # the VJPs run the same strategy
    for ours, theirs in zip(gradients["compiled"], gradients["dense"]):
        assert relative_error(ours, theirs) <= 1e-12


def test_auto_takes_the_loop_for_sparse_products_and_keeps_the_structured_strategies():
    assert kernels.product(clebsch_gordan(4)).strategies_for(4096) == ("compiled",)
    assert kernels.product(clifford(3, 0, 1)).strategies_for(4096) == ("compiled",)
    assert kernels.product(diagonal(16)).strategies_for(4096) == ("identify",)
    assert kernels.product(translation(512)).strategies_for(4096) == ("fft",)


def test_explain_names_the_loop_and_its_terms():
    text = kernels.product(tensor_product(diagonal(2), clebsch_gordan(2)), strategy=("identify", "compiled")).explain()
    assert "factor 1: clebsch_gordan(2), 9 x 9 -> 9, 137 nonzeros" in text
    rows = clib.WIDE_BLOCK[np.dtype(np.float64)]
    assert f"compiled on axis -1: one C loop over the 137 nonzero terms in blocks of {rows} float64 rows" in text


def test_the_loop_is_never_chosen_around_what_it_cannot_call():
    A = tensor_product(quaternions(), clebsch_gordan(1))               # nothing elementwise inside either
    assert "compiled" not in kernels.product(A).strategies or kernels.product(A).strategies.count("compiled") == 1
    with pytest.raises(ValueError, match="only when every other factor is a shared"):
        kernels.product(A, strategy=("compiled", "compiled"))


def test_without_a_compiler_the_strategy_does_not_apply_and_auto_does_without_it(monkeypatch):
    monkeypatch.setattr(build, "load", lambda: (None, "no C compiler found (test)"))
    factor = Factor.from_algebra(clebsch_gordan(2))
    assert "compiled" not in select.applicable(factor)
    with pytest.raises(ValueError, match=r"'compiled' cannot represent factor 0: no C compiler found \(test\)"):
        kernels.product(clebsch_gordan(2), strategy="compiled")
    kernel = kernels.product(clebsch_gordan(2))
    assert kernel.strategies != ("compiled",)
    x, y = operands(clebsch_gordan(2), batch=(3,))
    assert relative_error(kernel(x, y), reference(clebsch_gordan(2), x, y)) <= 1e-12


@pytest.mark.parametrize("A, names", [(clebsch_gordan(2), "compiled"),
                                      (tensor_product(quaternions(), diagonal(3)), ("compiled", "identify"))],
                         ids=["clebsch_gordan(2)", "quaternions ⊗ diagonal(3)"])
def test_torch_cpu_tensors_run_the_loop_with_first_and_second_derivatives(A, names):
    torch = pytest.importorskip("torch")
    kernel = kernels.product(A, strategy=names)
    x, y = operands(A, batch=(4, 1), seed=5)
    y = y[:1].swapaxes(0, 1)                                              # batch (1, 1) against (4, 1)
    xt, yt = (torch.tensor(a, requires_grad=True) for a in (x, y))
    z = kernel(xt, yt)
    assert isinstance(z, torch.Tensor) and z.dtype == torch.float64
    assert relative_error(z.detach().numpy(), reference(A, x, y)) <= 1e-12
    (chosen, _), = kernel._calls.values()
    assert chosen == (names,) if isinstance(names, str) else chosen == names   # the loop ran, not a substitute
    assert torch.autograd.gradcheck(kernel, (xt, yt))
    assert torch.autograd.gradgradcheck(kernel, (xt, yt))
    assert kernel(xt.float(), yt.float()).dtype == torch.float32


def test_jax_arrays_take_a_term_by_term_strategy_in_its_place():
    jnp = pytest.importorskip("jax.numpy")
    A = clebsch_gordan(2)
    kernel = kernels.product(A, strategy="compiled")
    x, y = operands(A, batch=(3,), seed=6)
    z = kernel(jnp.asarray(x), jnp.asarray(y))
    assert relative_error(np.asarray(z), reference(A, x, y)) <= 1e-12
    (chosen, _), = kernel._calls.values()
    assert chosen == ("scatter",)                      # CG(2) has pairs with two terms: not gather


def test_large_calls_split_their_rows_over_threads_with_the_same_numbers(monkeypatch):
    A = clebsch_gordan(2)
    factor = Factor.from_algebra(A)
    terms = clib.Terms.from_table(factor.indices, factor.values, A.dim)
    x, y = operands(A, batch=(1001,), seed=7)                               # not a whole number of blocks
    monkeypatch.setattr(clib, "WORK_PER_THREAD", 1000)
    monkeypatch.setattr(clib, "THREADS", 1)
    whole = clib.sparse_product(terms, x, y, factor.shape)
    monkeypatch.setattr(clib, "THREADS", 3)
    assert clib.threads(factor.nnz * 1001) == 3
    assert np.array_equal(clib.sparse_product(terms, x, y, factor.shape), whole)
    assert relative_error(whole, reference(A, x, y)) <= 1e-12
    assert clib.threads(10) == 1                                              # small calls run whole
    for bad in (0, -1, 2.0, True, "2"):
        monkeypatch.setattr(clib, "THREADS", bad)
        with pytest.raises(ValueError, match="kernels.native.clib.THREADS: expected None or an int >= 1"):
            clib.threads(10)


def test_working_buffers_start_on_a_cache_line():
    for dtype in clib.BLOCK:
        for numbers in (1, 7, 1000):
            buffers = [clib._buffer(numbers, dtype) for _ in range(20)]       # numpy aligns less on its own
            assert all(b.ctypes.data % clib.ALIGNMENT == 0 and b.shape == (numbers,) and b.dtype == dtype
                       for b in buffers)


def test_the_loop_reads_nothing_of_its_working_buffer_before_writing_it():
    A = clebsch_gordan(2)
    factor = Factor.from_algebra(A)
    terms = clib.Terms.from_table(factor.indices, factor.values, A.dim)
    for dtype, block in ((dtype, table[dtype]) for dtype in clib.BLOCK for table in (clib.BLOCK, clib.WIDE_BLOCK)):
        x, y = (a.astype(dtype) for a in operands(A, batch=(70,), seed=13))      # a last, partial block
        expected = clib.sparse_product(terms, x, y, factor.shape)
        for filler in (np.nan, np.inf, 1e-310):                            # what an old buffer may hold
            z, work = np.empty((70, A.dim), dtype), np.full(3 * A.dim * block, filler, dtype)
            build.function(f"product_{dtype.name}_{block}")(
                1, 0, 70, A.dim, A.dim, A.dim, x.ctypes.data, A.dim, 1, y.ctypes.data, A.dim, 1, z.ctypes.data,
                *terms.addresses(dtype, block), work.ctypes.data)
            assert np.array_equal(z, expected)
            assert not np.isnan(work[:2 * A.dim * block]).any()                # the partial block's lanes zeroed


@pytest.mark.parametrize("openmp", [False, True])
def test_callers_on_many_python_threads_share_the_pool_and_get_their_own_numbers(monkeypatch, openmp):
    import concurrent.futures
    A = clebsch_gordan(4)
    factor = Factor.from_algebra(A)
    terms = clib.Terms.from_table(factor.indices, factor.values, A.dim)
    monkeypatch.setattr(clib, "THREADS", 2)
    cases = [operands(A, batch=(rows,), seed=rows) for rows in (1, 63, 64, 65, 200, 1000, 4097, 3)]
    expected = [reference(A, x, y) for x, y in cases]
    with concurrent.futures.ThreadPoolExecutor(4) as callers:              # jobs overlap: later callers run alone
        for _ in range(3):
            found = list(callers.map(lambda case: clib.sparse_product(terms, *case, factor.shape, openmp), cases))
            assert all(np.allclose(z, e, atol=1e-11) for z, e in zip(found, expected))


def test_threads_asking_for_a_fresh_terms_addresses_at_once_all_get_the_kept_arrays():
    """The scaled index arrays are made on first use: racing threads had each stored their own, and the loser's
    were freed while its loop read them (a segmentation fault, now and then, in the test above)."""
    import sys
    import threading
    A = clebsch_gordan(2)
    factor = Factor.from_algebra(A)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(20):
            terms = clib.Terms.from_table(factor.indices, factor.values, A.dim)
            barrier, found = threading.Barrier(8), []
            callers = [threading.Thread(target=lambda: (barrier.wait(), found.append(
                terms.addresses(np.dtype(np.float64), 64)))) for _ in range(8)]
            for caller in callers:
                caller.start()
            for caller in callers:
                caller.join()
            assert set(found) == {terms._addresses[np.dtype(np.float64), 64][0]}
    finally:
        sys.setswitchinterval(interval)


def test_inside_an_fft_level_the_loop_multiplies_complex_spectra_on_numpy_and_torch():
    A = tensor_product(translation(16), clebsch_gordan(2))
    kernel = kernels.product(A, strategy=("fft", "compiled"))
    x, y = operands(A, batch=(3,), seed=8)
    expected = reference(A, x, y)
    assert relative_error(kernel(x, y), expected) <= 1e-12
    torch = pytest.importorskip("torch")
    xt = torch.tensor(x, requires_grad=True)
    assert relative_error(kernel(xt, torch.tensor(y)).detach().numpy(), expected) <= 1e-12
    assert torch.autograd.gradcheck(lambda a: kernel(a, torch.tensor(y)), (xt,))
    jax_rates = pytest.importorskip("product_interactions.kernels.arrays.registry").ENGINES["jax"].rates
    assert select.nested_cost(kernel.factors, ("fft", "compiled")).compiled > 0           # priced, not free
    assert select.resolve("auto", kernel.factors, rates=jax_rates).count("compiled") == 0


def test_a_copied_or_pickled_kernel_runs_on_its_own_arrays():
    import copy
    import gc
    import pickle
    A = clebsch_gordan(2)
    x, y = operands(A, batch=(5,), seed=9)
    kernel = kernels.product(A, strategy="compiled")
    expected = kernel(x, y)
    copies = [copy.deepcopy(kernel), pickle.loads(pickle.dumps(kernel))]
    del kernel
    gc.collect()
    for other in copies:
        assert np.array_equal(other(x, y), expected)


def test_a_process_forked_after_a_threaded_call_runs_the_loop(monkeypatch):
    import time
    A = clebsch_gordan(2)
    factor = Factor.from_algebra(A)
    terms = clib.Terms.from_table(factor.indices, factor.values, A.dim)
    x, y = operands(A, batch=(200,), seed=10)
    monkeypatch.setattr(clib, "WORK_PER_THREAD", 100)
    monkeypatch.setattr(clib, "THREADS", 2)
    expected = clib.sparse_product(terms, x, y, factor.shape)                # the pool now has threads
    child = os.fork()
    if child == 0:                                                           # pragma: no cover - the child
        os._exit(0 if np.array_equal(clib.sparse_product(terms, x, y, factor.shape), expected) else 1)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(child, 9)
    pytest.fail("the forked child hung in the loop")


def test_torch_dtypes_the_loop_cannot_take_and_functorch_transforms():
    torch = pytest.importorskip("torch")
    from product_interactions.kernels.arrays import ENGINES
    kernel = kernels.product(clebsch_gordan(4))
    x = torch.randn(4096, 25, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    for dtype in (torch.bfloat16, torch.float16):
        assert kernel(x.to(dtype), x.to(dtype)).dtype == dtype
    small = kernels.product(clebsch_gordan(2), strategy="compiled")
    a = torch.randn(7, 9, dtype=torch.float64)
    grad = torch.func.grad(lambda v: small(v, v).sum())(a)
    a.requires_grad_(True)
    small(a, a).sum().backward()
    assert torch.allclose(grad, a.grad)
    off_cpu = kernel.strategies_for(4096, ENGINES["torch"], 8, compiled=False)   # as on a GPU: priced without it
    assert "compiled" not in off_cpu


def test_on_torch_the_loop_reads_views_in_place_and_promotes_operands_of_two_dtypes():
    torch = pytest.importorskip("torch")
    A = clebsch_gordan(2)
    loop = kernels.product(A, strategy="compiled")
    g = torch.Generator().manual_seed(14)
    wide = torch.randn(A.dim, 40, dtype=torch.float64, generator=g)
    x, y = wide.T[3:23:2], wide[:, 5:15].T                               # strided views, with offsets
    views = {"transposed slices": (x, y), "broadcast rows": (x, y[:1].expand(10, A.dim)),
             "a negated view": (torch._neg_view(x), y),
             "batch (2, 5)": (x.reshape(2, 5, A.dim), y.reshape(2, 5, A.dim))}
    for name, (a, b) in views.items():
        expected = reference(A, a.resolve_neg().numpy(), b.numpy())
        assert relative_error(loop(a, b).numpy(), expected) <= 1e-12, name
    for low, high in ((torch.float32, torch.float64), (torch.bfloat16, torch.float32), (torch.float32, torch.float16)):
        z = loop(x.to(low), y.to(high))
        assert z.dtype == torch.promote_types(low, high)
        exact = reference(A, x.to(low).double().numpy(), y.to(high).double().numpy())
        assert relative_error(z.double().numpy(), exact) <= 1e-6
    zero = torch._efficientzerotensor((10, A.dim), dtype=torch.float64)   # no memory to read
    with pytest.raises(TypeError, match="without any"):
        loop(zero, y)


def test_torch_transforms_and_forward_mode_through_the_loop_equal_those_through_dense(monkeypatch):
    torch = pytest.importorskip("torch")
    import torch.autograd.forward_ad as forward_ad
    from product_interactions.kernels.products.strategies import codegen
    A = clebsch_gordan(2)
    loop, dense = kernels.product(A, strategy="compiled"), kernels.product(A, strategy="dense")
    g = torch.Generator().manual_seed(12)
    x, y, tx, ty = (torch.randn(5, A.dim, dtype=torch.float64, generator=g) for _ in range(4))

    def nested_jvp(kernel):                      # a jvp of a jvp: torch runs custom jvp rules with outer levels off
        inner = lambda a: torch.func.jvp(lambda v: kernel(v, v * v), (a,), (tx,))[1]     # noqa: E731
        return torch.func.jvp(inner, (x,), (ty,))[1]
    assert torch.allclose(nested_jvp(loop), nested_jvp(dense))
    assert torch.allclose(torch.func.hessian(lambda a: loop(a, a).sum())(x[0]),   # no constant kept from the jvps
                          torch.func.hessian(lambda a: dense(a, a).sum())(x[0]))
    with forward_ad.dual_level():
        tangent = forward_ad.unpack_dual(loop(forward_ad.make_dual(x, tx), y)).tangent
    assert torch.allclose(tangent, dense(tx, y))
    import pickle
    assert torch.equal(pickle.loads(pickle.dumps(loop))(x, y), loop(x, y))   # its substitute is made again on use
    H = quaternions()
    a, b = x[:, :4].contiguous(), y[:, :4].contiguous()
    assert torch.allclose(torch.func.vmap(kernels.product(H, strategy="compiled"))(a, b),
                          kernels.product(H, strategy="dense")(a, b))
    for kernel in (loop, kernels.product(A, strategy="compiled")):    # with a substitute, then the loop's own rules
        assert torch.allclose(torch.func.vmap(kernel, in_dims=(1, None))(x.T, y[0]), dense(x, y[0].expand(5, A.dim)))
        assert torch.allclose(torch.func.vmap(kernel)(x, y), dense(x, y))
        assert torch.allclose(torch.func.jacrev(lambda a: kernel(a, a).sum(0))(x[0]),
                              torch.func.jacrev(lambda a: dense(a, a).sum(0))(x[0]))
        monkeypatch.setattr(codegen, "MAX_TERMS", 0)          # the next kernel's level has no substitute
    # Without a substitute, forward mode raises rather than answer (a custom jvp rule would drop outer tangents).
    bare = kernels.product(A, strategy="compiled")
    with forward_ad.dual_level(), pytest.raises(NotImplementedError, match="jvp"):
        bare(forward_ad.make_dual(x, tx), y)
    with pytest.raises(NotImplementedError, match="jvp"):
        torch.func.jvp(lambda v: bare(v, y), (x,), (tx,))
    a = x.clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda v: loop(v, y), (a,))
    assert torch.autograd.gradgradcheck(lambda v: loop(v, v), (a,))
    with torch.no_grad():                                                 # untracked: the loop without autograd
        z = loop(a, y)
    assert not z.requires_grad and torch.equal(z, loop(x, y)) and torch.allclose(z, dense(x, y))
    assert loop(a, y).requires_grad and torch.equal(loop(a, y).detach(), z)
    with torch.inference_mode():
        assert torch.equal(loop(-x, y), -z)                               # a negated view is read as its values


def test_the_loop_skips_its_autograd_function_only_where_nothing_tracks_the_tensors(monkeypatch):
    torch = pytest.importorskip("torch")
    import torch.autograd.forward_ad as forward_ad
    from product_interactions.kernels.arrays.torch_engine import _needs_grad, _state, _transformed
    x, w = torch.ones(3), torch.ones(3, requires_grad=True)
    assert not _needs_grad(x) and _needs_grad(x, w) and not _transformed()
    with torch.no_grad():
        assert not _needs_grad(x, w)
    with forward_ad.dual_level():
        assert _transformed()
    seen = []
    torch.func.vmap(lambda a: seen.append(_transformed()) or a)(torch.ones(2, 3))
    torch.func.grad(lambda a: seen.append(_transformed()) or a.sum())(torch.ones(3))
    assert seen == [True, True]
    loop = kernels.product(clebsch_gordan(1), strategy="compiled")
    assert loop(x[:1].expand(2, 4), x[:1].expand(2, 4)).grad_fn is None
    assert type(loop(w[:1].expand(2, 4), x[:1].expand(2, 4)).grad_fn).__name__ == "TrackedLoopBackward"
    monkeypatch.delattr(torch._C, "_are_functorch_transforms_active")    # a torch without that private state
    _state.cache_clear()                                                  # (looked up once per process)
    try:
        assert _transformed()
    finally:
        _state.cache_clear()


def test_the_loop_refuses_what_it_would_read_out_of_bounds_or_in_the_wrong_type():
    terms = clib.Terms.from_table(np.array([[0, 1, 0]]), np.array([2.0]), 1)
    good = np.ones((3, 2))
    with pytest.raises(ValueError, match=r"x, y: expected one dtype and one row count, got float32 \(3, 2\)"):
        clib.sparse_product(terms, good.astype(np.float32), good, (2, 2, 1))
    with pytest.raises(ValueError, match="one row count"):
        clib.sparse_product(terms, good, good[:1], (2, 2, 1))
    with pytest.raises(TypeError,
                       match="x: expected a 2-D float32 or float64 numpy array of 2 columns, got ndarray int64"):
        clib.sparse_product(terms, good.astype(int), good, (2, 2, 1))
    with pytest.raises(ValueError,
                       match=r"terms: expected indices within shape \(1, 1, 1\), got terms reaching \(1, 2\)"):
        clib.sparse_product(terms, good[:, :1], good[:, :1], (1, 1, 1))
    with pytest.raises(ValueError, match="Terms: expected non-negative indices"):
        clib.Terms(np.array([0, 1]), np.array([-1]), np.array([0]), np.array([1.0]))
    with pytest.raises(ValueError, match=r"Terms: expected i of one axis, got shape \(2, 1\)"):
        clib.Terms(np.array([0, 2]), np.array([[0], [1]]), np.array([0, 1]), np.array([1.0, 2.0]))
    with pytest.raises(TypeError):
        clib.BLOCK[np.dtype(np.float64)] = 1                              # read-only: the C source fixed it


@pytest.mark.parametrize("value, expected", [("1", 1), ("64", None), ("two", None), ("0", None)])
def test_the_loops_take_omp_num_threads_within_the_cores_this_process_may_use(monkeypatch, value, expected):
    available = len(os.sched_getaffinity(0))
    monkeypatch.setenv("OMP_NUM_THREADS", value)
    clib.cores.cache_clear()
    try:
        assert clib.cores() == (expected or available)
        monkeypatch.setattr(clib, "THREADS", None)
        assert clib.threads(10**9) == (expected or available)
    finally:
        clib.cores.cache_clear()


#: Run in a fresh process: the product loop built for vectors of argv[1] bytes, against brute force.
AT_WIDTH = """
import sys
import numpy as np
from types import MappingProxyType
from product_interactions.kernels.native import clib, csource
width = int(sys.argv[1])
csource.VECTOR_BYTES = MappingProxyType({**csource.VECTOR_BYTES, "product": width})
csource.BLOCK = clib.BLOCK = csource.rows_per_block(width)
csource.WIDE_BLOCK = clib.WIDE_BLOCK = MappingProxyType({d: 2 * rows for d, rows in csource.BLOCK.items()})
from product_interactions import kernels
from product_interactions.algebra import clebsch_gordan, translation
rng = np.random.default_rng(width)
for A in (clebsch_gordan(2), translation(40)):
    lam = A.structure_constants()
    for dtype, tolerance in ((np.float64, 1e-12), (np.float32, 1e-5)):
        for rows in (1, 3 * clib.BLOCK[np.dtype(dtype)] + 5):             # a partial block, and several
            x, y = (rng.standard_normal((rows, A.dim)).astype(dtype) for _ in range(2))
            z = kernels.product(A, strategy="compiled", dtype=dtype)(x, y)
            expected = np.einsum("ijk,ri,rj->rk", lam, x.astype(float), y.astype(float))
            assert np.abs(z - expected).max() <= tolerance * np.abs(expected).max(), (A.name, dtype, rows)
print("blocks", dict((d.name, r) for d, r in clib.BLOCK.items()))
"""


@pytest.mark.parametrize("width", [16, 32, 64])
def test_the_loop_is_right_at_every_vector_width_a_cpu_may_get(tmp_path, width):
    """SSE and NEON (16 bytes), AVX (32), AVX-512 (64): the loop is built for the CPU's own width
    (`csource.VECTOR_BYTES`), and GCC's vector extensions emulate the others, so each is checked here."""
    import subprocess
    import sys
    environment = {**os.environ, "PRODUCT_INTERACTIONS_CACHE": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", AT_WIDTH, str(width)], capture_output=True, text=True,
                          env=environment, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"'float64': {width // 2}, 'float32': {width}" in done.stdout


def test_the_vector_width_is_the_cpu_s_widest_register():
    import platform
    from product_interactions.kernels.native import csource
    assert csource.register_bytes("flags\t\t: fpu sse2 avx avx2 fma avx512f avx512bw", "x86_64") == 64
    assert csource.register_bytes("flags\t\t: fpu sse2 avx avx2 fma", "x86_64") == 32
    assert csource.register_bytes("flags\t\t: fpu sse2 sse4_2", "x86_64") == 16
    assert csource.register_bytes("Features\t: fp asimd evtstrm", "aarch64") == 16
    assert csource.register_bytes("x86_64", "x86_64") == 32               # no flags listed: AVX, as nearly all have
    assert csource.register_bytes("arm", "arm64") == 16
    assert csource.VECTOR_BYTES["product"] == csource.register_bytes(csource.cpu(), platform.machine())
    assert all(rows * dtype.itemsize == 4 * csource.VECTOR_BYTES["product"] for dtype, rows in clib.BLOCK.items())
