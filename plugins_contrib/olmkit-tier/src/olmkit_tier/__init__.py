"""olmkit-tier: bundles declare a service tier; dependencies can ask for a minimum tier.

A bundle carries ``{"type": "example.io/tier", "value": "gold"}``. Another bundle can then
require a provider of at least some tier, alone or combined with built-in keys::

    {"type": "olm.constraint", "value": {
        "failureMessage": "needs a gold-tier database",
        "all": {"constraints": [
            {"gvk": {"group": "db.example.io", "version": "v1", "kind": "PostgresCluster"}},
            {"tier": {"atLeast": "gold"}}]}}}
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any

import attrs

from olmkit import hookimpl
from olmkit.types import ConstraintEvaluator, PropertyType, PropertyView, RequirementContext

__all__ = ["PROPERTY", "TIERS", "TierAtLeast"]

PROPERTY = "example.io/tier"
TIERS = ("bronze", "silver", "gold")


def parse_tier(value: Any) -> str:
    """A tier is one of :data:`TIERS`."""
    if value not in TIERS:
        raise ValueError(f"tier must be one of {', '.join(TIERS)}, not {value!r}")
    return str(value)


@attrs.frozen
class TierAtLeast:
    """Matches bundles whose tier is at least ``minimum``."""

    minimum: str
    lookup: tuple[str, Hashable] | None = None

    def matches(self, candidate: PropertyView) -> bool:
        rank = TIERS.index(self.minimum)
        return any(TIERS.index(tier) >= rank for tier in candidate.values(PROPERTY))

    def __str__(self) -> str:
        return f"with tier at least: {self.minimum}"


def build_tier(value: Any, context: RequirementContext) -> TierAtLeast:
    """``{"atLeast": "<tier>"}`` -> :class:`TierAtLeast`."""
    if not isinstance(value, dict) or set(value) != {"atLeast"}:
        raise ValueError('tier constraint must be {"atLeast": "<tier>"}')
    return TierAtLeast(parse_tier(value["atLeast"]))


@hookimpl
def olmkit_property_types() -> Iterator[PropertyType]:
    yield PropertyType(
        name=PROPERTY,
        parse=parse_tier,
        index_keys=lambda tier: (tier,),
        description="service tier of a bundle: bronze, silver or gold",
    )


@hookimpl
def olmkit_constraint_evaluators() -> Iterator[ConstraintEvaluator]:
    yield ConstraintEvaluator(key="tier", build=build_tier, description="provider tier at least a given tier")
