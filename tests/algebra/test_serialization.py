"""Exact JSON round trips and the safe coefficient parser."""
import json
import time

import pytest
import sympy

from product_interactions.algebra import (Algebra, clifford, complex_numbers, diagonal, direct_sum, matrix_algebra, position,
                     quaternions, tensor_algebra, tensor_product, translation)
from product_interactions.algebra.serialization import parse_coefficient

BUILDERS = [
    lambda: tensor_algebra(2, 3), lambda: tensor_algebra(3, 2), lambda: diagonal(4), lambda: position(3),
    lambda: translation(5), lambda: translation(5, cyclic=False), lambda: clifford(3, 0, 1), lambda: clifford(1, 1),
    lambda: complex_numbers(), lambda: quaternions(), lambda: matrix_algebra(3),
    lambda: direct_sum(quaternions(), diagonal(2)), lambda: tensor_product(position(3), translation(2), diagonal(2)),
]


@pytest.mark.parametrize("build", BUILDERS)
def test_round_trip_is_exact_for_every_builder(build):
    A = build()
    B = Algebra.from_json(A.to_json())
    assert B == A and B.name == A.name and type(B) is type(A) and B.shape == A.shape and B.basis == A.basis
    assert B.entries() == A.entries() if len(A.shape) == 1 else B.factors == A.factors


def test_round_trip_keeps_algebraic_numbers_and_symbols():
    a = sympy.Symbol("a", positive=True)
    b = sympy.Symbol("b", real=True)
    c = sympy.Symbol("c")
    table = {(0, 0): {0: sympy.sqrt(3) / 2 - sympy.Rational(1, 4), 1: a**2 * b - 3 * c / 7},
             (1, 1): {1: sympy.sqrt(sympy.Rational(2, 3)) * b}}
    A = Algebra.from_structure_constants(table, basis=["u", "v"], name="weird")
    B = Algebra.from_json(A.to_json())
    assert B == A
    assert B.product_of_basis(0, 0)[1].free_symbols == {a, b, c}


def test_tensor_algebra_keeps_its_helpers():
    T = Algebra.from_json(tensor_algebra(2, 2).to_json())
    assert T.lift([1, 2]).flat == (1, 1, 2, 0, 0, 0, 0)


def test_unsupported_coefficients_are_refused_on_writing():
    A = Algebra.from_structure_constants({(0, 0): {0: sympy.cbrt(2)}}, dim=1)
    with pytest.raises(ValueError, match="cannot be written exactly"):
        A.to_json()


MALICIOUS = "__import__('os').system('touch {marker}')"


@pytest.mark.parametrize("where", ["coefficient", "symbol", "kind", "basis"])
def test_malicious_payloads_are_rejected_without_side_effects(tmp_path, where):
    marker = tmp_path / "pwned"
    payload = MALICIOUS.format(marker=marker)
    document = json.loads(diagonal(2).to_json())
    if where == "coefficient":
        document["algebra"]["structure_constants"][0][3] = payload
    elif where == "symbol":
        document["symbols"] = {payload: {"real": True}}
    elif where == "kind":
        document["algebra"]["kind"] = payload
    else:
        document["algebra"]["basis"] = payload
    with pytest.raises(ValueError):
        Algebra.from_json(json.dumps(document))
    assert not marker.exists()


@pytest.mark.parametrize("text", [
    "__import__('os').system('touch /tmp/x')", "lambda: 0", "1 if 1 else 0", "a.b", "x[0]", "2**1000",
    "sqrt(-2)", "sqrt(a)", "1/0", "1/a", "exp(1)", "1.5", "1e3", "(1", "1 +", "", "1 2", "a", "I",
])
def test_parser_whitelist(text):
    with pytest.raises(ValueError, match="coefficient"):
        parse_coefficient(text, {})


@pytest.mark.parametrize("text, value", [
    ("-7", -7), ("3/4", sympy.Rational(3, 4)), ("sqrt(3)/2", sympy.sqrt(3) / 2), ("-(1 + 2)*3", -9),
    ("sqrt(2/9)", sympy.sqrt(2) / 3), ("2 - 3*sqrt(5)", 2 - 3 * sympy.sqrt(5)), ("a**2 - a/2", None),
])
def test_parser_reads_exact_values(text, value):
    a = sympy.Symbol("a")
    expected = value if value is not None else a**2 - a / 2
    assert parse_coefficient(text, {"a": a}) == expected


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(format="other/format"), "expected format 'product-interactions/algebra', got 'other"),
    (lambda d: d.update(version=99), "expected format version 1, got 99"),
    (lambda d: d.pop("algebra"), "missing the key 'algebra'"),
    (lambda d: d["algebra"].update(kind="octonions"), "kind expected 'algebra'"),
    (lambda d: d["algebra"]["structure_constants"].append([0, 0]), r"structure_constants\[2\] expected \[i, j, k"),
    (lambda d: d["algebra"]["structure_constants"].append([0, 9, 0, "1"]), "out of range"),
    (lambda d: d["algebra"].update(basis=["a", "a"]), "labels must be distinct"),
    (lambda d: d.update(symbols={"x": {"evaluate": True}}), r"symbols\['x'\] expected assumptions"),
])
def test_malformed_documents(mutate, message):
    document = json.loads(diagonal(2).to_json())
    mutate(document)
    with pytest.raises(ValueError, match=message):
        Algebra.from_json(json.dumps(document))


def test_not_json_or_wrong_type():
    with pytest.raises(ValueError, match="text: not valid JSON"):
        Algebra.from_json("{not json")
    with pytest.raises(TypeError, match="text: expected a JSON string"):
        Algebra.from_json(42)
    with pytest.raises(ValueError, match="expected format"):
        Algebra.from_json("[1, 2]")


def test_forged_tensor_algebra_is_detected():
    document = json.loads(tensor_algebra(2, 1).to_json())
    document["algebra"]["structure_constants"][0][3] = "2"
    with pytest.raises(ValueError, match=r"says tensor_algebra\(2, 1\) but its structure constants differ"):
        Algebra.from_json(json.dumps(document))


@pytest.mark.parametrize("text, limit", [
    ("((((2**64)**64)**64)**64)**64", "MAX_BITS"),
    ("(a+b+c+d+e+f)**64", "MAX_TERMS"),
    ("(a+b+c)**64*(d+e+f)**64", "MAX_TERMS"),
    ("9" * 5000, "MAX_DIGITS"),
    ("(" * 3000 + "1" + ")" * 3000, "MAX_DEPTH"),
    ("sqrt(" * 100 + "2" + ")" * 100, "MAX_DEPTH"),
    ("sqrt(" + "9" * 200 + ")", "MAX_SQRT_BITS"),
    ("2**65", "MAX_EXPONENT"),
    ("2**" + "9" * 5000, "MAX_EXPONENT"),
    ("1" * 10_001, "MAX_TEXT"),
])
def test_coefficient_work_is_bounded_before_it_is_done(text, limit):
    symbols = {name: sympy.Symbol(name) for name in "abcdef"}
    start = time.perf_counter()
    with pytest.raises(ValueError, match=limit):
        parse_coefficient(text, symbols)
    assert time.perf_counter() - start < 0.5


@pytest.mark.parametrize("text", ["2**2**2**2**2**2**2", "1e100000000", "1_000", "\u0661\u0662", "\uff11", "0x10"])
def test_coefficient_syntax_outside_the_grammar_is_refused(text):
    with pytest.raises(ValueError, match="coefficient"):
        parse_coefficient(text, {})


def test_bounded_coefficients_within_the_limits_still_read():
    a, b = sympy.symbols("a b")
    assert parse_coefficient("(a+b)**3 - 2**64/3", {"a": a, "b": b}) == (a + b)**3 - sympy.Integer(2)**64 / 3
    assert parse_coefficient("9" * 1000, {}) == int("9" * 1000)
