"""An empty batch gives an empty result, as torch's layers give one (an empty shard, a batch filtered to nothing):
every architecture on numpy, torch (with gradients of zero, so DistributedDataParallel's reduction sees every
parameter) and JAX under jit, and the functional entry points.  An empty sequence or cloud is refused by name
(`model.check_signal`) rather than failing inside.  Before, an empty batch was refused too, though product kernels
took one."""
import numpy as np
import pytest
from module_cases import MODELS

from product_interactions import kernels
from product_interactions.interactions.architectures import (attention, convolution, deep_ls2t, dynamical,
                                                             dynamical_block, gating, ls2t, mamba, se3_attention,
                                                             ssm, tfn)
from product_interactions.interactions.feature_map import seq2tens, signature

SEQUENCE_MODELS = {"attention": lambda: attention(d_model=4, heads=2), "dynamical": lambda: dynamical(d_model=4),
                   "dynamical_block": lambda: dynamical_block(d_model=4, d_conv=2),
                   "mamba": lambda: mamba(d_model=4, d_state=2), "ssm": lambda: ssm(channels=4, d_state=2)}
IDS = [type(m).__name__ for m, _ in MODELS]


@pytest.mark.parametrize("model, inputs", MODELS, ids=IDS)
def test_an_empty_batch_gives_an_empty_result_on_every_engine(model, inputs):
    params = model.init(seed=0)
    expected = (0,) + np.shape(model.apply(params, *inputs))[1:]
    empty = [np.asarray(a)[:0] for a in inputs]
    assert np.shape(model.apply(params, *empty)) == expected
    torch = pytest.importorskip("torch")
    module = model.to_torch(seed=0)
    out = module(*(torch.tensor(a) for a in empty))
    out.sum().backward()
    assert tuple(out.shape) == expected
    assert all(p.grad is not None and not p.grad.any() for p in module.parameters())
    jax = pytest.importorskip("jax")
    out = jax.jit(model.apply)({name: jax.numpy.asarray(v) for name, v in params.items()},
                               *(jax.numpy.asarray(a) for a in empty))
    assert tuple(out.shape) == expected


def test_the_entry_points_take_an_empty_batch():
    u = np.zeros((0, 5, 3))
    assert signature(u, 2, mask=np.ones((0, 5))).shape == (0, 12)
    assert seq2tens(u, 2)[2].shape == (0, 3, 3)
    assert kernels.selective_scan(u, u, -np.ones((3, 2)), np.zeros((0, 5, 2)), np.zeros((0, 5, 2))).shape == u.shape
    assert kernels.causal_convolution(np.zeros((0, 3, 5)), np.ones(5)).shape == (0, 3, 5)


@pytest.mark.parametrize("factors", [("translation", "translation"), ("tensor_algebra", "quaternions")])
def test_every_strategy_of_a_kernel_takes_an_empty_batch_on_every_engine(factors):
    """Nested FFT levels included: torch's CPU FFT refuses a batch of none (`TorchEngine.fft`); and the graded
    levels of T(V), outside and inside (a reshape by -1 of no entries is ambiguous to torch)."""
    import itertools
    from product_interactions.algebra import quaternions, tensor_algebra, tensor_product, translation
    torch, jax = pytest.importorskip("torch"), pytest.importorskip("jax")
    made = {"translation": lambda: translation(4), "tensor_algebra": lambda: tensor_algebra(2, 2),
            "quaternions": quaternions}
    algebra = tensor_product(*(made[name]() for name in factors))
    empty = np.zeros((0,) + algebra.shape)
    checked = 0
    for names in itertools.chain(itertools.product(kernels.STRATEGIES, repeat=2), kernels.STRATEGIES):
        try:
            kernel = kernels.product(algebra, strategy=names)
        except ValueError:
            continue
        for x in (empty, torch.tensor(empty), jax.numpy.asarray(empty)):
            assert tuple(kernel(x, x).shape) == empty.shape, names
        checked += 1
    assert checked > 10


@pytest.mark.parametrize("name", sorted(SEQUENCE_MODELS))
def test_sequence_models_refuse_an_empty_length(name):
    model = SEQUENCE_MODELS[name]()
    with pytest.raises(ValueError, match=r"x: expected positive sizes after the batch axis, got shape \(2, 0, 4\)"):
        model.apply(model.init(seed=0), np.ones((2, 0, 4)))


@pytest.mark.parametrize("model", [gating(channels=1), convolution(size=3)])
def test_model_base_refuses_an_empty_channel_axis(model):
    with pytest.raises(ValueError, match=r"x: expected positive sizes after the batch axis, got shape \(2, 4, 0\)"):
        model.apply(model.init(seed=0), np.ones((2, 4, 0)))


@pytest.mark.parametrize("model", [ls2t(d_in=3, width=4, order=2), deep_ls2t(d_in=3, widths=(4, 2), order=2)])
def test_ls2t_refuses_an_empty_length(model):
    with pytest.raises(ValueError, match="x: expected shape .* with positive length and d, got"):
        model.apply(model.init(seed=0), np.ones((2, 0, 3)))


@pytest.mark.parametrize("model", [tfn(lmax=1, channels_in=2, channels_out=3),
                                   se3_attention(lmax=1, channels_in=2, channels=3)])
def test_cloud_models_refuse_an_empty_cloud(model):
    with pytest.raises(ValueError, match=r"points: expected positive sizes after the batch axis, got shape "
                                         r"\(2, 0, 3\)"):
        model.apply(model.init(seed=0), np.ones((2, 0, 3)), np.ones((2, 0, 4, 2)))


@pytest.mark.parametrize("library, advice", [("torch", r"x.float\(\) or x.double\(\)"),
                                             ("jax", r"x.astype\(jnp.float32\)")])
def test_an_integer_input_is_refused_with_its_own_library_s_conversion(library, advice):
    """The advice names the input's library's conversion (JAX arrays have no .float())."""
    module = pytest.importorskip(library)
    model = gating(channels=2)
    xp = module.numpy if library == "jax" else module
    x = xp.ones((1, 3, 2), dtype=xp.int32)
    with pytest.raises(TypeError, match=rf"x: expected floating-point values \({library} computes in the input's "
                                        rf"dtype; convert with {advice}\), got int32"):
        model.apply(model.init(seed=0), x)


def test_a_torch_mask_on_another_device_than_x_is_moved_to_x_s(meta_as_gpu):
    """A mask in x's library is used where it is only on x's device; a CPU mask beside x on a GPU (the meta
    stand-in) is moved there.  Before, it was kept on the CPU and the first operation that met x raised."""
    torch = pytest.importorskip("torch")
    model = ls2t(d_in=3, width=2, order=2, time=True, difference=True)
    module = model.to_torch(seed=0).to(meta_as_gpu)
    x = torch.zeros(2, 5, 3, dtype=torch.float64, device=meta_as_gpu)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]])
    assert module(x, mask).device == meta_as_gpu
