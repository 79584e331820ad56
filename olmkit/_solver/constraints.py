"""Variables and the constraints that can be applied to them.

The solver knows identifiers (plain strings), variables and constraints, nothing else.
Every constraint is a frozen value with an optional custom ``message``; without one,
:meth:`describe` gives upstream OLM's default text (``solver/constraints.go``).

The basic kinds are the five upstream ones. ``Or``, ``And`` and ``Not`` combine other
constraints of the *same subject*; upstream OLM never produces them, but constraint
plugins may. Only a top-level :class:`Mandatory` makes a variable an anchor of the
search, and only a top-level :class:`Dependency` becomes a choice of the search; inside
a combinator both are plain boolean conditions.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeAlias

import attrs

__all__ = [
    "And",
    "AppliedConstraint",
    "AtMost",
    "Conflict",
    "Constraint",
    "Dependency",
    "Mandatory",
    "Not",
    "Or",
    "Prohibited",
    "Variable",
]


def _ids(value: Iterable[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        # A bare string is almost always a forgotten tuple: ("a") instead of ("a",).
        return (value,)
    return tuple(value)


def _constraints(value: Iterable[Constraint]) -> tuple[Constraint, ...]:
    return tuple(value)


def _text(constraint: Constraint, subject: str) -> str:
    return constraint.message if constraint.message is not None else constraint.describe(subject)


@attrs.frozen
class Mandatory:
    """The subject must be in the solution; subjects with it anchor the search."""

    message: str | None = None

    def describe(self, subject: str) -> str:
        """Return upstream's default text for this constraint applied to ``subject``."""
        return f"{subject} is mandatory"


@attrs.frozen
class Prohibited:
    """The subject must not be in the solution."""

    message: str | None = None

    def describe(self, subject: str) -> str:
        """Return upstream's default text for this constraint applied to ``subject``."""
        return f"{subject} is prohibited"


@attrs.frozen
class Dependency:
    """If the subject is chosen, at least one of ``ids`` must be.

    The order of ``ids`` is the preference order of the search. An empty tuple makes the
    subject impossible.
    """

    ids: tuple[str, ...] = attrs.field(converter=_ids)
    message: str | None = None

    def describe(self, subject: str) -> str:
        """Return upstream's default text for this constraint applied to ``subject``."""
        if not self.ids:
            return f"{subject} has a dependency without any candidates to satisfy it"
        return f"{subject} requires at least one of {', '.join(self.ids)}"


@attrs.frozen
class Conflict:
    """The subject and ``id`` are not both in the solution."""

    id: str
    message: str | None = None

    def describe(self, subject: str) -> str:
        """Return upstream's default text for this constraint applied to ``subject``."""
        return f"{subject} conflicts with {self.id}"


@attrs.frozen
class AtMost:
    """At most ``n`` of ``ids`` are in the solution (an identifier listed twice counts twice)."""

    n: int
    ids: tuple[str, ...] = attrs.field(converter=_ids)
    message: str | None = None

    def describe(self, subject: str) -> str:
        """Return upstream's default text for this constraint applied to ``subject``."""
        return f"{subject} permits at most {self.n} of {', '.join(self.ids)}"


@attrs.frozen
class Or:
    """At least one of ``constraints`` (about the same subject) holds; ``Or(())`` never holds."""

    constraints: tuple[Constraint, ...] = attrs.field(converter=_constraints)
    message: str | None = None

    def describe(self, subject: str) -> str:
        """Return a default text joining the operands' texts with ``or``."""
        if not self.constraints:
            return f"{subject} requires one of no alternatives"
        return " or ".join(f"({_text(c, subject)})" for c in self.constraints)


@attrs.frozen
class And:
    """All of ``constraints`` (about the same subject) hold; ``And(())`` always holds."""

    constraints: tuple[Constraint, ...] = attrs.field(converter=_constraints)
    message: str | None = None

    def describe(self, subject: str) -> str:
        """Return a default text joining the operands' texts with ``and``."""
        if not self.constraints:
            return f"{subject} requires nothing"
        return " and ".join(f"({_text(c, subject)})" for c in self.constraints)


@attrs.frozen
class Not:
    """``constraint`` (about the same subject) does not hold."""

    constraint: Constraint
    message: str | None = None

    def describe(self, subject: str) -> str:
        """Return a default text negating the operand's text."""
        return f"not ({_text(self.constraint, subject)})"


Constraint: TypeAlias = Mandatory | Prohibited | Dependency | Conflict | AtMost | Or | And | Not


@attrs.frozen
class Variable:
    """A boolean decision: is ``id`` in the solution? ``constraints`` restrict the answer."""

    id: str
    constraints: tuple[Constraint, ...] = attrs.field(default=(), converter=_constraints)


@attrs.frozen
class AppliedConstraint:
    """One constraint together with the variable it is applied to."""

    variable: str
    constraint: Constraint

    def __str__(self) -> str:
        return _text(self.constraint, self.variable)
