"""Progress callbacks of the solver; every one does nothing by default.

Subclass :class:`SolverReporter` and override what you need, to time the phases or
count the work, without any tracing inside the algorithm.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from olmkit._solver.constraints import AppliedConstraint

__all__ = ["PHASES", "SolverReporter"]

#: Phase names passed to :meth:`SolverReporter.on_phase`, in the order they run
#: (``explain_core`` and ``explain_shrink`` are the two parts of ``explain``).
PHASES = ("encode", "search", "minimize", "explain_core", "explain_shrink", "explain")


class SolverReporter:
    """No-op callbacks for one :func:`olmkit._solver.solve` call."""

    def on_start(self, *, variables: int, constraints: int, implementation: str, backend: str) -> None:
        """A solve starts: the input's size and which encoder and backend run it."""

    def on_phase(self, name: str, seconds: float) -> None:
        """A phase (see :data:`PHASES`) finished after ``seconds``."""

    def on_counters(self, counters: Mapping[str, int]) -> None:
        """Counters of the finished search: guesses, backtracks, propagations, solver calls..."""

    def on_guesses(self, guessed: Sequence[str]) -> None:
        """The identifiers the preference search settled on, in guess order."""

    def on_result(self, selected: Sequence[str]) -> None:
        """The identifiers in the solution, in input order."""

    def on_unsatisfiable(self, applied: Sequence[AppliedConstraint]) -> None:
        """No solution: ``applied`` is the explanation that will be raised."""
