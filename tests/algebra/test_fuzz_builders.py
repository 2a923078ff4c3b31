"""Fuzzing the builders with arguments of every kind: each call returns a sound algebra or raises a
ValueError / TypeError whose message starts with the name of an argument."""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from product_interactions.algebra import (Algebra, clebsch_gordan, clifford, diagonal, gaunt, matrix_algebra, position,
                                          tensor_algebra, translation)

# small ints are built; ints past algebra.limits.MAX_ENTRIES must be refused at once (no builder may loop over them)
INTS = st.one_of(st.integers(-3, 5), st.integers(2**21, 10**30), st.integers(-(10**30), -(2**21)))
HASHABLE = st.one_of(INTS, st.booleans(), st.none(), st.floats(allow_nan=True), st.text(max_size=5))
ANYTHING = st.one_of(HASHABLE, st.lists(st.integers(0, 3), max_size=3))

BUILDERS = {
    "diagonal": (diagonal, ["n"]), "position": (position, ["n"]), "translation": (translation, ["n", "cyclic"]),
    "tensor_algebra": (tensor_algebra, ["dim", "degree"]), "clifford": (clifford, ["p", "q", "r"]),
    "matrix_algebra": (matrix_algebra, ["n"]), "clebsch_gordan": (clebsch_gordan, ["lmax", "parity"]),
    "gaunt": (gaunt, ["lmax"]),
    "from_function": (lambda dim, k: Algebra.from_function(dim, lambda i, j: {k: 1}), ["dim", "k"]),
    "from_structure_constants": (lambda i, c: Algebra.from_structure_constants({(i, i): {i: c}}), ["i", "c"]),
}


def _arguments(name):
    _, names = BUILDERS[name]
    return st.tuples(*[st.one_of(INTS, HASHABLE if n in ("k", "i") else ANYTHING)
                       for n in names])


@settings(max_examples=150, deadline=2000, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(BUILDERS)).flatmap(lambda name: st.tuples(st.just(name), _arguments(name))))
def test_builders_return_sound_algebras_or_clear_errors(call):
    name, arguments = call
    build, names = BUILDERS[name]
    try:
        A = build(*arguments)
    except (ValueError, TypeError) as error:
        message = str(error)
        assert any(message.startswith(f"{n}") or f"{n}:" in message or f"{n}," in message
                   for n in names + ["lam", "basis", "coefficient"]), (name, arguments, message)
        return
    assert isinstance(A, Algebra) and A.dim >= 1 and A.nnz >= 0
    assert A.index(A.label(A.dim - 1)) == A.dim - 1
    if A.nnz <= 4096:
        assert len(A.entries()) == A.nnz
