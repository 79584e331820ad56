"""Constraint texts, applied constraints and the NotSatisfiable message."""

from __future__ import annotations

import pytest

from olmkit._solver import (
    And,
    AppliedConstraint,
    AtMost,
    Conflict,
    Dependency,
    Mandatory,
    Not,
    NotSatisfiable,
    Or,
    Prohibited,
    SolverError,
    Variable,
)
from olmkit.errors import OlmkitError


@pytest.mark.parametrize(
    ("constraint", "text"),
    [
        (Mandatory(), "X is mandatory"),
        (Prohibited(), "X is prohibited"),
        (Dependency(("a", "b")), "X requires at least one of a, b"),
        (Dependency(()), "X has a dependency without any candidates to satisfy it"),
        (Conflict("Y"), "X conflicts with Y"),
        (AtMost(1, ("a", "b")), "X permits at most 1 of a, b"),
        (Not(Mandatory()), "not (X is mandatory)"),
        (Or((Conflict("a"), Mandatory())), "(X conflicts with a) or (X is mandatory)"),
        (And((Prohibited(), Dependency(("b",)))), "(X is prohibited) and (X requires at least one of b)"),
    ],
)
def test_default_texts(constraint, text):
    """Without a message, constraints describe themselves as upstream OLM does."""

    assert text == str(AppliedConstraint("X", constraint))
    assert text == constraint.describe("X")


def test_custom_message_wins():
    """A custom message replaces the default text, also inside a combinator."""

    applied = AppliedConstraint("X", Mandatory(message="subscription s exists"))
    nested = Or((Conflict("a", message="custom"), Mandatory()))

    assert "subscription s exists" == str(applied)
    assert "(custom) or (X is mandatory)" == nested.describe("X")


def test_ids_are_tuples():
    """Identifier lists become tuples; a bare string is one identifier, not its letters."""

    assert ("abc",) == Dependency("abc").ids
    assert ("a", "b") == AtMost(1, ["a", "b"]).ids
    assert (Mandatory(),) == Variable("x", [Mandatory()]).constraints


def test_not_satisfiable_text_is_sorted():
    """The message lists the constraint texts sorted, after upstream's prefix."""

    err = NotSatisfiable(
        applied=(
            AppliedConstraint("b", Prohibited()),
            AppliedConstraint("a", Mandatory()),
            AppliedConstraint("c", Mandatory(message="aardvark")),
        )
    )

    assert "constraints not satisfiable: a is mandatory, aardvark, b is prohibited" == str(err)
    assert ["a is mandatory", "aardvark", "b is prohibited"] == [str(a) for a in err.applied]
    assert isinstance(err, SolverError)
    assert isinstance(err, OlmkitError)
    assert "constraints not satisfiable" == str(NotSatisfiable())
