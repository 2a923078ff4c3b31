"""The command line: ``product-interactions tour`` (or ``python -m product_interactions tour``), ``derive NAME`` and ``experiment NAME``."""
import json

import pytest

from product_interactions.interactions.__main__ import main
from product_interactions.interactions.derive import SMALL, derive


@pytest.mark.parametrize("name", sorted(set(SMALL) - {"se3_attention"}))    # se3_attention: ~5 s of sympy
def test_derive_reports_the_model_order_and_nonzero_components(name):
    lines = derive(name)
    assert lines[0] == f"{name}: self-interaction order {SMALL[name]().order()}"
    assert len(lines) > 1 and all(line.startswith("z_{") and " = " in line for line in lines[1:])


def test_derive_convolution_is_the_circular_convolution():
    assert derive("convolution")[1:] == ["z_{0,0} = K_{0,0,0}*x_{0,0} + K_{1,0,0}*x_{2,0}",
                                         "z_{1,0} = K_{0,0,0}*x_{1,0} + K_{1,0,0}*x_{0,0}",
                                         "z_{2,0} = K_{0,0,0}*x_{2,0} + K_{1,0,0}*x_{1,0}"]


def test_command_line(capsys):
    assert main(["derive", "gating", "--latex"]) == 0
    assert "\\operatorname{sigmoid}" in capsys.readouterr().out
    assert main(["tour"]) == 0
    out = capsys.readouterr().out
    assert "equals the textbook" in out and ": True" in out and "a circular convolution (True)" in out
    assert "copy (quick, seed 0)" in out and out.rstrip().endswith("All checks passed: True")
    with pytest.raises(SystemExit):
        main(["derive", "octonions"])
    with pytest.raises(ValueError, match="name: expected one of"):
        derive("octonions")


def test_experiment_command_prints_the_table_and_writes_json(tmp_path, capsys):
    out = tmp_path / "symmetry.json"
    assert main(["experiment", "symmetry", "--quick", "--seed", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    assert result["experiment"] == "symmetry" and result["setting"] == "quick" and result["seed"] == 1
    assert [row["name"] for row in result["rows"]] == ["exact constraint", "no constraint", "regulariser"]
    assert all(row["name"] in printed for row in result["rows"]) and f"written to {out}" in printed
    assert set(result["timings"]) and set(result["config"])
    with pytest.raises(SystemExit):
        main(["experiment", "cifar"])
