"""SAT backends: the protocol, the registry and the default CryptoMiniSat backend.

The search itself runs in :mod:`olmkit._solver._encode`'s propagator; a backend is asked
only for what unit propagation cannot decide (a model when the greedy completion fails,
cardinality minimisation of extras, and conflict explanations). A backend is created
fresh for every :func:`olmkit._solver.solve` call, and only when it is needed.

Plugins add backends with :func:`register_backend`; the kernel exposes that through a
registration hook, this module knows nothing of plugins.

.. versionadded:: 0.1
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from olmkit._solver.errors import SolverError

__all__ = [
    "DEFAULT_BACKEND",
    "Backend",
    "BackendFactory",
    "CryptoMiniSatBackend",
    "backend_names",
    "get_backend",
    "register_backend",
]


@runtime_checkable
class Backend(Protocol):
    """An incremental SAT solver with assumptions.

    Literals are non-zero ints in DIMACS style: ``v`` or ``-v`` for variable ``v >= 1``.
    """

    def add_clauses(self, clauses: array[int]) -> None:
        """Add clauses: an ``array('i')`` of zero-terminated clauses."""

    def solve(self, assumptions: Sequence[int]) -> tuple[bool, Sequence[bool | None] | None]:
        """Solve under ``assumptions`` (valid for this call only).

        Returns:
            ``(True, model)`` where ``model[v]`` is the value of variable ``v`` (index 0
            unused), or ``(False, None)``.
        """

    def get_conflict(self) -> list[int]:
        """After an unsatisfiable :meth:`solve`, a subset of its assumptions that fails."""


BackendFactory = Callable[[], Backend]


class CryptoMiniSatBackend:
    """The default backend: CryptoMiniSat through pycryptosat, single-threaded."""

    name = "cryptominisat"

    def __init__(self) -> None:
        import pycryptosat

        self._solver = pycryptosat.Solver(threads=1)
        self._n_vars = 0

    def add_clauses(self, clauses: array[int]) -> None:
        if len(clauses):
            self._solver.add_clauses(clauses)
            self._n_vars = self._solver.nb_vars()

    def solve(self, assumptions: Sequence[int]) -> tuple[bool, Sequence[bool | None] | None]:
        assumptions = list(assumptions)
        top = max(map(abs, assumptions), default=0)
        if top > self._n_vars:
            # CryptoMiniSat refuses assumptions on variables no clause mentions (an
            # activation literal of a trivially true constraint); a tautology declares it.
            self._solver.add_clause([top, -top])
            self._n_vars = self._solver.nb_vars()
        sat, model = self._solver.solve(assumptions)
        return bool(sat), model

    def get_conflict(self) -> list[int]:
        # CryptoMiniSat reports the negations of the failed assumptions.
        return [-lit for lit in self._solver.get_conflict()]


DEFAULT_BACKEND = CryptoMiniSatBackend.name

_REGISTRY: dict[str, BackendFactory] = {DEFAULT_BACKEND: CryptoMiniSatBackend}


def register_backend(name: str, factory: BackendFactory, *, replace: bool = False) -> None:
    """Make ``factory`` available as backend ``name``.

    Args:
        name: the backend's name, as passed to ``solve(backend=...)``.
        factory: returns a fresh :class:`Backend` each call.
        replace: allow replacing a registered backend of the same name.

    Raises:
        SolverError: ``name`` is already registered and ``replace`` is false.
    """
    name = name.strip()
    if not name:
        raise SolverError("a SAT backend needs a non-empty name")
    if name in _REGISTRY and not replace and _REGISTRY[name] is not factory:
        raise SolverError(f"SAT backend {name!r} is already registered")
    _REGISTRY[name] = factory


def get_backend(name: str | None = None) -> BackendFactory:
    """The factory of backend ``name`` (the default backend when ``None``).

    Raises:
        SolverError: no backend of that name is registered.
    """
    key = DEFAULT_BACKEND if name is None else name.strip()
    try:
        return _REGISTRY[key]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise SolverError(f"unknown SAT backend {key!r} (available: {known})") from None


def backend_names() -> tuple[str, ...]:
    """Names of the registered backends, sorted."""
    return tuple(sorted(_REGISTRY))
