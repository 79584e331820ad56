"""CatalogSources in the cluster store, opened through their source-type plugins.

:class:`CatalogCache` keeps one opened source and its last loaded snapshot per
CatalogSource, for the life of a process: the CatalogSource controller refreshes a
snapshot (on creation, on a spec change, on its registry-poll interval) and everything
else (resolution, ``olmkit list-available``) reads the kept snapshot, so a catalog is
not re-read for every resolution.

A ``file`` CatalogSource's relative ``spec.path`` is relative to the directory of the
manifest it was applied from; ``olmkit apply`` records that directory in the
:data:`MANIFEST_DIR_ANNOTATION` annotation.

.. versionadded:: 0.1
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs

from olmkit.catalog.sources import CatalogSource, SourceHealth, open_source
from olmkit.errors import OlmkitError
from olmkit.lifecycle.kinds import CATALOG_SOURCE
from olmkit.store import NotFound

if TYPE_CHECKING:
    from olmkit.catalog import Catalog
    from olmkit.registry import Registry
    from olmkit.store import Object, Store

__all__ = ["MANIFEST_DIR_ANNOTATION", "CatalogCache", "OpenedSource", "content_digest", "source_label"]

MANIFEST_DIR_ANNOTATION: Final = "olmkit.io/manifest-dir"


def source_label(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` of a CatalogSource object."""
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def content_digest(catalog: Catalog) -> str:
    """A digest of a catalog's content: its file digest, or one made from its graph and bundles.

    Sources that read no files (a ConfigMap) give catalogs without a file digest.
    """
    if catalog.digest:
        return catalog.digest
    h = hashlib.sha1(usedforsecurity=False)
    for package in sorted(catalog.packages):
        h.update(repr(catalog.packages[package]).encode())
        for name, channel in sorted(catalog.channels.get(package, {}).items()):
            h.update(name.encode())
            h.update(repr(channel.entries).encode())
        for name, bundle in sorted(catalog.bundles.get(package, {}).items()):
            h.update(name.encode())
            h.update(repr(bundle.properties).encode())
    return "content:" + h.hexdigest()


def _base_dir(obj: Mapping[str, Any]) -> Path | None:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(MANIFEST_DIR_ANNOTATION)
    return Path(raw) if isinstance(raw, str) and raw else None


@attrs.define
class OpenedSource:
    """One CatalogSource's opened source and the snapshot last loaded from it."""

    uid: str
    generation: int
    source: CatalogSource
    catalog: Catalog | None = None
    error: str | None = None

    def health(self) -> SourceHealth:
        """The source's own health, or the last load error."""
        return self.source.health()


class _SnapshotSource:
    """What resolution sees of a CatalogSource: the kept snapshot (loads it on first use)."""

    def __init__(self, cache: CatalogCache, obj: Mapping[str, Any]) -> None:
        self._cache = cache
        self._obj = obj
        self.name = str(obj["metadata"]["name"])

    def load(self) -> Catalog:
        return self._cache.snapshot(self._obj)

    def health(self) -> SourceHealth:
        return self._cache.opened(self._obj).health()


class CatalogCache:
    """Opened CatalogSources and their snapshots, shared by the controllers of one process.

    Args:
        store: the cluster store (ConfigMaps for ``configmap`` sources are read from it).
        registry: the plugin registry, or a callable returning the current one.
        disk_cache: whether the on-disk parsed-catalog cache may be used.
        on_loaded: called as ``on_loaded(source=..., catalog=..., seconds=..., cached=...)`` after
            each successful load (the ``olmkit_catalog_loaded`` hook's arguments).
    """

    @property
    def registry(self) -> Registry:
        """The current registry (plugins registered later are seen)."""
        return self._registry()

    def __init__(
        self,
        store: Store,
        registry: Registry | Callable[[], Registry],
        *,
        disk_cache: bool = True,
        on_loaded: Callable[..., Any] | None = None,
    ) -> None:
        self.store = store
        self._registry = registry if callable(registry) else (lambda: registry)
        self.disk_cache = disk_cache
        self.on_loaded = on_loaded
        self._opened: dict[tuple[str, str], OpenedSource] = {}
        self._lock = threading.RLock()

    def _lookup(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        try:
            return self.store.get("v1", kind, name, namespace)
        except NotFound:
            return None

    def opened(self, obj: Mapping[str, Any]) -> OpenedSource:
        """The opened source of a CatalogSource object (re-opened when its spec changed).

        Raises:
            InputError: the spec names an unknown source type or the type rejects it.
        """
        meta = obj["metadata"]
        key = (str(meta.get("namespace", "")), str(meta["name"]))
        uid, generation = str(meta.get("uid", "")), int(meta.get("generation", 0) or 0)
        with self._lock:
            found = self._opened.get(key)
            if found is not None and found.uid == uid and found.generation == generation:
                return found
            source = open_source(
                obj.get("spec") or {},
                registry=self.registry,
                name=key[1],
                namespace=key[0],
                base_dir=_base_dir(obj),
                objects=self._lookup,
                cache=self.disk_cache,
            )
            opened = OpenedSource(uid, generation, source)
            self._opened[key] = opened
            return opened

    def refresh(self, obj: Mapping[str, Any]) -> tuple[OpenedSource, bool]:
        """Load the source again; returns it and whether the catalog's content changed.

        A failed load keeps the previous snapshot (if any) and records the error.
        """
        opened = self.opened(obj)
        before = content_digest(opened.catalog) if opened.catalog is not None else None
        start = time.perf_counter()
        try:
            opened.catalog = opened.source.load()
            opened.error = None
        except OlmkitError as exc:
            opened.error = str(exc)
            return opened, False
        if self.on_loaded is not None:
            self.on_loaded(
                source=source_label(obj),
                catalog=opened.catalog,
                seconds=time.perf_counter() - start,
                cached=bool(getattr(opened.source, "cached", False)),
            )
        return opened, content_digest(opened.catalog) != before

    def snapshot(self, obj: Mapping[str, Any]) -> Catalog:
        """The kept snapshot of a CatalogSource, loading it on first use.

        Raises:
            OlmkitError: the source cannot be loaded (and was never loaded before).
        """
        opened = self.opened(obj)
        if opened.catalog is None:
            opened.catalog = opened.source.load()
        return opened.catalog

    def resolution_source(self, obj: Mapping[str, Any]) -> Any:
        """An object with ``name``, ``load()`` and ``health()`` for a :class:`~olmkit.resolver.SourceRef`."""
        return _SnapshotSource(self, obj)

    def catalog_sources(self, namespaces: Iterable[str] | None = None) -> list[Object]:
        """The CatalogSource objects in ``namespaces`` (all when ``None``), by namespace and name."""
        if namespaces is None:
            return list(self.store.list(CATALOG_SOURCE.api_version, CATALOG_SOURCE.kind))
        out: list[Object] = []
        for ns in dict.fromkeys(namespaces):
            out.extend(self.store.list(CATALOG_SOURCE.api_version, CATALOG_SOURCE.kind, ns))
        return out

    def forget(self, namespace: str, name: str) -> None:
        """Drop a deleted CatalogSource's opened source."""
        with self._lock:
            self._opened.pop((namespace, name), None)
