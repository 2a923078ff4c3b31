"""Half precision (bfloat16 and float16, what mixed-precision training on a GPU keeps its weights and
activations in), on torch and JAX, through the functional entry points, the FFT strategy, the state-space
models (S4D, Mamba, the dynamical layer, whose modules had refused it) and LS2T: each result in the inputs' dtype, and
within two of that dtype's roundings of the float64 result on the same rounded inputs, since the scans (which add
up their rounding step by step) and the FFTs (which torch refuses in half precision) run in float32
(`kernels.arrays.precision`); a gradient in that dtype too.  Before, the scans ran in half precision (bfloat16:
4x and 3x that bound for the selective scan and the signature), the FFTs and the selective scan's check failed
with torch's own errors ("Unsupported dtype BFloat16", "Got unsupported ScalarType BFloat16"), and JAX's
bfloat16 was refused everywhere as not a number (its numpy dtype is of kind "V")."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from product_interactions import kernels
from product_interactions.algebra import translation
from product_interactions.interactions.architectures import deep_ls2t, dynamical, ls2t, mamba, se3_attention, ssm, tfn
from product_interactions.interactions.feature_map import signature

torch = pytest.importorskip("torch")

#: Two unit roundoffs of each half dtype (float16 keeps 11 bits, bfloat16 8), relative to the largest result.
TOLERANCES = {torch.float16: 2 * 2.0**-11, torch.bfloat16: 2 * 2.0**-8}


def _generated(seed, *shapes, positive=()):
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(*shape, generator=g, dtype=torch.float64) + 0.1 if n in positive
            else torch.randn(*shape, generator=g, dtype=torch.float64) for n, shape in enumerate(shapes)]


CASES = {
    "causal_convolution": (lambda x, k: kernels.causal_convolution(x, k), ((2, 3, 12), (12,)), ()),
    "fft product": (lambda x, y: kernels.product(translation(16), strategy="fft")(x, y), ((5, 16), (5, 16)), ()),
    "selective_scan": (lambda u, delta, A, B, C: kernels.selective_scan(u, delta, -A, B, C),
                       ((2, 9, 3), (2, 9, 3), (3, 2), (2, 9, 2), (2, 9, 2)), (1, 2)),
    "selective_scan chunked": (lambda u, delta, A, B, C: kernels.selective_scan(u, delta, -A, B, C, method="chunked"),
                               ((2, 9, 3), (2, 9, 3), (3, 2), (2, 9, 2), (2, 9, 2)), (1, 2)),
    "linear_scan": (lambda a, b: kernels.linear_scan(a * 0.9, b), ((2, 9, 3), (2, 9, 3)), (0,)),
    "signature": (lambda x: signature(x, 3), ((2, 6, 2),), ()),
}


def _applied(model, x, *weights):
    return model.apply(dict(zip(model.init(seed=0), weights)), x)


for _model in (ssm(channels=3, d_state=2), mamba(d_model=3, d_state=2), dynamical(d_model=3),
               ls2t(d_in=3, width=2, order=3), deep_ls2t(d_in=3, widths=(2, 2), order=2)):
    CASES[type(_model).__name__] = (functools.partial(_applied, _model), ((2, 9, 3), *(
        tuple(weight.shape) for weight in _model.init(seed=0).values())), ())


#: Where the cases run: torch on the CPU, and on a GPU where there is one; JAX.
LIBRARIES = ["torch", pytest.param("torch on cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                                            reason="no CUDA device")), "jax"]


def _on_jax(function, rounded):
    """(result in float64 as torch, its dtype's name, its gradient for the first input's dtype's name, whether that
    gradient is finite) of `function` on JAX arrays of `rounded`'s half dtype."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    half = getattr(jnp, str(rounded[0].dtype).split(".")[-1])
    inputs = [jnp.asarray(a.float().numpy()).astype(half) for a in rounded]          # exact: float32 holds both
    got = function(*inputs)
    gradient = jax.grad(lambda first: function(first, *inputs[1:]).astype(jnp.float32).sum())(inputs[0])
    return (torch.tensor(np.asarray(got.astype(jnp.float32)), dtype=torch.float64), str(got.dtype),
            str(gradient.dtype), bool(jnp.isfinite(gradient).all()))


def _on_torch(function, rounded, device):
    inputs = [a.to(device).requires_grad_() for a in rounded]
    got = function(*inputs)
    gradient = torch.autograd.grad(got.float().sum(), inputs[0])[0]
    name = lambda dtype: str(dtype).split(".")[-1]  # noqa: E731
    return got.detach().double().cpu(), name(got.dtype), name(gradient.dtype), bool(torch.isfinite(gradient).all())


@pytest.mark.parametrize("library", LIBRARIES)
@pytest.mark.parametrize("dtype", list(TOLERANCES), ids=str)
@pytest.mark.parametrize("name", CASES)
def test_half_precision_gives_its_own_dtype_within_its_rounding_and_a_gradient(name, dtype, library):
    function, shapes, positive = CASES[name]
    rounded = [a.to(dtype) for a in _generated(len(name), *shapes, positive=positive)]
    expected = function(*(a.double() for a in rounded))              # the same rounded inputs, in float64
    got, got_dtype, gradient_dtype, finite = _on_jax(function, rounded) if library == "jax" else \
        _on_torch(function, rounded, "cuda" if "cuda" in library else "cpu")
    half = str(dtype).split(".")[-1]
    assert got_dtype == gradient_dtype == half and finite
    assert float((got - expected).abs().max()) <= TOLERANCES[dtype] * float(expected.abs().max()), name


def test_the_torch_engine_reads_bfloat16_exactly():
    from product_interactions.kernels.arrays import TORCH
    a = torch.tensor([1.0, -2.5, 3.0e38], dtype=torch.bfloat16)
    assert TORCH.value(a).tolist() == a.float().tolist()


@pytest.mark.parametrize("method", ["sequential", "parallel", "chunked"])
def test_operands_of_two_dtypes_meet_in_their_common_one(method):
    """bfloat16 beside float32 (an input beside a parameter) or float16 compute in float32, float32 beside float64
    in float64: torch's promotion, the result in that dtype and equal to the scan of operands cast to it.  The
    selective scan had failed on each pair inside torch ("expected scalar type Float but found Double")."""
    from product_interactions.kernels.arrays import TORCH, common_precision
    arrays, half = common_precision(TORCH, {"u": torch.ones(2, dtype=torch.bfloat16), "steps": torch.arange(2),
                                            "mask": torch.ones(2, dtype=torch.bool), "D": None})
    assert arrays["u"].dtype == arrays["steps"].dtype == torch.float32 and half == torch.bfloat16
    assert arrays["mask"].dtype == torch.bool and arrays["D"] is None
    u, delta, B, C = _generated(7, (1, 6, 2), (1, 6, 2), (1, 6, 3), (1, 6, 3), positive=(1,))
    A = -torch.linspace(0.5, 1.5, 6, dtype=torch.float64).reshape(2, 3)
    for low, high in ((torch.bfloat16, torch.float32), (torch.bfloat16, torch.float16), (torch.float32, torch.float64)):
        common = torch.promote_types(low, high)
        got = kernels.selective_scan(u.to(low), delta.to(low), A.to(high), B.to(low), C.to(high), method=method)
        want = kernels.selective_scan(*(a.to(low).to(common) for a in (u, delta)), A.to(high).to(common),
                                      B.to(low).to(common), C.to(high).to(common), method=method)
        assert got.dtype == common
        torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("real", [torch.bfloat16, torch.float16, torch.float32], ids=str)
def test_a_complex_operand_beside_a_real_one_keeps_its_imaginary_part(real):
    """A complex recurrence with real half-precision inputs is complex: the half dtype is no result's dtype
    there (the result had been cast to it, its imaginary part dropped)."""
    a = torch.full((3, 1), 0.5 + 0.5j, dtype=torch.complex64)
    b = torch.ones(3, 1, dtype=real)
    want = kernels.linear_scan(a, b.to(torch.complex64))
    for got in (kernels.linear_scan(a, b), kernels.linear_scan(b.to(torch.float32) * 0.5, a)):
        assert got.dtype == torch.complex64
    torch.testing.assert_close(kernels.linear_scan(a, b), want, rtol=0, atol=0)
    assert kernels.linear_scan(np.full((3, 1), 0.5 + 0.5j, np.complex64), np.ones((3, 1), np.float16)).dtype == \
        np.complex64


def test_integers_beside_floats_compute_in_their_common_dtype():
    """The library's promotion: numpy's int32 beside float16 is float64, torch's int32 beside float64 is float64,
    computed there (torch had zeroed the integers' non-finite entries into float32: y[0] came out 3.8e-7)."""
    x = np.arange(6, dtype=np.int32)[None]
    assert kernels.causal_convolution(x, np.ones(6, np.float16)).dtype == np.float64
    got = kernels.causal_convolution(torch.tensor(x), torch.ones(6, dtype=torch.float64))
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, torch.tensor(np.cumsum(x, axis=1), dtype=torch.float64), rtol=1e-12, atol=1e-12)


#: Each case's inputs that it negates or scales first (torch has no float8 arithmetic for that).
_PREPARED = {"selective_scan", "selective_scan chunked", "linear_scan"}


@pytest.mark.parametrize("library", ["torch", "jax"])
@pytest.mark.parametrize("dtype", ["uint8", "int16", "complex32", "float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("name", CASES)
def test_other_dtypes_are_refused_by_name_or_computed(name, dtype, library):
    """Small integers and the dtypes numpy lacks or only ml_dtypes names (complex32, float8): a TypeError that
    names the argument and the dtype, or (integers, where the case takes them) a floating result.  The torch engine
    had let a bare KeyError ('uint8') escape from every case; float8 reached torch's kernels ("bmm" not implemented
    for 'Float8_e4m3fn') through the models and the products, whose checks took any dtype named "float", and JAX's
    float8_e5m2 (of kind "f" in numpy, through ml_dtypes) was computed in."""
    if dtype.startswith("float8") and name in _PREPARED:
        pytest.skip("the case's own arithmetic on float8")
    function, shapes, positive = CASES[name]
    inputs = [a.abs() for a in _generated(3, *shapes, positive=positive)]
    if library == "torch":
        inputs = [a.to(getattr(torch, dtype)) for a in inputs]
    else:
        jnp = pytest.importorskip("jax").numpy
        if not hasattr(jnp, dtype):
            pytest.skip(f"JAX has no {dtype}")
        inputs = [jnp.asarray(a.numpy()).astype(getattr(jnp, dtype)) for a in inputs]
    try:
        got = function(*inputs)
    except TypeError as error:
        argument = str(error).split(":")[0]
        assert argument in ("x", "u", "a", "b", "inputs['x']") or argument.startswith("params["), str(error)
        assert dtype in str(error), str(error)
    else:
        assert dtype.startswith(("uint", "int")), name
        assert str(got.dtype).split(".")[-1] in ("float32", "float64"), name


#: (model, half dtype, the bound in roundings of that dtype or None: the dtype and finiteness checked alone).
EQUIVARIANT = [(tfn(lmax=1, channels_in=2, channels_out=2), torch.float16, 16),
               (tfn(lmax=1, channels_in=2, channels_out=2), torch.bfloat16, 16),
               (se3_attention(lmax=1, channels_in=2, channels=2), torch.float16, 16),
               (se3_attention(lmax=1, channels_in=2, channels=2), torch.bfloat16, None)]


@pytest.mark.parametrize("model, dtype, roundings", EQUIVARIANT,
                         ids=[f"{type(m).__name__}-{str(d).split('.')[-1]}" for m, d, _ in EQUIVARIANT])
def test_the_equivariant_models_take_half_precision(model, dtype, roundings):
    """Tensor field networks and SE(3) attention on half-precision points, features and weights: a result and a
    gradient for the points in that dtype (bfloat16 had been refused by the solid harmonics' check, "expected an
    array of real numbers, got Tensor of dtype bfloat16"), computed in it throughout, so within `roundings` of
    the dtype's rounding of the float64 result on the same rounded inputs (about 8 seen).  In SE(3) attention
    bfloat16's 8 bits round the scores, which moves each softmax weight by the score times 2^-8 (about 50 roundings
    of the output seen): there the dtype and a finite gradient are checked."""
    rng = np.random.default_rng(5)
    shapes = [(2, 5, 3), (2, 5, (model.lmax + 1) ** 2, 2)] + [np.shape(w) for w in model.init(seed=0).values()]
    rounded = [torch.tensor(rng.standard_normal(shape)).to(dtype) for shape in shapes]
    function = functools.partial(_equivariant, model)
    expected = function(*(a.double() for a in rounded))
    got, got_dtype, gradient_dtype, finite = _on_torch(function, rounded, "cpu")
    assert got_dtype == gradient_dtype == str(dtype).split(".")[-1] and finite
    if roundings is not None:
        error = float((got - expected).abs().max()) / float(expected.abs().max())
        assert error <= roundings * TOLERANCES[dtype] / 2, error


def _equivariant(model, points, features, *weights):
    return model.apply(dict(zip(model.init(seed=0), weights)), points, features)


@pytest.mark.parametrize("library", ["torch", "jax"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_the_solid_harmonics_take_half_precision(dtype, library):
    """In the coordinates' dtype, within 4 roundings of that dtype of the float64 harmonics of the same rounded
    coordinates (the equivariant models' directions; bfloat16 had been refused on both libraries)."""
    from product_interactions.algebra.so3 import solid_harmonics
    rounded = torch.tensor(np.random.default_rng(2).uniform(-1, 1, (3, 10))).to(getattr(torch, dtype))
    if library == "jax":
        jnp = pytest.importorskip("jax").numpy
        coordinates = [jnp.asarray(c.float().numpy()).astype(getattr(jnp, dtype)) for c in rounded]
        got = solid_harmonics(3, *coordinates, jnp.stack)
        got_dtype, got = str(got.dtype), torch.tensor(np.asarray(got.astype(jnp.float64)))
    else:
        got = solid_harmonics(3, *rounded, torch.stack)
        got_dtype, got = str(got.dtype).split(".")[-1], got.double()
    expected = solid_harmonics(3, *rounded.double(), torch.stack)
    assert got_dtype == dtype
    assert float((got - expected).abs().max()) <= 2 * TOLERANCES[getattr(torch, dtype)] * float(expected.abs().max())


def test_the_solid_harmonics_refuse_float8_by_name():
    """float8 had passed the check (its name begins with "float") and failed in torch's arithmetic."""
    from product_interactions.algebra.so3 import solid_harmonics
    x = torch.zeros(3).to(torch.float8_e4m3fn)
    with pytest.raises(TypeError, match="^x: expected an array of real numbers, got Tensor of dtype float8_e4m3fn$"):
        solid_harmonics(1, x, x, x, torch.stack)


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64"])
def test_the_solid_harmonics_refuse_the_unsigned_tensors_torch_cannot_compute_with(dtype):
    """torch's wide unsigned dtypes had passed the check and failed in torch's arithmetic ('"add_stub" not
    implemented for 'UInt16''); numpy's compute."""
    from product_interactions.algebra.so3 import solid_harmonics
    x = torch.ones(3, dtype=getattr(torch, dtype))
    with pytest.raises(TypeError, match=f"^x: expected a tensor of a dtype torch computes with, got {dtype} "):
        solid_harmonics(1, x, x, x, torch.stack)
    plain = np.ones(3, dtype=dtype)
    np.testing.assert_allclose(solid_harmonics(1, plain, plain, plain, np.stack), solid_harmonics(
        1, *np.ones((3, 3)), np.stack))


@pytest.mark.parametrize("half", ["bfloat16", "float16"])
def test_a_weakly_typed_jax_array_meets_a_half_precision_one_in_its_dtype(half):
    """An array JAX makes from a Python number (``jnp.full(shape, 0.9)``, a scalar argument under jit) is weakly
    typed: beside a bfloat16 one, JAX's arithmetic gives bfloat16.  The scans, the convolution and the fft product
    gave float32 (their dtypes met by ``promote_types``, which drops weak types).  They give that dtype, computed in
    float32 as half precision always is here: the float32 result rounded to it."""
    jnp = pytest.importorskip("jax").numpy
    weak, strong = jnp.full((6, 2), 0.9), jnp.linspace(0.5, 1, 12).reshape(6, 2).astype(half)
    assert weak.weak_type and (weak * strong).dtype == half
    fft = kernels.product(translation(2), strategy="fft")
    for call in (kernels.linear_scan, kernels.causal_convolution, fft):
        got, expected = call(weak, strong), call(weak, strong.astype("float32")).astype(half)
        assert got.dtype == half, call
        np.testing.assert_array_equal(np.asarray(got, np.float64), np.asarray(expected, np.float64))
