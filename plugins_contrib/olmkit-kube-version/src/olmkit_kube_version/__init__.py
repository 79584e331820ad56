"""olmkit-kube-version: bundles declare the Kubernetes versions they support.

A bundle carries a property with a version range, in the syntax of ``olm.skipRange``::

    {"type": "kubeversion.olmkit.io/supported", "value": ">=1.25.0 <1.31.0"}

and the cluster's Kubernetes version is configured with ``OLMKIT_KUBE_VERSION`` (``1.29``,
``v1.29.3``). A bundle whose range does not hold that version is never chosen: resolution
passes it over for the next entry of the channel, or fails with an explanation that names
this plugin's requirement. With no cluster version configured the plugin judges nothing.

Dependencies can ask for a provider that supports a version, alone or inside
``all`` / ``any`` / ``not``, with the ``kubeVersion`` constraint key::

    {"type": "olm.constraint", "value": {
        "failureMessage": "needs a cache that runs on this cluster",
        "all": {"constraints": [
            {"gvk": {"group": "cache.example.io", "version": "v1", "kind": "Redis"}},
            {"kubeVersion": {"supports": "cluster"}}]}}}

``supports`` is ``"cluster"`` (the configured version) or a version such as ``"1.30"``.
A candidate that declares no range supports every version.

``olmkit catalog validate`` reports ranges that do not parse, with file and line.

Everything here goes through olmkit's public API: :mod:`olmkit.types` records,
:mod:`olmkit.catalog.semver` ranges and the ``olmkit_property_types`` /
``olmkit_constraint_evaluators`` hooks.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterator
from typing import Any

import attrs

from olmkit import hookimpl
from olmkit.catalog.semver import Range, Version, parse_range, parse_version
from olmkit.types import ConstraintEvaluator, PropertyType, PropertyView, RequirementContext

__all__ = ["ENV", "KEY", "PROPERTY", "SupportsVersion", "cluster_version"]

PROPERTY = "kubeversion.olmkit.io/supported"
KEY = "kubeVersion"
#: the cluster's Kubernetes version (``1.29``, ``v1.29.3``)
ENV = "OLMKIT_KUBE_VERSION"


def cluster_version() -> Version | None:
    """The configured cluster version, or ``None`` when none is configured.

    Raises:
        ValueError: ``OLMKIT_KUBE_VERSION`` is set to something that is not a version.
    """
    text = os.environ.get(ENV, "").strip()
    if not text:
        return None
    return _version(text)


def _version(text: str) -> Version:
    try:
        return parse_version(text.removeprefix("v"), tolerant=True)
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a Kubernetes version: {exc}") from None


def _settings() -> Hashable:
    return os.environ.get(ENV, "").strip()


@attrs.frozen
class Supported:
    """A bundle's declared range, with its text for messages."""

    text: str
    range: Range = attrs.field(eq=False, hash=False)

    def contains(self, version: Version) -> bool:
        return self.range.matches(version)


def parse_supported(value: Any) -> Supported:
    """The property's value: a range string (``>=1.25.0 <1.31.0``)."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError('value must be a version range such as ">=1.25.0 <1.31.0"')
    try:
        return Supported(value, parse_range(value))
    except ValueError as exc:
        raise ValueError(f"invalid Kubernetes version range {value!r}: {exc}") from None


@attrs.frozen
class RunsOnCluster:
    """What a bundle declaring a range requires: the configured cluster version lies in it.

    Every bundle declaring the same range is filed under it (the property's index key), so
    the bundle is its own candidate: when the cluster version is in range the requirement
    holds by choosing the bundle itself, and when it is not, nothing can satisfy it and the
    resolver passes the bundle over, naming this requirement.
    """

    supported: Supported
    version: Version | None

    @property
    def lookup(self) -> tuple[str, Hashable]:
        return (PROPERTY, self.supported.text)

    def matches(self, candidate: PropertyView) -> bool:
        return self.version is None or self.supported.contains(self.version)

    def __str__(self) -> str:
        running = "an unknown version" if self.version is None else str(self.version)
        return f"that runs on Kubernetes {self.supported.text} (the cluster runs {running}; kube-version plugin)"


@attrs.frozen
class SupportsVersion:
    """The ``kubeVersion`` constraint: candidates whose declared range holds ``version``."""

    version: Version
    lookup: tuple[str, Hashable] | None = None

    def matches(self, candidate: PropertyView) -> bool:
        declared = candidate.values(PROPERTY)
        return not declared or any(s.contains(self.version) for s in declared)

    def __str__(self) -> str:
        return f"supporting Kubernetes {self.version}"


def build_requirement(value: Supported, context: RequirementContext) -> RunsOnCluster:
    """A bundle's range -> the requirement that the cluster runs a version in it."""
    return RunsOnCluster(value, cluster_version())


def build_constraint(value: Any, context: RequirementContext) -> SupportsVersion:
    """``{"supports": "cluster" | "<version>"}`` -> :class:`SupportsVersion`."""
    if not isinstance(value, dict) or set(value) != {"supports"} or not isinstance(value["supports"], str):
        raise ValueError('kubeVersion constraint must be {"supports": "cluster"} or {"supports": "<version>"}')
    wanted = value["supports"]
    if wanted == "cluster":
        version = cluster_version()
        if version is None:
            raise ValueError(f'kubeVersion {{"supports": "cluster"}} needs the cluster version: set {ENV}')
        return SupportsVersion(version)
    return SupportsVersion(_version(wanted))


@hookimpl
def olmkit_property_types() -> Iterator[PropertyType]:
    yield PropertyType(
        name=PROPERTY,
        parse=parse_supported,
        description="the Kubernetes versions a bundle supports (a version range)",
        index_keys=lambda supported: (supported.text,),
        requirement=build_requirement,
        settings=_settings,
    )


@hookimpl
def olmkit_constraint_evaluators() -> Iterator[ConstraintEvaluator]:
    yield ConstraintEvaluator(
        key=KEY,
        build=build_constraint,
        description="candidates that support a Kubernetes version (the cluster's, or a given one)",
        settings=_settings,
    )
