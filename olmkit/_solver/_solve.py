"""The solve pipeline: flatten, encode, preference search, canonical model or explanation.

Semantics are upstream OLM's (``solver/solve.go`` and ``search.go``), see
``shared/spec/olm-resolver-behaviour.md`` section 6:

1. Every top-level constraint gets an activation literal, assumed true throughout, so
   that a failure is explained in terms of constraints.
2. Greedy breadth-first preference search from the anchors (variables with a top-level
   Mandatory constraint), in input order: a choice takes its first candidate that can
   still hold together with the guesses before it.
3. The answer is the guesses' canonical model: the input variables set false in order
   wherever a model allows it (the lexicographically smallest model, false first). No
   model has a strict subset of its true variables, so its extras (true, not guessed)
   are minimal: upstream's minimisation of extras has nothing left to remove.
4. Unsatisfiable: the failed assumptions of a fresh SAT solver asked about the activation
   literals alone, shrunk to a minimal unsatisfiable subset by deletion unless
   ``minimize_conflict`` is false, sorted by text.

Every step is defined by which sets of assumptions are satisfiable, never by which model
or core a solver happens to return, so the backends (see :mod:`olmkit._solver.backends`)
give byte-identical answers and explanations. They differ in how they decide:

* ``native`` and ``pure`` run the search in a unit propagator (C or its Python twin):
  a guess is refuted by propagation, and a leaf whose completion fails (setting the open
  variables false in order, with propagation) is settled by a proof or by asking the SAT
  solver, then the search backtracks straight to the newest guess of the shortest prefix
  of the guesses that cannot hold (as chronological backtracking would end up doing).
  The completion, when it succeeds, is the canonical model already.
* ``cryptominisat`` asks the SAT solver under assumptions: a candidate the current model
  makes true holds, any other costs one incremental call; accepted guesses and refuted
  candidates become unit clauses, since the greedy search never takes a guess back.
* ``native`` measures as it goes: once the propagator needs the SAT solver, CryptoMiniSat
  races it for as long as the propagator has taken so far, again each time that time has
  doubled, and the first to finish answers (counters ``races``, ``switched``); see
  :class:`_Race`.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Sequence
from itertools import compress
from time import perf_counter
from typing import Any

from olmkit._solver import _encode
from olmkit._solver._problem import Problem, flatten
from olmkit._solver.backends import Backend, BackendFactory, engine_of
from olmkit._solver.constraints import AppliedConstraint, Variable
from olmkit._solver.errors import NotSatisfiable, SolverError
from olmkit._solver.reporter import SolverReporter

__all__ = ["solve", "solve_problem"]

_NO_REPORTER = SolverReporter()


class _Clauses:
    """The clause buffer of one solve, for the SAT solvers taught it.

    When the propagator took the buffer for its own (:meth:`take`: the C searcher keeps
    its clauses there, with no copy), a SAT solver asked later gets them encoded again
    (the same clauses: encoding is deterministic, and cheap next to teaching a solver).
    The C encoder's buffer is a view of its own memory; a SAT solver gets an ``array('i')``.
    """

    def __init__(self, first: array[int] | memoryview, encode: Callable[[], array[int] | memoryview]) -> None:
        self._buffer: array[int] | memoryview | None = first
        self._encode = encode

    def take(self) -> array[int] | memoryview:
        buffer = self._buffer if self._buffer is not None else self._encode()
        self._buffer = None
        return buffer

    def get(self) -> array[int]:
        buffer = self._buffer if self._buffer is not None else self._encode()
        if not isinstance(buffer, array):
            copy = array("i")
            copy.frombytes(buffer.cast("B"))
            buffer = copy
        self._buffer = buffer
        return buffer


class _Oracle:
    """The SAT solver of one solve: created and taught the clauses on first use; counts calls."""

    def __init__(self, factory: BackendFactory, clauses: _Clauses) -> None:
        self._factory = factory
        self._clauses = clauses
        self._backend: Backend | None = None
        self.calls = 0
        self.seconds = 0.0
        #: seconds it took to create the solver and teach it the clauses
        self.setup = 0.0
        #: the latest model of the input variables (one byte each) the solver gave
        self.model = b""
        self._absorbed_conflicts = 0

    def get(self) -> Backend:
        if self._backend is None:
            t = perf_counter()
            backend = self._factory()
            backend.add_clauses(self._clauses.get())
            self._backend = backend
            self.setup = perf_counter() - t
        return self._backend

    def solve(self, assumptions: Sequence[int]) -> tuple[bool, Sequence[bool | None] | None]:
        backend = self.get()
        t = perf_counter()
        sat, model = backend.solve(assumptions)
        self.seconds += perf_counter() - t
        self.calls += 1
        return sat, model

    def add(self, clauses: array[int]) -> None:
        if len(clauses):
            self.get().add_clauses(clauses)

    def conflict(self) -> list[int]:
        return self.get().get_conflict()

    @property
    def conflicts(self) -> int:
        """The solver's conflicts, when it counts them (see :func:`~olmkit._solver.backends.instrument`)."""
        return int(getattr(self._backend, "conflicts", 0) or 0) + self._absorbed_conflicts

    def absorb(self, other: _Oracle) -> None:
        """Count another solver's work (an explanation's fresh solver) as this one's."""
        self.calls += other.calls
        self.seconds += other.seconds
        self._absorbed_conflicts += other.conflicts


def _model_bytes(model: Sequence[bool | None] | None, n_vars: int) -> bytes:
    if model is None:
        raise SolverError("the SAT backend reported satisfiable without a model")
    return bytes(map(bool, model[1 : n_vars + 1]))


def _units(lits: Sequence[int]) -> array[int]:
    out = array("i", bytes(8 * len(lits)))
    out[0::2] = array("i", lits)
    return out


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
        backend: ``"native"``, ``"pure"``, ``"cryptominisat"`` or a plugin's SAT solver
            (default: ``native`` when the C part is built, else ``pure``).
        minimize_conflict: shrink unsatisfiability explanations to a minimal set.
        reporter: receives timings and counters.

    Returns:
        The variables in the solution, in input order.

    Raises:
        NotSatisfiable: no solution exists; carries the conflicting constraints.
        SolverError: the input is invalid or the backend is unknown or misbehaves.

    .. versionadded:: 0.1
    """
    engine_of(backend)  # an unknown backend fails before any work
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
    _encode.warn_if_not_built()
    name, engine, factory = engine_of(backend)
    impl = _encode.module(engine) if engine != "cryptominisat" else _encode.get()
    impl_name = engine if engine != "cryptominisat" else _encode.IMPLEMENTATION

    t0 = perf_counter() if started is None else started
    n_vars = problem.n_vars
    buffer, n_total = impl.encode(n_vars, problem.nodes, problem.args, problem.top)
    clauses = _Clauses(buffer, lambda: impl.encode(n_vars, problem.nodes, problem.args, problem.top)[0])
    del buffer  # consumed below by the C searcher: no other reference may keep it as it was
    rep.on_start(variables=n_vars, constraints=problem.n_act, implementation=impl_name, backend=name)
    t1 = perf_counter()
    rep.on_phase("encode", t1 - t0)

    oracle = _Oracle(factory, clauses)
    acts = array("i", range(n_vars + 1, n_vars + problem.n_act + 1))
    # the propagator counts the clauses as it loads them; otherwise counting reads the buffer
    counters: dict[str, int] = {"variables": n_total, "clauses": 0, "switched": 0}
    searcher: Any = None
    if engine != "cryptominisat":
        searcher = impl.Searcher(
            n_vars,
            n_total,
            clauses.take() if impl.Searcher.consumes else clauses.get(),
            problem.n_act,
            problem.nodes,
            problem.args,
            problem.anchor_start,
            problem.n_anchors,
            problem.vdep_start,
            problem.vdep,
            consume=impl.Searcher.consumes,
        )
        race = _Race(problem, factory, clauses, acts, t1) if name == "native" else None
        status, model = _propagator_search(searcher, oracle, acts, n_vars, race)
        counters.update(searcher.stats())
        if race is not None:
            counters["races"] = race.races
            oracle.absorb(race.lost)
            if race.won is not None:
                counters["switched"] = 1
                race.won.absorb(oracle)
                oracle = race.won
    if engine == "cryptominisat":
        status, model, found = _oracle_search(problem, oracle, acts)
        counters.update(found)
        counters["clauses"] = clauses.get().count(0)
    t2 = perf_counter()
    rep.on_phase("search", t2 - t1)

    if status < 0:
        applied = _explain(problem, searcher, oracle, factory, clauses, acts, minimize_conflict, counters, rep)
        rep.on_phase("explain", perf_counter() - t2)
        _report_counters(rep, counters, oracle)
        rep.on_unsatisfiable(applied)
        raise NotSatisfiable(applied=applied)

    assert model is not None
    guessed, final = model
    variables = problem.variables
    if _overrides(rep, "on_guesses"):
        rep.on_guesses([variables[m - 1].id for m in guessed])
    if final is None:
        final = _lexmin(oracle, acts, guessed, _fewer_extras(oracle, acts, guessed, oracle.model, n_total))
    rep.on_phase("minimize", perf_counter() - t2)
    _report_counters(rep, counters, oracle)

    chosen = array("i", compress(range(len(final)), final))
    if _overrides(rep, "on_result"):
        rep.on_result([variables[i].id for i in chosen])
    return chosen


def _report_counters(rep: SolverReporter, counters: dict[str, int], oracle: _Oracle) -> None:
    counters["backend_calls"] = counters.get("backend_calls", 0) + oracle.calls
    counters["conflicts"] = counters.get("conflicts", 0) + oracle.conflicts
    for key in ("guesses", "backtracks", "propagations", "solver_calls", "proofs"):
        counters.setdefault(key, 0)
    rep.on_counters(counters)


# --------------------------------------------------------------------------- propagator engines


def _propagator_search(
    searcher: Any, oracle: _Oracle, acts: array[int], n_vars: int, race: _Race | None
) -> tuple[int, tuple[array[int], bytes | None] | None]:
    """Run the propagator's search, answering its questions with the SAT solver.

    Returns ``(1, (guesses, model))``, where ``model`` is ``None`` when the search's model
    came from the SAT solver (then :func:`_lexmin` makes it canonical from
    ``oracle.model``), or ``(-1, None)``. With a ``race``, a CryptoMiniSat search may
    finish first (``race.won``): its outcome is returned.
    """
    last: bytes | None = None
    while True:
        status = searcher.run()
        if status:
            break
        if race is not None and race.due(oracle):
            outcome = race.run()
            if outcome is not None:
                return outcome
        sat, model = oracle.solve(acts + searcher.assumptions())
        if sat:
            last = _model_bytes(model, n_vars)
            oracle.model = last
            searcher.resume(True, last, None)
        else:
            searcher.resume(False, None, array("i", oracle.conflict()))
    if status < 0:
        return -1, None
    final = searcher.model()
    return 1, (searcher.assumptions(), None if final == last else final)


class _Race:
    """native's choice between its propagator and CryptoMiniSat, by what it measures.

    Each time the propagator needs the SAT solver (after its first answer) and has by then
    spent at least twice as long as when CryptoMiniSat last tried, and twice what setting
    up a SAT solver took (all measured), CryptoMiniSat gets to
    run the whole search for as long as the propagator has taken so far. If it finishes,
    its outcome is the answer (the same answer, see the module docstring); if not, the
    propagator goes on. Easy problems never ask, so they never race; on a hard one the
    slower engine costs at most about as much again as the faster.
    """

    def __init__(
        self, problem: Problem, factory: BackendFactory, clauses: _Clauses, acts: array[int], t0: float
    ) -> None:
        self.problem = problem
        self.factory = factory
        self.clauses = clauses
        self.acts = acts
        self.t0 = t0
        self.next_at = 0.0
        self.races = 0
        self.won: _Oracle | None = None
        self.lost = _Oracle(factory, clauses)  # counts the work of the races lost

    def due(self, oracle: _Oracle) -> bool:
        """After a first answer, once the time is up and a second solver is worth setting up."""
        spent = perf_counter() - self.t0
        return oracle.calls >= 1 and spent >= self.next_at and spent >= 2 * oracle.setup

    def run(self) -> tuple[int, Any] | None:
        self.races += 1
        spent = perf_counter() - self.t0
        trial = _Oracle(self.factory, self.clauses)
        status, model, _ = _oracle_search(self.problem, trial, self.acts, deadline=perf_counter() + spent)
        if status == 0:
            self.lost.absorb(trial)
            self.next_at = 2 * (perf_counter() - self.t0)
            return None
        self.won = trial
        return status, model


# --------------------------------------------------------------------------- the SAT solver searches


def _oracle_search(
    problem: Problem, oracle: _Oracle, acts: array[int], deadline: float | None = None
) -> tuple[int, Any, dict[str, int]]:
    """The preference search as incremental solving under assumptions.

    Each choice takes its first candidate that holds together with the guesses: the
    current model says so for free when it makes the candidate true, else one call
    decides. The greedy search never takes a guess back, so accepted guesses (and
    refuted candidates) become unit clauses and every call has one assumption.

    Returns ``(1, (guesses, None), counters)``, ``(-1, None, counters)``, or status 0
    when the ``deadline`` (a :func:`~time.perf_counter` time) passed first.
    """
    counters = {"guesses": 0, "rejected": 0}
    sat, found = oracle.solve(acts)
    if not sat:
        return -1, None, counters
    n_vars = problem.n_vars
    model = bytearray(_model_bytes(found, n_vars))
    oracle.add(_units(acts))
    args = problem.args
    nodes = problem.nodes
    vdep_start = problem.vdep_start
    vdep = problem.vdep
    guessed = bytearray(n_vars + 1)
    guesses = array("i")
    queue: deque[tuple[int, int]] = deque((problem.anchor_start + i, 1) for i in range(problem.n_anchors))
    while queue:
        start, length = queue.popleft()
        cands = args[start : start + length]
        if any(guessed[c] for c in cands):
            continue
        for c in cands:
            if not model[c - 1]:
                if deadline is not None and perf_counter() > deadline:
                    return 0, None, counters
                sat, found = oracle.solve((c,))
                if not sat:
                    counters["rejected"] += 1
                    oracle.add(array("i", (-c, 0)))
                    continue
                model = bytearray(_model_bytes(found, n_vars))
            guessed[c] = 1
            guesses.append(c)
            oracle.add(array("i", (c, 0)))
            for t in range(vdep_start[c - 1], vdep_start[c]):
                o = 5 * vdep[t]
                queue.append((nodes[o + 3], nodes[o + 4]))
            break
        else:
            raise SolverError("unexpected internal error: no candidate of a choice holds, the guesses do")
    counters["guesses"] = len(guesses)
    oracle.model = bytes(model)
    return 1, (guesses, None), counters


def _fewer_extras(oracle: _Oracle, acts: array[int], guessed: array[int], model: bytes, n_total: int) -> bytes:
    """Upstream's minimisation of extras, as a head start for :func:`_lexmin`.

    The variables ``model`` makes false stay false, and a counter (the cardinality
    encoding of :func:`~olmkit._solver._pure.encode_counter`) over its extras (true, not
    guessed) bounds how many of them stay true; the smallest bound with a model is found
    by bisection. The canonical model does not depend on where :func:`_lexmin` starts,
    only its number of calls does: each extra left costs one.
    """
    is_guessed = bytearray(len(model) + 1)
    for g in guessed:
        is_guessed[g] = 1
    extras = array("i")
    base = array("i", acts)
    base.extend(guessed)
    for p, bit in enumerate(model):
        v = p + 1
        if is_guessed[v]:
            continue
        if bit:
            extras.append(v)
        else:
            base.append(-v)
    if len(extras) < 2:
        return model
    counter, outs, _ = _encode.get().encode_counter(n_total + 1, extras)
    oracle.add(counter)
    best = model
    lo, hi = -1, len(extras)  # no model with at most lo extras; one with at most hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        sat, found = oracle.solve(base + outs[mid : mid + 1])
        if sat:
            best = _model_bytes(found, len(model))
            hi = sum(best[v - 1] for v in extras)
        else:
            lo = mid
    return best


def _lexmin(oracle: _Oracle, acts: array[int], guessed: array[int], model: bytes) -> bytes:
    """The canonical model: input variables false in order wherever a model allows it.

    Starts from ``model`` (a model of the guesses): a variable it makes false is fixed
    false for free, any other costs one call. Fixed values become unit clauses.
    """
    n_vars = len(model)
    is_guessed = bytearray(n_vars + 1)
    for g in guessed:
        is_guessed[g] = 1
    current = bytearray(model)
    pending = array("i", acts)
    pending.extend(guessed)
    for p in range(n_vars):
        v = p + 1
        if is_guessed[v]:
            continue
        if not current[p]:
            pending.append(-v)
            continue
        oracle.add(_units(pending))
        pending = array("i")
        sat, found = oracle.solve((-v,))
        if sat:
            current = bytearray(_model_bytes(found, n_vars))
            pending.append(-v)
        else:
            pending.append(v)
    return bytes(current)


# --------------------------------------------------------------------------- explanations


def _explain(
    problem: Problem,
    searcher: Any,
    oracle: _Oracle,
    factory: BackendFactory,
    clauses: _Clauses,
    acts: array[int],
    minimize: bool,
    counters: dict[str, int],
    rep: SolverReporter,
) -> tuple[AppliedConstraint, ...]:
    """The constraints that cannot hold together, from a fresh SAT solver's failed assumptions.

    A fresh solver taught the same clauses and asked the same question returns the same
    core whoever searched, so every backend starts the shrinking from the same set.
    Reports the phases ``explain_core`` and ``explain_shrink`` and the counters
    ``core_initial`` and ``core_minimal`` (their sizes).
    """
    t0 = perf_counter()
    if oracle.calls == 1 and searcher is None:
        backend = oracle  # the search's only call was this question, on a fresh solver
    else:
        backend = _Oracle(factory, clauses)
        sat, _ = backend.solve(acts)
        if sat:
            raise SolverError("unexpected internal error: the search found no model, the backend did")
    core = sorted({lit for lit in backend.conflict() if problem.applied(lit) is not None})
    t1 = perf_counter()
    rep.on_phase("explain_core", t1 - t0)
    counters["core_initial"] = len(core)
    if minimize:
        core = _shrink(searcher, backend, core)
    rep.on_phase("explain_shrink", perf_counter() - t1)
    counters["core_minimal"] = len(core)
    if backend is not oracle:
        oracle.absorb(backend)
    applied = []
    for lit in core:
        a = problem.applied(lit)
        assert a is not None
        applied.append(a)
    return tuple(applied)


def _shrink(searcher: Any, backend: _Oracle, core: list[int]) -> list[int]:
    """Deletion-based minimal unsatisfiable subset of the assumptions ``core``.

    Each member is dropped in turn: if the rest is still unsatisfiable the member goes,
    otherwise it is necessary and stays. A propagator (when the backend has one) is tried
    before the SAT solver: unit propagation refutes most subsets of dependency problems,
    and (native only, where it is cheap) completing an assignment proves most others
    satisfiable. The answer depends only on which subsets are satisfiable, never on who
    decided it or on the solver's state, so every backend gives the same explanation.
    """
    complete = bool(searcher is not None and searcher.cheap_completion)
    i = 0
    while i < len(core):
        trial = core[:i] + core[i + 1 :]
        quick = searcher.check(array("i", trial), complete) if searcher is not None else 0
        if quick == 0:
            sat, _ = backend.solve(trial)
            quick = 1 if sat else -1
        if quick < 0:
            core = trial
        else:
            i += 1
    return core
