"""``product-interactions derive NAME``: an architecture's formula and self-interaction order, at small sizes.

>>> lines = derive("gating")
>>> lines[0]
'gating: self-interaction order 2'
>>> lines[1]
'z_{0,0} = x_{0,0}*sigmoid(W_{0,0}*x_{0,0} + W_{0,1}*x_{0,1})'
"""
from __future__ import annotations

import numpy as np
import sympy

from . import architectures
from .formulas import MAX_TERMS, to_latex

#: Each architecture at a small size n: the sequence length, the number of points, or the signal length
#: (convolution, filter of 2 taps); each default of n unless asked.
SMALL = {
    "convolution": lambda n=3: architectures.convolution(channels_in=1, channels_out=1, size=2, shape=(n,)),
    "gating": lambda n=2: architectures.gating(channels=2, length=n),
    "attention": lambda n=2: architectures.attention(d_model=2, heads=1, length=n),
    "ssm": lambda n=2: architectures.ssm(channels=1, d_state=1, length=n),
    "mamba": lambda n=2: architectures.mamba(d_model=1, d_state=1, length=n),
    "dynamical": lambda n=2: architectures.dynamical(d_model=1, length=n),
    "tfn": lambda n=2: architectures.tfn(lmax=1, channels_in=1, channels_out=1, points=n),
    "se3_attention": lambda n=2: architectures.se3_attention(lmax=1, channels_in=1, channels=1, points=n),
}
#: The largest size `derive` takes: attention at 4 already prints some 470,000 characters.
MAX_SIZE = 4


def derive(name: str, latex: bool = False, size: int | None = None, simplify: bool = False,
           max_terms: int = MAX_TERMS) -> list[str]:
    """Lines of text: the order, then one line per nonzero output component (LaTeX with ``latex=True``), at
    `size` (1 to `MAX_SIZE`; None: the architecture's default); ``simplify=True`` puts each component over one
    denominator and merges powers (``sympy.together``, ``sympy.powsimp``: cheap, unlike ``sympy.simplify``).
    `max_terms` bounds the terms of each node's value (`interactions.formulas.formula`), e.g.

    >>> derive("tfn", size=2, max_terms=100)
    Traceback (most recent call last):
    ...
    ValueError: max_terms: ... holds 128 terms over its components, more than max_terms = 100; ...
    """
    if name not in SMALL:
        raise ValueError(f"name: expected one of {', '.join(sorted(SMALL))}, got {name!r}")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_SIZE):
        raise ValueError(f"size: expected an int from 1 to {MAX_SIZE}, got {size!r}")
    if name == "convolution" and size == 1:
        raise ValueError("size: the convolution's filter has 2 taps, so its signal needs at least 2 points, got 1")
    model = SMALL[name]() if size is None else SMALL[name](size)
    lines = [f"{name}: self-interaction order {model.order()}"]
    expr = model.expr
    for index, value in np.ndenumerate(model.formula(max_terms=max_terms)):
        if value == 0 or any(index[axis] for axis in expr.units):       # constant factors repeat: show one
            continue
        if simplify:
            value = sympy.powsimp(sympy.together(value))
        component = ",".join(str(i) for axis, i in enumerate(index) if axis not in expr.units)
        lines.append(f"z_{{{component}}} = {to_latex(value) if latex else value}")
    return lines
