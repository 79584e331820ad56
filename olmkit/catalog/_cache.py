"""The on-disk catalog cache: keyed by the content digest of every file read.

Format (``marshal``, version-tagged): packages, deprecations and opaque blobs as one
orjson document each; channels and bundles as one orjson document *per package*; the
index with ``(package, bundle)`` pairs; the problems found while building. Loading it
builds only the package list: a package's channels and bundles materialise on first
access, so an unchanged catalog is queryable almost at once.
"""

from __future__ import annotations

import marshal
import os
import tempfile
from collections.abc import Callable, Hashable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import orjson

from olmkit.catalog._catalog import Catalog, Deprecation
from olmkit.catalog.problems import Problem
from olmkit.model import Blob, Bundle, Channel, Origin, Property
from olmkit.registry import Registry
from olmkit.serde import (
    bundle_from_dict,
    bundle_to_dict,
    channel_from_dict,
    channel_to_dict,
    package_from_dict,
    package_to_dict,
)

__all__ = ["read_cache", "write_cache"]

_FORMAT: Final = 2
_ORIGIN: Final = "\x00origin"


def _with_origin(blob: dict[str, Any], origin: Origin | None) -> dict[str, Any]:
    if origin is not None:
        blob[_ORIGIN] = [origin.path, origin.line]
    return blob


def _origin(blob: dict[str, Any]) -> Origin | None:
    raw = blob.pop(_ORIGIN, None)
    return Origin(raw[0], raw[1]) if raw else None


def write_cache(path: Path, catalog: Catalog, problems: tuple[Problem, ...]) -> None:
    """Write ``catalog`` to ``path`` atomically; failures are ignored (the cache is optional)."""
    index: dict[str, dict[Hashable, list[tuple[str, str]]]] = {}
    for type_name in list(catalog._index):
        index[type_name] = {
            k: [(b.package, b.name) for b in bundles] for k, bundles in catalog._index[type_name].items()
        }
    state = {
        "format": _FORMAT,
        "packages": orjson.dumps([_with_origin(package_to_dict(p), p.origin) for p in catalog.packages.values()]),
        "channels": {
            pkg: orjson.dumps([_with_origin(channel_to_dict(c), c.origin) for c in chans.values()])
            for pkg, chans in catalog.channels.items()
        },
        "bundles": {
            pkg: orjson.dumps([_with_origin(bundle_to_dict(b), b.origin) for b in bundles.values()])
            for pkg, bundles in catalog.bundles.items()
        },
        "others": orjson.dumps([_with_origin(dict(b.data), b.origin) for b in catalog.others]),
        "deprecations": orjson.dumps([d.data for d in catalog.deprecations.values()]),
        "index": index,
        "problems": [tuple(p.to_dict().values()) for p in problems],
    }
    try:
        data = marshal.dumps(state)
    except ValueError:
        return  # an index key marshal cannot store (a plugin's own type): no cache
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".cache")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return


class _LazyPackages(Mapping[str, Mapping[str, Any]]):
    """package -> (name -> object), each package decoded and built on first access."""

    def __init__(self, raw: dict[str, bytes], build: Callable[[bytes], Mapping[str, Any]]) -> None:
        self._raw = raw
        self._build = build
        self._done: dict[str, Mapping[str, Any]] = {}

    def __getitem__(self, key: str) -> Mapping[str, Any]:
        found = self._done.get(key)
        if found is None:
            found = self._done[key] = MappingProxyType(dict(self._build(self._raw[key])))
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, key: object) -> bool:
        return key in self._raw


def read_cache(path: Path, registry: Registry, name: str, digest: str) -> tuple[Catalog, tuple[Problem, ...]] | None:
    """Open a cached catalog, or ``None`` when there is no usable cache file."""
    try:
        data = path.read_bytes()
        state = marshal.loads(data)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(state, dict) or state.get("format") != _FORMAT:
        return None
    identity = {n: pt.parse for n, pt in registry.property_types.items() if pt.identity}
    interned: dict[Hashable, Property] = {}

    def make_property(ptype: str, value: Any) -> Property:
        try:
            key: Hashable = (ptype, tuple(value.items())) if type(value) is dict else (ptype, value)
            found = interned.get(key)
        except TypeError:
            key = (ptype, orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS))
            found = interned.get(key)
        if found is None:
            found = interned[key] = Property(ptype, value)
        return found

    def version_of(properties: tuple[Property, ...]) -> str | None:
        for p in properties:
            parse = identity.get(p.type)
            if parse is not None:
                try:
                    return getattr(parse(p.value), "version", None)
                except (ValueError, TypeError, AttributeError, KeyError):
                    continue
        return None

    def build_bundles(raw: bytes) -> dict[str, Bundle]:
        out = {}
        for blob in orjson.loads(raw):
            origin = _origin(blob)
            b = bundle_from_dict(blob, origin, make_property=make_property, version_of=version_of)
            out[b.name] = b
        return out

    def build_channels(raw: bytes) -> dict[str, Channel]:
        out = {}
        for blob in orjson.loads(raw):
            origin = _origin(blob)
            c = channel_from_dict(blob, origin)
            out[c.name] = c
        return out

    try:
        packages = {}
        for blob in orjson.loads(state["packages"]):
            origin = _origin(blob)
            p = package_from_dict(blob, origin)
            packages[p.name] = p
        others = []
        for blob in orjson.loads(state["others"]):
            origin = _origin(blob)
            others.append(Blob(blob["schema"], blob, origin))
        deprecations = {}
        for blob in orjson.loads(state["deprecations"]):
            entries = blob.get("entries") or []
            pkg_msg, chans, bundles = None, {}, {}
            for e in entries:
                ref = e["reference"]
                kind = ref.get("schema", "")
                if kind.endswith("package"):
                    pkg_msg = e["message"]
                elif kind.endswith("channel"):
                    chans[ref["name"]] = e["message"]
                else:
                    bundles[ref["name"]] = e["message"]
            deprecations[blob["package"]] = Deprecation(blob["package"], pkg_msg, chans, bundles, blob)
        problems = tuple(Problem(*row) for row in state["problems"])
        catalog = Catalog._lazy(
            name,
            packages,
            _LazyPackages(state["channels"], build_channels),  # type: ignore[arg-type]
            _LazyPackages(state["bundles"], build_bundles),  # type: ignore[arg-type]
            tuple(others),
            deprecations,
            state["index"],
            {n: pt.parse for n, pt in registry.property_types.items()},
            digest,
        )
    except (KeyError, TypeError, ValueError, orjson.JSONDecodeError):
        return None
    return catalog, problems
