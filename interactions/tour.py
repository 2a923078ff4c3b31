"""The quick tour run by ``python -m interactions tour``: define an algebra, print a product formula, check it.

>>> report = run(print=lambda *args: None)
>>> report["max_error"] < 1e-12
True
"""
from __future__ import annotations

import builtins

import numpy as np

from algebra import quaternions, tensor_algebra


def run(seed: int = 0, print=builtins.print) -> dict:
    """Run the tour; returns its figures as a dict."""
    H = quaternions()
    print(f"The quaternions {H.name}: basis {', '.join(H.basis)}; associative {H.is_associative()}, "
          f"commutative {H.is_commutative()}, unit {H.unit()}")
    x, y = H.symbols("x"), H.symbols("y")
    print(f"Product formula x * y =\n  {x * y}")

    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(4), rng.standard_normal(4)
    numeric = np.einsum("i,j,ijk->k", a, b, H.structure_constants())
    hamilton = np.array([a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
                         a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
                         a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
                         a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]])
    error = float(np.max(np.abs(numeric - hamilton)))
    print(f"Numeric product from the structure constants vs Hamilton's formula: max error {error:.1e}")

    T = tensor_algebra(2, 2)
    path = [T.lift(step) for step in ([1, 0], [0, 1], [1, 1])]
    features = path[0] * path[1] * path[2]
    print(f"Seq2Tens features of the path (1,0), (0,1), (1,1) in {T.name}:\n  {features}")
    return {"max_error": error, "seq2tens": [str(c) for c in features.flat]}
