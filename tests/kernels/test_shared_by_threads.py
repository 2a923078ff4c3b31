"""Kernels, plans and models shared between threads (a model served from several threads, kernels called from a
thread pool): the same results as one thread, and no error.  Their caches had been plain ordered dicts, and a
thread that evicted an entry another had just found failed it (KeyError, "dictionary changed size during
iteration"); the torch operator could be defined twice, a kernel built while another of its key died could be
lost to ``kernel_for``, and threads building their first kernels at once each compiled the C library.  The
caches are kept small here, so that they evict at every call, and threads switch every microsecond."""
from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pytest
from kernel_cases import builtin_algebras

from product_interactions import kernels
from product_interactions.kernels.arrays.bounded_cache import BoundedCache
from product_interactions.kernels.native import build
from product_interactions.kernels.plans import attend, plan
from product_interactions.kernels.products import kernel as kernel_module
from product_interactions.kernels.products import keys

THREADS = 8


@pytest.fixture(autouse=True)
def racing():
    """Threads switch every microsecond within the test."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def in_threads(work, count=THREADS):
    """`work(t)` on `count` threads at once; the errors they raised."""
    errors, start = [], threading.Barrier(count)

    def run(t):
        start.wait()
        try:
            work(t)
        except Exception as error:                     # noqa: BLE001  # every error is the finding
            errors.append(error)
    threads = [threading.Thread(target=run, args=(t,)) for t in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_a_bounded_cache_stays_bounded_and_consistent_under_threads():
    cache = BoundedCache(2)

    def work(t):
        for n in range(2000):
            key = (t + n) % 5
            assert cache.kept(key, lambda: key * 10) == key * 10
            assert cache.get(key) in (None, key * 10)
            assert len(cache.values()) <= 2
    assert in_threads(work) == [] and len(cache) <= 2


@pytest.mark.parametrize("library", ["numpy", "torch"])
def test_a_kernel_shared_by_threads_gives_each_its_own_result(library, monkeypatch):
    """Every call a new signature (shape, dtype) with one kept: each thread's results as one thread's."""
    monkeypatch.setattr(kernel_module, "CALLS_KEPT", 1)
    to = np.asarray if library == "numpy" else pytest.importorskip("torch").from_numpy
    A = builtin_algebras()["quaternions"]
    K = kernels.product(A)
    rng = np.random.default_rng(0)
    cases = [tuple(rng.standard_normal((rows, 4)).astype(dtype) for _ in range(2))
             for rows in (1, 2, 3, 5) for dtype in (np.float64, np.float32)]
    expected = [np.asarray(K(to(x), to(y))) for x, y in cases]

    def work(t):
        for n in range(300):
            case = (t + n) % len(cases)
            np.testing.assert_allclose(np.asarray(K(*map(to, cases[case]))), expected[case], rtol=1e-6)
    assert in_threads(work) == []


def test_models_served_from_threads_give_each_input_its_own_result(monkeypatch):
    """Attention and the tensor field network at several lengths, with one checked call, one factoring and one
    plan kept: each thread's outputs as one thread's."""
    from product_interactions.interactions.architectures import attention, model as model_module, tfn
    monkeypatch.setattr(plan, "CHECKS_KEPT", 1)
    monkeypatch.setattr(attend, "FACTORINGS_KEPT", 1)
    monkeypatch.setattr(model_module, "PLANS_KEPT", 1)
    rng = np.random.default_rng(1)
    models = [attention(d_model=4, heads=2), tfn(lmax=1, channels_in=2, channels_out=2)]
    inputs = {0: [(rng.standard_normal((2, n, 4)),) for n in (3, 4, 5)],
              1: [(rng.standard_normal((2, n, 3)), rng.standard_normal((2, n, 4, 2))) for n in (3, 4, 5)]}
    params = [m.init(seed=0) for m in models]
    expected = {(m, n): models[m].apply(params[m], *inputs[m][n]) for m in (0, 1) for n in range(3)}

    def work(t):
        for n in range(150):
            m, case = (t + n) % 2, (t + 2 * n) % 3
            np.testing.assert_allclose(models[m].apply(params[m], *inputs[m][case]), expected[m, case], rtol=1e-12)
    assert in_threads(work) == []


def test_kernels_built_and_dropped_by_threads_stay_found_by_their_key():
    """``kernel_for`` finds every live kernel while threads build and drop kernels of one key."""
    pytest.importorskip("torch")
    A = builtin_algebras()["complex_numbers"]

    def work(t):
        for _ in range(200):
            K = kernels.product(A, strategy="dense")
            assert keys.kernel_for(K.key) is not None         # a KeyError where it was lost
            del K
    assert in_threads(work) == []


def test_a_once_function_runs_once_when_threads_ask_at_once():
    """`build.load` is such a function: threads building their first kernels at once had each compiled the C
    library (eight compilations on two cores passed the time limit, and the loops were given up)."""
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.05)
        return len(calls)
    once = build._once(slow)
    results = []
    assert in_threads(lambda t: results.append(once())) == []
    assert calls == [1] and results == [1] * THREADS and once.__wrapped__ is slow


def test_a_kernel_stays_found_when_a_collection_drops_another_of_its_key_as_it_registers(monkeypatch):
    """A collection that falls on the new kernel's registration and frees an older kernel of its key (one that
    only the cycle collector frees) ran the older one's ``forget``, which dropped the list the new kernel then
    joined: ``kernel_for`` lost it."""
    import gc
    import weakref
    pytest.importorskip("torch")
    A = builtin_algebras()["complex_numbers"]
    older = kernels.product(A, strategy="dense")
    older.cycle = older
    del older

    def collecting(*arguments):
        gc.collect()
        return weakref.ref(*arguments)
    monkeypatch.setattr(keys, "weakref", type("Weakref", (), {"ref": staticmethod(collecting)}))
    newer = kernels.product(A, strategy="dense")
    monkeypatch.undo()
    assert keys.kernel_for(newer.key) is newer
