"""Plans are built once: per expression and length bucket, never per call; kept plans are bounded; explain."""
from __future__ import annotations

import numpy as np
import pytest

from product_interactions.algebra import diagonal, position, tensor_product
from product_interactions.interactions import CausalReduce, Flip, Mask, Pointwise, Signal, compiler
from product_interactions.interactions.architectures import attention, convolution, gating
from product_interactions.interactions.architectures import model as model_module


@pytest.fixture
def lowerings(monkeypatch):
    """Counts the plans built (one PlanBuilder each)."""
    count = [0]
    real = compiler.PlanBuilder

    def counting(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)
    monkeypatch.setattr(compiler, "PlanBuilder", counting)
    return count


def test_a_compiled_expression_lowers_once_whatever_the_calls(lowerings):
    X = Signal("x", tensor_product(position(4), position(4), diagonal(3)), units=[1])
    plan = CausalReduce(Pointwise("softmax", X * Flip(X), factor=1, mask=Mask.causal()) * Flip(X)).compile()
    for n in (4, 7, 30):
        for _ in range(3):
            assert plan(np.ones((2, n, 3))).shape == (2, n, 3)
    assert lowerings[0] == 1


def test_length_generic_models_compile_once_for_every_length(lowerings):
    for model in (attention(d_model=8, heads=2), gating(channels=3)):
        params = model.init(seed=0)
        for n in (5, 9, 17, 5, 100):
            width = 8 if "W_Q" in params else 3
            model.apply(params, np.random.default_rng(n).standard_normal((2, n, width)))
    assert lowerings[0] == 2


def test_length_specific_models_compile_once_per_length_and_keep_a_bounded_number(lowerings, monkeypatch):
    monkeypatch.setattr(model_module, "PLANS_KEPT", 3)
    model = convolution(channels_in=2, channels_out=2, size=3, cyclic=False)     # translation sizes are pinned
    params = model.init(seed=0)
    for n in (5, 6, 5, 7, 6, 8, 9, 10, 9):
        model.apply(params, np.ones((1, n, 2)))
    assert lowerings[0] == 6                                 # 5, 6, 7, 8, 9, 10 (the repeats were kept)
    assert len(set(map(id, model._plans.values()))) <= 3
    model.apply(params, np.ones((1, 5, 2)))                  # 5 was the least recently used: evicted, built again
    assert lowerings[0] == 7


def test_a_plan_refuses_sizes_it_was_not_built_for():
    model = convolution(channels_in=1, channels_out=1, size=2)
    plan = model.build((6,))[0].compile()
    with pytest.raises(ValueError, match=r"inputs\['x'\]: expected shape \(\.\.\., 6, 1\)"):
        plan(np.ones((1, 7, 1)), model.init(seed=0))
    assert not plan.accepts(np.ones((1, 7, 1)), model.init(seed=0))


def test_a_call_like_a_checked_one_skips_the_checks_and_any_other_is_still_refused_by_name(monkeypatch):
    """`Plan.check` keeps the signatures (types, dtypes, shapes, devices, layouts) of recent checked calls: a call
    that matches one runs unchecked, with the sizes bound before; every call that differs in one of them is checked
    (and refused by name where it does not fit), and at most `CHECKS_KEPT` are kept."""
    torch = pytest.importorskip("torch")
    from product_interactions.kernels.plans import plan as plan_module
    model = attention(d_model=4, heads=1)
    plan = model.plan((5,))
    params = {k: torch.tensor(v) for k, v in model.init(seed=0).items()}
    x = torch.randn(2, 5, 4, dtype=torch.float64)
    plan(x, params)
    expected = plan(2 * x.numpy(), model.init(seed=0))
    checks = []
    original = plan_module.Plan._checked_call
    monkeypatch.setattr(plan_module.Plan, "_checked_call", lambda self, *a: checks.append(1) or original(self, *a))
    second = plan(2 * x, params)
    assert checks == []                                                     # sizes and engine as bound before
    np.testing.assert_allclose(second.numpy(), expected, rtol=1e-12)
    for argument, bad, message in [
            ("x", x.float(), r"expected torch.float32 like inputs\['x'\]"),
            ("x", x[..., :3], r"inputs\['x'\]: expected shape"),
            ("x", torch.empty(2, 5, 4, dtype=torch.float64, device="meta"), "meta"),
            ("x", x.to_sparse(), "layout"),
            ("W_Q", params["W_Q"][:, :3], r"parameters\['W_Q'\]: expected shape"),
            ("W_Q", params["W_Q"].int(), "floating-point")]:
        arguments = (bad, params) if argument == "x" else (x, {**params, argument: bad})
        with pytest.raises((TypeError, ValueError), match=message):
            plan(*arguments)
    assert len(checks) == 6
    for length in range(3, 3 + plan_module.CHECKS_KEPT + 4):                 # one signature per batch size
        plan(torch.randn(length, 5, 4, dtype=torch.float64), params)
    assert len(plan._checked) == plan_module.CHECKS_KEPT


def test_explain_prints_the_steps_and_what_serves_every_length():
    text = attention(d_model=8, heads=2).explain()
    assert "one plan for every size of position(3)" in text
    assert "softmax(" in text and "within Mask.causal()" in text and "left out" in text
    assert text.count("contract '") == 2


LOWER_HUGE = r"""
import resource, time
resource.setrlimit(resource.RLIMIT_AS, (1500 * 1024**2, 1500 * 1024**2))
from product_interactions.interactions.architectures import attention, gating
start = time.perf_counter()
for model in (attention(d_model=8, heads=2), gating(channels=4)):
    plan = model.build((10**7,))[0].compile()           # ten million positions: n x n would be 10^14 entries
    assert "one plan for every size" in plan.explain()
print(f"{time.perf_counter() - start:.2f}")
"""


def test_building_and_lowering_cost_nothing_in_the_length():
    import os
    import subprocess
    import sys
    result = subprocess.run([sys.executable, "-c", LOWER_HUGE], cwd="/", capture_output=True, text=True,
                            timeout=120, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    assert result.returncode == 0, result.stderr[-800:]


@pytest.mark.parametrize("strategy", ["identify", "dense", "gather", "fft", "codegen", "graded", "compiled", "scatter",
                                      "auto"])
def test_every_strategy_forced_on_an_expression_gives_the_numbers_of_the_definition(strategy):
    """One lowering path: a strategy of the registry serves compiled expressions as it serves kernels.product, in
    the contraction where it has an operand form (identify, dense, gather), else as a level through a Kernel step,
    where it applies (a strategy that does not is passed over for the cheapest)."""
    from product_interactions.algebra import quaternions, translation
    from product_interactions.kernels import STRATEGIES, Factor
    from product_interactions.kernels.plans.plan import Product
    rng = np.random.default_rng(5)
    for algebra in (quaternions(), translation(6, cyclic=False)):
        X = Signal("x", tensor_product(position(3), algebra))
        plan = compiler.compile(X * X, strategy)
        x = rng.standard_normal((4, 3, algebra.dim))
        lam = np.asarray(algebra.structure_constants(), float)
        np.testing.assert_allclose(plan(x), np.einsum("bti,btj,ijk->btk", x, x, lam), rtol=1e-12, atol=1e-12)
        used = [step.kernel.strategies for step in plan.steps if isinstance(step, Product)]
        module = STRATEGIES.get(strategy)
        if module is not None and hasattr(module, "operand"):
            assert used == []                                            # in the contraction
        elif module is not None and module.unsupported(Factor.from_algebra(algebra)) is None:
            assert used == [("identify", strategy)]                      # a level, through a Kernel step
