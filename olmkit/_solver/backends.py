"""Solver backends: the engines that run a solve, and the SAT solvers they use.

Three built-in backends (``solve(backend=NAME)``, ``--solver NAME``) run the whole search
and give byte-identical answers and explanations (the answer is defined by which sets of
assumptions are satisfiable, never by which solver found a model):

* ``cryptominisat``: CryptoMiniSat does everything: the preference search is incremental
  solving under assumptions (one guess per call, accepted guesses become unit clauses),
  then the canonical model and the explanation.
* ``native``: the C propagator runs the search and asks CryptoMiniSat only what
  propagation cannot decide; when its measured cost says the propagator is losing (see
  :mod:`olmkit._solver._solve`), it hands the search to CryptoMiniSat.
* ``pure``: the same propagator path on the pure-Python twin (no C needed).

The default is ``native`` when the C part is built (and ``OLMKIT_PURE_PYTHON`` is unset),
else ``pure``. A *SAT solver* (the :class:`Backend` protocol) is created fresh for every
:func:`olmkit._solver.solve` call, and only when it is needed. Plugins add SAT solvers
with :func:`register_backend`; a registered name runs the propagator of the
implementation in use with that solver for its questions. This module knows nothing of
plugins; the kernel exposes it through a registration hook.

.. versionadded:: 0.1
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from array import array
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Protocol, runtime_checkable

from olmkit._solver import _encode

if TYPE_CHECKING:
    from olmkit._solver.errors import SolverError


__all__ = [
    "DEFAULT_BACKEND",
    "ENGINES",
    "Backend",
    "BackendFactory",
    "CryptoMiniSatBackend",
    "backend_names",
    "default_backend",
    "describe",
    "engine_of",
    "get_backend",
    "get_backend_or_none",
    "instrument",
    "register_backend",
]


def _error(message: str) -> SolverError:
    """A :class:`~olmkit._solver.errors.SolverError` (imported when one is raised: the error
    classes need attrs, which ``olmkit --version`` and the names of the backends do not)."""
    from olmkit._solver.errors import SolverError

    return SolverError(message)


#: The built-in backends that run a whole solve (see the module docstring).
ENGINES = ("cryptominisat", "native", "pure")


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


_INSTRUMENT = False
_SOLVE_LINE = re.compile(rb"^c \[solve\] .*? confl: (\d+)", re.MULTILINE)


def instrument(enabled: bool) -> bool:
    """Make new :class:`CryptoMiniSatBackend` s count their conflicts; return the old setting.

    pycryptosat has no statistics call: a counting solver runs each solve at verbosity 1
    with the process's standard output sent to a temporary file, and reads the
    ``c [solve] ... confl: N`` line CryptoMiniSat prints. That costs a little, so only
    benchmarks turn it on; the counter is 0 otherwise.
    """
    global _INSTRUMENT
    old = _INSTRUMENT
    _INSTRUMENT = enabled
    return old


class CryptoMiniSatBackend:
    """The SAT solver of every built-in backend: CryptoMiniSat through pycryptosat, single-threaded.

    ``calls`` counts :meth:`solve` calls; ``conflicts`` the solver's conflicts when
    :func:`instrument` was on at creation (else it stays 0).
    """

    name = "cryptominisat"

    def __init__(self) -> None:
        import pycryptosat

        # Models that lean true make most preferred candidates true already, so the
        # cryptominisat backend's search needs far fewer calls (a third of the time on
        # the P=2000 gen_catalog workload); answers do not depend on it.
        self._solver = pycryptosat.Solver(threads=1, options={"polar": "true"})
        self._n_vars = 0
        self.calls = 0
        self.conflicts = 0
        # closed with the backend (__del__): it lives as long as the solver does
        self._log: IO[bytes] | None = tempfile.TemporaryFile() if _INSTRUMENT else None  # noqa: SIM115

    def __del__(self) -> None:
        if self._log is not None:
            self._log.close()

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
        self.calls += 1
        if self._log is None:
            sat, model = self._solver.solve(assumptions)
        else:
            sat, model = self._counted(assumptions)
        return bool(sat), model

    def _counted(self, assumptions: list[int]) -> tuple[bool, Sequence[bool | None] | None]:
        log = self._log
        assert log is not None
        sys.stdout.flush()
        start = log.seek(0, os.SEEK_END)
        saved = os.dup(1)
        try:
            os.dup2(log.fileno(), 1)
            sat, model = self._solver.solve(assumptions, verbose=1)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        log.seek(start)
        self.conflicts += sum(int(m.group(1)) for m in _SOLVE_LINE.finditer(log.read()))
        return sat, model

    def get_conflict(self) -> list[int]:
        # CryptoMiniSat reports the negations of the failed assumptions.
        return [-lit for lit in self._solver.get_conflict()]


#: The SAT solver the built-in backends use (``get_backend()`` returns its factory).
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
        raise _error("a SAT backend needs a non-empty name")
    if name in ("native", "pure"):
        raise _error(f"SAT backend name {name!r} is reserved for a built-in backend")
    if name in _REGISTRY and not replace and _REGISTRY[name] is not factory:
        raise _error(f"SAT backend {name!r} is already registered")
    _REGISTRY[name] = factory


def default_backend() -> str:
    """The backend used when none is named: ``native`` on the C part, else ``pure``.

    .. versionadded:: 0.3
    """
    return "native" if _encode.IMPLEMENTATION == "native" else "pure"


def engine_of(name: str | None) -> tuple[str, str, BackendFactory]:
    """How backend ``name`` runs: ``(backend, engine, SAT solver factory)``.

    ``engine`` is ``"cryptominisat"`` (the SAT solver searches), ``"native"`` or ``"pure"``
    (that propagator searches); a plugin's SAT solver runs with the propagator in use.

    Raises:
        SolverError: no backend of that name, or ``native`` without the C part.

    .. versionadded:: 0.3
    """
    key = default_backend() if name is None else name.strip()
    if key in ("native", "pure"):
        if key == "native" and "native" not in _encode.available():
            raise _error("SAT backend 'native' needs the C part, which is not built (use 'pure')")
        return key, key, _REGISTRY[DEFAULT_BACKEND]
    factory = get_backend(key)
    if key == DEFAULT_BACKEND and factory is CryptoMiniSatBackend:
        return key, "cryptominisat", factory
    return key, _encode.IMPLEMENTATION, factory


def get_backend(name: str | None = None) -> BackendFactory:
    """The SAT solver factory of backend ``name`` (CryptoMiniSat when ``None``).

    Raises:
        SolverError: no backend of that name is registered.
    """
    key = DEFAULT_BACKEND if name is None else name.strip()
    if key in ("native", "pure"):
        key = DEFAULT_BACKEND
    try:
        return _REGISTRY[key]
    except KeyError:
        known = ", ".join(backend_names())
        raise _error(f"unknown SAT backend {key!r} (available: {known})") from None


def get_backend_or_none(name: str) -> BackendFactory | None:
    """The SAT solver factory registered as ``name``, or ``None``."""
    return _REGISTRY.get(name.strip())


def backend_names() -> tuple[str, ...]:
    """Names of the backends usable in this process, sorted (``native`` only with the C part)."""
    names = set(_REGISTRY) | set(ENGINES)
    if "native" not in _encode.available():
        names.discard("native")
    return tuple(sorted(names))


def describe() -> str:
    """One line for ``--version`` and ``plugins list``: implementation and backends.

    .. versionadded:: 0.3
    """
    return f"solver: {_encode.describe()}; backends: {', '.join(backend_names())} (default {default_backend()})"
