"""Loading file-based catalogs: walk, decode, build the snapshot and its index, cache it.

Speed notes (see ``benchmarks/bench_catalog.py`` and ``benchmarks/results/catalog.md``):

* each file is read once: the same bytes are hashed (the cache key, when the cache is
  on) and decoded, as one orjson document on the fast path, and dropped after
  conversion;
* blobs become model objects through :class:`~olmkit.serde.BlobReader`, which interns
  equal properties (one :class:`~olmkit.model.Property`, one parsed value and one index
  computation per distinct value);
* a catalog of one-blob-per-line JSON files is read into columns (``_fast``): no model
  object per bundle or property until a package's bundles are asked for; anything unusual
  is read again by the object loader below, which words every load problem;
* the cyclic garbage collector is paused during the bulk load, and what the load of a
  large catalog built is frozen out of later collections (:func:`gc.freeze`): the
  snapshot is immutable and cycle-free, and a full collection over a few million
  objects would otherwise cost more than the load (main spent 1.7 s exiting after
  loading 200k bundles).
"""

from __future__ import annotations

import gc
import hashlib
import os
from array import array
from collections.abc import Callable, Hashable, Iterable, Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import attrs
import orjson

from olmkit import __version__
from olmkit._solver import channel_reader
from olmkit.catalog import _files, _fork
from olmkit.catalog._cache import read_cache, write_cache
from olmkit.catalog._catalog import Catalog, Deprecation
from olmkit.catalog._fast import Bail, ColumnBuilder
from olmkit.catalog._writes import wait_for_writers, write_later
from olmkit.catalog.problems import ERROR, Problem
from olmkit.errors import CatalogError, InputError
from olmkit.model import Blob, Bundle, Channel, ChannelEntry, Origin, Package, Property
from olmkit.model import _channel as new_channel
from olmkit.model import _entries as new_entries
from olmkit.model import _origin as new_origin
from olmkit.registry import Registry
from olmkit.serde import (
    SCHEMA_BUNDLE,
    SCHEMA_CHANNEL,
    SCHEMA_DEPRECATIONS,
    SCHEMA_PACKAGE,
    SCHEMA_PREFIX,
    BlobReader,
    WireError,
    decode_json_texts,
    decode_yaml_stream,
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
IGNORE_FILE: Final = _files.IGNORE_FILE
#: Part of every catalog digest: a new loader or a different set of property types
#: never reads a cache written by another.
_DIGEST_FORMAT: Final = 3
#: Catalogs with at least this many bundles are frozen out of the garbage collector after
#: loading and have their cache written by a forked child.
BACKGROUND_MIN_BUNDLES: Final = 5000
#: Read JSON catalogs into columns, bundles built on demand (``_fast``); tests turn it off
#: to compare with the object loader.
FAST = True
#: the files the columns take in one batch (see ColumnBuilder.add_files): at most so many, or
#: so many bytes (then held at once)
_BATCH_FILES: Final = 64
_BATCH_BYTES: Final = 1 << 20
#: a blob kept as its text (see :meth:`_Builder.decode_lines`)
_TEXT: Final = object()
#: the schemas as a blob's text spells them unescaped
_CHANNEL_TEXT: Final = f'"{SCHEMA_CHANNEL}"'.encode()
_PACKAGE_TEXT: Final = f'"{SCHEMA_PACKAGE}"'.encode()
_BUNDLE_TEXT: Final = f'"{SCHEMA_BUNDLE}"'.encode()


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


def catalog_files(root: str | os.PathLike[str]) -> list[Path]:
    """Every catalog file under ``root`` (or ``root`` itself), honouring ``.indexignore``.

    ``.indexignore`` files hold gitignore patterns relative to their directory and apply
    to it and everything below; hidden ``.indexignore`` files themselves are never read
    as catalog content.

    Raises:
        InputError: ``root`` does not exist or cannot be listed.
    """
    return [Path(path) for path, _ in _files.scan(root)]


def _registry_key(registry: Registry) -> str:
    types = sorted(f"{name}={registry.owners.get(('property type', name), '')}" for name in registry.property_types)
    return f"{_DIGEST_FORMAT}:{__version__}:" + ",".join(types)


# --------------------------------------------------------------------------- building


class _Builder:
    """Turns decoded blobs into a :class:`Catalog`, collecting problems on the way."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.indexers = {n: pt for n, pt in registry.property_types.items() if pt.index_keys is not None}
        self.index: dict[str, dict[Hashable, list[Bundle]]] = {n: {} for n in self.indexers}
        self.reader = BlobReader(
            {n: pt.parse for n, pt in registry.property_types.items() if pt.identity},
            self.index_lists if self.indexers else None,
        )
        self.problems: list[Problem] = []
        self.packages: dict[str, Package] = {}
        self.channels: dict[str, dict[str, Channel]] = {}
        self.bundles: dict[str, dict[str, Bundle]] = {}
        self.others: list[Blob] = []
        self.deprecations: dict[str, Deprecation] = {}
        #: the C reader of plain channel lines (made on first use; None: there is none)
        self._lines: Any = False
        #: the distinct entries of the channels it read, by its numbers; the first
        #: ``_synced`` of them are in the object reader's table of entries too
        self._entries: list[ChannelEntry] = []
        self._synced = 0
        #: the blobs of lines the scan left kept for :meth:`flush`: (path, line, blob or _TEXT),
        #: and the texts of the _TEXT ones (for the C reader)
        self._kept: list[tuple[str, int, Any]] = []
        self._texts: list[bytes] = []
        #: the order of each channel the C reader read, as the catalog's channel_order
        #: gives it (not of those whose order is an error)
        self.chains: dict[tuple[str, str], tuple[ChannelEntry, ...] | CatalogError] = {}

    # -- input ----------------------------------------------------------------------

    def decode_lines(
        self, path: str, data: bytes, starts: array[int], ends: array[int], first: int, last: int
    ) -> list[tuple[int, Any]]:
        """Lines ``first .. last - 1`` of a JSON file (line ``i`` is ``data[starts[i]:ends[i]]``) as
        ``(line number, blob)`` for :meth:`add`.

        With the C reader of channel and package lines, only the bundle blobs come back: the
        others are kept, in order, for :meth:`flush` (which reads those of every file at
        once); they are none of the bundles' business.

        Raises:
            orjson.JSONDecodeError: a line is not JSON orjson reads.
        """
        loads = orjson.loads
        reader = self._lines
        if reader is False:
            reader = self._lines = channel_reader()
        if reader is None:
            return [(i + 1, loads(data[starts[i] : ends[i]])) for i in range(first, last)]
        if all(ends[i] + 1 == starts[i + 1] for i in range(first, last - 1)):  # one line after the other
            run = data[starts[first] : ends[last - 1]]
            # no escape and no bundle blob (see below): every line for the reader, which
            # leaves the ones it does not take to be decoded then
            if b"\\" not in run and _BUNDLE_TEXT not in run:
                self._texts.append(run)
                self._kept += [(path, i + 1, _TEXT) for i in range(first, last)]
                return []
        values = []
        kept, texts = self._kept.append, self._texts.append
        for i in range(first, last):
            text = data[starts[i] : ends[i]]
            # a channel or package blob the reader may take: no escape (it takes none) and
            # surely no bundle blob (whose schema, unescaped, is this text; its place is in
            # the columns)
            if (_CHANNEL_TEXT in text or _PACKAGE_TEXT in text) and b"\\" not in text and _BUNDLE_TEXT not in text:
                texts(text)
                kept((path, i + 1, _TEXT))
                continue
            raw = loads(text)
            if type(raw) is dict and raw.get("schema") == SCHEMA_BUNDLE:
                values.append((i + 1, raw))
            else:
                kept((path, i + 1, raw))
        return values

    def finish(self) -> None:
        """Add the blobs kept (see :meth:`flush`) and let the C reader go: every file is read."""
        self.flush()
        self._lines = None
        self._entries = []

    def flush(self) -> None:
        """Add the blobs :meth:`decode_lines` kept, in order; the channel and package lines as the
        C reader read them (what :meth:`add` makes of their decoded blob), the lines it left decoded.

        Raises:
            Bail: a line is not JSON orjson reads.
        """
        if not self._kept:
            return
        kept, kept_texts = self._kept, self._texts
        self._kept, self._texts = [], []
        data = b"\n".join(kept_texts)  # one line per _TEXT blob kept
        got = self._lines.read(data) if kept_texts else None
        del kept_texts
        lines: list[bytes] | None = None  # the lines, for those the reader leaves
        if got is not None and got.names:
            made: Iterable[ChannelEntry] = new_entries(got.names, got.replaces, got.skips, got.ranges)
            interned = self.reader.entries
            if interned:  # the object reader made entries too: equal ones are shared
                get = interned.get
                made = (get((e.name, e.replaces, e.skips, e.skip_range)) or e for e in made)
            self._entries += made
        counts, texts, ids = (got.counts, got.texts, got.ids) if got is not None else ((), (), ())
        lengths, positions = (got.chain_len, got.chain_pos) if got is not None else ((), ())
        add, add_channel, entry, chains = self.add, self._add_channel, self._entries.__getitem__, self.chains
        at = t = n = cp = c = 0
        for path, line, raw in kept:
            if raw is not _TEXT:
                add(raw, path, line)
                continue
            k = counts[n]
            if k == -2:  # a package
                origin = new_origin(path, line)
                self._add_package(
                    Package(texts[t], texts[t + 1] or None, texts[t + 2] or None, None, origin, None), None
                )
                t += 3
            elif k < 0:
                if lines is None:
                    lines = data.split(b"\n")
                try:
                    raw = orjson.loads(lines[n])
                except orjson.JSONDecodeError:
                    raise Bail from None
                add(raw, path, line)
            else:
                chosen = tuple(map(entry, ids[at : at + k]))
                package, name = texts[t], texts[t + 1]
                added = add_channel(new_channel(package, name, chosen, new_origin(path, line), None), None)
                length = lengths[c]
                c += 1
                if length >= 0:
                    if added:
                        chains[package, name] = tuple(map(chosen.__getitem__, positions[cp : cp + length]))
                    cp += length
                at += k
                t += 2
            n += 1

    def add_file(self, path: str, data: bytes) -> None:
        """Add every blob of one file (a JSON or YAML stream).

        Raises:
            InputError: the file is malformed (names it and the line).
        """
        suffix = os.path.splitext(path)[1].lower()
        add = self.add
        try:
            if suffix == ".json" or (suffix not in (".yaml", ".yml") and data.lstrip()[:1] in (b"{", b"[")):
                for line, raw, _ in decode_json_texts(data, texts=False):
                    add(raw, path, line)
            else:
                for line, raw in decode_yaml_stream(data):
                    add(raw, path, line)
        except ValueError as exc:
            raise InputError(str(exc), path=path) from None

    def add(self, raw: Any, path: str, line: int) -> None:
        """Add one decoded blob."""
        if self._kept:  # the blobs kept before it first
            self.flush()
        origin = new_origin(path, line)
        schema = raw.get("schema") if type(raw) is dict else None
        try:
            if schema == SCHEMA_BUNDLE:
                bundle = self.reader.bundle(raw, origin)
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
                for lst in self.reader.gathered:  # file it in the index
                    if not lst or lst[-1] is not bundle:
                        lst.append(bundle)
            elif schema == SCHEMA_CHANNEL:
                if self._synced < len(self._entries):
                    self._sync_entries()
                self._add_channel(self.reader.channel(raw, origin), raw)
            elif schema == SCHEMA_PACKAGE:
                self._add_package(self.reader.package(raw, origin), raw)
            elif schema == SCHEMA_DEPRECATIONS:
                deprecation = Deprecation.from_dict(raw, origin)
                if deprecation.package in self.deprecations:
                    raise WireError("package", f"package {deprecation.package!r} has more than one deprecations blob")
                self.deprecations[deprecation.package] = deprecation
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

    def _add_channel(self, channel: Channel, raw: dict[str, Any] | None) -> bool:
        """File ``channel``; ``False`` (and a problem) for a second channel of its name."""
        chans = self.channels.get(channel.package)
        if chans is None:
            chans = self.channels[channel.package] = {}
        elif channel.name in chans:
            if raw is None:  # read by C: what the problem tells of the blob
                raw = {"schema": SCHEMA_CHANNEL, "package": channel.package, "name": channel.name}
            assert channel.origin is not None
            self.blob_problem(
                f"duplicate channel {channel.name!r} (first defined at {chans[channel.name].origin})",
                raw,
                channel.origin,
                "name",
            )
            return False
        chans[channel.name] = channel
        return True

    def _add_package(self, package: Package, raw: dict[str, Any] | None) -> None:
        if package.name in self.packages:
            if raw is None:  # read by C: what the problem tells of the blob
                raw = {"schema": SCHEMA_PACKAGE, "name": package.name}
            assert package.origin is not None
            first = self.packages[package.name].origin
            self.blob_problem(
                f"package {package.name!r} is defined twice (first at {first})", raw, package.origin, "name"
            )
            return
        self.packages[package.name] = package

    def _sync_entries(self) -> None:
        """File the entries the C reader made in the object reader's table (equal ones are shared)."""
        setdefault = self.reader.entries.setdefault
        for e in self._entries[self._synced :]:
            setdefault((e.name, e.replaces, e.skips, e.skip_range), e)
        self._synced = len(self._entries)

    # -- problems ---------------------------------------------------------------------

    def problem(self, message: str, origin: Origin | None, **kw: Any) -> None:
        self.problems.append(
            Problem(ERROR, message, path=origin.path if origin else None, line=origin.line if origin else None, **kw)
        )

    def blob_problem(self, message: str, raw: dict[str, Any], origin: Origin, field: str | None) -> None:
        schema = raw.get("schema")
        name = raw.get("name")
        kind = schema if isinstance(schema, str) and schema else "blob"
        label = f"{kind} {name}" if isinstance(name, str) and name else kind
        pkg = raw.get("package") if schema != SCHEMA_PACKAGE else name
        self.problem(message, origin, package=pkg if isinstance(pkg, str) else None, blob=label, field=field or None)

    # -- output -----------------------------------------------------------------------

    def index_lists(self, prop: Property) -> tuple[list[Bundle], ...]:
        """The index lists a bundle carrying ``prop`` belongs in (once per distinct property)."""
        pt = self.indexers.get(prop.type)
        if pt is None:
            return ()
        parsed = self.reader.parsed
        try:
            value = parsed.get(id(prop))
            if value is None:
                value = parsed.remember(prop, pt.parse(prop.value))
            keys = pt.index_keys(value)  # type: ignore[misc]
            idx = self.index[prop.type]
            return tuple(idx.setdefault(k, []) for k in keys)
        except (ValueError, TypeError, AttributeError, KeyError):
            return ()

    def build_index(self) -> dict[str, dict[Hashable, tuple[Bundle, ...]]]:
        """Bundles by ``(property type, index key)``, as filed while adding them."""
        return {n: {k: tuple(v) for k, v in idx.items() if v} for n, idx in self.index.items()}

    def catalog(self, name: str, digest: str) -> Catalog:
        index = self.build_index()
        return Catalog._wrap(
            name,
            self.packages,
            {k: MappingProxyType(v) for k, v in self.channels.items()},
            {k: MappingProxyType(v) for k, v in self.bundles.items()},
            tuple(self.others),
            self.deprecations,
            index=index,
            refs=None,
            parsed=self.reader.parsed,
            parse={n: pt.parse for n, pt in self.registry.property_types.items()},
            digest=digest,
        )

    def catalog_over(self, columns: ColumnBuilder, name: str, digest: str) -> Catalog:
        """The catalog of what ``columns`` read (its bundles) and this builder (everything else)."""
        parsed: dict[int, Any] = {}
        filled, bundles, refs = columns.catalog_parts(parsed)
        return Catalog._wrap(
            name,
            self.packages,
            {k: MappingProxyType(v) for k, v in self.channels.items()},
            bundles,
            tuple(self.others),
            self.deprecations,
            index=None,
            refs=refs,
            parsed=parsed,
            parse={n: pt.parse for n, pt in self.registry.property_types.items()},
            digest=digest,
            columns=filled,
            chains=self.chains,
        )


def build_catalog(
    blobs: Iterator[tuple[str, int, Any]], registry: Registry, *, name: str, digest: str = ""
) -> LoadResult:
    """Build a catalog from ``(path, line, blob)`` triples (e.g. from a ConfigMap)."""
    builder = _Builder(registry)
    for path, line, raw in blobs:
        builder.add(raw, path, line)
    return LoadResult(builder.catalog(name, digest), tuple(builder.problems))


def _cache_path(digest: str, root: Path) -> Path:
    """The cache file of a catalog: by content, and by where it lies.

    Snapshots remember the files their blobs came from (messages name them; bundle
    directories named relative to a blob are found from them), so two copies of one catalog
    in different places must not share a cache file. Their digest, what graphs are kept by,
    stays the same.
    """
    where = hashlib.sha1(str(root.resolve()).encode(), usedforsecurity=False).hexdigest()[:16]
    return cache_dir() / f"{digest}-{where}.cache"


def load_catalog_result(
    path: str | os.PathLike[str], registry: Registry, *, name: str | None = None, cache: bool = True
) -> LoadResult:
    """Load a catalog and keep the problems found while building it (see :func:`load_catalog`)."""
    result, pending = _load(path, registry, name=name, cache=cache)
    if pending is not None:
        pending.start()
    return result


@attrs.define
class _PendingWrite:
    """A cache write the load left to do: ``start()`` it, or hand ``write`` to a forked helper."""

    write: Callable[[], None]
    big: bool

    def start(self) -> None:
        """Write now, or when the command is done (:func:`~olmkit.catalog.defer_writes`).

        A large catalog's cache is written by a forked child while this process goes on.
        """
        write_later(self.write, big=self.big)


def _load(
    path: str | os.PathLike[str], registry: Registry, *, name: str | None, cache: bool
) -> tuple[LoadResult, _PendingWrite | None]:
    root = Path(path)
    _fork.wait_background()  # a cache still being written by an earlier load is complete first
    if cache:
        wait_for_writers(cache_dir())  # and one an earlier command left to a child of its own
    digests = _files.FileDigests.for_root(root, cache_dir()) if cache else _files.FileDigests(None)
    files, remembered = digests.files(root)
    if not files:
        raise InputError("no catalog files found (empty directory, or everything is ignored)", path=str(root))
    display = name or (root.name if root.is_dir() else root.stem) or str(root)
    salt = _registry_key(registry)
    enabled = gc.isenabled()
    gc.disable()
    try:
        if digests.known:
            # seen before: one stat per file tells whether the cache can answer
            digest = _files.catalog_digest(salt, [(rel, digests.digest(p, rel)) for p, rel in files])
            hit = read_cache(_cache_path(digest, root), registry, display, digest)
            if hit is not None:
                digests.save()
                return LoadResult(hit[0], hit[1], cached=True), None
        if remembered:  # the content changed: list it again, not only what was there before
            files, _ = digests.files(root, fresh=True)
            if not files:
                raise InputError("no catalog files found (empty directory, or everything is ignored)", path=str(root))
        fast = FAST
        while True:
            builder = _Builder(registry)
            columns = ColumnBuilder(registry, builder) if fast else None
            seen = []
            # with the columns, files are added a batch at a time (one C scan call for the batch)
            batch: list[tuple[str, bytes]] = []
            size = 0
            try:
                for p, rel in files:
                    try:
                        data, signature = _files.read_signed(p)  # signed as opened: a later change shows
                    except InputError:
                        if columns is not None:  # the files before it first, as one by one (they may bail)
                            columns.add_files(batch)
                        raise
                    if cache:  # the digest is the cache's key; without the cache there is none, as before
                        file_digest = _files.file_digest(data)
                        seen.append((rel, file_digest))
                        digests.record(rel, signature, file_digest)
                    if columns is None:
                        builder.add_file(p, data)
                        continue
                    batch.append((p, data))
                    size += len(data)
                    if size >= _BATCH_BYTES or len(batch) >= _BATCH_FILES:
                        columns.add_files(batch)
                        batch, size = [], 0
                    del data
                if columns is not None:
                    columns.add_files(batch)
                    batch = []
                builder.finish()
            except Bail:
                fast = False  # something unusual: the whole catalog the usual way, for exact problems
                continue
            break
        digest = _files.catalog_digest(salt, seen) if cache else ""
        if columns is None:
            catalog = builder.catalog(display, digest)
            count = sum(map(len, builder.bundles.values()))
        else:
            count = columns.count()
            catalog = builder.catalog_over(columns, display, digest)
        result = LoadResult(catalog, tuple(builder.problems))
        big = count >= BACKGROUND_MIN_BUNDLES
        if big:
            # keep the collector off the snapshot for good: it is immutable and cycle-free,
            # and it would otherwise be walked by the next collections (and at exit). Only
            # for large catalogs: freezing also keeps whatever cyclic garbage exists now.
            gc.freeze()
        if not cache:
            return result, None

        def write() -> None:
            write_cache(_cache_path(digest, root), catalog, result.problems)
            digests.save()

        return result, _PendingWrite(write, big)
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
