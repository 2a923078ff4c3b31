"""Mutation testing of chosen modules with the tests that cover them (issue 39): slow, not in CI.

    python benchmarks/mutation.py algebra/identities.py                  # a preset's tests (see PRESETS)
    python benchmarks/mutation.py kernels/scans/chunked.py --tests tests/ssm/test_ssm_linear_scan.py
    python benchmarks/mutation.py algebra/identities.py --list           # the mutants, without running
    python benchmarks/mutation.py algebra/identities.py --only 186:11:and->or 187:4:return-None
    python benchmarks/mutation.py kernels/scans/seq2tens.py --sample 40  # a seeded random 40 of its mutants
    python benchmarks/mutation.py --presets                              # every preset module in turn

(`--tests` takes paths and node ids, not pytest options such as `-k`: name a test as path::function.)

Run from the repository root with the project installed editable (the mutant is written over the module in this
checkout, and restored afterwards, also on Ctrl-C; run it in a worktree of your own, never where someone is
testing).  One mutant at a time: the module is parsed with `ast`, one classic mutation is applied (an arithmetic
operator swapped, a comparison flipped or loosened, `and`/`or` swapped, a `not` or a unary minus dropped, a number
changed by one, a boolean negated, `None` for a returned value), the module is written back by `ast.unparse`
(docstrings kept; annotations are never mutated: under ``from __future__ import annotations`` they change
nothing), and the module's own docstring examples (its node of ``tests/test_doctests.py``), then the chosen tests,
run with ``pytest -x`` under a timeout.  A mutant is *killed* when the tests fail (or time out), *survived* when
they pass.  The unmutated module, unparsed the same way, must pass first.

Mutmut was the first choice (issue 39 names it); its 3.x runs the whole suite to map tests to functions and
rewrites every function of a package into a trampoline under ``mutants/``, which this layout (three root folders
installed under one namespace) and a 2-core machine shared with others did not fit.  The mutations here are
mutmut's classic ones, without its test-mapping.

Equivalent mutants (no input can tell them from the module) are listed in ``benchmarks/mutation_equivalent.txt``,
one a line: ``module-path mutant-id  # why``.  They are reported apart and left out of the kill ratio,
killed / (mutants - equivalent).  A mutant id is ``line:column:what`` (``~n`` added where sites share it), from the
unmutated source.
"""
from __future__ import annotations

import argparse
import ast
import os
import pathlib
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parent.parent
EQUIVALENT_FILE = ROOT / "benchmarks" / "mutation_equivalent.txt"

#: Modules and the narrow test selections that cover them (pytest arguments).
PRESETS: dict[str, list[str]] = {
    "algebra/identities.py": ["tests/algebra/test_identity_queries.py", "tests/algebra/test_algebra.py"],
    "algebra/numeric_laws.py": ["tests/algebra/test_numeric_algebras.py", "tests/algebra/test_identity_queries.py"],
    "kernels/scans/chunked.py": ["tests/ssm/test_ssm_linear_scan.py", "tests/ssm/test_ssm_engines.py"],
    "kernels/scans/recurrence.py": ["tests/ssm/test_ssm_linear_scan.py", "tests/ssm/test_ssm_engines.py"],
}

BINARY = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div,
          ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult, ast.MatMult: ast.Mult, ast.LShift: ast.RShift,
          ast.RShift: ast.LShift, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd}
COMPARE = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
           ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}
SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
          ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|", ast.Lt: "<",
          ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is",
          ast.IsNot: "is-not", ast.In: "in", ast.NotIn: "not-in", ast.And: "and", ast.Or: "or"}


@dataclass(frozen=True)
class Mutant:
    index: int          # the site's place in a walk of the tree (the walk of a fresh parse finds it again)
    id: str             # line:column:what, stable across runs
    line: int


def _annotations(tree: ast.AST) -> set[int]:
    """ids of the nodes inside annotations (never mutated)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        parts: list[ast.AST | None] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            parts.append(node.returns)
        elif isinstance(node, ast.arg):
            parts.append(node.annotation)
        elif isinstance(node, ast.AnnAssign):
            parts.append(node.annotation)
        for part in parts:
            if part is not None:
                skip.update(id(n) for n in ast.walk(part))
    return skip


def _docstrings(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
    return skip


def _sites(tree: ast.AST) -> Iterator[tuple[ast.AST, str, int]]:
    """(node, what, variant) for every mutation of the tree, in a fixed order."""
    skip = _annotations(tree) | _docstrings(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in BINARY:
            yield node, f"{SYMBOL[type(node.op)]}->{SYMBOL[BINARY[type(node.op)]]}", 0
        elif isinstance(node, ast.Compare):
            for position, op in enumerate(node.ops):
                if type(op) in COMPARE:
                    yield node, f"{SYMBOL[type(op)]}->{SYMBOL[COMPARE[type(op)]]}@{position}", position
        elif isinstance(node, ast.BoolOp):
            yield node, f"{SYMBOL[type(node.op)]}->{'or' if isinstance(node.op, ast.And) else 'and'}", 0
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
            yield node, f"drop-{'not' if isinstance(node.op, ast.Not) else 'minus'}", 0
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float, bool):
            yield node, "negate-bool" if isinstance(node.value, bool) else f"{node.value!r}->+1", 0
        elif isinstance(node, ast.Return) and node.value is not None and not (
                isinstance(node.value, ast.Constant) and node.value.value is None):
            yield node, "return-None", 0


def _apply(node: ast.AST, what: str, variant: int) -> ast.AST | None:
    """Mutate `node` in place; returns a replacement node where the node itself is replaced."""
    if isinstance(node, (ast.BinOp, ast.AugAssign)):
        node.op = BINARY[type(node.op)]()
    elif isinstance(node, ast.Compare):
        node.ops[variant] = COMPARE[type(node.ops[variant])]()
    elif isinstance(node, ast.BoolOp):
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif isinstance(node, ast.UnaryOp):
        return node.operand
    elif isinstance(node, ast.Constant):
        node.value = (not node.value) if isinstance(node.value, bool) else node.value + 1
    elif isinstance(node, ast.Return):
        node.value = ast.Constant(None)
    return None


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.AST, replacement: ast.AST) -> None:
        self.target, self.replacement = target, replacement

    def visit(self, node: ast.AST) -> ast.AST:
        return self.replacement if node is self.target else self.generic_visit(node)


def mutants(source: str) -> list[Mutant]:
    """Every mutant of `source`; where sites share line, column and mutation (the nested operations of
    ``2 * a * b``), the second and later take ``~2``, ``~3``, ... in walk order, so that each id names one mutant.

    >>> [m.id for m in mutants("x = 2 * a * b")]
    ['1:4:*->/', '1:4:*->/~2', '1:4:2->+1']
    """
    tree, found, seen = ast.parse(source), [], {}
    for i, (node, what, _) in enumerate(_sites(tree)):
        key = f"{getattr(node, 'lineno', 0)}:{getattr(node, 'col_offset', 0)}:{what}"
        seen[key] = seen.get(key, 0) + 1
        found.append(Mutant(i, key if seen[key] == 1 else f"{key}~{seen[key]}", getattr(node, "lineno", 0)))
    return found


def mutated_source(source: str, mutant: Mutant) -> str:
    tree = ast.parse(source)
    node, what, variant = list(_sites(tree))[mutant.index]
    replacement = _apply(node, what, variant)
    if replacement is not None:
        tree = _Replace(node, replacement).visit(tree)
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def equivalent(module: str) -> dict[str, str]:
    """{mutant id: why} for `module` from `EQUIVALENT_FILE`."""
    known: dict[str, str] = {}
    if EQUIVALENT_FILE.exists():
        for line in EQUIVALENT_FILE.read_text().splitlines():
            entry, _, why = line.partition("#")
            fields = entry.split()
            if len(fields) == 2 and fields[0] == module:
                known[fields[1]] = why.strip()
    return known


def run_tests(tests: list[str], timeout: float) -> str:
    """'passed', 'failed' or 'timeout' for the test selection on the module as it is on disk now."""
    environment = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--no-header", *tests]
    try:
        done = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, timeout=timeout,
                              start_new_session=True)
    except subprocess.TimeoutExpired:
        return "timeout"
    return "passed" if done.returncode == 0 else "failed"


class Restored:
    """The module's file, restored on exit, on an exception and on SIGTERM/SIGINT."""

    def __init__(self, path: pathlib.Path) -> None:
        self.path, self.original = path, path.read_bytes()
        self.stat = path.stat()

    def write(self, text: str, serial: int) -> None:
        self.path.write_text(text)
        stamp = self.stat.st_mtime + 100 + serial          # never the time a cached .pyc of the module records
        os.utime(self.path, (stamp, stamp))

    def __enter__(self) -> Restored:
        self.handlers = {s: signal.signal(s, self._stop) for s in (signal.SIGTERM,)}
        return self

    def _stop(self, signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    def __exit__(self, *exc: object) -> None:
        self.path.write_bytes(self.original)
        for s, handler in self.handlers.items():
            signal.signal(s, handler)


def chosen(every: list[Mutant], only: list[str] | None = None, limit: int | None = None,
           sample: int | None = None, seed: int = 0) -> list[Mutant]:
    """The mutants to run: those named in `only`, the first `limit`, or a seeded random `sample` (in source order).

    >>> every = [Mutant(i, f"{i}:0:x", i) for i in range(10)]
    >>> [m.index for m in chosen(every, sample=3, seed=1)] == [m.index for m in chosen(every, sample=3, seed=1)]
    True
    >>> len(chosen(every, sample=30)), [m.id for m in chosen(every, only=["4:0:x"])]
    (10, ['4:0:x'])
    """
    if only is not None:
        every = [m for m in every if m.id in only]
    if limit is not None:
        every = every[:limit]
    if sample is not None and sample < len(every):
        every = sorted(random.Random(seed).sample(every, sample), key=lambda m: m.index)
    return every


def doctests_of(module: str) -> str:
    """The node of tests/test_doctests.py that runs `module`'s docstring examples.

    >>> doctests_of("kernels/scans/recurrence.py")
    'tests/test_doctests.py::test_docstring_examples[product_interactions.kernels.scans.recurrence]'
    >>> doctests_of("kernels/__init__.py")
    'tests/test_doctests.py::test_docstring_examples[product_interactions.kernels]'
    """
    parts = pathlib.PurePosixPath(module).with_suffix("").parts
    name = ".".join(("product_interactions",) + (parts[:-1] if parts[-1] == "__init__" else parts))
    return f"tests/test_doctests.py::test_docstring_examples[{name}]"


def mutate_module(module: str, tests: list[str], timeout: float, only: list[str] | None = None,
                  limit: int | None = None, sample: int | None = None,
                  seed: int = 0) -> dict[str, list[tuple[Mutant, str]]]:
    """Each chosen mutant of `module` against `tests` and the module's own docstring examples."""
    path = ROOT / module
    tests = [doctests_of(module), *tests]
    source = path.read_text()
    every = chosen(mutants(source), only, limit, sample, seed)
    known = equivalent(module)
    lines = source.splitlines()
    outcome: dict[str, list[tuple[Mutant, str]]] = {"killed": [], "survived": [], "equivalent": [], "timeout": []}
    with Restored(path) as file:
        file.write(ast.unparse(ast.parse(source)) + "\n", 0)
        start = time.perf_counter()
        baseline = run_tests(tests, timeout * 3)
        if baseline != "passed":
            raise SystemExit(f"{module}: the tests {tests} do not pass on the unmutated module ({baseline})")
        print(f"{module}: {len(every)} mutants; the tests take {time.perf_counter() - start:.1f} s unmutated",
              flush=True)
        for serial, mutant in enumerate(every, 1):
            file.write(mutated_source(source, mutant), serial)
            result = run_tests(tests, timeout)
            kind = "killed" if result == "failed" else "timeout" if result == "timeout" else "survived"
            if kind == "survived" and mutant.id in known:
                kind = "equivalent"
            outcome[kind].append((mutant, lines[mutant.line - 1].strip() if mutant.line else ""))
            print(f"  [{serial}/{len(every)}] {kind:10} {mutant.id}", flush=True)
    return outcome


def report(module: str, outcome: dict[str, list[tuple[Mutant, str]]]) -> str:
    killed = len(outcome["killed"]) + len(outcome["timeout"])
    counted = killed + len(outcome["survived"])
    ratio = f"{100 * killed / counted:.1f} %" if counted else "n/a"
    out = [f"{module}: kill ratio {ratio} ({killed} killed of {counted}; {len(outcome['timeout'])} by timeout; "
           f"{len(outcome['equivalent'])} equivalent left out)"]
    known = equivalent(module)
    out += [f"  survived   {m.id:32} line {m.line}: {text}" for m, text in outcome["survived"]]
    out += [f"  equivalent {m.id:32} {known[m.id]}" for m, _ in outcome["equivalent"]]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("module", nargs="?", help="a module's path from the repository root, e.g. "
                                                  "algebra/identities.py")
    parser.add_argument("--tests", nargs="+", help="pytest arguments (default: the module's preset)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per mutant's test run (default 120)")
    parser.add_argument("--list", action="store_true", help="list the mutants (those chosen by --only, --limit or "
                                                             "--sample) and stop")
    parser.add_argument("--only", metavar="ID", nargs="+", help="run these mutants only")
    parser.add_argument("--limit", type=int, help="run the first N mutants only")
    parser.add_argument("--sample", type=int, help="run a seeded random N of the mutants (the ratio is then an "
                                                   "estimate: report the sample's size beside it)")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    parser.add_argument("--presets", action="store_true", help="every module of PRESETS in turn")
    arguments = parser.parse_args(argv)
    modules = list(PRESETS) if arguments.presets else [arguments.module] if arguments.module else []
    if not modules:
        parser.error("give a module or --presets")
    reports = []
    for module in modules:
        if not (ROOT / module).is_file():
            parser.error(f"module: no file {module} under {ROOT}")
        if arguments.list:
            for mutant in chosen(mutants((ROOT / module).read_text()), arguments.only, arguments.limit,
                                 arguments.sample, arguments.seed):
                print(f"{module} {mutant.id}")
            continue
        tests = arguments.tests or PRESETS.get(module)
        if not tests:
            parser.error(f"--tests: {module} has no preset; name the tests that cover it")
        outcome = mutate_module(module, tests, arguments.timeout, arguments.only, arguments.limit,
                                arguments.sample, arguments.seed)
        reports.append(report(module, outcome))
        print(reports[-1], flush=True)
    if len(reports) > 1:
        print("\n" + "\n".join(reports))
    return 0


if __name__ == "__main__":
    sys.exit(main())
