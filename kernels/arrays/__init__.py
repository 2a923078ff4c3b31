"""The arrays floor: the `Engine` contract (`engine`), the engines that meet it on numpy with autograd, torch and
JAX, the one list of them and the one answer to which engine an array belongs to (`registry`), the operations they
share (contractions, pointwise maps, the masked softmax, prefix scans, axis bookkeeping), argument checks and the
rates the cost model prices an engine's operations by.  It imports only the native floor.

Inside the room, imports run one way too: the shared operations import no engine, the engines import them, the
registry imports the engines, and the checks and the public `masked_softmax.softmax` import the registry.
"""
from .checks import array_kind, library
from .constants import counting, frozen
from .engine import VOCABULARY, Engine
from .example_sizes import example_shape
from .jax_defaults import with_jax_defaults
from .jax_engine import JAX
from .numpy_engine import NUMPY
from .pointwise import FUNCTIONS as POINTWISE
from .pointwise import sigmoid, silu, softplus
from .precision import autocast_of, common_precision, is_half
from .rates import NUMPY_RATES, Rates
from .registry import ENGINES, adopt, engine_of, owner
from . import torch_call
from .torch_engine import TORCH, is_fake, outside_torch_compile, torch_compiling, traced_as_one_operator
from .traced_entry import traced_arguments, traced_as_operator

__all__ = ["ENGINES", "Engine", "JAX", "NUMPY", "NUMPY_RATES", "POINTWISE", "Rates", "TORCH", "VOCABULARY", "adopt",
           "array_kind", "autocast_of", "common_precision", "counting", "frozen", "engine_of", "example_shape",
           "is_fake", "is_half", "library", "outside_torch_compile", "owner", "torch_call", "torch_compiling",
           "sigmoid", "silu", "softplus", "traced_arguments", "traced_as_one_operator", "traced_as_operator",
           "with_jax_defaults"]
