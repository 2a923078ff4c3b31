"""The masked softmax: masked entries are left out (exactly 0 whatever they hold), in every layout and path."""
import autograd
import autograd.numpy as anp
import numpy as np
import pytest

from product_interactions.kernels.arrays import normalisation
from product_interactions.kernels.arrays.masked_softmax import softmax


def reference(x, keep):
    """Each row's kept entries normalised, written out by hand; rows with nothing kept are 0."""
    out, keep = np.zeros(x.shape), np.broadcast_to(keep, x.shape)
    for index in np.ndindex(*x.shape[:-1]):
        row = keep[index]
        if row.any():
            e = np.exp(x[index][row] - x[index][row].max())
            out[index][row] = e / e.sum()
    return out


@pytest.mark.parametrize("chunk", [64, 1 << 20])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_equals_the_reference_with_nan_at_masked_entries_and_empty_rows(layout, chunk, monkeypatch):
    monkeypatch.setattr(normalisation, "CHUNK_BYTES", chunk)          # many chunks, or one
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5, 6))
    keep = np.tril(np.ones((5, 6), dtype=bool))
    keep[2] = False                                                    # a row with nothing to keep
    x[:, ~keep] = np.nan
    x = np.ascontiguousarray(x.transpose(1, 0, 2)).transpose(1, 0, 2) if layout == "transposed" else x
    expected = reference(np.nan_to_num(x, nan=0.0), keep)
    np.testing.assert_allclose(softmax(x, mask=keep), expected, rtol=1e-14, atol=0)
    inplace = np.array(x, order="C")
    assert softmax(inplace, mask=keep, out=inplace) is inplace
    np.testing.assert_allclose(inplace, expected, rtol=1e-14, atol=0)


def test_the_traced_path_equals_the_numpy_path_and_differentiates():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((2, 4, 4)), rng.standard_normal((2, 4, 4))
    keep = np.tril(np.ones((4, 4), dtype=bool))
    loss = lambda x: anp.sum(softmax(x, mask=keep) * w)               # noqa: E731
    assert loss(x) == pytest.approx(float(np.sum(softmax(x.copy(), mask=keep) * w)), rel=1e-14)
    gradient, eps = autograd.grad(loss)(x), 1e-6
    direction = rng.standard_normal(x.shape)
    numeric = (loss(x + eps * direction) - loss(x - eps * direction)) / (2 * eps)
    assert np.sum(gradient * direction) == pytest.approx(numeric, rel=1e-6)
    assert np.all(gradient[:, ~keep] == 0)                             # masked scores get no gradient
