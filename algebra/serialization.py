"""Exact JSON for algebras, read back without evaluating anything.

Coefficients are written as text (``"3/4"``, ``"sqrt(3)/2"``, ``"2*a**2 - b"``) and read by a small
recursive-descent parser that accepts only integers, ``/``, ``*``, ``+``, ``-``, parentheses, ``sqrt`` of a
non-negative rational, integer powers and symbol names declared in the payload.  Nothing is passed to
``eval``, ``sympify`` or ``parse_expr``.

>>> from product_interactions.algebra import quaternions, Algebra
>>> H = quaternions()
>>> Algebra.from_json(H.to_json()) == H
True
>>> parse_coefficient("sqrt(3)/2 - 1/4", {})
-1/4 + sqrt(3)/2
>>> parse_coefficient("__import__('os')", {})
Traceback (most recent call last):
...
ValueError: coefficient: unexpected character '_' at position 0 in "__import__('os')"
"""
from __future__ import annotations

import json
import re

import sympy

from .algebra import MAX_ENTRIES, Algebra
from .direct_sum import DirectSum
from .structured import StructuredAlgebra
from .tensor_product import TensorProduct

FORMAT = "product-interactions/algebra"
VERSION = 1
_ASSUMPTIONS = ("real", "positive", "nonnegative", "integer")
_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z][A-Za-z0-9_]*)|(\*\*|[-+*/()]))")
_MAX_TEXT = 10_000
_MAX_EXPONENT = 64


# ---------------------------------------------------------------------- coefficients
class _Parser:
    """expr := ['-'] term (('+'|'-') term)*; term := power (('*'|'/') power)*; power := atom ['**' int];
    atom := int | name | 'sqrt' '(' expr ')' | '(' expr ')'."""

    def __init__(self, text: str, symbols: dict):
        self.text, self.symbols, self.tokens, position = text, symbols, [], 0
        while position < len(text):
            match = _TOKEN.match(text, position)
            if not match or match.end() == position:
                stripped = position + len(text[position:]) - len(text[position:].lstrip())
                if stripped == len(text):
                    break
                raise ValueError(f"coefficient: unexpected character {text[stripped]!r} at position {stripped} "
                                 f"in {text!r}")
            self.tokens.append(match.group(1) or match.group(2) or match.group(3))
            position = match.end()
        self.at = 0

    def fail(self, expected: str):
        found = self.tokens[self.at] if self.at < len(self.tokens) else "the end"
        raise ValueError(f"coefficient: expected {expected} but found {found!r} in {self.text!r}")

    def peek(self):
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, token=None):
        current = self.peek()
        if current is None or token is not None and current != token:
            self.fail(repr(token) if token else "a number, a name, 'sqrt' or '('")
        self.at += 1
        return current

    def parse(self):
        value = self.expr()
        if self.peek() is not None:
            self.fail("an operator or the end")
        return value

    def expr(self):
        negative = self.peek() == "-" and self.take()
        value = self.term()
        value = -value if negative else value
        while self.peek() in ("+", "-"):
            sign = self.take()
            term = self.term()
            value = value + term if sign == "+" else value - term
        return value

    def term(self):
        value = self.power()
        while self.peek() in ("*", "/"):
            if self.take() == "*":
                value = value * self.power()
            else:
                divisor = self.power()
                if not divisor.is_number or divisor == 0:
                    raise ValueError(f"coefficient: division only by a nonzero number in {self.text!r}")
                value = value / divisor
        return value

    def power(self):
        base = self.atom()
        if self.peek() == "**":
            self.take()
            exponent = self.take()
            if not exponent.isdigit() or int(exponent) > _MAX_EXPONENT:
                raise ValueError(f"coefficient: exponents must be integers <= {_MAX_EXPONENT}, got {exponent!r} "
                                 f"in {self.text!r}")
            return base ** int(exponent)
        return base

    def atom(self):
        token = self.take()
        if token.isdigit():
            return sympy.Integer(int(token))
        if token == "(":
            value = self.expr()
            self.take(")")
            return value
        if token == "sqrt":
            self.take("(")
            radicand = self.expr()
            self.take(")")
            if not isinstance(radicand, sympy.Rational) or radicand < 0:
                raise ValueError(f"coefficient: sqrt takes a non-negative rational, got {radicand} in {self.text!r}")
            return sympy.sqrt(radicand)
        if token in self.symbols:
            return self.symbols[token]
        if token[0].isalpha():
            raise ValueError(f"coefficient: unknown name {token!r} in {self.text!r} (declare symbols in 'symbols')")
        self.fail("a number, a name, 'sqrt' or '('")


def parse_coefficient(text: str, symbols: dict) -> sympy.Expr:
    """Parse one coefficient written by `format_coefficient`; `symbols` maps names to sympy symbols."""
    if not isinstance(text, str):
        raise TypeError(f"coefficient: expected a string, got {type(text).__name__} {text!r}")
    if len(text) > _MAX_TEXT:
        raise ValueError(f"coefficient: longer than {_MAX_TEXT} characters")
    return _Parser(text, symbols).parse()


def format_coefficient(value: sympy.Expr, symbols: dict) -> str:
    """Text for `value` that `parse_coefficient` reads back to the same expression (checked)."""
    text = sympy.sstr(value, order="lex")
    try:
        readable = parse_coefficient(text, symbols) == value
    except ValueError:
        readable = False
    if not readable:
        raise ValueError(f"to_json: the coefficient {value} cannot be written exactly (only integers, rationals, "
                         f"square roots of rationals and polynomials in symbols are supported)")
    return text


# ---------------------------------------------------------------------- algebras
def _collect_symbols(algebra):
    found = {}
    for factor in _plain_parts(algebra):
        for *_, c in factor.entries():
            for s in c.free_symbols:
                if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", s.name) or s.name == "sqrt":
                    raise ValueError(f"to_json: symbol name {s.name!r} cannot be written (letters, digits, _)")
                if found.setdefault(s.name, s) != s:
                    raise ValueError(f"to_json: two different symbols are both named {s.name!r}")
    return found


def _plain_parts(algebra):
    if isinstance(algebra, TensorProduct):
        return algebra.factors
    if isinstance(algebra, DirectSum):
        return [part for summand in algebra.summands for part in _plain_parts(summand)]
    return [algebra]


def _builders() -> dict:
    """The structured builders a document may name, with the type of each keyword argument."""
    from . import clebsch_gordan, clifford, diagonal, gaunt, matrix_algebra, position, tensor_algebra, translation
    return {"diagonal": (diagonal, {"n": int}), "position": (position, {"n": int}),
            "translation": (translation, {"n": int, "cyclic": bool}),
            "tensor_algebra": (tensor_algebra, {"dim": int, "degree": int}),
            "clifford": (clifford, {"p": int, "q": int, "r": int, "basis": list}),
            "matrix_algebra": (matrix_algebra, {"n": int}),
            "clebsch_gordan": (clebsch_gordan, {"lmax": int, "parity": bool}), "gaunt": (gaunt, {"lmax": int})}


def _payload(algebra, symbols):
    payload = {"name": algebra.name}
    if isinstance(algebra, TensorProduct):
        payload.update(kind="tensor_product", factors=[_payload(f, symbols) for f in algebra.factors])
        return payload
    if isinstance(algebra, DirectSum):
        payload.update(kind="direct_sum", summands=[_payload(s, symbols) for s in algebra.summands])
        return payload
    if isinstance(algebra, StructuredAlgebra):
        kind, params = algebra.builder()
        payload.update(kind=kind, params=params)
        if algebra.nnz > MAX_ENTRIES:                 # the rule alone: too large to write out
            return payload
    else:
        payload.update(kind="algebra")
    payload.update(basis=list(algebra.basis), structure_constants=[[i, j, k, format_coefficient(c, symbols)]
                                                                  for i, j, k, c in algebra.entries()])
    return payload


def dumps(algebra) -> str:
    """The JSON text of `algebra` (see the module docstring)."""
    symbols = _collect_symbols(algebra)
    document = {
        "format": FORMAT, "version": VERSION,
        "symbols": {name: {a: True for a in _ASSUMPTIONS if s.assumptions0.get(a)} for name, s in symbols.items()},
        "algebra": _payload(algebra, symbols),
    }
    return json.dumps(document, ensure_ascii=False)


def _require(mapping, key, kind, where):
    if not isinstance(mapping, dict) or key not in mapping:
        raise ValueError(f"from_json: {where} is missing the key {key!r}")
    value = mapping[key]
    if not isinstance(value, kind):
        raise ValueError(f"from_json: {where}[{key!r}] expected {kind.__name__}, got {type(value).__name__}")
    return value


def _build(payload, symbols, where):
    kind = _require(payload, "kind", str, where)
    name = _require(payload, "name", str, where)
    if kind == "tensor_product":
        factors = [_build(f, symbols, f"{where}.factors[{n}]")
                   for n, f in enumerate(_require(payload, "factors", list, where))]
        return TensorProduct(factors, name=name)
    if kind == "direct_sum":
        summands = [_build(s, symbols, f"{where}.summands[{n}]")
                    for n, s in enumerate(_require(payload, "summands", list, where))]
        return DirectSum(summands, name=name)
    builders = _builders()
    if kind != "algebra" and kind not in builders:
        raise ValueError(f"from_json: {where}.kind expected 'algebra', 'tensor_product', 'direct_sum' or a builder "
                         f"({', '.join(sorted(builders))}), got {kind!r}")
    rebuilt = None if kind == "algebra" else _rebuild(kind, _require(payload, "params", dict, where), where)
    if rebuilt is not None and "structure_constants" not in payload:
        rebuilt.name = name
        return rebuilt
    basis = _require(payload, "basis", list, where)
    table = {}
    for n, row in enumerate(_require(payload, "structure_constants", list, where)):
        if not (isinstance(row, list) and len(row) == 4 and all(type(v) is int for v in row[:3])
                and isinstance(row[3], str)):
            raise ValueError(f"from_json: {where}.structure_constants[{n}] expected [i, j, k, \"coefficient\"], "
                             f"got {row!r}")
        i, j, k, text = row
        table.setdefault((i, j), {})[k] = parse_coefficient(text, symbols)
    algebra = Algebra.from_structure_constants(table, basis=basis, name=name, dim=len(basis) or None)
    if rebuilt is None:
        return algebra
    if rebuilt != algebra:
        raise ValueError(f"from_json: {where} says {rebuilt.name} but its structure constants differ from that "
                         f"algebra's")
    rebuilt.name = name
    return rebuilt


def _rebuild(kind: str, params: dict, where: str):
    """The builder call a document names, its arguments checked against the builder's whitelist."""
    builder, allowed = _builders()[kind]
    for key, value in params.items():
        expected = allowed.get(key)
        if expected is None or type(value) is not expected or (
                expected is list and not all(isinstance(v, str) for v in value)):
            raise ValueError(f"from_json: {where}.params[{key!r}] is not an argument of {kind} "
                             f"({', '.join(f'{k}: {v.__name__}' for k, v in allowed.items())}), got {value!r}")
    return builder(**params)


def loads(text) -> Algebra:
    """Read an algebra from `dumps` output; never evaluates code."""
    if not isinstance(text, (str, bytes)):
        raise TypeError(f"text: expected a JSON string, got {type(text).__name__}")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"text: not valid JSON ({error})") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        found = document.get("format") if isinstance(document, dict) else type(document).__name__
        raise ValueError(f"text: expected format {FORMAT!r}, got {found!r}")
    if document.get("version") != VERSION:
        raise ValueError(f"text: expected format version {VERSION}, got {document.get('version')!r}")
    declared = _require(document, "symbols", dict, "document")
    symbols = {}
    for name, assumptions in declared.items():
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name) or name == "sqrt":
            raise ValueError(f"from_json: symbol name {name!r} is not allowed (letters, digits, _)")
        if not isinstance(assumptions, dict) or not set(assumptions) <= set(_ASSUMPTIONS) or not all(
                v is True for v in assumptions.values()):
            raise ValueError(f"from_json: symbols[{name!r}] expected assumptions among {_ASSUMPTIONS}, "
                             f"got {assumptions!r}")
        symbols[name] = sympy.Symbol(name, **assumptions)
    return _build(_require(document, "algebra", dict, "document"), symbols, "algebra")
