"""A feature that needs an extra names it, in one line with its install command, and on the command line exits with
2 and no traceback.  A missing library is simulated in a fresh interpreter (``sys.modules[name] = None``)."""
import subprocess
import sys

import pytest

from product_interactions.extras import MissingExtra, require

RUN = """
import sys
sys.modules.update(dict.fromkeys({missing!r}))
{code}
"""
CLI = "from product_interactions.interactions.__main__ import main; sys.exit(main({argv!r}))"
DATA = ["sklearn", "mlxtend", "sktime"]


def without(missing: list, code: str) -> subprocess.CompletedProcess:
    """`code` run in a fresh interpreter where the modules `missing` cannot be imported."""
    return subprocess.run([sys.executable, "-c", RUN.format(missing=missing, code=code)], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("missing, argv, extra", [
    (DATA, ["experiment", "seq2tens", "--quick", "--engine", "numpy"], "experiments"),
    (DATA, ["experiment", "symmetry", "--quick", "--engine", "numpy"], "experiments"),
    (DATA, ["experiment", "dynamical", "--quick", "--engine", "numpy"], "experiments"),
    (["torch"], ["experiment", "copy", "--quick", "--engine", "torch"], "torch"),
    (["jax", "jaxlib"], ["experiment", "symmetry", "--quick", "--engine", "jax"], "jax")])
def test_the_command_line_names_the_missing_extra(missing, argv, extra):
    result = without(missing, CLI.format(argv=argv))
    last = result.stderr.strip().splitlines()[-1]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert last.startswith("product-interactions experiment: error: ")
    assert last.endswith(f'pip install "product-interactions[{extra}]"')


def test_to_torch_names_the_torch_extra():
    code = ("from product_interactions.interactions.architectures import gating\n"
            "try:\n    gating(channels=2).to_torch()\n"
            "except ImportError as error:\n    print(type(error).__name__, error)")
    result = without(["torch"], code)
    assert result.stdout.startswith("MissingExtra to_torch needs the torch extra (") and result.stdout.count("\n") == 1
    assert result.stdout.rstrip().endswith('pip install "product-interactions[torch]"')


def test_require_imports_or_names_the_extra():
    assert require("json", "experiments", "reading").dumps(1) == "1"
    with pytest.raises(MissingExtra, match=r'^reading x needs the experiments extra \(No module named '
                                           r'\'no_such_module\'\): pip install "product-interactions\[experiments\]"$'):
        require("no_such_module", "experiments", "reading x")
    assert issubclass(MissingExtra, ImportError)
