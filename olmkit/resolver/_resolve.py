"""The kernel's resolver: :func:`resolve` and the ``olmkit_resolve`` hook's work (see :mod:`olmkit.resolver`).

Imported when a resolution is asked for, so that registering the kernel's hook (every command
that loads the plugins) does not import the resolver, the solver and their classes.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Mapping, Sequence
from typing import Any

from olmkit._solver import NotSatisfiable, SolverReporter, register_backend, solve_problem
from olmkit._solver.backends import ENGINES, get_backend_or_none
from olmkit.errors import OlmkitError
from olmkit.resolver._build import Entry, Problem
from olmkit.resolver.explain import explain
from olmkit.resolver.request import (
    CONSTRAINTS_NOT_SATISFIABLE,
    ERROR_PREVENTED_RESOLUTION,
    Resolution,
    ResolutionRequest,
    Step,
    SubscriptionRef,
)

__all__ = ["resolve", "use_solver_backends"]


class _Timer(SolverReporter):
    """Keeps the solver's phase timings, and its counters as ``sat_*`` counters."""

    def __init__(self, timings: dict[str, float], counters: dict[str, int]) -> None:
        self.timings = timings
        self.counters = counters

    def on_phase(self, name: str, seconds: float) -> None:
        self.timings[name] = self.timings.get(name, 0.0) + seconds

    def on_counters(self, counters: Mapping[str, int]) -> None:
        self.counters.update((f"sat_{k}", int(v)) for k, v in counters.items())


def _cel_count() -> int:
    """CEL evaluations so far (0 when no CEL plugin reports them)."""
    import sys

    module = sys.modules.get("olmkit.plugins.requirements")
    stats = getattr(module, "_CEL_STATS", None)
    return int(stats["evaluated"]) if stats else 0


def resolve(request: ResolutionRequest) -> Resolution:
    """Resolve one namespace.

    Returns:
        A :class:`Resolution`: ``ok`` with steps, ``unsatisfiable`` with upstream's message
        and an explanation, or ``error`` (a hard error: bad constraint, broken catalog,
        unreachable source, not exactly one OperatorGroup).
    """
    # resolution allocates many small, long-lived objects: the cyclic GC would rescan them
    # again and again for nothing (it halves the time); it runs normally again afterwards
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _resolve(request)
    finally:
        if gc_was_enabled:
            gc.enable()


def use_solver_backends(registry: Any) -> None:
    """Make the SAT solvers plugins register (``olmkit_solver_backends``) usable by name.

    The built-in backends' names stay theirs: a plugin cannot replace them.
    """
    for record in registry.solver_backends.values():
        if record.name not in ENGINES and get_backend_or_none(record.name) is not record.factory:
            register_backend(record.name, record.factory, replace=True)


def _resolve(request: ResolutionRequest) -> Resolution:
    start = time.perf_counter()
    problem = Problem(request)
    cel_before = _cel_count()
    try:
        solver_problem = problem.build()
        use_solver_backends(request.registry)
        solve_start = time.perf_counter()
        chosen = solve_problem(
            solver_problem, backend=request.backend, reporter=_Timer(problem.timings, problem.counters)
        )
        problem.timings["solve"] = time.perf_counter() - solve_start
    except NotSatisfiable as exc:
        problem.timings["total"] = time.perf_counter() - start
        for applied in exc.applied:  # the conflict's constraints by type, for metrics
            key = "unsat_" + type(applied.constraint).__name__.lower()
            problem.counters[key] = problem.counters.get(key, 0) + 1
        return Resolution(
            namespace=request.namespace,
            status="unsatisfiable",
            message=str(exc),
            reason=CONSTRAINTS_NOT_SATISFIABLE,
            explanation=explain(problem, exc.applied),
            timings=problem.timings,
            counters=problem.counters,
        )
    except OlmkitError as exc:
        problem.timings["total"] = time.perf_counter() - start
        return Resolution(
            namespace=request.namespace,
            status="error",
            message=str(exc),
            reason=ERROR_PREVENTED_RESOLUTION,
            timings=problem.timings,
            counters=problem.counters,
        )
    problem.counters["cel_evaluations"] = _cel_count() - cel_before
    steps_start = time.perf_counter()
    steps = _steps(problem, chosen)
    problem.timings["steps"] = time.perf_counter() - steps_start
    problem.timings["total"] = time.perf_counter() - start
    return Resolution(
        namespace=request.namespace, status="ok", steps=steps, timings=problem.timings, counters=problem.counters
    )


def _matching_subscriptions(by_package: Mapping[str, list[SubscriptionRef]], entry: Entry) -> list[SubscriptionRef]:
    assert entry.source is not None
    out = []
    for sub in by_package.get(entry.package, ()):
        if sub.channel and sub.channel != entry.channel:
            continue
        if sub.source and (sub.source, sub.source_namespace) != (entry.source.name, entry.source.namespace):
            continue
        out.append(sub)
    return out


def _steps(problem: Problem, chosen: Sequence[int]) -> list[Step]:
    steps = []
    by_package: dict[str, list[SubscriptionRef]] = {}  # in request order within a package
    for sub in problem.request.subscriptions:
        by_package.setdefault(sub.package, []).append(sub)
    for item in problem.items_of(chosen):  # not subscriptions, invariants
        entry = problem.entry(item)
        if entry.source is None:
            continue  # installed CSVs
        subs = _matching_subscriptions(by_package, entry)
        name = entry.name
        if subs and name in problem.existing_by_name and all(s.current_csv == name for s in subs):
            continue  # already the current CSV
        properties, content = problem.deferred_bundle(item)
        steps.append(
            Step(
                bundle=name,
                package=entry.package,
                version=entry.version,
                channel=entry.channel,
                catalog=entry.source.name,
                catalog_namespace=entry.source.namespace,
                replaces=problem.replaces_of(item),
                subscription=min((s.name for s in subs), default=None),
                image=problem.image(item),
                properties=properties,
                content=content,
            )
        )
    return steps
