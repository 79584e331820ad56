"""Errors raised by the SAT layer.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from olmkit._solver.constraints import AppliedConstraint
from olmkit.errors import OlmkitError

__all__ = ["DuplicateIdentifier", "InvalidInput", "NotSatisfiable", "SolverError"]


@attrs.define(auto_exc=True, eq=False)
class SolverError(OlmkitError):
    """The solver could not run on its input (bad input, unknown backend, internal failure)."""


@attrs.define(auto_exc=True, eq=False)
class DuplicateIdentifier(SolverError):
    """Two input variables share an identifier.

    Args:
        identifier: the shared identifier.
    """

    identifier: str = attrs.field(default="", kw_only=True)

    def __str__(self) -> str:
        return f'duplicate identifier "{self.identifier}" in input'


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.define(auto_exc=True, eq=False)
class InvalidInput(SolverError):
    """The input is inconsistent: constraints name unknown variables or carry bad values.

    Args:
        problems: one text per problem, in input order.
    """

    problems: tuple[str, ...] = attrs.field(default=(), kw_only=True, converter=_strings)

    def __str__(self) -> str:
        return f"{len(self.problems)} errors encountered: {', '.join(self.problems)}"


def _sorted_applied(value: object) -> tuple[AppliedConstraint, ...]:
    return tuple(sorted(value, key=str))  # type: ignore[call-overload]


@attrs.define(auto_exc=True, eq=False)
class NotSatisfiable(SolverError):
    """No solution exists; ``applied`` is a set of constraints that cannot hold together.

    The constraints are kept sorted by their text, as upstream OLM reports them.

    Args:
        applied: the conflicting constraints (minimal unless the caller asked otherwise).
    """

    applied: tuple[AppliedConstraint, ...] = attrs.field(default=(), kw_only=True, converter=_sorted_applied)
    exit_code: int = attrs.field(default=1, kw_only=True)

    def __str__(self) -> str:
        if not self.applied:
            return "constraints not satisfiable"
        return "constraints not satisfiable: " + ", ".join(str(a) for a in self.applied)
