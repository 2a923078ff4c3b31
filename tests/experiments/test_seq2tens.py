"""The seq2tens experiment: the quick run's figures, determinism, padding that leaks nowhere, bad input."""
import numpy as np
import pytest

from product_interactions.interactions.experiments import seq2tens
from product_interactions.interactions.experiments.seq2tens import Classifier, standardise, statistics


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


@pytest.mark.parametrize("filters", [0, 4])
def test_appended_padding_changes_no_prediction(filters):
    rng = np.random.default_rng(1)
    x, mask = _batch(rng, [12, 8, 9], 12)
    model = Classifier(d_in=3, classes=3, filters=filters, widths=(4, 4), order=2)
    params = model.init(seed=2)
    params["readout/A"] = rng.standard_normal(params["readout/A"].shape)       # a zero readout would hide changes
    mean, std = statistics(x, mask)
    logits = model.apply(params, standardise(x, mask, mean, std), mask)
    longer, longer_mask = np.pad(x, ((0, 0), (0, 5), (0, 0)), constant_values=7.0), np.pad(mask, ((0, 0), (0, 5)))
    assert np.abs(logits).max() > 1e-3
    assert np.allclose(model.apply(params, standardise(longer, longer_mask, mean, std), longer_mask), logits,
                       rtol=1e-10, atol=1e-12)


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
    with pytest.raises(TypeError, match="seed"):
        seq2tens.run(quick=True, seed="0")
    with pytest.raises(TypeError, match="quick"):
        seq2tens.run(quick="yes")
