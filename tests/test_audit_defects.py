"""The defects a second audit of the public API found after the reliability fixes: each is now refused by name,
before any large allocation, or answered correctly."""
from __future__ import annotations

import json
import time
from fractions import Fraction

import numpy as np
import pytest
import sympy

from product_interactions import kernels
from product_interactions.algebra import (Algebra, Element, diagonal, position, quaternions, so3, tensor_algebra,
                                          tensor_product, translation)
from product_interactions.algebra.symmetry import (bilinear_map, equivariant_constraints, finite_group,
                                                   is_equivariant, linear_map, permutations, regulariser,
                                                   rotations_so3, solve, translations)
from product_interactions.interactions import (Flip, NeighbourhoodReduce, Parameter, Pointwise, Reduce, Scan, Signal,
                                               formula, multiplication_operator, seq2tens, seq2tens_expression,
                                               signature)
from product_interactions.interactions.architectures import (attention, convolution, deep_ls2t, dynamical, gating,
                                                             ls2t, mamba, se3_attention, selective_scan, ssm, tfn)
from product_interactions.interactions.experiments import report
from product_interactions.kernels import MemoryLimitError, Mask, causal_convolution, softmax


def test_auto_reads_the_rule_of_a_translation_too_large_for_a_table():
    kernel = kernels.product(translation(3162))        # 10 million nonzeros: auto used to read the table
    assert kernel.strategies == ("fft",)
    x = np.random.default_rng(0).standard_normal(3162)
    expected = np.fft.irfft(np.fft.rfft(x) ** 2, n=3162)
    assert np.allclose(kernel(x, x), expected, atol=1e-9)


@pytest.mark.parametrize("call, argument", [(lambda x: signature(x, depth=40), "depth"),
                                            (lambda x: seq2tens(x, degree=40), "degree")])
def test_levels_beyond_the_memory_limit_are_refused_before_the_scan(call, argument):
    with pytest.raises(MemoryLimitError, match=rf"{argument}: levels 1..40 of d = 3 hold .* lower {argument}"):
        call(np.ones((1, 5, 3)))


def test_selective_scan_refuses_an_empty_sequence_by_name():
    u = np.ones((1, 0, 1))
    with pytest.raises(ValueError, match=r"u: expected shape \(batch, length, channels\) with positive length and "
                                         r"channels"):
        selective_scan(u, np.full((1, 0, 1), 0.5), np.array([[-1.0]]), np.ones((1, 0, 1)), np.ones((1, 0, 1)))


@pytest.mark.parametrize("x, y, error, match", [
    (1.0, 2.0, ValueError, r"x: expected at least 1 axes"),
    (np.ones(3), np.ones(4), ValueError, r"x: axis -1 has size 3, but quaternions needs 4"),
    (np.ones(4), np.ones(4, dtype=int), TypeError, r"y: expected real floating-point values"),
])
def test_kernel_evaluate_checks_its_operands(x, y, error, match):
    with pytest.raises(error, match=match):
        kernels.product(quaternions()).evaluate(x, y)


MODELS = {"ssm": lambda: ssm(channels=3, d_state=4), "ls2t": lambda: ls2t(3, width=4, order=2),
          "deep_ls2t": lambda: deep_ls2t(3, widths=(4, 4), order=2), "attention": lambda: attention(8, heads=2),
          "tfn": tfn}


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("dtype, match", [(int, "weights would be truncated"), ("abc", "got 'abc'")])
def test_init_refuses_dtypes_that_are_not_floating(name, dtype, match):
    with pytest.raises(TypeError, match=f"dtype: expected a floating dtype.*{match}"):
        MODELS[name]().init(0, dtype=dtype)


def test_kernels_name_a_dtype_they_do_not_understand():
    with pytest.raises(TypeError, match="dtype: expected numpy.float32 or numpy.float64, got 'abc'"):
        kernels.product(quaternions(), dtype="abc")


@pytest.mark.parametrize("model", [lambda: ssm(channels=3, d_state=4), lambda: mamba(d_model=3, d_state=2),
                                   lambda: dynamical(d_model=3)])
def test_text_input_is_refused_by_name(model):
    layer = model()
    with pytest.raises(TypeError, match=r"x: expected an array of real numbers, got dtype <U1"):
        layer.apply(layer.init(0), np.full((1, 4, 3), "a"))


def test_complex_points_are_refused_rather_than_cut_to_their_real_part():
    layer = tfn()
    points = np.random.default_rng(0).standard_normal((1, 5, 3))
    with pytest.raises(TypeError, match="points: expected an array of real numbers, got dtype complex128"):
        layer.apply(layer.init(0), points + 1j, np.ones((1, 5, 9, 4)))


def test_units_must_be_a_list():
    from product_interactions.algebra import position, tensor_product
    with pytest.raises(TypeError, match="units: expected a list of factor indices, got int 1"):
        Signal("x", tensor_product(position(4), quaternions()), units=1)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"mask": np.ones((2, 2), bool)}, ValueError, r"mask: expected a shape that broadcasts to x's \(3, 3\)"),
    ({"axis": 2}, ValueError, r"axis: expected an axis of x"),
])
def test_softmax_names_a_bad_mask_or_axis(kwargs, error, match):
    with pytest.raises(error, match=match):
        softmax(np.ones((3, 3)), **kwargs)
    with pytest.raises(TypeError, match="x: expected an array of floats, got int64"):
        softmax(np.ones((3, 3), dtype=int))


@pytest.mark.parametrize("x, kernel, error, match", [
    (np.ones((2, 3)), np.ones((3, 3)), ValueError, r"x, kernel: leading axes \(2,\) and \(3,\) do not broadcast"),
    (np.ones((1, 0)), np.ones((1, 0)), ValueError, r"x: expected a last \(time\) axis of positive length"),
    (np.ones((1, 2)), "ab", TypeError, "kernel: expected an array of real numbers"),
])
def test_causal_convolution_checks_before_transforming(x, kernel, error, match):
    with pytest.raises(error, match=match):
        causal_convolution(x, kernel)


def test_causal_convolution_refuses_spectra_beyond_the_memory_limit(monkeypatch):
    monkeypatch.setattr(kernels, "MEMORY_LIMIT", 10**6)
    with pytest.raises(MemoryLimitError, match="x, kernel: the spectra of a batch of shape"):
        causal_convolution(np.ones((1000, 100)), np.ones(100))


def test_attention_scores_and_masks_beyond_the_memory_limit_are_refused_before_allocation():
    layer = attention(d_model=8, heads=2)
    with pytest.raises(MemoryLimitError, match=r"inputs: the attention scores need 13.4 GiB"):
        layer.apply(layer.init(0), np.ones((1, 30000, 8)))
    with pytest.raises(MemoryLimitError, match=r"mask: a causal mask over 200,000 x 200,000 positions"):
        Mask.causal().array(200_000, 200_000)


@pytest.mark.parametrize("build, match", [
    (lambda: translations(10**9), r"n: 1,000,000,000 lattice points, more than algebra.limits.MAX_ENTRIES"),
    (lambda: permutations(10**7), r"n: 10,000,000 points, more than"),
    (lambda: equivariant_constraints(permutations(2000), linear_map(2000)), r"target: 4,000,000 unknowns"),
    (lambda: equivariant_constraints(translations(200), bilinear_map(200)), r"target: 8,000,000 unknowns"),
])
def test_symmetry_sizes_are_bounded_before_any_work(build, match):
    with pytest.raises(ValueError, match=match):
        build()


@pytest.mark.parametrize("tolerance", [np.nan, np.inf, -1, "0.1"])
def test_is_equivariant_needs_a_finite_tolerance(tolerance):
    with pytest.raises(ValueError, match="tolerance: expected a finite number >= 0"):
        is_equivariant(lambda x: 2 * x[::-1], translations(4), tolerance=tolerance)


def test_is_equivariant_does_not_judge_non_finite_outputs():
    with pytest.raises(ValueError, match="operator: returned values that are not finite"):
        is_equivariant(lambda x: x * np.nan, translations(4))
    assert is_equivariant(lambda x: 2 * x, translations(4)) and not is_equivariant(lambda x: x[::-1] * 2,
                                                                                   translations(4))


def test_results_with_non_finite_numbers_are_written_as_valid_json(tmp_path):
    path = report.write({"loss": float("nan"), "curve": np.array([1.0, np.inf]), "steps": 3}, tmp_path / "r.json")
    assert json.loads(path.read_text()) == {"loss": None, "curve": [1.0, None], "steps": 3}


@pytest.mark.parametrize("build, error, match", [
    (lambda: mamba(d_model=2**40), ValueError, r"d_model: expected at most MAX_WIDTH = 4,096, got 1,099,511,627,776"),
    (lambda: tfn(lmax=10**6), ValueError, r"lmax: expected at most MAX_WIDTH"),
    (lambda: tfn(radius="a"), TypeError, r"radius: expected a positive real number, got str"),
    (lambda: ssm(step_max=float("inf")), ValueError, r"step_min, step_max: expected steps"),
    (lambda: mamba(dt_max=float("inf")), ValueError, r"dt_min, dt_max: expected steps"),
    (lambda: dynamical(input_order=2 + 0j), ValueError, r"input_order: expected one of"),
    (lambda: ls2t(4, order=100), ValueError, r"typical_length \(at least order\): expected an int >= 100"),
])
def test_hyperparameters_are_bounded_and_typed_before_any_allocation(build, error, match):
    with pytest.raises(error, match=match):
        build()


@pytest.mark.parametrize("kwargs, error, match", [
    ({"seed": "abc"}, TypeError, r"seed: expected None, a non-negative int or a numpy.random.Generator"),
    ({"seed": -1}, ValueError, r"seed: expected a non-negative int, got -1"),
    ({"samples": 2**40}, ValueError, r"samples: expected at most MAX_SAMPLES = 10,000"),
])
def test_is_equivariant_checks_its_seed_and_bounds_its_samples(kwargs, error, match):
    with pytest.raises(error, match=match):
        is_equivariant(lambda x: 2 * x, translations(4), **kwargs)


def test_rotations_and_signature_depths_past_any_memory_are_refused_at_once():
    from product_interactions.algebra.so3 import random_rotation
    with pytest.raises(ValueError, match=r"size: 1,099,511,627,776 rotations, more than algebra.limits.MAX_ENTRIES"):
        random_rotation(seed=0, size=2**40)
    with pytest.raises(MemoryLimitError, match=r"depth: levels 1..1000000000000 of d = 2 hold more than 2\^128"):
        signature(np.ones((1, 5, 2)), depth=10**12)


# ---------------------------------------------------------------------- found by the fuzz suite (issue 16): algebra
def test_elements_check_their_algebra_and_treat_numpy_scalars_as_scalars():
    H = quaternions()
    x = H.element([1, 2, 0, 0])
    with pytest.raises(TypeError, match="algebra: expected an Algebra, got int"):
        Element(3, [1, 0, 0, 0])
    assert np.float64(0.5) + x == H.element([Fraction(3, 2), 2, 0, 0])          # 0.5 * 1 + x, not 0.5 + each
    assert isinstance(np.int64(2) * x, Element) and np.int64(2) * x == 2 * x
    with pytest.raises(TypeError, match=r"\+: expected an Element of quaternions or a number, got ndarray"):
        np.ones(4) + x
    with pytest.raises(TypeError, match=r"\+: expected an Element of quaternions or a number, got str"):
        x + "1"
    assert (x == float("nan")) is False and (x == "x") is False


@pytest.mark.parametrize("call, error, match", [
    (lambda H: H.product_of_basis("i", 9), ValueError, "^j: index 9 out of range"),
    (lambda H: H.label(-1), ValueError, "^i: index -1 out of range"),
    (lambda H: H.left_regular("w"), ValueError, "^x: 'w' is not a basis label of quaternions"),
    (lambda H: H.element([1, 2, 3, 4])[(1, 2)], ValueError, r"^label: expected 1 indices for shape \(4,\)"),
    (lambda H: H.structure_constants(dtype="1/0"), TypeError, "^dtype: expected a float or complex dtype"),
    (lambda H: Algebra.from_structure_constants({(0, 0): {0: 1}}, basis=np.array(1.0)), TypeError,
     "^basis: expected a sequence of 1 labels, got ndarray"),
    (lambda H: Algebra.from_structure_constants({(0, 0): {0: 1}}, basis=["a", "b"], dim=1), ValueError,
     "^dim, basis: dim = 1, but basis has 2 labels"),
    (lambda H: Algebra.from_structure_constants({(0, 0): {0: 1}}, dim=2**40), ValueError,
     "^dim: 1,099,511,627,776 basis labels, more than"),
    (lambda H: tensor_algebra(2, 2).lift(np.array(1.0)), ValueError, "^x: expected a vector of 2 numbers"),
])
def test_algebra_queries_name_the_argument_they_refuse(call, error, match):
    with pytest.raises(error, match=match):
        call(quaternions())


# ---------------------------------------------------------------------- ... so3 and symmetry
def test_wigner_D_exact_never_evaluates_text():
    import builtins
    payload = "__import__('builtins').setattr(__import__('builtins'), 'FUZZ_RAN', 1) or 1"
    with pytest.raises(TypeError, match=r"rotation\[0, 0\]: expected an exact number .* got str"):
        so3.wigner_D_exact(1, [[payload, 0, 0], [0, 1, 0], [0, 0, 1]])       # sympy.Matrix would have run it
    assert not hasattr(builtins, "FUZZ_RAN")
    assert so3.wigner_D_exact(1, [[0, -1, 0], [1, 0, 0], [0, 0, 1]]) == so3.wigner_D_exact(
        1, sympy.Matrix([[0, -1, 0], [1, 0, 0], [0, 0, 1]]))


@pytest.mark.parametrize("call", [lambda: so3.irreps(2**40), lambda: so3.wigner_D_exact(10**12, np.eye(3, dtype=int)),
                                  lambda: so3.solid_harmonics(2**40, np.ones(1), np.ones(1), np.ones(1), np.stack),
                                  lambda: rotations_so3(2**40)])
def test_so3_degrees_past_any_table_are_refused_at_once(call):
    start = time.perf_counter()
    with pytest.raises(ValueError, match="^l(max)?: "):
        call()
    assert time.perf_counter() - start < 1


@pytest.mark.parametrize("call, error, match", [
    (lambda: so3.rotation_from_euler(None, 0.0, 0.0), TypeError, "^alpha: expected real angles"),
    (lambda: so3.rotation_from_euler(0.0, [np.nan], 0.0), ValueError, "^beta: expected finite angles"),
    (lambda: so3.basis_index(1, 0, p=np.ones(2)), ValueError, r"^p: expected \+1 \(even\) or -1 \(odd\)"),
    (lambda: so3.to_e3nn([[1.0, 2.0], [3.0]]), TypeError, "^features: expected a real array"),
    (lambda: so3.check_rotation(np.eye(3), proper="yes"), TypeError, "^proper: expected a bool"),
    (lambda: so3.check_rotation(np.eye(3), atol=np.nan), ValueError, "^atol: expected a finite number >= 0"),
    (lambda: so3.clebsch_gordan_tensor(1, dtype="1/0"), TypeError, "^dtype: expected a float or complex dtype"),
    (lambda: so3.solid_harmonics(1, np.ones(2), np.ones(3), np.ones(3), np.stack), ValueError,
     r"^x, y, z: expected arrays of one shape, got \(2,\), \(3,\) and \(3,\)"),
    (lambda: so3.solid_harmonics(1, np.ones(3), np.ones(3), np.ones(3), "stack"), TypeError, "^stack: expected"),
    (lambda: so3.solid_harmonics(1, np.ones(3, bool), np.ones(3), np.ones(3), np.stack), TypeError,
     "^x: expected an array of real numbers, got ndarray of dtype bool"),
    (lambda: so3.solid_harmonics(1, np.ones(3), np.ones(3, complex), np.ones(3), np.stack), TypeError,
     "^y: expected an array of real numbers, got ndarray of dtype complex128"),
    (lambda: so3.spherical_harmonic_formula(1, 0, x="x"), TypeError, "^x: expected a sympy expression or None"),
    (lambda: rotations_so3([70]), ValueError, r"^lmax\[0\]: the generators are exact for degrees <= "),
    (lambda: finite_group(np.array(1.0)), TypeError, "^generators: expected a non-empty sequence"),
    (lambda: finite_group([[[0, 1], [1, 0]]], name=np.ones(2)), TypeError, "^name: expected a str or None"),
    (lambda: solve(equivariant_constraints(translations(3), linear_map(3)), method=np.ones(2)), ValueError,
     "^method: expected one of 'auto', 'exact', 'numeric'"),
    (lambda: regulariser(translations(3), linear_map(3), limit="10"), TypeError, "^limit: expected a positive int"),
])
def test_so3_and_symmetry_arguments_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ---------------------------------------------------------------------- ... kernels
@pytest.mark.parametrize("kwargs, match", [
    ({"a": None}, "^a: expected an array of floats"), ({"b": None}, "^b: expected an array of floats"),
    ({"initial": "0"}, "^initial: expected an array of floats"), ({"a": [[0.5]] * 3}, "^a: expected an array of"),
])
def test_linear_scan_names_an_operand_that_is_not_an_array(kwargs, match):
    with pytest.raises(TypeError, match=match):                 # was AttributeError: 'NoneType' has no 'shape'
        kernels.linear_scan(**{"a": np.full((3, 2), 0.5), "b": np.ones((3, 2)), **kwargs})


@pytest.mark.parametrize("call, error, match", [
    (lambda: kernels.linear_scan(np.ones((3, 1)), np.ones((3, 1)), method=np.ones(2)), ValueError, "^method: "),
    (lambda: kernels.selective_scan(np.ones((1, 3, 1)), None, -np.ones((1, 1)), np.ones((1, 3, 1)),
                                    np.ones((1, 3, 1))), TypeError, "^delta: expected an array of real floats"),
    (lambda: softmax(np.ones((3, 3)), mask=np.ones((3, 3), int)), TypeError, "^mask: expected an array of bools"),
    (lambda: Mask("sideways"), ValueError, "^kind: expected one of 'full', 'causal', 'band', 'fixed'"),
    (lambda: Mask("causal", radius=1.0), ValueError, "^radius: expected a radius for kind 'band'"),
    (lambda: Mask.fixed("ab"), TypeError, "^mask: expected a 2-D array of zeros and ones"),
    (lambda: Mask.causal().array(1.5, 2), TypeError, "^rows: expected a non-negative int"),
    (lambda: kernels.product(quaternions(), strategy=np.ones(2)), ValueError, "^strategy: expected 'auto' or one"),
    (lambda: kernels.product(quaternions(), dtype="1/0"), TypeError, "^dtype: expected numpy.float32"),
    (lambda: kernels.bilinear(np.ones((2, 2, 2)), layout=np.ones(2)), ValueError, "^layout: expected one of"),
    (lambda: kernels.product(diagonal(2)).evaluate([[1.0, 2.0], [3.0]], np.ones(2)), TypeError, "^x: expected"),
    (lambda: kernels.PlanBuilder(strategy=[]), ValueError, "^strategy: expected 'auto' or one of"),
    (lambda: kernels.PlanBuilder().signal(["x"], [diagonal(2)]), TypeError, "^name: expected a str"),
    (lambda: kernels.PlanBuilder().reduce(kernels.PlanBuilder().signal("x", [position(2)]), 1), ValueError,
     r"^factor: expected a factor index in 0\.\.0, got 1"),
])
def test_kernel_arguments_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ---------------------------------------------------------------------- ... interactions, architectures, command line
def test_a_parameter_given_a_shape_has_a_formula():
    W = Parameter("W", (2, 3))
    assert W.formula().shape == (2, 3) and str(W.formula()[1, 2]) == "W_{1,2}"
    assert formula(Parameter("w", [2]), latex=True) == r"\begin{aligned}z_{0} &= w_{0} \\ z_{1} &= w_{1}\end{aligned}"
    with pytest.raises(ValueError, match=r"^expr: W has shape \(100000, 100000\), 10,000,000,000 components"):
        formula(Parameter("W", (10**5, 10**5)))


@pytest.mark.parametrize("support, error, match", [
    ("{0: (1, 2)}", TypeError, r"^support: expected a mapping \{factor: component indices\}, got str"),
    ([0, 1], TypeError, "^support: expected a mapping"),
    ({1: (0,)}, ValueError, "^support, units: factor 1 is in units"),
])
def test_parameter_support_is_checked_by_name(support, error, match):
    with pytest.raises(error, match=match):                   # "{0: ...}" used to reach dict() unchecked
        Parameter("k", tensor_product(translation(4), position(2)), units=[1], support=support)


@pytest.mark.parametrize("call, error, match", [
    (lambda X: formula(seq2tens_expression(2**40, 2, 2)[0]), ValueError, "^expr: x is in position"),
    (lambda X: Pointwise("softmax", X, factor=0, query=0, mask=Mask.causal()), ValueError,
     "^query: expected a factor other than the normalised one"),
    (lambda X: Reduce(X, factor=0, query=1, mask="ab"), TypeError, "^mask: expected a 2-D array"),
    (lambda X: NeighbourhoodReduce(X, radius="1"), ValueError, "^radius: expected a non-negative number"),
    (lambda X: NeighbourhoodReduce(X, radius=1.0, points="ab"), TypeError, "^points: expected an array"),
    (lambda X: multiplication_operator(X, L1=np.ones(2)), TypeError, "^L1: expected a callable"),
    (lambda X: multiplication_operator(X, L1=lambda e: 0)(X), TypeError, "^L1: expected an expression"),
    (lambda X: Scan(lambda h, x: x, Signal("s", position(3)), state=position(3)), ValueError,
     "^X: expected a factor besides the time factor 0"),
    (lambda X: seq2tens(np.ones((1, 3, 2)), 2, return_sequences="yes"), TypeError, "^return_sequences: expected"),
    (lambda X: signature(np.ones((1, 3, 2)), 2, method=np.ones(2)), ValueError, "^method: expected 'auto' or one"),
    (lambda X: signature([[[1.0, 2.0]], [[1.0]]], 2), TypeError, "^x: expected a real array"),
    (lambda X: ls2t(3, hidden=3), TypeError, "^hidden: expected a tuple of layer widths"),
    (lambda X: ls2t(3, activation=[]), ValueError, "^activation: expected one of"),
    (lambda X: deep_ls2t(3, widths=(3, (1, 2))), TypeError, r"^widths\[1\]: expected a positive int"),
    (lambda X: convolution(shape=5), ValueError, r"^shape: expected 1 lattice size\(s\), got 5"),
    (lambda X: convolution(dims=True), ValueError, "^dims: expected 1 or 2, got True"),
    (lambda X: se3_attention(channels=0), ValueError, "^channels: expected a positive int"),
    (lambda X: gating(channels=2).init(0, dtype="1/0"), TypeError, "^dtype: expected a floating dtype"),
    (lambda X: gating(channels=2).apply(gating(channels=2).init(0), [[[1.0, 2.0]], [[1.0]]]), TypeError,
     "^x: expected an array of real numbers, got a ragged list"),
])
def test_interaction_arguments_are_named(call, error, match):
    X = Signal("x", tensor_product(position(3), position(3), diagonal(2)), units=[1])
    with pytest.raises(error, match=match):
        call(X * Flip(X))


def test_flags_take_numpy_bools_everywhere():
    assert ls2t(2, width=2, order=2, time=np.bool_(True)).time is True
    assert convolution(cyclic=np.bool_(False)).cyclic is False


@pytest.mark.parametrize("argv, option", [(["experiment", "symmetry", "--out", "r\0.json"], "--out"),
                                          (["experiment", "copy", "--checkpoint", "d\0"], "--checkpoint")])
def test_command_line_refuses_unusable_paths_as_usage_errors(argv, option, capsys):
    from product_interactions.interactions.__main__ import main
    with pytest.raises(SystemExit) as exit:                      # "r\0.json" used to crash in tempfile.mkstemp
        main(argv)
    assert exit.value.code == 2 and option in capsys.readouterr().err


def test_kernel_constructor_and_evaluate_name_what_they_refuse():
    from product_interactions.kernels import Kernel
    from product_interactions.kernels.products.factor import Factor
    from product_interactions.algebra import quaternions
    factor = Factor.from_algebra(quaternions())
    with pytest.raises(TypeError, match="factors: expected an iterable of kernels.Factor, got str"):
        Kernel("abc")
    with pytest.raises(TypeError, match=r"factors\[0\]: expected a kernels.Factor, got int"):
        Kernel([3])
    with pytest.raises(ValueError, match="factors: expected at least one kernels.Factor"):
        Kernel([])
    with pytest.raises(TypeError, match="dtype: expected numpy.float32 or numpy.float64, got '1/0'"):
        Kernel([factor], dtype="1/0")
    with pytest.raises(ValueError, match="layout: expected one of"):
        Kernel([factor], layout=np.zeros(2))
    with pytest.raises(ValueError, match="layout: expected one of"):
        Kernel([factor]).evaluate(np.ones(4), np.ones(4), layout=np.zeros(2))


def test_a_raw_factor_checks_its_parts_and_drops_explicit_zeros():
    from product_interactions.kernels import Factor, Kernel
    with pytest.raises(TypeError, match=r"shape: expected three positive ints \(d1, d2, d3\), got \(2, 2\)"):
        Factor((2, 2), "f", [[0, 0, 0]], [1.0])
    with pytest.raises(ValueError, match="indices: expected rows .* within shape"):
        Factor((2, 2, 2), "f", [[5, 0, 0]], [1.0])
    with pytest.raises(ValueError, match="indices: expected distinct rows"):
        Factor((2, 2, 2), "f", [[0, 0, 0], [0, 0, 0]], [1.0, 2.0])
    with pytest.raises(ValueError, match="values: expected 1 finite floats"):
        Factor((2, 2, 2), "f", [[0, 0, 0]], [np.nan])
    with pytest.raises(ValueError, match="indices: expected the nonzeros"):
        Factor((2, 2, 2), "f")
    factor = Factor((2, 2, 2), "f", [[1, 0, 1], [0, 0, 0]], [0.0, 2.0])          # codegen divided by the zero
    assert factor.nnz == 1 and factor.indices.tolist() == [[0, 0, 0]]
    assert Kernel([factor], "codegen")(np.ones(2), np.ones(2)).tolist() == [2.0, 0.0]


def test_plan_builder_steps_name_what_they_refuse_and_a_softmax_without_mask_keeps_its_query_factor():
    from product_interactions.algebra import position
    from product_interactions.kernels import PlanBuilder
    builder = PlanBuilder()
    factors = [position(3), position(3)]
    x = builder.signal("x", factors)
    with pytest.raises(TypeError, match="c: expected a finite real number"):
        builder.scale(x, "2")
    with pytest.raises(ValueError, match="keep: expected components of factor 1"):
        builder.select(x, 1, [7])
    with pytest.raises(ValueError, match="function: expected one of"):
        builder.map(x, "cosh")
    with pytest.raises(TypeError, match="mask: expected None, a kernels.Mask or a register, got str"):
        builder.softmax(x, 1, "causal", 0)
    with pytest.raises(ValueError, match="lag: expected a delay of 0 or more steps"):
        builder.lag(x, 0, -1, frozenset())
    with pytest.raises(TypeError, match="shape: expected a sequence of positive ints"):
        builder.matrix("w", (2, -3))
    plan = builder.finish(builder.softmax(x, 1, None, 0), factors)      # query given, no mask: factor 0 stays
    z = plan(np.arange(18.0).reshape(2, 3, 3))
    assert np.allclose(z.sum(axis=-1), 1.0) and z.shape == (2, 3, 3)
