"""The upgrade graph of a channel: upgrade paths and drawings (mermaid, dot).

An entry ``E`` upgrades an installed bundle ``B`` when ``E.replaces == B``, ``B`` is in
``E.skips``, or ``B``'s version is in ``E.skipRange``. Among the entries that upgrade
``B``, the one closest to the channel head (the resolver's preference order,
:meth:`~olmkit.catalog.Catalog.channel_order`) is taken; the path repeats until the head.
Entries another entry skips are never offered, so a path can stop short of the head
(:func:`upgrade_walk` says where and why; :func:`dead_ends` finds every such entry of a
channel).

.. versionadded:: 0.1
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Mapping
from typing import Any

import attrs

from olmkit.catalog._catalog import Catalog
from olmkit.catalog.semver import parse_range, parse_version
from olmkit.errors import CatalogError
from olmkit.model import ChannelEntry

__all__ = ["UpgradeStop", "dead_ends", "to_dot", "to_mermaid", "upgrade_path", "upgrade_walk", "upgrades_from"]


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


@attrs.frozen
class UpgradeStop:
    """Where an upgrade path stops short of the channel head, and why.

    .. versionadded:: 0.2
    """

    #: the bundle no offered entry upgrades
    bundle: str
    #: the channel head the path does not reach
    head: str
    #: why nothing upgrades it (a phrase: "nothing in the channel replaces, skips ...")
    reason: str

    def __str__(self) -> str:
        return f"stops at {self.bundle!r} (the head is {self.head!r}): {self.reason}"


class _Upgrades:
    """One channel's upgrade edges, indexed: who upgrades a bundle, offered entries first.

    The resolver offers only the entries of :meth:`~olmkit.catalog.Catalog.channel_order`
    (head first, skipped entries left out) and takes the first that upgrades the installed
    bundle; the channel's other entries are kept to say why a path stops.
    """

    def __init__(
        self, catalog: Catalog, package: str, channel: str, versions: Mapping[str, str | None] | None = None
    ) -> None:
        self.package, self.channel = package, channel
        self.order = catalog.channel_order(package, channel)
        self.entries = catalog.channel(package, channel).entries
        self.head = self.order[0].name
        self.versions = catalog.versions(package) if versions is None else versions
        position = self.position = {e.name: i for i, e in enumerate(self.order)}
        self._ranged: list[tuple[int, Any]] = []
        # the first offered entry replacing, and the first skipping, each bundle (other than the bundle itself)
        replacer: dict[str, int] = {}
        skipper: dict[str, int] = {}
        for i, e in enumerate(self.order):
            if e.replaces and position.get(e.replaces, -1) != i:
                replacer.setdefault(e.replaces, i)
            if e.skips:
                for skipped in e.skips:
                    if position.get(skipped, -1) != i:
                        skipper.setdefault(skipped, i)
            if e.skip_range:
                with contextlib.suppress(ValueError):  # OLM ignores an unparsable range
                    self._ranged.append((i, parse_range(e.skip_range)))
        self._first = (replacer, skipper)
        # no skipRange before it: no version to read
        self._first_ranged = self._ranged[0][0] if self._ranged else len(self.order)
        self._table: dict[str, tuple[str, str] | None] | None = None

    def _version(self, name: str) -> str | None:
        return self.versions.get(name)

    def next(self, name: str) -> tuple[str, str] | None:
        """The entry the resolver upgrades ``name`` to, and how (``None``: none does).

        The same as the first entry of the channel order for which :func:`upgrades_from`
        says something, found through an index.
        """
        table = self._table
        if table is not None and name in table:
            return table[name]
        return self._next(name)

    def _next(self, name: str) -> tuple[str, str] | None:
        """:meth:`next`, computed: at the same position, replaces comes before skips, skips before skipRange."""
        replacer, skipper = self._first
        end = len(self.order)
        best = replacer.get(name, end)
        how = "replaces" if best < end else ""
        first_skip = skipper.get(name, end)
        if first_skip < best:
            best, how = first_skip, "skips"
        if self._first_ranged < best:
            text = self._version(name)
            if text:
                try:
                    version = parse_version(text, tolerant=True)
                except ValueError:
                    version = None
                if version is not None:
                    own = self.position.get(name, -1)
                    for i, rng in self._ranged:
                        if i >= best:
                            break
                        if i != own and version in rng:
                            best, how = i, "skipRange"
                            break
        return (self.order[best].name, how) if how else None

    def table(self) -> dict[str, tuple[str, str] | None]:
        """:meth:`next` of every entry of the channel (kept for :meth:`next`)."""
        if self._table is None:
            next_of = self._next
            self._table = {entry.name: next_of(entry.name) for entry in self.entries}
        return self._table

    @functools.cached_property
    def skipped_by(self) -> dict[str, list[str]]:
        """The entries skipping each bundle, in channel order (for :meth:`stop`'s reasons)."""
        skipped_by: dict[str, list[str]] = {}
        for e in self.entries:
            for s in e.skips:
                skipped_by.setdefault(s, []).append(e.name)
        return skipped_by

    def stop(self, name: str) -> UpgradeStop:
        """Why no offered entry upgrades ``name``."""
        version = self._version(name)
        others = [
            (e.name, how)
            for e in self.entries
            if e.name != name and (how := upgrades_from(e, name, version)) is not None
        ]
        if not others:
            reason = "nothing in the channel replaces it, skips it or has a skipRange including it"
        else:
            why = []
            for other, how in others:
                verb = {"replaces": "replaces it", "skips": "skips it", "skipRange": "covers it by skipRange"}[how]
                skippers = self.skipped_by.get(other)
                if skippers:
                    hidden = f"is skipped by {' and '.join(repr(s) for s in skippers)}"
                else:
                    hidden = "is not on the replaces chain from the head"
                why.append(f"{other!r} {verb} but {hidden}")
            reason = "the resolver never offers what upgrades it: " + "; ".join(why)
        return UpgradeStop(name, self.head, reason)

    def walk(self, start: str) -> tuple[list[tuple[str, str]], UpgradeStop | None]:
        steps: list[tuple[str, str]] = []
        current = start
        seen = {current}
        while current != self.head:
            found = self.next(current)
            if found is None:
                return steps, self.stop(current)
            if found[0] in seen:
                reason = f"its upgrade {found[0]!r} ({found[1]}) leads back along the path: a cycle"
                return steps, UpgradeStop(current, self.head, reason)
            steps.append(found)
            seen.add(found[0])
            current = found[0]
        return steps, None


def upgrade_walk(
    catalog: Catalog, package: str, channel: str, start: str
) -> tuple[list[tuple[str, str]], UpgradeStop | None]:
    """The upgrade steps ``(bundle, how)`` from ``start`` as far as they go, and where they stop.

    Each step is the entry the resolver would offer: the first of the channel's preference
    order that replaces, skips or skipRange-covers the current bundle.

    Returns:
        The steps, and ``None`` when they reach the channel head (no steps: ``start`` is
        the head), else where and why they stop.

    Raises:
        CatalogError: unknown package, channel or bundle, or a broken channel.

    .. versionadded:: 0.2
    """
    upgrades = _Upgrades(catalog, package, channel)
    if start not in upgrades.versions and all(e.name != start for e in upgrades.entries):
        raise CatalogError(f'bundle "{start}" not found in package "{package}"')
    return upgrades.walk(start)


def upgrade_path(catalog: Catalog, package: str, channel: str, start: str) -> list[tuple[str, str]]:
    """Steps ``(bundle, how)`` from ``start`` to the channel head (empty when ``start`` is the head).

    Raises:
        CatalogError: unknown package/channel/bundle, a broken channel, or a path that
            stops short of the head (exit code 1: a fact about the catalog).
    """
    steps, stop = upgrade_walk(catalog, package, channel, start)
    if stop is not None:
        raise CatalogError(
            f'the upgrade path from "{start}" in channel "{channel}" of package "{package}" {stop}', exit_code=1
        )
    return steps


def dead_ends(
    catalog: Catalog, package: str, channel: str, *, versions: Mapping[str, str | None] | None = None
) -> list[tuple[UpgradeStop, list[str]]]:
    """The channel's entries whose upgrade path never reaches the head, grouped by where it stops.

    ``versions``: :meth:`Catalog.versions` of the package, when the caller has it already.

    Returns:
        ``(stop, entries)`` pairs in channel order of the stops; the entries (the stop
        itself included) in channel order.

    Raises:
        CatalogError: a broken channel.

    .. versionadded:: 0.2
    """
    upgrades = _Upgrades(catalog, package, channel, versions)
    table = upgrades.table()
    # entry -> where its path stops (None: the head); most paths join one already followed
    outcome: dict[str, str | None] = {upgrades.head: None}
    # first the offered entries, head first: an entry nothing upgrades stops there, one whose
    # upgrade's outcome is known shares it (that path has no cycle: its outcome does not
    # depend on the order entries are taken in). The others are walked below, as ever.
    for entry in upgrades.order:
        found = table.get(entry.name)
        if found is None:
            if entry.name not in outcome and entry.name in table:
                outcome[entry.name] = entry.name
        elif found[0] in outcome and entry.name not in outcome:
            outcome[entry.name] = outcome[found[0]]
    for entry in upgrades.entries:
        current = entry.name
        if current in outcome:
            continue
        path: list[str] = []
        on_path: set[str] = set()
        while current not in outcome:
            if current in on_path:
                outcome.update(dict.fromkeys(path, current))  # a cycle: stuck where it closes
                break
            on_path.add(current)
            path.append(current)
            found = table[current]
            if found is None:
                outcome[current] = current
                break
            current = found[0]
        stop = outcome.get(current, current)
        for name in path:
            outcome.setdefault(name, stop)
    if not any(outcome.values()):  # every path reaches the head (most channels)
        return []
    groups: dict[str, list[str]] = {}
    for entry in upgrades.entries:
        stop_at = outcome[entry.name]
        if stop_at is not None:
            groups.setdefault(stop_at, []).append(entry.name)
    return [(upgrades.walk(stop_at)[1] or upgrades.stop(stop_at), names) for stop_at, names in groups.items()]


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
