"""Property tests: solutions are valid, failures are real and minimal, implementations agree.

Problems are small (at most seven variables) so that brute force can check them.
"""

from __future__ import annotations

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
    solve,
)
from olmkit._solver._problem import flatten

from .oracle import brute_force, satisfies, upstream_guesses

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
