"""Loading file-based catalogs: walk, decode, build the snapshot and its index, cache it.

Speed notes (see ``benchmarks/bench_catalog.py``): files are decoded one at a time
(line-by-line orjson on the fast path) and dropped after conversion; identical
properties are interned (one :class:`Property` object, one parsed value and one index
computation per distinct value); the garbage collector is paused during the bulk load
and the long-lived result is frozen out of later collections.
"""

from __future__ import annotations

import gc
import hashlib
import os
from collections.abc import Hashable, Iterator
from pathlib import Path
from typing import Any, Final

import attrs
import orjson
import pathspec

from olmkit import __version__
from olmkit.catalog._cache import read_cache, write_cache
from olmkit.catalog._catalog import Catalog, Deprecation
from olmkit.catalog.problems import ERROR, Problem
from olmkit.errors import CatalogError, InputError
from olmkit.model import Blob, Bundle, Channel, Origin, Package, Property
from olmkit.registry import Registry
from olmkit.serde import (
    SCHEMA_BUNDLE,
    SCHEMA_CHANNEL,
    SCHEMA_DEPRECATIONS,
    SCHEMA_PACKAGE,
    SCHEMA_PREFIX,
    WireError,
    bundle_from_dict,
    channel_from_dict,
    decode_json_stream,
    decode_yaml_stream,
    package_from_dict,
)

__all__ = [
    "CACHE_ENV",
    "LoadResult",
    "build_catalog",
    "cache_dir",
    "catalog_files",
    "invalid_catalog",
    "load_catalog",
    "load_catalog_result",
]

CACHE_ENV: Final = "OLMKIT_CACHE_DIR"
_CACHE_FORMAT: Final = 1
IGNORE_FILE: Final = ".indexignore"


@attrs.frozen
class LoadResult:
    """A loaded catalog plus the problems found while building it (for validation)."""

    catalog: Catalog
    problems: tuple[Problem, ...]
    cached: bool = False


def cache_dir() -> Path:
    """Where parsed catalogs are cached: ``$OLMKIT_CACHE_DIR`` or ``~/.cache/olmkit/catalogs``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "olmkit" / "catalogs"


# --------------------------------------------------------------------------- walking


def catalog_files(root: str | os.PathLike[str]) -> list[Path]:
    """Every catalog file under ``root`` (or ``root`` itself), honouring ``.indexignore``.

    ``.indexignore`` files hold gitignore patterns relative to their directory and apply
    to it and everything below; hidden ``.indexignore`` files themselves are never read
    as catalog content.

    Raises:
        InputError: ``root`` does not exist or cannot be listed.
    """
    path = Path(root)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise InputError("no such file or directory", path=str(path))
    files: list[Path] = []
    specs: list[tuple[Path, pathspec.PathSpec]] = []

    def onerror(exc: OSError) -> None:
        raise InputError(f"cannot list directory: {exc.strerror}", path=exc.filename)

    for dirpath, dirnames, filenames in os.walk(path, onerror=onerror):
        here = Path(dirpath)
        dirnames.sort()
        specs = [(base, spec) for base, spec in specs if base == here or base in here.parents]
        if IGNORE_FILE in filenames:
            try:
                lines = (here / IGNORE_FILE).read_text().splitlines()
            except OSError as exc:
                raise InputError(f"cannot read: {exc.strerror}", path=str(here / IGNORE_FILE)) from None
            specs.append((here, pathspec.GitIgnoreSpec.from_lines(lines)))

        def ignored(rel_to: Path, is_dir: bool) -> bool:
            for base, spec in specs:
                rel = rel_to.relative_to(base).as_posix() + ("/" if is_dir else "")
                if spec.match_file(rel):
                    return True
            return False

        dirnames[:] = [d for d in dirnames if not ignored(here / d, True)]
        for name in sorted(filenames):
            if name == IGNORE_FILE:
                continue
            full = here / name
            if not ignored(full, False):
                files.append(full)
    return files


def _digest(files: list[Path], root: Path, registry_key: str) -> str:
    h = hashlib.sha1(registry_key.encode(), usedforsecurity=False)
    for f in files:
        h.update(b"\0" + str(f.relative_to(root) if f != root else f.name).encode() + b"\0")
        h.update(_read(f))
    return h.hexdigest()


def _read(f: Path) -> bytes:
    try:
        return f.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}", path=str(f)) from None


def _registry_key(registry: Registry) -> str:
    types = sorted(f"{name}={registry.owners.get(('property type', name), '')}" for name in registry.property_types)
    return f"{_CACHE_FORMAT}:{__version__}:" + ",".join(types)


def _decode(f: Path, data: bytes) -> Iterator[tuple[int, Any]]:
    suffix = f.suffix.lower()
    try:
        if suffix == ".json" or (suffix not in (".yaml", ".yml") and data.lstrip()[:1] in (b"{", b"[")):
            yield from decode_json_stream(data)
        else:
            yield from decode_yaml_stream(data)
    except ValueError as exc:
        raise InputError(str(exc), path=str(f)) from None


# --------------------------------------------------------------------------- building


class _Builder:
    """Turns decoded blobs into a :class:`Catalog`, collecting problems on the way."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.identity = {n: pt.parse for n, pt in registry.property_types.items() if pt.identity}
        self.parsers = {n: pt.parse for n, pt in registry.property_types.items()}
        self.problems: list[Problem] = []
        self.packages: dict[str, Package] = {}
        self.channels: dict[str, dict[str, Channel]] = {}
        self.bundles: dict[str, dict[str, Bundle]] = {}
        self.others: list[Blob] = []
        self.deprecations: dict[str, Deprecation] = {}
        self.parsed: dict[int, Any] = {}
        self._props: dict[Hashable, Property] = {}
        self._origins: dict[str, str] = {}

    def problem(self, message: str, origin: Origin | None, **kw: Any) -> None:
        self.problems.append(
            Problem(ERROR, message, path=origin.path if origin else None, line=origin.line if origin else None, **kw)
        )

    def make_property(self, ptype: str, value: Any) -> Property:
        try:
            key: Hashable = (ptype, tuple(value.items())) if type(value) is dict else (ptype, value)
            found = self._props.get(key)
        except TypeError:
            try:
                key = (ptype, orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS))
            except TypeError:
                key = (ptype, repr(value))
            found = self._props.get(key)
        if found is None:
            found = self._props[key] = Property(ptype, value)
        return found

    def version_of(self, properties: tuple[Property, ...]) -> str | None:
        identity = self.identity
        for p in properties:
            parse = identity.get(p.type)
            if parse is None:
                continue
            try:
                value = self.parsed.get(id(p))
                if value is None:
                    value = self.parsed[id(p)] = parse(p.value)
            except (ValueError, TypeError, AttributeError, KeyError):
                continue
            return getattr(value, "version", None)
        return None

    def add(self, raw: Any, path: str, line: int) -> None:
        origin = Origin(path, line)
        schema = raw.get("schema") if type(raw) is dict else None
        try:
            if schema == SCHEMA_BUNDLE:
                bundle = bundle_from_dict(raw, origin, make_property=self.make_property, version_of=self.version_of)
                per = self.bundles.get(bundle.package)
                if per is None:
                    per = self.bundles[bundle.package] = {}
                elif bundle.name in per:
                    self.blob_problem(
                        f"duplicate bundle {bundle.name!r} (first defined at {per[bundle.name].origin})",
                        raw,
                        origin,
                        "name",
                    )
                    return
                per[bundle.name] = bundle
            elif schema == SCHEMA_CHANNEL:
                channel = channel_from_dict(raw, origin)
                chans = self.channels.setdefault(channel.package, {})
                if channel.name in chans:
                    self.blob_problem(
                        f"duplicate channel {channel.name!r} (first defined at {chans[channel.name].origin})",
                        raw,
                        origin,
                        "name",
                    )
                    return
                chans[channel.name] = channel
            elif schema == SCHEMA_PACKAGE:
                package = package_from_dict(raw, origin)
                if package.name in self.packages:
                    first = self.packages[package.name].origin
                    self.blob_problem(
                        f"package {package.name!r} is defined twice (first at {first})", raw, origin, "name"
                    )
                    return
                self.packages[package.name] = package
            elif schema == SCHEMA_DEPRECATIONS:
                self.add_deprecations(raw, origin)
            elif type(raw) is not dict:
                self.problem(f"a catalog blob must be an object, not {type(raw).__name__}", origin)
            elif not isinstance(schema, str) or not schema:
                self.blob_problem("blob has no schema", raw, origin, "schema")
            elif schema.startswith(SCHEMA_PREFIX):
                self.blob_problem(f"unknown schema {schema!r}", raw, origin, "schema")
            else:
                self.others.append(Blob(schema, raw, origin))
        except WireError as exc:
            self.blob_problem(exc.message, raw, origin, exc.field)

    def blob_problem(self, message: str, raw: dict[str, Any], origin: Origin, field: str | None) -> None:
        schema = raw.get("schema")
        name = raw.get("name")
        label = f"{schema} {name}" if isinstance(name, str) else str(schema)
        pkg = raw.get("package") if schema != SCHEMA_PACKAGE else name
        self.problem(message, origin, package=pkg if isinstance(pkg, str) else None, blob=label, field=field or None)

    def add_deprecations(self, raw: dict[str, Any], origin: Origin) -> None:
        package = raw.get("package")
        if not isinstance(package, str) or not package:
            raise WireError("package", "is required and must be a string")
        if package in self.deprecations:
            raise WireError("package", f"package {package!r} has more than one deprecations blob")
        entries = raw.get("entries") or []
        if not isinstance(entries, list):
            raise WireError("entries", "must be a list")
        pkg_msg: str | None = None
        channels: dict[str, str] = {}
        bundles: dict[str, str] = {}
        for i, e in enumerate(entries):
            ref = e.get("reference") if isinstance(e, dict) else None
            if not isinstance(ref, dict):
                raise WireError(f"entries[{i}].reference", "is required and must be an object")
            message = e.get("message")
            if not isinstance(message, str) or not message:
                raise WireError(f"entries[{i}].message", "is required and must be a string")
            kind = ref.get("schema")
            if kind == SCHEMA_PACKAGE:
                pkg_msg = message
            elif kind in (SCHEMA_CHANNEL, SCHEMA_BUNDLE):
                ref_name = ref.get("name")
                if not isinstance(ref_name, str) or not ref_name:
                    raise WireError(f"entries[{i}].reference.name", "is required and must be a string")
                (channels if kind == SCHEMA_CHANNEL else bundles)[ref_name] = message
            else:
                raise WireError(f"entries[{i}].reference.schema", f"cannot deprecate schema {kind!r}")
        self.deprecations[package] = Deprecation(package, pkg_msg, channels, bundles, raw)

    def build_index(self) -> dict[str, dict[Hashable, tuple[Bundle, ...]]]:
        indexers = {n: pt for n, pt in self.registry.property_types.items() if pt.index_keys is not None}
        if not indexers:
            return {}
        lists: dict[str, dict[Hashable, list[Bundle]]] = {n: {} for n in indexers}
        # one computation per distinct (interned) property: the lists its bundles go to
        targets: dict[int, tuple[list[Bundle], ...]] = {}
        parsed = self.parsed
        for prop in self._props.values():
            pt = indexers.get(prop.type)
            if pt is None:
                continue
            pid = id(prop)
            try:
                if pid in parsed:
                    value = parsed[pid]
                else:
                    value = parsed[pid] = pt.parse(prop.value)
                keys = tuple(pt.index_keys(value))  # type: ignore[misc]
            except (ValueError, TypeError, AttributeError, KeyError):
                continue
            idx = lists[prop.type]
            targets[pid] = tuple(idx.setdefault(k, []) for k in keys)
        get = targets.get
        for per in self.bundles.values():
            for bundle in per.values():
                for p in bundle.properties:
                    found = get(id(p))
                    if found is None:
                        continue
                    for lst in found:
                        if not lst or lst[-1] is not bundle:
                            lst.append(bundle)
        return {n: {k: tuple(v) for k, v in idx.items() if v} for n, idx in lists.items()}

    def catalog(self, name: str, digest: str) -> Catalog:
        return Catalog(
            name,
            self.packages,
            self.channels,
            self.bundles,
            tuple(self.others),
            self.deprecations,
            index=self.build_index(),
            parsed=self.parsed,
            parse=self.parsers,
            digest=digest,
        )


def build_catalog(
    blobs: Iterator[tuple[str, int, Any]], registry: Registry, *, name: str, digest: str = ""
) -> LoadResult:
    """Build a catalog from ``(path, line, blob)`` triples (e.g. from a ConfigMap)."""
    builder = _Builder(registry)
    for path, line, raw in blobs:
        builder.add(raw, path, line)
    return LoadResult(builder.catalog(name, digest), tuple(builder.problems))


def _cache_path(digest: str) -> Path:
    return cache_dir() / f"{digest}.cache"


def load_catalog_result(
    path: str | os.PathLike[str], registry: Registry, *, name: str | None = None, cache: bool = True
) -> LoadResult:
    """Load a catalog and keep the problems found while building it (see :func:`load_catalog`)."""
    root = Path(path)
    files = catalog_files(root)
    if not files:
        raise InputError("no catalog files found (empty directory, or everything is ignored)", path=str(root))
    display = name or (root.name if root.is_dir() else root.stem) or str(root)
    enabled = gc.isenabled()
    gc.disable()
    try:
        digest = ""
        if cache:
            digest = _digest(files, root, _registry_key(registry))
            hit = read_cache(_cache_path(digest), registry, display, digest)
            if hit is not None:
                return LoadResult(hit[0], hit[1], cached=True)
        builder = _Builder(registry)
        for f in files:
            data = _read(f)
            fname = str(f)
            add = builder.add
            for line, raw in _decode(f, data):
                add(raw, fname, line)
            del data
        result = LoadResult(builder.catalog(display, digest), tuple(builder.problems))
        if cache:
            write_cache(_cache_path(digest), result.catalog, result.problems)
        return result
    finally:
        if enabled:
            gc.enable()


def load_catalog(
    path: str | os.PathLike[str], registry: Registry, *, name: str | None = None, cache: bool = True
) -> Catalog:
    """Load a file-based catalog: a directory tree (or a single file) of JSON/YAML blob streams.

    Args:
        path: the catalog directory or file.
        registry: the plugin registry (property types decide versions and the index).
        name: the catalog's name (default: the directory's base name).
        cache: use the on-disk cache keyed by the content digest of every file.

    Raises:
        InputError: a file is missing, unreadable or malformed (names the file and line).
        CatalogError: the catalog's blobs are inconsistent (duplicates, blobs without a
            schema, unknown ``olm.`` schemas, malformed fields); lists every problem.
    """
    result = load_catalog_result(path, registry, name=name, cache=cache)
    if result.problems:
        raise invalid_catalog(path, result.problems)
    return result.catalog


def invalid_catalog(path: str | os.PathLike[str], problems: tuple[Problem, ...]) -> CatalogError:
    """The error for a catalog that loaded with problems (the first twenty listed)."""
    lines = [str(p) for p in problems[:20]]
    more = len(problems) - len(lines)
    if more > 0:
        lines.append(f"... and {more} more")
    return CatalogError(f"catalog {path} is invalid:\n  " + "\n  ".join(lines))
