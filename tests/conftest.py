"""Shared test settings: JAX computes in float64 here (its own switch, off by default), so that every engine
can be compared with numpy at 1e-10; the so3 disk cache lives in a temporary directory, not the user's; each test
starts torch's global generator from one seed (`torch_seeded`).  The
`counting` fixture counts the graphs torch.compile traces; `meta_as_gpu` makes torch's meta device stand in for a
GPU; `host_copies` lists the tensors a block makes from host data."""
import contextlib
import dataclasses
import importlib.util
import math
import sys

import numpy as np

import pytest

if importlib.util.find_spec("jax") is not None:
    import jax

    jax.config.update("jax_enable_x64", True)


@pytest.fixture(autouse=True)
def torch_seeded():
    """Each test draws from torch's global generator from one seed, whatever ran before it in its process: the
    suite runs in two processes (``-n 2``), which share out the files differently from run to run."""
    torch = sys.modules.get("torch")            # not imported for a test that does not use it
    if torch is not None:
        torch.manual_seed(0)


@pytest.fixture(autouse=True, scope="session")
def so3_cache_in_a_temporary_directory(tmp_path_factory):
    patch = pytest.MonkeyPatch()
    patch.setenv("PRODUCT_INTERACTIONS_CACHE", str(tmp_path_factory.mktemp("so3-cache")))
    yield
    patch.undo()


@pytest.fixture
def counting():
    """``counting(backend)``: the graphs torch.compile gives a backend (a list, filled as it traces) and a backend
    that compiles them as `backend` does (``"eager"``, ``"aot_eager"``, ``"inductor"``)."""
    torch = pytest.importorskip("torch")

    def make(backend):
        graphs, compile_graph = [], torch._dynamo.lookup_backend(backend)

        def count(graph, inputs):
            graphs.append(graph)
            return compile_graph(graph, inputs)
        return graphs, count
    return make


@pytest.fixture
def meta_as_gpu(monkeypatch):
    """Torch's meta device (shapes without numbers) standing in for a GPU, where CI has none: the library takes a
    GPU's forms for meta tensors (CUDA's rates, a read priced above any pass, so every step takes its read-free
    form; nothing concrete to read), and a call given tensors on two devices raises, as CUDA's kernels would
    (`OneDevice`: meta's own kernels check only some operations), except a CPU number (a 0-d tensor) and what CUDA
    takes across devices too (indexing by CPU indices, copies, ``.to``).  The one read a training step makes by
    design (its loss, `Engine.value`) gives zeros.  What runs only where numbers can be read (a concrete tensor's
    checks) and the compiled loop's Triton kernel are not reached.  Yields ``torch.device("meta")``."""
    torch = pytest.importorskip("torch")
    from torch.overrides import TorchFunctionMode
    from torch.utils._pytree import tree_leaves
    from product_interactions.kernels.arrays import TORCH
    from product_interactions.kernels.arrays.rates import CUDA_RATES
    rates, meta_device = dataclasses.replace(CUDA_RATES, host_read=math.inf), torch.device("meta")
    on_meta = {"unusable": lambda a: None, "place": lambda a: "cuda/meta", "rates_for": lambda a: rates,
               "concrete": lambda a: False, "value": lambda a: np.zeros(tuple(a.shape))}
    for name, meta in on_meta.items():
        original = getattr(TORCH, name)
        monkeypatch.setattr(TORCH, name, lambda a, _meta=meta, _original=original:
                            _meta(a) if getattr(a, "device", None) == meta_device else _original(a))
    across = {torch.Tensor.__getitem__, torch.Tensor.__setitem__, torch.Tensor.to, torch.Tensor.copy_,
              torch._has_compatible_shallow_copy_type}

    class OneDevice(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            devices = {t.device for t in tree_leaves((args, kwargs or {}))
                       if isinstance(t, torch.Tensor) and not (t.device.type == "cpu" and t.dim() == 0)}
            if len(devices) > 1 and func not in across:
                raise RuntimeError(f"{getattr(func, '__name__', func)}: tensors on {sorted(map(str, devices))}")
            return func(*args, **(kwargs or {}))
    with OneDevice():
        yield meta_device


@pytest.fixture
def host_copies():
    """``with host_copies() as made:`` lists the tensors the block makes from host data (a numpy array or a Python
    sequence given to ``torch.as_tensor``, ``tensor``, ``from_numpy`` or ``asarray``, or a number given with a
    device), each as its shape.  On a GPU each is a copy from the host, and torch synchronises the stream after a
    copy from pageable memory, so it waits for every kernel queued before it, as a read does."""
    torch = pytest.importorskip("torch")
    from torch.overrides import TorchFunctionMode
    factories = {torch.as_tensor, torch.tensor, torch.from_numpy, torch.asarray}

    class HostCopies(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.made = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func in factories and args and (isinstance(args[0], (np.ndarray, list, tuple)) or isinstance(
                    args[0], (int, float, complex, np.generic)) and (kwargs or {}).get("device") is not None):
                self.made.append(np.shape(args[0]))
            return func(*args, **(kwargs or {}))

    @contextlib.contextmanager
    def recording():
        with HostCopies() as mode:
            yield mode.made
    return recording
