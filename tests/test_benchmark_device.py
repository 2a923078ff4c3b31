"""benchmarks/device.py, the rows `gpu.sh` measures on a lent GPU: a part that fails costs its own rows only (a
row names its error and the other parts still run), and the rows stream out part by part."""
import pathlib
import sys

import pytest

pytest.importorskip("torch")
ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_a_failing_part_gives_a_row_naming_its_error_and_the_others_still_run(monkeypatch, capsys):
    monkeypatch.setattr(sys, "path", [str(ROOT), *sys.path])     # undone after: benchmarks.engines adds the root too
    import benchmarks.device as device
    parts = ["_products", "_attention", "_scans", "_ls2t", "_compiled", "_dense_peak", "_copy"]
    for name in parts:
        monkeypatch.setattr(device, name, lambda torch, place, scale, repeats, name=name: [f"row of {name}"])

    def _scans(torch, place, scale, repeats):
        raise RuntimeError("a part's own failure")
    monkeypatch.setattr(device, "_scans", _scans)
    rows = device.device_rows("cpu", repeats=1)
    assert next(rows).startswith("torch ")                  # streamed: the first row before any part has run
    assert list(rows) == ["row of _products", "row of _attention",
                          "| scans failed: RuntimeError: a part's own failure | | | FAILED |", "row of _ls2t",
                          "row of _compiled", "row of _dense_peak", "row of _copy"]
    assert "a part's own failure" in capsys.readouterr().err          # its traceback
