"""Architectures as torch modules and in torch and JAX training code: the same numbers as `apply`, named
parameters, training with torch.optim, DistributedDataParallel on 2 processes, and JAX sharding on 2 devices."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from module_cases import MODELS, SEQUENCE

from product_interactions import kernels
from product_interactions.algebra import quaternions
from product_interactions.interactions.architectures import attention, gating, ls2t, mamba, tfn

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("model, inputs", MODELS, ids=[type(m).__name__ for m, _ in MODELS])
def test_a_torch_module_carries_the_names_and_the_numbers(model, inputs):
    module = model.to_torch(seed=3)
    assert dict((name, tuple(p.shape)) for name, p in module.named_parameters()) == {
        name: tuple(shape) for name, shape in model.parameters.items()}
    out = module(*(torch.tensor(x) for x in inputs))
    np.testing.assert_allclose(out.detach().numpy(), model.apply(model.init(seed=3), *inputs), rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("model, inputs", MODELS, ids=[type(m).__name__ for m, _ in MODELS])
def test_on_a_gpu_no_architecture_reads_a_number_back_forward_or_backward(model, inputs, monkeypatch):
    """Under CUDA's rates (where a read waits for every kernel queued before it) no architecture hands a tensor's
    numbers to Python in a training step's forward and backward, so the host runs ahead of the device throughout;
    counted on CPU tensors (`tests/kernels/test_device_reads.py` counts the CPU's reads and the kernels')."""
    from product_interactions.kernels.arrays import TORCH
    from product_interactions.kernels.arrays.rates import CUDA_RATES
    monkeypatch.setattr(TORCH, "rates_for", lambda a: CUDA_RATES)
    monkeypatch.setattr(TORCH, "scans_compiled", lambda a: False)       # the CPU's C loops (LS2T's) run on no GPU
    params = {name: torch.tensor(value, requires_grad=True) for name, value in model.init(seed=0).items()}
    arguments = [torch.tensor(x) for x in inputs]
    model.apply(params, *arguments).sum().backward()               # builds the plans (their checks read shapes)
    for name in ("__bool__", "__float__", "__int__", "__index__", "__array__", "item", "tolist", "numpy"):
        monkeypatch.setattr(torch.Tensor, name, lambda self, *a, _name=name, **k: pytest.fail(f"read by {_name}"))
    model.apply(params, *arguments).sum().backward()


@pytest.mark.parametrize("model, inputs", MODELS, ids=[type(m).__name__ for m, _ in MODELS])
def test_a_module_saves_and_loads_whole(model, inputs, tmp_path):
    """``torch.save(module)`` and ``torch.load`` (pickling, which a spawned worker does too) give the module back:
    its parameters (values, names, dtype, requires_grad), its mode, its values, a key of its own, and it compiles
    whole.  Pickling had failed: the class `to_torch` makes has no module-level name."""
    module = model.to_torch(seed=4).float().eval()
    module.get_parameter(next(iter(model.parameters))).requires_grad_(False)
    torch.save(module, tmp_path / "module.pt")
    loaded = torch.load(tmp_path / "module.pt", weights_only=False)
    assert loaded.key != module.key and not loaded.training and type(loaded).__name__ == type(module).__name__
    for (name, p), (other, q) in zip(module.named_parameters(), loaded.named_parameters()):
        assert name == other and q.dtype == torch.float32 and q.requires_grad == p.requires_grad
        assert torch.equal(p, q) and p.data_ptr() != q.data_ptr()
    x = [torch.tensor(a, dtype=torch.float32) for a in inputs]
    torch.testing.assert_close(loaded(*x), module(*x), rtol=0, atol=0)
    torch._dynamo.reset()                 # the modules share one forward, whose compiled forms torch caps
    torch.testing.assert_close(torch.compile(loaded, fullgraph=True, backend="eager")(*x), module(*x))


def test_a_module_trains_with_torch_optim():
    torch.manual_seed(0)
    module = attention(d_model=4, heads=2).to_torch(seed=0).float()
    x = torch.tensor(SEQUENCE, dtype=torch.float32)
    target = torch.roll(x, 1, dims=1)
    optimiser = torch.optim.Adam(module.parameters(), lr=0.05)
    losses = []
    for _ in range(40):
        optimiser.zero_grad()
        loss = ((module(x) - target) ** 2).mean()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    assert losses[-1] < 0.6 * losses[0]


def test_kernels_and_compiled_expressions_inside_a_module_of_ones_own():
    product = kernels.product(quaternions())
    plan = gating(channels=4).build((6,))[0].compile()

    class Mine(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.left = torch.nn.Parameter(torch.randn(4, dtype=torch.float64))
            self.W = torch.nn.Parameter(torch.randn(4, 4, dtype=torch.float64))

        def forward(self, x):
            return plan(product(self.left, x), {"W": self.W})

    module, x = Mine(), torch.tensor(SEQUENCE)
    module(x).sum().backward()
    assert module.left.grad.shape == (4,) and module.W.grad.shape == (4, 4)


DDP = """
import numpy as np, torch, torch.distributed as dist, torch.multiprocessing as mp
from product_interactions.interactions.architectures import attention

def train(module, x, y, steps=3):
    optimiser = torch.optim.SGD(module.parameters(), lr=0.1)
    for _ in range(steps):
        optimiser.zero_grad()
        ((module(x) - y) ** 2).mean().backward()
        optimiser.step()

def worker(rank, world, port, x, y, out):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    module = torch.nn.parallel.DistributedDataParallel(attention(d_model=4, heads=2).to_torch(seed=0))
    half = len(x) // world
    train(module, x[rank * half:(rank + 1) * half], y[rank * half:(rank + 1) * half])
    if rank == 0:
        torch.save({k: v.detach() for k, v in module.module.named_parameters()}, out)
    dist.destroy_process_group()

if __name__ == "__main__":
    import socket, sys
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(8, 6, 4, generator=g, dtype=torch.float64), torch.randn(8, 6, 4, generator=g, dtype=torch.float64)
    mp.spawn(worker, args=(2, port, x, y, sys.argv[1]), nprocs=2)
    single = attention(d_model=4, heads=2).to_torch(seed=0)
    train(single, x, y)
    distributed = torch.load(sys.argv[1])
    print(max(float((p.detach() - distributed[k]).abs().max()) for k, p in single.named_parameters()))
"""


def test_distributed_data_parallel_on_two_processes_equals_one_process(tmp_path):
    script = tmp_path / "ddp.py"
    script.write_text(DDP)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    result = subprocess.run([sys.executable, str(script), str(tmp_path / "params.pt")], capture_output=True,
                            text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-1500:]
    assert float(result.stdout.strip().splitlines()[-1]) < 1e-12


SHARDING = """
import numpy as np, jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec
jax.config.update("jax_enable_x64", True)
from product_interactions.interactions.architectures import attention
assert len(jax.devices()) == 2, jax.devices()
model = attention(d_model=4, heads=2)
params = {k: jnp.asarray(v) for k, v in model.init(seed=0).items()}
x = jnp.asarray(np.random.default_rng(1).standard_normal((8, 6, 4)))
mesh = Mesh(np.array(jax.devices()), ("data",))
sharded = jax.device_put(x, NamedSharding(mesh, PartitionSpec("data")))
loss = jax.jit(jax.value_and_grad(lambda p, x: jnp.sum(model.apply(p, x) ** 2)))
(value, grad), (plain, plain_grad) = loss(params, sharded), loss(params, x)
assert len(sharded.sharding.device_set) == 2
print(abs(float(value - plain)), max(float(jnp.abs(grad[k] - plain_grad[k]).max()) for k in grad))
"""


def test_jax_shards_a_batch_over_two_devices(tmp_path):
    pytest.importorskip("jax")
    script = tmp_path / "sharding.py"
    script.write_text(SHARDING)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-1500:]
    assert all(float(v) < 1e-10 for v in result.stdout.split())


@pytest.mark.parametrize("model, inputs", MODELS, ids=[type(m).__name__ for m, _ in MODELS])
def test_a_module_trains_after_an_evaluation_under_inference_mode(model, inputs, monkeypatch):
    """A validation pass under ``torch.inference_mode`` before training (as Lightning runs one) and then a training
    step: the same gradients as without it.  SE(3) attention's step had failed ("Inference tensors cannot be saved
    for backward"): its plan's constants, first converted under inference mode, were kept as inference tensors.
    The engine's store of constants is emptied first, so the evaluation is the call that converts them."""
    from product_interactions.kernels.arrays import TORCH
    from product_interactions.kernels.arrays.bounded_cache import BoundedCache
    from product_interactions.kernels.arrays.engine import CONSTANTS_KEPT
    module, x = model.to_torch(seed=5), [torch.tensor(a) for a in inputs]
    expected = torch.autograd.grad(module(*x).square().sum(), list(module.parameters()))
    monkeypatch.setattr(TORCH, "_constants", BoundedCache(CONSTANTS_KEPT))
    with torch.inference_mode():
        evaluated = module(*x)
    out = module(*x)
    torch.testing.assert_close(out.detach(), evaluated, rtol=1e-12, atol=1e-12)
    for got, want in zip(torch.autograd.grad(out.square().sum(), list(module.parameters())), expected):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("model, inputs", MODELS, ids=[type(m).__name__ for m, _ in MODELS])
def test_on_a_gpu_no_architecture_copies_from_the_host_once_its_constants_are_there(model, inputs, monkeypatch,
                                                                                    host_copies):
    """Under CUDA's rates, a second training step makes no tensor from host data (each would be a copy to the
    device that waits for the queue: `tests/kernels/test_host_copies.py`).  Before, the tensor field network and
    SE(3) attention made their radial basis's centres and the harmonics' degrees anew at every call, S4D its
    steps, and the relayouts and gathers of their plans converted index tables at every call."""
    from product_interactions.kernels.arrays import TORCH
    from product_interactions.kernels.arrays.rates import CUDA_RATES
    monkeypatch.setattr(TORCH, "rates_for", lambda a: CUDA_RATES)
    monkeypatch.setattr(TORCH, "scans_compiled", lambda a: False)       # the CPU's C loops (LS2T's) run on no GPU
    params = {name: torch.tensor(value, requires_grad=True) for name, value in model.init(seed=0).items()}
    arguments = [torch.tensor(x) for x in inputs]
    model.apply(params, *arguments).sum().backward()
    with host_copies() as made:
        model.apply(params, *arguments).sum().backward()
    assert made == []


@pytest.mark.parametrize("model, inputs", MODELS, ids=[type(m).__name__ for m, _ in MODELS])
def test_inside_autocast_a_module_takes_an_earlier_layers_half_precision_output(model, inputs):
    """Inside ``torch.autocast`` an earlier layer's output is bfloat16 while the module's parameters are float32,
    as with torch's own layers: the module computes it as that input in float32 (the autocast then runs its matrix
    products in bfloat16), forward and backward.  Outside an autocast it is refused, as torch's layers refuse mixed
    dtypes.  Before, every module refused it, so a library module could only be a network's first layer."""
    module = model.to_torch(seed=6).float()
    half = [torch.tensor(a, dtype=torch.float32).bfloat16().requires_grad_() for a in inputs]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = module(*half)
        expected = module(*(h.float() for h in half))
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    got = torch.autograd.grad(out.float().sum(), [*half, *module.parameters()])
    assert all(g.dtype == torch.bfloat16 for g in got[:len(half)]) and all(g.dtype == torch.float32
                                                                       for g in got[len(half):])
    with pytest.raises(TypeError, match=r"expected torch.float32, the dtype of the module's parameters .* got "
                                        r"torch.bfloat16$"):
        module(*half)


def test_inputs_are_checked_by_name_whether_given_by_position_or_keyword_and_a_mask_in_any_dtype():
    module = mamba(d_model=4, d_state=2).to_torch(seed=0)
    x32 = torch.ones(2, 3, 4, dtype=torch.float32)
    for call in (lambda: module(x32), lambda: module(x=x32)):
        with pytest.raises(TypeError, match=r"^x: expected torch.float64, the dtype of the module's parameters"):
            call()
    layer = ls2t(d_in=4, width=3, order=2).to_torch(seed=0)
    x, mask = torch.randn(2, 3, 4, dtype=torch.float64), torch.tensor([[1, 1, 1], [1, 1, 0]], dtype=torch.float32)
    expected = layer(x, mask.double())
    assert torch.equal(layer(x, mask), expected) and torch.equal(layer(x, mask=mask), expected)
    with pytest.raises(TypeError, match=r"^x: expected torch.float64"):
        layer(x=x.float(), mask=mask)
    cloud = tfn(lmax=1, channels_in=2, channels_out=2).to_torch(seed=0)
    with pytest.raises(TypeError, match=r"^points: expected torch.float64"):
        cloud(torch.zeros(1, 3, 3), torch.zeros(1, 3, 4, 2, dtype=torch.float64))


def test_a_network_of_torch_layers_and_library_modules_trains_under_autocast():
    """Linear, then attention, then Mamba, inside a bfloat16 autocast: within bfloat16's rounding of float32, and
    compiled whole (``fullgraph=True``) the same as eager."""
    torch.manual_seed(0)
    network = torch.nn.Sequential(torch.nn.Linear(4, 4), attention(d_model=4, heads=2).to_torch().float(),
                                  mamba(d_model=4, d_state=2).to_torch().float())
    x = torch.randn(2, 6, 4)
    reference = network(x).detach()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = network(x)
        compiled = torch.compile(network, fullgraph=True, backend="eager")(x)
    assert out.dtype == torch.bfloat16
    assert float((out.detach().float() - reference).abs().max()) <= 2**-6 * float(reference.abs().max())
    torch.testing.assert_close(compiled, out, rtol=0, atol=0)
    out.float().sum().backward()
    assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in network.parameters())
