"""Built-in plugin: the ``file`` and ``configmap`` catalog source types.

* ``file``: ``spec.path`` names a file-based catalog directory (or file), relative to
  the directory of the manifest that declared the CatalogSource.
* ``configmap``: ``spec.configMap`` names a ConfigMap in the CatalogSource's namespace
  whose ``data`` values are FBC streams (JSON or YAML), one file's worth per key.

Both report their health: ``READY`` after a successful load, ``TRANSIENT_FAILURE``
with the error after a failed one, ``CONNECTING`` before the first load when the
backing object exists.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from olmkit import hookimpl
from olmkit.catalog import Catalog, build_catalog, invalid_catalog, load_catalog_result
from olmkit.catalog.sources import CONNECTING, READY, TRANSIENT_FAILURE, SourceContext, SourceHealth
from olmkit.errors import CatalogError, InputError, OlmkitError
from olmkit.serde import decode_json_stream, decode_yaml_stream
from olmkit.types import CatalogSourceType

__all__ = ["ConfigMapSource", "FileSource"]


@attrs.define
class FileSource:
    """A catalog in a directory or file."""

    name: str
    path: Path
    context: SourceContext
    _last_error: str | None = None
    _loaded: bool = False
    cached: bool = False

    @classmethod
    def open(cls, spec: Mapping[str, Any], context: SourceContext) -> FileSource:
        """Build from a CatalogSource spec (``spec.path``)."""
        raw = spec.get("path")
        if not isinstance(raw, str) or not raw:
            raise InputError(
                "spec.path is required for sourceType file", obj=f"catalogsource {context.namespace}/{context.name}"
            )
        path = Path(raw)
        if not path.is_absolute() and context.base_dir is not None:
            path = context.base_dir / path
        return cls(context.name, path, context)

    def load(self) -> Catalog:
        """Load (from the cache when unchanged); ``cached`` tells whether the last load came from it."""
        try:
            result = load_catalog_result(self.path, self.context.registry, name=self.name, cache=self.context.cache)
        except OlmkitError as exc:
            self._last_error = str(exc)
            raise
        self._last_error = None
        self.cached = result.cached
        if result.problems:
            error = invalid_catalog(self.path, result.problems)
            self._last_error = str(error)
            raise error
        self._loaded = True
        return result.catalog

    def health(self) -> SourceHealth:
        """``TRANSIENT_FAILURE`` when the path is missing or the last load failed."""
        if not self.path.exists():
            return SourceHealth(TRANSIENT_FAILURE, f"{self.path}: no such file or directory")
        if self._last_error is not None:
            return SourceHealth(TRANSIENT_FAILURE, self._last_error)
        return SourceHealth(READY if self._loaded else CONNECTING)


@attrs.define
class ConfigMapSource:
    """A catalog whose FBC blobs live in a ConfigMap's ``data``."""

    name: str
    config_map: str
    context: SourceContext
    _last_error: str | None = None
    _loaded: bool = False

    @classmethod
    def open(cls, spec: Mapping[str, Any], context: SourceContext) -> ConfigMapSource:
        """Build from a CatalogSource spec (``spec.configMap``)."""
        name = spec.get("configMap")
        if not isinstance(name, str) or not name:
            raise InputError(
                "spec.configMap is required for sourceType configmap",
                obj=f"catalogsource {context.namespace}/{context.name}",
            )
        return cls(context.name, name, context)

    def _object(self) -> Mapping[str, Any] | None:
        lookup = self.context.objects
        return lookup("ConfigMap", self.context.namespace, self.config_map) if lookup is not None else None

    def load(self) -> Catalog:
        """Build the catalog from the ConfigMap's data (keys in sorted order)."""
        where = f"configmap {self.context.namespace}/{self.config_map}"
        try:
            obj = self._object()
            if obj is None:
                raise InputError("not found", obj=where)
            data = obj.get("data") or {}
            if not isinstance(data, Mapping) or not data:
                raise InputError("has no data", obj=where)
            result = build_catalog(self._blobs(where, data), self.context.registry, name=self.name)
            if result.problems:
                raise CatalogError(f"{where} holds an invalid catalog:\n  " + "\n  ".join(map(str, result.problems)))
        except OlmkitError as exc:
            self._last_error = str(exc)
            raise
        self._last_error = None
        self._loaded = True
        return result.catalog

    @staticmethod
    def _blobs(where: str, data: Mapping[str, Any]) -> Iterator[tuple[str, int, Any]]:
        for key in sorted(data):
            text = data[key]
            if not isinstance(text, str):
                raise InputError("value must be a string", path=f"{where}:data.{key}")
            raw = text.encode()
            try:
                stream = decode_json_stream(raw) if raw.lstrip()[:1] in (b"{", b"[") else decode_yaml_stream(raw)
                for line, blob in stream:
                    yield f"{where}:data.{key}", line, blob
            except ValueError as exc:
                raise InputError(str(exc), path=f"{where}:data.{key}") from None

    def revision(self) -> str | None:
        """A token that changes whenever the ConfigMap does (its resourceVersion)."""
        obj = self._object()
        return str((obj.get("metadata") or {}).get("resourceVersion")) if obj is not None else None

    def health(self) -> SourceHealth:
        """``TRANSIENT_FAILURE`` when the ConfigMap is missing or the last load failed."""
        if self._last_error is not None:
            return SourceHealth(TRANSIENT_FAILURE, self._last_error)
        if self._object() is None:
            return SourceHealth(TRANSIENT_FAILURE, f"configmap {self.context.namespace}/{self.config_map} not found")
        return SourceHealth(READY if self._loaded else CONNECTING)


@hookimpl
def olmkit_catalog_source_types() -> Iterator[CatalogSourceType]:
    """The ``file`` and ``configmap`` source types."""
    yield CatalogSourceType(name="file", open=FileSource.open, description="a file-based catalog directory")
    yield CatalogSourceType(name="configmap", open=ConfigMapSource.open, description="FBC blobs in a ConfigMap's data")
