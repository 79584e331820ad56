"""The resolution graphs kept per catalog content: in memory, on disk, else compiled.

:func:`graph_for` gives the :class:`~olmkit.resolver._graph.CatalogGraph` of a loaded
catalog: from memory while the same content is resolved again (a few catalogs are kept),
else from disk, else compiled (and stored when the catalog has a content digest).
"""

from __future__ import annotations

import hashlib
import mmap
import os
from collections import OrderedDict
from collections.abc import Hashable
from pathlib import Path
from typing import Any, Final

from olmkit.registry import Registry
from olmkit.resolver._compile_columns import compile_graph
from olmkit.resolver._graph import FORMAT, CatalogGraph

__all__ = ["clear_graphs", "graph_for", "graph_path", "read_graph", "registry_key", "registry_settings", "write_graph"]


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
    digest = getattr(catalog, "digest", "")
    name = getattr(catalog, "name", "")
    settings = registry_settings(registry)
    key: Hashable = ("digest", digest, name, settings) if digest else ("id", id(catalog), settings)
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
            from olmkit.catalog import write_later

            write_later(lambda: write_graph(path, graph))  # now, or when a one-shot command is done
    _GRAPHS[key] = (catalog, registry, graph)
    total = sum(len(g.entry_class) for _, _, g in _GRAPHS.values())
    while len(_GRAPHS) > 1 and (len(_GRAPHS) > _GRAPHS_KEPT or total > _ENTRIES_KEPT):
        _, (_, _, dropped) = _GRAPHS.popitem(last=False)
        total -= len(dropped.entry_class)
    return graph, origin, catalog


def clear_graphs() -> None:
    """Forget the graphs kept in memory (tests, and callers that need the memory back)."""
    _GRAPHS.clear()


def registry_key(registry: Registry) -> str:
    """What a graph depends on besides the catalog: the plugins that parse and match, and their settings."""
    from olmkit import __version__

    kinds = ("property type", "constraint key")
    owned = sorted(f"{kind}:{name}={owner}" for (kind, name), owner in registry.owners.items() if kind in kinds)
    settings = registry_settings(registry)
    return f"{FORMAT}:{__version__}:" + ",".join(owned) + (f"|{settings}" if settings else "")


def registry_settings(registry: Registry) -> str:
    """The current ``settings`` of the property types and constraint keys that declare some."""
    parts = [
        f"{kind}:{name}={record.settings()!r}"
        for kind, records in (
            ("property type", registry.property_types),
            ("constraint key", registry.constraint_evaluators),
        )
        for name, record in records.items()
        if record.settings is not None
    ]
    return ",".join(sorted(parts))


def graph_path(digest: str, registry: Registry, name: str = "") -> Path:
    """Where the graph of the catalog ``name`` with ``digest`` is kept (next to the catalog cache)."""
    from olmkit.catalog import cache_dir

    text = f"{digest}\0{name}\0{registry_key(registry)}"
    key = hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()
    return cache_dir() / "resolver" / f"{key}.graph"


def read_graph(path: Path) -> CatalogGraph | None:
    # mapped, pages populated at once: no copy of the file into the heap (66 MB at
    # P=10000), and one system call instead of a page fault per page
    try:
        with path.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            if not size:
                return None
            data = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED | _POPULATE, prot=mmap.PROT_READ)
    except (OSError, ValueError):
        return None
    with data:
        return CatalogGraph.loads(data)


_POPULATE: Final = getattr(mmap, "MAP_POPULATE", 0)


def write_graph(path: Path, graph: CatalogGraph) -> None:
    """Write atomically; failures are ignored (the stored graph only saves time)."""
    from olmkit.catalog import write_atomic

    data = graph.dumps()
    if data is not None:
        write_atomic(path, data)
