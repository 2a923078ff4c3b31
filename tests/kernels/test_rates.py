"""Rates per device: calibration kept in the cache and read back only as written; the engines' places."""
import json
import os

import numpy as np
import pytest

from product_interactions.kernels import calibrate
from product_interactions.kernels.arrays import ENGINES, NUMPY
from product_interactions.kernels.arrays.rates import CUDA_RATES, keep_rates, stored_rates


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    monkeypatch.setenv("PRODUCT_INTERACTIONS_CACHE", str(root))
    NUMPY.forget_rates()
    yield root
    NUMPY.forget_rates()


def test_a_calibration_is_kept_and_priced_by_from_then_on(cache):
    measured = calibrate(np.zeros(1))
    assert measured.origin.startswith("calibrated") and measured.origin.endswith("on cpu")
    for name in ("call", "bandwidth", "gemm64", "gemm32", "loop"):
        assert 0 < getattr(measured, name) < 1e18
    assert measured.loop_scan_width == NUMPY.rates.loop_scan_width            # the fields it does not measure
    assert NUMPY.rates_for(np.zeros(3)) == measured
    assert (cache / "rates" / "numpy-cpu.json").is_file()


def test_the_compiled_loop_is_timed_on_the_cyclic_group_s_table(monkeypatch):
    """`calibrate` times the loop (off the CPU) on e_i e_j = e_(i + j mod 16): its product is the cyclic
    convolution, and the rates it derives are FLOPs per second (3 a term and row) and seconds per entry."""
    torch = pytest.importorskip("torch")
    from product_interactions.kernels.arrays import TORCH
    from product_interactions.kernels.arrays import calibrate as calibration
    level, rng = calibration.cyclic_level(), np.random.default_rng(0)
    x, y = rng.standard_normal((5, 16)), rng.standard_normal((5, 16))
    expected = np.real(np.fft.ifft(np.fft.fft(x) * np.fft.fft(y)))
    np.testing.assert_allclose(TORCH.compiled_loop(level, torch.tensor(x), torch.tensor(y)), expected, atol=1e-12)
    seconds, original = [], calibration._seconds
    monkeypatch.setattr(calibration, "_seconds", lambda *arguments: seconds.append(original(*arguments)) or seconds[-1])
    single, double = torch.zeros(1), torch.zeros(1, dtype=torch.float64)
    measured = calibration._compiled_rates(TORCH, single, double, 64,
                                           lambda shape, kind=single: TORCH.convert(rng.standard_normal(shape), kind))
    assert measured == {"compiled32": 3 * 256 * 64 / seconds[0], "compiled64": 3 * 256 * 64 / seconds[1],
                        "compiled_call": seconds[2]}


def test_a_calibration_that_measured_the_loop_keeps_its_rates(cache, monkeypatch):
    """Off the CPU the loop's rates are measured too; they are kept, read back and priced by (a file holds all
    three or none of them)."""
    from product_interactions.kernels.arrays import calibrate as calibration
    loop = {"compiled32": 2e12, "compiled64": 1e12, "compiled_call": 4e-5}
    original = calibration.measure
    monkeypatch.setattr(calibration, "measure", lambda engine, like: {**original(engine, like), **loop})
    measured = calibrate(np.zeros(1))
    assert (measured.compiled32, measured.compiled64, measured.compiled_call) == (2e12, 1e12, 4e-5)
    assert NUMPY.rates_for(np.zeros(1)) == measured
    path = cache / "rates" / "numpy-cpu.json"
    data = json.loads(path.read_text())
    assert {name: data[name] for name in loop} == loop
    path.write_text(json.dumps({key: value for key, value in data.items() if key != "compiled_call"}))
    assert stored_rates("numpy", "cpu", NUMPY.rates) is None


def test_off_the_cpu_a_read_s_cost_is_measured_and_kept(cache, monkeypatch):
    """A calibration off the CPU measures what a read back to the host costs (`Rates.host_read`, which decides
    where steps read to check values); it is kept and read back, and a file with only part of a group is refused.
    On the CPU a read waits for nothing queued: the shipped 0 stays."""
    from product_interactions.kernels.arrays import calibrate as calibration
    assert "host_read" not in calibration.measure(NUMPY, np.zeros(1)) and calibrate(np.zeros(1)).host_read == 0
    original = calibration.measure
    monkeypatch.setattr(calibration, "measure", lambda engine, like: {**original(engine, like), "host_read": 2e-5})
    NUMPY.forget_rates()
    measured = calibrate(np.zeros(1))
    assert measured.host_read == 2e-5 and NUMPY.rates_for(np.zeros(1)) == measured
    path = cache / "rates" / "numpy-cpu.json"
    data = json.loads(path.read_text())
    assert data["host_read"] == 2e-5
    path.write_text(json.dumps({**data, "compiled32": 1e12}))
    assert stored_rates("numpy", "cpu", NUMPY.rates) is None


def test_a_read_s_cost_is_its_round_trip_and_the_launches_the_device_idles_through(monkeypatch):
    torch = pytest.importorskip("torch")
    from product_interactions.kernels.arrays import TORCH
    from product_interactions.kernels.arrays.calibrate import IDLE_CALLS, host_read
    reads = []
    measured = host_read(TORCH, torch.zeros(16), 1e-3)
    assert IDLE_CALLS * 1e-3 <= measured < IDLE_CALLS * 1e-3 + 0.1
    original = TORCH.value
    monkeypatch.setattr(TORCH, "value", lambda a: reads.append(a) or original(a))
    host_read(TORCH, torch.zeros(16), 1e-6)
    assert len(reads) > 1 and all(a.shape == () for a in reads)     # a warm-up and the timed runs, one number each


@pytest.mark.parametrize("tamper", ["extra key", "negative", "infinite", "other engine", "not json", "a string"])
def test_a_kept_file_is_used_only_exactly_as_written(cache, tamper):
    keep_rates("numpy", "cpu", NUMPY.rates)
    path = cache / "rates" / "numpy-cpu.json"
    data = json.loads(path.read_text())
    assert stored_rates("numpy", "cpu", NUMPY.rates) == NUMPY.rates
    changed = {"extra key": {**data, "compiled64": 1.0}, "negative": {**data, "call": -1.0},
               "infinite": {**data, "bandwidth": "Infinity"}, "other engine": {**data, "engine": "torch"},
               "a string": {**data, "gemm64": "3e9"}}.get(tamper)
    path.write_text("{not json" if changed is None else json.dumps(changed).replace('"Infinity"', "Infinity"))
    assert stored_rates("numpy", "cpu", NUMPY.rates) is None
    assert NUMPY.rates_for(np.zeros(1)) is NUMPY.rates


def test_a_kept_file_others_may_write_is_not_trusted(cache):
    keep_rates("numpy", "cpu", NUMPY.rates)
    os.chmod(cache / "rates" / "numpy-cpu.json", 0o666)
    assert stored_rates("numpy", "cpu") is None


def test_without_a_disk_cache_calibration_still_returns_its_rates(monkeypatch):
    monkeypatch.setenv("PRODUCT_INTERACTIONS_CACHE", "off")
    assert calibrate(np.zeros(1)).origin.startswith("calibrated")
    NUMPY.forget_rates()
    assert NUMPY.rates_for(np.zeros(1)) is NUMPY.rates


def test_each_engine_names_its_place_and_ships_cuda_rates_for_a_gpu():
    torch = pytest.importorskip("torch")
    jnp = pytest.importorskip("jax.numpy")
    assert NUMPY.place(np.zeros(1)) == ENGINES["torch"].place(torch.zeros(1)) == ENGINES["jax"].place(
        jnp.zeros(1)) == "cpu"
    assert ENGINES["torch"].shipped_rates("cuda/NVIDIA H200") is CUDA_RATES
    jax_gpu = ENGINES["jax"].shipped_rates("gpu/NVIDIA H200")
    assert jax_gpu.bandwidth == CUDA_RATES.bandwidth and jax_gpu.chunked_scan_length is None   # JAX's own scan
    assert jax_gpu.compiled32 == jax_gpu.compiled64 == 0.0                   # JAX arrays cannot enter the loop
    assert CUDA_RATES.compiled32 > 0 and CUDA_RATES.compiled64 > 0             # torch's: a Triton kernel there
