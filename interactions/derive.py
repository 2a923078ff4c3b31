"""``python -m interactions derive NAME``: an architecture's formula and self-interaction order, at small sizes.

>>> lines = derive("gating")
>>> lines[0]
'gating: self-interaction order 2'
>>> lines[1]
'z_{0,0} = x_{0,0}*sigmoid(W_{0,0}*x_{0,0} + W_{0,1}*x_{0,1})'
"""
from __future__ import annotations

import numpy as np

from . import architectures
from .formulas import to_latex

#: Each architecture at sizes small enough for exact formulas.
SMALL = {
    "convolution": lambda: architectures.convolution(channels_in=1, channels_out=1, size=2, shape=(3,)),
    "gating": lambda: architectures.gating(channels=2, length=2),
    "attention": lambda: architectures.attention(d_model=2, heads=1, length=2),
    "ssm": lambda: architectures.ssm(channels=1, d_state=1, length=2),
    "mamba": lambda: architectures.mamba(d_model=1, d_state=1, length=2),
    "dynamical": lambda: architectures.dynamical(d_model=1, length=2),
    "tfn": lambda: architectures.tfn(lmax=1, channels_in=1, channels_out=1, points=2),
    "se3_attention": lambda: architectures.se3_attention(lmax=1, channels_in=1, channels=1, points=2),
}


def derive(name: str, latex: bool = False) -> list:
    """Lines of text: the order, then one line per nonzero output component (LaTeX with ``latex=True``)."""
    if name not in SMALL:
        raise ValueError(f"name: expected one of {', '.join(sorted(SMALL))}, got {name!r}")
    model = SMALL[name]()
    lines = [f"{name}: self-interaction order {model.order()}"]
    expr = model.expr
    for index, value in np.ndenumerate(model.formula()):
        if value == 0 or any(index[axis] for axis in expr.units):       # constant factors repeat: show one
            continue
        component = ",".join(str(i) for axis, i in enumerate(index) if axis not in expr.units)
        lines.append(f"z_{{{component}}} = {to_latex(value) if latex else value}")
    return lines
