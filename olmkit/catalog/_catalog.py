"""The catalog snapshot: immutable, indexed, cheap to query."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import attrs

from olmkit.catalog._columns import BundleColumns, build_columns
from olmkit.catalog._fast import IndexKeys, LazyBundles
from olmkit.errors import CatalogError
from olmkit.model import Blob, Bundle, Channel, ChannelEntry, Origin, Package, Property
from olmkit.serde import SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_PACKAGE, WireError

__all__ = ["Catalog", "Deprecation"]

_EMPTY: Mapping[Any, Any] = MappingProxyType({})
_MISSING: Any = object()


@attrs.frozen(slots=True)
class Deprecation:
    """What a package's deprecations blob says (messages by what they deprecate).

    ``package_message`` deprecates the whole package; ``channels`` and ``bundles`` map
    names to messages. ``data`` is the blob as read, written back verbatim.
    """

    package: str
    package_message: str | None = None
    channels: Mapping[str, str] = attrs.field(factory=dict)
    bundles: Mapping[str, str] = attrs.field(factory=dict)
    data: Mapping[str, Any] | None = attrs.field(default=None, eq=False)
    #: where the blob was read (file and line), when known
    origin: Origin | None = attrs.field(default=None, eq=False)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], origin: Origin | None = None) -> Deprecation:
        """A deprecations blob as a :class:`Deprecation`.

        Raises:
            WireError: a field is missing or malformed (names the field).
        """
        package = raw.get("package")
        if not isinstance(package, str) or not package:
            raise WireError("package", "is required and must be a string")
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
        return cls(package, pkg_msg, channels, bundles, raw, origin)


class Catalog:
    """An immutable, indexed snapshot of one catalog.

    Attributes:
        name: the catalog's name (a directory's base name unless given).
        packages: package name -> :class:`Package`.
        channels: package -> channel name -> :class:`Channel` (entries in file order).
        bundles: package -> bundle name -> :class:`Bundle`.
        others: opaque blobs of other schemas, in file order (written back verbatim).
        deprecations: package -> :class:`Deprecation` (from the deprecations blobs).
        digest: content digest of the files read (the cache key), or ``""``.

    The index: :meth:`lookup` finds bundles by ``(property_type, key)`` as filed by the
    property types' ``index_keys``; :meth:`values` gives a bundle's parsed property
    values by type.
    """

    __slots__ = (
        "_chains",
        "_columns",
        "_index",
        "_parse",
        "_parsed",
        "_refs",
        "bundles",
        "channels",
        "deprecations",
        "digest",
        "name",
        "others",
        "packages",
    )

    name: str
    packages: Mapping[str, Package]
    channels: Mapping[str, Mapping[str, Channel]]
    bundles: Mapping[str, Mapping[str, Bundle]]
    others: tuple[Blob, ...]
    deprecations: Mapping[str, Deprecation]
    digest: str
    _index: dict[str, dict[Hashable, tuple[Bundle, ...]]]
    _parsed: dict[int, Any]
    _parse: Mapping[str, Any]
    _chains: dict[tuple[str, str], tuple[ChannelEntry, ...] | CatalogError]
    _refs: Mapping[str, Mapping[Hashable, Any]] | None
    _columns: BundleColumns | None

    def __init__(
        self,
        name: str,
        packages: Mapping[str, Package],
        channels: Mapping[str, Mapping[str, Channel]],
        bundles: Mapping[str, Mapping[str, Bundle]],
        others: tuple[Blob, ...] = (),
        deprecations: Mapping[str, Deprecation] | None = None,
        *,
        index: Mapping[str, Mapping[Hashable, tuple[Bundle, ...]]] | None = None,
        parsed: dict[int, Any] | None = None,
        parse: Mapping[str, Any] | None = None,
        digest: str = "",
    ) -> None:
        self.name = name
        self.packages = MappingProxyType(dict(packages))
        self.channels = MappingProxyType({k: MappingProxyType(dict(v)) for k, v in channels.items()})
        self.bundles = MappingProxyType({k: MappingProxyType(dict(v)) for k, v in bundles.items()})
        self.others = tuple(others)
        self.deprecations = MappingProxyType(dict(deprecations or {}))
        self.digest = digest
        self._index = {k: dict(v) for k, v in (index or {}).items()}
        self._parsed = parsed if parsed is not None else {}
        self._parse = parse or {}
        self._chains = {}
        self._refs = None
        self._columns = _MISSING

    @classmethod
    def _wrap(
        cls,
        name: str,
        packages: dict[str, Package],
        channels: Mapping[str, Mapping[str, Channel]],
        bundles: Mapping[str, Mapping[str, Bundle]],
        others: tuple[Blob, ...],
        deprecations: dict[str, Deprecation],
        *,
        index: dict[str, dict[Hashable, tuple[Bundle, ...]]] | None,
        refs: Mapping[str, Mapping[Hashable, Any]] | None,
        parsed: dict[int, Any],
        parse: Mapping[str, Any],
        digest: str,
        columns: BundleColumns | None = None,
        chains: dict[tuple[str, str], tuple[ChannelEntry, ...] | CatalogError] | None = None,
    ) -> Catalog:
        """A catalog over mappings the caller hands over (no copies; the loader's fast path).

        ``channels`` and ``bundles`` may be lazy mappings (the cache materialises a
        package on first access); ``refs`` is then the index with ``(package, bundle
        name)`` pairs in place of bundles, resolved on first lookup. ``columns``: the
        bundles as columns, when the loader filled them. ``chains``: channel orders (see
        :meth:`channel_order`) the loader found already, by ``(package, channel)``.
        """
        self = cls.__new__(cls)
        self.name = name
        self.packages = MappingProxyType(packages)
        self.channels = MappingProxyType(channels) if isinstance(channels, dict) else channels
        self.bundles = MappingProxyType(bundles) if isinstance(bundles, dict) else bundles
        self.others = others
        self.deprecations = MappingProxyType(deprecations)
        self.digest = digest
        self._index = index if index is not None else {}
        self._parsed = parsed
        self._parse = parse
        self._chains = {} if chains is None else chains
        self._refs = refs
        self._columns = _MISSING if columns is None else columns
        return self

    def _resolve(self, type_name: str, key: Hashable) -> tuple[Bundle, ...]:
        assert self._refs is not None
        pairs = self._refs.get(type_name, _EMPTY).get(key)
        if not pairs:
            return ()
        found = tuple(self.bundles[pkg][name] for pkg, name in pairs)
        self._index.setdefault(type_name, {})[key] = found
        return found

    def __repr__(self) -> str:
        count = sum(len(b) for b in self.bundles.values())
        return f"<Catalog {self.name!r}: {len(self.packages)} packages, {count} bundles>"

    # -- queries --------------------------------------------------------------------

    def bundle(self, package: str, name: str) -> Bundle | None:
        """The bundle ``name`` of ``package``, or ``None``."""
        return self.bundles.get(package, _EMPTY).get(name)

    def versions(self, package: str) -> Mapping[str, str | None]:
        """Each bundle's version by name, for one package (no bundle built when read into columns)."""
        bundles = self.bundles
        if isinstance(bundles, LazyBundles):
            c = bundles.columns
            names, versions = c.bundle_name, c.bundle_version
            return {names[i]: versions[i] for i in bundles.span(package)}
        return {name: b.version for name, b in bundles.get(package, _EMPTY).items()}

    def iter_bundles(self) -> list[Bundle]:
        """Every bundle, package by package in catalog order."""
        return [b for bundles in self.bundles.values() for b in bundles.values()]

    def lookup(self, type_name: str, key: Hashable) -> tuple[Bundle, ...]:
        """Bundles filed under ``key`` by property type ``type_name``'s ``index_keys``."""
        found = self._index.get(type_name, _EMPTY).get(key)
        if found is not None:
            return found
        return self._resolve(type_name, key) if self._refs is not None else ()

    def lookup_names(self, type_name: str, key: Hashable) -> Sequence[tuple[str, str]]:
        """``(package, bundle name)`` of the bundles :meth:`lookup` gives, in its order.

        For callers that number the bundles themselves (the resolver's graph compiler looks
        up every key of a catalog): a catalog read from the cache then builds no bundle
        tuple for the index.
        """
        found = self._index.get(type_name, _EMPTY).get(key)
        if found is not None:
            return [(b.package, b.name) for b in found]
        if self._refs is None:
            return ()
        pairs: Sequence[tuple[str, str]] | None = self._refs.get(type_name, _EMPTY).get(key)
        return pairs or ()

    def index_keys(self, type_name: str) -> Mapping[Hashable, tuple[Bundle, ...]]:
        """The whole index of one property type (key -> bundles)."""
        if self._refs is not None:
            for key in self._refs.get(type_name, _EMPTY):
                self.lookup(type_name, key)
        return MappingProxyType(self._index.get(type_name, {}))

    def parsed(self, prop: Property) -> Any:
        """The parsed value of one of this catalog's properties.

        Raises:
            ValueError: the value is malformed for its (registered) type.
        """
        key = id(prop)
        found = self._parsed.get(key, _MISSING)
        if found is not _MISSING:
            return found
        pt = self._parse.get(prop.type)
        value = pt(prop.value) if pt is not None else prop.value
        self._parsed[key] = value
        return value

    def parsed_so_far(self, parse: Mapping[str, Any]) -> dict[int, Any]:
        """``id(property) -> parsed value`` of the properties parsed so far (a copy).

        Empty unless the catalog parses every type in ``parse`` with the same function
        (``parse`` maps a type to its parser, as the caller's registry does). The loader
        parses each bundle's identity property for its version: a caller that parses
        every property of the catalog (the resolver's graph compiler) starts from these.
        A catalog whose bundles are built on first access (read into columns) builds them
        all first: call it only to read every bundle.
        """
        mine = self._parse
        if any(mine.get(name) is not fn for name, fn in parse.items()):
            return {}
        if isinstance(self.bundles, LazyBundles):
            # read into columns: the values parsed while reading are filed as the bundles are built
            self.bundles.build_all()
        return dict(self._parsed) if self._parsed else {}

    def values(self, bundle: Bundle, type_name: str) -> tuple[Any, ...]:
        """Parsed values of every property of ``type_name`` a bundle carries (malformed ones left out)."""
        out = []
        for p in bundle.properties:
            if p.type == type_name:
                try:
                    out.append(self.parsed(p))
                except ValueError:
                    continue
        return tuple(out)

    def columns(self, *, build: bool = True) -> BundleColumns | None:
        """Every bundle as columns (see :class:`BundleColumns`), or ``None`` when a value is not plain JSON.

        Built once, from :attr:`bundles` unless the loader filled them while reading.

        Args:
            build: ``False`` gives the columns only when the catalog holds them already
                (filled by the loader, or built before), else ``None``: building them from
                the bundles costs more than a caller reading them may save.
        """
        found = self._columns
        if found is _MISSING:
            if not build:
                return None
            found = self._columns = build_columns(self.bundles)
        return found

    def parsed_distinct(self, parse: Mapping[str, Any], *, identities: bool = True) -> Mapping[int, Any]:
        """Distinct property (of :meth:`columns`) -> its value as the loader parsed it.

        Only when the loader parsed every type it parsed with the function ``parse`` has
        for it (``parse`` maps a type to its parser, as the caller's registry does), else
        empty; empty too for a catalog not read into columns. The loader parses each
        bundle's identity property (for its version) and every indexed property once.
        ``identities=False`` leaves out the values it read through their fields, not made
        for the caller (see ``LazyBundles.parsed_so_far``): the identities' package and
        version are ``bundles.identities(ds)``.
        """
        bundles = self.bundles
        if not isinstance(bundles, LazyBundles):
            return _EMPTY
        if any(parse.get(name) is not fn for name, fn in bundles.parsed_with.items()):
            return _EMPTY
        return bundles.parsed_view() if identities else bundles.parsed_so_far()

    def lookup_rows(self, type_name: str, key: Hashable) -> Sequence[int] | None:
        """The rows in :meth:`columns` of the bundles :meth:`lookup_names` gives, in its order.

        ``None`` when the catalog's index is not filed by rows (it was not read into
        columns): use :meth:`lookup_names` then.
        """
        refs = self._refs
        if refs is None or not isinstance(self.bundles, LazyBundles):
            return None
        keys = refs.get(type_name)
        if keys is None:
            return ()
        assert isinstance(keys, IndexKeys)
        return keys.lists.get(key, ())

    # -- the upgrade graph ------------------------------------------------------------

    def channel(self, package: str, channel: str) -> Channel:
        """The channel, or :class:`CatalogError` naming what is missing."""
        if package not in self.packages and package not in self.channels:
            raise CatalogError(f'package "{package}" not found in catalog {self.name}')
        found: Channel | None = self.channels.get(package, _EMPTY).get(channel)
        if found is None:
            raise CatalogError(f'channel "{channel}" of package "{package}" not found in catalog {self.name}')
        return found

    def _chain(self, package: str, channel: str) -> tuple[ChannelEntry, ...]:
        key = (package, channel)
        cached = self._chains.get(key)
        if cached is None:
            try:
                cached = _sort_channel(self.channel(package, channel))
            except CatalogError as exc:
                cached = exc
            self._chains[key] = cached
        if isinstance(cached, CatalogError):
            raise cached
        return cached

    def channel_head(self, package: str, channel: str) -> ChannelEntry:
        """The channel's head: the entry no other entry replaces or skips.

        Raises:
            CatalogError: no head, several heads, or a replaces cycle (upstream's texts).
        """
        return self._chain(package, channel)[0]

    def channel_order(self, package: str, channel: str) -> list[ChannelEntry]:
        """The resolver's preference order within a channel.

        Head first, then following ``replaces``; entries some other entry ``skips`` are
        left out entirely (they can never be candidates).

        Raises:
            CatalogError: no head, several heads, or a replaces cycle (upstream's texts).
        """
        return list(self._chain(package, channel))


def _sort_channel(channel: Channel) -> tuple[ChannelEntry, ...]:
    """OLM's ``sortChannel``: one replacement chain from the head, skipped entries dropped."""
    entries = channel.entries
    ch, pkg = channel.name, channel.package
    if not entries:
        raise CatalogError(
            f'no channel heads (entries not replaced by another entry) found in channel "{ch}" of package "{pkg}"'
        )
    by_name = {e.name: e for e in entries}
    replaced_by: set[str] = set()
    replaces: dict[str, ChannelEntry] = {}
    skipped: set[str] = set()
    for e in entries:
        if e.replaces and e.replaces in by_name:
            replaced_by.add(e.replaces)
            replaces[e.name] = by_name[e.replaces]
        for s in e.skips:
            if s in by_name:
                replaced_by.add(s)
                skipped.add(s)
    heads = [e for e in entries if e.name not in replaced_by]
    if not heads:
        raise CatalogError(
            f'no channel heads (entries not replaced by another entry) found in channel "{ch}" of package "{pkg}"'
        )
    chains: list[list[ChannelEntry]] = []
    for head in heads:
        chain: list[ChannelEntry] = []
        visited: set[str] = set()
        current = head
        while True:
            visited.add(current.name)
            if current.name not in skipped:
                chain.append(current)
            nxt = replaces.get(current.name)
            if nxt is None:
                break
            if nxt.name in visited:
                raise CatalogError(
                    f'a cycle exists in the chain of replacement beginning with "{head.name}" '
                    f'in channel "{ch}" of package "{pkg}"'
                )
            current = nxt
        chains.append(chain)
    if len(chains) > 1:
        names = []
        for c in chains:
            if not c:
                names.append("[]")
            elif len(c) == 1:
                names.append(c[0].name)
            else:
                names.append(f"{c[0].name}...{c[-1].name}")
        raise CatalogError(
            "a unique replacement chain within a channel is required to determine the relative order "
            f'between channel entries, but {len(chains)} replacement chains were found in channel "{ch}" '
            f'of package "{pkg}": {", ".join(names)}'
        )
    return tuple(chains[0])
