"""The seq2tens experiment: the quick run's figures, determinism, padding that leaks nowhere, bad input."""
import numpy as np
import pytest

from product_interactions.interactions.experiments import seq2tens
from product_interactions.interactions.experiments.seq2tens import Classifier, batch_moments, standardise, statistics


@pytest.fixture(scope="module")
def quick():
    pytest.importorskip("sktime")
    return seq2tens.run(quick=True, seed=0, progress=False)


def test_quick_rows_are_percentages_well_above_chance(quick):
    config = quick["config"]
    assert quick["setting"] == "quick" and len(quick["rows"]) == len(config["datasets"]) * len(config["models"])
    chance = {"BasicMotions": 25.0, "JapaneseVowels": 100 / 9}
    for line, (dataset, model) in zip(quick["rows"], [(d, m) for d in config["datasets"] for m in config["models"]]):
        assert line["name"].startswith(f"{dataset}, {model} ")
        assert 0 <= line["ours"] <= 100 and line["ours"] > 2 * chance[dataset]
        assert line["unit"] == "test accuracy, %" and len(line["accuracies"]) == config["seeds"]
    for curve in quick["curves"].values():
        assert curve[-1] < 0.5 * curve[0]                    # the training loss fell


def test_training_is_deterministic_under_its_seed():
    pytest.importorskip("sktime")
    data = seq2tens.prepare("BasicMotions")
    runs = [seq2tens.train(Classifier(6, 4, filters=4, widths=(4,), order=2), data, 8, 16, 1e-2, 1.0,
                           np.random.default_rng(seed), progress=False) for seed in (0, 0, 1)]
    (first, history), (again, history_again), (_, other) = runs
    assert history == history_again and all(np.array_equal(first[k], again[k]) for k in first)
    assert history != other


def _batch(rng, lengths, length):
    x = rng.standard_normal((len(lengths), length, 3)) * [1.0, 5.0, 0.1] + [0.0, 2.0, -1.0]
    mask = np.arange(length)[None, :] < np.array(lengths)[:, None]
    return np.where(mask[:, :, None], x, 0.0), mask


def test_standardisation_uses_kept_points_only():
    x, mask = _batch(np.random.default_rng(0), [10, 6, 8], 10)
    mean, std = statistics(x, mask)
    standardised = standardise(x, mask, mean, std)
    assert np.allclose(standardised[mask].mean(axis=0), 0) and np.allclose(standardised[mask].std(axis=0), 1)
    assert np.all(standardised[~mask] == 0)
    longer, longer_mask = np.pad(x, ((0, 0), (0, 7), (0, 0)), constant_values=np.nan), np.pad(mask, ((0, 0), (0, 7)))
    assert all(np.allclose(a, b) for a, b in zip(statistics(longer, longer_mask), (mean, std)))


@pytest.mark.parametrize("filters, norm", [(0, "layer"), (4, "layer"), (4, "batch")])
def test_appended_padding_changes_no_prediction(filters, norm):
    rng = np.random.default_rng(1)
    x, mask = _batch(rng, [12, 8, 9], 12)
    model = Classifier(d_in=3, classes=3, filters=filters, widths=(4, 4), order=2, norm=norm)
    params = model.init(seed=2)
    params["readout/A"] = rng.standard_normal(params["readout/A"].shape)       # a zero readout would hide changes
    mean, std = statistics(x, mask)
    logits = model.apply(params, standardise(x, mask, mean, std), mask)
    longer, longer_mask = np.pad(x, ((0, 0), (0, 5), (0, 0)), constant_values=7.0), np.pad(mask, ((0, 0), (0, 5)))
    assert np.abs(logits).max() > 1e-3
    assert np.allclose(model.apply(params, standardise(longer, longer_mask, mean, std), longer_mask), logits,
                       rtol=1e-10, atol=1e-12)


def test_batch_moments_are_over_the_kept_points_of_every_case_and_time():
    x, mask = _batch(np.random.default_rng(2), [7, 3, 5], 7)
    x[~mask] = 1e6                                                          # padding holds anything
    mean, variance = batch_moments(x, mask)
    np.testing.assert_allclose(mean, x[mask].mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(variance, x[mask].var(axis=0), rtol=1e-12)


def _batch_norm_model(seed=3):
    rng = np.random.default_rng(seed)
    x, mask = _batch(rng, [9, 6, 8, 9], 9)
    model = Classifier(d_in=3, classes=3, filters=4, widths=(4,), order=2, norm="batch")
    params = model.init(seed=4)
    params["readout/A"] = rng.standard_normal(params["readout/A"].shape)
    params["fcn0/gamma"], params["fcn0/beta"] = rng.uniform(0.5, 2, 4), rng.standard_normal(4)
    return model, params, x, mask


def test_batch_norm_trains_on_the_batch_and_tests_on_the_training_sets_moments():
    model, params, x, mask = _batch_norm_model()
    assert {"fcn0/gamma", "fcn0/beta", "fcn2/gamma"} <= set(model.parameters)
    moments = model.population_moments(params, x, mask)
    assert len(moments) == 3 and all(np.shape(value) == (4,) for pair in moments for value in pair)
    # on the set the moments came from, test mode is training mode; on one case, the batch's moments differ
    np.testing.assert_allclose(model.apply(params, x, mask, moments), model.apply(params, x, mask), rtol=1e-12)
    one = model.apply(params, x[:1], mask[:1], moments)
    np.testing.assert_allclose(one, model.apply(params, x, mask, moments)[:1], rtol=1e-12)
    assert not np.allclose(one, model.apply(params, x[:1], mask[:1]))
    # block 0 in training mode: each channel's kept points have mean beta and standard deviation gamma
    first = Classifier(d_in=3, classes=3, filters=4, widths=(4,), order=2, norm="batch")
    first.convolutions = first.convolutions[:1]                                  # a one-block FCN
    before_relu = {**params, "fcn0/beta": params["fcn0/beta"] + 100.0}            # relu leaves positive values be
    h, _ = first.fcn(before_relu, x, mask)
    np.testing.assert_allclose(h[mask].mean(axis=0) - 100.0, params["fcn0/beta"], atol=1e-9)
    np.testing.assert_allclose(h[mask].std(axis=0), params["fcn0/gamma"] / np.sqrt(1 + 1e-5 / moments[0][1]),
                               rtol=1e-9)


def test_batch_norm_on_torch_gives_numpys_logits_and_moments():
    torch = pytest.importorskip("torch")
    model, params, x, mask = _batch_norm_model()
    moments = model.population_moments(params, x, mask)
    on_torch = {name: torch.tensor(value) for name, value in params.items()}
    for pair, expected in zip(model.population_moments(on_torch, torch.tensor(x), mask), moments):
        np.testing.assert_allclose(pair, expected, rtol=1e-12)
    for given in (None, moments):
        np.testing.assert_allclose(model.apply(on_torch, torch.tensor(x), mask, given).numpy(),
                                   model.apply(params, x, mask, given), rtol=1e-10, atol=1e-12)


def test_bad_input_raises_clear_errors():
    x, mask = _batch(np.random.default_rng(0), [5, 3], 5)
    mean, std = statistics(x, mask)
    with pytest.raises(ValueError, match="mask: expected shape"):
        standardise(x, mask[:, :4], mean, std)
    with pytest.raises(ValueError, match="ones then zeros"):
        statistics(x, mask[:, ::-1])
    with pytest.raises(ValueError, match="mask: expected a"):
        statistics(x, None)
    with pytest.raises(ValueError, match=r"x: expected shape \(batch, length, 2\)"):
        Classifier(d_in=2, classes=3, widths=(4,), order=2).apply({}, x, mask)
    with pytest.raises(ValueError, match="classes"):
        Classifier(d_in=3, classes=1)
    with pytest.raises(ValueError, match=r"norm: expected one of \('layer', 'batch'\), got 'group'"):
        Classifier(d_in=3, classes=3, filters=4, norm="group")
    layer_norm = Classifier(d_in=3, classes=3, filters=4, widths=(4,), order=2)
    with pytest.raises(ValueError, match="norm: population moments need an FCN with batch norm, got norm 'layer'"):
        layer_norm.population_moments(layer_norm.init(0), x, mask)
    with pytest.raises(TypeError, match="seed"):
        seq2tens.run(quick=True, seed="0")
    with pytest.raises(TypeError, match="quick"):
        seq2tens.run(quick="yes")
