"""The solve pipeline: flatten, encode, preference search, minimise extras or explain.

Semantics are upstream OLM's (``solver/solve.go`` and ``search.go``), see
``shared/spec/olm-resolver-behaviour.md`` section 6:

1. Every top-level constraint gets an activation literal, assumed true throughout, so
   that a failure is explained in terms of constraints.
2. Greedy breadth-first preference search from the anchors (variables with a top-level
   Mandatory constraint), in input order, with chronological backtracking; it runs in
   the native (or pure twin) unit propagator, not in the SAT backend.
3. Every variable false in the search's model is fixed false; among the variables true
   but not guessed ("extras") the smallest number ``w = 0, 1, ...`` that still has a
   model is found. The answer is what is true in that final model.
4. Unsatisfiable: the backend's failed assumptions, shrunk to a minimal unsatisfiable
   subset by deletion unless ``minimize_conflict`` is false, sorted by text.

Where upstream leaves a choice to gini, olmkit is deterministic: when the deque of
choices is empty the model is the assignment completed by setting the remaining
variables false in order (falling back to the backend when that hits a conflict). When
the guesses cannot all hold, upstream pops them one at a time, which can take exponential
time; olmkit backtracks straight to the newest guess of the shortest prefix of the
guesses that cannot hold, popping the newer ones as chronological backtracking would.
That guess does not depend on the backend: the search shows it by propagation (a choice
none of whose candidates survives) and completion when it can, and otherwise asks the
backend about the guesses and about shorter prefixes of them.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from time import perf_counter
from typing import Any

from olmkit._solver import _encode
from olmkit._solver._problem import Problem, flatten
from olmkit._solver.backends import DEFAULT_BACKEND, Backend, get_backend
from olmkit._solver.constraints import AppliedConstraint, Variable
from olmkit._solver.errors import NotSatisfiable, SolverError
from olmkit._solver.reporter import SolverReporter

__all__ = ["solve", "solve_problem"]

_NO_REPORTER = SolverReporter()


class _LazyBackend:
    """Creates the backend and teaches it the clauses on first use only."""

    def __init__(self, factory: object, clauses: array[int]) -> None:
        self._factory = factory
        self._clauses = clauses
        self._backend: Backend | None = None

    def get(self) -> Backend:
        if self._backend is None:
            backend = self._factory()  # type: ignore[operator]
            backend.add_clauses(self._clauses)
            self._backend = backend
        return self._backend


def _model_bytes(model: Sequence[bool | None] | None, n_vars: int) -> bytes:
    if model is None:
        raise SolverError("the SAT backend reported satisfiable without a model")
    return bytes(map(bool, model[1 : n_vars + 1]))


def solve(
    variables: Sequence[Variable],
    *,
    backend: str | None = None,
    minimize_conflict: bool = True,
    reporter: SolverReporter | None = None,
) -> list[Variable]:
    """Choose the variables to install, honouring every constraint and the preferences.

    Args:
        variables: the problem; identifiers must be unique, and every identifier a
            constraint names must be one of them. Input order matters: anchors are
            decided in input order.
        backend: name of the SAT backend (default ``"cryptominisat"``).
        minimize_conflict: shrink unsatisfiability explanations to a minimal set.
        reporter: receives timings and counters.

    Returns:
        The variables in the solution, in input order.

    Raises:
        NotSatisfiable: no solution exists; carries the conflicting constraints.
        SolverError: the input is invalid or the backend is unknown or misbehaves.

    .. versionadded:: 0.1
    """
    get_backend(backend)  # an unknown backend fails before any work
    start = perf_counter()
    problem = flatten(variables)
    chosen = solve_problem(
        problem, backend=backend, minimize_conflict=minimize_conflict, reporter=reporter, started=start
    )
    return [variables[i] for i in chosen]


def _overrides(rep: SolverReporter, name: str) -> bool:
    return getattr(type(rep), name) is not getattr(SolverReporter, name)


def solve_problem(
    problem: Problem,
    *,
    backend: str | None = None,
    minimize_conflict: bool = True,
    reporter: SolverReporter | None = None,
    started: float | None = None,
) -> array[int]:
    """:func:`solve` on a problem already laid out as int arrays.

    ``problem.variables`` may be lazy: identifiers and constraints are read only for
    explanations and for reporters that want them.

    Returns:
        The 0-based numbers of the chosen variables, ascending.

    .. versionadded:: 0.2
    """
    rep = reporter if reporter is not None else _NO_REPORTER
    factory = get_backend(backend)
    impl = _encode.get()

    t0 = perf_counter() if started is None else started
    n_vars = problem.n_vars
    clauses, n_total = impl.encode(n_vars, problem.nodes, problem.args, problem.top)
    rep.on_start(
        variables=n_vars,
        constraints=problem.n_act,
        implementation=_encode.IMPLEMENTATION,
        backend=backend or DEFAULT_BACKEND,
    )
    t1 = perf_counter()
    rep.on_phase("encode", t1 - t0)

    searcher = impl.Searcher(
        n_vars,
        n_total,
        clauses,
        problem.n_act,
        problem.nodes,
        problem.args,
        problem.anchor_start,
        problem.n_anchors,
        problem.vdep_start,
        problem.vdep,
    )
    lazy = _LazyBackend(factory, clauses)
    acts = array("i", range(n_vars + 1, n_vars + problem.n_act + 1))
    while True:
        status = searcher.run()
        if status:
            break
        sat_backend = lazy.get()
        sat, model = sat_backend.solve(acts + searcher.assumptions())
        if sat:
            searcher.resume(True, _model_bytes(model, n_vars), None)
        else:
            searcher.resume(False, None, array("i", sat_backend.get_conflict()))
    t2 = perf_counter()
    rep.on_phase("search", t2 - t1)
    rep.on_counters(searcher.stats())

    if status < 0:
        applied = _explain(problem, searcher, lazy, acts, minimize_conflict)
        rep.on_phase("explain", perf_counter() - t2)
        rep.on_unsatisfiable(applied)
        raise NotSatisfiable(applied=applied)

    guessed = searcher.assumptions()
    variables = problem.variables
    if _overrides(rep, "on_guesses"):
        rep.on_guesses([variables[m - 1].id for m in guessed])
    final = searcher.model()
    if not searcher.forced_extras():
        final = _minimize_extras(lazy, acts, guessed, final, n_total)
    rep.on_phase("minimize", perf_counter() - t2)

    chosen = array("i", [i for i, bit in enumerate(final) if bit])
    if _overrides(rep, "on_result"):
        rep.on_result([variables[i].id for i in chosen])
    return chosen


def _minimize_extras(lazy: _LazyBackend, acts: array[int], guessed: array[int], model: bytes, n_total: int) -> bytes:
    """Fix model-false variables false and find a model with the fewest extras."""
    n_vars = len(model)
    is_guessed = bytearray(n_vars + 1)
    for m in guessed:
        is_guessed[m] = 1
    excluded = array("i")
    extras = array("i")
    for p, bit in enumerate(model):
        v = p + 1
        if is_guessed[v]:
            continue
        if bit:
            extras.append(v)
        else:
            excluded.append(-v)
    counter, outs, _ = _encode.get().encode_counter(n_total + 1, extras)
    backend = lazy.get()
    backend.add_clauses(counter)
    base = acts + guessed + excluded
    for w in range(len(extras) + 1):
        bound = outs[w : w + 1]  # empty for w == len(extras): no bound at all
        sat, found = backend.solve(base + bound)
        if sat:
            return _model_bytes(found, n_vars)
    raise SolverError("unexpected internal error: the model vanished while minimising extras")


def _explain(
    problem: Problem, searcher: Any, lazy: _LazyBackend, acts: array[int], minimize: bool
) -> tuple[AppliedConstraint, ...]:
    """The constraints that cannot hold together, as the backend's failed assumptions."""
    backend = lazy.get()
    sat, _ = backend.solve(acts)
    if sat:
        raise SolverError("unexpected internal error: the search found no model, the backend did")
    core = sorted({lit for lit in backend.get_conflict() if problem.applied(lit) is not None})
    if minimize:
        core = _shrink(searcher, backend, core)
    applied = []
    for lit in core:
        a = problem.applied(lit)
        assert a is not None
        applied.append(a)
    return tuple(applied)


def _shrink(searcher: Any, backend: Backend, core: list[int]) -> list[int]:
    """Deletion-based minimal unsatisfiable subset of the assumptions ``core``.

    Each member is dropped in turn: if the rest is still unsatisfiable the member goes,
    otherwise it is necessary and stays. The searcher's propagator is tried before the
    backend: unit propagation refutes most subsets of dependency problems, and (native
    only, where it is cheap) completing an assignment proves most others satisfiable.
    The answer depends only on which subsets are satisfiable, never on who decided it
    or on the backend's state, so both implementations give the same explanation.
    """
    complete = bool(searcher.cheap_completion)
    i = 0
    while i < len(core):
        trial = core[:i] + core[i + 1 :]
        quick = searcher.check(array("i", trial), complete)
        if quick == 0:
            sat, _ = backend.solve(trial)
            quick = 1 if sat else -1
        if quick < 0:
            core = trial
        else:
            i += 1
    return core
