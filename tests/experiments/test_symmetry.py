"""The symmetry experiment (Table 2): the exact parametrisation, the regulariser, and the quick run, seeded."""
from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from product_interactions.algebra.symmetry import is_equivariant, product_action, translations
from product_interactions.interactions.experiments import symmetry
from product_interactions.interactions.experiments.training import engine_named, installed_engines

TAPS, SIZE = 2, 5
ENGINES = [pytest.param(name, marks=pytest.mark.skipif(name not in installed_engines(), reason=f"{name} absent"))
           for name in ("numpy", "torch", "jax")]


def on(engine, array):
    """A float64 numpy array as `engine`'s."""
    return engine.convert(array, engine.xp.zeros((), dtype=engine.native_dtype(np.float64)))


def operator(lam, filters):
    """X (SIZE, SIZE) -> O_K(X) (SIZE, SIZE) for one channel."""
    return lambda x: symmetry.multiply(filters, lam, np.asarray(x)[None])[0, 0]


def test_the_exact_parametrisation_is_one_circulant_per_tap():
    solution = symmetry.exact_parametrisation(TAPS, SIZE)
    assert solution.method == "exact" and solution.dim == TAPS * SIZE
    lam = solution(np.random.default_rng(0).standard_normal(solution.dim))
    for k, i, n, a in itertools.product(range(TAPS), range(SIZE), range(SIZE), range(SIZE)):
        assert lam[k, (i + a) % SIZE, (n + a) % SIZE] == pytest.approx(lam[k, i, n])      # lam^n_{k,i} = c_k(n - i)


def test_the_exact_operator_is_translation_equivariant_on_the_lattice_and_a_free_one_is_not():
    rng = np.random.default_rng(1)
    solution = symmetry.exact_parametrisation(TAPS, SIZE)
    filters = rng.standard_normal((1, TAPS, TAPS))
    shifts = product_action(translations(SIZE), translations(SIZE))          # Z_5 x Z_5 on B (x) B
    assert is_equivariant(operator(solution(rng.standard_normal(solution.dim)), filters), shifts, seed=2)
    assert not is_equivariant(operator(rng.standard_normal((TAPS, SIZE, SIZE)), filters), shifts, seed=2)


def test_the_regulariser_is_the_papers_sum_zero_on_the_constraint_and_positive_off_it():
    rng = np.random.default_rng(3)
    penalty = symmetry.paper_regulariser(TAPS, SIZE)
    solution = symmetry.exact_parametrisation(TAPS, SIZE)
    assert penalty(solution(rng.standard_normal(solution.dim))) < 1e-20
    lam = rng.standard_normal((TAPS, SIZE, SIZE))
    paper = sum((lam[k, (i + a) % SIZE, n] - lam[k, i, (n - a) % SIZE]) ** 2
                for k, i, n, a in itertools.product(range(TAPS), range(SIZE), range(SIZE), range(SIZE)))
    assert penalty(lam) > 1 and penalty(lam) == pytest.approx(paper)


def test_the_quick_run_reports_the_three_settings():
    result = symmetry.run(quick=True, progress=False)
    rows = {line["name"]: line for line in result["rows"]}
    assert list(rows) == ["exact constraint", "no constraint", "regulariser"]
    assert all(0 <= line["ours"] <= 1 for line in rows.values())
    assert rows["exact constraint"]["ours"] > 0.5                               # chance is 0.1
    assert [rows[name]["paper"] for name in rows] == [0.988, 0.445, 0.943]
    assert result["final_regulariser"]["exact constraint"] < 1e-12 < result["final_regulariser"]["no constraint"]
    counts = result["structure_constant_parameters"]                          # the paper's full 8 x 8 lattice
    assert result["taps"] == 8 and counts["exact constraint"] == 8 * 8 and counts["no constraint"] == 8 ** 3
    assert all(0 <= line["train"] <= 1 for line in rows.values())
    curve = result["support_curve"]
    assert sorted(curve) == ["exact constraint", "no constraint"]
    for setting, points in curve.items():                                      # [taps, test, train], by taps
        assert [p[0] for p in points] == [2, 8]
        assert points[-1][1:] == [rows[setting]["ours"], rows[setting]["train"]]


def test_runs_are_deterministic_under_a_seed(monkeypatch):
    monkeypatch.setitem(symmetry.QUICK, "steps", 15)
    first, second = (symmetry.run(quick=True, seed=4, progress=False) for _ in range(2))
    assert first["rows"] == second["rows"] and first["loss_curves"] == second["loss_curves"]
    other = symmetry.run(quick=True, seed=5, progress=False)
    assert other["loss_curves"] != first["loss_curves"]


def test_bad_input_raises_clear_errors():
    with pytest.raises(TypeError, match="seed"):
        symmetry.run(quick=True, seed="0")
    with pytest.raises(TypeError, match="quick"):
        symmetry.run(quick=1)
    lam = np.zeros((TAPS, SIZE, SIZE))
    with pytest.raises(ValueError, match="images"):
        symmetry.multiply(np.zeros((1, TAPS, TAPS)), lam, np.zeros((2, SIZE, SIZE + 1)))
    with pytest.raises(ValueError, match="filters"):
        symmetry.multiply(np.zeros((1, TAPS + 1, TAPS)), lam, np.zeros((2, SIZE, SIZE)))
    with pytest.raises(ValueError, match="lam"):
        symmetry.multiply(np.zeros((1, TAPS, TAPS)), np.zeros(SIZE), np.zeros((2, SIZE, SIZE)))


@pytest.mark.parametrize("name", ENGINES)
def test_the_operator_is_the_brute_force_sum_on_every_engine(name):
    engine, rng = engine_named(name), np.random.default_rng(6)
    filters, lam, images = (rng.standard_normal(shape) for shape in ((2, TAPS, TAPS), (TAPS, SIZE, SIZE),
                                                                      (3, SIZE, SIZE)))
    expected = np.einsum("ckl,kin,bij,ljm->bcnm", filters, lam, images, lam)
    found = symmetry.multiply(*(on(engine, a) for a in (filters, lam, images)))
    np.testing.assert_allclose(engine.value(found), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ENGINES)
def test_the_engine_penalty_is_the_library_regulariser(name):
    engine, lam = engine_named(name), np.random.default_rng(7).standard_normal((TAPS, SIZE, SIZE))
    penalty = symmetry.Penalty(TAPS, SIZE)
    assert float(engine.value(penalty(on(engine, lam)))) == pytest.approx(penalty.exact(lam), rel=1e-12)
    if name == "numpy":
        import autograd
        np.testing.assert_allclose(autograd.grad(penalty)(lam), autograd.grad(penalty.exact)(lam), rtol=1e-12)


@pytest.mark.parametrize("name", ENGINES)
@pytest.mark.parametrize("setting", list(symmetry.PAPER))
def test_a_setting_takes_the_same_steps_on_every_engine(name, setting):
    rng = np.random.default_rng(8)
    images, labels = rng.random((40, SIZE, SIZE)), np.arange(40) % 10
    config = dict(symmetry.QUICK, pool=1, batch=8, steps=4, dtype="float64")

    def losses(engine):
        return symmetry.train_setting(setting, TAPS, config, images, labels, 0, symmetry.Penalty(TAPS, SIZE),
                                      False, engine)[2]
    np.testing.assert_allclose(losses(name), losses("numpy"), rtol=1e-9)


def model(readout, pool, size=SIZE, channels=3):
    """Parameters of the free model on `size` x `size` images: the readout and pooling of the ablations."""
    config = dict(symmetry.QUICK, channels=channels, pool=pool, readout=readout)
    return symmetry.Parametrisation("no constraint", TAPS, size).initial(config, size, seed=9)


def test_no_pooling_reads_every_pixel_and_the_direct_readout_drops_bias_and_relu():
    pooled, unpooled, direct = model("pooled", 2, size=4), model("pooled", 1, size=4), model("direct", 2, size=4)
    assert pooled["readout"].shape == (3 * 2 * 2, 10) and unpooled["readout"].shape == (3 * 4 * 4, 10)
    assert direct["readout"].shape == (3 * 4 * 4, 10) and sorted(direct) == ["filters", "lam", "offset", "readout"]
    images = np.random.default_rng(10).standard_normal((5, 4, 4))
    operated = symmetry.multiply(direct["filters"], direct["lam"], images)               # (5, 3, 4, 4)
    expected = operated.reshape(5, -1) @ direct["readout"] + direct["offset"]            # linear in O_K(X)
    found = symmetry.logits(direct, direct["lam"], images, 2, "direct")
    np.testing.assert_allclose(found, expected, rtol=1e-12)
    assert (expected < 0).any() and np.allclose(symmetry.logits(direct, direct["lam"], -images, 2, "direct"),
                                                2 * direct["offset"] - expected)         # no relu: odd about w_0
    hidden = np.maximum(symmetry.multiply(unpooled["filters"], unpooled["lam"], images), 0)  # bias 0 at the start
    np.testing.assert_allclose(symmetry.logits(unpooled, unpooled["lam"], images, 1),
                               hidden.reshape(5, -1) @ unpooled["readout"] + unpooled["offset"], rtol=1e-12)


@pytest.mark.parametrize("option, value, message", [
    ("pool", 3, "pool: expected a positive int dividing the image size 5, got 3"),
    ("pool", 0, "pool: expected a positive int dividing the image size 5, got 0"),
    ("readout", "global", "readout: expected one of ['pooled', 'direct'], got 'global'"),
    ("train_images", 0, "train_images: expected None or an int from 1, got 0"),
    ("reg_weight", -1.0, "reg_weight: expected a non-negative number, got -1.0")])
def test_bad_model_options_are_refused_by_name(option, value, message):
    config = dict(symmetry.QUICK, pool=1) | {option: value}
    images, labels = np.zeros((4, SIZE, SIZE)), np.arange(4)
    with pytest.raises(ValueError, match=re.escape(message)):
        symmetry.train_setting("no constraint", TAPS, config, images, labels, 0, progress=False)


def test_bad_settings_and_too_many_images_are_refused_before_training(monkeypatch):
    with pytest.raises(ValueError, match=re.escape("setting: expected one of ['paper', 'ablations'], got 'pixels'")):
        symmetry.run(quick=True, setting="pixels", progress=False)
    monkeypatch.setitem(symmetry.QUICK_ABLATIONS, "ablations", {"many": {"train_images": 10 ** 6}})
    with pytest.raises(ValueError, match=r"train_images: expected None or an int from 1 to 1348, got 1000000"):
        symmetry.run(quick=True, setting="ablations", progress=False)


def test_the_quick_ablations_run_end_to_end():
    result = symmetry.run(quick=True, setting="ablations", progress=False)
    names = [line["name"] for line in result["rows"]]
    ablations = list(symmetry.QUICK_ABLATIONS["ablations"])
    assert names == [f"{a}: {s}" for a in ablations for s in symmetry.PAPER] + ["regulariser weight 0.1",
                                                                                 "regulariser weight 10"]
    assert "support_curve" not in result and sorted(result["paper_ordering"]) == sorted(ablations)
    held_out = {line["name"]: line["ours"] for line in result["rows"]}
    for ablation, shown in result["paper_ordering"].items():
        assert shown == symmetry.ordering({s: held_out[f"{ablation}: {s}"] for s in symmetry.PAPER})
    free = result["free_parameters"]                 # 8 x 8 digits, 8 channels, 10 classes; pooled 2 x 2: 16 cells
    assert free["no pooling: no constraint"] - free["200 training images: no constraint"] == 8 * (64 - 16) * 10
    assert free["direct readout: no constraint"] == free["no pooling: no constraint"] - 8          # no bias
    assert all(0 <= line["ours"] <= 1 and 0 <= line["train"] <= 1 for line in result["rows"])
    # the heavier the weight, the nearer lam to the constraint
    penalty = result["final_regulariser"]
    assert penalty["regulariser weight 10"] < penalty["regulariser weight 0.1"] < penalty["no pooling: no constraint"]
