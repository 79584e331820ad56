"""Explanations: a failure's minimal conflicting constraints as readable trees.

Each tree starts at what the user asked for or has (a subscription, an installed CSV,
a namespace-wide rule) and goes down: which bundles were candidates, what each one
requires, its failure message, and what would satisfy it.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from olmkit._solver import AppliedConstraint, AtMost, Conflict, Dependency, Mandatory, Prohibited
from olmkit.resolver.request import ExplanationNode

if TYPE_CHECKING:
    from olmkit.resolver._build import Problem

__all__ = ["explain"]


def _requirement_node(problem: Problem, applied: AppliedConstraint, message: str) -> ExplanationNode:
    info = problem.dependency_info(applied.variable, applied.constraint)
    children: list[ExplanationNode] = []
    if info is not None and info.predicate is not None:
        failure = getattr(info.predicate, "failure_message", "")
        if failure:
            children.append(ExplanationNode(f"failure message: {failure}"))
        if info.candidates:
            children.append(
                ExplanationNode(
                    "candidates, in preference order (each is excluded by another constraint):",
                    [ExplanationNode(c) for c in info.candidates],
                )
            )
        else:
            children.append(ExplanationNode("no bundle in the visible catalogs or installed CSVs matches"))
        children.append(ExplanationNode(f"would satisfy it: a bundle {info.predicate} in a visible catalog"))
    return ExplanationNode(message, children)


def _subscription_node(problem: Problem, applied: AppliedConstraint) -> ExplanationNode:
    info = problem.dependency_info(applied.variable, applied.constraint)
    children: list[ExplanationNode] = []
    if info is not None and info.subscription is not None:
        sub = info.subscription
        where = (
            f"package {sub.package}, channel {sub.channel or '(default)'}, catalog {sub.source_namespace}/{sub.source}"
        )
        children.append(ExplanationNode(where))
        if not info.candidates:
            children.append(
                ExplanationNode(
                    "would satisfy it: a bundle of that package and channel that can be installed"
                    + (
                        f" (one that replaces, skips or skipRange-covers {sub.installed_csv})"
                        if sub.installed_csv
                        else ""
                    )
                )
            )
        for c in info.candidates:
            reqs = []
            for constraint in problem.constraints_of(c):
                if isinstance(constraint, Dependency) and constraint.message:
                    reqs.append(ExplanationNode(constraint.message))
            children.append(ExplanationNode(f"candidate {c}", reqs))
    return ExplanationNode(str(applied), children)


def _node(problem: Problem, applied: AppliedConstraint) -> ExplanationNode:
    c = applied.constraint
    text = str(applied)
    if isinstance(c, Dependency):
        if applied.variable.startswith("subscription:"):
            return _subscription_node(problem, applied)
        return _requirement_node(problem, applied, text)
    if isinstance(c, Prohibited) and applied.variable.startswith("subscription:"):
        return ExplanationNode(
            text, [ExplanationNode("would satisfy it: fix the subscription's source, package, channel or startingCSV")]
        )
    if isinstance(c, Prohibited):
        return ExplanationNode(text, [ExplanationNode("would satisfy it: a bundle that is not deprecated")])
    if isinstance(c, AtMost):
        return ExplanationNode(
            text, [ExplanationNode("would satisfy it: keep only one of them (drop a subscription or an installed CSV)")]
        )
    if isinstance(c, Conflict):
        return ExplanationNode(text, [ExplanationNode("an upgrade replaces the installed CSV: both cannot stay")])
    if isinstance(c, Mandatory):
        return ExplanationNode(text)
    return ExplanationNode(text)


def explain(problem: Problem, applied: Sequence[AppliedConstraint]) -> tuple[ExplanationNode, ...]:
    """Trees for a conflicting set, grouped by the variable the constraints apply to."""
    groups: dict[str, list[AppliedConstraint]] = {}
    for a in applied:
        groups.setdefault(a.variable, []).append(a)
    roots = []
    for variable in sorted(groups, key=lambda v: (not v.startswith("subscription:"), v)):
        label = _label(problem, variable)
        roots.append(ExplanationNode(label, [_node(problem, a) for a in groups[variable]]))
    return tuple(roots)


def _label(problem: Problem, variable: str) -> str:
    if variable.startswith("subscription:"):
        return f"subscription {variable.split(':', 1)[1]}"
    entry: Any = problem.subject(variable)
    if entry is None:
        return f"rule {variable}"
    if entry.installed is not None:
        return f"installed {variable}"
    return f"bundle {variable}"
