"""Under ``jax.jit`` a product is priced by JAX's staged rates (`JAX_STAGED_RATES`): XLA compiles the staged
operations into one program, with no dispatch per operation.  Priced eagerly, auto had taken the dense form for
every Clifford and Clebsch-Gordan algebra at any batch, 2-40 times the best strategy's time under jit from 4,096
rows (``benchmarks/strategies.py --engine jax --jit``)."""
from dataclasses import replace

import numpy as np
import pytest

from product_interactions import kernels
from product_interactions.algebra import clebsch_gordan, clifford, translation

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
from product_interactions.kernels.arrays import JAX  # noqa: E402
from product_interactions.kernels.arrays.rates import JAX_STAGED_RATES, NUMPY_RATES  # noqa: E402


def lowered(function, *arguments) -> str:
    """The program XLA is given for `function` under jax.jit (a product's primitive lowered to its own program)."""
    return jax.jit(function).lower(*arguments).as_text()


def test_a_jit_is_told_from_eager_calls_and_transformations():
    x, seen = jnp.ones(3), {}

    def probe(label):
        def function(a):
            seen[label] = (JAX.staged(a), JAX.rates_for(a))
            return a.sum()
        return function
    probe("eager")(x)
    jax.grad(probe("grad"))(x)
    jax.vmap(probe("vmap"))(x)
    jax.jit(probe("jit"))(x)
    jax.jit(jax.grad(probe("jit of grad")))(x)
    assert {label: staged for label, (staged, _) in seen.items()} == {
        "eager": False, "grad": False, "vmap": False, "jit": True, "jit of grad": True}
    assert seen["jit"][1] == JAX_STAGED_RATES and seen["eager"][1] == JAX.rates_for(x) != JAX_STAGED_RATES


@pytest.mark.parametrize("algebra", [clifford(3, 0, 1), clebsch_gordan(2)], ids=["PGA", "CG2"])
def test_under_jit_auto_takes_the_staged_choice_whatever_an_eager_call_kept(algebra):
    """Eagerly, 4,096 rows take the dense form (one contraction with the structure constants); traced by a jit
    after such a call, the same signature takes the generated code: no contraction, the same numbers."""
    kernel = kernels.product(algebra)
    x, y = (jnp.asarray(np.random.default_rng(seed).standard_normal((4096, algebra.dim))) for seed in (0, 1))
    assert kernel.strategies_for(4096, JAX, 4, False, JAX.rates_for(x)) == ("dense",)
    assert kernel.strategies_for(4096, JAX, 4, False, JAX_STAGED_RATES) == ("codegen",)
    eager = kernel(x, y)                                   # kept for this signature
    assert "dot_general" not in lowered(kernel, x, y)
    assert "dot_general" in lowered(kernels.product(algebra, strategy="dense"), x, y)
    np.testing.assert_allclose(jax.jit(kernel)(x, y), eager, rtol=1e-5, atol=1e-5)


def test_explain_gives_auto_s_choices_eager_and_under_jit():
    text = kernels.product(clifford(3, 0, 1)).explain(jnp.zeros((1, 16)))
    eager, staged = text.split("auto on jax")[1:]
    assert "staged by jax.jit" in staged and "staged" not in eager
    assert "codegen" in staged.splitlines()[-1]


def test_jax_s_question_is_found_where_each_release_keeps_it(monkeypatch):
    """In `jax.extend.core` from JAX 0.10, in `jax.core` before; where neither has it, eager pricing."""
    import jax.extend.core
    from product_interactions.kernels.arrays.jax_engine import under_jit
    name = "unsafe_am_i_under_a_jit_DO_NOT_USE"
    asked = lambda: True  # noqa: E731
    monkeypatch.setattr(jax.extend.core, name, asked, raising=False)
    assert under_jit() is asked
    monkeypatch.delattr(jax.extend.core, name)
    monkeypatch.setattr(jax.core, name, asked, raising=False)
    assert under_jit() is asked
    monkeypatch.delattr(jax.core, name)
    assert under_jit()() is False


def test_xla_s_gathers_and_scatters_are_priced_apart():
    """On the CPU XLA's gathers and scatters move about a ninth of its elementwise traffic (`Rates.indexed`); priced
    alike, auto had taken scatter for CG lmax 4 at 1,024 rows in float32 under jit: 3.3 ms against the generated
    code's 0.77 (`benchmarks/strategies.py --engine jax --jit --dtype float32`)."""
    kernel = kernels.product(clebsch_gordan(4), dtype=np.float32)
    alike = replace(JAX_STAGED_RATES, indexed=None)
    assert JAX_STAGED_RATES.indexed < JAX_STAGED_RATES.bandwidth / 5
    assert kernel.strategies_for(1024, JAX, 4, False, alike) == ("scatter",)
    assert kernel.strategies_for(1024, JAX, 4, False, JAX_STAGED_RATES) == ("codegen",)


def test_xla_s_float32_ffts_are_priced_at_twice_its_float64_ones():
    """XLA's float32 FFTs run at about twice its float64 ones (`Rates.transform32`); priced alike, auto had taken the
    generated code for translation(64) at 1,024 and 4,096 rows in float32 under jit, 3.7 and 10 times fft's time
    (`benchmarks/strategies.py --engine jax --jit --dtype float32 --only translation`).  Float64 is priced as
    before, and engines without a float32 rate price both dtypes alike."""
    kernel = kernels.product(translation(64), dtype=np.float32)
    alike = replace(JAX_STAGED_RATES, transform32=None)
    assert JAX_STAGED_RATES.transform32 == 2 * JAX_STAGED_RATES.transform
    for rows in (1024, 4096):
        assert kernel.strategies_for(rows, JAX, 4, False, alike) == ("codegen",)
        assert kernel.strategies_for(rows, JAX, 4, False, JAX_STAGED_RATES) == ("fft",)
    assert JAX_STAGED_RATES.coefficients(8) == alike.coefficients(8)
    assert NUMPY_RATES.transform32 is None and NUMPY_RATES.coefficients(4)[7] == 1 / NUMPY_RATES.transform
