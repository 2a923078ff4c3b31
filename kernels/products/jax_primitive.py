"""A `Kernel` call on traced JAX arrays as one JAX primitive, ``product_interactions_product``, whose derivatives
are kernels: JAX's counterpart of `kernels.products.torch_operator`.

Traced by a JAX transformation (``jax.jit``, ``jax.grad``, ``jax.vmap``, ``jax.jvp``, ``jax.export``), a product of
JAX arrays is one equation of the program.  Its lowering is the kernel's own program (`Kernel.compute`), traced when
XLA's program is built and priced there by the staged rates; eagerly it is that program.  The product is bilinear,
so its tangent is K(dx, y) + K(x, dy) and its transpose in x is the kernel of the vector-Jacobian product
(`Kernel.transposed`) on (y, g), summed over the axes broadcasting added to x (likewise in y): a gradient is two
more products, each priced and lowered as a product, and derivatives of any order, forward or reverse (and
``jax.experimental.jet``'s Taylor series), follow.  The program names the kernel by its recipe (its key and
factors, `kernels.products.keys.Recipe`), so that JAX's caches of traced programs do not keep kernels alive, and a
program that outlives its kernel builds it again.
Differentiated operation by operation, the generated program of Clebsch-Gordan lmax 6 (24,000 operations) had a
gradient that XLA compiled in 184 s and that ran slower than the dense form.  Under ``jax.vmap`` the mapped axis is
one more batch axis.  Component-major kernels, calls with a numpy operand beside a traced one, and operands that
carry a sharding of their own (``jax.shard_map``'s per-device values, an explicit mesh's sharded axes, which the
primitive's type would drop) run the program traced operation by operation, as before.

>>> import jax, jax.numpy as jnp
>>> from product_interactions import kernels
>>> from product_interactions.algebra import complex_numbers
>>> K = kernels.product(complex_numbers())
>>> [e.primitive.name for e in jax.make_jaxpr(K)(jnp.ones((3, 2)), jnp.ones(2)).eqns]
['product_interactions_product']
>>> jax.grad(lambda x: K(x, jnp.array([0.0, 1.0])).sum())(jnp.array([1.0, 2.0])).tolist()    # sum(i x) = x0 - x1
[1.0, -1.0]
"""
from __future__ import annotations

import functools
import sys
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from . import keys
from .autodiff import broadcast_axes
from ..arrays import checks

if TYPE_CHECKING:
    from .kernel import Kernel

#: The primitive, once JAX is imported and it is defined (`define`).
PRIMITIVE: list[Any] = []
_DEFINING = threading.Lock()


def applies(kernel: Kernel, x: Any, y: Any) -> bool:
    """Whether a call of `kernel` on x, y is to be the primitive: batch-first JAX arrays, one of them traced, neither
    of them typed with a sharding (`_unsharded`)."""
    jax = sys.modules.get("jax")
    if jax is None or kernel.layout != checks.LAYOUTS[0]:
        return False
    tracer = jax.core.Tracer
    return (isinstance(x, tracer) or isinstance(y, tracer)) and isinstance(x, jax.Array) and \
        isinstance(y, jax.Array) and _unsharded(jax, x) and _unsharded(jax, y)


def _unsharded(jax: Any, a: Any) -> bool:
    """Whether `a`'s type names no device mesh, whose sharding the primitive's type would drop (inside
    ``jax.shard_map``, the mesh axes a value varies over; under an explicit mesh, its sharded axes)."""
    aval = (getattr(jax, "typeof", None) or jax.core.get_aval)(a)
    mesh = getattr(getattr(aval, "sharding", None), "mesh", None)
    return mesh is None or bool(getattr(mesh, "empty", not getattr(mesh, "axis_names", ())))


def product(kernel: Kernel, x: Any, y: Any) -> Any:
    """z = x * y as one equation of the traced program; operands refused as an eager call refuses them."""
    kernel.result_shape(x, y)
    return define().bind(x, y, kernel=kernel.recipe)


def define() -> Any:
    """The primitive, defined on first use (JAX must be importable)."""
    with _DEFINING:
        if not PRIMITIVE:
            PRIMITIVE.append(_defined())
        return PRIMITIVE[0]


def _defined() -> Any:
    import jax
    import jax.numpy as jnp
    from jax.extend.core import Primitive
    from jax.interpreters import ad, batching, mlir

    primitive = Primitive("product_interactions_product")

    def compute(x: Any, y: Any, *, kernel: keys.Recipe) -> Any:
        return kernel.kernel().compute(x, y)

    def lowered(x: Any, y: Any, *, kernel: keys.Recipe) -> Any:
        return kernel.kernel().lowered(x, y)

    def abstract(x: Any, y: Any, *, kernel: keys.Recipe) -> Any:
        """The result's type, by JAX's default promotion whatever the caller's (as `Kernel.compute` computes it):
        a program re-evaluated under a strict promotion (a rematerialised backward pass) types it alike.  A weakly
        typed operand (a Python scalar's type) gives way to the other, as in the program."""
        shape = checks.broadcast_batches([tuple(x.shape), tuple(y.shape)], len(kernel.factors), kernel.layout)
        with jax.numpy_dtype_promotion("standard"):
            dtype = jnp.result_type(*(_weakly(a) for a in (x, y)))
        return jax.core.ShapedArray(shape + tuple(f.shape[2] for f in kernel.factors), dtype,
                                    weak_type=x.weak_type and y.weak_type)

    def transpose(argument: int) -> Any:
        def rule(cotangent: Any, x: Any, y: Any, *, kernel: keys.Recipe) -> Any:
            operand, other = (x, y) if argument == 0 else (y, x)
            return _summed_to(kernel.kernel().transposed(argument)(other, cotangent), operand.aval)
        return rule

    def batched(operands: tuple[Any, Any], axes: tuple[Any, Any], *, kernel: keys.Recipe) -> tuple[Any, int]:
        """The mapped axis moved first, as a batch axis, with unit axes after it where the other operand has more
        batch axes of its own (so that the two align as the unmapped call's did)."""
        count = len(kernel.factors)
        own = [a.ndim - count - (axis is not None) for a, axis in zip(operands, axes)]
        moved = [a if axis is None else
                 jnp.expand_dims(jnp.moveaxis(a, axis, 0), tuple(range(1, 1 + max(own) - n)))
                 for a, axis, n in zip(operands, axes, own)]
        return primitive.bind(*moved, kernel=kernel), 0

    primitive.def_impl(compute)
    primitive.def_abstract_eval(abstract)
    mlir.register_lowering(primitive, mlir.lower_fun(lowered, multiple_results=False))
    ad.defbilinear(primitive, transpose(0), transpose(1))
    batching.primitive_batchers[primitive] = batched
    _taylor_series(primitive)
    return primitive


def _taylor_series(primitive: Any) -> None:
    """``jax.experimental.jet``'s rule for a bilinear primitive (its own for ``mul`` and ``dot_general``), where the
    release has it."""
    try:
        from jax.experimental import jet
    except ImportError:
        return
    rule = getattr(jet, "_bilinear_taylor_rule", None)
    if rule is not None:
        jet.jet_rules[primitive] = functools.partial(rule, primitive)


def _summed_to(gradient: Any, aval: Any) -> Any:
    """`gradient` summed over the axes broadcasting added to or stretched in an operand of `aval`
    (`autodiff.broadcast_axes`), in its dtype."""
    added, stretched = broadcast_axes(tuple(gradient.shape), tuple(aval.shape))
    if added:
        gradient = gradient.sum(axis=added)
    if stretched:
        gradient = gradient.sum(axis=stretched, keepdims=True)
    return gradient.astype(aval.dtype)


def _weakly(aval: Any) -> Any:
    """What `jax.numpy.result_type` takes for an operand of type `aval`: its dtype, or where it is weakly typed (a
    Python scalar's), a Python number of its kind, which gives way to the other operand's dtype."""
    if not aval.weak_type:
        return aval.dtype
    kind = np.dtype(aval.dtype).kind
    return 0j if kind == "c" else 0.0 if kind == "f" else False if kind == "b" else 0
