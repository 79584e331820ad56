"""The upgrade graph of a channel: upgrade paths and drawings (mermaid, dot).

An entry ``E`` upgrades an installed bundle ``B`` when ``E.replaces == B``, ``B`` is in
``E.skips``, or ``B``'s version is in ``E.skipRange``. Among the entries that upgrade
``B``, the one closest to the channel head (the resolver's preference order,
:meth:`~olmkit.catalog.Catalog.channel_order`) is taken; the path repeats until the head.

.. versionadded:: 0.1
"""

from __future__ import annotations

from olmkit.catalog._catalog import Catalog
from olmkit.catalog.semver import parse_range, parse_version
from olmkit.errors import CatalogError
from olmkit.model import ChannelEntry

__all__ = ["to_dot", "to_mermaid", "upgrade_path", "upgrades_from"]


def upgrades_from(entry: ChannelEntry, name: str, version: str | None) -> str | None:
    """How ``entry`` upgrades bundle ``name`` (``replaces``, ``skips``, ``skipRange``) or ``None``."""
    if entry.replaces == name:
        return "replaces"
    if name in entry.skips:
        return "skips"
    if entry.skip_range and version:
        try:
            if parse_version(version, tolerant=True) in parse_range(entry.skip_range):
                return "skipRange"
        except ValueError:
            return None  # OLM ignores an unparsable range
    return None


def upgrade_path(catalog: Catalog, package: str, channel: str, start: str) -> list[tuple[str, str]]:
    """Steps ``(bundle, how)`` from ``start`` to the channel head (empty when ``start`` is the head).

    Raises:
        CatalogError: unknown package/channel/bundle, a broken channel, or no upgrade
            from some bundle on the way.
    """
    order = catalog.channel_order(package, channel)
    head = order[0]
    bundles = catalog.bundles.get(package, {})
    if start not in bundles and all(e.name != start for e in catalog.channel(package, channel).entries):
        raise CatalogError(f'bundle "{start}" not found in package "{package}"')
    steps: list[tuple[str, str]] = []
    current = start
    seen = {current}
    while current != head.name:
        bundle = bundles.get(current)
        version = bundle.version if bundle is not None else None
        for entry in order:
            how = upgrades_from(entry, current, version)
            if how is not None and entry.name not in seen:
                steps.append((entry.name, how))
                seen.add(entry.name)
                current = entry.name
                break
        else:
            raise CatalogError(
                f'no upgrade from "{current}" in channel "{channel}" of package "{package}" '
                f'(nothing replaces, skips or has a skipRange including it; the head is "{head.name}")'
            )
    return steps


def _edges(catalog: Catalog, package: str, channel: str) -> list[tuple[str, str, str]]:
    entries = catalog.channel(package, channel).entries
    edges = []
    for e in entries:
        if e.replaces:
            edges.append((e.replaces, e.name, "replaces"))
        edges += [(s, e.name, "skips") for s in e.skips]
        if e.skip_range:
            edges += [
                (o.name, e.name, "skipRange")
                for o in entries
                if o.name != e.name and upgrades_from(e, o.name, _version(catalog, package, o.name)) == "skipRange"
            ]
    return edges


def _version(catalog: Catalog, package: str, name: str) -> str | None:
    bundle = catalog.bundles.get(package, {}).get(name)
    return bundle.version if bundle is not None else None


def _channels(catalog: Catalog, package: str, channel: str | None) -> list[str]:
    if package not in catalog.channels:
        raise CatalogError(f'package "{package}" not found in catalog {catalog.name}')
    return [channel] if channel else list(catalog.channels[package])


def to_mermaid(catalog: Catalog, package: str, channel: str | None = None) -> str:
    """A mermaid flowchart of the package's channels (solid: replaces, dashed: skips/skipRange)."""
    lines = ["graph LR"]
    for ch in _channels(catalog, package, channel):
        lines.append(f'  subgraph {_id(ch)}["channel {ch}"]')
        for e in catalog.channel(package, ch).entries:
            lines.append(f'    {_id(ch + "/" + e.name)}["{e.name}"]')
        for src, dst, how in _edges(catalog, package, ch):
            arrow = "-->" if how == "replaces" else "-.->"
            lines.append(f"    {_id(ch + '/' + src)} {arrow}|{how}| {_id(ch + '/' + dst)}")
        lines.append("  end")
    return "\n".join(lines) + "\n"


def to_dot(catalog: Catalog, package: str, channel: str | None = None) -> str:
    """A Graphviz digraph of the package's channels (solid: replaces, dashed: skips/skipRange)."""
    lines = [f'digraph "{package}" {{', "  rankdir=LR;"]
    for ch in _channels(catalog, package, channel):
        lines.append(f'  subgraph "cluster_{ch}" {{')
        lines.append(f'    label="channel {ch}";')
        for e in catalog.channel(package, ch).entries:
            lines.append(f'    "{ch}/{e.name}" [label="{e.name}"];')
        for src, dst, how in _edges(catalog, package, ch):
            style = "solid" if how == "replaces" else "dashed"
            lines.append(f'    "{ch}/{src}" -> "{ch}/{dst}" [label="{how}", style={style}];')
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _id(text: str) -> str:
    return "n_" + "".join(c if c.isalnum() else "_" for c in text)
