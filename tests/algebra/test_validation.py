"""Arguments of the wrong type or value are refused with an error naming them, never silently accepted."""
import numpy as np
import pytest

from product_interactions.algebra import (Algebra, clebsch_gordan, clifford, complex_numbers, diagonal, direct_sum,
                                          quaternions, tensor_product, translation)
from product_interactions.algebra.so3 import spherical_harmonics
from product_interactions.algebra.symmetry import translations


@pytest.mark.parametrize("dtype", [int, np.int32, bool, str, "U5", "not a dtype"])
def test_truncating_dtypes_are_refused(dtype):
    H = quaternions()
    with pytest.raises(TypeError, match="dtype: expected a float or complex dtype or object"):
        H.structure_constants(dtype=dtype)
    with pytest.raises(TypeError, match="dtype: expected a float or complex dtype or object"):
        H.sparse_structure_constants(dtype=dtype)
    with pytest.raises(TypeError, match="dtype: expected a float or complex dtype, got"):
        H.element([1, 2, 3, 4]).to_array(dtype)


def test_float_complex_and_object_dtypes_still_work():
    C = complex_numbers()
    assert C.structure_constants(dtype=np.complex128)[1, 1, 0] == -1
    assert C.structure_constants(dtype=np.float32).dtype == np.float32
    assert C.structure_constants(dtype=object)[1, 1, 0] == -1
    assert C.element([1, 2]).to_array(complex).tolist() == [1, 2]


@pytest.mark.parametrize("max_bytes", ["x", 1.5, True, [1]])
def test_max_bytes_must_be_an_int(max_bytes):
    with pytest.raises(TypeError, match="max_bytes: expected an int number of bytes or None, got"):
        quaternions().structure_constants(max_bytes=max_bytes)


@pytest.mark.parametrize("build", [
    lambda name: Algebra.from_function(2, lambda i, j: {}, name=name),
    lambda name: Algebra.from_structure_constants({(0, 0): {0: 1}}, name=name),
    lambda name: tensor_product(diagonal(2), diagonal(2), name=name),
    lambda name: direct_sum(diagonal(2), diagonal(1), name=name),
    lambda name: clifford(1, name=name),
])
@pytest.mark.parametrize("name", [5, 0, b"x", ["A"], 1.5])
def test_names_must_be_strings(build, name):
    with pytest.raises(TypeError, match="name: expected a str, got"):
        build(name)


def test_names_survive_json():
    A = Algebra.from_structure_constants({(0, 0): {0: 1}}, name="named")
    assert Algebra.from_json(A.to_json()).name == "named"
    with pytest.raises(TypeError, match="name: expected a str"):
        A.name = 7


def test_elements_are_read_only():
    x = quaternions().basis_element("i")
    for attribute in ("flat", "algebra"):
        with pytest.raises(AttributeError, match=attribute):
            setattr(x, attribute, None)
    assert x.flat == (0, 1, 0, 0)


@pytest.mark.parametrize("flag", [True, np.bool_(True), False, np.bool_(False)])
def test_numpy_bools_are_bools_everywhere(flag):
    assert translation(3, cyclic=flag).cyclic is bool(flag)
    assert translations(3, cyclic=flag).name.endswith("cyclic=False)") is not bool(flag)
    assert clebsch_gordan(1, parity=flag).parity is bool(flag)
    assert spherical_harmonics(1, np.array([0.0, 0.0, 1.0]), normalize=flag).shape == (4,)


@pytest.mark.parametrize("flag", [1, 0, "yes", None, np.int64(1), 1.0])
def test_non_bools_are_refused_as_flags(flag):
    for call, argument in ((lambda: translation(3, cyclic=flag), "cyclic"),
                           (lambda: translations(3, cyclic=flag), "cyclic"),
                           (lambda: clebsch_gordan(1, parity=flag), "parity"),
                           (lambda: spherical_harmonics(1, np.array([0.0, 0.0, 1.0]), normalize=flag), "normalize")):
        with pytest.raises(TypeError, match=f"{argument}: expected a bool, got"):
            call()


@pytest.mark.parametrize("build, label", [
    (quaternions, "q"), (lambda: Algebra.from_function(2, lambda i, j: {}), "e_9"), (lambda: diagonal(3), "e_\u0661"),
    (lambda: translation(4), "e_4"), (lambda: tensor_product(diagonal(2), diagonal(3)), ("e_0", "e_7")),
    (lambda: tensor_product(diagonal(2), diagonal(3)), (0, 3)), (quaternions, ["i"]),
])
def test_bad_labels_raise_value_error_naming_the_label(build, label):
    A = build()
    with pytest.raises(ValueError, match="label: ") as error:
        A.index(label)
    assert not isinstance(error.value, KeyError)
    with pytest.raises(ValueError, match="label: "):
        A.basis_element(label)


def test_negative_indices_in_a_mapping_are_named():
    with pytest.raises(ValueError, match=r"lam key \(-1, -1\): index -1 out of range"):
        Algebra.from_structure_constants({(-1, -1): {-1: 1}})


@pytest.mark.parametrize("lam", [[[[False]]], [[[True]]], np.array([[[False]]]), np.zeros((2, 2, 2), dtype=bool),
                                 {(0, 0): {0: False}}])
@pytest.mark.parametrize("exact", [True, False])
def test_bool_structure_constants_are_refused_whatever_their_value(lam, exact):
    """Issue 36: from_structure_constants([[[False]]]) was accepted (a zero algebra) where True is refused."""
    with pytest.raises(TypeError, match=r"lam\[.*\]: expected .*bool"):
        Algebra.from_structure_constants(lam, exact=exact, dim=None if not isinstance(lam, dict) else 1)


@pytest.mark.parametrize("assumptions, error, message", [
    ({"real": "maybe"}, TypeError, "real: expected True or False, got str 'maybe'"),
    ({"positive": 1}, TypeError, "positive: expected True or False, got int 1"),
    ({"foo": True}, ValueError, "foo: expected a sympy assumption .* got the unknown name 'foo'"),
    ({"commutative": False}, ValueError, "commutative: expected a sympy assumption"),
])
def test_symbols_refuses_unknown_assumptions_and_values_that_are_not_bools(assumptions, error, message):
    A = Algebra.from_structure_constants({(0, 0): {0: 1}}, dim=1)
    with pytest.raises(error, match=message):
        A.symbols("x", **assumptions)
    assert A.symbols("x", positive=True).coefficients[0].is_positive
    assert A.symbols("x").coefficients[0].is_real


def test_combinator_classes_refuse_parts_that_are_not_algebras_by_name():
    """Issue 36: DirectSum([1, 2]) and TensorProduct(['a']) raised AttributeError."""
    from product_interactions.algebra import DirectSum, TensorProduct
    with pytest.raises(TypeError, match=r"^algebras\[0\]: expected an Algebra, got int 1"):
        DirectSum([1, 2])
    with pytest.raises(TypeError, match=r"^algebras\[0\]: expected an Algebra, got str 'a'"):
        TensorProduct(["a"])
    with pytest.raises(TypeError, match=r"^algebras: expected a list of Algebras, got str"):
        TensorProduct("ab")
    with pytest.raises(ValueError, match=r"^algebras: expected at least one algebra"):
        DirectSum([])
    assert DirectSum([quaternions(), complex_numbers()]).dim == 6


def test_float_constants_of_a_symbolic_algebra_are_refused_naming_the_entry():
    """Issue 36: structure_constants() of a symbolic algebra raised sympy's "Cannot convert expression to float"."""
    import sympy
    A = Algebra.from_structure_constants({(0, 0): {0: sympy.Symbol("a")}}, dim=1)
    for call in (A.structure_constants, A.sparse_structure_constants):
        with pytest.raises(TypeError, match=r"^dtype: lam\[0, 0, 0\] = a of .* is symbolic, so it has no float64 "
                                            r"value; use dtype=object, or substitute values for a first"):
            call()
    assert A.structure_constants(dtype=object)[0, 0, 0] == sympy.Symbol("a")


def test_numeric_overflow_names_the_operation_and_its_operands():
    """Issue 36: overflow was refused as "coefficients[0]: ... got inf", an argument the caller never passed."""
    N = quaternions().numeric()
    x = N.element([1e300, 0, 0, 0])
    with pytest.raises(ValueError, match=r"^\*: x \* y overflows float64 .* its coefficient of 1 is inf"):
        x * x
    with pytest.raises(ValueError, match=r"^\*: x \* scalar overflows float64"):
        x * 1e10
    with pytest.raises(ValueError, match=r"^\+: x \+ y overflows float64"):
        N.element([1.7e308, 0, 0, 0]) + N.element([1.7e308, 0, 0, 0])
