"""Built-in plugin: bundle content from inline manifests and from bundle directories.

* ``olm.bundle.object`` properties hold one base64-encoded manifest each, as
  ``opm render`` embeds them; a bundle carrying them needs nothing else.
* A bundle whose ``image`` is a local path (``./x``, ``../x``, ``/x`` or ``file://...``;
  relative to the catalog file that declares the bundle) names a bundle directory: its
  ``manifests/`` are read.

Anything else (a registry image) is left to other plugins: no registry is reachable here.

.. versionadded:: 0.1
"""

from __future__ import annotations

import base64
import binascii
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import orjson

from olmkit import hookimpl
from olmkit.catalog.bundles import read_bundle
from olmkit.errors import InputError, OlmkitError

__all__ = ["bundle_dir_of", "inline_manifests"]

BUNDLE_OBJECT: Final = "olm.bundle.object"
_LOCAL_PREFIXES: Final = ("./", "../", "/", "file://")


def inline_manifests(bundle: Any) -> list[dict[str, Any]] | None:
    """The manifests in a bundle's ``olm.bundle.object`` properties, or ``None`` when it has none.

    Raises:
        OlmkitError: a property is not base64 of a JSON or YAML object.
    """
    found = [p for p in bundle.properties if p.type == BUNDLE_OBJECT]
    if not found:
        return None
    import yaml  # only bundles with manifests inline pay for it (not a resolution, not a validation)

    out = []
    for i, prop in enumerate(found):
        value = prop.value
        data = value.get("data") if isinstance(value, Mapping) else None
        if not isinstance(data, str):
            raise OlmkitError(f"{BUNDLE_OBJECT} property #{i + 1} has no base64 'data'")
        try:
            raw = base64.b64decode(data, validate=True)
            obj = orjson.loads(raw) if raw.lstrip()[:1] == b"{" else yaml.safe_load(raw)
        except (binascii.Error, ValueError, yaml.YAMLError) as exc:
            raise OlmkitError(f"{BUNDLE_OBJECT} property #{i + 1} is not a base64 manifest: {exc}") from None
        if not isinstance(obj, dict):
            raise OlmkitError(f"{BUNDLE_OBJECT} property #{i + 1} is not a Kubernetes object")
        out.append(obj)
    return out


def bundle_dir_of(bundle: Any) -> Path | None:
    """The bundle directory a bundle's ``image`` names, or ``None`` when it names no local path."""
    image = getattr(bundle, "image", None) or ""
    if not image.startswith(_LOCAL_PREFIXES):
        return None
    path = Path(image[len("file://") :] if image.startswith("file://") else image)
    if not path.is_absolute():
        origin = getattr(bundle, "origin", None)
        base = Path(origin.path).parent if origin is not None and origin.path else Path.cwd()
        path = base / path
    return path


@hookimpl
def olmkit_bundle_content(bundle: Any, registry: Any) -> list[dict[str, Any]] | None:
    """Inline manifests first, else a local bundle directory (read through the bundle formats)."""
    inline = inline_manifests(bundle)
    if inline is not None:
        return inline
    path = bundle_dir_of(bundle)
    if path is None:
        return None
    if not path.is_dir():
        raise InputError("bundle directory not found", path=str(path))
    return [dict(m) for m in _read_cached(path.resolve(), registry)]


_DIRS: OrderedDict[tuple[Path, tuple[tuple[str, int, int], ...]], tuple[Mapping[str, Any], ...]] = OrderedDict()
#: bundle directories whose manifests are kept (a controller unpacks the same bundle per namespace)
_DIRS_KEPT: Final = 64


def _read_cached(path: Path, registry: Any) -> tuple[Mapping[str, Any], ...]:
    """The manifests of a bundle directory, read again only when one of its files changed."""
    stamp = tuple(
        sorted(
            (str(f.relative_to(path)), f.stat().st_mtime_ns, f.stat().st_size) for f in path.rglob("*") if f.is_file()
        )
    )
    key = (path, stamp)
    found = _DIRS.get(key)
    if found is None:
        found = tuple(read_bundle(path, registry).manifests)
        _DIRS[key] = found
        while len(_DIRS) > _DIRS_KEPT:
            _DIRS.popitem(last=False)
    else:
        _DIRS.move_to_end(key)
    return found
