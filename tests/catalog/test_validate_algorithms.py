"""How validation does its work: the upgrade graph's indexed walk against its definition, and the
split of the packages between two processes, and how the child hands its problems back.

``dead_ends`` and ``upgrade_walk`` take each entry's upgrade from a table computed in one
pass over the channel. The reference here takes it from the definition: the first entry of
the channel order, other than the bundle itself, for which ``upgrades_from`` says something;
and it groups the entries as the per-entry walk did (entries in channel order, each path
remembered, a cycle stuck where it closes). Random channels of replaces, skips and
skipRanges (some unparsable, some entries naming missing bundles, cycles, several heads)
must give the same groups, stops and reasons, or the same error.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from olmkit.catalog import build_catalog
from olmkit.catalog._catalog import Catalog
from olmkit.catalog.graph import UpgradeStop, _Upgrades, dead_ends, upgrade_walk, upgrades_from
from olmkit.errors import CatalogError
from olmkit.manager import get_plugin_manager

REGISTRY = get_plugin_manager(entrypoints=False).registry
VERSIONS = ["0.1.0", "0.2.0", "1.0.0", "1.0.1", "1.1.0", "2.0.0", "2.0.0-rc.1", "3.0.0"]
RANGES = ["<1.0.0", ">=0.1.0 <2.0.0", "<2.0.0", ">=1.0.0 <3.0.0", ">=1.0.0", "<0.0.0", "<v1.13.0", "not a range"]


class Reference(_Upgrades):
    """A channel's upgrades by the definition: the first offered entry (channel order) that upgrades a
    bundle, found by asking ``upgrades_from`` of each (no index, no table)."""

    def next(self, name: str) -> tuple[str, str] | None:
        version = self.versions.get(name)
        for entry in self.order:
            if entry.name != name and (how := upgrades_from(entry, name, version)) is not None:
                return entry.name, how
        return None


def reference_dead_ends(catalog: Catalog, package: str, channel: str) -> list[tuple[UpgradeStop, list[str]]]:
    upgrades = Reference(catalog, package, channel)
    outcome: dict[str, str | None] = {upgrades.head: None}
    for entry in upgrades.entries:
        path: list[str] = []
        current = entry.name
        on_path: set[str] = set()
        while current not in outcome:
            if current in on_path:
                outcome.update(dict.fromkeys(path, current))
                break
            on_path.add(current)
            path.append(current)
            found = upgrades.next(current)
            if found is None:
                outcome[current] = current
                break
            current = found[0]
        stop = outcome.get(current, current)
        for name in path:
            outcome.setdefault(name, stop)
    groups: dict[str, list[str]] = {}
    for entry in upgrades.entries:
        stop_at = outcome.get(entry.name)
        if stop_at is not None:
            groups.setdefault(stop_at, []).append(entry.name)
    return [(upgrades.walk(s)[1] or upgrades.stop(s), names) for s, names in groups.items()]


@st.composite
def channels(draw: Any) -> list[dict[str, Any]]:
    """A package with one channel of 1-9 entries; bundles for most entries, versions drawn (repeats allowed)."""
    count = draw(st.integers(1, 9))
    names = [f"a.e{i}" for i in range(count)]
    others = st.sampled_from([*names, "a.missing"])
    entries = []
    for i, name in enumerate(names):
        entry: dict[str, Any] = {"name": name}
        link = draw(st.integers(0, 19))
        if i > 0 and link < 18:  # mostly one chain (a channel with one head), sometimes anything
            entry["replaces"] = names[i - 1] if link < 17 else draw(others)
        older = st.sampled_from([*names[:i], "a.missing"])  # mostly older entries; a newer one can lose the head
        skips = draw(st.lists(older if draw(st.integers(0, 9)) else others, max_size=2, unique=True))
        if skips:
            entry["skips"] = skips
        if draw(st.booleans()):
            entry["skipRange"] = draw(st.sampled_from(RANGES))
        entries.append(entry)
    blobs: list[dict[str, Any]] = [
        {"schema": "olm.package", "name": "a", "defaultChannel": "stable"},
        {"schema": "olm.channel", "package": "a", "name": "stable", "entries": entries},
    ]
    for name in names:
        if draw(st.integers(0, 9)) == 0:
            continue  # an entry naming a bundle the package does not have
        version = draw(st.sampled_from(VERSIONS))
        blobs.append(
            {
                "schema": "olm.bundle",
                "package": "a",
                "name": name,
                "image": f"example.invalid/{name}",
                "properties": [{"type": "olm.package", "value": {"packageName": "a", "version": version}}],
            }
        )
    return blobs


def outcome(compute: Any) -> Any:
    try:
        return compute()
    except CatalogError as exc:
        return f"error: {exc}"


def _bundle(name: str, version: str) -> dict[str, Any]:
    properties = [{"type": "olm.package", "value": {"packageName": "a", "version": version}}]
    return {"schema": "olm.bundle", "package": "a", "name": name, "image": "x", "properties": properties}


# e2 is skipped by the head, so e1's only offered upgrade is e0's skipRange, and e0's is e1: a cycle
CYCLE = [
    {"schema": "olm.package", "name": "a", "defaultChannel": "stable"},
    {
        "schema": "olm.channel",
        "package": "a",
        "name": "stable",
        "entries": [
            {"name": "a.e0", "skipRange": "<2.0.0"},
            {"name": "a.e1", "replaces": "a.e0"},
            {"name": "a.e2", "replaces": "a.e1"},
            {"name": "a.e3", "replaces": "a.e2", "skips": ["a.e2"]},
        ],
    },
    *(_bundle(f"a.e{i}", v) for i, v in enumerate(["0.1.0", "1.0.0", "2.0.0", "3.0.0"])),
]


def test_a_cycle_of_upgrades_is_a_dead_end():
    catalog = build_catalog((("c.json", i, b) for i, b in enumerate(CYCLE, 1)), REGISTRY, name="c").catalog

    found = dead_ends(catalog, "a", "stable")

    assert [("a.e1", ["a.e0", "a.e1"])] == [(s.bundle, names) for s, names in found]
    assert "its upgrade 'a.e0' (skipRange) leads back along the path: a cycle" == found[0][0].reason
    assert found == reference_dead_ends(catalog, "a", "stable")


@settings(max_examples=300, deadline=None)
@given(channels())
@example(CYCLE)
def test_dead_ends_and_walks_match_the_definition(blobs):
    catalog = build_catalog((("c.json", i, b) for i, b in enumerate(blobs, 1)), REGISTRY, name="c").catalog

    assert outcome(lambda: reference_dead_ends(catalog, "a", "stable")) == outcome(
        lambda: dead_ends(catalog, "a", "stable")
    )
    table = outcome(lambda: _Upgrades(catalog, "a", "stable").table())
    if not isinstance(table, str):  # a channel with one head: every entry's upgrade, indexed and by definition
        reference = Reference(catalog, "a", "stable")
        assert {e.name: reference.next(e.name) for e in reference.entries} == table
    for entry in catalog.channels["a"]["stable"].entries:
        assert outcome(lambda e=entry: Reference(catalog, "a", "stable").walk(e.name)) == outcome(
            lambda e=entry: upgrade_walk(catalog, "a", "stable", e.name)
        )


def test_a_child_that_writes_the_cache_gets_fewer_packages_to_check(monkeypatch):
    """The child gets fewer bundles: it checks each a little slower, and more so with the cache write to do after."""
    from olmkit.catalog import validate

    blobs: list[dict[str, Any]] = []
    for i in range(100):
        name = f"p{i:03}"
        blobs.append({"schema": "olm.package", "name": name, "defaultChannel": "stable"})
        blobs.append({"schema": "olm.channel", "package": name, "name": "stable", "entries": [{"name": f"{name}.v1"}]})
        blobs.append({"schema": "olm.bundle", "package": name, "name": f"{name}.v1", "image": "x", "properties": []})
    catalog = build_catalog((("c.json", i, b) for i, b in enumerate(blobs, 1)), REGISTRY, name="c").catalog
    names = sorted(catalog.packages)
    monkeypatch.setattr(validate._fork, "can_fork", lambda: True)

    assert 52 == validate._split(catalog, names, 2)  # (1.05 / 2.05 of the bundles to the parent)
    assert 71 == validate._split(catalog, names, 2, extra=0.4)
    assert 90 == validate._split(catalog, names, 2, extra=5.0)  # the child always checks something
    assert validate._split(catalog, names, 1, extra=0.4) is None
    assert validate._split(catalog, names, None) is None  # below PARALLEL_MIN_BUNDLES
    monkeypatch.setattr(validate, "PARALLEL_MIN_BUNDLES", 100)
    monkeypatch.setattr(validate._fork, "spare_cpu", lambda: False)
    assert validate._split(catalog, names, None) is None  # no processor free: checked here
    monkeypatch.setattr(validate._fork, "spare_cpu", lambda: True)
    assert 52 == validate._split(catalog, names, None)


def test_a_processor_is_spare_when_the_load_leaves_one(monkeypatch):
    from olmkit.catalog import _fork

    monkeypatch.setattr(_fork.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(_fork.os, "getloadavg", lambda: (0.6, 0.5, 0.5))
    assert _fork.spare_cpu()
    monkeypatch.setattr(_fork.os, "getloadavg", lambda: (1.3, 0.5, 0.5))
    assert not _fork.spare_cpu()
    monkeypatch.setattr(_fork.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert _fork.spare_cpu()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forking is POSIX-only")
def test_a_child_goes_on_to_its_then_before_the_parent_reads_a_large_value(tmp_path):
    """The value (larger than a pipe holds) waits in a file: the child starts its ``then`` (the cache
    write) while the parent is still busy with its own part, and the parent reads the value whole."""
    from olmkit.catalog import _fork

    marker = tmp_path / "then-ran"
    value = [f"problem {i}" for i in range(100_000)]  # about 1.5 MB marshalled
    child = _fork.start(lambda: value, then=marker.touch)
    assert child is not None
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.01)

    ran = marker.exists()
    assert value == child.result()
    assert ran


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forking is POSIX-only")
def test_a_failing_child_gives_no_value(tmp_path):
    from olmkit.catalog import _fork

    def fail() -> list[int]:
        raise RuntimeError("boom")

    child = _fork.start(fail)
    assert child is not None
    assert child.result() is None
