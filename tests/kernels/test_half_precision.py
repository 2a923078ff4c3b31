"""torch's half precision (bfloat16 and float16, what mixed-precision training on a GPU keeps its weights and
activations in) through the functional entry points and the FFT strategy: each result in the inputs' dtype,
within that dtype's rounding of the float64 result, and its gradient too.  torch's FFTs refuse half precision
(bfloat16 everywhere, float16 on the CPU), so the engine transforms it in float32 and the callers cast back; the
selective scan's check read bfloat16 through numpy, which has no such dtype.  Each had failed with torch's own
error ("Unsupported dtype BFloat16", "Got unsupported ScalarType BFloat16")."""
from __future__ import annotations

import pytest

from product_interactions import kernels
from product_interactions.algebra import translation
from product_interactions.interactions.feature_map import signature

torch = pytest.importorskip("torch")

#: The relative error each half dtype's rounding allows (float16 keeps 11 bits, bfloat16 8).
TOLERANCES = {torch.float16: 4e-3, torch.bfloat16: 3e-2}


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


@pytest.mark.parametrize("dtype", list(TOLERANCES), ids=str)
@pytest.mark.parametrize("name", CASES)
def test_half_precision_gives_its_own_dtype_within_its_rounding_and_a_gradient(name, dtype):
    function, shapes, positive = CASES[name]
    exact = _generated(len(name), *shapes, positive=positive)
    inputs = [a.to(dtype).requires_grad_() for a in exact]
    got = function(*inputs)
    expected = function(*(a.to(dtype).double() for a in exact))      # the same rounded inputs, in float64
    assert got.dtype == dtype
    scale = float(expected.abs().max())
    assert float((got.double() - expected).abs().max()) <= TOLERANCES[dtype] * scale, name
    gradient = torch.autograd.grad(got.float().sum(), inputs[0])[0]
    assert gradient.dtype == dtype and bool(torch.isfinite(gradient).all())


def test_the_torch_engine_reads_bfloat16_exactly():
    from product_interactions.kernels.arrays import TORCH
    a = torch.tensor([1.0, -2.5, 3.0e38], dtype=torch.bfloat16)
    assert TORCH.value(a).tolist() == a.float().tolist()
