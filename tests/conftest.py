"""Shared test settings: JAX computes in float64 here (its own switch, off by default), so that every engine
can be compared with numpy at 1e-10; the so3 disk cache lives in a temporary directory, not the user's.  The
`counting` fixture counts the graphs torch.compile traces."""
import importlib.util

import pytest

if importlib.util.find_spec("jax") is not None:
    import jax

    jax.config.update("jax_enable_x64", True)


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
