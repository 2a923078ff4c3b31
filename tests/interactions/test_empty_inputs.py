"""An empty batch, sequence or cloud is refused by name (`model.check_signal`) rather than failing inside."""
import numpy as np
import pytest

from product_interactions.interactions.architectures import (attention, convolution, deep_ls2t, dynamical,
                                                             dynamical_block, gating, ls2t, mamba, se3_attention,
                                                             ssm, tfn)

SEQUENCE_MODELS = {"attention": lambda: attention(d_model=4, heads=2), "dynamical": lambda: dynamical(d_model=4),
                   "dynamical_block": lambda: dynamical_block(d_model=4, d_conv=2),
                   "mamba": lambda: mamba(d_model=4, d_state=2), "ssm": lambda: ssm(channels=4, d_state=2)}


@pytest.mark.parametrize("name", sorted(SEQUENCE_MODELS))
@pytest.mark.parametrize("shape", [(0, 5, 4), (2, 0, 4)])
def test_sequence_models_refuse_an_empty_batch_or_length(name, shape):
    model = SEQUENCE_MODELS[name]()
    with pytest.raises(ValueError, match=rf"x: expected positive sizes, got shape \({shape[0]}, {shape[1]}, 4\)"):
        model.apply(model.init(seed=0), np.ones(shape))


@pytest.mark.parametrize("model", [gating(channels=1), convolution(size=3)])
def test_model_base_refuses_an_empty_input(model):
    with pytest.raises(ValueError, match=r"x: expected positive sizes, got shape \(0, 4, 1\)"):
        model.apply(model.init(seed=0), np.ones((0, 4, 1)))


@pytest.mark.parametrize("model", [ls2t(d_in=3, width=4, order=2), deep_ls2t(d_in=3, widths=(4, 2), order=2)])
def test_ls2t_refuses_an_empty_length(model):
    with pytest.raises(ValueError, match="x: expected shape .* with positive sizes, got"):
        model.apply(model.init(seed=0), np.ones((2, 0, 3)))


@pytest.mark.parametrize("model", [tfn(lmax=1, channels_in=2, channels_out=3),
                                   se3_attention(lmax=1, channels_in=2, channels=3)])
@pytest.mark.parametrize("batch, n", [(0, 5), (2, 0)])
def test_cloud_models_refuse_an_empty_batch_or_cloud(model, batch, n):
    with pytest.raises(ValueError, match=rf"points: expected positive sizes, got shape \({batch}, {n}, 3\)"):
        model.apply(model.init(seed=0), np.ones((batch, n, 3)), np.ones((batch, n, 4, 2)))
