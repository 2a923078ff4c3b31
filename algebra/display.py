"""Rich display of an algebra in notebooks: its multiplication table when small, a summary when large.

`Algebra._repr_html_` and `Algebra._repr_latex_` call `html` and `latex`.  The summary names the dimension, the
nonzero structure constants and, up to `TABLE_DIM` dimensions, the exact answers to the cheap queries
(commutative, associative, unit).

>>> from product_interactions.algebra import complex_numbers
>>> print(latex(complex_numbers()))
$\\begin{array}{c|cc} & \\mathrm{1} & \\mathrm{i} \\\\ \\hline \\mathrm{1} & \\mathrm{1} & \\mathrm{i} \\\\ \\mathrm{i} & \\mathrm{i} & -\\mathrm{1} \\end{array}$
"""
from __future__ import annotations

import html as html_text
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .algebra import Algebra

#: Algebras up to this dimension show their multiplication table and their cheap properties.
TABLE_DIM = 8


def _product(A: Algebra, i: int, j: int) -> tuple[str, str]:
    """(text, LaTeX without $) of e_i e_j."""
    coefficients = [0] * A.dim
    for k, c in A.product_of_basis(i, j).items():
        coefficients[k] = c
    element = A.element(coefficients)
    return repr(element), element._repr_latex_()[1:-1]


def _properties(A: Algebra) -> list[str]:
    facts = [f"dimension {A.dim}", f"{A.nnz:,} nonzero structure constants"]
    if A.tol is not None:
        facts.append(f"numeric: float constants, queries within tol {A.tol:g}")
    if A.dim <= TABLE_DIM:
        facts += ["commutative" if A.is_commutative() else "not commutative",
                  "associative" if A.is_associative() else "not associative",
                  "unital" if A.unit() is not None else "no unit"]
    return facts


def latex(A: Algebra) -> str:
    """The multiplication table (rows e_i, columns e_j, entries e_i e_j) up to `TABLE_DIM`, else a summary."""
    if A.dim > TABLE_DIM:
        facts = ", ".join(_properties(A))
        return f"$\\text{{{A.name}: {facts}}}$"
    labels = [A.basis_element(i)._repr_latex_()[1:-1] for i in range(A.dim)]
    rows = [" & ".join([labels[i]] + [_product(A, i, j)[1] for j in range(A.dim)]) for i in range(A.dim)]
    header = " & " + " & ".join(labels)
    return (f"$\\begin{{array}}{{c|{'c' * A.dim}}}{header} \\\\ \\hline " + " \\\\ ".join(rows)
            + " \\end{array}$")


def html(A: Algebra) -> str:
    """A summary line, then the multiplication table up to `TABLE_DIM` dimensions."""
    lines = [f"<p><b>{html_text.escape(A.name)}</b>: {html_text.escape(', '.join(_properties(A)))}</p>"]
    if A.dim <= TABLE_DIM:
        labels = [html_text.escape(repr(A.basis_element(i))) for i in range(A.dim)]
        head = "".join(f"<th>{label}</th>" for label in labels)
        body = "".join(f"<tr><th>{labels[i]}</th>" + "".join(
            f"<td>{html_text.escape(_product(A, i, j)[0])}</td>" for j in range(A.dim)) + "</tr>"
                       for i in range(A.dim))
        lines.append(f"<table><tr><th></th>{head}</tr>{body}</table>")
    return "".join(lines)
