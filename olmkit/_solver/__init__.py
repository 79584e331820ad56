"""olmkit's SAT layer: identifiers, variables and constraints, nothing of OLM.

``solve(variables)`` returns the variables to install, following upstream OLM's solver
exactly: activation literals on every constraint, greedy breadth-first preference search
from the anchors with chronological backtracking, minimisation of extras, and minimal
explanations of failures. The hot path (clause encoding, unit propagation, the search
loop) is C (``encode.c``) with a pure-Python twin; :func:`implementation` says which runs
(:data:`IMPLEMENTATION`: which ran when the module was imported), :func:`describe_implementation`
says it for people.

.. versionadded:: 0.1
"""

from __future__ import annotations

from olmkit._solver._encode import IMPLEMENTATION
from olmkit._solver._encode import current as implementation
from olmkit._solver._encode import describe as describe_implementation
from olmkit._solver._expand import Block, Expansion, Heads, LazyVariables, expand
from olmkit._solver._problem import Problem

# the constraint codes of Block templates and problem arrays
from olmkit._solver._pure import CONFLICT, DEPENDENCY, MANDATORY, PROHIBITED
from olmkit._solver._solve import solve, solve_problem
from olmkit._solver.backends import (
    DEFAULT_BACKEND,
    Backend,
    BackendFactory,
    CryptoMiniSatBackend,
    backend_names,
    get_backend,
    register_backend,
)
from olmkit._solver.constraints import (
    And,
    AppliedConstraint,
    AtMost,
    Conflict,
    Constraint,
    Dependency,
    Mandatory,
    Not,
    Or,
    Prohibited,
    Variable,
)
from olmkit._solver.errors import DuplicateIdentifier, InvalidInput, NotSatisfiable, SolverError
from olmkit._solver.reporter import PHASES, SolverReporter

__all__ = [
    "CONFLICT",
    "DEFAULT_BACKEND",
    "DEPENDENCY",
    "IMPLEMENTATION",
    "MANDATORY",
    "PHASES",
    "PROHIBITED",
    "And",
    "AppliedConstraint",
    "AtMost",
    "Backend",
    "BackendFactory",
    "Block",
    "Conflict",
    "Constraint",
    "CryptoMiniSatBackend",
    "Dependency",
    "DuplicateIdentifier",
    "Expansion",
    "Heads",
    "InvalidInput",
    "LazyVariables",
    "Mandatory",
    "Not",
    "NotSatisfiable",
    "Or",
    "Problem",
    "Prohibited",
    "SolverError",
    "SolverReporter",
    "Variable",
    "backend_names",
    "describe_implementation",
    "expand",
    "get_backend",
    "implementation",
    "register_backend",
    "solve",
    "solve_problem",
]
