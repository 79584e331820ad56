"""The on-disk catalog cache: keyed by the content digest of every file read.

Layout (format 3): a magic string naming the format, an 8-byte little-endian header
length, the header (``marshal``), then the body. The header holds the file list, the package, deprecation and opaque
blobs as JSON arrays with their origins, the problems found while loading, and where
in the body each package's parts and each property type's index lie. A package has
two parts, the JSON arrays of its channel blobs and of its bundle blobs exactly as
they were read (their origins are in the header); an index part maps keys to
``(package, bundle)`` pairs.

Writing is a copy of the texts the loader kept, not a re-serialisation. Reading maps
the body into memory and decodes only the header: a package's channels and bundles are
built on first access, and an index type on its first lookup, so an unchanged catalog
is queryable almost at once and a package nobody asks for costs nothing.
"""

from __future__ import annotations

import marshal
import mmap
import os
from array import array
from collections.abc import Callable, Hashable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import orjson

from olmkit.catalog._catalog import Catalog, Deprecation
from olmkit.catalog._files import write_atomic
from olmkit.catalog.problems import Problem
from olmkit.errors import CatalogError
from olmkit.model import Blob, Bundle, Origin
from olmkit.model import _origin as new_origin
from olmkit.registry import Registry
from olmkit.serde import BlobReader

__all__ = ["CacheRecord", "read_cache", "write_cache"]

_FORMAT: Final = 3
_MAGIC: Final = b"olmkit\x00\x03"  # what a cache file of this format starts with
_HEAD: Final = len(_MAGIC) + 8  # the magic and the header length


def _json_text(raw: Any) -> bytes | None:
    try:
        return orjson.dumps(raw)
    except TypeError:  # a YAML value JSON cannot hold (a set, binary data ...)
        return None


def _json_array(texts: list[bytes]) -> bytes:
    return b"[" + b",".join(texts) + b"]"


def _origins(items: list[int]) -> bytes:
    return array("q", items).tobytes()


class CacheRecord:
    """What a cold load keeps for the cache: the JSON text of each blob it accepted, by package.

    ``ok`` turns false when some blob has no JSON text (a YAML value JSON cannot hold):
    such a catalog is not cached.
    """

    def __init__(self) -> None:
        self.ok = True
        self.files: list[str] = []
        self.packages: list[bytes] = []
        self.package_origins: list[int] = []
        self.deprecations: list[bytes] = []
        self.others: list[bytes] = []
        self.other_origins: list[int] = []
        self.channels: dict[str, tuple[list[bytes], list[int]]] = {}  # package -> (texts, origins)
        self.bundles: dict[str, tuple[list[bytes], list[int]]] = {}
        self.index: Mapping[str, Mapping[Hashable, tuple[Bundle, ...]]] = {}
        self.problems: tuple[Problem, ...] = ()

    def add_file(self, path: str) -> int:
        """Register a file; returns its number in the origins."""
        self.files.append(path)
        return len(self.files) - 1

    def keep_channel(self, package: str, raw: Any, text: bytes | None, file_index: int, line: int) -> None:
        """Keep a channel blob of ``package``."""
        self._keep(self.channels, package, raw, text, file_index, line)

    def keep_bundle(self, package: str, raw: Any, text: bytes | None, file_index: int, line: int) -> None:
        """Keep a bundle blob of ``package``."""
        self._keep(self.bundles, package, raw, text, file_index, line)

    def _keep(
        self,
        parts: dict[str, tuple[list[bytes], list[int]]],
        package: str,
        raw: Any,
        text: bytes | None,
        file_index: int,
        line: int,
    ) -> None:
        if text is None and (text := _json_text(raw)) is None:
            self.ok = False
            return
        part = parts.get(package)
        if part is None:
            part = parts[package] = ([], [])
        part[0].append(text)
        part[1].extend((file_index, line))

    def keep_package(self, raw: Any, text: bytes | None, file_index: int, line: int) -> None:
        """Keep a package blob."""
        if text is None and (text := _json_text(raw)) is None:
            self.ok = False
            return
        self.packages.append(text)
        self.package_origins += (file_index, line)

    def keep_deprecation(self, raw: Any, text: bytes | None) -> None:
        """Keep a deprecations blob."""
        if text is None and (text := _json_text(raw)) is None:
            self.ok = False
            return
        self.deprecations.append(text)

    def keep_other(self, raw: Any, text: bytes | None, file_index: int, line: int) -> None:
        """Keep an opaque blob."""
        if text is None and (text := _json_text(raw)) is None:
            self.ok = False
            return
        self.others.append(text)
        self.other_origins += (file_index, line)


def write_cache(path: Path, record: CacheRecord) -> None:
    """Write what ``record`` kept to ``path`` atomically; failures are ignored (the cache is optional)."""
    if not record.ok:
        return
    chunks: list[bytes] = []
    offset = 0
    parts: dict[str, dict[str, tuple[int, int, bytes]]] = {"channels": {}, "bundles": {}}
    for kind, kept in (("channels", record.channels), ("bundles", record.bundles)):
        for package, (texts, origins) in kept.items():
            body = _json_array(texts)
            parts[kind][package] = (offset, len(body), _origins(origins))
            chunks.append(body)
            offset += len(body)
    index: dict[str, tuple[int, int]] = {}
    try:
        for type_name, keys in record.index.items():
            body = marshal.dumps({k: [(b.package, b.name) for b in bundles] for k, bundles in keys.items()})
            index[type_name] = (offset, len(body))
            chunks.append(body)
            offset += len(body)
    except ValueError:
        return  # an index key marshal cannot store (a plugin's own type): no cache
    header = marshal.dumps(
        {
            "format": _FORMAT,
            "files": record.files,
            "packages": _json_array(record.packages),
            "package_origins": _origins(record.package_origins),
            "deprecations": _json_array(record.deprecations),
            "others": _json_array(record.others),
            "other_origins": _origins(record.other_origins),
            "channels": parts["channels"],
            "bundles": parts["bundles"],
            "index": index,
            "problems": [tuple(p.to_dict().values()) for p in record.problems],
            "body_size": offset,
        }
    )
    write_atomic(path, [_MAGIC, len(header).to_bytes(8, "little"), header, *chunks])


class _Packages(Mapping[str, Mapping[str, Any]]):
    """``package -> name -> channel`` (or bundle): each package built from its part on first access.

    Channels and bundles have separate parts, so that walking every channel (as the
    resolver does to learn which channels list a bundle) builds no bundle.
    """

    def __init__(
        self,
        path: Path,
        body: Any,
        base: int,
        parts: dict[str, tuple[int, int, bytes]],
        files: list[str],
        build: Callable[[Mapping[str, Any], Origin], Any],
    ) -> None:
        self._path = path
        self._body = body
        self._base = base
        self._parts = parts
        self._files = files
        self._build = build
        self._done: dict[str, Mapping[str, Any]] = {}

    def __getitem__(self, package: str) -> Mapping[str, Any]:
        found = self._done.get(package)
        if found is None:
            offset, size, origins_bytes = self._parts[package]
            start = self._base + offset
            try:
                blobs = orjson.loads(self._body[start : start + size])
                origins = array("q")
                origins.frombytes(origins_bytes)
            except (orjson.JSONDecodeError, ValueError) as exc:
                raise CatalogError(f"the catalog cache {self._path} is damaged ({exc}); remove it") from None
            files = self._files
            build = self._build
            built = {}
            for i, raw in enumerate(blobs):
                obj = build(raw, new_origin(files[origins[2 * i]], origins[2 * i + 1]))
                built[obj.name] = obj
            found = self._done[package] = MappingProxyType(built)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._parts)

    def __len__(self) -> int:
        return len(self._parts)

    def __contains__(self, key: object) -> bool:
        return key in self._parts


class _Index(Mapping[str, Mapping[Hashable, Any]]):
    """``property type -> key -> [(package, bundle name)]``, each type decoded on first use."""

    def __init__(self, path: Path, body: Any, base: int, parts: dict[str, tuple[int, int]]) -> None:
        self._path = path
        self._body = body
        self._base = base
        self._parts = parts
        self._done: dict[str, Mapping[Hashable, Any]] = {}

    def __getitem__(self, key: str) -> Mapping[Hashable, Any]:
        found = self._done.get(key)
        if found is None:
            offset, size = self._parts[key]
            start = self._base + offset
            try:
                found = self._done[key] = marshal.loads(self._body[start : start + size])
            except (EOFError, ValueError, TypeError) as exc:
                raise CatalogError(f"the catalog cache {self._path} is damaged ({exc}); remove it") from None
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._parts)

    def __len__(self) -> int:
        return len(self._parts)

    def __contains__(self, key: object) -> bool:
        return key in self._parts


def _open(path: Path) -> tuple[dict[str, Any], Any, int] | None:
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below; the map outlives it
    except OSError:
        return None
    with f:
        try:
            size = os.fstat(f.fileno()).st_size
            head = f.read(_HEAD)
            if len(head) != _HEAD or not head.startswith(_MAGIC):
                return None  # empty, truncated, or not a cache file of this format
            length = int.from_bytes(head[len(_MAGIC) :], "little")
            if length > size - _HEAD:
                return None
            header = marshal.loads(f.read(length))
            if not isinstance(header, dict) or header.get("format") != _FORMAT:
                return None
            if _HEAD + length + header["body_size"] != size:
                return None  # truncated or from a different writer
            body: Any = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if header["body_size"] else b""
        except (OSError, EOFError, ValueError, TypeError, KeyError):
            return None
    return header, body, _HEAD + length


def read_cache(path: Path, registry: Registry, name: str, digest: str) -> tuple[Catalog, tuple[Problem, ...]] | None:
    """Open a cached catalog, or ``None`` when there is no usable cache file."""
    opened = _open(path)
    if opened is None:
        return None
    header, body, base = opened
    reader = BlobReader({n: pt.parse for n, pt in registry.property_types.items() if pt.identity})
    try:
        files: list[str] = header["files"]
        origins = array("q")
        origins.frombytes(header["package_origins"])
        packages = {}
        for i, raw in enumerate(orjson.loads(header["packages"])):
            package = reader.package(raw, Origin(files[origins[2 * i]], origins[2 * i + 1]))
            packages[package.name] = package
        origins = array("q")
        origins.frombytes(header["other_origins"])
        others = tuple(
            Blob(raw["schema"], raw, Origin(files[origins[2 * i]], origins[2 * i + 1]))
            for i, raw in enumerate(orjson.loads(header["others"]))
        )
        deprecations = {}
        for raw in orjson.loads(header["deprecations"]):
            deprecation = Deprecation.from_dict(raw)
            deprecations[deprecation.package] = deprecation
        problems = tuple(Problem(*row) for row in header["problems"])
        catalog = Catalog._wrap(
            name,
            packages,
            _Packages(path, body, base, header["channels"], files, reader.channel),
            _Packages(path, body, base, header["bundles"], files, reader.bundle),
            others,
            deprecations,
            index=None,
            refs=_Index(path, body, base, header["index"]),
            parsed=reader.parsed,
            parse={n: pt.parse for n, pt in registry.property_types.items()},
            digest=digest,
        )
    except (KeyError, TypeError, ValueError, IndexError, orjson.JSONDecodeError):
        return None
    return catalog, problems
