"""Exact JSON for algebras, read back without evaluating anything.

Coefficients are written as text (``"3/4"``, ``"sqrt(3)/2"``, ``"2*a**2 - b"``) and read by a small
recursive-descent parser that accepts only integers, ``/``, ``*``, ``+``, ``-``, parentheses, ``sqrt`` of a
non-negative rational, integer powers and symbol names declared in the payload.  Nothing is passed to
``eval``, ``sympify`` or ``parse_expr``.  A numeric algebra (``exact=False``) writes its tolerance as ``"tol"``
and its constants as JSON numbers, which read back to the same floats.

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
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn, TypeVar

import sympy

from .algebra import Algebra
from ._direct_sum import DirectSum, direct_sum
from .limits import MAX_ENTRIES, check_size
from .structured import StructuredAlgebra
from ._tensor_product import TensorProduct

FORMAT = "product-interactions/algebra"
VERSION = 1
_ASSUMPTIONS = ("real", "positive", "nonnegative", "integer")
_TOKEN = re.compile(r"\s*(?:([0-9]+)|([A-Za-z][A-Za-z0-9_]*)|(\*\*|[-+*/()]))", re.ASCII)
_T = TypeVar("_T")
#: What each rule of the parser returns: the value and bounds on its monomials and on the bits of its numbers.
_Parsed = tuple[sympy.Expr, int, int]

#: Bounds on one coefficient's text and on the work of reading it; beyond them it is refused (ValueError).
MAX_TEXT = 10_000            # characters
MAX_DIGITS = 1_000           # digits of one integer
MAX_EXPONENT = 64            # of ``**``
MAX_DEPTH = 64               # nested parentheses and sqrt
MAX_TERMS = 10_000           # monomials of the expanded value (an upper bound computed while parsing)
MAX_BITS = 2**16             # bits of the numbers in the value (an upper bound computed while parsing)
MAX_SQRT_BITS = 256          # bits of the numerator and the denominator of a radicand


# ---------------------------------------------------------------------- coefficients
class _Parser:
    """expr := ['-'] term (('+'|'-') term)*; term := power (('*'|'/') power)*; power := atom ['**' int];
    atom := int | name | 'sqrt' '(' expr ')' | '(' expr ')'.

    Every rule returns ``(value, terms, bits)``: the sympy value and upper bounds on the number of monomials of
    its expansion and on the bits of its numbers, checked against the limits before the work is done.
    """

    def __init__(self, text: str, symbols: dict[str, sympy.Symbol]) -> None:
        self.tokens: list[str] = []
        self.text, self.symbols, self.depth, position = text, symbols, 0, 0
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

    def fail(self, expected: str) -> NoReturn:
        found = self.tokens[self.at] if self.at < len(self.tokens) else "the end"
        raise ValueError(f"coefficient: expected {expected} but found {found!r} in {self.text!r}")

    def bound(self, terms: int, bits: int) -> tuple[int, int]:
        if terms > MAX_TERMS:
            raise ValueError(f"coefficient: expands to more than MAX_TERMS = {MAX_TERMS:,} terms (bound "
                             f"{terms:,}) in {self.text[:80]!r}")
        if bits > MAX_BITS:
            raise ValueError(f"coefficient: holds numbers of more than MAX_BITS = {MAX_BITS:,} bits (bound "
                             f"{bits:,}) in {self.text[:80]!r}")
        return terms, bits

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, token: str | None = None) -> str:
        current = self.peek()
        if current is None or token is not None and current != token:
            self.fail(repr(token) if token else "a number, a name, 'sqrt' or '('")
        self.at += 1
        return current

    def parse(self) -> sympy.Expr:
        value, _, _ = self.expr()
        if self.peek() is not None:
            self.fail("an operator or the end")
        return value

    def expr(self) -> _Parsed:
        negative = self.peek() == "-" and self.take()
        value, terms, bits = self.term()
        value = -value if negative else value
        while self.peek() in ("+", "-"):
            sign = self.take()
            term, more, size = self.term()
            terms, bits = self.bound(terms + more, max(bits, size) + 1)
            value = value + term if sign == "+" else value - term
        return value, terms, bits

    def term(self) -> _Parsed:
        value, terms, bits = self.power()
        while self.peek() in ("*", "/"):
            multiply = self.take() == "*"
            factor, more, size = self.power()
            terms, bits = self.bound(terms * more, bits + size)
            if multiply:
                value = value * factor
            elif not factor.is_number or factor == 0:
                raise ValueError(f"coefficient: division only by a nonzero number in {self.text!r}")
            else:
                value = value / factor
        return value, terms, bits

    def power(self) -> _Parsed:
        base, terms, bits = self.atom()
        if self.peek() != "**":
            return base, terms, bits
        self.take()
        exponent = self.take()
        if not exponent.isdigit() or len(exponent) > 3 or int(exponent) > MAX_EXPONENT:
            raise ValueError(f"coefficient: exponents must be integers <= MAX_EXPONENT = {MAX_EXPONENT}, got "
                             f"{exponent!r} in {self.text!r}")
        n = int(exponent)
        terms, bits = self.bound(math.comb(n + terms - 1, n) if terms > 1 else 1, bits * max(n, 1))
        return base ** n, terms, bits

    def atom(self) -> _Parsed:
        token = self.take()
        if token.isdigit():
            if len(token) > MAX_DIGITS:
                raise ValueError(f"coefficient: an integer of {len(token):,} digits, more than MAX_DIGITS = "
                                 f"{MAX_DIGITS:,}, in {self.text[:80]!r}")
            value = int(token)
            return sympy.Integer(value), 1, value.bit_length()
        if token in ("(", "sqrt"):
            return self.nested(token)
        if token in self.symbols:
            return self.symbols[token], 1, 1
        if token[0].isalpha():
            raise ValueError(f"coefficient: unknown name {token!r} in {self.text!r} (declare symbols in 'symbols')")
        self.fail("a number, a name, 'sqrt' or '('")

    def nested(self, token: str) -> _Parsed:
        """The inside of ``( ... )`` or ``sqrt( ... )``, at most `MAX_DEPTH` deep."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ValueError(f"coefficient: nested more than MAX_DEPTH = {MAX_DEPTH} parentheses deep in "
                             f"{self.text[:80]!r}")
        if token == "sqrt":
            self.take("(")
        value, terms, bits = self.expr()
        self.take(")")
        self.depth -= 1
        if token == "(":
            return value, terms, bits
        if not isinstance(value, sympy.Rational) or value < 0:
            raise ValueError(f"coefficient: sqrt takes a non-negative rational, got {value} in {self.text!r}")
        if max(value.p.bit_length(), value.q.bit_length()) > MAX_SQRT_BITS:
            raise ValueError(f"coefficient: sqrt of a rational with more than MAX_SQRT_BITS = {MAX_SQRT_BITS} "
                             f"bits in {self.text[:80]!r}")
        return sympy.sqrt(value), 1, bits


def parse_coefficient(text: str, symbols: dict[str, sympy.Symbol]) -> sympy.Expr:
    """Parse one coefficient written by `format_coefficient`; `symbols` maps names to sympy symbols."""
    if not isinstance(text, str):
        raise TypeError(f"coefficient: expected a string, got {type(text).__name__} {text!r}")
    if len(text) > MAX_TEXT:
        raise ValueError(f"coefficient: {len(text):,} characters, more than MAX_TEXT = {MAX_TEXT:,}")
    return _Parser(text, symbols).parse()


def format_coefficient(value: sympy.Expr, symbols: dict[str, sympy.Symbol]) -> str:
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
def _collect_symbols(algebra: Algebra) -> dict[str, sympy.Symbol]:
    found: dict[str, sympy.Symbol] = {}
    for factor in _plain_parts(algebra):
        if factor.tol is not None:                    # floats: no symbols
            continue
        for *_, c in factor.entries():
            for s in c.free_symbols:
                if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", s.name) or s.name == "sqrt":
                    raise ValueError(f"to_json: symbol name {s.name!r} cannot be written (letters, digits, _)")
                if found.setdefault(s.name, s) != s:
                    raise ValueError(f"to_json: two different symbols are both named {s.name!r}")
    return found


def _plain_parts(algebra: Algebra) -> Sequence[Algebra]:
    if isinstance(algebra, TensorProduct):
        return algebra.factors
    if isinstance(algebra, DirectSum):
        return [part for summand in algebra.summands for part in _plain_parts(summand)]
    return [algebra]


def _builders() -> dict[str, tuple[Callable[..., Algebra], dict[str, type]]]:
    """The structured builders a document may name, with the type of each keyword argument."""
    from . import clebsch_gordan, clifford, diagonal, gaunt, matrix_algebra, position, tensor_algebra, translation
    return {"diagonal": (diagonal, {"n": int}), "position": (position, {"n": int}),
            "translation": (translation, {"n": int, "cyclic": bool}),
            "tensor_algebra": (tensor_algebra, {"dim": int, "degree": int}),
            "clifford": (clifford, {"p": int, "q": int, "r": int, "basis": list}),
            "matrix_algebra": (matrix_algebra, {"n": int}),
            "clebsch_gordan": (clebsch_gordan, {"lmax": int, "parity": bool}), "gaunt": (gaunt, {"lmax": int})}


def _payload(algebra: Algebra, symbols: dict[str, sympy.Symbol]) -> dict[str, Any]:
    payload: dict[str, Any] = {"name": algebra.name}
    if algebra.tol is not None:
        payload["tol"] = algebra.tol
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
    value = (lambda c: float(c)) if algebra.tol is not None else (lambda c: format_coefficient(c, symbols))
    payload.update(basis=list(algebra.basis), structure_constants=[[i, j, k, value(c)]
                                                                  for i, j, k, c in algebra.entries()])
    return payload


def dumps(algebra: Algebra) -> str:
    """The JSON text of `algebra` (see the module docstring)."""
    symbols = _collect_symbols(algebra)
    document = {
        "format": FORMAT, "version": VERSION,
        "symbols": {name: {a: True for a in _ASSUMPTIONS if s.assumptions0.get(a)} for name, s in symbols.items()},
        "algebra": _payload(algebra, symbols),
    }
    return json.dumps(document, ensure_ascii=False)


#: Bounds on a document, checked before the work they limit.
MAX_DOCUMENT = 2**28         # characters of the JSON text
MAX_NESTING = 16             # tensor products and direct sums inside one another


def _require(mapping: Any, key: str, kind: type[_T], where: str) -> _T:
    if not isinstance(mapping, dict) or key not in mapping:
        raise ValueError(f"from_json: {where} is missing the key {key!r}")
    value = mapping[key]
    if not isinstance(value, kind) or kind is int and isinstance(value, bool):
        raise ValueError(f"from_json: {where}[{key!r}] expected {kind.__name__}, got {type(value).__name__}")
    return value


def _parts(payload: Any, key: str, symbols: dict[str, sympy.Symbol], where: str, depth: int) -> list[Algebra]:
    """The algebras listed under `key` (factors or summands): at least one, each read by `_build`."""
    items = _require(payload, key, list, where)
    if not items:
        raise ValueError(f"from_json: {where}.{key} expected at least one algebra, got an empty list")
    return [_build(item, symbols, f"{where}.{key}[{n}]", depth + 1) for n, item in enumerate(items)]


def _build(payload: Any, symbols: dict[str, sympy.Symbol], where: str, depth: int = 0) -> Algebra:
    """The algebra of `payload`: exact, or numeric within the tolerance its ``"tol"`` gives."""
    algebra = _build_algebra(payload, symbols, where, depth)
    if isinstance(payload, dict) and "tol" in payload:
        tol = payload["tol"]
        try:
            return algebra.numeric(tol)
        except ValueError as error:
            raise ValueError(f"from_json: {where}.tol: {error}"[:400]) from None
    return algebra


def _build_algebra(payload: Any, symbols: dict[str, sympy.Symbol], where: str, depth: int) -> Algebra:
    """The algebra of `payload`; a plain one with a ``"tol"`` is built numeric from its numbers, and `_build`
    gives tensor products and direct sums their tolerance."""
    if depth > MAX_NESTING:
        raise ValueError(f"from_json: {where} is nested more than MAX_NESTING = {MAX_NESTING} tensor products or "
                         f"direct sums deep")
    kind = _require(payload, "kind", str, where)
    name = _require(payload, "name", str, where)
    if kind == "tensor_product":
        factors = _parts(payload, "factors", symbols, where, depth)
        for n, factor in enumerate(factors):
            if isinstance(factor, TensorProduct):
                raise ValueError(f"from_json: {where}.factors[{n}] expected a plain algebra, got a tensor product "
                                 f"(factors are listed flat)")
        return TensorProduct(factors, name=name)
    if kind == "direct_sum":
        return direct_sum(*_parts(payload, "summands", symbols, where, depth), name=name)
    builders = _builders()
    if kind != "algebra" and kind not in builders:
        raise ValueError(f"from_json: {where}.kind expected 'algebra', 'tensor_product', 'direct_sum' or a builder "
                         f"({', '.join(sorted(builders))}), got {kind!r}"[:400])
    rebuilt = None if kind == "algebra" else _rebuild(kind, _require(payload, "params", dict, where), where)
    if rebuilt is not None and "structure_constants" not in payload:
        rebuilt.name = name
        return rebuilt
    basis = _require(payload, "basis", list, where)
    rows = _require(payload, "structure_constants", list, where)
    check_size(len(rows), f"from_json: {where}.structure_constants", "rows", "write a structured builder instead")
    table: dict[tuple[int, int], dict[int, sympy.Expr]] = {}
    for n, row in enumerate(rows):
        if not (isinstance(row, list) and len(row) == 4 and all(type(v) is int for v in row[:3])
                and (isinstance(row[3], str) if "tol" not in payload else type(row[3]) in (int, float))):
            expected = "[i, j, k, \"coefficient\"]" if "tol" not in payload else "[i, j, k, number]"
            raise ValueError(f"from_json: {where}.structure_constants[{n}] expected {expected}, got {row!r}"[:400])
        i, j, k, text = row
        entries = table.setdefault((i, j), {})
        if k in entries:
            raise ValueError(f"from_json: {where}.structure_constants[{n}]: the entry ({i}, {j}, {k}) appears twice")
        try:
            entries[k] = text if "tol" in payload else parse_coefficient(text, symbols)
        except ValueError as error:
            raise ValueError(f"from_json: {where}.structure_constants[{n}]: {error}") from None
    try:
        algebra = Algebra.from_structure_constants(table, basis=basis, name=name, dim=len(basis) or None,
                                                   exact="tol" not in payload, tol=payload.get("tol"))
    except (TypeError, ValueError) as error:             # a numeric document's tolerance or numbers
        raise ValueError(f"from_json: {where}: {error}"[:400]) from None
    if rebuilt is None:
        return algebra
    if rebuilt != algebra:
        raise ValueError(f"from_json: {where} says {rebuilt.name} but its structure constants differ from that "
                         f"algebra's")
    rebuilt.name = name
    return rebuilt


def _rebuild(kind: str, params: dict[str, Any], where: str) -> Algebra:
    """The builder call a document names, its arguments checked against the builder's whitelist."""
    builder, allowed = _builders()[kind]
    for key, value in params.items():
        expected = allowed.get(key)
        if expected is None or type(value) is not expected or (
                expected is list and not all(isinstance(v, str) for v in value)):  # type: ignore[attr-defined]
            raise ValueError(f"from_json: {where}.params[{key!r}] is not an argument of {kind} "
                             f"({', '.join(f'{k}: {v.__name__}' for k, v in allowed.items())}), got {value!r}"[:400])
    try:
        return builder(**params)
    except (TypeError, ValueError) as error:
        raise ValueError(f"from_json: {where}.params: {error}") from None


def _unique_keys(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """`json` object hook: a dict, refusing a key that appears twice (json would keep the last silently)."""
    result = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"from_json: the key {key!r} appears twice in one object"[:400])
        result[key] = value
    return result


def loads(text: str | bytes) -> Algebra:
    """Read an algebra from `dumps` output; never evaluates code."""
    if not isinstance(text, (str, bytes)):
        raise TypeError(f"text: expected a JSON string, got {type(text).__name__}")
    if len(text) > MAX_DOCUMENT:
        raise ValueError(f"text: {len(text):,} characters, more than MAX_DOCUMENT = {MAX_DOCUMENT:,}")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"text: not UTF-8 ({error.reason} at byte {error.start})") from None
    try:
        document = json.loads(text, object_pairs_hook=_unique_keys)
    except RecursionError:                   # raised cleanly by json's decoder on deep nesting
        raise ValueError("text: nested too deeply to be an algebra") from None
    except ValueError as error:              # JSONDecodeError, the integer digit limit, duplicate keys
        raise ValueError(f"text: not valid JSON ({error})"[:400]) from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        found = document.get("format") if isinstance(document, dict) else type(document).__name__
        raise ValueError(f"text: expected format {FORMAT!r}, got {found!r}"[:400])
    if type(document.get("version")) is not int or document["version"] != VERSION:
        raise ValueError(f"text: expected format version {VERSION}, got {document.get('version')!r}"[:400])
    declared = _require(document, "symbols", dict, "document")
    symbols = {}
    for name, assumptions in declared.items():
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name, re.ASCII) or name == "sqrt":
            raise ValueError(f"from_json: symbol name {name!r} is not allowed (letters, digits, _)"[:400])
        if not isinstance(assumptions, dict) or not set(assumptions) <= set(_ASSUMPTIONS) or not all(
                v is True for v in assumptions.values()):
            raise ValueError(f"from_json: symbols[{name!r}] expected assumptions among {_ASSUMPTIONS}, "
                             f"got {assumptions!r}"[:400])
        symbols[name] = sympy.Symbol(name, **assumptions)
    return _build(_require(document, "algebra", dict, "document"), symbols, "algebra")
