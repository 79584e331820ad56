"""Per-catalog lookup structures, built lazily and kept while the catalog object lives.

* :class:`BundleView` is what predicates see of a bundle (a ``PropertyView``): each
  property type is parsed once per bundle, on first use, and predicate results are
  cached on the view.
* :class:`CatalogIndex` files bundles under their property types' ``index_keys``, one
  property type at a time and only when a predicate first looks that type up, and
  knows which channels list a bundle and at which position of the channel order.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable
from typing import Any

from olmkit.model import Property
from olmkit.registry import Registry

__all__ = ["BundleView", "CatalogIndex", "index_for", "predicate_id"]


class BundleView:
    """A bundle (catalog entry or installed CSV) as predicates see it."""

    __slots__ = ("_key", "_parsed", "_registry", "matched", "name", "package", "properties", "version")

    def __init__(
        self, name: str, package: str, version: str | None, properties: tuple[Property, ...], registry: Registry
    ) -> None:
        self.name = name
        self.package = package
        self.version = version
        inline = registry.inline_types
        self.properties = tuple(p for p in properties if p.type not in inline) if inline else properties
        self._registry = registry
        self._parsed: dict[str, tuple[Any, ...]] = {}
        self._key: bytes | None = None
        self.matched: dict[int, bool] = {}

    def values(self, type_name: str) -> tuple[Any, ...]:
        """Parsed values of every property of ``type_name`` (parsed once).

        Raises:
            ValueError: a property of that type is malformed.
        """
        parsed = self._parsed.get(type_name)
        if parsed is None:
            pt = self._registry.property_types.get(type_name)
            raw = [p.value for p in self.properties if p.type == type_name]
            parsed = tuple(pt.parse(v) for v in raw) if pt is not None else tuple(raw)
            self._parsed[type_name] = parsed
        return parsed

    @property
    def property_key(self) -> bytes:
        """A canonical key of the property list (for caches keyed by property set)."""
        if self._key is None:
            import orjson

            self._key = orjson.dumps(
                [[p.type, p.value] for p in self.properties], option=orjson.OPT_SORT_KEYS, default=str
            )
        return self._key


class CatalogIndex:
    """Lazy lookup structures over one loaded catalog."""

    def __init__(self, catalog: Any, registry: Registry) -> None:
        self.catalog = catalog
        self.registry = registry
        self._views: dict[tuple[str, str], BundleView] = {}
        self._by_type: dict[str, dict[Hashable, list[tuple[str, str]]]] = {}
        self._channels_of: dict[tuple[str, str], list[str]] | None = None
        self._orders: dict[tuple[str, str], list[Any]] = {}
        self._positions: dict[tuple[str, str], dict[str, int]] = {}

    # -- bundles --------------------------------------------------------------------

    def bundle(self, package: str, name: str) -> Any:
        return self.catalog.bundles[package][name]

    def view(self, package: str, name: str) -> BundleView:
        key = (package, name)
        view = self._views.get(key)
        if view is None:
            b = self.bundle(package, name)
            view = BundleView(b.name, b.package, b.version, b.properties, self.registry)
            self._views[key] = view
        return view

    def all_bundles(self) -> Iterable[tuple[str, str]]:
        for package, bundles in self.catalog.bundles.items():
            for name in bundles:
                yield (package, name)

    def lookup(self, type_name: str, key: Hashable) -> list[tuple[str, str]]:
        """Bundles ``(package, name)`` filed under ``key`` by ``type_name``'s index keys."""
        table = self._by_type.setdefault(type_name, {})
        found = table.get(key)
        if found is None:
            found = [(b.package, b.name) for b in self.catalog.lookup(type_name, key)]
            table[key] = found
        return found

    # -- channels -------------------------------------------------------------------

    def channels_of(self, package: str, name: str) -> list[str]:
        """Channels of ``package`` listing the bundle ``name``."""
        if self._channels_of is None:
            table: dict[tuple[str, str], list[str]] = {}
            for pkg, channels in self.catalog.channels.items():
                for ch_name, channel in channels.items():
                    for entry in channel.entries:
                        table.setdefault((pkg, entry.name), []).append(ch_name)
            self._channels_of = table
        return self._channels_of.get((package, name), [])

    def order(self, package: str, channel: str) -> list[Any]:
        """Channel entries head first along replaces, skipped ones dropped.

        Raises:
            CatalogError: the channel has no unique head or a replaces cycle.
        """
        key = (package, channel)
        entries = self._orders.get(key)
        if entries is None:
            entries = list(self.catalog.channel_order(package, channel))
            self._orders[key] = entries
        return entries

    def position(self, package: str, channel: str, name: str) -> int | None:
        """Index of ``name`` in :meth:`order`, or ``None`` when it is skipped or absent."""
        key = (package, channel)
        positions = self._positions.get(key)
        if positions is None:
            positions = {e.name: i for i, e in enumerate(self.order(package, channel))}
            self._positions[key] = positions
        return positions.get(name)

    def default_channel(self, package: str) -> str | None:
        pkg = self.catalog.packages.get(package)
        return pkg.default_channel if pkg is not None else None


_PREDICATE_IDS: dict[Any, int] = {}


def predicate_id(predicate: Any) -> int:
    """A process-wide number for a predicate (equal predicates share it): the key of match caches."""
    pid = _PREDICATE_IDS.get(predicate)
    if pid is None:
        if len(_PREDICATE_IDS) > 1_000_000:  # bound the memory of a long-running process
            _PREDICATE_IDS.clear()
            _CACHE.clear()
        pid = _PREDICATE_IDS[predicate] = len(_PREDICATE_IDS)
    return pid


_CACHE: OrderedDict[Hashable, tuple[Any, Registry, CatalogIndex]] = OrderedDict()
_CACHE_SIZE = 16


def index_for(catalog: Any, registry: Registry) -> CatalogIndex:
    """The index of ``catalog``, reused while the same content is resolved again.

    A catalog with a content digest is known by it (a source that re-reads an unchanged
    catalog gives a new object with the same digest); one without, by identity.
    """
    digest = getattr(catalog, "digest", "")
    key: Hashable = ("digest", digest, catalog.name) if digest else ("id", id(catalog))
    hit = _CACHE.get(key)
    if hit is not None and hit[1] is registry and (digest or hit[0] is catalog):
        _CACHE.move_to_end(key)
        return hit[2]
    index = CatalogIndex(catalog, registry)
    _CACHE[key] = (catalog, registry, index)
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return index
