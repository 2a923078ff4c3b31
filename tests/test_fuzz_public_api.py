"""Fuzzing every public entry point one argument at a time (issue 16; hypothesis, seeded, a deadline per case).

With every other argument valid, any value of one argument either works all the way (the object it builds runs on
a small valid input and gives finite numbers; a symbolic result is turned into numbers or checked by a cheap
invariant) or raises a ValueError / TypeError whose message names that argument.  Never an internal exception, a
hang, or an object that fails later.  Each (entry point, argument) pair gets `EXAMPLES` values from `VALUES`, from
a seed of its own; one test per subpackage, which first calls each entry with its valid arguments (and `WARM_UPS`),
so caches are warm and the deadline measures the hostile call.  The command line runs in process, with the
experiments and the tour stubbed: its fuzz is about the arguments."""
from __future__ import annotations

import contextlib
import io
import re
import zlib
from collections import Counter

import hypothesis
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from product_interactions import kernels
from product_interactions.algebra import (Algebra, Element, clebsch_gordan, clifford, complex_numbers, diagonal,
                                          direct_sum, gaunt, matrix_algebra, position, quaternions, tensor_algebra,
                                          tensor_product, translation)
from product_interactions.algebra import so3
from product_interactions.algebra.symmetry import (bilinear_map, diagonal_action, equivariant_constraints, estimate,
                                                   filter_of, finite_group, is_equivariant, linear_map, permutations,
                                                   product_action, regulariser, rotations_so3, solve, translations)
from product_interactions.interactions import (Add, CausalReduce, Flip, Lag, Linear, Mul, NeighbourhoodReduce,
                                               Parameter, Pointwise, RankProjection, Reduce, Scale, ScalarProjection,
                                               Scan, Signal, compile, flatten, formula, multiplication_operator, order,
                                               seq2tens, seq2tens_expression, signature)
from product_interactions.interactions import __main__ as cli
from product_interactions.interactions.architectures import (attention, convolution, deep_ls2t, dynamical,
                                                             expression_model, gating, ls2t, mamba, product_layer,
                                                             se3_attention, selective_scan, ssm, tfn)
from product_interactions.kernels import Factor, Kernel, Mask, PlanBuilder

RNG = np.random.default_rng(0)


def _fresh(*makers):
    """A strategy drawing a new object from one of `makers` each time (arrays are mutable)."""
    return st.sampled_from(makers).map(lambda make: make())


VALUES = st.one_of(
    st.integers(-3, 6), st.integers(2**40, 10**30), st.integers(-(10**30), -(2**40)),
    st.floats(allow_nan=True, allow_infinity=True), st.complex_numbers(max_magnitude=2),
    st.text(max_size=4),
    st.sampled_from(["", "auto", "x", "e_1", "1/0", "sqrt(-1)", "x**99999999", "((((", "__import__('os')",
                     "nan", "-1", "9" * 40, "float64", "{}", "None", "--", "é∞"]),
    st.none(), st.booleans(),
    st.sampled_from([np.bool_(True), np.bool_(False), np.int64(2), np.int64(-1), np.int32(3), np.uint8(4),
                     np.float64(0.5), np.float32(np.nan)]),
    st.lists(st.integers(-2, 3), max_size=3), st.lists(st.lists(st.integers(-1, 2), max_size=3), max_size=3),
    st.tuples(st.integers(-1, 3), st.integers(-1, 3)),
    _fresh(lambda: np.ones((2, 3)), lambda: np.zeros(0), lambda: np.zeros((0, 4)), lambda: np.ones((2, 5, 4)),
           lambda: np.array(["a", "b"]), lambda: np.ones(3, dtype=int), lambda: np.ones((3, 4), complex),
           lambda: np.full((3, 4), np.nan), lambda: np.ones((1, 1, 1, 1, 1)), lambda: np.array(1.0),
           lambda: np.ones((4, 4), bool), lambda: np.array([None, 1], dtype=object)),
    _fresh(quaternions, dict, lambda: {"x": 1}, lambda: {(0, 0): {0: 1}}, lambda: (lambda *a, **k: 0),
           lambda: Mask.causal(), lambda: translations(3), lambda: Signal("s", position(2)), object))

#: How many examples ended in a clear error and how many in a checked result (for reports: print it after a run).
OUTCOMES: Counter = Counter()


# ---------------------------------------------------------------------- result checks
def _algebra(A):
    """An algebra's invariants as numbers: dimension, nnz, and the structure constants when small."""
    assert isinstance(A, Algebra) and A.dim >= 1 and A.index(A.label(A.dim - 1)) == A.dim - 1
    return [np.array([A.dim, A.nnz])] + ([A.structure_constants()] if A.dim <= 16 else [])


def _laws(A):
    """An algebra's invariants and the answers of its laws, as numbers."""
    laws = [A.is_commutative(), A.is_associative(), A.is_alternative(), A.is_power_associative(), A.is_lie()]
    return _algebra(A) + [np.array(laws, dtype=float)]


def _element(x):
    """An element's exact coefficients checked finite (a float array could overflow where they do not)."""
    assert isinstance(x, Element) and all(np.isfinite(c) if isinstance(c, float) else c.is_finite is not False
                                          for c in x.flat)
    return np.array([len(x)])


def _numbers(values):
    """Exact sympy values as floats."""
    return np.array([float(v) for v in values], dtype=float)


def _plan_inputs(plan):
    """Random arrays for every input of a plan: batch 2 for signals, parametric sizes at their defaults."""
    def shape(spec):
        sizes = tuple(getattr(axis, "size", axis) for axis in spec.axes)
        assert np.prod(sizes, dtype=float) < 1e6, sizes            # formula() refuses such sizes first
        return sizes
    signals = {name: RNG.standard_normal((2,) + shape(spec)) for name, spec in plan.signals.items()}
    parameters = {name: RNG.standard_normal(shape(spec)) for name, spec in plan.parameters.items()}
    return signals, parameters


def _expression(node):
    """An expression's formula (its shape checked) and its compiled plan run on random inputs."""
    exact = formula(node)
    assert exact.shape == node.algebra.shape
    plan = compile(node)
    return plan(*_plan_inputs(plan))


def _model(model, x, **apply):
    return model.apply(model.init(0), x, **apply)


def _sequence_model(build, width_argument, default=4):
    def run(**kwargs):
        return _model(build(**kwargs), RNG.standard_normal((2, 5, kwargs.get(width_argument, default))))
    return run


def _cloud_model(build):
    def run(**kwargs):
        model = build(**kwargs)
        lmax, channels = kwargs.get("lmax", 1), kwargs.get("channels_in", 2)
        return model.apply(model.init(0), RNG.standard_normal((1, 4, 3)),
                           RNG.standard_normal((1, 4, (lmax + 1) ** 2, channels)))
    return run


# ---------------------------------------------------------------------- product_interactions.algebra
H = quaternions()
T22 = tensor_algebra(2, 2)


def _direct_sum(a, b, name):
    return _algebra(direct_sum(a, b, name=name))


def _tensor_product(a, b, name):
    return _algebra(tensor_product(a, b, name=name))


def _rename(name):
    A = quaternions()
    try:
        A.name = name
    except (TypeError, ValueError):
        assert A.name == "quaternions"            # nothing half-changed
        raise
    return np.array([len(A.name)])


ALGEBRA = {
    "Algebra.from_structure_constants": (
        lambda lam, basis, name, dim: _algebra(Algebra.from_structure_constants(lam, basis=basis, name=name, dim=dim)),
        {"lam": {(0, 0): {0: 1}, (0, 1): {1: 1}, (1, 0): {1: 1}}, "basis": ["1", "u"], "name": "A", "dim": 2}),
    "Algebra.from_structure_constants(dense)": (
        lambda lam, basis: _algebra(Algebra.from_structure_constants(lam, basis=basis)),
        {"lam": [[[1, 0], [0, 1]], [[0, 1], [-1, 0]]], "basis": ("1", "i")}),
    "Algebra.from_function": (
        lambda dim, mul, basis, name: _algebra(Algebra.from_function(dim, mul, basis=basis, name=name)),
        {"dim": 2, "mul": lambda i, j: {(i + j) % 2: 1}, "basis": None, "name": "Z2"}),
    "Algebra.from_left_multiplication": (
        lambda matrices, basis: _algebra(Algebra.from_left_multiplication(matrices, basis=basis)),
        {"matrices": [[[1, 0], [0, 1]], [[0, -1], [1, 0]]], "basis": None}),
    "Algebra.from_structure_constants(numeric)": (
        lambda lam, exact, tol: _laws(Algebra.from_structure_constants(lam, exact=exact, tol=tol)),
        {"lam": [[[1.0, 0.0], [0.0, 0.5]], [[0.0, 0.5], [-0.25, 0.0]]], "exact": False, "tol": 1e-9}),
    "Algebra.numeric": (lambda tol: _laws(H.numeric(tol)), {"tol": 1e-9}),
    "Algebra.exact": (lambda tol, max_denominator: _laws(H.numeric().exact(tol, max_denominator)),
                      {"tol": 1e-12, "max_denominator": 100}),
    "Algebra.element(numeric)": (lambda coefficients: _element(H.numeric().element(coefficients)),
                                 {"coefficients": [0.1, 2, 0, 0]}),
    "Algebra.from_json": (lambda text: _algebra(Algebra.from_json(text)), {"text": H.to_json()}),
    "Algebra.name": (_rename, {"name": "H"}),
    "Algebra.element": (lambda coefficients: _element(H.element(coefficients)), {"coefficients": [1, 2, 0, 0]}),
    "Algebra.symbols": (lambda name: np.array([len(H.symbols(name))]), {"name": "x"}),
    "Algebra.structure_constants": (lambda dtype, max_bytes: H.structure_constants(dtype=dtype, max_bytes=max_bytes),
                                    {"dtype": float, "max_bytes": None}),
    "Algebra.sparse_structure_constants": (lambda dtype: H.sparse_structure_constants(dtype=dtype), {"dtype": float}),
    "Algebra.index": (lambda label: H.index(label), {"label": "i"}),
    "Algebra.label": (lambda i: np.array([len(H.label(i))]), {"i": 1}),
    "Algebra.product_of_basis": (lambda i, j: _numbers(H.product_of_basis(i, j).values()), {"i": "i", "j": "j"}),
    "Algebra.basis_element": (lambda label: _element(H.basis_element(label)), {"label": "k"}),
    "Algebra.left_regular": (lambda x: np.array(H.left_regular(x), dtype=float), {"x": "i"}),
    "Algebra.is_homomorphism": (lambda matrix, other: float(H.is_homomorphism(matrix, other)),
                                {"matrix": np.eye(4), "other": quaternions()}),
    "clifford": (lambda p, q, r, basis, name: _algebra(clifford(p, q, r, basis=basis, name=name)),
                 {"p": 1, "q": 1, "r": 0, "basis": None, "name": None}),
    "diagonal": (lambda n: _algebra(diagonal(n)), {"n": 3}),
    "position": (lambda n: _algebra(position(n)), {"n": 3}),
    "matrix_algebra": (lambda n: _algebra(matrix_algebra(n)), {"n": 2}),
    "tensor_algebra": (lambda dim, degree: _algebra(tensor_algebra(dim, degree)), {"dim": 2, "degree": 2}),
    "translation": (lambda n, cyclic: _algebra(translation(n, cyclic)), {"n": 3, "cyclic": True}),
    "direct_sum": (_direct_sum, {"a": complex_numbers(), "b": diagonal(2), "name": None}),
    "tensor_product": (_tensor_product, {"a": position(2), "b": complex_numbers(), "name": "P"}),
    "clebsch_gordan": (lambda lmax, parity: _algebra(clebsch_gordan(lmax, parity)), {"lmax": 1, "parity": False}),
    "gaunt": (lambda lmax: _algebra(gaunt(lmax)), {"lmax": 1}),
    "Element": (lambda algebra, coefficients: _element(Element(algebra, coefficients)),
                {"algebra": quaternions(), "coefficients": [1, 0, 2, 0]}),
    "Element.+": (lambda other: _element(H.element([1, 2, 0, 0]) + other), {"other": H.element([0, 1, 0, 1])}),
    "Element.-": (lambda other: _element(H.element([1, 2, 0, 0]) - other), {"other": 3}),
    "Element.*": (lambda other: _element(H.element([1, 2, 0, 0]) * other), {"other": H.basis_element("j")}),
    "Element.r*": (lambda other: _element(other * H.element([1, 2, 0, 0])), {"other": 2}),
    "Element./": (lambda other: _element(H.element([1, 2, 0, 0]) / other), {"other": H.basis_element("j")}),
    "Element.**": (lambda exponent: _element(H.element([1, 1, 0, 0]) ** exponent), {"exponent": 3}),
    "Element.==": (lambda other: float(H.element([1, 0, 0, 0]) == other), {"other": 1}),
    "Element[]": (lambda label: float(H.element([1, 2, 3, 4])[label]), {"label": "j"}),
    "Element.to_array": (lambda dtype: H.element([1, 2, 3, 4]).to_array(dtype), {"dtype": np.float32}),
    "TensorAlgebra.level": (lambda m: np.array(range(T22.dim)[T22.level(m)]), {"m": 1}),
    "TensorAlgebra.embed": (lambda x, order: _element(T22.embed(x, order)), {"x": [1, 2], "order": 2}),
    "TensorAlgebra.lift": (lambda x: _element(T22.lift(x)), {"x": (1, -1)}),
}


# ---------------------------------------------------------------------- product_interactions.algebra.so3
def _formula(l, m, x):
    value = so3.spherical_harmonic_formula(l, m, x=x)
    return float(value.subs({s: 0.3 for s in value.free_symbols}))


SO3 = {
    "basis_index": (lambda l, m, p: so3.basis_index(l, m, p), {"l": 2, "m": -1, "p": None}),
    "basis_labels": (lambda lmax, parity: np.array([len(so3.basis_labels(lmax, parity))]),
                     {"lmax": 1, "parity": True}),
    "feature_dim": (lambda lmax, parity: so3.feature_dim(lmax, parity), {"lmax": 2, "parity": False}),
    "irreps": (lambda lmax, parity: np.array([len(so3.irreps(lmax, parity))]), {"lmax": 2, "parity": True}),
    "clebsch_gordan_coefficients": (lambda l1, l2, l: _numbers(so3.clebsch_gordan_coefficients(l1, l2, l).values()),
                                    {"l1": 1, "l2": 1, "l": 2}),
    "clebsch_gordan_path": (lambda l1, l2, l, dtype: so3.clebsch_gordan_path(l1, l2, l, dtype),
                            {"l1": 1, "l2": 2, "l": 1, "dtype": np.float64}),
    "clebsch_gordan_tensor": (lambda lmax, parity, dtype: so3.clebsch_gordan_tensor(lmax, parity, dtype),
                              {"lmax": 1, "parity": True, "dtype": np.float32}),
    "gaunt_tensor": (lambda lmax, dtype: so3.gaunt_tensor(lmax, dtype), {"lmax": 1, "dtype": np.float64}),
    "to_e3nn": (lambda features: so3.to_e3nn(features), {"features": np.arange(9.0)}),
    "from_e3nn": (lambda features: so3.from_e3nn(features), {"features": np.ones((2, 4))}),
    "sphere_quadrature": (lambda degree: so3.sphere_quadrature(degree), {"degree": 4}),
    "check_rotation": (lambda matrix, proper, atol: so3.check_rotation(matrix, proper=proper, atol=atol),
                       {"matrix": np.eye(3), "proper": True, "atol": 1e-6}),
    "random_rotation": (lambda seed, size: so3.random_rotation(seed=seed, size=size), {"seed": 0, "size": 2}),
    "rotation_from_euler": (lambda alpha, beta, gamma: so3.rotation_from_euler(alpha, beta, gamma),
                            {"alpha": 0.1, "beta": [0.2, 0.3], "gamma": 0.0}),
    "solid_harmonics": (lambda lmax, x, stack: so3.solid_harmonics(lmax, x, np.ones(3), np.zeros(3), stack),
                        {"lmax": 2, "x": np.arange(3.0), "stack": np.stack}),
    "spherical_harmonics": (lambda lmax, points, normalize: so3.spherical_harmonics(lmax, points, normalize),
                            {"lmax": 2, "points": RNG.standard_normal((3, 3)), "normalize": True}),
    "spherical_harmonic_formula": (_formula, {"l": 2, "m": 1, "x": None}),
    "representation": (lambda lmax, matrix, parity: so3.representation(lmax, matrix, parity),
                       {"lmax": 1, "matrix": -np.eye(3), "parity": True}),
    "wigner_D": (lambda l, rotation: so3.wigner_D(l, rotation), {"l": 2, "rotation": so3.random_rotation(seed=0)}),
    "wigner_D_exact": (lambda l, rotation: np.array(so3.wigner_D_exact(l, rotation), dtype=float),
                       {"l": 1, "rotation": [[0, -1, 0], [1, 0, 0], [0, 0, 1]]}),
    "wigner_D_from_euler": (lambda l, alpha, beta, gamma: so3.wigner_D_from_euler(l, alpha, beta, gamma),
                            {"l": 1, "alpha": 0.5, "beta": 0.1, "gamma": [0.0, 1.0]}),
}


# ---------------------------------------------------------------------- product_interactions.algebra.symmetry
def _action(action):
    return [np.array([action.dim]), *action.matrices()]


def _solution(solution):
    return np.asarray(solution.basis, dtype=float)


SYMMETRY = {
    "translations": (lambda n, cyclic: _action(translations(n, cyclic)), {"n": 3, "cyclic": True}),
    "permutations": (lambda n: _action(permutations(n)), {"n": 3}),
    "rotations_so3": (lambda lmax: _action(rotations_so3(lmax)), {"lmax": 1}),
    "finite_group": (lambda generators, name: _action(finite_group(generators, name)),
                     {"generators": [[[0, 1], [1, 0]]], "name": None}),
    "product_action": (lambda a, b: _action(product_action(a, b)), {"a": translations(2), "b": permutations(2)}),
    "diagonal_action": (lambda a, b: _action(diagonal_action(a, b)), {"a": translations(3), "b": translations(3)}),
    "linear_map": (lambda domain, codomain: np.array([linear_map(domain, codomain).size]),
                   {"domain": 3, "codomain": (2,)}),
    "bilinear_map": (lambda x, y, out: np.array([bilinear_map(x, y, out).size]), {"x": 2, "y": None, "out": 2}),
    "filter_of": (lambda algebra: np.array([filter_of(algebra).size]), {"algebra": translation(3)}),
    "equivariant_constraints": (lambda action, target: estimate(equivariant_constraints(action, target)).unknowns,
                                {"action": translations(3), "target": linear_map(3)}),
    "estimate": (lambda constraints: estimate(constraints).work,
                 {"constraints": equivariant_constraints(translations(3), linear_map(3))}),
    "solve": (lambda constraints, method, progress: _solution(solve(constraints, method, progress)),
              {"constraints": equivariant_constraints(permutations(3), linear_map(3)), "method": "auto",
               "progress": False}),
    "regulariser": (lambda action, target, over, limit: regulariser(action, target, over, limit)(np.ones((3, 3))),
                    {"action": translations(3), "target": linear_map(3), "over": "elements", "limit": 100}),
    "is_equivariant": (lambda operator, action, samples, seed, tolerance:
                       float(is_equivariant(operator, action, samples, seed, tolerance)),
                       {"operator": lambda x: 2 * x, "action": translations(4), "samples": 2, "seed": 0,
                        "tolerance": 1e-8}),
}


# ---------------------------------------------------------------------- product_interactions.kernels
def _plan_builder(strategy, name, factor):
    builder = PlanBuilder(strategy=strategy)
    factors = [position(3), diagonal(2)]
    plan = builder.finish(builder.reduce(builder.signal(name, factors), factor), factors, units={factor})
    return plan(np.ones((2, 3, 2)))


def _builder_step(step, **kwargs):
    """x (batch, 3, 2) over position(3) (x) diagonal(2) through one PlanBuilder method, reduced, planned and run."""
    builder = PlanBuilder()
    factors = [position(3), position(3)]
    x = builder.signal("x", factors)
    value = step(builder, x, **kwargs)
    plan = builder.finish(value, factors)
    return plan(np.ones((2, 3, 3)))


BUILDER_STEPS = {
    "PlanBuilder.scale": (lambda c: _builder_step(lambda b, x, c: b.scale(x, c), c=c), {"c": 0.5}),
    "PlanBuilder.swap": (lambda a, b: _builder_step(lambda builder, x, a, b: builder.swap(x, a, b), a=a, b=b),
                         {"a": 0, "b": 1}),
    "PlanBuilder.select": (lambda factor, keep: _builder_step(
        lambda b, x, factor, keep: b.select(x, factor, keep), factor=factor, keep=keep), {"factor": 1, "keep": [0, 2]}),
    "PlanBuilder.map": (lambda function: _builder_step(lambda b, x, function: b.map(x, function), function=function),
                        {"function": "tanh"}),
    "PlanBuilder.softmax": (lambda factor, query, mask: _builder_step(
        lambda b, x, factor, query, mask: b.softmax(x, factor, mask, query), factor=factor, query=query, mask=mask),
        {"factor": 1, "query": 0, "mask": Mask.causal()}),
    "PlanBuilder.matrix": (lambda name, shape: PlanBuilder().matrix(name, shape), {"name": "w", "shape": (2, 3)}),
    "PlanBuilder.lag": (lambda factor, lag: _builder_step(lambda b, x, factor, lag: b.lag(x, factor, lag, frozenset()),
                                                          factor=factor, lag=lag), {"factor": 0, "lag": 1}),
}


KERNELS = {
    "kernels.product": (lambda A, strategy, dtype, layout: kernels.product(A, strategy, dtype, layout)(
        np.ones((3, 4)), np.ones((3, 4))), {"A": quaternions(), "strategy": "auto", "dtype": np.float64,
                                            "layout": "batch-first"}),
    "kernels.bilinear": (lambda lam, strategy, dtype, layout: kernels.bilinear(
        lam, strategy=strategy, dtype=dtype, layout=layout)(np.ones(2), np.ones(3)),
        {"lam": np.ones((2, 3, 1)), "strategy": "auto", "dtype": np.float32, "layout": "batch-first"}),
    "causal_convolution": (lambda x, kernel: kernels.causal_convolution(x, kernel),
                           {"x": np.ones((2, 4)), "kernel": np.arange(4.0)}),
    "linear_scan": (lambda a, b, initial, method: kernels.linear_scan(a, b, initial, method),
                    {"a": np.full((4, 2), 0.5), "b": np.ones((4, 2)), "initial": np.zeros(2), "method": "auto"}),
    "selective_scan": (lambda u, delta, A, B, C, D, z, method: kernels.selective_scan(u, delta, A, B, C, D, z, method),
                       {"u": np.ones((1, 3, 2)), "delta": np.full((1, 3, 2), 0.5), "A": -np.ones((2, 2)),
                        "B": np.ones((1, 3, 2)), "C": np.ones((1, 3, 2)), "D": np.ones(2), "z": np.ones((1, 3, 2)),
                        "method": "auto"}),
    "softmax": (lambda x, axis, mask: kernels.softmax(x, axis, mask),
                {"x": np.arange(9.0).reshape(3, 3), "axis": -1, "mask": np.tril(np.ones((3, 3), bool))}),
    "Mask": (lambda kind, radius: Mask(kind, radius).array(3, 3), {"kind": "band", "radius": 1.0}),
    "Mask.band": (lambda radius: Mask.band(radius).array(2, 4), {"radius": 1}),
    "Mask.fixed": (lambda array: Mask.fixed(array).array(2, 2), {"array": [[1, 0], [1, 1]]}),
    "Mask.array": (lambda rows, columns: Mask.causal().array(rows, columns), {"rows": 3, "columns": 2}),
    "Factor.from_array": (lambda lam: Kernel([Factor.from_array(lam)])(np.ones(2), np.ones(2)),
                          {"lam": np.ones((2, 2, 2))}),
    "Factor": (lambda shape, name, indices, values, sparsity: Kernel([Factor(shape, name, indices, values,
                                                                              sparsity=sparsity)])(
        np.ones(2), np.ones(2)), {"shape": (2, 2, 2), "name": "f", "indices": [[0, 1, 1], [1, 0, 1]],
                                  "values": [1.0, -2.0], "sparsity": None}),
    "Kernel": (lambda factors, strategy, dtype, layout: Kernel(factors, strategy, dtype, layout=layout)(
        np.ones((3, 2)), np.ones((3, 2))), {"factors": [Factor.from_algebra(diagonal(2))], "strategy": "dense",
                                            "dtype": np.float64, "layout": "batch-first"}),
    "Kernel.evaluate": (lambda x, y, layout: kernels.product(diagonal(3)).evaluate(x, y, layout),
                        {"x": np.ones((2, 3)), "y": np.ones(3), "layout": "component-major"}),
    "PlanBuilder": (_plan_builder, {"strategy": "auto", "name": "x", "factor": 0}),
    **BUILDER_STEPS,
}


# ---------------------------------------------------------------------- product_interactions.interactions
A3 = tensor_product(position(3), diagonal(2))
X3 = Signal("x", A3)
PAIRS = tensor_product(position(3), position(3), diagonal(2))
XP = Signal("x", PAIRS, units=[1])


def _scan(step, X, state, time, initial, return_sequences):
    return _expression(Scan(step, X, state, time, initial, return_sequences))


def _operator(K, L1, L2):
    return _expression(multiplication_operator(K, L1, L2)(X3))


INTERACTIONS = {
    "Signal": (lambda name, algebra, units: _expression(Signal(name, algebra, units)),
               {"name": "x", "algebra": PAIRS, "units": [1]}),
    "Parameter": (lambda name, algebra_or_shape, units, support: _expression(
        Parameter(name, algebra_or_shape, units, support) * XP),
        {"name": "k", "algebra_or_shape": PAIRS, "units": (1,), "support": {0: (0, 1)}}),
    "Parameter(shape)": (lambda name, algebra_or_shape: np.array(
        formula(Parameter(name, algebra_or_shape)).shape), {"name": "W", "algebra_or_shape": (2, 3)}),
    "Mul": (lambda K, X: _expression(Mul(K, X)), {"K": Parameter("k", A3), "X": X3}),
    "Add": (lambda K, X: _expression(Add(K, X)), {"K": X3, "X": Parameter("k", A3)}),
    "Expr.-": (lambda other: _expression(X3 - other), {"other": Parameter("k", A3)}),
    "Expr./": (lambda other: _expression(X3 / other), {"other": 4}),
    "Scale": (lambda X, c: _expression(Scale(X, c)), {"X": X3, "c": -2}),
    "Linear": (lambda W, X, factor, into: _expression(Linear(W, X, factor, into)),
               {"W": Parameter("W", (3, 2)), "X": X3, "factor": 1, "into": diagonal(3)}),
    "Pointwise": (lambda function, X, factor, mask, query: _expression(Pointwise(function, X, factor, mask, query)),
                  {"function": "softmax", "X": XP * Flip(XP), "factor": 1, "mask": Mask.causal(), "query": 0}),
    "Flip": (lambda X, source, target: _expression(Flip(X, source, target)), {"X": XP, "source": 0, "target": 1}),
    "Reduce": (lambda X, factor, mask, query: _expression(Reduce(X, factor, mask, query)),
               {"X": XP * Flip(XP), "factor": 1, "mask": np.tril(np.ones((3, 3))), "query": 0}),
    "CausalReduce": (lambda X, factor, query: _expression(CausalReduce(X, factor, query)),
                     {"X": XP * Flip(XP), "factor": 1, "query": 0}),
    "NeighbourhoodReduce": (lambda X, mask, radius, points, factor, query: _expression(
        NeighbourhoodReduce(X, mask, radius, points, factor, query)),
        {"X": XP * Flip(XP), "mask": None, "radius": 1.5, "points": np.arange(6.0).reshape(3, 2), "factor": 1,
         "query": 0}),
    "ScalarProjection": (lambda X, factor: _expression(ScalarProjection(X, factor)), {"X": X3, "factor": -1}),
    "RankProjection": (lambda X, rank, factor: _expression(RankProjection(X, rank, factor)),
                       {"X": X3, "rank": 1, "factor": 1}),
    "Lag": (lambda X, lag, factor: _expression(Lag(X, lag, factor)), {"X": X3, "lag": 1, "factor": 0}),
    "Scan": (_scan, {"step": lambda h, x_t: Parameter("a", diagonal(2)) * h + x_t, "X": X3, "state": diagonal(2),
                     "time": 0, "initial": Parameter("h0", diagonal(2)), "return_sequences": True}),
    "multiplication_operator": (_operator, {"K": Parameter("k", A3), "L1": lambda e: Scale(e, 2), "L2": None}),
    "compile": (lambda expr, strategy: compile(expr, strategy)(*_plan_inputs(compile(expr))),
                {"expr": Parameter("k", A3) * X3, "strategy": "dense"}),
    "formula": (lambda expr, latex, max_terms: np.array([len(formula(expr, latex, max_terms=max_terms))]),
                {"expr": X3 * X3, "latex": True, "max_terms": 100}),
    "order": (lambda expr, signal: order(expr, signal), {"expr": X3 * X3, "signal": X3}),
    "seq2tens": (lambda x, degree, lift, embedding_order, return_sequences, mask, method: seq2tens(
        x, degree, lift, embedding_order, return_sequences, mask, method),
        {"x": RNG.standard_normal((2, 4, 2)), "degree": 2, "lift": "exp", "embedding_order": None,
         "return_sequences": True, "mask": [[1, 1, 1, 0], [1, 1, 1, 1]], "method": "auto"}),
    "seq2tens_expression": (lambda length, dim, degree, lift, embedding_order, return_sequences, name: _expression(
        seq2tens_expression(length, dim, degree, lift, embedding_order, return_sequences, name)[0]),
        {"length": 3, "dim": 2, "degree": 2, "lift": "linear", "embedding_order": None, "return_sequences": False,
         "name": "x"}),
    "signature": (lambda x, depth, mask, return_sequences, method: signature(x, depth, mask, return_sequences, method),
                  {"x": RNG.standard_normal((2, 5, 2)), "depth": 2, "mask": None, "return_sequences": False,
                   "method": "auto"}),
    "flatten": (lambda levels: flatten(levels), {"levels": seq2tens(np.ones((1, 3, 2)), 2)}),
}


# ---------------------------------------------------------------------- product_interactions.interactions.architectures
def _apply(build, x):
    """A model's apply with one of `params` / `x` hostile."""
    def run(params, x=x):
        model = build()
        return model.apply(model.init(0) if params is None else params, x)
    return run


def _init(seed, dtype):
    model = gating(channels=2)
    return model.apply(model.init(seed, dtype), np.ones((1, 3, 2)))


def _ls2t(**options):
    return _model(ls2t(3, width=2, order=2, **options), RNG.standard_normal((2, 5, 3)))


def _deep_ls2t(**kwargs):
    layer = deep_ls2t(**kwargs)
    return layer.apply(layer.init(0), RNG.standard_normal((2, 5, kwargs.get("d_in", 2))))


def _expression_model(**options):
    model = expression_model(**options)
    return model.apply(model.init(0), RNG.standard_normal((2, 5, 4)))


def _gated_quaternions(n):
    """The expression_model example: x_t -> K x_t in the quaternions, K shared by the positions."""
    A = tensor_product(position(n), quaternions())
    X = Signal("x", A)
    return Parameter("K", A, units=[0]) * X, X


def _product_layer(**options):
    layer = product_layer(**options)
    features = layer.algebra.dim if layer.d_in is None else layer.d_in
    return layer.apply(layer.init(0), RNG.standard_normal((2, features)))


ARCHITECTURES = {
    "expression_model": (_expression_model, {"build": _gated_quaternions, "geometry": (3,), "name": "Gate",
                                             "scales": {"K": 0.5}}),
    "product_layer": (_product_layer, {"algebra": quaternions(), "d_in": 3, "d_out": 2,
                                       "symmetry": finite_group([[[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, -1],
                                                                  [0, 0, 1, 0]]]),
                                       "enforce": "exact", "scales": None}),
    "attention": (_sequence_model(attention, "d_model"), {"d_model": 4, "heads": 2, "causal": True, "rank": 1,
                                                          "d_head": None, "length": 3}),
    "convolution": (_sequence_model(convolution, "channels_in"), {"channels_in": 1, "channels_out": 1, "size": 3,
                                                                  "dims": 1, "cyclic": True, "shape": (4,)}),
    "gating": (_sequence_model(gating, "channels"), {"channels": 4, "function": "sigmoid", "length": 4}),
    "ssm": (_sequence_model(ssm, "channels"), {"channels": 4, "d_state": 4, "step_min": 1e-3, "step_max": 1e-1,
                                               "length": 3}),
    "mamba": (_sequence_model(mamba, "d_model"), {"d_model": 4, "d_state": 2, "expand": 2, "d_conv": 2,
                                                  "dt_rank": None, "dt_min": 1e-3, "dt_max": 1e-1}),
    "dynamical": (_sequence_model(dynamical, "d_model"), {"d_model": 4, "input_order": 2, "hidden_order": 1}),
    "ls2t": (_sequence_model(ls2t, "d_in"), {"d_in": 4, "width": 4, "order": 2}),
    "ls2t(options)": (_ls2t, {"weights": "independent", "static": "convolution", "features": 2, "hidden": (),
                              "activation": "relu", "kernel_size": 2, "difference": True, "time": True,
                              "normalise": True, "return_sequences": True, "reverse": False,
                              "bidirectional": True, "typical_length": 8}),
    "ls2t(hidden)": (_ls2t, {"static": "dense", "hidden": (3,), "activation": "tanh"}),
    "deep_ls2t": (_deep_ls2t, {"d_in": 2, "widths": (3, 2), "order": 2, "difference_between": True,
                               "return_sequences": False}),
    "tfn": (_cloud_model(tfn), {"lmax": 1, "channels_in": 2, "channels_out": 2, "radius": 2.0, "basis": 4,
                                "hidden": 4, "points": 4}),
    "se3_attention": (_cloud_model(se3_attention), {"lmax": 1, "channels_in": 2, "channels": 2, "radius": 2.0,
                                                    "basis": 4, "hidden": 4, "points": 4}),
    "architectures.selective_scan": (
        lambda u, delta, A, B, C: selective_scan(u, delta, A, B, C),
        {"u": np.ones((1, 3, 2)), "delta": np.full((1, 3, 2), 0.1), "A": -np.ones((2, 1)), "B": np.ones((1, 3, 1)),
         "C": np.ones((1, 3, 1))}),
    "Model.init": (_init, {"seed": 3, "dtype": np.float32}),
    "Model.apply": (_apply(lambda: gating(channels=2), np.ones((1, 3, 2))), {"params": None, "x": np.ones((2, 3, 2))}),
    "LS2T.apply": (lambda params, x, mask: ls2t(2, width=2, order=2).apply(
        ls2t(2, width=2, order=2).init(0) if params is None else params, x, mask),
        {"params": None, "x": np.ones((2, 3, 2)), "mask": [[1, 1, 0], [1, 1, 1]]}),
}


# ---------------------------------------------------------------------- the command line
def _experiment(name, quick, seed, engine, progress=True, **options):      # stands in for the experiments' run
    return {"experiment": name, "setting": "quick" if quick else "full", "seed": seed, "config": {}, "rows": [],
            "timings": {}}


def _cli(*argv):
    """``main(argv)`` in process, with the experiments and the tour stubbed (the fuzz is about the arguments): the
    exit code, 0 or 2 (a usage error, raised as a ValueError naming the argument for the oracle)."""
    arguments = [str(a) for a in argv]
    stderr = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(stderr):
        try:
            code = cli.main(arguments)
        except SystemExit as error:
            raise ValueError(f"exit {error.code}: {stderr.getvalue()}") from None
    assert code == 0, (arguments, code)
    return code


@pytest.fixture(autouse=True)
def _stub_runs(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)                          # a hostile --out is written here, if anywhere
    monkeypatch.setattr(cli, "run", _experiment)
    monkeypatch.setattr(cli.tour, "run", lambda seed: {"passed": True})


COMMAND_LINE = {
    "cli derive": (lambda name, size: _cli("derive", name, "--size", size), {"name": "gating", "size": 1}),
    "cli experiment": (lambda name, seed, engine: _cli("experiment", name, "--quick", "--seed", seed, "--engine",
                                                       engine), {"name": "symmetry", "seed": 3, "engine": "numpy"}),
    "cli experiment --steps": (lambda steps: _cli("experiment", "copy", "--steps", steps), {"steps": 5}),
    "cli experiment --out": (lambda out: _cli("experiment", "symmetry", "--out", out), {"out": "r.json"}),
    "cli tour": (lambda seed: _cli("tour", "--seed", seed), {"seed": 0}),
}

#: The names an error may give instead of the argument's own: an operator's operand is named by the operator or
#: by its role (scalar, divisor), a variadic argument by its position (algebras[1]); and an error about two
#: arguments that do not fit together may name the other one (a factor index that X does not have, say).
ALIASES = {("Element.+", "other"): ("+", "scalar"), ("Element.-", "other"): ("-", "scalar"),
           ("Element.*", "other"): ("*", "scalar"), ("Element.r*", "other"): ("*", "scalar", "c"),
           ("Element./", "other"): ("/", "divisor"), ("Element.==", "other"): ("==",),
           ("Expr.-", "other"): ("-", "X"), ("Expr./", "other"): ("/", "divisor"),
           ("direct_sum", "a"): ("algebras[0]",), ("direct_sum", "b"): ("algebras[1]",),
           ("tensor_product", "a"): ("algebras[0]",), ("tensor_product", "b"): ("algebras[1]",),
           ("product_action", "a"): ("actions[0]",), ("product_action", "b"): ("actions[1]",),
           ("diagonal_action", "a"): ("actions[0]",), ("diagonal_action", "b"): ("actions[1]",),
           ("check_rotation", "matrix"): ("rotation",), ("representation", "parity"): ("matrix",),
           ("Signal", "algebra"): ("units",), ("Parameter", "algebra_or_shape"): ("units", "support"),
           ("Reduce", "factor"): ("mask",), ("NeighbourhoodReduce", "factor"): ("points",),
           ("Scan", "state"): ("step", "K", "X"), ("Scan", "time"): ("step", "K", "X"),
           ("selective_scan", "u"): ("A",), ("architectures.selective_scan", "u"): ("A",),
           ("architectures.selective_scan", "A"): ("B",), ("Mask.array", "rows"): ("mask",),
           ("Mask.array", "columns"): ("mask",), ("convolution", "dims"): ("shape",),
           ("selective_scan", "A"): ("B",), ("Mask.fixed", "array"): ("mask",),
           ("seq2tens", "x"): ("mask",), ("seq2tens_expression", "length"): ("expr",),
           **{(name, "X"): ("factor", "source", "target", "time") for name in (
               "Linear", "Pointwise", "Flip", "Reduce", "CausalReduce", "NeighbourhoodReduce", "RankProjection",
               "ScalarProjection", "Lag", "Scan")}}
GROUPS = {"algebra": ALGEBRA, "so3": SO3, "symmetry": SYMMETRY, "kernels": KERNELS, "interactions": INTERACTIONS,
          "architectures": ARCHITECTURES, "command line": COMMAND_LINE}
#: Examples per (entry point, argument) pair.
EXAMPLES = 30
#: Slow first calls at the largest small values VALUES draws (6), made once before the deadline applies.
WARM_UPS = {"tfn": ({"lmax": 6}, {"lmax": 5}), "se3_attention": ({"lmax": 6},), "clebsch_gordan": ({"lmax": 6},),
            "gaunt": ({"lmax": 6},), "rotations_so3": ({"lmax": 6},)}


def _arrays(result):
    if isinstance(result, dict):
        return [a for part in result.values() for a in _arrays(part)]
    if isinstance(result, (tuple, list)):
        return [a for part in result for a in _arrays(part)]
    return [np.asarray(result)]


def names(message, argument, aliases=()):
    """True when `message` names `argument` (or one of `aliases`) as a word: ``x:``, ``x,``, ``x[0]``, ``--x``."""
    return any(re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", message) for n in (argument, *aliases))


def _finite(value):
    """False for a value holding nan or inf (a result may then hold them too, as IEEE arithmetic says)."""
    try:
        return bool(np.all(np.isfinite(np.asarray(value, dtype=complex))))
    except (TypeError, ValueError):
        return True


def check_case(entries, name, argument, value):
    """The oracle: a ValueError / TypeError naming `argument`, or finite numbers (for finite input)."""
    call, valid = entries[name]
    try:
        result = call(**{**valid, argument: value})
    except (ValueError, TypeError, ZeroDivisionError) as error:        # x / 0: Python's error for it
        assert names(str(error), argument, ALIASES.get((name, argument), ())), (name, argument, value, str(error))
        OUTCOMES["error"] += 1
        return
    arrays = _arrays(result)
    assert arrays and (not _finite(value) or all(np.all(np.isfinite(a)) for a in arrays if a.dtype.kind in "fc")), \
        (name, argument, value)
    OUTCOMES["result"] += 1


def fuzz(entries, name, argument):
    """`EXAMPLES` hostile values of one argument, drawn from a seed of its own (deterministic, and different for
    every argument)."""
    @hypothesis.seed(zlib.crc32(f"{name}/{argument}".encode()))
    @settings(max_examples=EXAMPLES, deadline=3000, database=None, suppress_health_check=list(HealthCheck))
    @given(VALUES)
    def run(value):
        check_case(entries, name, argument, value)
    run()


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")   # e.g. radius=1e-300: IEEE's answer
@pytest.mark.parametrize("group", sorted(GROUPS))
def test_one_bad_argument_is_named_or_the_call_works(group):
    entries = GROUPS[group]
    for name, (call, valid) in entries.items():         # the valid call works (and warms caches for the deadline)
        assert all(np.all(np.isfinite(a)) for a in _arrays(call(**valid)) if a.dtype.kind in "fc"), name
        for warm_up in WARM_UPS.get(name, ()):
            call(**{**valid, **warm_up})
    for name, (_, valid) in entries.items():
        for argument in valid:
            fuzz(entries, name, argument)
