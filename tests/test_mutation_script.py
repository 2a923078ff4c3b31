"""benchmarks/mutation.py (issue 39): the mutants it makes and the source it writes for each, its seeded samples,
and its list of equivalent mutants, each of which must still name a mutant of its module (ids are line and column:
an edit above an entry moves it)."""
import doctest
import importlib.util
import pathlib
import sys

import pytest

_PATH = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "mutation.py"
_SPEC = importlib.util.spec_from_file_location("mutation", _PATH)
mutation = importlib.util.module_from_spec(_SPEC)
sys.modules.setdefault("mutation", mutation)          # its dataclasses look their module up by name
_SPEC.loader.exec_module(mutation)

SOURCE = '''def f(a, b):
    """Never mutated."""
    if a < b and not a:
        return -a + 2 * b
    return a is None
'''

#: Every mutant of SOURCE, by hand: its id and its mutated function's lines 3 to 5 (`ast.unparse` drops nothing
#: else of this source).
EXPECTED = {
    "3:7:and->or": ("if a < b or not a:", "return -a + 2 * b", "return a is None"),
    "3:7:<-><=@0": ("if a <= b and (not a):", "return -a + 2 * b", "return a is None"),
    "3:17:drop-not": ("if a < b and a:", "return -a + 2 * b", "return a is None"),
    "4:8:return-None": ("if a < b and (not a):", "return None", "return a is None"),
    "4:15:+->-": ("if a < b and (not a):", "return -a - 2 * b", "return a is None"),
    "4:15:drop-minus": ("if a < b and (not a):", "return a + 2 * b", "return a is None"),
    "4:20:*->/": ("if a < b and (not a):", "return -a + 2 / b", "return a is None"),
    "4:20:2->+1": ("if a < b and (not a):", "return -a + 3 * b", "return a is None"),
    "5:4:return-None": ("if a < b and (not a):", "return -a + 2 * b", "return None"),
    "5:11:is->is-not@0": ("if a < b and (not a):", "return -a + 2 * b", "return a is not None"),
}


def test_its_docstring_examples_run():
    assert doctest.testmod(mutation).failed == 0


def test_every_mutant_of_a_small_source_is_made_once_and_written_as_named():
    found = mutation.mutants(SOURCE)
    assert sorted(m.id for m in found) == sorted(EXPECTED)
    for mutant in found:
        lines = [line.strip() for line in mutation.mutated_source(SOURCE, mutant).splitlines()]
        assert tuple(lines[2:5]) == EXPECTED[mutant.id], mutant.id
        assert lines[1] == '"""Never mutated."""'


def test_a_seeded_sample_is_the_same_each_time_in_source_order_and_another_seed_differs():
    every = mutation.mutants("\n".join(f"x{n} = {n} * y + {n}" for n in range(30)))
    first, again = (mutation.chosen(every, sample=12, seed=3) for _ in range(2))
    assert [m.id for m in first] == [m.id for m in again] and len(first) == 12
    assert [m.index for m in first] == sorted(m.index for m in first)
    assert {m.id for m in first} <= {m.id for m in every}
    assert [m.id for m in mutation.chosen(every, sample=12, seed=4)] != [m.id for m in first]


def _entries():
    lines = mutation.EQUIVALENT_FILE.read_text().splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("line", _entries())
def test_each_equivalent_mutant_still_names_a_mutant_of_its_module_with_a_reason(line):
    entry, _, why = line.partition("#")
    module, mutant_id = entry.split()
    path = mutation.ROOT / module
    assert path.is_file(), f"{module} does not exist"
    assert mutant_id in {m.id for m in mutation.mutants(path.read_text())}, \
        f"{module} has no mutant {mutant_id} any more: find it again by its line and update the entry"
    assert why.strip(), "each entry says why the mutant is equivalent"
