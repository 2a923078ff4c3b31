"""Parameter and seed errors name the parameter, the expected and the actual value (`model.check_params`,
`model.check_seed`)."""
import numpy as np
import pytest

from product_interactions.interactions.architectures import (attention, deep_ls2t, ls2t, mamba, se3_attention, ssm,
                                                             tfn)
from product_interactions.interactions.architectures.model import check_params, check_seed

CLOUD = np.random.default_rng(1).standard_normal((2, 5, 3)), np.random.default_rng(2).standard_normal((2, 5, 4, 2))


@pytest.fixture(params=["tfn", "se3_attention"])
def cloud_model(request):
    if request.param == "tfn":
        return tfn(lmax=1, channels_in=2, channels_out=3)
    return se3_attention(lmax=1, channels_in=2, channels=3)


def test_cloud_models_refuse_missing_parameters_by_name(cloud_model):
    params = cloud_model.init(seed=0)
    del params["K_W_out"]
    with pytest.raises(ValueError, match=r"params: missing \['K_W_out'\] \(expected shapes \{'K_W_out': \(\d+, 16\)"):
        cloud_model.apply(params, *CLOUD)


def test_cloud_models_refuse_a_wrong_shape_by_name(cloud_model):
    params = cloud_model.init(seed=0)
    expected = params["K_W_out"].shape
    with pytest.raises(ValueError, match=rf"params\['K_W_out'\]: expected shape \({expected[0]}, 16\), got \(3, 3\)"):
        cloud_model.apply(dict(params, K_W_out=np.ones((3, 3))), *CLOUD)


def test_cloud_models_refuse_params_that_are_not_a_dict(cloud_model):
    with pytest.raises(TypeError, match="params: expected a dict name -> array, got NoneType"):
        cloud_model.apply(None, *CLOUD)


@pytest.mark.parametrize("params", [None, "W_Q", [np.ones((4, 4))], {"W_Q"}], ids=["None", "str", "list", "set"])
def test_params_that_only_index_or_only_have_keys_are_no_dict(params):
    """A dict needs both keys() and item access: a str or a list has the one, a set neither."""
    with pytest.raises(TypeError, match=f"params: expected a dict name -> array, got {type(params).__name__}"):
        attention(d_model=4, heads=2).apply(params, np.ones((2, 5, 4)))


def test_deep_ls2t_refuses_params_that_are_not_a_dict():
    with pytest.raises(TypeError, match="params: expected a dict name -> array, got NoneType"):
        deep_ls2t(d_in=3, widths=(4, 2), order=2).apply(None, np.ones((2, 5, 3)))


@pytest.mark.parametrize("make, x", [(lambda: attention(d_model=4, heads=2), np.ones((2, 5, 4))),
                                     (lambda: ls2t(d_in=3, width=4, order=2), np.ones((2, 5, 3))),
                                     (lambda: ssm(channels=4, d_state=2), np.ones((2, 5, 4)))])
def test_string_parameters_are_refused_by_name(make, x):
    model = make()
    params = model.init(seed=0)
    name = sorted(params)[0]
    with pytest.raises(TypeError, match=rf"params\['{name}'\]: expected an array of numbers, got str 'abc'"):
        model.apply(dict(params, **{name: "abc"}), x)


@pytest.mark.parametrize("make, x", [(lambda: attention(d_model=4, heads=2), np.ones((2, 5, 4))),
                                     (lambda: ls2t(d_in=3, width=4, order=2), np.ones((2, 5, 3))),
                                     (lambda: deep_ls2t(d_in=3, widths=(4, 2), order=2), np.ones((2, 5, 3))),
                                     (lambda: mamba(d_model=4, d_state=2), np.ones((2, 5, 4)))])
def test_unexpected_parameters_are_refused_by_name(make, x):
    model = make()
    with pytest.raises(ValueError, match=r"params: unexpected \['W_typo'\] \(expected only \["):
        model.apply(dict(model.init(seed=0), W_typo=np.ones(2)), x)


@pytest.mark.parametrize("make", [lambda: attention(d_model=4, heads=2), lambda: mamba(d_model=4, d_state=2),
                                  lambda: ssm(channels=4, d_state=2), lambda: ls2t(d_in=3, width=4, order=2),
                                  lambda: deep_ls2t(d_in=3, widths=(4, 2), order=2), lambda: tfn(lmax=1)])
def test_init_refuses_bad_seeds_by_name(make):
    model = make()
    with pytest.raises(TypeError, match="seed: expected a non-negative int or a numpy.random.Generator, got str 'abc'"):
        model.init(seed="abc")
    with pytest.raises(ValueError, match="seed: expected a non-negative int, got -1"):
        model.init(seed=-1)
    with pytest.raises(TypeError, match="seed: expected a non-negative int or a numpy.random.Generator, got float 1.5"):
        model.init(seed=1.5)


def test_check_seed_takes_ints_and_generators():
    rng = np.random.default_rng(3)
    assert check_seed(rng) is rng
    assert check_seed(np.int64(3)).standard_normal() == np.random.default_rng(3).standard_normal()
    with pytest.raises(TypeError, match="got bool True"):
        check_seed(True)


def test_check_params_returns_params_that_fit():
    params = {"W": np.ones((2, 3)), "b": [0.0, 1.0]}
    assert check_params(params, {"W": (2, 3), "b": (2,)}) is params
    with pytest.raises(TypeError, match=r"params\['b'\]: expected an array of numbers, got list"):
        check_params({"W": np.ones((2, 3)), "b": [None, 1.0]}, {"W": (2, 3), "b": (2,)})


def test_silent_acceptance_is_refused_by_name():
    from product_interactions.algebra import diagonal, position, tensor_product, translation
    from product_interactions.interactions import Parameter, Signal
    from product_interactions.interactions.architectures import attention, dynamical
    algebra = tensor_product(position(4), diagonal(2))
    for units in ([5], [-3], [True], [np.bool_(False)]):              # no wrapping modulo the factor count
        with pytest.raises(ValueError, match=r"units: expected factor indices in -2..1, got"):
            Signal("x", algebra, units=units)
    assert Signal("x", algebra, units=[-2]).units == {0}               # negative indices count from the end
    with pytest.raises(ValueError, match="algebra_or_shape: expected an Algebra or a shape of positive ints"):
        Parameter("w", (True, 2))
    for support in ((0.9, 1.7), "12", (True,)):
        with pytest.raises(ValueError, match=r"support\[0\]: expected a tuple of int component indices"):
            Parameter("k", translation(16), support={0: support})
    with pytest.raises(TypeError, match="dtype: expected a floating dtype"):
        attention(8, 2).init(dtype=int)
    model = dynamical(d_model=4)
    with pytest.raises(TypeError, match="x: expected an array of real numbers, got dtype complex128"):
        model.apply(model.init(seed=0), np.ones((1, 5, 4)) + 1j)


def test_selective_scan_refuses_a_nan_step():
    from product_interactions.kernels import selective_scan
    u, delta = np.ones((1, 3, 1)), np.full((1, 3, 1), 0.5)
    delta[0, 1, 0] = np.nan
    with pytest.raises(ValueError, match="delta: expected positive steps, got a minimum of nan"):
        selective_scan(u, delta, np.array([[-1.0]]), np.ones((1, 3, 1)), np.ones((1, 3, 1)))
