"""Behaviour of solve(): upstream OLM's solver semantics, errors and extension points."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from olmkit._solver import (
    And,
    AppliedConstraint,
    AtMost,
    Conflict,
    Dependency,
    DuplicateIdentifier,
    InvalidInput,
    Mandatory,
    Not,
    NotSatisfiable,
    Or,
    Prohibited,
    SolverError,
    SolverReporter,
    Variable,
    backend_names,
    get_backend,
    register_backend,
    solve,
)
from olmkit._solver import backends as backends_module

from .oracle import satisfies


def v(ident: str, *constraints) -> Variable:
    return Variable(ident, constraints)


def ids(variables: Sequence[Variable]) -> list[str]:
    return [x.id for x in variables]


# Upstream's solve_test.go table (installed ids sorted), plus the behaviour doc's examples.
CASES = [
    ("no variables", [], []),
    ("unnecessary variable is not installed", [v("a")], []),
    ("single mandatory variable is installed", [v("a", Mandatory())], ["a"]),
    ("dependency is installed", [v("a"), v("b", Mandatory(), Dependency(("a",)))], ["a", "b"]),
    (
        "transitive dependency is installed",
        [v("a"), v("b", Dependency(("a",))), v("c", Mandatory(), Dependency(("b",)))],
        ["a", "b", "c"],
    ),
    (
        "both dependencies are installed",
        [v("a"), v("b"), v("c", Mandatory(), Dependency(("a",)), Dependency(("b",)))],
        ["a", "b", "c"],
    ),
    (
        "solution with first dependency is selected",
        [v("a"), v("b", Conflict("a")), v("c", Mandatory(), Dependency(("a", "b")))],
        ["a", "c"],
    ),
    (
        "solution with only first dependency is selected",
        [v("a"), v("b"), v("c", Mandatory(), Dependency(("a", "b")))],
        ["a", "c"],
    ),
    (
        "solution with first dependency is selected (reverse)",
        [v("a"), v("b", Conflict("a")), v("c", Mandatory(), Dependency(("b", "a")))],
        ["b", "c"],
    ),
    (
        "irrelevant dependencies don't influence search order",
        [
            v("a", Dependency(("x", "y"))),
            v("b", Mandatory(), Dependency(("y", "x"))),
            v("x"),
            v("y"),
        ],
        ["b", "y"],
    ),
    (
        "cardinality constraint forces alternative",
        [
            v("a", Mandatory(), Dependency(("x", "y")), AtMost(1, ("x", "y"))),
            v("b", Mandatory(), Dependency(("y",))),
            v("x"),
            v("y"),
        ],
        ["a", "b", "y"],
    ),
    (
        "two dependencies satisfied by one variable",
        [
            v("a", Mandatory(), Dependency(("y",))),
            v("b", Mandatory(), Dependency(("x", "y"))),
            v("x"),
            v("y"),
        ],
        ["a", "b", "y"],
    ),
    (
        "foo two dependencies satisfied by one variable",
        [
            v("a", Mandatory(), Dependency(("y", "z", "m"))),
            v("b", Mandatory(), Dependency(("x", "y"))),
            v("x"),
            v("y"),
            v("z"),
            v("m"),
        ],
        ["a", "b", "y"],
    ),
    (
        "result size larger than minimum due to preference",
        [
            v("a", Mandatory(), Dependency(("x", "y"))),
            v("b", Mandatory(), Dependency(("y",))),
            v("x"),
            v("y"),
        ],
        ["a", "b", "x", "y"],
    ),
    (
        "only the least preferable choice is acceptable",
        [
            v("a", Mandatory(), Dependency(("a1", "a2"))),
            v("a1", Conflict("c1"), Conflict("c2")),
            v("a2", Conflict("c1")),
            v("b", Mandatory(), Dependency(("b1", "b2"))),
            v("b1", Conflict("c1"), Conflict("c2")),
            v("b2", Conflict("c1")),
            v("c", Mandatory(), Dependency(("c1", "c2"))),
            v("c1"),
            v("c2"),
        ],
        ["a", "a2", "b", "b2", "c", "c2"],
    ),
    (
        "preferences respected with multiple dependencies per variable",
        [
            v("a", Mandatory(), Dependency(("x1", "x2")), Dependency(("y1", "y2"))),
            v("x1"),
            v("x2"),
            v("y1"),
            v("y2"),
        ],
        ["a", "x1", "y1"],
    ),
    (
        "doc 6.2: preference beats minimality",
        [v("A", Mandatory(), Dependency(("x", "y")), Dependency(("y",))), v("x"), v("y")],
        ["A", "x", "y"],
    ),
    (
        "doc 6.2: swapping the two dependencies gives the smaller answer",
        [v("A", Mandatory(), Dependency(("y",)), Dependency(("x", "y"))), v("x"), v("y")],
        ["A", "y"],
    ),
    (
        "backtracking to a lower preference provider",
        [
            v("A", Mandatory(), Dependency(("p1", "p2", "p3"))),
            v("p1", Dependency(("q",))),
            v("p2", Conflict("B")),
            v("p3"),
            v("q", Prohibited()),
            v("B", Mandatory()),
        ],
        ["A", "B", "p3"],
    ),
    (
        "a later conflict undoes the most recent guess first",
        [
            v("A", Mandatory(), Dependency(("a1", "a2"))),
            v("B", Mandatory(), Dependency(("b1", "b2"))),
            v("a1"),
            v("a2"),
            v("b1", Conflict("a1")),
            v("b2", Conflict("a1")),
        ],
        ["A", "B", "a2", "b1"],
    ),
    (
        "anchors are decided in input order",
        [
            v("s1", Mandatory(), Dependency(("x", "y"))),
            v("s2", Mandatory(), Dependency(("y",))),
            v("x"),
            v("y"),
        ],
        ["s1", "s2", "x", "y"],
    ),
    (
        "anchors are decided in input order (swapped)",
        [
            v("s2", Mandatory(), Dependency(("y",))),
            v("s1", Mandatory(), Dependency(("x", "y"))),
            v("x"),
            v("y"),
        ],
        ["s1", "s2", "y"],
    ),
    (
        "a choice already satisfied by a guess is not guessed again",
        [
            v("a", Mandatory(), Dependency(("x",))),
            v("b", Mandatory(), Dependency(("z", "x"))),
            v("x"),
            v("z"),
        ],
        ["a", "b", "x"],
    ),
    (
        # x's second dependency r needs one s and one t, but with p1 at most one of them
        # may be chosen: propagation cannot see that, so r's choices are exhausted and
        # left to the SAT solver, which backjumps to p1; r's choices come back as they
        # were before p1 was guessed, so r gets its preferred s1 and t1.
        "exhausted choice is left to the SAT solver",
        [
            v("a", Mandatory(), Dependency(("x",))),
            v("x", Dependency(("p1", "p2")), Dependency(("r",))),
            v("p1", Or((Prohibited(), AtMost(1, ("s1", "s2", "t1", "t2"))))),
            v("p2"),
            v("r", Dependency(("s1", "s2")), Dependency(("t1", "t2"))),
            v("s1"),
            v("s2"),
            v("t1"),
            v("t2"),
        ],
        ["a", "p2", "r", "s1", "t1", "x"],
    ),
    ("AtMost 0 removes every member", [v("a", Mandatory(), AtMost(0, ("b", "c"))), v("b"), v("c")], ["a"]),
    (
        "AtMost 1 picks the preferred one",
        [
            v("a", Mandatory(), Dependency(("b", "c")), Dependency(("c", "b")), AtMost(1, ("b", "c"))),
            v("b"),
            v("c"),
        ],
        ["a", "b"],
    ),
    (
        "AtMost 2 allows two of three",
        [
            v(
                "a",
                Mandatory(),
                Dependency(("b",)),
                Dependency(("c",)),
                Dependency(("d", "c")),
                AtMost(2, ("b", "c", "d")),
            ),
            v("b"),
            v("c"),
            v("d"),
        ],
        ["a", "b", "c"],
    ),
    (
        "Or of dependencies is not a choice, extras are kept minimal",
        [v("a", Mandatory(), Or((Dependency(("x",)), Dependency(("y",))))), v("x"), v("y")],
        ["a", "y"],
    ),
    (
        "And requires all operands",
        [v("a", Mandatory(), And((Dependency(("x",)), Conflict("y")))), v("x"), v("y", Mandatory())],
        "unsat",
    ),
    (
        "Not inverts its operand",
        [v("a", Mandatory(), Not(Conflict("b"))), v("b")],
        ["a", "b"],
    ),
]


@pytest.mark.parametrize(("name", "variables", "expected"), CASES, ids=[c[0] for c in CASES])
def test_solve_cases(implementation, name, variables, expected):
    """solve() gives upstream OLM's answers: greedy breadth-first preference, then minimal extras."""

    if expected == "unsat":
        with pytest.raises(NotSatisfiable):
            solve(variables)
        return
    result = solve(variables)

    assert satisfies(variables, set(ids(result)))
    if expected is not None:
        assert expected == sorted(ids(result))
    assert ids(result) == [x.id for x in variables if x in result], "input order"


def test_exhausted_choice_result(implementation):
    """When every candidate of a choice fails, the SAT solver still finds a model."""

    variables = [
        v(
            "a",
            Mandatory(),
            Or((Dependency(("p",)), Dependency(("q",)))),
            Or((Dependency(("p",)), Not(Dependency(("q",))))),
        ),
        v("p"),
        v("q"),
    ]

    assert ["a", "p"] == ids(solve(variables))


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ([v("a", Mandatory(), Prohibited())], "a is mandatory, a is prohibited"),
        (
            [v("a", Mandatory()), v("b", Mandatory(), Conflict("a"))],
            "a is mandatory, b conflicts with a, b is mandatory",
        ),
        (
            [
                v("a", Mandatory(), Dependency(("x", "y")), AtMost(1, ("x", "y"))),
                v("x", Mandatory()),
                v("y", Mandatory()),
            ],
            "a permits at most 1 of x, y, x is mandatory, y is mandatory",
        ),
        (
            [v("a", Mandatory(), Dependency(()))],
            "a has a dependency without any candidates to satisfy it, a is mandatory",
        ),
        (
            [v("s", Mandatory(message="subscription s exists"), Dependency((), message="no operators found"))],
            "no operators found, subscription s exists",
        ),
    ],
)
def test_unsatisfiable_messages(implementation, variables, expected):
    """Failures list the conflicting constraints' texts, sorted."""

    with pytest.raises(NotSatisfiable) as info:
        solve(variables)

    assert "constraints not satisfiable: " + expected == str(info.value)


def test_conflict_set_is_minimal(implementation):
    """Constraints that do not take part in the conflict are not reported."""

    noise = [v(f"n{i}", Mandatory(), Dependency((f"m{i}", "c")), Conflict(f"z{i}")) for i in range(20)]
    noise += [v(f"m{i}", AtMost(1, (f"m{i}", f"z{i}", "b"))) for i in range(20)]
    noise += [v(f"z{i}") for i in range(20)]
    variables = [
        *noise,
        v("a", Mandatory(), Dependency(("b", "c"))),
        v("b", Prohibited()),
        v("c", Conflict("a")),
        v("d", Dependency(("c",))),
    ]

    with pytest.raises(NotSatisfiable) as info:
        solve(variables)

    expected = [
        AppliedConstraint("a", Mandatory()),
        AppliedConstraint("a", Dependency(("b", "c"))),
        AppliedConstraint("b", Prohibited()),
        AppliedConstraint("c", Conflict("a")),
    ]
    assert expected == list(info.value.applied)


def test_conflict_without_minimising_is_still_a_conflict(implementation):
    """minimize_conflict=False returns the backend's core, which may be larger but still fails."""

    variables = [v("a", Mandatory()), v("b", Mandatory(), Conflict("a")), v("c", Mandatory())]

    with pytest.raises(NotSatisfiable) as info:
        solve(variables, minimize_conflict=False)

    texts = {str(a) for a in info.value.applied}
    assert {"a is mandatory", "b is mandatory", "b conflicts with a"} <= texts


def test_deterministic(implementation):
    """Identical input gives identical output, every time."""

    variables = [v(f"s{i}", Mandatory(), Dependency((f"x{i % 7}", f"x{(i + 1) % 7}"))) for i in range(10)]
    variables += [v(f"x{i}", *([Conflict(f"x{(i + 1) % 7}")] if i % 3 == 0 else [])) for i in range(7)]
    first = ids(solve(variables))

    for _ in range(5):
        assert first == ids(solve(variables))


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ([v("a"), v("a")], 'duplicate identifier "a" in input'),
        (
            [v("a", Dependency(("x", "b")), Conflict("y")), v("b")],
            '2 errors encountered: variable "x" referenced but not provided, variable "y" referenced but not provided',
        ),
        ([v("a", AtMost(-1, ("a",)))], '1 errors encountered: variable "a" permits at most -1: n must be >= 0'),
        ([v("a", Not(Conflict("zz")))], '1 errors encountered: variable "zz" referenced but not provided'),
    ],
)
def test_bad_input(variables, message):
    """Invalid input is a SolverError with a clear message, before any solving."""

    with pytest.raises(SolverError) as info:
        solve(variables)

    assert message == str(info.value)
    assert isinstance(info.value, (DuplicateIdentifier, InvalidInput))


def test_reporter_sees_phases_and_counters(implementation):
    """A reporter receives phase timings, counters, the guesses and the result."""

    class Recorder(SolverReporter):
        def __init__(self):
            self.events = []

        def on_start(self, **kw):
            self.events.append(("start", kw["variables"], kw["constraints"], kw["implementation"]))

        def on_phase(self, name, seconds):
            assert seconds >= 0
            self.events.append(("phase", name))

        def on_counters(self, counters):
            self.events.append(("counters", counters["guesses"]))

        def on_guesses(self, guessed):
            self.events.append(("guesses", list(guessed)))

        def on_result(self, selected):
            self.events.append(("result", list(selected)))

    rec = Recorder()
    solve([v("a", Mandatory(), Dependency(("b",))), v("b")], reporter=rec)

    assert [
        ("start", 2, 2, implementation),
        ("phase", "encode"),
        ("phase", "search"),
        ("guesses", ["a", "b"]),
        ("phase", "minimize"),
        ("counters", 2),
        ("result", ["a", "b"]),
    ] == rec.events


class MaximalModelBackend:
    """A test backend whose models make as many variables true as it can, greedily."""

    def __init__(self):
        import pycryptosat

        self.solver = pycryptosat.Solver()
        self.n = 0
        self.calls = 0

    def add_clauses(self, buf):
        self.n = max([self.n, *(abs(x) for x in buf)])
        self.solver.add_clauses(buf)

    def solve(self, assumptions):
        self.calls += 1
        fixed = list(assumptions)
        sat, _ = self.solver.solve(fixed)
        if not sat:
            return False, None
        for var in range(1, self.n + 1):
            ok, _ = self.solver.solve([*fixed, var])
            fixed.append(var if ok else -var)
        return self.solver.solve(fixed)

    def get_conflict(self):
        return [-x for x in self.solver.get_conflict()]


@pytest.fixture
def brute_backend():
    created = []

    def factory():
        backend = MaximalModelBackend()
        created.append(backend)
        return backend

    register_backend("brute", factory)
    yield created
    backends_module._REGISTRY.pop("brute")


def test_plugin_backend_and_extras_minimisation(implementation, brute_backend):
    """A registered backend is used; the extras of its model are minimised away."""

    variables = [
        v(
            "a",
            Mandatory(),
            Or((Dependency(("p",)), Dependency(("q",)))),
            Or((Dependency(("p",)), Not(Dependency(("q",))))),
        ),
        v("p"),
        v("q"),
        v("z"),
    ]

    result = solve(variables, backend="brute")

    assert ["a", "p"] == ids(result)
    assert brute_backend
    assert brute_backend[0].calls >= 2
    assert "brute" in backend_names()


def test_backend_not_created_when_not_needed(implementation, brute_backend):
    """Plain greedy problems never touch the SAT backend."""

    solve([v("a", Mandatory(), Dependency(("b", "c"))), v("b"), v("c")], backend="brute")

    assert [] == brute_backend


def test_backend_registry_errors():
    """Unknown or doubly registered backends are SolverErrors."""

    with pytest.raises(SolverError, match="unknown SAT backend 'nope'"):
        solve([], backend="nope")
    with pytest.raises(SolverError, match="already registered"):
        register_backend("cryptominisat", lambda: None)
    assert get_backend() is get_backend("cryptominisat")
