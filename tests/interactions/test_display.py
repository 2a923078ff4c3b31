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
