"""olmkit's SAT layer: identifiers, variables and constraints, nothing of OLM.

``solve(variables)`` returns the variables to install, following upstream OLM's solver
exactly: activation literals on every constraint, greedy breadth-first preference search
from the anchors with chronological backtracking, minimisation of extras, and minimal
explanations of failures. The hot path (clause encoding, unit propagation, the search
loop) is C (``encode.c``) with a pure-Python twin; :func:`implementation` says which runs
(:data:`IMPLEMENTATION`: which ran when the module was imported), :func:`describe_implementation`
says it for people.

One exception to "nothing of OLM": the C extension built here also carries ``scan.c``
(:mod:`olmkit._solver._scan`), the catalog loader's scanner of file-based-catalog lines,
which knows the shape of a bundle blob, and ``channels.c`` (:mod:`olmkit._solver._channels`),
its reader of plain channel lines. They live here because olmkit builds one C extension;
:mod:`olmkit.catalog` is their only user.

.. versionadded:: 0.1
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from olmkit._solver._channels import ChannelLines
    from olmkit._solver._channels import reader as channel_reader
    from olmkit._solver._classes import lay_out
    from olmkit._solver._encode import IMPLEMENTATION
    from olmkit._solver._encode import current as implementation
    from olmkit._solver._encode import describe as describe_implementation
    from olmkit._solver._expand import Block, Expansion, Heads, LazyVariables, expand
    from olmkit._solver._group import ascending, group, scatter, take
    from olmkit._solver._problem import Problem

    # the constraint codes of Block templates and problem arrays
    from olmkit._solver._pure import CONFLICT, DEPENDENCY, MANDATORY, PROHIBITED
    from olmkit._solver._scan import CANONICALISE as SCAN_CANONICALISE
    from olmkit._solver._scan import FILE_INTS as SCAN_FILE_INTS
    from olmkit._solver._scan import ODD as SCAN_ODD
    from olmkit._solver._scan import VALUE_FIRST as SCAN_VALUE_FIRST
    from olmkit._solver._scan import FileScan, rows_index
    from olmkit._solver._scan import TypeReading as ScanReading
    from olmkit._solver._scan import scanner as line_scanner
    from olmkit._solver._select import select
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

#: where each public name lives (module, name there): imported on first use, so that
#: ``olmkit --version`` (which names the implementation and the backends) does not pay for
#: the whole solver
_EXPORTS: dict[str, tuple[str, str]] = {
    "And": ("constraints", "And"),
    "AppliedConstraint": ("constraints", "AppliedConstraint"),
    "AtMost": ("constraints", "AtMost"),
    "Backend": ("backends", "Backend"),
    "BackendFactory": ("backends", "BackendFactory"),
    "Block": ("_expand", "Block"),
    "CONFLICT": ("_pure", "CONFLICT"),
    "Conflict": ("constraints", "Conflict"),
    "Constraint": ("constraints", "Constraint"),
    "CryptoMiniSatBackend": ("backends", "CryptoMiniSatBackend"),
    "DEFAULT_BACKEND": ("backends", "DEFAULT_BACKEND"),
    "DEPENDENCY": ("_pure", "DEPENDENCY"),
    "Dependency": ("constraints", "Dependency"),
    "DuplicateIdentifier": ("errors", "DuplicateIdentifier"),
    "Expansion": ("_expand", "Expansion"),
    "FileScan": ("_scan", "FileScan"),
    "Heads": ("_expand", "Heads"),
    "IMPLEMENTATION": ("_encode", "IMPLEMENTATION"),
    "InvalidInput": ("errors", "InvalidInput"),
    "LazyVariables": ("_expand", "LazyVariables"),
    "MANDATORY": ("_pure", "MANDATORY"),
    "Mandatory": ("constraints", "Mandatory"),
    "Not": ("constraints", "Not"),
    "NotSatisfiable": ("errors", "NotSatisfiable"),
    "Or": ("constraints", "Or"),
    "PHASES": ("reporter", "PHASES"),
    "PROHIBITED": ("_pure", "PROHIBITED"),
    "Problem": ("_problem", "Problem"),
    "Prohibited": ("constraints", "Prohibited"),
    "SCAN_CANONICALISE": ("_scan", "CANONICALISE"),
    "SCAN_FILE_INTS": ("_scan", "FILE_INTS"),
    "SCAN_ODD": ("_scan", "ODD"),
    "SCAN_VALUE_FIRST": ("_scan", "VALUE_FIRST"),
    "ScanReading": ("_scan", "TypeReading"),
    "SolverError": ("errors", "SolverError"),
    "SolverReporter": ("reporter", "SolverReporter"),
    "Variable": ("constraints", "Variable"),
    "backend_names": ("backends", "backend_names"),
    "describe_implementation": ("_encode", "describe"),
    "expand": ("_expand", "expand"),
    "get_backend": ("backends", "get_backend"),
    "group": ("_group", "group"),
    "ascending": ("_group", "ascending"),
    "scatter": ("_group", "scatter"),
    "take": ("_group", "take"),
    "implementation": ("_encode", "current"),
    "lay_out": ("_classes", "lay_out"),
    "line_scanner": ("_scan", "scanner"),
    "channel_reader": ("_channels", "reader"),
    "ChannelLines": ("_channels", "ChannelLines"),
    "select": ("_select", "select"),
    "register_backend": ("backends", "register_backend"),
    "rows_index": ("_scan", "rows_index"),
    "solve": ("_solve", "solve"),
    "solve_problem": ("_solve", "solve_problem"),
}


def __getattr__(name: str) -> Any:
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{where[0]}"), where[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "CONFLICT",
    "DEFAULT_BACKEND",
    "DEPENDENCY",
    "IMPLEMENTATION",
    "MANDATORY",
    "PHASES",
    "PROHIBITED",
    "SCAN_CANONICALISE",
    "SCAN_FILE_INTS",
    "SCAN_ODD",
    "SCAN_VALUE_FIRST",
    "And",
    "AppliedConstraint",
    "AtMost",
    "Backend",
    "BackendFactory",
    "Block",
    "ChannelLines",
    "Conflict",
    "Constraint",
    "CryptoMiniSatBackend",
    "Dependency",
    "DuplicateIdentifier",
    "Expansion",
    "FileScan",
    "Heads",
    "InvalidInput",
    "LazyVariables",
    "Mandatory",
    "Not",
    "NotSatisfiable",
    "Or",
    "Problem",
    "Prohibited",
    "ScanReading",
    "SolverError",
    "SolverReporter",
    "Variable",
    "ascending",
    "backend_names",
    "channel_reader",
    "describe_implementation",
    "expand",
    "get_backend",
    "group",
    "implementation",
    "lay_out",
    "line_scanner",
    "register_backend",
    "rows_index",
    "scatter",
    "select",
    "solve",
    "solve_problem",
    "take",
]
