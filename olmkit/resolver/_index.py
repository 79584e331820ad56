"""What predicates see of a bundle, and the resolution graphs kept per catalog content.

* :class:`BundleView` is what predicates see of a bundle (a ``PropertyView``): each
  property type is parsed once per bundle, on first use.
* :func:`graph_for` gives the :class:`~olmkit.resolver._graph.CatalogGraph` of a loaded
  catalog: from memory while the same content is resolved again (a few catalogs are kept),
  else from disk, else compiled (and stored when the catalog has a content digest).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from olmkit.model import Property
from olmkit.registry import Registry

if TYPE_CHECKING:
    from olmkit.resolver._graph import CatalogGraph

__all__ = ["BundleView", "clear_graphs", "graph_for"]


_TYPE = attrgetter("type")


class BundleView:
    """A bundle (catalog entry or installed CSV) as predicates see it."""

    __slots__ = ("_key", "_parse", "_parsed", "_registry", "name", "package", "properties", "version")

    def __init__(
        self,
        name: str,
        package: str,
        version: str | None,
        properties: tuple[Property, ...],
        registry: Registry,
        parse: Callable[[Any, Property], Any] | None = None,
        inline: frozenset[str] | None = None,
    ) -> None:
        self.name = name
        self.package = package
        self.version = version
        if inline is None:
            inline = registry.inline_types  # computed per call: callers making many views pass it
        if inline and not inline.isdisjoint(map(_TYPE, properties)):
            properties = tuple(p for p in properties if p.type not in inline)
        self.properties = properties
        self._registry = registry
        self._parse = parse
        self._parsed: dict[str, tuple[Any, ...]] = {}
        self._key: bytes | None = None

    def values(self, type_name: str) -> tuple[Any, ...]:
        """Parsed values of every property of ``type_name`` (parsed once).

        Raises:
            ValueError: a property of that type is malformed.
        """
        parsed = self._parsed.get(type_name)
        if parsed is None:
            pt = self._registry.property_types.get(type_name)
            if pt is None:
                parsed = tuple(p.value for p in self.properties if p.type == type_name)
            elif self._parse is not None:
                parse = self._parse
                parsed = tuple(parse(pt, p) for p in self.properties if p.type == type_name)
            else:
                parsed = tuple(pt.parse(p.value) for p in self.properties if p.type == type_name)
            self._parsed[type_name] = parsed
        return parsed

    @property
    def property_key(self) -> bytes:
        """A canonical key of the property list (for caches keyed by property set)."""
        if self._key is None:
            import orjson

            key = orjson.dumps([[p.type, p.value] for p in self.properties], option=orjson.OPT_SORT_KEYS, default=str)
            self._key = bytes(memoryview(key))  # orjson's result keeps a 4 KiB buffer: copy it
        return self._key


_GRAPHS: OrderedDict[Hashable, tuple[Any, Registry, CatalogGraph]] = OrderedDict()
_GRAPHS_KEPT = 8
#: graphs (and the catalogs they keep alive) are also bounded by their total entries: a
#: long-running controller that sees a large catalog change often must not keep every version
_ENTRIES_KEPT = 1_000_000


def graph_for(catalog: Any, registry: Registry) -> tuple[CatalogGraph, str, Any]:
    """The graph of ``catalog``, where it came from (``memory``, ``disk`` or ``compiled``), and its catalog.

    A catalog with a content digest is known by it (a source that re-reads an unchanged
    catalog gives a new object with the same digest); one without, by identity. The
    catalog returned is the first object seen with that content: resolutions read bundles
    from it, so that what one read the next need not read again, and steps read later
    keep one snapshot per content alive, not one per resolution. At most a few graphs
    (and their catalogs) are kept in memory, the least recently used are dropped.
    """
    from olmkit.resolver._graph import compile_graph, graph_path, read_graph, write_graph

    digest = getattr(catalog, "digest", "")
    name = getattr(catalog, "name", "")
    key: Hashable = ("digest", digest, name) if digest else ("id", id(catalog))
    hit = _GRAPHS.get(key)
    if hit is not None and hit[1] is registry and (digest or hit[0] is catalog):
        _GRAPHS.move_to_end(key)
        return hit[2], "memory", hit[0]
    graph = None
    origin = "compiled"
    if digest:
        path = graph_path(digest, registry, name)
        graph = read_graph(path)
        origin = "disk"
    if graph is None:
        graph = compile_graph(catalog, registry)
        origin = "compiled"
        if digest:
            write_graph(path, graph)
    _GRAPHS[key] = (catalog, registry, graph)
    total = sum(len(g.entry_class) for _, _, g in _GRAPHS.values())
    while len(_GRAPHS) > 1 and (len(_GRAPHS) > _GRAPHS_KEPT or total > _ENTRIES_KEPT):
        _, (_, _, dropped) = _GRAPHS.popitem(last=False)
        total -= len(dropped.entry_class)
    return graph, origin, catalog


def clear_graphs() -> None:
    """Forget the graphs kept in memory (tests, and callers that need the memory back)."""
    _GRAPHS.clear()
