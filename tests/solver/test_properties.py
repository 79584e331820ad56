"""Property tests: solutions are valid, failures are real and minimal, implementations agree.

Problems are small (at most seven variables) so that brute force can check them; the
package-shaped problems of the backtracking test are larger, with CryptoMiniSat as oracle.
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from olmkit._solver import (
    And,
    AtMost,
    Conflict,
    Dependency,
    Mandatory,
    Not,
    NotSatisfiable,
    Or,
    Prohibited,
    SolverReporter,
    Variable,
    _encode,
    _solve,
    solve,
)
from olmkit._solver._problem import flatten

from .oracle import brute_force, prefix_guesses, satisfies, upstream_guesses

IDS = [f"v{i}" for i in range(7)]
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def basic(names: list[str]) -> st.SearchStrategy:
    ident = st.sampled_from(names)
    return st.one_of(
        st.builds(Mandatory),
        st.builds(Prohibited),
        st.builds(Dependency, st.lists(ident, max_size=3).map(tuple)),
        st.builds(Conflict, ident),
        st.builds(
            AtMost,
            st.integers(0, 3),
            st.lists(ident, min_size=1, max_size=4, unique=True).map(tuple),
        ),
    )


def nested(names: list[str]) -> st.SearchStrategy:
    return st.recursive(
        basic(names),
        lambda inner: st.one_of(
            st.builds(Not, inner),
            st.builds(Or, st.lists(inner, max_size=3).map(tuple)),
            st.builds(And, st.lists(inner, max_size=3).map(tuple)),
        ),
        max_leaves=4,
    )


@st.composite
def problems(draw, combinators: bool = True, weight_mandatory: bool = True):
    n = draw(st.integers(1, 7))
    names = IDS[:n]
    kinds = nested(names) if combinators else basic(names)
    variables = []
    for name in names:
        constraints = draw(st.lists(kinds, max_size=3))
        if weight_mandatory and draw(st.integers(0, 3)) == 0:
            constraints.insert(0, Mandatory())
        variables.append(Variable(name, tuple(constraints)))
    return variables


def outcome(variables):
    try:
        return [v.id for v in solve(variables)]
    except NotSatisfiable as e:
        return e


@SETTINGS
@given(problems())
def test_solutions_are_valid_and_failures_real(variables):
    """Every answer satisfies every constraint; every failure is a real one, minimally explained."""

    result = outcome(variables)

    if isinstance(result, NotSatisfiable):
        assert brute_force(variables) is None
        applied = [(a.variable, a.constraint) for a in result.applied]
        assert applied, "an explanation is never empty"
        assert brute_force(variables, applied) is None, "the explanation itself fails"
        for i in range(len(applied)):
            rest = applied[:i] + applied[i + 1 :]
            assert brute_force(variables, rest) is not None, "the explanation is minimal"
    else:
        assert satisfies(variables, set(result))


@SETTINGS
@given(problems(combinators=False))
def test_search_follows_upstream(variables):
    """The preference search makes upstream OLM's guesses (search.go, with brute-force Solve)."""

    class Guesses(SolverReporter):
        guessed: list[str] | None = None

        def on_guesses(self, guessed):
            self.guessed = list(guessed)

    rep = Guesses()
    expected = upstream_guesses(variables)
    try:
        result = solve(variables, reporter=rep)
    except NotSatisfiable:
        result = None

    assert expected == rep.guessed
    if result is not None:
        assert set(expected) <= {v.id for v in result}


@pytest.mark.skipif("native" not in _encode.available(), reason="C accelerator not built")
@SETTINGS
@given(problems())
def test_native_and_pure_agree(variables):
    """The C accelerator and the pure twin give identical buffers, answers and explanations."""

    from olmkit._solver import _native, _pure

    p = flatten(variables)
    native_buf = _native.encode(p.n_vars, p.nodes, p.args, p.top)
    pure_buf = _pure.encode(p.n_vars, p.nodes, p.args, p.top)
    assert pure_buf[1] == native_buf[1]
    assert pure_buf[0].tobytes() == native_buf[0].tobytes()

    answers = []
    for name in ("native", "pure"):
        old = _encode.set_implementation(name)
        try:
            r = outcome(variables)
        finally:
            _encode.set_implementation(old)
        answers.append(str(r) if isinstance(r, NotSatisfiable) else r)
    assert answers[0] == answers[1]


@SETTINGS
@given(problems())
def test_deterministic(variables):
    """Solving the same input twice gives the same answer."""

    first = outcome(variables)
    second = outcome(variables)

    if isinstance(first, NotSatisfiable):
        assert str(first) == str(second)
    else:
        assert first == second


@st.composite
def package_problems(draw):
    """Subscriptions, bundles of packages with dependencies on other packages' bundles, and
    at most one bundle per package: large enough for greedy completions to fail."""
    n_packages = draw(st.integers(4, 10))
    packages = {p: [f"p{p}v{i}" for i in range(draw(st.integers(2, 4)))] for p in range(n_packages)}
    variables = []
    for p, names in packages.items():
        for name in names:
            constraints = []
            for q in draw(st.lists(st.sampled_from([q for q in packages if q != p]), min_size=1, max_size=3)):
                others = packages[q]
                chosen = draw(st.lists(st.sampled_from(others), min_size=1, max_size=2, unique=True))
                constraints.append(Dependency(tuple(chosen)))
            variables.append(Variable(name, tuple(constraints)))
    heads = [
        Variable(f"s{p}", (Mandatory(), Dependency(tuple(packages[p]))))
        for p in draw(st.lists(st.sampled_from(list(packages)), min_size=2, max_size=4, unique=True))
    ]
    rules = [Variable(f"u{p}", (Mandatory(), AtMost(1, tuple(n)))) for p, n in packages.items() if len(n) > 1]
    return heads + variables + rules


def exact_solvable(variables):
    """Whether a partial assignment (identifier -> bool) extends to a solution (CryptoMiniSat)."""
    from olmkit._solver._pure import encode
    from olmkit._solver.backends import CryptoMiniSatBackend

    p = flatten(variables)
    clauses, _ = encode(p.n_vars, p.nodes, p.args, p.top)
    index = {v.id: i + 1 for i, v in enumerate(variables)}
    acts = list(range(p.n_vars + 1, p.n_vars + p.n_act + 1))

    def solvable(assign):
        backend = CryptoMiniSatBackend()
        backend.add_clauses(clauses)
        return backend.solve(acts + [index[k] if value else -index[k] for k, value in assign.items()])[0]

    return solvable


@settings(
    max_examples=80,
    deadline=None,
    # the implementation fixture only selects C or pure; it holds no state between examples
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(package_problems())
def test_unsatisfiable_leaves_backtrack_to_the_shortest_failing_prefix(implementation, variables):
    """At a leaf whose guesses cannot hold, the search backtracks to the newest guess of the
    shortest prefix of the guesses that cannot (found by proof or by the SAT solver alike):
    the same guesses, step for step, as a search that asks an exact oracle."""

    class Guesses(SolverReporter):
        guessed: list[str] | None = None
        counters: dict[str, int] | None = None

        def on_guesses(self, guessed):
            self.guessed = list(guessed)

        def on_counters(self, counters):
            self.counters = dict(counters)

    counters: dict[str, int] = {}
    expected = prefix_guesses(variables, exact_solvable(variables), counters)
    rep = Guesses()
    # the propagator's own steps: native's race against CryptoMiniSat, which goes by the time
    # measured (a loaded machine), would otherwise answer some problems with the counters of a
    # search cut short (the same guesses); test_native_races_cryptominisat_by_measured_time has it
    with pytest.MonkeyPatch.context() as mp, contextlib.suppress(NotSatisfiable):
        mp.setattr(_solve._Race, "due", lambda self, oracle: False)
        solve(variables, reporter=rep)

    assert expected == rep.guessed
    assert rep.counters is not None
    assert rep.counters["switched"] == 0
    assert counters == {k: rep.counters[k] for k in ("guesses", "backtracks")}
