"""Shared test settings: JAX computes in float64 here (its own switch, off by default), so that every engine
can be compared with numpy at 1e-10."""
import importlib.util

if importlib.util.find_spec("jax") is not None:
    import jax

    jax.config.update("jax_enable_x64", True)
