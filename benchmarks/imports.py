"""Import time of the package in a fresh interpreter, beside numpy's and sympy's in the same run.

    python benchmarks/imports.py [--repeats 7]

Each statement runs in a new process, interleaved with the others so that load affects all alike; the time is
the median wall time minus that of an interpreter that imports nothing.  Targets (issue 19): importing
``product_interactions.algebra`` takes at most 0.5 s; building a first algebra pays for sympy and numpy, the
floor of exact arithmetic, and for nothing else (compare the last columns).
"""
from __future__ import annotations

import subprocess
import sys
import time

import numpy as np

from timing import parse_arguments

STATEMENTS = {
    "import numpy": "import numpy",
    "import sympy (imports numpy)": "import sympy",
    "import product_interactions.algebra": "import product_interactions.algebra",
    "... and build quaternions()": "from product_interactions.algebra import quaternions; quaternions()",
    "import product_interactions.kernels": "import product_interactions.kernels",
    "import product_interactions.interactions": "import product_interactions.interactions",
}
#: Seconds allowed for importing the algebra package (issue 19).
ALGEBRA_TARGET = 0.5


def _seconds(statement: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], check=True)
    return time.perf_counter() - start


def main(argv=None) -> None:
    repeats = parse_arguments(__doc__.splitlines()[0], argv).repeats
    samples = {name: [] for name in ["(empty interpreter)", *STATEMENTS]}
    for _ in range(repeats):
        samples["(empty interpreter)"].append(_seconds("pass"))
        for name, statement in STATEMENTS.items():
            samples[name].append(_seconds(statement))
    empty = float(np.median(samples.pop("(empty interpreter)")))
    cost = {name: float(np.median(times)) - empty for name, times in samples.items()}
    print(f"interpreter start-up: {empty:.3f} s (subtracted below)\n")
    print("| statement | seconds | / import numpy | / import sympy |")
    print("| --- | --- | --- | --- |")
    for name, seconds in cost.items():
        print(f"| {name} | {seconds:.3f} | {seconds / cost['import numpy']:.2f} | "
              f"{seconds / cost['import sympy (imports numpy)']:.2f} |")
    algebra = cost["import product_interactions.algebra"]
    verdict = "ok" if algebra <= ALGEBRA_TARGET else "MISSED"
    print(f"\nimport product_interactions.algebra: {algebra:.3f} s, target <= {ALGEBRA_TARGET} s: {verdict}")


if __name__ == "__main__":
    main()
