"""Every strategy equals the dense reference on random inputs, for every built-in algebra."""
from dataclasses import fields, replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_cases import (SLACK_BYTES, STRATEGY_NAMES, builtin_algebras, held_bytes, operands, reference,
                          relative_error, same_values, term_by_term, with_non_finite)

from product_interactions import kernels
from product_interactions.algebra import (Algebra, clifford, diagonal, position, quaternions, tensor_algebra,
                                          tensor_product, translation)
from product_interactions.kernels.native import build, clib
from product_interactions.kernels.products import select

ALGEBRAS = builtin_algebras()
TOLERANCE = {np.float64: 1e-12, np.float32: 1e-5}


def representable(A, name, dtype=np.float64):
    try:
        return kernels.product(A, strategy=name, dtype=dtype)
    except ValueError:
        return None


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ALGEBRAS)
def test_every_strategy_equals_the_dense_reference(name, dtype):
    A = ALGEBRAS[name]
    x, y = operands(A, seed=len(name), dtype=dtype)
    expected = reference(A, x, y)
    tried = []
    for strategy in ("auto",) + STRATEGY_NAMES:
        kernel = representable(A, strategy, dtype)
        if kernel is None:
            continue
        z = kernel(x, y)
        assert z.shape == expected.shape and z.dtype == dtype
        assert relative_error(z, expected) <= TOLERANCE[dtype], (strategy, kernel.strategies)
        tried.append(strategy)
    assert {"auto", "codegen", "dense"} <= set(tried)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ["quaternions", "translation(9)", "clebsch_gordan(2)"])
def test_numpy_operands_of_another_dtype_compute_in_the_kernel_s_on_every_strategy_and_batch(name, dtype):
    A, other = ALGEBRAS[name], np.float32 if dtype == np.float64 else np.float64
    rng = np.random.default_rng(7)
    for strategy in ("auto",) + STRATEGY_NAMES:
        kernel = representable(A, strategy, dtype)
        if kernel is None:
            continue
        for batch in [(), (1,), (3,), (2, 3), (0,)]:
            x, y = (rng.standard_normal(batch + (A.dim,)).astype(other) for _ in range(2))
            z = kernel(x, y)
            assert z.dtype == dtype, (strategy, kernel.strategies, batch, z.dtype)
            expected = kernel(x.astype(dtype), y.astype(dtype))
            assert np.array_equal(z, expected), (strategy, batch)


@pytest.mark.parametrize("name", ALGEBRAS)
def test_values_that_are_not_finite_follow_one_rule_on_every_strategy(name):
    A = ALGEBRAS[name]
    x, y = with_non_finite(*operands(A, seed=3))
    expected = term_by_term(A, x, y)
    assert not np.isfinite(expected).all()
    with np.errstate(invalid="ignore"):
        for strategy in ("auto",) + STRATEGY_NAMES:
            kernel = representable(A, strategy)
            if kernel is not None:
                assert same_values(kernel(x, y), expected), (strategy, kernel.strategies)


def assert_cheapest(chosen, prices, label):
    """`chosen` is the cheapest of `prices`, the FFT only where it takes at most 1 / NORMWISE_GAIN of the time of
    the cheapest other strategy."""
    direct = min((price for name, price in prices.items() if name != "fft"), default=np.inf)
    if chosen == "fft":
        assert prices["fft"] * select.NORMWISE_GAIN <= direct, (label, prices)
    else:
        assert prices[chosen] == direct, (label, prices)
        assert prices.get("fft", np.inf) * select.NORMWISE_GAIN > direct, (label, prices)


@pytest.mark.parametrize("rows", [1, 8, 64, 4096, 10**5])
def test_auto_takes_the_cheapest_strategy_by_the_cost_model_and_a_normwise_one_only_for_a_clear_gain(rows):
    for A in ALGEBRAS.values():
        if len(A.shape) > 1:
            continue
        factor = kernels.Factor.from_algebra(A)
        chosen = kernels.product(A).strategies_for(rows)[0]
        prices = {name: select.estimate(factor, name, max(4 ** (rows.bit_length() // 2), 1))
                  for name in select.applicable(factor)}
        assert_cheapest(chosen, prices, (A.name, rows))


def test_only_the_fft_is_normwise_and_cheapest_weighs_it_by_the_gain():
    assert select.NORMWISE == {"fft"}
    gain = select.NORMWISE_GAIN
    assert select.cheapest(["gather", "fft"], {"gather": 1.0, "fft": 0.99 / gain}.get) == "fft"
    assert select.cheapest(["gather", "fft"], {"gather": 1.0, "fft": 1.01 / gain}.get) == "gather"
    assert select.cheapest([("fft", "identify"), ("gather", "identify")],
                           {("fft", "identify"): 0.9 / gain, ("gather", "identify"): 1.0}.get) == ("fft", "identify")
    assert select.cheapest(["fft"], {"fft": 1.0}.get) == "fft"                  # nothing exact to fall back on


@pytest.mark.skipif(build.unavailable() is not None, reason="the exact rival of the FFT here is the compiled loop")
@pytest.mark.parametrize("rows", [1, 2, 3, 4, 64])
def test_auto_keeps_each_output_exact_where_the_fft_would_gain_little(rows):
    """translation(128) on 1-4 rows took the FFT for a model gain of a few percent, and returned 0.0 for an entry of
    1.0 beside one of 1e16."""
    x, y = np.zeros((rows, 128)), np.zeros((rows, 128))
    x[:, 0], x[:, 1], y[:, 0] = 1e16, 1.0, 1.0
    kernel = kernels.product(translation(128))
    assert "fft" not in kernel.strategies_for(rows)
    assert np.array_equal(kernel(x, y)[:, :3], np.tile([1e16, 1.0, 0.0], (rows, 1)))


def test_explain_shows_auto_s_choice_at_every_batch_size_and_the_rates_priced_by():
    K = kernels.product(translation(8))
    lines = K.explain().splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("auto on numpy, cpu, by batch rows (rates: "))
    spans = [line.split(":")[0].strip() for line in lines[start + 1:]]
    assert (spans[0] == "rows >= 1" or spans[0].startswith("rows 1-")) and spans[-1].startswith("rows >= ")
    for line in lines[start + 1:]:
        span, names = line.strip()[len("rows "):].split(": ")
        first = int(span.replace(">= ", "").split("-")[0].replace(",", ""))
        assert K.strategies_for(first) == tuple(names.split(", ")), line
    torch = pytest.importorskip("torch")
    assert "auto on torch, cpu, by batch rows" in K.explain(torch.zeros(1))
    assert "by batch rows" not in kernels.product(translation(8), strategy="dense").explain()


@pytest.mark.parametrize("engine_name", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("itemsize", [8, 4])
def test_auto_prices_by_the_engine_s_rates_and_the_input_s_itemsize(engine_name, itemsize):
    from product_interactions.kernels.arrays import ENGINES
    rates = ENGINES[engine_name].rates
    for A in ALGEBRAS.values():
        if len(A.shape) > 1:
            continue
        factor = kernels.Factor.from_algebra(A)
        chosen = kernels.product(A).strategies_for(4096, ENGINES[engine_name], itemsize)[0]
        prices = {name: select.estimate(factor, name, 4096, itemsize, rates=rates)
                  for name in select.applicable(factor)}
        assert_cheapest(chosen, prices, (A.name, engine_name))


def test_the_time_model_is_its_terms_priced_by_the_rates():
    from product_interactions.kernels.products.cost import NUMPY_RATES, Cost, Rates
    cost = Cost(4, 4, 4, flops=100, moved=30, temporary=8, calls=5, gemm=60, loop=40, row_calls=2, compiled=9,
                compiled_calls=3, transform=7, indexed=10)
    calls, moved, gemm, loop, row_loops, compiled, entries, transform, indexed = cost.terms(rows=1000, itemsize=4)
    assert (calls, moved, gemm, loop, row_loops, compiled, entries, transform, indexed) == (
        5, 1000 * 20 * 4, 60_000, 40_000, 2000, 9000, 3, 7000, 1000 * 10 * 4)       # indexed: a part of moved
    expected = (5 * NUMPY_RATES.call + (moved + indexed) / NUMPY_RATES.bandwidth + gemm / NUMPY_RATES.gemm32
                + loop / NUMPY_RATES.loop + row_loops * NUMPY_RATES.row + compiled / NUMPY_RATES.compiled32
                + 3 * NUMPY_RATES.compiled_call + transform / NUMPY_RATES.transform)
    assert NUMPY_RATES.indexed is None              # as fast as other traffic
    assert cost.seconds(1000, 4) == pytest.approx(expected, rel=1e-12)
    slow_gathers = replace(NUMPY_RATES, indexed=NUMPY_RATES.bandwidth / 10)
    assert cost.seconds(1000, 4, rates=slow_gathers) == pytest.approx(expected + 9 * indexed / NUMPY_RATES.bandwidth,
                                                                      rel=1e-12)
    slow_calls = Rates(call=1.0, bandwidth=1e30, gemm64=1e30, gemm32=1e30, loop=1e30, row=0.0, transform=1e30,
                       compiled64=1e30,
                       compiled_call=2.0)
    assert cost.seconds(1000, 8, rates=slow_calls) == pytest.approx(5.0 + 3 * 2.0)
    assert cost.seconds(1000, 8, chunk_bytes=20 * 1000 * 8 / 4, rates=slow_calls) == pytest.approx(44.0)  # 4 chunks
    no_compiled_loops = Rates(call=1.0, bandwidth=1e30, gemm64=1e30, gemm32=1e30, loop=1e30, row=0.0, transform=1e30)
    assert cost.seconds(1000, 8, rates=no_compiled_loops) == float("inf")       # priced out where it cannot run
    assert replace(cost, compiled=0, compiled_calls=0).seconds(1000, 8, rates=no_compiled_loops) == pytest.approx(5.0)


@pytest.mark.parametrize("outer, names", [(translation(8), ("fft", "compiled")),
                                          (translation(8, cyclic=False), ("gather", "compiled")),
                                          (translation(8), ("codegen", "compiled")),
                                          (tensor_algebra(2, 3), ("graded", "compiled"))])
def test_the_model_counts_the_entries_into_the_compiled_loop_and_the_rows_it_multiplies(monkeypatch, outer, names):
    """Entries into the loop per call, and its FLOPs per batch row: 3 per quaternion term (16) for each row the
    level feeds it (the fft level 4 real products per kept frequency, gather and graded one per term, codegen one
    per generated product), counted in a call."""
    from product_interactions.kernels.products.strategies.compiled import Compiled
    if build.unavailable():
        pytest.skip(build.unavailable())
    rows, loop = [], Compiled.loop
    monkeypatch.setattr(Compiled, "loop", lambda self, x, *arguments, **options: rows.append(
        int(np.prod(x.shape[:-1]))) or loop(self, x, *arguments, **options))
    kernel = kernels.product(tensor_product(outer, quaternions()), strategy=names)
    kernel(*np.random.default_rng(0).standard_normal((2, 10, outer.shape[0], 4)))
    priced = select.priced(kernel.factors, names)[0]
    assert len(rows) == priced.compiled_calls > 1
    assert priced.compiled == 3 * 16 * sum(rows) / 10


@pytest.mark.parametrize("name", STRATEGY_NAMES)
def test_the_model_prices_the_chunks_a_kernel_really_cuts_its_batch_into(name, monkeypatch):
    """select.chunk_bytes (what auto prices) against the chunks a numpy call runs: a level that runs the batch whole
    (compiled) is priced one call however large the batch, the others a call per cache-sized chunk.  (Programs of
    leaves alone are priced whole, though a contraction of several factors runs in chunks of 16 MiB: a few calls
    per 16 MiB of work, which no choice turns on.)"""
    from product_interactions.kernels.products.lowering import levels
    from product_interactions.kernels.products.strategies import LEVELS
    A = tensor_product(translation(8), quaternions())
    for names in ((name, "compiled"), ("identify", name), (name, name)):
        if not set(names) & set(LEVELS):
            continue
        try:
            kernel = kernels.product(A, strategy=names)
        except ValueError:
            continue
        chunk = min((level.chunk_bytes for level in levels(kernel.program) if level.chunk_bytes), default=None)
        assert select.chunk_bytes(names) == chunk, names
        rows = 4 * int((chunk or 2**23) // (kernel.program.cost.working() * 8))
        cut = select.priced(kernel.factors, names)[0].terms(rows, 8, select.chunk_bytes(names))[0]
        assert (cut > kernel.program.cost.calls) == (chunk is not None)


def test_fft_handles_complex_spectra_inside_a_two_dimensional_lattice():
    A = tensor_product(translation(10), translation(12))
    x, y = operands(A, batch=(3,))
    expected = np.fft.irfft2(np.fft.rfft2(x) * np.fft.rfft2(y), s=A.shape)
    kernel = kernels.product(A, strategy="fft")
    assert kernel.explain().count("fft on axis") == 2
    assert relative_error(kernel(x, y), expected) <= 1e-12


batch_pairs = st.lists(st.integers(1, 3), min_size=0, max_size=3).flatmap(
    lambda shape: st.tuples(st.just(tuple(shape)),
                            st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)),
                            st.integers(0, len(shape))))


@settings(max_examples=25, deadline=None, derandomize=True)
@given(batch_pairs, st.sampled_from(["gather", "codegen", "dense", "auto"]))
def test_leading_batch_axes_broadcast(pair, strategy):
    shape, ones, dropped = pair
    other = tuple(1 if one else n for n, one in zip(shape, ones))[dropped:]
    A = tensor_product(clifford(1), diagonal(2))
    rng = np.random.default_rng(len(shape) + dropped)
    x = rng.standard_normal((*shape, *A.shape))
    y = rng.standard_normal((*other, *A.shape))
    z = kernels.product(A, strategy=strategy)(x, y)
    assert z.shape == np.broadcast_shapes(shape, other) + A.shape
    assert relative_error(z, reference(A, x, y)) <= 1e-12


@pytest.mark.parametrize("y_batch", [(1000, 2), (1, 2), (2,)])
@pytest.mark.parametrize("layout", ["batch-first", "component-major"])
def test_chunked_and_unchunked_batches_agree(monkeypatch, y_batch, layout):
    A = clifford(3, 0, 1)
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((1000, 2, 16)), rng.standard_normal((*y_batch, 16))
    expected = reference(A, x, y)
    move, back = ((lambda a: a,) * 2 if layout == "batch-first"
                  else (lambda a: np.moveaxis(a, -1, 0), lambda a: np.moveaxis(a, 0, -1)))
    for strategy in ("codegen", "gather", "dense"):
        kernel = kernels.product(A, strategy=strategy, layout=layout)
        monkeypatch.setattr(kernel, "_chunk_bytes", lambda program: 50_000)   # a few rows, the last one partial
        assert kernel._rows((1000, 2), kernel.strategies) < 100
        assert relative_error(back(kernel(move(x), move(y))), expected) <= 1e-12


def test_bilinear_maps_between_different_spaces_and_exact_constants():
    import sympy
    rng = np.random.default_rng(3)
    lam = rng.integers(-2, 3, (3, 4, 2)) * (rng.random((3, 4, 2)) < 0.4)
    x, y = rng.standard_normal((5, 3)), rng.standard_normal((5, 4))
    expected = np.einsum("bi,bj,ijk->bk", x, y, lam)
    for strategy in ("auto", "codegen", "dense"):
        assert relative_error(kernels.bilinear(lam, strategy=strategy)(x, y), expected) <= 1e-12
    exact = sympy.Array(lam.tolist()) * sympy.sqrt(2)
    z = kernels.bilinear(exact)(x, y)
    assert relative_error(z, np.sqrt(2) * expected) <= 1e-12


def test_bilinear_with_one_tensor_per_factor_acts_axis_by_axis():
    rng = np.random.default_rng(4)
    first, second = rng.standard_normal((2, 3, 2)), rng.standard_normal((3, 2, 4))
    x, y = rng.standard_normal((7, 2, 3)), rng.standard_normal((7, 3, 2))
    expected = np.einsum("bad,bce,acf,deg->bfg", x, y, first, second)
    kernel = kernels.bilinear(first, second, strategy=("codegen", "dense"))
    assert relative_error(kernel(x, y), expected) <= 1e-12


def test_every_strategy_file_is_registered_with_the_whole_interface():
    import pkgutil
    from product_interactions.kernels.products import strategies
    shared = {"level", "operand"}                                  # a level's base class; a plan's operand forms
    files = {info.name for info in pkgutil.iter_modules(strategies.__path__)} - shared
    assert {module.__name__.rsplit(".", 1)[1] for module in kernels.STRATEGIES.values()} == files
    for name, module in kernels.STRATEGIES.items():
        assert module.NAME == name and module.ROLE in ("leaf", "level")
        assert callable(module.unsupported) and callable(module.cost)
        assert callable(module.term) and callable(module.constant) if module.ROLE == "leaf" else \
            callable(module.lower) and isinstance(module.NESTING, int)
        in_plans = [hasattr(module, part) for part in ("operand", "operand_cost", "operand_unsupported")]
        assert all(in_plans) or not any(in_plans), name                    # the whole operand interface, or none


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_fft_error_stays_within_its_stated_normwise_bound_and_explain_says_what_it_trades(dtype):
    from product_interactions.algebra import translation
    from product_interactions.kernels.products.strategies.fft import ERROR_FACTOR
    n, rng = 128, np.random.default_rng(11)
    x, y = (rng.standard_normal((6, n)) * 1e-8 for _ in range(2))
    x[:, 0], y[:, 1] = 1e8, 1e8                          # a 1e16 range: z_1 is 1e16, every other output about 1
    x, y = x.astype(dtype), y.astype(dtype)
    fft = kernels.product(translation(n), strategy="fft", dtype=dtype)
    exact = kernels.product(translation(n), strategy="gather")(x.astype(float), y.astype(float))
    error = np.abs(fft(x, y) - exact).max(axis=-1)
    bound = ERROR_FACTOR * np.finfo(dtype).eps * np.log2(n) * np.linalg.norm(x.astype(float), axis=-1) \
        * np.linalg.norm(y.astype(float), axis=-1)
    assert np.all(error <= bound)
    relative = np.abs(fft(x, y) - exact) / np.abs(exact)
    assert relative.max() > 1e-3                                     # small outputs lose their digits: the trade
    direct = kernels.product(translation(n), strategy="gather", dtype=dtype)(x, y)
    assert (np.abs(direct - exact) / np.abs(exact)).max() < 1e3 * np.finfo(dtype).eps * n
    assert "lose digits: strategy='gather'" in fft.explain()


@pytest.mark.parametrize("name", sorted(builtin_algebras()))
def test_codegen_in_place_form_rounds_exactly_as_its_expression_form(name):
    import operator

    from product_interactions.kernels.products.factor import Factor
    from product_interactions.kernels.products.source import generate
    A = builtin_algebras()[name]
    if len(A.shape) != 1 or A.dim > 64:
        pytest.skip("one factor of modest size")
    source = generate(Factor.from_algebra(A))
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((2, A.dim, 5))
    z = np.full((A.dim, 5), np.nan)
    source.in_place(x, y, z)
    expected = [np.zeros(5) if part is None else part for part in source.function(x, y, operator.mul)]
    assert np.array_equal(z, np.stack(expected))
    assert source.shared == 0 or "shared[0]" in source.in_place.text


@pytest.mark.parametrize("name", ["clebsch_gordan(2)", "tensor_algebra(3, 3)", "random dense d=5"])
def test_codegen_on_numpy_holds_no_temporary_per_term(name):
    """On numpy arrays codegen writes each output row into one preallocated array (its in-place form): a call holds
    the components moved in front, three scratch rows and one per shared temporary, and the result, whatever the
    number of terms (the expression form holds every output row apart, then stacks them)."""
    from product_interactions.kernels.products.source import generate
    A = builtin_algebras()[name]
    rows = 4096
    x, y = operands(A, batch=(rows,))
    program = kernels.product(A, strategy="codegen").program
    shared = generate(kernels.Factor.from_algebra(A)).shared
    assert held_bytes(lambda: program(x, y)) <= (3 * A.dim + 3 + shared) * rows * x.itemsize + SLACK_BYTES


@pytest.mark.parametrize("name", ["quaternions", "clebsch_gordan(2)", "translation(9)"])
def test_an_empty_batch_gives_an_empty_result_on_every_strategy(name):
    A = ALGEBRAS[name]
    for strategy in ("auto",) + STRATEGY_NAMES:
        kernel = representable(A, strategy)
        if kernel is None:
            continue
        assert kernel(np.ones((0, *A.shape)), np.ones((0, *A.shape))).shape == (0, *A.shape), strategy
        assert kernel(np.ones((3, 0, *A.shape)), np.ones(A.shape)).shape == (3, 0, *A.shape), strategy


TRANSPOSED_CASES = {"translation(9)": translation(9), "translation(8)": translation(8),
                    "translation(3) x translation(4)": tensor_product(translation(3), translation(4)),
                    "quaternions": quaternions(), "translation(5) x quaternions": tensor_product(translation(5),
                                                                                               quaternions())}


TRANSPOSES = {0: (1, 2, 0), 1: (0, 2, 1)}


@pytest.mark.parametrize("name", TRANSPOSED_CASES)
def test_every_strategy_s_transposed_kernels_equal_the_transposed_dense_reference(name):
    """Issue 39: the VJP kernels KEY^T0 and KEY^T1, and theirs (second derivatives), evaluated directly (not only
    through a gradient), for every strategy that represents them: a cyclic factor's transposes give the FFT's
    signs (-1, 1) and (1, -1), on real spectra (one axis) and on complex ones (the inner axis of a 2-D lattice);
    the quaternions fix the orientation of a non-commutative product.  Reference: einsum with the dense constants
    transposed, lam -> lam.transpose(1, 2, 0) for T0 and lam.transpose(0, 2, 1) for T1."""
    A = TRANSPOSED_CASES[name]
    x, y = (v.reshape(4, A.dim) for v in operands(A, batch=(4,), seed=5))
    ran = set()
    for strategy in ("auto",) + STRATEGY_NAMES:
        kernel = representable(A, strategy)
        if kernel is None:
            continue
        signs = set()
        for chain in ((0,), (1,), (0, 0), (0, 1), (1, 0), (1, 1)):
            transposed, lam = kernel, A.structure_constants()
            for which in chain:
                transposed, lam = transposed.transposed(which), lam.transpose(TRANSPOSES[which])
            expected = np.einsum("bi,bj,ijk->bk", x, y, lam)
            got = np.asarray(transposed(x.reshape(4, *A.shape), y.reshape(4, *A.shape))).reshape(4, A.dim)
            assert relative_error(got, expected) < 1e-12, (strategy, chain)
            signs |= {f.cyclic_signs() for f in transposed.factors}
        ran.add(strategy)
        if strategy == "fft":
            assert {(-1, 1), (1, -1)} <= signs
    assert "fft" in ran or "quaternions" in name


WORK_KINDS = ("gemm", "loop", "row_calls", "compiled", "compiled_calls", "transform")


@pytest.mark.parametrize("name", [name for name in kernels.STRATEGIES if kernels.STRATEGIES[name].ROLE == "level"
                                  and name != "compiled"])
def test_a_level_prices_every_kind_of_work_its_inner_program_does_and_only_its_own_besides(name):
    """A level repeats its inner program, so each kind of the inner's work (GEMM, loop FLOPs, row loops, compiled
    FLOPs and entries, FFT FLOPs) grows the level's, and a kind neither does stays zero; its sizes are the factor's
    dimensions times the inner's (the compiled level takes only the elementwise leaf, so it is left out).  Before,
    codegen and graded dropped an einsum leaf's loop FLOPs and row loops, pricing themselves below the others."""
    from product_interactions.kernels.products.cost import Cost
    module = kernels.STRATEGIES[name]
    own = {"fft": {"transform", "row_calls"}}.get(name, set())     # fft transforms each row itself
    inner = Cost(2, 3, 5, flops=10, moved=20, temporary=4, calls=2)
    for A in [translation(8), quaternions(), tensor_algebra(2, 2), diagonal(3), clifford(1, 1, 0)]:
        factor = kernels.Factor.from_algebra(A)
        if module.unsupported(factor):
            continue
        bare = module.cost(factor, inner)
        assert (bare.x, bare.y, bare.z) == (A.dim * 2, A.dim * 3, A.dim * 5)
        assert {kind for kind in WORK_KINDS if getattr(bare, kind)} == own, A
        for kind in WORK_KINDS:
            assert getattr(module.cost(factor, replace(inner, **{kind: 7})), kind) > getattr(bare, kind), (A, kind)


@pytest.mark.parametrize("inner_size", [1, 3])
def test_the_dense_leaf_prices_the_flops_words_and_temporary_of_its_two_contraction_steps(inner_size):
    """dense contracts x with lam (one GEMM), then the (d2, d3) result with y: opt_einsum's count of that path is the
    reference for the FLOPs (GEMM part and loop part), the largest intermediate and a block of partial sums of the
    result's size for the temporary (what a call holds: tests/kernels/test_memory.py), and the words read and
    written by the two steps (lam aside: it is the fixed constant) for the traffic."""
    import opt_einsum
    from product_interactions.kernels.products.cost import Cost
    from product_interactions.kernels.products.strategies import dense
    for A in [quaternions(), tensor_algebra(2, 2), translation(5), clifford(1, 1, 0)]:
        factor = kernels.Factor.from_algebra(A)
        lam = factor.dense(np.float64)
        d1, d2, d3 = lam.shape
        s = inner_size
        x, y = np.ones((d1, s)), np.ones((d2, s))
        _, info = opt_einsum.contract_path("ia,ijk,ja->ka", x, lam, y, optimize=[(0, 1), (0, 1)])
        first, second = (2 * d1 * d2 * d3 * s, 2 * d2 * d3 * s)     # the path's steps, as opt_einsum counts them
        assert info.opt_cost == first + second
        cost = dense.cost(factor, Cost.elementwise(s))
        assert (cost.x, cost.y, cost.z) == (d1 * s, d2 * s, d3 * s)
        assert (cost.flops, cost.gemm, cost.loop) == (info.opt_cost, first, second)
        assert cost.temporary == info.largest_intermediate + d3 * s
        assert cost.moved == x.size + info.largest_intermediate + (info.largest_intermediate + y.size + d3 * s)
        assert cost.fixed == lam.size and cost.row_calls == s
        assert dense.operand_cost(factor) == dense.cost(factor, Cost.elementwise(1))


def _cost_vector(cost):
    return np.array([float(getattr(cost, f.name)) for f in fields(cost)])


SCALED_DIAGONAL = Algebra.from_structure_constants({(0, 0): {0: 2}, (1, 1): {1: 3}, (2, 2): {2: -5}}, dim=3,
                                                 name="scaled diagonal")
COST_FACTORS = [translation(8), translation(5, cyclic=False), quaternions(), tensor_algebra(2, 2), clifford(2, 0, 0),
                diagonal(3), position(3), SCALED_DIAGONAL]


@pytest.mark.parametrize("engine_name", ["numpy", "torch"])
def test_a_diagonal_with_coefficients_is_identified_in_kernels_and_plans(engine_name):
    """lam[i, i, i] = (2, 3, -5): identify's constant (the coefficients) joins the kernel's contraction, and a
    plan's (its operand), beside position(2), against the dense reference."""
    from product_interactions.interactions import Signal
    A = tensor_product(position(2), SCALED_DIAGONAL)
    x, y = operands(A, batch=(3,), seed=4)
    convert = np.asarray if engine_name == "numpy" else pytest.importorskip("torch").tensor
    kernel = kernels.product(A, strategy="identify")
    assert relative_error(np.asarray(kernel(convert(x), convert(y))), reference(A, x, y)) <= 1e-12
    X, Y = Signal("x", A), Signal("y", A)
    plan = (X * Y).compile(strategy="identify")
    z = plan({"x": convert(x), "y": convert(y)}, {})
    assert relative_error(np.asarray(z), reference(A, x, y)) <= 1e-12


@pytest.mark.parametrize("name", [name for name in kernels.STRATEGIES if name != "compiled"])
def test_every_strategys_cost_is_affine_and_monotone_in_its_inner_cost_with_sizes_that_multiply(name):
    """A strategy repeats its inner program a fixed number of times around work of its own, so its cost is an
    affine, non-decreasing, non-negative function of the inner's fields (f(a) + f(b) = f(a + b) + f(0)), and x, y,
    z are the factor's (d1, d2, d3) times the inner's (the compiled level takes only the elementwise leaf)."""

    from product_interactions.kernels.products.cost import Cost
    module, rng = kernels.STRATEGIES[name], np.random.default_rng(len(name))
    names = [f.name for f in fields(Cost)]
    random_cost = lambda: Cost(*rng.integers(1, 9, 3).tolist(), *rng.uniform(1, 50, len(names) - 3))  # noqa: E731
    tried = 0
    for A in COST_FACTORS:
        factor = kernels.Factor.from_algebra(A)
        if module.unsupported(factor):
            continue
        tried += 1
        zero = module.cost(factor, Cost(0, 0, 0, 0, 0, 0))
        for _ in range(3):
            a, b = random_cost(), random_cost()
            both = Cost(*(_cost_vector(a) + _cost_vector(b)))
            fa, fb, fab = (module.cost(factor, c) for c in (a, b, both))
            np.testing.assert_allclose(_cost_vector(fa) + _cost_vector(fb), _cost_vector(fab) + _cost_vector(zero),
                                       rtol=1e-12, err_msg=str(A))
            assert (_cost_vector(fa) >= 0).all(), A
            assert (fa.x, fa.y, fa.z) == tuple(d * n for d, n in zip(factor.shape, (a.x, a.y, a.z))), A
            for field in names:
                grown = replace(a, **{field: getattr(a, field) + 5})
                assert (_cost_vector(module.cost(factor, grown)) >= _cost_vector(fa) - 1e-9).all(), (A, field)
    assert tried


NESTED = [tensor_product(tensor_algebra(2, 2), quaternions()), tensor_product(translation(8), tensor_algebra(2, 2)),
          tensor_product(position(3), translation(6, cyclic=False)), tensor_product(clifford(1, 1, 0), diagonal(2))]


@pytest.mark.parametrize("engine_name", ["numpy", "torch"])
@pytest.mark.parametrize("index", range(len(NESTED)))
def test_every_pair_of_strategies_one_per_factor_equals_the_dense_reference(index, engine_name):
    """Each strategy as the outer level around each other one (and around a leaf), on numpy and torch: the paths a
    level takes around an inner level or out of place (torch's and JAX's are one) differ from its path alone on
    numpy; one y row is broadcast against three x rows.  It found fft around a dense leaf failing on torch (complex
    spectra against a real constant); JAX, which jit-compiles each of the 20-odd kernels, takes a minute and is
    left to the single strategies' tests."""
    import itertools
    A = NESTED[index]
    x, y = operands(A, batch=(3,), seed=index)
    y = y[:1]                                                      # one y row broadcast against three x rows
    expected = reference(A, x, y)
    convert = np.asarray if engine_name == "numpy" else pytest.importorskip("torch").tensor
    tried = 0
    for pair in itertools.product(STRATEGY_NAMES, repeat=2):
        try:
            kernel = kernels.product(A, strategy=pair)
        except ValueError:
            continue
        tried += 1
        z = np.asarray(kernel(convert(x), convert(y)))
        assert relative_error(z, expected) <= 1e-12, (pair, kernel.strategies)
    assert tried >= 4


@pytest.mark.parametrize("strategy", [name for name in STRATEGY_NAMES if name != "fft"])
def test_batches_broadcast_along_any_of_several_batch_axes(strategy):
    """x (2, 3, ...) against y (2, 1, ...) and (1, 3, ...) and back: the batch shapes differ after their first
    axis, so a check of the first axis alone would take them for equal."""
    A = quaternions()
    kernel = representable(A, strategy)
    if kernel is None:
        pytest.skip(f"{strategy} does not represent {A.name}")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3) + A.shape)
    for y in (rng.standard_normal((2, 1) + A.shape), rng.standard_normal((1, 3) + A.shape)):
        assert relative_error(kernel(x, y), reference(A, x, y)) <= 1e-12
        assert relative_error(kernel(y, x), reference(A, y, x)) <= 1e-12


def test_the_gather_steps_estimated_for_large_lattices_are_those_counted_on_small_ones(monkeypatch):
    """Beyond EXACT_STEPS terms gather estimates its steps from the lattice's kind: n for a truncated shift (one
    step per x component, its runs slices), about 2n for a cyclic one (a wrapped part besides); the counts on
    tables small enough to count must agree."""
    from product_interactions.kernels.products.strategies import gather
    for n in (8, 16, 32):
        truncated, cyclic = (kernels.Factor.from_algebra(translation(n, cyclic=c)) for c in (False, True))
        exact = gather._step_profile(truncated), gather._step_profile(cyclic)
        monkeypatch.setattr(gather, "EXACT_STEPS", 0)
        estimated = gather._step_profile(truncated), gather._step_profile(cyclic)
        monkeypatch.undo()
        assert estimated[0] == exact[0] == (n, 0, 0)
        assert abs(estimated[1][0] - exact[1][0]) <= 1


def test_identify_names_an_off_diagonal_term_unless_the_table_is_too_large_to_read(monkeypatch):
    from product_interactions.kernels.products.strategies import identify
    factor = kernels.Factor.from_algebra(quaternions())                   # 16 terms
    monkeypatch.setattr(identify, "TABLE_LIMIT", 16)
    assert identify.unsupported(factor).startswith("lam[0, 1, 1] = 1 in quaternions")
    monkeypatch.setattr(identify, "TABLE_LIMIT", 15)
    assert identify.unsupported(factor).startswith("quaternions has 16 nonzero coefficients, more than its 4 diagonal")


@pytest.mark.parametrize("A", [tensor_algebra(2, 3), tensor_algebra(3, 2), quaternions(), translation(6),
                               translation(5, cyclic=False), clifford(1, 1, 0)], ids=lambda A: A.name)
def test_the_sparse_levels_price_the_flops_of_their_terms(A):
    """Tables of +-1 around the elementwise leaf, counted from the table alone: gather and graded do a product and
    an addition per nonzero constant, scatter also multiplies by the constant, and codegen's generated sums need
    one addition fewer per output than they have terms."""
    from product_interactions.kernels.products.cost import Cost
    factor = kernels.Factor.from_algebra(A)
    lam = A.structure_constants()
    assert set(np.unique(np.abs(lam[lam != 0]))) == {1.0}
    terms, outputs = int(np.count_nonzero(lam)), int(np.count_nonzero(np.abs(lam).sum(axis=(0, 1))))
    expected = {"gather": 2 * terms, "graded": 2 * terms, "scatter": 3 * terms, "codegen": 2 * terms - outputs}
    priced = 0
    for name, flops in expected.items():
        module = kernels.STRATEGIES[name]
        if module.unsupported(factor) is None:
            assert module.cost(factor, Cost.elementwise(1)).flops == flops, name
            priced += 1
    assert priced >= 3


def test_the_compiled_level_prices_its_loop_and_nothing_else():
    """Around the elementwise leaf (the only program it takes) the compiled level's work is the loop's: FLOPs and
    one entry; no GEMM, einsum loop, row loop or transform; sizes the factor's times the leaf's."""
    from product_interactions.kernels.products.cost import Cost
    from product_interactions.kernels.products.strategies import compiled
    for A in [quaternions(), translation(6), clifford(2, 0, 0)]:
        factor = kernels.Factor.from_algebra(A)
        cost = compiled.cost(factor, Cost.elementwise(5))
        assert {kind for kind in WORK_KINDS if getattr(cost, kind)} == {"compiled", "compiled_calls"}
        assert cost.compiled_calls == 1 and cost.flops == 3 * factor.nnz * 5
        assert (cost.x, cost.y, cost.z) == (A.dim * 5,) * 3


def test_the_compiled_loop_is_priced_slower_per_term_where_a_block_spills_the_l1_cache():
    """The module's measurement: translation(256) and T(R^4) to degree 5 ran about twice as slow per term as
    CG(4), whose block of x and y components fits the L1 cache; the loop's FLOPs are priced `SPILLED` times
    where a block's components do not fit."""
    from product_interactions.algebra import clebsch_gordan
    from product_interactions.kernels.products.cost import Cost
    from product_interactions.kernels.products.strategies import compiled
    for A, spills in [(quaternions(), False), (clebsch_gordan(4), False), (translation(256), True),
                      (tensor_algebra(4, 5), True)]:
        factor = kernels.Factor.from_algebra(A)
        cost = compiled.cost(factor, Cost.elementwise(1))
        assert cost.compiled / cost.flops == (compiled.SPILLED if spills else 1.0), A.name


def test_scaling_a_diagonal_costs_more_than_the_unit_one_in_proportion_to_its_size():
    """identify with coefficients other than 1 multiplies by them: more FLOPs, words moved and constants than the
    unit diagonal of the same size, in proportion to the dimension, and a call more whatever the size."""
    from product_interactions.kernels.products.cost import Cost
    from product_interactions.kernels.products.strategies import identify

    def extra(d, inner):
        indices = [[i, i, i] for i in range(d)]
        scaled, unit = (kernels.Factor((d, d, d), name, indices, values) for name, values in
                        (("scaled", [2.0 + i for i in range(d)]), ("unit", [1.0] * d)))
        return _cost_vector(identify.cost(scaled, inner)) - _cost_vector(identify.cost(unit, inner))

    names = [f.name for f in fields(Cost)]
    for inner in (Cost.elementwise(1), Cost.elementwise(3).plus(temporary=2, calls=4)):
        small, large = extra(3, inner), extra(6, inner)
        grown = {name: (small[n], large[n]) for n, name in enumerate(names)}
        for name in ("flops", "moved", "fixed"):
            assert 0 < grown[name][0] and grown[name][1] == 2 * grown[name][0], name
        assert grown["calls"][0] == grown["calls"][1] > 0
