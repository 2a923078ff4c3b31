"""The command line: ``python -m interactions tour`` and ``derive NAME``."""
import pytest

from interactions.__main__ import main
from interactions.derive import SMALL, derive


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
    assert "Hamilton" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["derive", "octonions"])
    with pytest.raises(ValueError, match="name: expected one of"):
        derive("octonions")
