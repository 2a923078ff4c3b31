"""The torch and JAX engines against hand-written torch and JAX, as ratios of medians measured in one run.

    python benchmarks/engines.py [--repeats 5] [--quick]
    python benchmarks/engines.py --device cuda [--repeats 5] [--scale 1.0] [--calibrate]

With ``--device``, the GPU issue's rows on that torch device instead (`benchmarks.device`); below, the CPU's.

1. Causal attention (d_model 64, 4 heads, batch 32), forward plus backward, float32: the library's attention on
   the torch engine against torch's ``scaled_dot_product_attention`` (target <= 1.5) and against the same model
   written with torch matmuls and ``torch.softmax``; on JAX under jit against the same model in jax.numpy (target
   <= 1.2).  Lengths 192 and 1024 (``--quick``: 192 only).
2. Products on torch (auto strategy) against the best hand-written torch, timed here among einsum over the dense
   structure constants, x @ lam then a batched matmul with y, and the outer product of x and y then one matrix
   product with lam (the tensor algebra: levelwise outer products): PGA (batch 10,000) and T(R^4) degree 4 (batch
   2,048) with target <= 1.2; Clebsch-Gordan lmax 4 and 6 (batch 1,000) with the block-sparse targets 0.5 and
   1/3; float64 and float32.  Both sides use torch's threads (the compiled loop joins torch's OpenMP pool).  The
   Clebsch-Gordan products also forward plus backward (gradients for both operands), against the same hand-written
   form's, with the same targets.  And a random dense product (d = 64, batch 4,096) against torch's GEMM peak
   measured in the same run (target >= 60 %).  On JAX under jit (float32), PGA (batch 10,000) and Clebsch-Gordan
   lmax 4 and 6 (batch 1,000), forward and ``jit(grad)``, against the fastest hand-written jax.numpy form, with the
   same targets, and the seconds the gradient takes to compile against the hand form's.

3. The selective scan forward plus backward on torch against Mamba's reference scan written in torch (target <= 1);
   on JAX (length 1,024), forward eagerly and forward plus backward under jit against the same scan by
   ``lax.scan`` in jax.numpy (target <= 1).

4. A training step of the copy model (length 192, batch 8, d_model 32, 2 layers, rank 2; Adam with clipping,
   ten steps per timing) through the library's `adam` on the torch engine, against the same model written in torch
   (``scaled_dot_product_attention``, ``torch.optim.Adam``), float32 and float64; on JAX, against the same model
   in jax.numpy with a jitted Adam step (target <= 1.2).

Skipped, with a note, when torch or JAX is not installed.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.timing import TABLE_HEADER, fenced, ratio_row  # noqa: E402
from product_interactions import kernels  # noqa: E402
from product_interactions.kernels.arrays import TORCH  # noqa: E402
from product_interactions.algebra import Algebra, clebsch_gordan, clifford, tensor_algebra  # noqa: E402
from product_interactions.interactions.architectures import attention  # noqa: E402
from product_interactions.interactions.experiments import selective_copy  # noqa: E402
from product_interactions.interactions.experiments.training import Adam, cross_entropy, leaves  # noqa: E402

#: The copy experiment's full setting, at rank 2, ten steps per timing.
COPY = dict(selective_copy.FULL, steps=10)
COPY_RANK = 2


def _copy_batches():
    rng = np.random.default_rng(0)
    shape = (COPY["length"], COPY["tokens"], COPY["vocabulary"])
    return [(inputs, targets - selective_copy.FIRST_DATA) for inputs, targets in
            (selective_copy.generate(COPY["batch"], *shape, rng) for _ in range(COPY["steps"]))]


def _ours_copy(engine: str, dtype: str, batches, device=None):
    """Ten steps of the copy model's `Adam` (built, and on JAX compiled, once), on `engine` and `device`."""
    model = selective_copy.CopyModel(COPY, COPY_RANK)
    optimiser = Adam(lambda p, batch: cross_entropy(model.logits(p, batch[0]), batch[1]), model.init(0),
                     lr=COPY["lr"], clip=COPY["clip"], engine=engine, dtype=dtype, device=device)
    return lambda: [optimiser.step(batch) for batch in batches]


def copy_torch_rows(torch, repeats: int, device=None, dtypes=("float32", "float64")) -> list:
    """The copy model's training step on the torch engine against the same model hand-written in torch, on torch's
    `device` (None: the CPU), each side fenced by the device's synchronisation."""
    functional = torch.nn.functional
    batches, rows = _copy_batches(), []
    d_head, tokens, vocabulary = COPY["d_head"], COPY["tokens"], COPY["vocabulary"]
    code_numpy = selective_copy.position_code(COPY["length"], COPY["d_model"])

    def norm(h):
        return functional.layer_norm(h, h.shape[-1:], eps=1e-5)

    for dtype in dtypes:
        code = torch.tensor(code_numpy, dtype=getattr(torch, dtype), device=device)
        model_params = selective_copy.CopyModel(COPY, COPY_RANK).init(0)
        tensor_batches = [(torch.tensor(i, device=device), torch.tensor(t, device=device)) for i, t in batches]

        def logits(p, inputs):
            h = p["embed"][inputs] + code[:inputs.shape[1]]
            b, n, _ = h.shape
            for layer in range(COPY["layers"]):
                a, x = p[f"attention{layer}"], norm(h)
                q, k, v = [(x @ a[w].T).reshape(b, n, COPY_RANK, d_head).transpose(1, 2) for w in ("W_Q", "W_K",
                                                                                                   "W_V")]
                o = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
                h = h + o.transpose(1, 2).reshape(b, n, COPY_RANK * d_head) @ a["W_O"].T
                h = h + torch.relu(norm(h) @ p[f"up{layer}"]) @ p[f"down{layer}"]
            return norm(h[:, -tokens:]) @ p["readout"] + p["offset"]

        def hand():
            params = {key: ({k: torch.tensor(v, dtype=getattr(torch, dtype), device=device, requires_grad=True)
                             for k, v in value.items()} if isinstance(value, dict) else
                            torch.tensor(value, dtype=getattr(torch, dtype), device=device, requires_grad=True))
                      for key, value in model_params.items()}
            tensors = leaves(params)[1]
            optimiser = torch.optim.Adam(tensors, lr=COPY["lr"])
            for inputs, targets in tensor_batches:
                optimiser.zero_grad()
                loss = functional.cross_entropy(logits(params, inputs).reshape(-1, vocabulary), targets.reshape(-1))
                loss.backward()
                torch.nn.utils.clip_grad_norm_(tensors, COPY["clip"])
                optimiser.step()
            return params

        ours = _ours_copy("torch", dtype, tensor_batches, device)    # the same tensors the hand model gets
        rows.append(ratio_row(f"copy model, 10 training steps on torch{f' on {device}' if device else ''}, {dtype}, "
                              f"vs the same model hand-written in torch (SDPA, torch.optim.Adam)",
                              fenced(torch, ours), fenced(torch, hand), 1.2, repeats))
    return rows


def torch_rows(repeats: int, lengths) -> list:
    try:
        import torch
    except ImportError:
        return ["| torch rows skipped: torch is not installed | | | |"]
    import torch.nn.functional as functional

    def projections(p, x, heads, d_head):
        b, n, _ = x.shape
        return [(x @ p[name].T).reshape(b, n, heads, d_head).transpose(1, 2) for name in ("W_Q", "W_K", "W_V")]

    def sdpa(p, x):
        q, k, v = projections(p, x, 4, 16)
        o = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return o.transpose(1, 2).reshape(x.shape[0], x.shape[1], 64) @ p["W_O"].T

    def explicit(p, x):
        q, k, v = projections(p, x, 4, 16)
        n = x.shape[1]
        s = (q @ k.transpose(-1, -2) / 4.0).masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
        o = torch.softmax(s, -1) @ v
        return o.transpose(1, 2).reshape(x.shape[0], n, 64) @ p["W_O"].T

    rows, model = [], attention(d_model=64, heads=4)
    for n in lengths:
        params = {k: torch.tensor(v, dtype=torch.float32, requires_grad=True) for k, v in model.init(seed=0).items()}
        x = torch.randn(32, n, 64, generator=torch.Generator().manual_seed(n))
        error = float((model.apply(params, x) - sdpa(params, x)).abs().max())
        assert error < 1e-4, error

        def step(f):
            return lambda: f(params, x).sum().backward()
        ours = step(model.apply)
        rows.append(ratio_row(f"torch attention L={n} fwd+bwd float32, vs scaled_dot_product_attention", ours,
                              step(sdpa), 1.5, repeats))
        rows.append(ratio_row(f"torch attention L={n} fwd+bwd float32, vs matmul + torch.softmax", ours,
                              step(explicit), 1.2, repeats))
    # Targets: 1.2x the best hand-written torch; the block-sparse targets for Clebsch-Gordan.
    for A, batch, target in ((clifford(3, 0, 1), 10_000, 1.2), (clebsch_gordan(4), 1_000, 0.5),
                             (clebsch_gordan(6), 1_000, 1 / 3), (tensor_algebra(4, 4), 2_048, 1.2)):
        kernel = kernels.product(A)
        for dtype in (torch.float64, torch.float32):
            g = torch.Generator().manual_seed(A.dim)
            x, y = (torch.randn(batch, A.dim, dtype=dtype, generator=g) for _ in range(2))
            reference, name = _best_torch(torch, A, x, y, repeats)
            assert torch.allclose(kernel(x, y), reference(x, y), rtol=1e-3, atol=1e-3)
            rows.append(ratio_row(f"torch {A.name} product, batch {batch}, {str(dtype)[6:]} "
                                  f"({'+'.join(kernel.strategies_for(batch, TORCH))}), vs {name}",
                                  lambda: kernel(x, y), lambda: reference(x, y), target, repeats))
            if A.name.startswith("clebsch_gordan"):
                rows.append(gradient_row(torch, A, kernel, x, y, reference, name, target, repeats))
    return rows + dense_torch_rows(torch, repeats) + [selective_scan_row(torch, repeats)] + \
        copy_torch_rows(torch, repeats)


def gradient_row(torch, A, kernel, x, y, reference, name: str, target: float, repeats: int) -> str:
    """The product forward plus backward (both operands' gradients, through z.sum()) against the hand-written
    `reference`'s, after checking that the gradients agree."""
    def step(product):
        a, b = x.detach().requires_grad_(), y.detach().requires_grad_()
        product(a, b).sum().backward()
        return a.grad, b.grad
    assert all(torch.allclose(o, t, rtol=1e-3, atol=1e-3) for o, t in zip(step(kernel), step(reference)))
    return ratio_row(f"torch {A.name} product fwd+bwd, batch {len(x)}, {str(x.dtype)[6:]}, vs {name} fwd+bwd",
                     lambda: step(kernel), lambda: step(reference), target, repeats)


def dense_torch_rows(torch, repeats: int) -> list:
    """A random dense product, d = 64, batch 4096, on torch: achieved FLOP/s against torch's own GEMM peak measured
    in the same run (a 2048 x 2048 matrix product; target >= 60 %, as for numpy in products.py)."""
    from benchmarks.timing import median_time
    rng = np.random.default_rng(0)
    kernel = kernels.product(Algebra.from_structure_constants(rng.standard_normal((64, 64, 64)), exact=False))
    rows = []
    for dtype in (torch.float64, torch.float32):
        x, y = (torch.tensor(rng.standard_normal((4096, 64)), dtype=dtype) for _ in range(2))
        square = torch.tensor(rng.standard_normal((2048, 2048)), dtype=dtype)
        peak = 2 * 2048**3 / median_time(lambda: square @ square, repeats=repeats)
        share = 2 * 4096 * 64**3 / median_time(lambda: kernel(x, y), repeats=repeats) / peak
        rows.append(f"| torch dense d = 64, batch 4096, {str(dtype)[6:]}: share of torch's GEMM peak "
                    f"({peak / 1e9:.0f} GFLOP/s) | {share:.2f} | >= 0.6 | {'ok' if share >= 0.6 else 'MISSED'} |")
    return rows


def selective_scan_row(torch, repeats: int) -> str:
    """The selective scan forward plus backward on torch (batch 64, length 196, 64 channels, d_state 16, float32)
    against Mamba's reference scan written in torch (exp(Delta A) and Delta B u made for every step first, then a
    loop over time reading them by ``unbind``: indexing each step instead costs 60 times more in the backward)."""
    g = torch.Generator().manual_seed(5)
    batch, length, channels, n = 64, 196, 64, 16
    u, B, C = (torch.randn(*shape, generator=g, requires_grad=True) for shape in ((batch, length, channels),
                                                                                (batch, length, n), (batch, length, n)))
    delta = (torch.rand(batch, length, channels, generator=g) * 0.1 + 0.01).requires_grad_()
    A = (-torch.rand(channels, n, generator=g) - 0.5).requires_grad_()

    def reference():
        steps = torch.exp(torch.einsum("bld,dn->lbdn", delta, A)).unbind(0)
        inputs = torch.einsum("bld,bln,bld->lbdn", delta, B, u).unbind(0)
        h, ys = torch.zeros(batch, channels, n), []
        for a, x, c in zip(steps, inputs, C.unbind(1)):
            h = a * h + x
            ys.append(torch.einsum("bdn,bn->bd", h, c))
        return torch.stack(ys, 1)
    assert torch.allclose(kernels.selective_scan(u, delta, A, B, C), reference(), rtol=1e-4, atol=1e-4)
    return ratio_row("torch selective scan fwd+bwd, batch 64, length 196, 64 channels, d_state 16, float32, vs "
                     "Mamba's reference scan in torch", lambda: kernels.selective_scan(u, delta, A, B, C).sum().backward(),
                     lambda: reference().sum().backward(), 1.0, repeats)


def _best_torch(torch, A, x, y, repeats):
    """The fastest hand-written torch product on operands like x, y, timed on them here: (function of (x, y), its
    name)."""
    from benchmarks.timing import median_time
    if A.name.startswith("tensor_algebra"):
        width, degree = 4, 4
        offsets = [sum(width**m for m in range(k)) for k in range(degree + 2)]

        def levelwise(x, y):
            return torch.cat([sum((x[:, offsets[i]:offsets[i + 1], None] * y[:, None, offsets[k - i]:offsets[k - i + 1]])
                                  .reshape(len(x), -1) for i in range(k + 1)) for k in range(degree + 1)], 1)
        return levelwise, "levelwise outer products"
    lam = torch.tensor(A.structure_constants(), dtype=x.dtype)
    flat = lam.reshape(A.dim, -1)
    candidates = {"einsum over dense lam": lambda x, y: torch.einsum("bi,bj,ijk->bk", x, y, lam),
                  "x @ lam, then bmm with y": lambda x, y: torch.bmm(y[:, None, :], (x @ flat).reshape(
                      len(x), A.dim, A.dim))[:, 0],
                  "(x outer y) @ lam": lambda x, y: (x[:, :, None] * y[:, None, :]).reshape(len(x), -1) @ lam.reshape(
                      -1, A.dim)}
    name = min(candidates, key=lambda key: median_time(lambda: candidates[key](x, y), repeats=repeats))
    return candidates[name], name


def copy_jax_rows(jax, repeats: int) -> list:
    """The copy model's jitted training step on the JAX engine against the same model and Adam in jax.numpy,
    each compiled once; ten steps per timing."""
    jnp = jax.numpy
    batches = _copy_batches()
    d_head, tokens = COPY["d_head"], COPY["tokens"]
    code = jnp.asarray(selective_copy.position_code(COPY["length"], COPY["d_model"]), jnp.float32)
    model = selective_copy.CopyModel(COPY, COPY_RANK)

    def norm(h):
        centred = h - h.mean(-1, keepdims=True)
        return centred / jnp.sqrt((centred ** 2).mean(-1, keepdims=True) + 1e-5)

    def logits(p, inputs):
        h = p["embed"][inputs] + code[:inputs.shape[1]]
        b, n, _ = h.shape
        causal = jnp.tril(jnp.ones((n, n), bool))
        for layer in range(COPY["layers"]):
            a, x = p[f"attention{layer}"], norm(h)
            q, k, v = [(x @ a[w].T).reshape(b, n, COPY_RANK, d_head).transpose(0, 2, 1, 3) for w in ("W_Q", "W_K",
                                                                                                     "W_V")]
            s = jnp.where(causal, q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_head), -jnp.inf)
            o = jax.nn.softmax(s, axis=-1) @ v
            h = h + o.transpose(0, 2, 1, 3).reshape(b, n, COPY_RANK * d_head) @ a["W_O"].T
            h = h + jax.nn.relu(norm(h) @ p[f"up{layer}"]) @ p[f"down{layer}"]
        return norm(h[:, -tokens:]) @ p["readout"] + p["offset"]

    def loss(p, batch):
        log_p = jax.nn.log_softmax(logits(p, batch[0]))
        return -jnp.mean(jnp.take_along_axis(log_p, batch[1][..., None], axis=-1))

    @jax.jit
    def step(state, batch, rate):
        p, m, v = state
        value, g = jax.value_and_grad(loss)(p, batch)
        norm_g = jnp.sqrt(sum(jnp.sum(x * x) for x in jax.tree_util.tree_leaves(g)))
        g = jax.tree_util.tree_map(lambda x: x * (COPY["clip"] / jnp.maximum(norm_g + 1e-12, COPY["clip"])), g)
        m = jax.tree_util.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
        v = jax.tree_util.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
        p = jax.tree_util.tree_map(lambda a, b, c: a - rate * b / (jnp.sqrt(c) + 1e-8), p, m, v)
        return (p, m, v), value

    p = jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float32), model.init(0))
    state = [(p, jax.tree_util.tree_map(jnp.zeros_like, p), jax.tree_util.tree_map(jnp.zeros_like, p))]

    def hand():
        for t, batch in enumerate(batches):
            state[0], value = step(state[0], batch, COPY["lr"] * np.sqrt(1 - 0.999 ** (t + 1)) / (1 - 0.9 ** (t + 1)))
            float(value)

    return [ratio_row("copy model, 10 training steps on JAX under jit, float32, vs the same model and Adam in "
                      "jax.numpy", _ours_copy("jax", "float32", batches), hand, 1.2, repeats)]


def _hand_selective_step(carry, inputs):
    """Mamba's step as a JAX user writes it for ``lax.scan``: h = exp(delta A) h + delta B u, y = C h (run when
    traced only)."""
    import jax.numpy as jnp
    h, A = carry
    d, u, B, C = inputs
    h = jnp.exp(d[:, :, None] * A) * h + (d * u)[:, :, None] * B[:, None, :]
    return (h, A), jnp.einsum("bdn,bn->bd", h, C)


def selective_scan_jax_rows(jax, repeats: int) -> list:
    """The selective scan on JAX (batch 8, length 1,024, 64 channels, d_state 16, float32) against the same scan
    in jax.numpy by ``lax.scan`` (its step a module-level function, so that eager calls reuse the compiled loop):
    forward eagerly, and forward plus backward under jit (target <= 1)."""
    jnp = jax.numpy
    rng = np.random.default_rng(6)
    batch, length, channels, n = 8, 1024, 64, 16
    u, B, C = (jnp.asarray(rng.standard_normal(shape), jnp.float32)
               for shape in ((batch, length, channels), (batch, length, n), (batch, length, n)))
    delta = jnp.asarray(rng.random((batch, length, channels)) * 0.1 + 0.01, jnp.float32)
    A = jnp.asarray(-rng.random((channels, n)) - 0.5, jnp.float32)

    def hand(u, delta, A, B, C):
        h = jnp.zeros((u.shape[0], u.shape[2], A.shape[1]), u.dtype)
        steps = tuple(jnp.swapaxes(v, 0, 1) for v in (delta, u, B, C))
        return jnp.swapaxes(jax.lax.scan(_hand_selective_step, (h, A), steps)[1], 0, 1)

    args = (u, delta, A, B, C)
    assert np.allclose(kernels.selective_scan(*args), hand(*args), rtol=1e-4, atol=1e-4)
    backward = [jax.jit(jax.grad(lambda *v, f=f: jnp.sum(f(*v)), argnums=(0, 1, 2, 3, 4)))
                for f in (kernels.selective_scan, hand)]
    return [ratio_row("JAX selective scan forward, eager, batch 8, length 1024, 64 channels, d_state 16, float32, "
                      "vs lax.scan in jax.numpy", lambda: jax.block_until_ready(kernels.selective_scan(*args)),
                      lambda: jax.block_until_ready(hand(*args)), 1.0, repeats),
            ratio_row("JAX selective scan jit(grad), same sizes, vs lax.scan in jax.numpy",
                      lambda: jax.block_until_ready(backward[0](*args)),
                      lambda: jax.block_until_ready(backward[1](*args)), 1.0, repeats)]


def _best_jax(jax, A, x, y, repeats):
    """The fastest hand-written jax.numpy product under jit on operands like x, y, timed on them here: (jitted
    function of (x, y), its name)."""
    from benchmarks.timing import median_time
    jnp = jax.numpy
    lam = jnp.asarray(A.structure_constants(), dtype=x.dtype)
    flat = lam.reshape(A.dim, -1)
    candidates = {"einsum over dense lam": jax.jit(lambda x, y: jnp.einsum("bi,bj,ijk->bk", x, y, lam)),
                  "x @ lam, then a batched product with y": jax.jit(lambda x, y: jnp.einsum(
                      "bj,bjk->bk", y, (x @ flat).reshape(len(x), A.dim, A.dim)))}
    name = min(candidates, key=lambda key: median_time(lambda: candidates[key](x, y).block_until_ready(),
                                                        repeats=repeats))
    return candidates[name], name


def product_jax_rows(jax, repeats: int) -> list:
    """Products on JAX under jit (auto strategy), forward and jit(grad) (both operands' gradients, through a
    weighted sum), against the fastest hand-written jax.numpy form, float32, with the targets of the torch rows;
    and the seconds XLA takes to compile the gradient, against the hand form's."""
    import time
    jnp, rows = jax.numpy, []
    cases = [(clifford(3, 0, 1), 10_000, 1.2), (clebsch_gordan(4), 1_000, 0.5), (clebsch_gordan(6), 1_000, 1 / 3)]
    for A, batch, target in cases:
        rng = np.random.default_rng(batch)
        kernel = kernels.product(A, dtype=np.float32)
        x, y, w = (jnp.asarray(rng.standard_normal((batch, A.dim)), jnp.float32) for _ in range(3))
        reference, name = _best_jax(jax, A, x, y, repeats)
        ours = jax.jit(lambda a, b: kernel(a, b))
        np.testing.assert_allclose(np.asarray(ours(x, y)), np.asarray(reference(x, y)), rtol=1e-3, atol=1e-3)
        rows.append(ratio_row(f"JAX {A.name} product jit, batch {batch:,}, float32, vs {name}",
                              lambda: ours(x, y).block_until_ready(), lambda: reference(x, y).block_until_ready(),
                              target, repeats))
        gradients, compile_seconds = [], []
        for product in (kernel, reference):
            gradient = jax.jit(jax.grad(lambda a, b, f=product: jnp.sum(f(a, b) * w), argnums=(0, 1)))
            start = time.perf_counter()
            jax.block_until_ready(gradient(x, y))
            compile_seconds.append(time.perf_counter() - start)
            gradients.append(gradient)
        rows.append(ratio_row(f"JAX {A.name} product jit(grad), batch {batch:,}, float32, vs {name}'s",
                              lambda: jax.block_until_ready(gradients[0](x, y)),
                              lambda: jax.block_until_ready(gradients[1](x, y)), target, repeats))
        rows.append(f"| JAX {A.name} jit(grad): first call (compile) {compile_seconds[0]:.2f} s, {name}'s "
                    f"{compile_seconds[1]:.2f} s | {compile_seconds[0] / compile_seconds[1]:.1f} | | |")
    return rows


def jax_rows(repeats: int, lengths) -> list:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return ["| JAX rows skipped: JAX is not installed | | | |"]
    model, rows = attention(d_model=64, heads=4), []

    def hand(p, x):
        b, n, _ = x.shape
        q, k, v = [(x @ p[name].T).reshape(b, n, 4, 16).transpose(0, 2, 1, 3) for name in ("W_Q", "W_K", "W_V")]
        s = jnp.where(jnp.tril(jnp.ones((n, n), bool)), q @ k.transpose(0, 1, 3, 2) / 4.0, -jnp.inf)
        o = jax.nn.softmax(s, axis=-1) @ v
        return o.transpose(0, 2, 1, 3).reshape(b, n, 64) @ p["W_O"].T

    for n in lengths:
        params = {k: jnp.asarray(v, dtype=jnp.float32) for k, v in model.init(seed=0).items()}
        x = jnp.asarray(np.random.default_rng(n).standard_normal((32, n, 64)), dtype=jnp.float32)
        ours = jax.jit(jax.grad(lambda p, x: jnp.sum(model.apply(p, x))))
        theirs = jax.jit(jax.grad(lambda p, x: jnp.sum(hand(p, x))))
        rows.append(ratio_row(f"JAX attention L={n} jit(grad) float32, vs the same model in jax.numpy",
                              lambda: jax.block_until_ready(ours(params, x)),
                              lambda: jax.block_until_ready(theirs(params, x)), 1.2, repeats))
    return rows + product_jax_rows(jax, repeats) + selective_scan_jax_rows(jax, repeats) + \
        copy_jax_rows(jax, max(3, repeats // 2))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="length 192 only")
    parser.add_argument("--device", help="a torch device (cuda): the GPU issue's rows there (benchmarks.device)")
    parser.add_argument("--scale", type=float, default=1.0, help="with --device: batch sizes times this")
    parser.add_argument("--calibrate", action="store_true", help="with --device: measure the device's rates first")
    arguments = parser.parse_args(argv)
    if arguments.device is not None:
        from benchmarks.device import device_rows
        for row in device_rows(arguments.device, arguments.repeats, arguments.scale, arguments.calibrate):
            print(row, flush=True)
        return 0
    lengths = (192,) if arguments.quick else (192, 1024)
    print(f"numpy {np.__version__}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    rows = list(TABLE_HEADER) + torch_rows(arguments.repeats, lengths) + jax_rows(arguments.repeats, lengths)
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
