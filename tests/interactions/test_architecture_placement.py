"""Every architecture keeps its tensors on its parameters' device, forward and backward: run on torch's meta device
standing in for a GPU (the `meta_as_gpu` fixture), where a mask, index table or constant made on the CPU raises as
it would on CUDA; at a short length and at a long one (the GPU's chunked scans, whole-sequence LS2T)."""
from __future__ import annotations

import numpy as np
import pytest
from module_cases import MODELS

torch = pytest.importorskip("torch")


def _lengthened(arrays, length):
    """The case's inputs with `length` steps (sequences) or as they are (point clouds)."""
    return [np.zeros(a.shape[:1] + (length,) + a.shape[2:]) if len(arrays) == 1 else a for a in arrays]


@pytest.mark.parametrize("length", [6, 300])
@pytest.mark.parametrize("model, arrays", MODELS, ids=[type(m).__name__ for m, _ in MODELS])
def test_an_architecture_runs_forward_and_backward_on_its_parameters_device(model, arrays, length, meta_as_gpu):
    params = {key: torch.zeros(np.shape(value), dtype=torch.float32, device=meta_as_gpu, requires_grad=True)
              for key, value in model.init(seed=0).items()}
    inputs = [torch.zeros(a.shape, dtype=torch.float32, device=meta_as_gpu) for a in _lengthened(arrays, length)]
    out = model.apply(params, *inputs)
    gradients = torch.autograd.grad(out.sum(), list(params.values()), allow_unused=True)
    assert out.device == meta_as_gpu and all(g is None or g.device == meta_as_gpu for g in gradients)
    assert any(g is not None for g in gradients)


@pytest.mark.parametrize("model, arrays", MODELS, ids=[type(m).__name__ for m, _ in MODELS])
def test_a_module_moved_to_the_device_brings_numpy_inputs_there(model, arrays, meta_as_gpu):
    module = model.to_torch(seed=0).to(device=meta_as_gpu, dtype=torch.float32)
    out = module(*_lengthened(arrays, 300))
    out.sum().backward()
    assert out.device == meta_as_gpu and all(p.grad.device == meta_as_gpu for p in module.parameters()
                                             if p.grad is not None)
