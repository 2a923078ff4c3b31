"""Mamba's and S4D's options away from their defaults: the block against the numpy loop of ssm_support (which reads
every size from the parameters it is given), and the initialisations their docstrings state."""
import numpy as np
import pytest

from product_interactions.interactions.architectures import mamba, ssm
from ssm_support import mamba_loop, softplus, ssm_loop


@pytest.mark.parametrize("options, expand, d_conv, dt_rank", [
    ({"expand": 1}, 1, 4, 1), ({"expand": 3}, 3, 4, 1), ({"d_conv": 1}, 2, 1, 1), ({"d_conv": 6}, 2, 6, 1),
    ({"dt_rank": 3}, 2, 4, 3), ({"expand": 3, "d_conv": 2, "dt_rank": 2}, 3, 2, 2)])
def test_mamba_s_expansion_taps_and_step_rank_reach_the_block_as_the_loop_reads_them(options, expand, d_conv,
                                                                                    dt_rank):
    d_model, length = 4, 7                                          # dt_rank's default: ceil(4 / 16) = 1
    model = mamba(d_model=d_model, d_state=3, length=length, **options)
    params = model.init(seed=2)
    d_inner = expand * d_model
    assert params["W_x"].shape == params["W_z"].shape == (d_inner, d_model)
    assert params["W_delta"].shape == (dt_rank, d_inner) and params["W_dt"].shape == (d_inner, dt_rank)
    assert sorted(name for name in params if name.startswith("conv_")) == sorted(
        [f"conv_{k}" for k in range(d_conv)] + ["conv_bias"])
    x = np.random.default_rng(3).standard_normal((2, length, d_model))
    expected = mamba_loop(params, x)
    for method in ("sequential", "parallel", "expression"):
        np.testing.assert_allclose(model.apply(params, x, method=method), expected, rtol=1e-11, atol=1e-13)


def test_mamba_s_step_rank_defaults_to_a_sixteenth_of_d_model_rounded_up():
    """Gu and Dao (2023), as in their reference code: dt_rank = ceil(d_model / 16)."""
    assert [mamba(d_model=d).dt_rank for d in (1, 16, 17, 20, 33, 64)] == [1, 1, 2, 2, 3, 4]


def test_a_step_of_mamba_sees_exactly_d_conv_inputs():
    """Changing the input d_conv steps back changes a step's output; d_conv + 1 steps back does not (before the
    scan's state carries it: probed on the convolution alone, with the state's transition at zero)."""
    model = mamba(d_model=2, d_state=1, d_conv=3, length=8)
    params = model.init(seed=0)
    params["A_log"][:] = 50.0                                       # exp(Delta A) = 0: no memory in the state
    x = np.random.default_rng(0).standard_normal((1, 8, 2))
    base = model.apply(params, x)
    for back, changes in ((2, True), (3, False)):
        moved = x.copy()
        moved[0, 7 - back] += 1.0
        assert np.allclose(model.apply(params, moved)[0, 7], base[0, 7]) is not changes, back


@pytest.mark.parametrize("low, high", [(1e-2, 0.5), (1e-4, 1e-3)])
def test_mamba_s_initial_steps_are_log_uniform_in_dt_min_dt_max(low, high):
    model = mamba(d_model=128, d_state=4, dt_min=low, dt_max=high)
    params = model.init(seed=0)
    steps = softplus(params["dt_bias"])                             # Delta at a zero input
    assert steps.min() >= low * (1 - 1e-9) and steps.max() <= high * (1 + 1e-9)
    logs = np.log(steps)                                            # 256 draws: the mean within 4 standard errors
    assert abs(logs.mean() - (np.log(low) + np.log(high)) / 2) < 4 * np.log(high / low) / np.sqrt(12 * 256)
    np.testing.assert_allclose(np.exp(params["A_log"]), np.tile(np.arange(1.0, 5.0), (256, 1)), rtol=1e-15)
    assert np.array_equal(params["D"], np.ones(256))


@pytest.mark.parametrize("low, high", [(1e-2, 0.5), (1e-4, 1e-3)])
def test_s4d_initial_steps_are_log_uniform_in_step_min_step_max_and_reach_the_output(low, high):
    model = ssm(channels=256, d_state=2, step_min=low, step_max=high, length=5)
    params = model.init(seed=0)
    steps = np.exp(params["log_step"])
    assert steps.min() >= low * (1 - 1e-9) and steps.max() <= high * (1 + 1e-9)
    assert abs(np.log(steps).mean() - (np.log(low) + np.log(high)) / 2) < 4 * np.log(high / low) / np.sqrt(12 * 256)
    x = np.random.default_rng(1).standard_normal((1, 5, 256))
    np.testing.assert_allclose(model.apply(params, x), ssm_loop(params, x), rtol=1e-10, atol=1e-12)
