"""The catalog-source contract: where catalogs come from.

A catalog source type (``spec.sourceType`` of a CatalogSource) is registered by a plugin
as a :class:`~olmkit.types.CatalogSourceType` whose ``open(spec, context)`` returns an
object satisfying :class:`CatalogSource`. :func:`open_source` picks the type and builds
the :class:`SourceContext` it receives.

Example:
    source = open_source({"sourceType": "file", "path": "catalog"}, registry=pm.registry,
                         name="community", namespace="olm", base_dir=Path("."))
    catalog = source.load()

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

import attrs

from olmkit.errors import InputError

if TYPE_CHECKING:
    from olmkit.catalog._catalog import Catalog
    from olmkit.registry import Registry

__all__ = [
    "CONNECTING",
    "READY",
    "TRANSIENT_FAILURE",
    "CatalogSource",
    "ObjectLookup",
    "SourceContext",
    "SourceHealth",
    "open_source",
    "source_revision",
]

READY: Final = "READY"
CONNECTING: Final = "CONNECTING"
TRANSIENT_FAILURE: Final = "TRANSIENT_FAILURE"

#: ``objects(kind, namespace, name)`` returns the object as a mapping, or ``None``.
ObjectLookup = Callable[[str, str, str], "Mapping[str, Any] | None"]


@attrs.frozen
class SourceHealth:
    """A source's connection state, as OLM reports it (``READY``, ``CONNECTING``, ``TRANSIENT_FAILURE``)."""

    state: str
    message: str = ""


@runtime_checkable
class CatalogSource(Protocol):
    """An opened catalog source."""

    name: str

    def load(self) -> Catalog:
        """The current snapshot; raises :class:`~olmkit.errors.OlmkitError` when unavailable."""
        ...

    def health(self) -> SourceHealth:
        """The source's state now (after the last load, if any)."""
        ...


def source_revision(source: CatalogSource) -> str | None:
    """A source's change token, when it offers one.

    A source may define ``revision() -> str | None``: a cheap token that changes whenever
    its content may have changed (a ConfigMap's resourceVersion). Controllers reload a
    source whose token changed; sources without one are reloaded on their poll interval.
    """
    revision = getattr(source, "revision", None)
    return revision() if callable(revision) else None


@attrs.frozen
class SourceContext:
    """What a source type's ``open`` receives besides the spec.

    Args:
        registry: the plugin registry (for loading catalogs).
        name: the CatalogSource's name.
        namespace: its namespace.
        base_dir: directory that relative paths are resolved against, if any.
        objects: looks up cluster objects (ConfigMaps ...), if any.
        cache: whether the on-disk catalog cache may be used.
    """

    registry: Registry
    name: str
    namespace: str
    base_dir: Path | None = None
    objects: ObjectLookup | None = None
    cache: bool = True


def open_source(
    spec: Mapping[str, Any],
    *,
    registry: Registry,
    name: str,
    namespace: str,
    base_dir: Path | None,
    objects: ObjectLookup | None = None,
    cache: bool = True,
) -> CatalogSource:
    """Open the catalog source a CatalogSource ``spec`` describes.

    Raises:
        InputError: ``spec.sourceType`` is missing or no plugin registers it, or the
            source type rejects the spec.
    """
    obj = f"catalogsource {namespace}/{name}"
    if not isinstance(spec, Mapping):
        raise InputError("spec must be a mapping", obj=obj)
    kind = spec.get("sourceType")
    if not kind or not isinstance(kind, str):
        raise InputError("spec.sourceType is required", obj=obj)
    source_type = registry.catalog_source_types.get(kind)
    if source_type is None:
        known = ", ".join(sorted(registry.catalog_source_types)) or "none"
        raise InputError(f"unknown spec.sourceType {kind!r} (known: {known})", obj=obj)
    context = SourceContext(registry, name, namespace, base_dir, objects, cache)
    source: CatalogSource = source_type.open(spec, context)
    return source
