"""Generated numpy source for one sparse bilinear factor, compiled once and cached per structure.

``product(x, y, mul)`` takes the components of x and y (sequences of arrays) and returns one expression per
output component (None for a component that is identically zero).  ``mul`` multiplies two components: the
elementwise product for a plain algebra, the product of the remaining tensor factors otherwise.  Common
subexpressions are computed once: each output is grouped as sum_i x_i * (linear form in y) (or the mirror
image, whichever needs fewer products); linear forms equal up to a factor and products used by several
outputs become named temporaries (``u0``, ``p0``).  The text depends only on the structure constants, not on
the dtype: float literals multiply in the arrays' own dtype.

>>> from product_interactions.algebra import complex_numbers
>>> from product_interactions.kernels.products.factor import Factor
>>> source = generate(Factor.from_algebra(complex_numbers()))
>>> print(source.text)
def product(x, y, mul):
    x0, x1 = x
    y0, y1 = y
    z0 = mul(x0, y0) - mul(x1, y1)
    z1 = mul(x0, y1) + mul(x1, y0)
    return (z0, z1)
>>> import operator, numpy as np
>>> source.function(np.array([1.0, 2.0]), np.array([3.0, 4.0]), operator.mul)
(np.float64(-5.0), np.float64(10.0))
>>> source.products, source.additions, source.scalings
(4, 2, 0)
"""
from __future__ import annotations

import builtins
import functools
import hashlib
import linecache
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .factor import Factor

    #: A linear form in the other operand: (component, coefficient) pairs; an output's terms (scale, driver, form).
    Form = tuple[tuple[int, float], ...]
    Terms = list[tuple[float, int, Form]]

#: Terms per statement; longer sums are split so that Python's compiler never nests too deep.
TERMS_PER_STATEMENT = 64


@dataclass(frozen=True)
class Source:
    """Generated text, its compiled function, and its operation counts (each on whole component arrays);
    ``in_place`` is the same sums written for numpy arrays with nothing inside (see `InPlace`)."""
    text: str
    function: Callable[[Sequence[Any], Sequence[Any], Callable[[Any, Any], Any]], tuple[Any, ...]]
    in_place: InPlace
    products: int        # calls of mul
    additions: int       # additions and subtractions
    scalings: int        # multiplications by a constant other than +-1
    shared: int          # temporaries computed once and used more than once


def _signed(terms: Sequence[tuple[float, str]]) -> tuple[str, int, int]:
    """Render ``[(coefficient, text), ...]`` as a sum; returns (text, additions, scalings)."""
    pieces: list[str] = []
    scalings = 0
    for position, (coefficient, text) in enumerate(terms):
        magnitude = abs(coefficient)
        if magnitude != 1:
            text, scalings = f"{magnitude!r} * {text}", scalings + 1
        sign = "-" if coefficient < 0 else "+"
        pieces.append(("-" if sign == "-" else "") + text if position == 0 else f" {sign} {text}")
    return "".join(pieces), len(terms) - 1, scalings


def _normalised(form: dict[int, float]) -> tuple[float, Form]:
    """(scale, key) with form = scale * key: the key's first coefficient is 1 when dividing by it is exact in
    floating point (so forms equal up to a factor share a key), else the form up to sign."""
    items = sorted(form.items())
    first = items[0][1]
    scale = first if all(c / first * first == c for _, c in items) else float(np.sign(first))
    return scale, tuple((index, c / scale) for index, c in items)


class _Builder:
    """Collects shared forms, products and outputs, then writes the function text."""

    def __init__(self, shape: tuple[int, ...], orientation: str) -> None:
        self.shape, self.orientation = shape, orientation
        self.driver, self.other = ("x", "y") if orientation == "x" else ("y", "x")
        self.lines: list[str] = []
        self.additions, self.scalings, self.shared = 0, 0, 0
        #: The plan `InPlace` renders: shared forms (name, key), shared products (name, driver, form) in order,
        #: and each output's terms (scale, driver, form) with form a shared name or a key.
        self.steps: list[tuple[str, Any, Any]] = []
        self.outputs: list[list[tuple[float, int, Any]]] = []

    def linear(self, key: Form) -> str:
        text, additions, scalings = _signed([(c, f"{self.other}{index}") for index, c in key])
        self.additions += additions
        self.scalings += scalings
        return text

    def product(self, driver: int, form: str) -> str:
        a, b = f"{self.driver}{driver}", form
        return f"mul({a}, {b})" if self.orientation == "x" else f"mul({b}, {a})"

    def write(self, outputs: list[Terms]) -> None:
        """`outputs`: one list per output component of (scale, driver index, form key)."""
        form_uses: defaultdict[Form, set[int]] = defaultdict(set)
        product_uses: defaultdict[tuple[int, Form], int] = defaultdict(int)
        for terms in outputs:
            for _, driver, key in terms:
                form_uses[key].add(driver)
                product_uses[driver, key] += 1
        forms: dict[Form, str] = {}
        named: dict[Form, str] = {}                   # the shared forms: the in-place plan refers to them by name
        for key, drivers in form_uses.items():
            if len(key) == 1 and key[0][1] == 1:
                forms[key] = f"{self.other}{key[0][0]}"
            elif len(drivers) > 1:
                forms[key] = named[key] = f"u{self.shared}"
                self.lines.append(f"{forms[key]} = {self.linear(key)}")
                self.steps.append((forms[key], None, key))
                self.shared += 1
            else:
                forms[key] = f"({self.linear(key)})"
        products: dict[tuple[int, Form], str] = {}
        for (driver, key), uses in product_uses.items():
            products[driver, key] = self.product(driver, forms[key])
            if uses > 1:
                name = f"p{self.shared}"
                self.lines.append(f"{name} = {products[driver, key]}")
                self.steps.append((name, driver, named.get(key, key)))
                products[driver, key] = name
                self.shared += 1
        names = []
        for k, terms in enumerate(outputs):
            self.outputs.append([(scale, -1, products[driver, key]) if product_uses[driver, key] > 1
                                 else (scale, driver, named.get(key, key)) for scale, driver, key in terms])
            rendered = [(scale, products[driver, key]) for scale, driver, key in terms]
            names.append(f"z{k}" if rendered else "None")
            for start in range(0, len(rendered), TERMS_PER_STATEMENT):
                text, additions, scalings = _signed(rendered[start:start + TERMS_PER_STATEMENT])
                self.additions += additions + (start > 0)
                self.scalings += scalings
                self.lines.append(f"z{k} = {text}" if start == 0 else f"z{k} = z{k} + ({text})")
        self.lines.append(f"return ({', '.join(names)}{',' if len(names) == 1 else ''})")

    def text(self) -> str:
        unpack = [f"{', '.join(f'{name}{i}' for i in range(n))}{',' if n == 1 else ''} = {name}"
                  for name, n in (("x", self.shape[0]), ("y", self.shape[1]))]
        return "def product(x, y, mul):\n" + "\n".join(f"    {line}" for line in unpack + self.lines)


class InPlace:
    """The generated sums for numpy arrays with nothing inside: ``product_into(x, y, z)`` writes every output
    component into the rows of a preallocated z with ufuncs (``out=``), through three scratch rows, so that no
    temporary is allocated per term and a cache-sized chunk stays in cache.  Same terms in the same order as the
    expression form, so the same rounding.

    >>> import numpy as np
    >>> from product_interactions.algebra import complex_numbers
    >>> from product_interactions.kernels.products.factor import Factor
    >>> z = np.empty((2, 1))
    >>> generate(Factor.from_algebra(complex_numbers())).in_place(np.array([[1.0], [2.0]]), np.array([[3.0], [4.0]]), z)
    >>> z.ravel().tolist()                     # (1 + 2i)(3 + 4i)
    [-5.0, 10.0]
    """

    def __init__(self, builder: _Builder) -> None:
        self.driver, self.other = builder.driver, builder.other
        self.lines = [f"t, f, g, *shared = scratch(z[0], {builder.shared})"]
        for name, driver, form in builder.steps:
            target = f"shared[{name[1:]}]"
            if driver is None:
                self._form(form, target)
            else:
                self._product(driver, form, target)
            self.lines.append(f"{name} = {target}")
        for k, terms in enumerate(builder.outputs):
            self._output(k, terms)
        self.text = "def product_into(x, y, z):\n" + "\n".join(f"    {line}" for line in self.lines)
        self.function = executed(self.text, "in place", {"scratch": _scratch, "np": np})["product_into"]

    def __call__(self, x: np.ndarray, y: np.ndarray, z: np.ndarray) -> None:
        """Write the product of the components x[i], y[j] (leading axes) into the rows of z."""
        self.function(x, y, z)

    def _form(self, key: Form, target: str) -> None:
        """target = the linear form `key` in the other operand."""
        for position, (index, c) in enumerate(key):
            source = f"{self.other}[{index}]"
            if position == 0:
                self.lines.append(f"np.copyto({target}, {source})" if c == 1 else
                                  f"np.negative({source}, out={target})" if c == -1 else
                                  f"np.multiply({source}, {c!r}, out={target})")
            elif abs(c) == 1:
                self.lines.append(f"np.{'add' if c > 0 else 'subtract'}({target}, {source}, out={target})")
            else:
                self.lines.append(f"np.multiply({source}, {abs(c)!r}, out=g)")
                self.lines.append(f"np.{'add' if c > 0 else 'subtract'}({target}, g, out={target})")

    def _value(self, form: Any) -> str:
        """The name holding a form: a component of the other operand, a shared form, or f once computed."""
        if isinstance(form, str):
            return form
        if len(form) == 1 and form[0][1] == 1:
            return f"{self.other}[{form[0][0]}]"
        self._form(form, "f")
        return "f"

    def _product(self, driver: int, form: Any, target: str) -> None:
        a, b = f"{self.driver}[{driver}]", self._value(form)
        self.lines.append(f"np.multiply({a}, {b}, out={target})" if self.driver == "x" else
                          f"np.multiply({b}, {a}, out={target})")

    def _output(self, k: int, terms: list[tuple[float, int, Any]]) -> None:
        target = f"z[{k}]"
        if not terms:
            self.lines.append(f"{target}.fill(0)")
        for position, (scale, driver, form) in enumerate(terms):
            into = target if position == 0 else "t"
            if driver < 0:                                       # a shared product, by name
                self.lines.append(f"np.copyto({into}, {form})")
            else:
                self._product(driver, form, into)
            magnitude = abs(scale) if position else scale
            if magnitude == -1:
                self.lines.append(f"np.negative({into}, out={into})")
            elif magnitude != 1:
                self.lines.append(f"np.multiply({into}, {magnitude!r}, out={into})")
            if position:
                self.lines.append(f"np.{'add' if scale > 0 else 'subtract'}({target}, t, out={target})")


def _scratch(like: np.ndarray, shared: int) -> list[np.ndarray]:
    """Three scratch rows and one per shared temporary, shaped like one output row."""
    return [np.empty_like(like) for _ in range(3 + shared)]


def _outputs(indices: list[list[int]], values: list[float], orientation: str, d3: int) -> list[Terms]:
    driver_role, other_role = (0, 1) if orientation == "x" else (1, 0)
    groups: defaultdict[tuple[int, int], dict[int, float]] = defaultdict(dict)
    for row, c in zip(indices, values):
        groups[row[2], row[driver_role]][row[other_role]] = c
    outputs: list[Terms] = [[] for _ in range(d3)]
    for (k, driver), form in sorted(groups.items()):
        scale, key = _normalised(form)
        outputs[k].append((scale, driver, key))
    return outputs


#: Generated sources kept in `linecache` for tracebacks (the oldest go first).
SOURCES_SHOWN = 512
_shown: OrderedDict[str, None] = OrderedDict()
#: Held while `_shown` and `linecache` change (threads build kernels at once).
_SHOWING = threading.Lock()


def executed(text: str, kind: str, names: dict[str, Any]) -> dict[str, Any]:
    """The namespace of our own generated `text` (built from validated floats, never from user text), run with
    only `names` and, of the builtins, only ``__import__``: C code that runs while the text's frame is the current
    one imports through that frame's builtins (torch's Python dispatch modes, ``FlopCounterMode`` among them, had
    failed with ``KeyError: '__import__'``).  The text is registered in `linecache` under a name that says what it
    is, so a traceback through it shows its lines (the last `SOURCES_SHOWN`).

    >>> executed("def f(x): return x + 1", "demo", {})["f"](1)
    2
    """
    filename = f"<kernels.products.source {kind} {hashlib.sha1(text.encode()).hexdigest()[:12]}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    with _SHOWING:
        _shown[filename] = None
        _shown.move_to_end(filename)
        while len(_shown) > SOURCES_SHOWN:
            linecache.cache.pop(_shown.popitem(last=False)[0], None)
    namespace: dict[str, Any] = {"__builtins__": {"__import__": builtins.__import__}, **names}
    exec(compile(text, filename, "exec"), namespace)
    return namespace


@functools.lru_cache(maxsize=256)
def _generate(key: tuple[tuple[int, ...], bytes, bytes]) -> Source:
    shape, index_bytes, value_bytes = key
    indices = np.frombuffer(index_bytes, dtype=np.int64).reshape(-1, 3).tolist()
    values = np.frombuffer(value_bytes, dtype=np.float64).tolist()
    candidates = {o: _outputs(indices, values, o, shape[2]) for o in ("x", "y")}
    orientation = min("xy", key=lambda o: len({(d, k) for terms in candidates[o] for _, d, k in terms}))
    builder = _Builder(shape, orientation)
    builder.write(candidates[orientation])
    text = builder.text()
    products = len({(d, k) for terms in candidates[orientation] for _, d, k in terms})
    return Source(text, executed(text, "product", {})["product"], InPlace(builder), products, builder.additions,
                  builder.scalings, builder.shared)


def generate(factor: Factor) -> Source:
    """The compiled product for a `kernels.products.factor.Factor` (cached by its structure constants)."""
    return _generate(factor.key)
