"""Rich display of models (issue 17, item 6): what they are, their parameters and their order."""
from __future__ import annotations

import math

from product_interactions.interactions.architectures import attention, deep_ls2t, ls2t, mamba


def test_models_say_what_they_are_their_parameters_and_their_order():
    model = attention(d_model=4, heads=1, length=3)
    total = sum(math.prod(shape) for shape in model.parameters.values())
    assert repr(model) == (f"<Attention: {len(model.parameters)} parameters ({total:,} numbers), input x in "
                           f"{model.signal.algebra.name} at geometry (3,), order {model.order()}>")
    html = model._repr_html_()
    assert html.count("<tr>") == len(model.parameters) + 1 and "self-interaction order 3" in html
    assert "order Orders(input=3" in repr(mamba(d_model=4))
    assert repr(ls2t(d_in=3, width=4, order=2)).startswith("<LS2T: d_in 3, width 4, order 2, recursive weights; 3 ")
    assert repr(deep_ls2t(d_in=3, widths=(4, 4), order=2)).startswith("<DeepLS2T: 2 LS2T layers; 6 parameters")


def test_expressions_render_their_operator_form_in_latex():
    from product_interactions.algebra import position
    from product_interactions.interactions import Signal
    text = attention(d_model=4, heads=1, length=3).expr.latex()
    assert text.startswith("W_{O}\\,(P^{1}_{c}(\\mathrm{softmax}_{1}(\\frac{1}{2}\\,(P^{3}(W_{Q}\\,(x)\\,T(W_{K}")
    assert text.endswith("T(W_{V}\\,(x))))")
    X = Signal("x", position(2))
    assert (X * (X + X))._repr_latex_() == "$x\\,(x + x)$"
    deep = X
    for _ in range(1000):
        deep = deep * X
    assert deep.latex().startswith("\\operatorname{Mul}(\\dots)\\,x\\,x") and len(deep.latex()) <= 2000
    assert repr(deep).startswith("Mul(") and len(repr(deep)) <= 2000          # no RecursionError at any depth


def test_a_factor_algebra_times_a_tensor_product_shows_the_fix_with_the_user_s_names():
    import pytest

    from product_interactions.algebra import position, quaternions, tensor_product
    from product_interactions.interactions import Parameter, Signal
    H = quaternions()
    x = Signal("x", tensor_product(position(4), H))
    with pytest.raises(ValueError, match=r"\(in w \* x\); hint: K = w is in quaternions, factor 1 of position\(4\) "
                                         r"⊗ quaternions: build it over .* with units=\[0\]"):
        Parameter("w", H) * x
    fixed = Parameter("w", tensor_product(position(4), H), units=[0]) * x          # the hinted fix works
    assert fixed.algebra == x.algebra
