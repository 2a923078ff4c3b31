"""Training on every engine: one Adam, the same steps on numpy, torch and JAX; the engine's choice and its errors."""
import numpy as np
import pytest

from product_interactions.extras import MissingExtra
from product_interactions.interactions.__main__ import main
from product_interactions.interactions.experiments import (EXPERIMENTS, STEPPED, run, selective_copy, seq2tens,
                                                           symmetry)
from product_interactions.interactions.experiments.report import report
from product_interactions.interactions.experiments.dynamical import SequenceClassifier, layer
from product_interactions.interactions.experiments.selective_copy import QUICK
from product_interactions.interactions.experiments.training import (Adam, adam, engine_named, installed_engines, leaves,
                                                                    rebuild, to_engine, to_numpy,
                                                                    value_and_gradient)

ENGINES = [pytest.param(name, marks=pytest.mark.skipif(name not in installed_engines(), reason=f"{name} absent"))
           for name in ("numpy", "torch", "jax")]
TINY = dict(QUICK, length=12, tokens=2, layers=1, steps=12, batch=8, test_samples=8, curve_points=12,
            dtype="float64")


@pytest.mark.parametrize("engine", ENGINES)
def test_the_copy_model_takes_the_same_steps_on_every_engine(engine):
    reference = selective_copy.train(dict(TINY, engine="numpy"), rank=2, seed=0)
    result = selective_copy.train(dict(TINY, engine=engine), rank=2, seed=0)
    losses = [value for _, value in result["curve"]]
    assert np.allclose(losses, [value for _, value in reference["curve"]], rtol=1e-9, atol=0)
    assert np.mean(losses[-4:]) < np.mean(losses[:4])
    assert result["accuracy"] == reference["accuracy"] and result["parameters"] == reference["parameters"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("point", ["Mamba", (3, 2)])
def test_sequence_classifier_losses_and_gradients_agree_across_engines(engine, point):
    model = SequenceClassifier(layer(point, d_model=4, d_state=3), features=3, classes=5)
    rng = np.random.default_rng(1)
    batch = (rng.standard_normal((2, 6, 3)), rng.integers(0, 5, 2))
    values = {}
    for name in ("numpy", engine):
        structure, arrays = leaves(to_engine(model.init(seed=0), engine_named(name), np.float64))
        function = value_and_gradient(engine_named(name), model.loss, structure)
        if name == "jax":
            import jax
            function = jax.jit(function)
        value, gradient = function(arrays, batch)
        values[name] = (float(value), to_numpy(rebuild(structure, gradient)))
    assert np.isclose(values[engine][0], values["numpy"][0], rtol=1e-12)
    for got, expected in zip(leaves(values[engine][1])[1], leaves(values["numpy"][1])[1]):
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_adam_clips_and_schedules_alike_on_every_engine(engine):
    target = 3.0
    loss = lambda p, batch: (((p["w"][0] - batch) ** 2).sum() + (p["w"][1] ** 4).sum())
    params = {"w": [np.zeros(3), np.ones(2)]}
    kept, history = adam(loss, params, 50, lambda step: target, lr=0.1, clip=0.5, schedule="cosine",
                         progress=False, engine=engine, dtype=np.float64)
    expected, expected_history = adam(loss, params, 50, lambda step: target, lr=0.1, clip=0.5, schedule="cosine",
                                      progress=False, engine="numpy")
    assert engine_named(engine).owns(kept["w"][0]) and isinstance(kept["w"], list)
    np.testing.assert_allclose(history, expected_history, rtol=1e-10)
    np.testing.assert_allclose(to_numpy(kept)["w"][0], expected["w"][0], rtol=1e-10)


@pytest.mark.parametrize("engine", ENGINES)
def test_adam_takes_torch_optim_adams_steps(engine):
    """Kingma and Ba's update, as torch.optim.Adam takes it: eps beside the bias-corrected root mean square.  With
    a large eps and tiny gradients, the form that added it to the uncorrected one (the paper's eps-hat) differed
    by a third of the step at step 1."""
    torch = pytest.importorskip("torch")
    scales = {"a": 1e-4, "b": 1.0, "c": 30.0}                  # gradients of three sizes
    loss = lambda p, batch: sum(((p[name] * scale - batch) ** 2).sum() for name, scale in scales.items())
    optimiser = Adam(loss, {name: np.zeros(2) for name in scales}, lr=0.05, eps=1e-3, engine=engine)
    weights = {name: torch.zeros(2, dtype=torch.float64, requires_grad=True) for name in scales}
    reference = torch.optim.Adam(list(weights.values()), lr=0.05, eps=1e-3)
    for step in range(6):
        optimiser.step(1.0)
        reference.zero_grad()
        loss(weights, 1.0).backward()
        reference.step()
        for name, value in zip(scales, optimiser.state()["params"]):
            np.testing.assert_allclose(value, weights[name].detach().numpy(), rtol=1e-12, atol=1e-15)


def test_float32_training_keeps_float32():
    result = adam(lambda p, _: (p["w"] ** 2).sum(), {"w": np.ones(2)}, 2, lambda step: None, progress=False,
                  engine=installed_engines()[0], dtype=np.float32)[0]["w"]
    assert str(result.dtype).endswith("float32")


def test_engine_choice_and_its_errors(monkeypatch):
    assert engine_named(None).name == installed_engines()[0]
    assert engine_named(None, supported=("numpy",)).name == "numpy"
    with pytest.raises(ValueError, match=r"engine: expected one of \['torch', 'jax', 'numpy'\], got 'cuda'"):
        engine_named("cuda")
    with pytest.raises(ValueError, match="engine: expected one of"):
        engine_named(3)
    with pytest.raises(ValueError, match=r"engine: expected one of \['torch', 'numpy'\], got 'jax'"):
        seq2tens.run(quick=True, engine="jax")
    monkeypatch.setattr("product_interactions.interactions.experiments.training.installed_engines",
                        lambda: ["numpy"])
    installing = r'pip install "product-interactions\[torch\]"'
    with pytest.raises(MissingExtra, match=rf"^engine: torch is not installed: {installing}$"):
        engine_named("torch")
    assert engine_named(None).name == "numpy"
    with pytest.raises(SystemExit):
        main(["experiment", "copy", "--engine", "cuda"])


@pytest.mark.parametrize("engine", ENGINES)
def test_the_report_records_the_engine_and_its_version(engine):
    import importlib
    result = report("demo", quick=True, seed=0, config={}, rows=[], engine=engine)
    assert result["engine"] == {"name": engine, "version": importlib.import_module(engine).__version__}


@pytest.mark.parametrize("engine", ENGINES)
def test_adam_resumes_from_a_checkpoint_on_any_engine(engine):
    loss = lambda p, batch: ((p["w"] - batch) ** 2).sum() + (p["v"] ** 4).sum()
    params = {"w": np.zeros(3), "v": np.ones((2, 2))}
    options = dict(lr=0.05, clip=1.0, schedule="cosine", steps=20, dtype=np.float64)
    whole = Adam(loss, params, engine="numpy", **options)
    losses = [whole.step(float(t)) for t in range(20)]
    first = Adam(loss, params, engine="numpy", **options)
    resumed_losses = [first.step(float(t)) for t in range(10)]
    resumed = Adam(loss, params, engine=engine, **options)
    resumed.load(first.state())
    resumed_losses += [resumed.step(float(t)) for t in range(10, 20)]
    assert resumed.count == 20
    np.testing.assert_allclose(resumed_losses, losses, rtol=1e-10)
    np.testing.assert_allclose(to_numpy(resumed.params)["v"], whole.params["v"], rtol=1e-10)


def test_adam_refuses_a_foreign_checkpoint_and_keeps_its_state_on_a_non_finite_step():
    optimiser = Adam(lambda p, batch: (p["w"] ** 2).sum() * batch, {"w": np.ones(2)}, lr=0.1)
    optimiser.step(1.0)
    with pytest.raises(ValueError, match=r"state\['params'\]: expected shapes \[\(2,\)\], got \[\(3,\)\]"):
        optimiser.load({"count": 1, "params": [np.ones(3)], "first": [np.ones(3)], "second": [np.ones(3)]})
    with pytest.raises(ValueError, match="state: expected the dict of Adam.state()"):
        optimiser.load({"params": []})
    before = optimiser.state()
    with pytest.raises(FloatingPointError, match="step 1"):
        optimiser.step(np.inf)
    assert optimiser.count == 1 and np.array_equal(optimiser.params["w"], before["params"][0])
    with pytest.raises(ValueError, match="steps: the cosine schedule needs"):
        Adam(lambda p, batch: p["w"].sum(), {"w": np.ones(2)}, schedule="cosine")


def _devices():
    """(engine, device) pairs to train on here: the CPU named explicitly on every engine, and CUDA where torch
    sees one (CI has none; the GPU machine runs those)."""
    pairs = [pytest.param(name, "cpu", marks=mark) for name, mark in
             (("numpy", ()), ("torch", ENGINES[1].marks), ("jax", ENGINES[2].marks))]
    cuda = pytest.mark.skipif("torch" not in installed_engines() or not __import__("torch").cuda.is_available(),
                              reason="no CUDA device")
    return pairs + [pytest.param("torch", "cuda", marks=cuda)]


@pytest.mark.parametrize("engine, device", _devices())
def test_the_copy_model_trains_on_a_named_device_as_on_the_default(engine, device):
    reference = selective_copy.train(dict(TINY, engine="numpy"), rank=2, seed=0)
    result = selective_copy.train(dict(TINY, engine=engine, device=device), rank=2, seed=0)
    losses = [value for _, value in result["curve"]]
    assert np.allclose(losses, [value for _, value in reference["curve"]], rtol=1e-9, atol=0)
    assert result["accuracy"] == reference["accuracy"]


@pytest.mark.parametrize("engine, device", _devices())
def test_adam_keeps_parameters_and_moments_on_its_device(engine, device):
    optimiser = Adam(lambda p, batch: ((p["w"] - batch) ** 2).sum(), {"w": np.zeros(2)}, lr=0.1, engine=engine,
                     device=device)
    optimiser.step(3.0)
    found = engine_named(engine)
    placed = {str(found.device(v)) for v in (*optimiser._vectors, optimiser.params["w"])}
    expected = {"numpy": {"None"}, "torch": {device}, "jax": {"None"}}[engine]
    if engine == "jax":
        placed = {str(d.platform) for v in optimiser._vectors for d in v.devices()}
        expected = {device}
    assert placed == expected or placed == {f"{device}:0"}
    np.testing.assert_allclose(found.value(optimiser.params["w"]), 0.1, rtol=1e-6)


@pytest.mark.parametrize("engine, device, message", [
    ("numpy", "cuda", "device: the numpy engine has only the CPU, got 'cuda'"),
    pytest.param("torch", "warp-drive", "device: expected a torch device such as 'cpu' or 'cuda', got 'warp-drive'",
                 marks=ENGINES[1].marks),
    pytest.param("jax", "tpu", r"device: JAX has no 'tpu' device here \(it has \['cpu'\]\)", marks=ENGINES[2].marks)])
def test_a_device_the_engine_cannot_place_arrays_on_is_refused_by_name_before_training(engine, device, message,
                                                                                      capsys):
    with pytest.raises(ValueError, match=f"^{message}$"):
        Adam(lambda p, batch: (p["w"] ** 2).sum(), {"w": np.zeros(2)}, engine=engine, device=device)
    with pytest.raises(SystemExit) as exit_:
        main(["experiment", "copy", "--quick", "--engine", engine, "--device", device])
    assert exit_.value.code == 2 and f"--{message}".replace("\\", "") in capsys.readouterr().err.replace("\n", " ")


@pytest.mark.parametrize("values", [2**40, 2**29])
def test_a_checkpoint_whose_header_claims_too_many_values_is_refused_cleanly(tmp_path, values):
    """Issue 36: an .npy header claiming 2^40 values raised numpy's "Unable to allocate 8.00 TiB"."""
    import io
    import zipfile

    from product_interactions.interactions.experiments import checkpoint
    optimiser = Adam(lambda p, batch: (p["w"] ** 2).sum() * batch, {"w": np.ones(2)}, lr=0.1)
    path = tmp_path / "c.npz"
    checkpoint.save(path, optimiser, {"lr": 0.1})
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (values,)})
    members["params_0.npy"] = header.getvalue() + b"\0" * 16
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(ValueError, match=rf"checkpoint: .*c.npz is not a readable checkpoint \(params_0.npy: its "
                                         rf"header claims shape \({values},\) of float64"):
        checkpoint.load(path, optimiser, {"lr": 0.1})


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_experiment_trains_and_tests_on_a_device(name, meta_as_gpu, monkeypatch):
    """The quick settings, cut to two steps, on torch's meta device standing in for a GPU (`meta_as_gpu`): every
    parameter, batch, loss and evaluation stays on the device, or a CPU tensor meets a meta one and raises.  The
    losses read back are the stand-in's zeros, so the training ran there."""
    if name == "seq2tens":
        pytest.importorskip("sktime")
        monkeypatch.setitem(seq2tens.QUICK, "steps", dict.fromkeys(seq2tens.QUICK["steps"], 2))
    elif name == "symmetry":
        monkeypatch.setitem(symmetry.QUICK, "steps", 2)
    result = run(name, quick=True, progress=False, engine="torch", device="meta",
                 **({"steps": 2} if name in STEPPED else {}))
    curves = result.get("curves") or result.get("loss_curves") or {}
    losses = [point[-1] if isinstance(point, list) else point for curve in curves.values() for point in curve]
    assert result["experiment"] == name and result["rows"] and all(value == 0 for value in losses)
    assert losses or name == "dynamical"                # (its curves are not reported)
