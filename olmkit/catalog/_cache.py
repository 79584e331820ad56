"""The on-disk catalog cache: keyed by the content digest of every file read.

Layout (format 4): a magic string naming the format, an 8-byte little-endian header
length, the header, then the body, all ``marshal``. The header holds the file list, the
packages, deprecations and opaque blobs, the problems found while loading, and where in
the body each package's parts and each property type's index lie. A package has two
parts, its channels and its bundles, as plain tuples: a bundle's version is stored (not
parsed again) and its properties are indices into the package's table of distinct
properties, so that building a package costs little more than creating its objects.
Origins are ``(file number, line)``, with ``-1`` for none.

Reading maps the body into memory and decodes only the header: a package's channels
and bundles are built on first access, and an index type on its first lookup, so an
unchanged catalog is queryable almost at once and a package nobody asks for costs
nothing. Values marshal cannot store (a YAML date, a plugin's own index key) mean no
cache for that catalog.
"""

from __future__ import annotations

import marshal
import mmap
import os
from collections.abc import Callable, Hashable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from olmkit.catalog._catalog import Catalog, Deprecation
from olmkit.catalog._fast import LazyBundles
from olmkit.catalog._files import write_atomic
from olmkit.catalog.problems import Problem
from olmkit.errors import CatalogError
from olmkit.model import Blob, Bundle, Channel, ChannelEntry, Origin, Package
from olmkit.model import _bundle as new_bundle
from olmkit.model import _entry as new_entry
from olmkit.model import _origin as new_origin
from olmkit.model import _property as new_property
from olmkit.registry import Registry

__all__ = ["read_cache", "write_cache"]

_FORMAT: Final = 5
_MAGIC: Final = b"olmkit\x00" + bytes((_FORMAT,))  # what a cache file of this format starts with
_HEAD: Final = len(_MAGIC) + 8  # the magic and the header length


#: a package's bundles in the cache: its distinct properties (type, value), and a row per bundle
_Part = tuple[list[tuple[str, Any]], list[tuple[Any, ...]]]


class _Files:
    """Numbers the files origins name (``-1`` for no origin or no line)."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}

    def where(self, origin: Origin | None) -> tuple[int, int]:
        if origin is None:
            return (-1, -1)
        number = self.numbers.get(origin.path)
        if number is None:
            number = self.numbers[origin.path] = len(self.numbers)
        return (number, -1 if origin.line is None else origin.line)


def _bundle_part(bundles: Mapping[str, Bundle], files: _Files) -> _Part:
    # the package's distinct properties (interned by the loader: equal ones are one object)
    distinct = {id(p): p for b in bundles.values() for p in b.properties}
    number = {pid: n for n, pid in enumerate(distinct)}.__getitem__
    where = files.where
    rows = [
        (b.name, b.version, b.image, tuple(map(number, map(id, b.properties))), *where(b.origin), b.extra)
        for b in bundles.values()
    ]
    return [(p.type, p.value) for p in distinct.values()], rows


def _column_part(bundles: LazyBundles, package: str, files: _Files) -> _Part:
    """:func:`_bundle_part` of a package read into columns, without building its bundles."""
    c = bundles.columns
    rows = bundles.span(package)
    starts, refs = c.prop_start, c.prop_ref
    distinct = list(dict.fromkeys(refs[starts[rows.start] : starts[rows.stop]])) if rows else []
    number = {d: n for n, d in enumerate(distinct)}.__getitem__
    table = [(c.dist_type[d], value) for d, value in zip(distinct, c.values(distinct), strict=True)]
    names, versions, images = c.bundle_name, c.bundle_version, c.bundle_image
    extra = bundles.extra
    numbers = files.numbers
    out = []
    for i in rows:
        path, line = bundles.where(i)
        file = numbers.get(path)
        if file is None:
            file = numbers[path] = len(numbers)
        numbered = tuple(map(number, refs[starts[i] : starts[i + 1]]))
        out.append((names[i], versions[i], images[i], numbered, file, line, extra.get(i)))
    return table, out


def _channel_part(channels: Mapping[str, Channel], files: _Files) -> list[tuple[Any, ...]]:
    return [
        (
            c.name,
            tuple((e.name, e.replaces, e.skips, e.skip_range) for e in c.entries),
            *files.where(c.origin),
            c.extra,
        )
        for c in channels.values()
    ]


def write_cache(path: Path, catalog: Catalog, problems: tuple[Problem, ...]) -> None:
    """Write a freshly loaded ``catalog`` to ``path`` atomically; failures are ignored (the cache is optional)."""
    files = _Files()
    chunks: list[bytes] = []
    offset = 0

    def add(value: Any) -> tuple[int, int]:
        nonlocal offset
        data = marshal.dumps(value)
        chunks.append(data)
        offset += len(data)
        return (offset - len(data), len(data))

    try:
        lazy = catalog.bundles
        if isinstance(lazy, LazyBundles):  # read into columns: written from them, no bundle built
            bundles = {pkg: add(_column_part(lazy, pkg, files)) for pkg in lazy}
        else:
            bundles = {pkg: add(_bundle_part(per, files)) for pkg, per in catalog.bundles.items()}
        channels = {pkg: add(_channel_part(per, files)) for pkg, per in catalog.channels.items()}
        if catalog._refs is None:
            index = {
                type_name: add({k: [(b.package, b.name) for b in found] for k, found in keys.items()})
                for type_name, keys in catalog._index.items()
            }
        else:  # filed by (package, bundle name): the whole index, not only what was looked up
            index = {type_name: add({k: list(v) for k, v in keys.items()}) for type_name, keys in catalog._refs.items()}
        packages = [
            (p.name, p.default_channel, p.description, p.icon, p.extra, *files.where(p.origin))
            for p in catalog.packages.values()
        ]
        header = marshal.dumps(
            {
                "format": _FORMAT,
                "files": list(files.numbers),
                "packages": packages,
                "deprecations": [(d.data, *files.where(d.origin)) for d in catalog.deprecations.values()],
                "others": [(b.schema, b.data, *files.where(b.origin)) for b in catalog.others],
                "channels": channels,
                "bundles": bundles,
                "index": index,
                "problems": [tuple(p.to_dict().values()) for p in problems],
                "body_size": offset,
            }
        )
    except ValueError:
        return  # a value marshal cannot store: no cache for this catalog
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
        parts: dict[str, tuple[int, int]],
        build: Callable[[str, Any], dict[str, Any]],
    ) -> None:
        self._path = path
        self._body = body
        self._base = base
        self._parts = parts
        self._build = build
        self._done: dict[str, Mapping[str, Any]] = {}

    def __getitem__(self, package: str) -> Mapping[str, Any]:
        found = self._done.get(package)
        if found is None:
            offset, size = self._parts[package]
            start = self._base + offset
            try:
                built = self._build(package, marshal.loads(self._body[start : start + size]))
            except (EOFError, ValueError, TypeError, IndexError) as exc:
                raise CatalogError(f"the catalog cache {self._path} is damaged ({exc}); remove it") from None
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
    try:
        files: list[str] = header["files"]

        def origin(number: int, line: int) -> Origin | None:
            return None if number < 0 else new_origin(files[number], None if line < 0 else line)

        def build_bundles(package: str, part: Any) -> dict[str, Bundle]:
            table = [new_property(ptype, value) for ptype, value in part[0]]
            pick = table.__getitem__
            out = {}
            for bundle_name, version, image, numbers, number, line, extra in part[1]:
                out[bundle_name] = new_bundle(
                    bundle_name, package, version, image, tuple(map(pick, numbers)), origin(number, line), extra
                )
            return out

        entries: dict[tuple[Any, ...], ChannelEntry] = {}

        def build_channels(package: str, part: Any) -> dict[str, Channel]:
            out = {}
            for channel_name, raw_entries, number, line, extra in part:
                built = []
                for e in raw_entries:
                    entry = entries.get(e)
                    if entry is None:
                        entry = entries[e] = new_entry(*e)
                    built.append(entry)
                out[channel_name] = Channel(package, channel_name, tuple(built), origin(number, line), extra)
            return out

        packages = {}
        for pkg_name, default, description, icon, extra, number, line in header["packages"]:
            packages[pkg_name] = Package(pkg_name, default, description, icon, origin(number, line), extra)
        others = tuple(Blob(schema, data, origin(number, line)) for schema, data, number, line in header["others"])
        deprecations = {}
        for raw, number, line in header["deprecations"]:
            deprecation = Deprecation.from_dict(raw, origin(number, line))
            deprecations[deprecation.package] = deprecation
        problems = tuple(Problem(*row) for row in header["problems"])
        catalog = Catalog._wrap(
            name,
            packages,
            _Packages(path, body, base, header["channels"], build_channels),
            _Packages(path, body, base, header["bundles"], build_bundles),
            others,
            deprecations,
            index=None,
            refs=_Index(path, body, base, header["index"]),
            parsed={},
            parse={n: pt.parse for n, pt in registry.property_types.items()},
            digest=digest,
        )
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    return catalog, problems
