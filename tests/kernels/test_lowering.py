"""What auto picks, what codegen generates, what explain shows, and that tensor products stay factored."""
import numpy as np
import pytest
from kernel_cases import operands, random_dense, reference, relative_error

from product_interactions import kernels
from product_interactions.algebra import (clifford, diagonal, matrix_algebra, position, quaternions, tensor_algebra, tensor_product,
                     translation)
from product_interactions.kernels.native import build, clib
from product_interactions.kernels.products import source
from product_interactions.kernels.products.factor import Factor


@pytest.fixture
def without_compiled_loops(monkeypatch):
    """As on a machine without a C compiler: the numpy strategies alone (test_compiled covers the loop)."""
    monkeypatch.setattr(build, "load", lambda: (None, "no C compiler found (test)"))


@pytest.mark.usefixtures("without_compiled_loops")
@pytest.mark.parametrize("A, expected", [
    (diagonal(256), ("identify",)), (tensor_product(position(64), diagonal(32)), ("identify", "identify")),
    (translation(256), ("fft",)), (translation(256, cyclic=False), ("gather",)), (clifford(3, 0, 1), ("codegen",)),
    (tensor_algebra(2, 3), ("graded",)), (tensor_algebra(4, 5), ("graded",)), (random_dense(8), ("dense",)),
    (tensor_product(translation(64), quaternions()), ("fft", "codegen")),
])
def test_auto_picks_what_the_structure_makes_cheapest_at_a_large_batch(A, expected):
    assert kernels.product(A).strategies == expected


@pytest.mark.usefixtures("without_compiled_loops")
def test_auto_takes_few_calls_for_a_few_rows():
    assert kernels.product(clifford(3, 0, 1)).strategies_for(8) == ("dense",)
    assert kernels.product(matrix_algebra(3)).strategies_for(10**5) != ("dense",)


def test_codegen_writes_one_expression_per_component_and_shares_subexpressions():
    lam = np.zeros((2, 3, 3))
    lam[0, :, 0] = lam[0, :, 1] = [1, -1, 2]          # x0 (y0 - y1 + 2 y2) feeds z0 and z1: one shared product
    lam[1, :, 1] = lam[1, :, 2] = [3, -3, 6]          # x1 * 3 (y0 - y1 + 2 y2): the same form, scaled
    generated = source.generate(Factor.from_array(lam))
    assert generated.products == 2 and generated.shared == 3
    assert "u0 = y0 - y1 + 2.0 * y2" in generated.text and "z1 = p1 + 3.0 * p2" in generated.text
    text = generated.text
    assert [line.strip().split(" = ")[0] for line in text.splitlines() if line.strip().startswith("z")] == [
        "z0", "z1", "z2"]
    x, y = np.array([1.0, 2.0]), np.array([3.0, 5.0, 7.0])
    assert np.allclose(kernels.bilinear(lam, strategy="codegen")(x, y), np.einsum("i,j,ijk->k", x, y, lam))


def test_generated_source_is_compiled_once_per_structure():
    first = kernels.product(clifford(3, 0, 1), strategy="codegen").program.source
    again = kernels.product(clifford(3, 0, 1), strategy="codegen", dtype=np.float32).program.source
    assert first is again
    assert first.products == 192 and first.additions == 176


def test_long_sums_are_split_into_statements():
    lam = np.eye(70)[:, :, None]                      # z0 = x . y: one output with 70 products
    kernel = kernels.bilinear(lam, strategy="codegen")
    assert kernel.program.source.text.count("z0 = z0 + (") == 1
    x, y = np.arange(70.0), np.arange(70.0) + 1
    assert np.allclose(kernel(x, y), [x @ y])


@pytest.mark.usefixtures("without_compiled_loops")
def test_explain_shows_strategies_einsum_strings_source_flops_and_bytes():
    A = tensor_product(position(3), clifford(3, 0, 1))
    text = kernels.product(A).explain()
    assert "factor 0: position(3), 3 x 3 -> 3, 3 nonzeros" in text and ": identify" in text
    assert "factor 1: clifford(3, 0, 1)" in text and ": codegen" in text
    assert "def product(x, y, mul):" in text and "z15 = " in text
    assert "FLOPs" in text and "bytes moved" in text
    dense = kernels.product(quaternions(), strategy="dense")
    dense(*operands(quaternions(), batch=(5,)))
    assert "'abc,...a,...b->...c'" in dense.explain() and "x @ lam's block by one matrix product" in dense.explain()
    two_dense = kernels.product(tensor_product(quaternions(), quaternions()), strategy=("dense", "dense"))
    two_dense(*operands(two_dense.algebra, batch=(5,)))
    assert "x (5, 4, 4), y (5, 4, 4)" in two_dense.explain()


def test_tensor_products_are_never_contracted_through_a_kronecker_product():
    A = tensor_product(random_dense(4, seed=2), random_dense(3, seed=3), position(2))
    kernel = kernels.product(A, strategy=("dense", "dense", "identify"))
    x, y = operands(A, batch=(64,))
    assert relative_error(kernel(x, y), reference(A, x, y)) <= 1e-12
    (expression, info), = kernel.program._expressions.values()
    constants = {"abc", "def"}
    for inputs, _ in (step[2].split("->") for step in info.contraction_list):
        assert not set(inputs.split(",")) <= constants, info.contraction_list
    assert kernel.program.cost.fixed == 4**3 + 3**3          # the factors' constants, not their (12**3) product


def test_mixed_strategies_nest_each_factor_on_its_own_axis():
    A = tensor_product(clifford(2), translation(9), diagonal(2), quaternions())
    kernel = kernels.product(A, strategy=("codegen", "fft", "identify", "dense"))
    x, y = operands(A, batch=(3,))
    assert relative_error(kernel(x, y), reference(A, x, y)) <= 1e-12
    lines = kernel.explain().splitlines()
    assert [line.split(" on axis")[0] for line in lines if " on axis " in line] == ["fft", "codegen"]


def test_component_major_layout_equals_batch_first():
    A = tensor_product(position(3), clifford(2))
    x, y = operands(A, batch=(5, 2))
    move = lambda a: np.moveaxis(a, (-2, -1), (0, 1))     # noqa: E731
    z = kernels.product(A, layout="component-major")(move(x), move(y))
    assert z.shape == (3, 4, 5, 2) and z.flags.c_contiguous
    assert relative_error(np.moveaxis(z, (0, 1), (-2, -1)), reference(A, x, y)) <= 1e-12


def test_a_traceback_through_generated_code_shows_its_lines():
    import traceback
    generated = source.generate(Factor.from_algebra(quaternions()))
    failing = lambda a, b: 1 / 0                                           # noqa: E731
    with pytest.raises(ZeroDivisionError) as raised:
        generated.function([1.0] * 4, [1.0] * 4, failing)
    text = "".join(traceback.format_tb(raised.value.__traceback__))
    assert "<kernels.products.source product" in text and "z0 = mul(x0, y0)" in text
