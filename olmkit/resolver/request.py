"""What a resolution takes and gives: plain values, independent of where objects come from.

``olmkit resolve -f`` builds a :class:`ResolutionRequest` from manifest files
(:mod:`olmkit.resolver.manifests`); the lifecycle controllers build it from the cluster
store. The answer is a :class:`Resolution`.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import attrs

from olmkit.model import Property
from olmkit.registry import Registry

__all__ = [
    "CONSTRAINTS_NOT_SATISFIABLE",
    "ERROR_PREVENTED_RESOLUTION",
    "Deferred",
    "ExplanationNode",
    "InstalledCSV",
    "Resolution",
    "ResolutionRequest",
    "SourceRef",
    "Step",
    "SubscriptionRef",
]


def _tuple(value: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(value)


#: ``ResolutionFailed`` reasons, as upstream's catalog operator sets them.
CONSTRAINTS_NOT_SATISFIABLE: Final = "ConstraintsNotSatisfiable"
ERROR_PREVENTED_RESOLUTION: Final = "ErrorPreventedResolution"


@attrs.frozen
class SourceRef:
    """A catalog source visible to resolution.

    Args:
        name: the CatalogSource's name.
        namespace: its namespace.
        source: an opened catalog source (``load()`` returns a Catalog).
        priority: ``spec.priority`` (higher is preferred).
    """

    name: str
    namespace: str
    source: Any = attrs.field(eq=False, repr=False)
    priority: int = 0


@attrs.frozen
class SubscriptionRef:
    """The parts of a Subscription resolution reads."""

    name: str
    package: str
    source: str
    source_namespace: str
    channel: str = ""
    starting_csv: str = ""
    installed_csv: str = ""
    current_csv: str = ""

    @classmethod
    def from_manifest(cls, obj: Mapping[str, Any], default_namespace: str) -> SubscriptionRef:
        """Build from a Subscription manifest (``spec`` and ``status``); raises ValueError."""
        meta = obj.get("metadata") or {}
        spec = obj.get("spec")
        if not isinstance(spec, Mapping):
            raise ValueError("spec is missing")
        status = obj.get("status") or {}
        if not isinstance(status, Mapping):
            raise ValueError("status must be an object")
        package = spec.get("name")
        if not isinstance(package, str) or not package:
            raise ValueError("spec.name (the package) is required")
        source = spec.get("source")
        if not isinstance(source, str) or not source:
            raise ValueError("spec.source (the CatalogSource name) is required")

        def text(where: Mapping[str, Any], key: str) -> str:
            value = where.get(key) or ""
            if not isinstance(value, str):
                raise ValueError(f"{key} must be a string")
            return value

        return cls(
            name=str(meta.get("name")),
            package=package,
            source=source,
            source_namespace=text(spec, "sourceNamespace") or str(meta.get("namespace") or default_namespace),
            channel=text(spec, "channel"),
            starting_csv=text(spec, "startingCSV"),
            installed_csv=text(status, "installedCSV"),
            current_csv=text(status, "currentCSV"),
        )


@attrs.frozen
class InstalledCSV:
    """An installed ClusterServiceVersion as resolution sees it.

    Args:
        name: the CSV's name.
        version: ``spec.version`` (``None`` when unset).
        properties: its properties (from the properties annotation, or derived).
        replaces: ``spec.replaces``.
        phase: ``status.phase``.
    """

    name: str
    version: str | None = None
    properties: tuple[Property, ...] = attrs.field(default=(), converter=_tuple)
    replaces: str | None = None
    phase: str | None = None


@attrs.frozen
class ResolutionRequest:
    """Everything needed to resolve one namespace.

    Args:
        namespace: the namespace being resolved.
        registry: the plugin registry (property types, constraint keys).
        subscriptions: the namespace's Subscriptions.
        installed: the namespace's installed CSVs (not copied ones).
        sources: catalog sources; only those in ``namespace`` and ``global_namespace``
            are visible.
        operator_groups: how many OperatorGroups the namespace holds (exactly one is required).
        global_namespace: the global catalog namespace (``olm`` by default).
        exclude_global: the OperatorGroup opts out of the global catalog namespace.
        backend: SAT backend name (``None``: the default).
    """

    namespace: str
    registry: Registry = attrs.field(eq=False, repr=False)
    subscriptions: tuple[SubscriptionRef, ...] = attrs.field(default=(), converter=_tuple)
    installed: tuple[InstalledCSV, ...] = attrs.field(default=(), converter=_tuple)
    sources: tuple[SourceRef, ...] = attrs.field(default=(), converter=_tuple)
    operator_groups: int = 1
    global_namespace: str = "olm"
    exclude_global: bool = False
    backend: str | None = None


class Deferred:
    """A value computed on first use: pass it as a :class:`Step`'s ``properties`` or ``content``.

    Example:
        Step(..., content=Deferred(lambda: catalog.bundle(package, name)))

    .. versionadded:: 0.2
    """

    __slots__ = ("_load",)

    def __init__(self, load: Callable[[], Any]) -> None:
        self._load = load

    def load(self) -> Any:
        """Compute the value."""
        return self._load()


@attrs.frozen
class Step:
    """A bundle the resolution adds: a new install, an upgrade or a dependency.

    ``replaces`` names the installed CSV an upgrade replaces (else ``None``);
    ``subscription`` names the Subscription the bundle answers, or ``None`` for a
    dependency (which then needs the generated Subscription :attr:`generated_subscription`).

    ``properties`` (the bundle's, bundle content left out) and ``content`` (the catalog's
    bundle) may be given as :class:`Deferred`: the resolver reads them from the catalog
    only when they are first used, since most callers (``olmkit resolve -o json``) never do.
    """

    bundle: str
    package: str
    version: str | None
    channel: str
    catalog: str
    catalog_namespace: str
    replaces: str | None = None
    subscription: str | None = None
    image: str | None = None
    _properties: Any = attrs.field(default=(), eq=False, repr=False, alias="properties")
    _content: Any = attrs.field(default=None, eq=False, repr=False, alias="content")

    @property
    def properties(self) -> tuple[Property, ...]:
        """The bundle's properties as resolution saw them."""
        value = self._properties
        if type(value) is Deferred:
            value = tuple(value.load())
            object.__setattr__(self, "_properties", value)
        return value  # type: ignore[no-any-return]

    @property
    def content(self) -> Any:
        """The catalog's bundle (a :class:`olmkit.model.Bundle` for catalog entries)."""
        value = self._content
        if type(value) is Deferred:
            value = value.load()
            object.__setattr__(self, "_content", value)
        return value

    @property
    def generated_subscription(self) -> str:
        """Upstream's name for a dependency's generated Subscription."""
        return f"{self.package}-{self.channel}-{self.catalog}-{self.catalog_namespace}"

    def to_json(self) -> dict[str, Any]:
        """The step as ``olmkit resolve -o json`` prints it."""
        return {
            "bundle": self.bundle,
            "package": self.package,
            "version": self.version,
            "channel": self.channel,
            "catalog": self.catalog,
            "catalogNamespace": self.catalog_namespace,
            "replaces": self.replaces,
        }


@attrs.frozen
class ExplanationNode:
    """One line of an explanation tree, with its children."""

    text: str
    children: tuple[ExplanationNode, ...] = attrs.field(default=(), converter=_tuple)

    def to_json(self) -> dict[str, Any]:
        """``{"text", "children"}`` recursively."""
        return {"text": self.text, "children": [c.to_json() for c in self.children]}

    def render(self, prefix: str = "", last: bool = True, root: bool = True) -> list[str]:
        """The tree as text lines with box-drawing branches."""
        if root:
            lines = [self.text]
            child_prefix = ""
        else:
            lines = [prefix + ("└─ " if last else "├─ ") + self.text]
            child_prefix = prefix + ("   " if last else "│  ")
        for i, child in enumerate(self.children):
            lines += child.render(child_prefix, i == len(self.children) - 1, root=False)
        return lines


@attrs.frozen
class Resolution:
    """The outcome of resolving one namespace.

    Args:
        namespace: the namespace.
        status: ``ok``, ``unsatisfiable`` or ``error``.
        steps: bundles to add (empty unless ``ok``).
        message: the failure text (upstream's), or ``None``.
        reason: ``ConstraintsNotSatisfiable`` / ``ErrorPreventedResolution`` on failure.
        explanation: for ``unsatisfiable``, the conflicting constraints as trees.
        timings: seconds per phase (``catalog``, ``index``, ``variables``, ``cel``, ``solve`` ...).
        counters: sizes (variables, constraints, CEL evaluations ...).
    """

    namespace: str
    status: str
    steps: tuple[Step, ...] = attrs.field(default=(), converter=_tuple)
    message: str | None = None
    reason: str | None = None
    explanation: tuple[ExplanationNode, ...] = attrs.field(default=(), converter=_tuple)
    timings: Mapping[str, float] = attrs.field(factory=dict, eq=False)
    counters: Mapping[str, int] = attrs.field(factory=dict, eq=False)

    @property
    def ok(self) -> bool:
        """Whether resolution succeeded."""
        return self.status == "ok"

    @property
    def exit_code(self) -> int:
        """0 when resolved, 1 otherwise."""
        return 0 if self.ok else 1

    def to_json(self, *, explain: bool = False) -> dict[str, Any]:
        """The shape ``olmkit resolve -o json`` prints."""
        data: dict[str, Any] = {
            "namespace": self.namespace,
            "status": self.status,
            "steps": [s.to_json() for s in self.steps],
            "message": self.message,
        }
        if self.reason:  # the reason a Subscription's ResolutionFailed condition would carry
            data["reason"] = self.reason
        if explain:
            data["explanation"] = [node.to_json() for node in self.explanation]
        return data
