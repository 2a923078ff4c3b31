"""The memory guard refuses before allocating, names the bytes and a strategy that avoids them."""
import dataclasses
import itertools
import math
import re

import numpy as np
import pytest
from kernel_cases import (SLACK_BYTES, STRATEGY_NAMES, builtin_algebras, held_bytes, operands, reference,
                          relative_error)

from product_interactions import kernels
from product_interactions.algebra import (clebsch_gordan, clifford, diagonal, quaternions, tensor_algebra,
                                          tensor_product, translation)
from product_interactions.kernels.arrays.numpy_engine import NUMPY
from product_interactions.kernels.products import select
from product_interactions.kernels.products.factor import Factor


def recorded_chunks(patch, kernel):
    """The rows of each chunk `kernel`'s program is called on from now on, recorded through `patch` (a
    monkeypatch; calls of inner levels of the same class are not chunks)."""
    rows = []
    program = type(kernel.program)
    patch.setattr(program, "__call__", lambda self, a, b, real=program.__call__: (
        self is kernel.program and rows.append(a.shape[0])) or real(self, a, b))
    return rows


@pytest.fixture
def limit(monkeypatch):
    def set_limit(value):
        monkeypatch.setattr(kernels, "MEMORY_LIMIT", value)
    return set_limit


def test_default_limit_is_two_gibibytes():
    assert kernels.MEMORY_LIMIT == 2 * 2**30


def test_dense_constants_over_the_limit_are_refused_before_allocation(limit, monkeypatch):
    A = clifford(6)                                   # dense lam: 64**3 float64 = 2 MiB
    kernel = kernels.product(A, strategy="dense")
    x, y = operands(A, batch=(4,))
    allocations = []
    monkeypatch.setattr(Factor, "dense", lambda *args: allocations.append("lam"))
    monkeypatch.setattr(type(kernel.program), "__call__", lambda *args: allocations.append("intermediates"))
    for allocate in ("empty", "zeros"):
        real = getattr(np, allocate)
        monkeypatch.setattr(np, allocate, lambda shape, *args, real=real, **kw: allocations.append(shape)
                            if np.shape(shape) and tuple(np.atleast_1d(shape)) == x.shape else real(shape, *args, **kw))
    limit(1_000_000)
    with pytest.raises(MemoryError) as raised:
        kernel(x, y)
    assert allocations == []
    message = str(raised.value)
    assert isinstance(raised.value, kernels.MemoryLimitError) and isinstance(raised.value, ValueError)
    needed = int(re.search(r"needs at least .*?\(([\d,]+) bytes\)", message).group(1).replace(",", ""))
    assert needed >= 64**3 * 8 and "MEMORY_LIMIT = 976.6 KiB (1,000,000 bytes)" in message
    assert "these avoid it: " in message and "strategy='gather' needs" in message and "strategy='codegen' needs" in message


def test_an_algebra_whose_elements_would_not_fit_is_refused_before_any_array_is_built(limit, monkeypatch):
    built = []
    real = np.ones
    monkeypatch.setattr(np, "ones", lambda *a, **k: built.append(a) or real(*a, **k))
    for A in (diagonal(10**12), tensor_product(translation(3), diagonal(10**12))):
        with pytest.raises(kernels.MemoryLimitError, match=re.escape(
                f"A: {A.name} has 1,000,000,000,000 components on a side (7.3 TiB (8,000,000,000,000 bytes) as "
                f"numbers), more than kernels.MEMORY_LIMIT = 2.0 GiB")):
            kernels.product(A)
    limit(8 * 4096 - 1)                                   # the limit in force when the kernel is built
    with pytest.raises(kernels.MemoryLimitError, match=r"factors\[0\]: lam has 4,096 components"):
        kernels.bilinear(np.zeros((4096, 1, 1)))
    assert kernels.product(translation(4096), dtype=np.float32).dtype == np.float32      # 16 KiB of float32
    assert built == [] or all(max(np.atleast_1d(a[0])) <= 4096 for a in built)


def test_a_batch_is_cut_into_chunks_that_fit(limit):
    A = quaternions()
    x, y = operands(A, batch=(5000,))
    kernel = kernels.product(A, strategy="codegen")
    per_row = kernel.program.cost.temporary * 8
    limit(int(per_row * 100))                         # about a hundred rows of temporaries at a time
    assert relative_error(kernel(x, y), reference(A, x, y)) <= 1e-12
    limit(1)                                          # not even one row of any strategy fits
    with pytest.raises(kernels.MemoryLimitError, match="no strategy fits"):
        kernel(x, y)


@pytest.mark.parametrize("value", ["lots", 0, -1, 2.5, True, None])
def test_a_limit_that_is_not_a_positive_int_is_refused_and_nothing_changes(limit, value):
    limit(10**9)
    with pytest.raises(TypeError, match="kernels.MEMORY_LIMIT: expected a positive int"):
        kernels.MEMORY_LIMIT = value
    assert kernels.MEMORY_LIMIT == 10**9


def test_a_new_limit_takes_effect_at_the_next_call(limit):
    A = quaternions()
    kernel = kernels.product(A, strategy="codegen")
    x, y = operands(A)
    limit(1)
    with pytest.raises(kernels.MemoryLimitError):
        kernel(x, y)
    limit(2 * 2**30)
    assert relative_error(kernel(x, y), reference(A, x, y)) <= 1e-12


@pytest.mark.parametrize("library", ["torch", "jax"])
def test_torch_and_jax_batches_are_cut_to_the_limit_and_still_differentiate(limit, monkeypatch, library):
    module = pytest.importorskip(library)
    import autograd
    from product_interactions.kernels.arrays import ENGINES
    engine = ENGINES[library]
    A = quaternions()
    x, y = operands(A, batch=(500,))
    kernel = kernels.product(A, strategy="codegen")
    expected_gradient = autograd.grad(lambda a: kernel(a, y).sum())(x)
    limit(int(kernel.program.cost.temporary * 8 * 100))      # about a hundred rows at a time: five chunks
    rows = recorded_chunks(monkeypatch, kernel)
    like = engine.xp.zeros((), dtype=engine.native_dtype(np.float64))
    tx, ty = engine.convert(x, like), engine.convert(y, like)
    assert relative_error(engine.value(kernel(tx, ty)), reference(A, x, y)) <= 1e-12
    assert len(rows) >= 5 and sum(rows) == 500
    assert len(rows) == select.memory_chunks(kernel.program.cost, 500, 8)     # the chunks auto prices
    if library == "torch":
        tx.requires_grad_()
        kernel(tx, ty).sum().backward()
        gradient = tx.grad.numpy()
    else:
        gradient = np.asarray(module.grad(lambda a: kernel(a, ty).sum())(tx))
    assert np.allclose(gradient, expected_gradient, rtol=1e-12, atol=1e-12)


MEASURED_ROWS = 4096                 # batch rows of the measured calls: what they hold per row dwarfs SLACK_BYTES


@pytest.mark.parametrize("library", ["numpy", "torch"])
@pytest.mark.parametrize("name", list(builtin_algebras()))
def test_the_temporaries_a_program_prices_bound_what_it_holds(name, library):
    """The memory guard trusts each program's cost: its temporaries and result per batch row, times the rows, must
    bound the bytes a call really holds at its peak, for every choice of strategy per factor, on numpy arrays and
    torch tensors; on numpy they overstate them at most 4 times (they include the copies that operands in another
    layout need), but for a lone dense factor, which holds blocks of a fixed size (`kernels.products.leaf`)."""
    A = builtin_algebras()[name]
    x, y = operands(A, batch=(MEASURED_ROWS,))
    if library == "torch":
        torch = pytest.importorskip("torch")
        x, y = torch.tensor(x), torch.tensor(y)
    checked = 0
    for names in itertools.product(STRATEGY_NAMES, repeat=len(A.shape)):
        try:
            program = kernels.product(A, strategy=names).program
        except ValueError:                                    # the strategy does not apply to a factor
            continue
        cost = program.cost
        priced = (cost.temporary + cost.z) * MEASURED_ROWS * 8
        held = held_bytes(lambda: program(x, y), library)
        assert held <= priced + SLACK_BYTES, f"{names}: holds {held:,} bytes, priced {priced:,.0f}"
        if library == "numpy" and names != ("dense",):
            assert priced <= 4 * held, f"{names}: holds {held:,} bytes, priced {priced:,.0f}"
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("library", ["numpy", "torch"])
@pytest.mark.parametrize("A", [tensor_algebra(2, 3), tensor_product(translation(8), quaternions())],
                         ids=lambda A: A.name)
def test_a_batch_cut_to_the_limit_holds_no_more_than_the_limit_besides_its_result(limit, monkeypatch, A, library):
    """Cut to ``kernels.MEMORY_LIMIT``, a call holds at most the limit beyond its result (every strategy): the
    chunks' results count among the temporaries.  On torch the chunks' results are kept for one concatenation, so
    the result is held twice there."""
    x, y = operands(A, batch=(MEASURED_ROWS,))
    expected = reference(A, x, y)
    results = 1
    if library == "torch":
        torch = pytest.importorskip("torch")
        x, y, results = torch.tensor(x), torch.tensor(y), 2
    for name in STRATEGY_NAMES:
        try:
            kernel = kernels.product(A, strategy=name)
        except ValueError:
            continue
        cost = kernel.program.cost
        per_row = (cost.temporary + cost.z) * 8
        limit(int(cost.fixed * 8 + per_row * MEASURED_ROWS / 8))      # about eight chunks
        with monkeypatch.context() as patch:
            chunks = recorded_chunks(patch, kernel)
            assert relative_error(np.asarray(kernel(x, y)), expected) <= 1e-12
        assert len(chunks) >= 8 and sum(chunks) == MEASURED_ROWS, (name, chunks)
        held = held_bytes(lambda: kernel(x, y), library)
        assert held <= kernels.MEMORY_LIMIT + results * expected.nbytes + SLACK_BYTES, (name, held)


def without_the_compiled_loop(rates):
    """`rates` of a library that cannot run the compiled loop (JAX, or torch on a GPU without Triton)."""
    return dataclasses.replace(rates, compiled64=0.0, compiled32=0.0)


def one_row_bytes(factors, names):
    """What the program of `names` needs for one batch row cut from a larger call: constants, temporaries, result."""
    cost = select.nested_cost(factors, names)
    return (cost.fixed + cost.temporary + cost.z) * 8


@pytest.mark.parametrize("name", list(builtin_algebras()))
def test_auto_chooses_strategies_that_fit_the_limit_where_any_do(limit, name):
    """Brute force over every combination of strategies that runs without the compiled loop: under a limit that
    leaves some of them out, auto's choice
    holds a batch row within it; under one that leaves none, it is the choice of an unlimited machine, whose call
    then refuses; under the default limit, small algebras are chosen as without a limit."""
    factors = [kernels.Factor.from_algebra(f) for f in getattr(builtin_algebras()[name], "factors", None) or
               [builtin_algebras()[name]]]
    rates = without_the_compiled_loop(NUMPY.rates)
    options = itertools.product(*(select.applicable(f) for f in factors))
    runnable = [names for names in options if select.model_seconds(select.nested_cost(factors, names), names, 4096, 8,
                                                                     rates, limited=False) < math.inf]
    needs = sorted({one_row_bytes(factors, names) for names in runnable})
    limit(2**62)
    unlimited = select.resolve("auto", factors, 4096, 8, rates)
    limit(2 * 2**30)
    assert select.resolve("auto", factors, 4096, 8, rates) == unlimited
    for between in zip(needs, needs[1:]):
        limit(int(sum(between) // 2))
        chosen = select.resolve("auto", factors, 4096, 8, rates)
        assert one_row_bytes(factors, chosen) <= kernels.MEMORY_LIMIT, (between, chosen)
    limit(int(needs[0]) - 1)
    assert select.resolve("auto", factors, 4096, 8, rates) == unlimited


@pytest.mark.parametrize("library", ["numpy", "torch", "jax"])
def test_auto_keeps_within_the_limit_on_every_library(limit, monkeypatch, library):
    """Clebsch-Gordan lmax 6 under 64 KiB, where its dense constants (941 KiB) do not fit: auto runs a strategy
    that does, on numpy, on JAX and on torch without the compiled loop (as on a GPU); before, JAX and torch took
    dense and refused the call."""
    A = clebsch_gordan(6)
    x, y = operands(A, batch=(512,))
    expected = reference(A, x, y)
    kernel = kernels.product(A)
    limit(64 * 2**10)
    if library != "numpy":
        from product_interactions.kernels.arrays import ENGINES
        pytest.importorskip(library)
        engine = ENGINES[library]
        monkeypatch.setattr(type(engine), "runs_compiled", lambda self, a: False)
        like = engine.xp.zeros((), dtype=engine.native_dtype(np.float64))
        x, y = engine.convert(x, like), engine.convert(y, like)
    assert relative_error(np.asarray(kernel(x, y)), expected) <= 1e-12
    # the batch is cut along its first axis: auto prices an entry of 64 rows, not one row (helper 19's case)
    small = clebsch_gordan(2)
    u = operands(small, batch=(1, 64))[0]
    limit(40_000)
    if library != "numpy":
        u = engine.convert(u, like)
    assert relative_error(np.asarray(kernels.product(small)(u, u)), reference(small, *(np.asarray(u),) * 2)) <= 1e-12
    limit(1)
    with pytest.raises(kernels.MemoryLimitError, match="no strategy fits") as raised:
        kernel(x, y)
    ran = re.search(r"<Kernel clebsch_gordan\(6\): ([a-z, ]+), float64> on batch shape \(512,\)", str(raised.value))
    assert ran is not None and (library == "numpy" or "compiled" not in ran.group(1)), str(raised.value)
