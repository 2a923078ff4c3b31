"""Bad input to the feature map, the signature, the expression and the LS2T layers: errors naming the argument."""
import numpy as np
import pytest

from product_interactions.interactions.architectures.seq2tens import deep_ls2t, ls2t
from product_interactions.interactions.feature_map import flatten, seq2tens, seq2tens_expression, signature

X = np.zeros((2, 3, 2))


@pytest.mark.parametrize("x", [np.zeros((3, 2)), np.zeros((1, 2, 3, 2)), np.zeros((2, 0, 2)), np.zeros(3)])
def test_sequences_of_the_wrong_rank_or_size(x):
    with pytest.raises(ValueError, match=r"^x: expected shape \(batch, length, d\)"):
        seq2tens(x, 2)
    with pytest.raises(ValueError, match=r"^x: expected shape \(batch, length, 2\)"):
        ls2t(d_in=2, width=1, order=1).apply(ls2t(d_in=2, width=1, order=1).init(), x)


def test_complex_sequences():
    with pytest.raises(TypeError, match="^x: expected a real array"):
        seq2tens(X.astype(complex), 2)


@pytest.mark.parametrize("degree, error", [(0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError),
                                           ("2", TypeError), (None, TypeError)])
def test_degree_below_one_or_not_an_int(degree, error):
    with pytest.raises(error, match="^degree: expected a positive int"):
        seq2tens(X, degree)
    with pytest.raises(error, match="^depth: expected a positive int"):
        signature(X, degree)
    with pytest.raises(error, match="^degree: expected a positive int"):
        seq2tens_expression(3, 2, degree)


@pytest.mark.parametrize("mask, message", [
    (np.ones((2, 4)), r"mask: expected shape \(batch, length\) = \(2, 3\), got \(2, 4\)"),
    (np.ones(3), r"mask: expected shape"),
    (np.full((2, 3), 2), "mask: expected only zeros and ones"),
    (np.array([[1, 0, 1], [1, 1, 1]]), "mask: expected each row to be ones then zeros"),
])
def test_masks_that_do_not_match(mask, message):
    with pytest.raises(ValueError, match=message):
        seq2tens(X, 2, mask=mask)
    with pytest.raises(ValueError, match=message):
        signature(X, 2, mask=mask)
    layer = ls2t(d_in=2, width=1, order=1)
    with pytest.raises(ValueError, match=message):
        layer.apply(layer.init(), X, mask=mask)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_nan_at_a_kept_point_reaches_only_its_own_sequence_from_its_step_on_at_padding_it_is_ignored(value):
    x = X.copy()
    x[1, 2, 0] = value
    prefixes = flatten(seq2tens(x, 2, return_sequences=True))
    assert np.all(np.isfinite(prefixes[0])) and np.all(np.isfinite(prefixes[1, :2]))
    assert not np.all(np.isfinite(prefixes[1, 2]))
    layer = ls2t(d_in=2, width=1, order=2)
    out = layer.apply(layer.init(), x)
    assert np.all(np.isfinite(out[0])) and not np.all(np.isfinite(out[1]))
    mask = np.array([[1, 1, 1], [1, 1, 0]])
    assert np.all(np.isfinite(flatten(seq2tens(x, 2, mask=mask))))
    assert np.all(np.isfinite(layer.apply(layer.init(), x, mask=mask)))


@pytest.mark.parametrize("options, message", [
    ({"lift": "log"}, "^lift: expected 'linear' or 'exp'"),
    ({"embedding_order": 0}, "^embedding_order: expected a positive int"),
    ({"method": "fast"}, "^method: expected 'auto' or one of"),
])
def test_bad_options(options, message):
    with pytest.raises(ValueError, match=message):
        seq2tens(X, 2, **options)


def test_flatten_wants_the_levels_of_seq2tens():
    with pytest.raises(ValueError, match="^levels: expected the tuple"):
        flatten(np.zeros((2, 6)))
    levels = seq2tens(X, 2)
    with pytest.raises(ValueError, match=r"^levels\[2\]: expected shape \(2, 2, 2\)"):
        flatten((levels[0], levels[1], levels[2][:, :1]))


@pytest.mark.parametrize("options, error, message", [
    ({"width": 0}, ValueError, "^width: expected a positive int"),
    ({"order": 0}, ValueError, "^order: expected a positive int"),
    ({"weights": "shared"}, ValueError, "^weights: expected 'recursive' or 'independent'"),
    ({"static": "rnn"}, ValueError, "^static: expected None, 'dense' or 'convolution'"),
    ({"static": None, "features": 5}, ValueError, "^features: without a static map"),
    ({"activation": "gelu"}, ValueError, "^activation: expected one of"),
    ({"hidden": (0,)}, ValueError, r"^hidden\[0\]: expected a positive int"),
    ({"kernel_size": 0}, ValueError, "^kernel_size: expected a positive int"),
    ({"typical_length": 2}, ValueError, r"^typical_length \(at least order\): expected an int >= 3"),
    ({"difference": "yes"}, TypeError, "^difference: expected a bool"),
    ({"bidirectional": 1}, TypeError, "^bidirectional: expected a bool"),
])
def test_bad_layer_options(options, error, message):
    with pytest.raises(error, match=message):
        ls2t(**{"d_in": 2, "width": 2, "order": 3, **options})


def test_bad_parameters():
    layer = ls2t(d_in=2, width=2, order=2)
    params = layer.init()
    with pytest.raises(ValueError, match=r"^params: missing \['V'\]"):
        layer.apply({k: v for k, v in params.items() if k != "V"}, X)
    with pytest.raises(ValueError, match=r"^params\['V'\]: expected shape \(2, 2, 2\), got \(2, 2, 3\)"):
        layer.apply({**params, "V": np.zeros((2, 2, 3))}, X)
    with pytest.raises(TypeError, match="^params: expected a dict"):
        layer.apply([params], X)


def test_bad_deep_options():
    with pytest.raises(ValueError, match="^widths: expected a non-empty tuple"):
        deep_ls2t(d_in=2, widths=())
    with pytest.raises(TypeError, match="^difference_between: expected a bool"):
        deep_ls2t(d_in=2, difference_between=None)
