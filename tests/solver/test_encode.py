"""The clause buffers: format, cardinality encodings and native/pure identity."""

from __future__ import annotations

import itertools
from array import array

import pycryptosat
import pytest

from olmkit._solver import And, AtMost, Conflict, Dependency, Mandatory, Not, Or, Prohibited, Variable, _encode, _pure
from olmkit._solver._problem import flatten

needs_native = pytest.mark.skipif("native" not in _encode.available(), reason="C accelerator not built")


def encode(variables, impl=None):
    impl = impl or _encode.get()
    p = flatten(variables)
    return impl.encode(p.n_vars, p.nodes, p.args, p.top)


def clauses_of(buf):
    out, cur = [], []
    for lit in buf:
        if lit:
            cur.append(lit)
        else:
            out.append(cur)
            cur = []
    assert not cur, "buffer must be zero-terminated"
    return out


def test_basic_clauses(implementation):
    """Each basic constraint is one clause guarded by its activation literal."""

    variables = [
        Variable("a", (Mandatory(), Dependency(("b", "c")))),
        Variable("b", (Prohibited(), Conflict("c"))),
        Variable("c", (Dependency(()),)),
    ]

    buf, top = encode(variables)

    assert "i" == memoryview(buf).format  # C ints: the pure array, or a view of the C encoder's buffer
    # activations: 4..8 for the five constraints
    assert [[-4, 1], [-5, -1, 2, 3], [-6, -2], [-7, -2, -3], [-8, -3]] == clauses_of(buf)
    assert 8 == top


@pytest.mark.parametrize("n", [0, 1, 2, 3])
@pytest.mark.parametrize("nested", [False, True])
def test_atmost_counts_exactly(implementation, n, nested):
    """AtMost(n) over four variables admits exactly the assignments with <= n true."""

    ids = ("w", "x", "y", "z")
    c = AtMost(n, ids)
    constraint = Not(Not(c)) if nested else c
    variables = [Variable("s", (constraint,))] + [Variable(i) for i in ids]
    buf, _ = encode(variables)
    act = len(variables) + 1
    for bits in itertools.product((False, True), repeat=4):
        solver = pycryptosat.Solver()
        solver.add_clauses(buf)
        assumptions = [act] + [(i + 2) if b else -(i + 2) for i, b in enumerate(bits)]
        sat, _ = solver.solve(assumptions)

        assert (sum(bits) <= n) == sat, bits


def test_counter_bounds(implementation):
    """The extras counter's output w allows at most w of its literals."""

    lits = array("i", [1, 2, 3])
    buf, outs, _ = _encode.get().encode_counter(4, lits)
    assert 3 == len(outs)
    for w in range(3):
        for bits in itertools.product((False, True), repeat=3):
            solver = pycryptosat.Solver()
            solver.add_clauses(buf)
            sat, _ = solver.solve([outs[w]] + [(i + 1) if b else -(i + 1) for i, b in enumerate(bits)])

            assert (sum(bits) <= w) == sat


@needs_native
def test_native_and_pure_buffers_identical():
    """Both implementations produce byte-identical clause buffers."""

    from olmkit._solver import _native

    variables = [
        Variable("a", (Mandatory(), Dependency(("b", "c")), AtMost(2, ("b", "c", "d")))),
        Variable("b", (Or((Dependency(("c",)), Not(Conflict("d")), And(()))), Or(()))),
        Variable("c", (AtMost(0, ("a", "d")), Not(AtMost(1, ("a", "b", "c"))))),
        Variable("d", (And((Prohibited(), Mandatory(), Dependency(()))),)),
    ]
    p = flatten(variables)
    native = _native.encode(p.n_vars, p.nodes, p.args, p.top)
    pure = _pure.encode(p.n_vars, p.nodes, p.args, p.top)

    assert pure[1] == native[1]
    assert pure[0].tobytes() == native[0].tobytes()
    assert _pure.encode_counter(9, array("i", [3, 1, 2])) == _native.encode_counter(9, array("i", [3, 1, 2]))


def test_implementation_is_reported():
    """The package says which implementation is active."""

    import olmkit._solver as solver

    assert solver.IMPLEMENTATION in ("native", "pure")
    assert _encode.IMPLEMENTATION in _encode.available()


@needs_native
@pytest.mark.parametrize("seed", range(6))
def test_native_search_after_its_compact_load_matches_pure(seed):
    """The C searcher keeps watch lists as shares of one block (moved out when they grow) and
    the clause starts in the consumed buffer's tail when they fit: same answers as the twin.

    Long dependencies make propagation move watches into full lists; the problems with
    ``Mandatory`` roots and repeated candidates have units and repeated literals (the
    starts fit in the tail), the others none.
    """
    import random

    from olmkit._solver import NotSatisfiable, solve

    rng = random.Random(seed)
    names = [f"v{i}" for i in range(60)]
    variables = []
    for i, name in enumerate(names):
        constraints: list = []
        if i < 3 and seed % 2 == 0:
            constraints.append(Mandatory())
        if i < 50:
            deps = rng.sample(names[i + 1 :], min(5, 59 - i)) if i < 59 else []
            if seed % 2 == 0 and deps:
                deps.append(deps[0])  # a repeated literal
            if deps:
                constraints.append(Dependency(tuple(deps)))
        if rng.random() < 0.3:
            constraints.append(Conflict(rng.choice(names)))
        if rng.random() < 0.2:
            constraints.append(AtMost(1, tuple(rng.sample(names, 4))))
        variables.append(Variable(name, tuple(constraints)))
    if seed % 2:
        variables[0] = Variable("v0", (*variables[0].constraints, Mandatory()))

    def answer(backend: str) -> object:
        try:
            return [v.id for v in solve(variables, backend=backend)]
        except NotSatisfiable as exc:
            return ("unsat", sorted(str(a.constraint) for a in exc.applied))

    assert answer("native") == answer("pure")
