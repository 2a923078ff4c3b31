"""A corpus of hostile JSON for `Algebra.from_json`: each is refused within 2 s by a ValueError naming the field."""
import json
import time

import pytest

from product_interactions.algebra import Algebra, diagonal, limits, tensor_product, translation

HEADER = {"format": "product-interactions/algebra", "version": 1, "symbols": {}}


def document(algebra, **top):
    return json.dumps({**HEADER, **top, "algebra": algebra})


def plain(rows, basis=("u", "v"), **extra):
    return document({"kind": "algebra", "name": "A", "basis": list(basis), "structure_constants": rows, **extra})


def builder(kind, **params):
    return document({"kind": kind, "name": "B", "params": params})


def nested_tensor_products(depth):
    algebra = json.loads(diagonal(2).to_json())["algebra"]
    for _ in range(depth):
        algebra = {"kind": "tensor_product", "name": "T", "factors": [algebra, algebra]}
    return document(algebra)


def nested_tensor_products_text(depth):
    leaf = json.dumps(json.loads(diagonal(2).to_json())["algebra"])
    text = leaf
    for _ in range(depth):
        text = '{"kind": "tensor_product", "name": "T", "factors": [' + text + "]}"
    return json.dumps(HEADER)[:-1] + ', "algebra": ' + text + "}"


# (id, text or bytes, words the message must contain)
HOSTILE = [
    ("huge tensor degree", builder("tensor_algebra", dim=2, degree=10**18), ["params", "MAX_DIM"]),
    ("huge tensor degree, dim 1", builder("tensor_algebra", dim=1, degree=10**18), ["params", "MAX_DIM"]),
    ("huge translation rebuilt from rows", document({"kind": "translation", "name": "T", "params": {"n": 10**7},
                                                     "basis": ["e_0"], "structure_constants": []}),
     ["algebra", "structure constants differ"]),
    ("bool as int param", builder("diagonal", n=True), ["params['n']"]),
    ("unknown param", builder("diagonal", n=2, evil=1), ["params['evil']"]),
    ("missing param", builder("diagonal"), ["params", "n"]),
    ("negative param", builder("diagonal", n=-1), ["params", "n"]),
    ("huge lmax", builder("clebsch_gordan", lmax=10**9), ["params", "lmax"]),
    ("tower of powers", plain([[0, 0, 0, "2**2**2**2**2**2**2"]]), ["structure_constants[0]", "coefficient"]),
    ("power of powers", plain([[0, 0, 0, "((((2**64)**64)**64)**64)**64"]]), ["structure_constants[0]", "MAX_BITS"]),
    ("polynomial blow-up", document({"kind": "algebra", "name": "A", "basis": ["u"], "structure_constants":
                                     [[0, 0, 0, "(a+b+c+d+e+f)**64"]]},
                                    symbols={c: {} for c in "abcdef"}), ["structure_constants[0]", "MAX_TERMS"]),
    ("exponent notation", plain([[0, 0, 0, "1e100000000"]]), ["structure_constants[0]", "coefficient"]),
    ("5000-digit coefficient", plain([[0, 0, 0, "9" * 5000]]), ["structure_constants[0]", "MAX_DIGITS"]),
    ("3000 parentheses", plain([[0, 0, 0, "(" * 3000 + "1" + ")" * 3000]]), ["structure_constants[0]", "MAX_DEPTH"]),
    ("unicode digits", plain([[0, 0, 0, "\u0661\u0662"]]), ["structure_constants[0]", "coefficient"]),
    ("fullwidth digits", plain([[0, 0, 0, "\uff11"]]), ["structure_constants[0]", "coefficient"]),
    ("division by zero", plain([[0, 0, 0, "1/0"]]), ["structure_constants[0]", "division"]),
    ("empty coefficient", plain([[0, 0, 0, ""]]), ["structure_constants[0]", "coefficient"]),
    ("python code", plain([[0, 0, 0, "__import__('os')"]]), ["structure_constants[0]", "coefficient"]),
    ("duplicate entry", plain([[0, 0, 0, "1"], [0, 0, 0, "2"]]), ["structure_constants[1]", "twice"]),
    ("duplicate key", '{"format": "product-interactions/algebra", "format": "x", "version": 1}', ["text", "twice"]),
    ("index out of range", plain([[0, 0, 5, "1"]]), ["lam", "5"]),
    ("negative index", plain([[0, -1, 0, "1"]]), ["lam", "-1"]),
    ("float index", plain([[0, 0.0, 0, "1"]]), ["structure_constants[0]"]),
    ("short row", plain([[0, 0, "1"]]), ["structure_constants[0]"]),
    ("empty tensor product", document({"kind": "tensor_product", "name": "T", "factors": []}), ["factors", "empty"]),
    ("empty direct sum", document({"kind": "direct_sum", "name": "S", "summands": []}), ["summands", "empty"]),
    ("tensor products 900 deep", nested_tensor_products_text(900), ["text", "nested too deeply"]),
    ("tensor products 400 deep", nested_tensor_products_text(400), ["factors[0]", "MAX_NESTING"]),
    ("tensor product inside a factor", nested_tensor_products(2), ["factors[0]", "plain algebra"]),
    ("100,000 brackets", "[" * 100_000 + "]" * 100_000, ["text", "nested too deeply"]),
    ("invalid utf-8", b'{"format": "' + bytes([0xFF, 0xFE]) + b'"}', ["text", "UTF-8"]),
    ("5000-digit integer", '{"version": ' + "9" * 5000 + "}", ["text", "not valid JSON"]),
    ("version true", json.dumps({**HEADER, "version": True}), ["text", "version"]),
    ("name not a string", document({"kind": "algebra", "name": 5, "basis": ["u"], "structure_constants": []}),
     ["name"]),
    ("label not a string", plain([], basis=["u", 5]), ["basis"]),
    ("duplicate labels", plain([], basis=["u", "u"]), ["basis", "distinct"]),
    ("unknown kind", document({"kind": "eval", "name": "x"}), ["kind"]),
    ("symbol named sqrt", document({"kind": "algebra", "name": "A", "basis": ["u"], "structure_constants": []},
                                   symbols={"sqrt": {}}), ["symbol name"]),
    ("unicode symbol name", document({"kind": "algebra", "name": "A", "basis": ["u"], "structure_constants": []},
                                     symbols={"a\u0661": {}}), ["symbol name"]),
    ("bad assumption", document({"kind": "algebra", "name": "A", "basis": ["u"], "structure_constants": []},
                                symbols={"a": {"commutative": False}}), ["symbols['a']"]),
    ("not an object", "[]", ["text", "format"]),
    ("huge text", " " * (2**28 + 1), ["text", "MAX_DOCUMENT"]),
]


@pytest.mark.parametrize("text, words", [case[1:] for case in HOSTILE], ids=[case[0] for case in HOSTILE])
def test_hostile_documents_are_refused_quickly_naming_the_field(text, words):
    start = time.perf_counter()
    with pytest.raises((ValueError, TypeError)) as error:
        Algebra.from_json(text)
    assert time.perf_counter() - start < 2
    message = str(error.value)
    assert all(word in message for word in words), message


def test_valid_documents_still_read():
    for algebra in (diagonal(3), translation(4), tensor_product(diagonal(2), translation(3))):
        assert Algebra.from_json(algebra.to_json()) == algebra


def test_row_count_is_bounded_before_the_rows_are_read(monkeypatch):
    monkeypatch.setattr(limits, "MAX_ENTRIES", 10)
    with pytest.raises(ValueError, match=r"structure_constants: 11 rows, more than algebra.limits.MAX_ENTRIES"):
        Algebra.from_json(plain([[0, 0, 0, "1"]] * 11))
