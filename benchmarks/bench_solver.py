"""Benchmarks of the SAT layer (pytest-benchmark; kept out of the default test run).

Run (the file is named bench_*, so pytest must be told to collect it)::

    pytest benchmarks/bench_solver.py -o python_files='bench_*.py' -o python_functions='bench_*'
    python benchmarks/bench_solver.py          # quick table with phases and counters

Problems, all from fixed seeds:

* ``olm256``: the shape of upstream OLM's ``solver/bench_test.go``: 256 variables, each
  Mandatory with p=.1, a Dependency on 1-5 random others with p=.15, and 1-2 Conflicts
  with p=.05 (Python's RNG, so the same shape, not the same instance).
* ``catalog-*``: OLM-like problems of ~40k and ~100k variables: P packages of B
  bundles, a package-uniqueness variable per package (Mandatory + AtMost(1)), bundles
  depending on lower-numbered packages (candidate lists in preference order), upgrade
  conflicts, and S subscriptions (Mandatory + Dependency on one package's bundles);
  ``-apis`` adds GVK-like uniqueness rules shared by neighbouring packages (the search
  backtracks), ``-unsat`` prohibits what a subscription needs (explanation path).

Every result records which implementation (native C or pure Python) and which SAT
backend ran, in ``extra_info``.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable

from olmkit._solver import (
    AtMost,
    Conflict,
    Dependency,
    Mandatory,
    NotSatisfiable,
    Prohibited,
    SolverReporter,
    Variable,
    _encode,
    solve,
)
from olmkit._solver.backends import default_backend


def olm256(seed: int = 9) -> list[Variable]:
    """Upstream's benchmark input shape (bench_test.go)."""
    length, p_mandatory, p_dependency, n_dependency, p_conflict, n_conflict = 256, 0.1, 0.15, 6, 0.05, 3
    rng = random.Random(seed)

    def other(i: int) -> str:
        y = i
        while y == i:
            y = rng.randrange(length)
        return str(y)

    out = []
    for i in range(length):
        cs: list = []
        if rng.random() < p_mandatory:
            cs.append(Mandatory())
        if rng.random() < p_dependency:
            cs.append(Dependency(tuple(other(i) for _ in range(rng.randrange(n_dependency - 1) + 1))))
        if rng.random() < p_conflict:
            cs.extend(Conflict(other(i)) for _ in range(rng.randrange(n_conflict - 1) + 1))
        out.append(Variable(str(i), tuple(cs)))
    return out


def catalog(
    packages: int = 5000,
    bundles: int = 20,
    subscriptions: int = 200,
    seed: int = 1,
    shared_api: float = 0.0,
    unsatisfiable: bool = False,
) -> list[Variable]:
    """An OLM-like resolution problem: ~packages*bundles bundle variables.

    ``shared_api``: probability that package p's newest five bundles provide an API that
    package p+1's newest five also provide (a GVK uniqueness rule: Mandatory + AtMost(1)),
    which makes the search backtrack. ``unsatisfiable``: every bundle of the first
    subscription's package is prohibited, so the explanation path runs.
    """
    rng = random.Random(seed)
    names = [[f"cat/ns/stable/p{p}.v{b}" for b in range(bundles - 1, -1, -1)] for p in range(packages)]
    out: list[Variable] = []
    for p in range(packages):
        for k, name in enumerate(names[p]):
            cs: list = []
            if p > 0 and rng.random() < 0.3:
                for _ in range(rng.randrange(1, 3)):
                    q = rng.randrange(max(0, p - 200), p)
                    lo = rng.randrange(bundles)
                    cs.append(Dependency(tuple(names[q][: bundles - lo])))
            if k > 0 and rng.random() < 0.05:
                cs.append(Conflict(names[p][k - 1]))
            out.append(Variable(name, tuple(cs)))
    for p in range(packages):
        out.append(Variable(f"p{p}", (Mandatory(), AtMost(1, tuple(names[p])))))
    for p in range(packages - 1):
        if rng.random() < shared_api:
            members = tuple(names[p][:5] + names[p + 1][:5])
            out.append(Variable(f"api{p}", (Mandatory(), AtMost(1, members))))
    for s in range(subscriptions):
        p = rng.randrange(packages)
        out.append(Variable(f"subscription:s{s}", (Mandatory(), Dependency(tuple(names[p])))))
    if unsatisfiable:
        sub = out[-subscriptions]
        doomed = set(sub.constraints[1].ids)  # type: ignore[union-attr]
        out = [Variable(v.id, (*v.constraints, Prohibited())) if v.id in doomed else v for v in out]
    return out


PROBLEMS: dict[str, Callable[[], list[Variable]]] = {
    "olm256": olm256,
    "catalog-2k": lambda: catalog(packages=2000, subscriptions=100),
    "catalog-100k": catalog,
    "catalog-100k-apis": lambda: catalog(shared_api=0.2),
    "catalog-100k-unsat": lambda: catalog(unsatisfiable=True),
}


class PhaseTimer(SolverReporter):
    def __init__(self) -> None:
        self.phases: dict[str, float] = {}
        self.counters: dict[str, int] = {}

    def on_phase(self, name: str, seconds: float) -> None:
        self.phases[name] = seconds

    def on_counters(self, counters) -> None:
        self.counters = dict(counters)


def run(variables: list[Variable], reporter: SolverReporter | None = None) -> int:
    try:
        return len(solve(variables, reporter=reporter))
    except NotSatisfiable as e:
        return -len(e.applied)


try:
    import pytest
except ImportError:  # pragma: no cover - the __main__ mode needs no pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:
    _CACHE: dict[str, list[Variable]] = {}

    @pytest.fixture(params=_encode.available())
    def implementation(request):
        old = _encode.set_implementation(request.param)
        yield request.param
        _encode.set_implementation(old)

    @pytest.mark.parametrize("problem", list(PROBLEMS))
    def bench_solve(benchmark, implementation, problem):
        rounds = 1 if problem.startswith("catalog-100k") and implementation == "pure" else 5
        variables = _CACHE.setdefault(problem, PROBLEMS[problem]())
        timer = PhaseTimer()
        benchmark.extra_info.update(implementation=implementation, backend=default_backend(), variables=len(variables))
        result = benchmark.pedantic(run, args=(variables, timer), rounds=rounds, iterations=1)
        benchmark.extra_info.update(result=result, phases=timer.phases, counters=timer.counters)


def main() -> int:
    """Print one timing line per problem and implementation."""
    print(f"{'problem':14} {'impl':7} {'vars':>7} {'result':>7} {'total s':>8}  phases / counters")
    for name, make in PROBLEMS.items():
        variables = make()
        for impl in _encode.available():
            _encode.set_implementation(impl)
            timer = PhaseTimer()
            t0 = time.perf_counter()
            result = run(variables, timer)
            total = time.perf_counter() - t0
            phases = " ".join(f"{k}={v:.3f}" for k, v in timer.phases.items())
            print(f"{name:14} {impl:7} {len(variables):7} {result:7} {total:8.3f}  {phases} {timer.counters}")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
