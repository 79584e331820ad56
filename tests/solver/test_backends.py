"""The backends (cryptominisat, native, pure) are different engines with identical answers."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from olmkit._solver import (
    AtMost,
    Dependency,
    Mandatory,
    NotSatisfiable,
    SolverError,
    SolverReporter,
    Variable,
    _encode,
    backend_names,
    register_backend,
    solve,
)
from olmkit._solver import _solve as solve_module
from olmkit._solver.backends import ENGINES, default_backend, engine_of, instrument

from .test_properties import package_problems, problems

BUILT_IN = [name for name in ENGINES if name in backend_names()]
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Record(SolverReporter):
    """Keeps what a solve reported."""

    def __init__(self) -> None:
        self.start: dict[str, object] = {}
        self.counters: dict[str, int] = {}
        self.guesses: list[str] | None = None

    def on_start(self, **kw: object) -> None:
        self.start = dict(kw)

    def on_counters(self, counters):
        self.counters = dict(counters)

    def on_guesses(self, guessed):
        self.guesses = list(guessed)


def run(variables, backend, *, minimize=True):
    """The answer (ids), or the explanation's text, and the guesses."""
    rec = Record()
    try:
        answer: object = [v.id for v in solve(variables, backend=backend, reporter=rec, minimize_conflict=minimize)]
    except NotSatisfiable as exc:
        answer = str(exc)
    return answer, rec.guesses


def assert_all_agree(variables, minimize=True):
    results = {name: run(variables, name, minimize=minimize) for name in BUILT_IN}
    first = results[BUILT_IN[0]]
    for name, result in results.items():
        assert first == result, f"{name} differs from {BUILT_IN[0]}"


@SETTINGS
@given(problems())
def test_backends_agree_on_random_problems(variables):
    """Every built-in backend gives the same answer, guesses and explanation (combinators,
    cardinality, unsatisfiable problems included)."""

    assert_all_agree(variables)


@SETTINGS
@given(package_problems())
def test_backends_agree_on_package_problems(variables):
    """Package-shaped problems, where the propagator's completion fails and the search
    backtracks: same answers everywhere, unminimised explanations too."""

    assert_all_agree(variables)
    assert_all_agree(variables, minimize=False)


def pigeons(n: int) -> list[Variable]:
    """n + 1 subscriptions, each needing one of n slots, at most one per slot: unsatisfiable."""
    out = [Variable(f"sub{i}", (Mandatory(), Dependency(tuple(f"p{i}h{h}" for h in range(n))))) for i in range(n + 1)]
    out += [Variable(f"p{i}h{h}", ()) for i in range(n + 1) for h in range(n)]
    out += [Variable(f"slot{h}", (Mandatory(), AtMost(1, tuple(f"p{i}h{h}" for i in range(n + 1))))) for h in range(n)]
    return out


def test_unsatisfiable_explanations_agree():
    """A pigeonhole problem: every backend explains it with the same minimal set."""

    answers = {name: run(pigeons(4), name)[0] for name in BUILT_IN}

    assert 1 == len(set(answers.values()))
    assert str(next(iter(answers.values()))).startswith("constraints not satisfiable: ")


def test_cryptominisat_does_the_search():
    """The cryptominisat backend asks CryptoMiniSat for every decision the model does not
    settle; the propagator settles an easy problem without any call."""

    variables = [
        Variable("a", (Mandatory(), Dependency(("b", "c")))),
        Variable("b", (Dependency(("d",)),)),
        Variable("c", ()),
        Variable("d", ()),
        Variable("x", (Mandatory(), AtMost(1, ("b", "e")))),
        Variable("e", ()),
    ]
    counters = {}
    for name in BUILT_IN:
        rec = Record()
        solve(variables, backend=name, reporter=rec)
        counters[name] = rec.counters
        assert name == rec.start["backend"]

    assert counters["cryptominisat"]["backend_calls"] >= 1
    assert 0 == counters[default_backend()]["backend_calls"]
    assert {"variables", "clauses", "propagations", "backend_calls", "conflicts"} <= set(counters["cryptominisat"])


def test_conflicts_are_counted_when_asked():
    """Instrumented, CryptoMiniSat's conflicts reach the counters (with the clause count)."""

    old = instrument(True)
    try:
        rec = Record()
        with pytest.raises(NotSatisfiable):
            solve(pigeons(6), backend="cryptominisat", reporter=rec)
    finally:
        instrument(old)

    assert rec.counters["conflicts"] > 0
    assert rec.counters["backend_calls"] > 0
    assert rec.counters["clauses"] > rec.counters["variables"] > 0


def gadget(holes: int) -> list[Variable]:
    """A greedy subscription whose preferred candidates each close a pigeonhole that
    propagation cannot see: the search must reject all of them, asking the SAT solver."""
    greedy = Variable("greedy", (Mandatory(), Dependency((*(f"g{h}" for h in range(holes)), "own"))))
    out = [greedy, *(Variable(f"g{h}", ()) for h in range(holes)), Variable("own", ())]
    out += [
        Variable(f"sub{i}", (Mandatory(), Dependency(tuple(f"p{i}h{h}" for h in range(holes))))) for i in range(holes)
    ]
    out += [Variable(f"p{i}h{h}", ()) for i in range(holes) for h in range(holes)]
    out += [
        Variable(f"slot{h}", (Mandatory(), AtMost(1, (f"g{h}", *(f"p{i}h{h}" for i in range(holes))))))
        for h in range(holes)
    ]
    return out


def test_native_races_cryptominisat_by_measured_time():
    """native's race: CryptoMiniSat gets as long as the propagator has spent; given time it
    finishes with the same outcome, given none it gives up and the next race waits for
    twice the time spent."""
    from time import perf_counter

    from olmkit._solver._problem import flatten

    problem = flatten(gadget(5))
    buffer, _ = _encode.get().encode(problem.n_vars, problem.nodes, problem.args, problem.top)
    clauses = solve_module._Clauses(buffer, lambda: buffer)
    acts = solve_module.array("i", range(problem.n_vars + 1, problem.n_vars + problem.n_act + 1))
    factory = engine_of("cryptominisat")[2]
    now = perf_counter()

    generous = solve_module._Race(problem, factory, clauses, acts, now - 30.0)
    won = generous.run()
    stingy = solve_module._Race(problem, factory, clauses, acts, perf_counter())
    lost = stingy.run()

    assert won is not None
    assert 1 == won[0]
    assert generous.won is not None
    assert lost is None
    assert stingy.won is None
    assert stingy.next_at > 0
    assert run(gadget(5), "native") == run(gadget(5), "cryptominisat")
    guesses = run(gadget(5), "native")[1]
    assert "own" in guesses
    assert not [g for g in guesses if g.startswith("g") and g != "greedy"]


def test_engine_names():
    """native needs the C part; pure and cryptominisat always run; names are checked."""

    assert ("cryptominisat", "cryptominisat") == engine_of("cryptominisat")[:2]
    assert ("pure", "pure") == engine_of("pure")[:2]
    assert default_backend() == engine_of(None)[0]
    if "native" in _encode.available():
        assert ("native", "native") == engine_of("native")[:2]
    else:
        with pytest.raises(SolverError, match="needs the C part"):
            engine_of("native")
    with pytest.raises(SolverError, match="reserved"):
        register_backend("pure", lambda: None)
