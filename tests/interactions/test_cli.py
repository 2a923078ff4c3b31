"""The command line: ``product-interactions tour`` (or ``python -m product_interactions tour``), ``derive NAME`` and ``experiment NAME``."""
import json
import re

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


def test_derive_takes_a_size_and_simplifies():
    longer = derive("convolution", size=4)
    assert len(longer) == 1 + 4 and longer[1] == "z_{0,0} = K_{0,0,0}*x_{0,0} + K_{1,0,0}*x_{3,0}"
    assert len(derive("gating", size=1)) == 1 + 2                     # one step, two channels
    plain, simple = derive("attention"), derive("attention", simplify=True)
    assert len(plain) == len(simple) and sum(map(len, simple)) < sum(map(len, plain)) / 2
    import sympy
    names = {}
    for before, after in zip(plain[1:], simple[1:]):                # the same function, at a random point
        left, right = (sympy.parse_expr(line.split(" = ")[1].replace("{", "").replace("}", "").replace(",", "_"))
                       for line in (before, after))
        point = {symbol: names.setdefault(symbol, 0.1 * (len(names) % 7) - 0.3) for symbol in left.free_symbols}
        assert abs(float(left.subs(point)) - float(right.subs(point))) < 1e-12
    for bad in (0, 5, True, 2.0):
        with pytest.raises(ValueError, match="size: expected an int from 1 to 4"):
            derive("gating", size=bad)
    with pytest.raises(ValueError, match="size: the convolution's filter has 2 taps"):
        derive("convolution", size=1)


def test_help_shows_examples_and_exit_codes_and_bad_sizes_are_usage_errors(capsys):
    for command in ("tour", "derive", "experiment"):
        with pytest.raises(SystemExit) as exit_code:
            main([command, "--help"])
        text = capsys.readouterr().out
        assert exit_code.value.code == 0 and f"product-interactions {command}" in text.split("examples:")[1]
        assert "exit codes:" in text and "``" not in text
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "``" not in capsys.readouterr().out
    for arguments in (["derive", "gating", "--size", "9"], ["derive", "convolution", "--size", "1"]):
        with pytest.raises(SystemExit) as exit_code:
            main(arguments)
        assert exit_code.value.code == 2 and "--size" in capsys.readouterr().err


@pytest.mark.parametrize("command, codes", [("tour", ["0", "1", "2", "130"]), ("derive", ["0", "2", "130"]),
                                            ("experiment", ["0", "1", "2", "130"]), (None, ["0", "1", "2", "130"])])
def test_each_help_lists_the_exit_codes_its_command_can_return(command, codes, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"] if command else ["--help"])
    listed = capsys.readouterr().out.split("exit codes:\n")[1]
    assert re.findall(r"^  (\d+)  ", listed, flags=re.M) == codes
    assert ("tour's checks" in listed) == (command in ("tour", None))


def test_version(capsys):
    import product_interactions
    with pytest.raises(SystemExit) as exit_code:
        main(["--version"])
    assert exit_code.value.code == 0
    assert capsys.readouterr().out == f"product-interactions {product_interactions.__version__}\n"


PASSING = {"_algebra": {"quaternions_associative": True},
           "_attention_formula": {"attention_order": 3, "attention_formula_matches": True},
           "_attention_numeric": {"attention_max_error": 0.0}, "_convolution": {"convolution_derived": True},
           "_copy": {}}
FAILING = {"_algebra": {"quaternions_associative": False},
           "_attention_formula": {"attention_order": 3, "attention_formula_matches": False},
           "_attention_numeric": {"attention_max_error": 1e-3}, "_convolution": {"convolution_derived": False}}


@pytest.mark.parametrize("failing", [None, *sorted(FAILING)])
def test_tour_exits_1_when_any_check_fails(failing, monkeypatch, capsys):
    """Issue 39: each of the tour's checks replaced by one that fails (the others pass, all instantly): the tour
    says so and the command exits 1; with every check passing it exits 0."""
    from product_interactions.interactions import tour
    for name, figures in PASSING.items():
        result = FAILING[name] if name == failing else figures
        monkeypatch.setattr(tour, name, lambda *args, result=result: dict(result))
    assert main(["tour"]) == (0 if failing is None else 1)
    assert capsys.readouterr().out.rstrip().endswith(f"All checks passed: {failing is None}")
