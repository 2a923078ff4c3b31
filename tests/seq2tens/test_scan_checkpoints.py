"""The checkpoints the C scans' forward keeps for their gradient (`clib.tensor_scan_keeping`,
`clib.low_rank_scan_keeping`): the forward is unchanged, the gradient from them is the gradient without them (bit for
bit: the same states in the same order) and reads them, numpy's autograd and torch hand them over, none are kept
past the memory limit or where no gradient is taken, and bad checkpoints are refused naming the argument."""
import threading

import autograd
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from product_interactions import kernels
from product_interactions.kernels.native import build, clib
from product_interactions.kernels.scans import seq2tens
from product_interactions.kernels.scans.checkpoints import Handoff
from product_interactions.kernels.scans.low_rank import low_rank, slots

pytestmark = pytest.mark.skipif(build.unavailable() is not None, reason=f"{build.unavailable()}")


class Signature:
    """The Seq2Tens scan at degree 3, lift order 2, as the tests below call both loops."""
    name, vjp_name = "tensor_scan", "tensor_scan_vjp"

    def __init__(self, x, seed):
        self.x = x

    def keeping(self, sequences, keep=True, openmp=False):
        return clib.tensor_scan_keeping(self.x, 3, 2, sequences, openmp, keep=keep)

    def vjp(self, gradient, sequences, checkpoints=None, openmp=False):
        return (clib.tensor_scan_vjp(self.x, gradient, 3, 2, sequences, openmp, checkpoints=checkpoints),)


class LowRank:
    """LS2T's functionals at degree 3, independent slots, width 4."""
    name, vjp_name = "low_rank_scan", "low_rank_scan_vjp"

    def __init__(self, x, seed):
        self.x, self.slots = x, slots(3, True)
        self.V = np.random.default_rng(seed).standard_normal((x.shape[2], 6, 4)).astype(x.dtype)

    def keeping(self, sequences, keep=True, openmp=False):
        return clib.low_rank_scan_keeping(self.x, self.V, *self.slots, sequences, openmp, keep=keep)

    def vjp(self, gradient, sequences, checkpoints=None, openmp=False):
        return clib.low_rank_scan_vjp(self.x, self.V, *self.slots, gradient, sequences, openmp,
                                      checkpoints=checkpoints)


LOOPS = [Signature, LowRank]


@settings(max_examples=30, deadline=None)
@given(loop=st.sampled_from(LOOPS), rows=st.integers(0, 40), length=st.integers(0, 30), d=st.integers(1, 3),
       sequences=st.booleans(), reverse=st.booleans(), dtype=st.sampled_from(["f4", "f8"]), threads=st.integers(1, 4),
       openmp=st.booleans())
def test_the_gradient_from_the_forward_s_checkpoints_is_the_gradient_without_them(loop, rows, length, d, sequences,
                                                                                  reverse, dtype, threads, openmp):
    clib.WORK_PER_THREAD, kept = 1, clib.WORK_PER_THREAD        # small work on every thread: chunks at offsets
    try:
        _compare(loop, rows, length, d, sequences, reverse, dtype, threads, openmp)
    finally:
        clib.WORK_PER_THREAD = kept


def _compare(loop, rows, length, d, sequences, reverse, dtype, threads, openmp):
    seed = rows + 50 * length
    x = np.random.default_rng(seed).standard_normal((rows, length, 2 * d))[:, ::-1 if reverse else 1, ::2]
    scan = loop(x.astype(dtype), seed)
    with clib.loop_threads(threads):
        result, checkpoints = scan.keeping(sequences, openmp=openmp)
        assert np.array_equal(result, scan.keeping(sequences, keep=False)[0])
        assert scan.keeping(sequences, keep=False)[1] is None and checkpoints.dtype == dtype
        gradient = np.random.default_rng(seed + 1).standard_normal(result.shape).astype(dtype)
        swept = scan.vjp(gradient, sequences, openmp=openmp)
        kept = scan.vjp(gradient, sequences, checkpoints, openmp=openmp)
    assert all(np.array_equal(a, b) for a, b in zip(swept, kept))


@pytest.mark.parametrize("loop", LOOPS)
def test_the_gradient_reads_the_checkpoints_it_is_given(loop):
    x = np.random.default_rng(3).standard_normal((5, 30, 2))
    scan = loop(x, 3)
    result, checkpoints = scan.keeping(False)
    assert checkpoints.shape[1] == 5                    # segments of 6 steps
    gradient = np.ones_like(result)
    right = scan.vjp(gradient, False, checkpoints)
    wrong = scan.vjp(gradient, False, checkpoints * 1.5)
    assert not any(np.allclose(a, b) for a, b in zip(right, wrong))


@pytest.mark.parametrize("loop", LOOPS)
def test_no_checkpoints_are_kept_past_the_memory_limit_and_the_gradient_is_the_same(loop, monkeypatch):
    x = np.random.default_rng(4).standard_normal((64, 100, 2))
    scan = loop(x, 4)
    result, checkpoints = scan.keeping(False)
    gradient = np.ones_like(result)
    expected = scan.vjp(gradient, False, checkpoints)
    monkeypatch.setattr(kernels, "MEMORY_LIMIT", checkpoints.nbytes - 1)
    assert scan.keeping(False)[1] is None
    assert all(np.array_equal(a, b) for a, b in zip(scan.vjp(gradient, False), expected))


def _spied(monkeypatch, loop):
    """Each call's checkpoints given to `loop`'s gradient loop (None where none were)."""
    given = []
    vjp = getattr(clib, loop.vjp_name)

    def spy(*arguments, checkpoints=None, **options):
        given.append(checkpoints)
        return vjp(*arguments, checkpoints=checkpoints, **options)
    monkeypatch.setattr(clib, loop.vjp_name, spy)
    return given


def _signature(x, method):
    return seq2tens.scan(x, 3, 2, method)[-1]


def _functionals(x, V, method):
    return low_rank(x, V, 3, True, method=method)


@pytest.mark.parametrize("loop", LOOPS)
def test_numpy_s_autograd_hands_the_checkpoints_to_the_gradient(loop, monkeypatch):
    rng = np.random.default_rng(5)
    x, V = rng.standard_normal((20, 40, 2)), rng.standard_normal((2, 6, 4))
    if loop is Signature:
        def f(x, method):
            return (_signature(x, method) ** 2).sum() + (_signature(x[:, ::-1], method) ** 3).sum()    # two scans
    else:
        def f(x, method):
            return (_functionals(x, V, method) ** 2).sum() + (_functionals(x[:, ::-1], V, method) ** 3).sum()
    expected = autograd.grad(f)(x, "levelwise" if loop is Signature else "blocks")
    given = _spied(monkeypatch, loop)
    np.testing.assert_allclose(autograd.grad(f)(x, "compiled"), expected, rtol=1e-10, atol=1e-10)
    assert len(given) == 2 and all(c is not None for c in given)


@pytest.mark.parametrize("loop", LOOPS)
def test_numpy_gradients_in_threads_at_once_each_take_their_own_checkpoints(loop, monkeypatch):
    rng = np.random.default_rng(6)
    xs, V = [rng.standard_normal((17, 30 + n, 2)) for n in range(4)], rng.standard_normal((2, 6, 4))

    def f(x, method):
        return (_signature(x, method) ** 2).sum() if loop is Signature else (_functionals(x, V, method) ** 2).sum()
    expected = [autograd.grad(f)(x, "levelwise" if loop is Signature else "blocks") for x in xs]
    given = _spied(monkeypatch, loop)
    found = [None] * len(xs)
    together, keep = threading.Barrier(len(xs)), Handoff.keep

    def kept_together(handoff, result, checkpoints):         # every thread keeps before any gradient takes
        kept = keep(handoff, result, checkpoints)
        together.wait(timeout=60)
        return kept
    monkeypatch.setattr(Handoff, "keep", kept_together)

    def run(n):
        for _ in range(3):
            found[n] = autograd.grad(f)(xs[n], "compiled")
    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(xs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for ours, reference in zip(found, expected):
        np.testing.assert_allclose(ours, reference, rtol=1e-10, atol=1e-10)
    assert len(given) == 12 and all(checkpoints is not None for checkpoints in given)


@pytest.mark.parametrize("loop", LOOPS)
def test_torch_hands_the_checkpoints_to_the_gradient_and_keeps_none_without_one(loop, monkeypatch):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x = torch.tensor(rng.standard_normal((20, 40, 2)), requires_grad=True)
    V = torch.tensor(rng.standard_normal((2, 6, 4)), requires_grad=True)

    def f(method):
        return _signature(x, method) if loop is Signature else _functionals(x, V, method)
    expected = torch.autograd.grad(f("levelwise" if loop is Signature else "blocks").pow(2).sum(), (x, V),
                                   allow_unused=True)
    given = _spied(monkeypatch, loop)
    kept = []
    keeping = getattr(clib, loop.name + "_keeping")
    monkeypatch.setattr(clib, loop.name + "_keeping", lambda *a, **k: kept.append(k.get("keep", True)) or
                        keeping(*a, **k))
    ours = torch.autograd.grad(f("compiled").pow(2).sum(), (x, V), allow_unused=True)
    for a, b in zip(ours, expected):
        assert (a is None) == (b is None) and (a is None or torch.allclose(a, b, rtol=1e-10, atol=1e-10))
    assert kept == [True] and len(given) == 1 and given[0] is not None
    with torch.no_grad():
        f("compiled")
    assert kept == [True, False]


@pytest.mark.parametrize("checkpoints, error, message", [
    ([[1.0]], TypeError, "checkpoints: expected a contiguous float64 numpy array, got list"),
    (np.zeros((1, 5, 39, 8), np.float32), TypeError, "checkpoints: expected a contiguous float64"),
    (np.zeros((1, 5, 39, 16))[..., ::2], TypeError, "checkpoints: expected a contiguous float64"),
    (np.zeros((1, 4, 39, 8)), ValueError, r"checkpoints: expected shape \(1, 5, 39, 8\) \(the forward's of the "
                                          r"same paths\), got \(1, 4, 39, 8\)")])
def test_bad_checkpoints_are_refused_naming_the_argument(checkpoints, error, message):
    x = np.zeros((3, 30, 3))
    with pytest.raises(error, match=message):
        clib.tensor_scan_vjp(x, np.zeros((3, 39)), 3, 2, checkpoints=checkpoints)
    with pytest.raises(error, match="checkpoints: expected"):
        clib.low_rank_scan_vjp(x, np.zeros((3, 2, 4)), [-1, 0], [0, 1], np.zeros((3, 2, 4)), checkpoints=checkpoints)
