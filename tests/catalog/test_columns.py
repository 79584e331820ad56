"""A catalog's bundles as columns (``Catalog.columns()``), the graph compiler's input."""

from __future__ import annotations

import contextlib
import datetime
import json
import math
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from resolver.test_graph import cases

from olmkit.catalog import BundleColumns, Catalog, build_columns, load_catalog
from olmkit.model import Bundle, Property
from olmkit.serde import dump_json_stream
from tests.shared import COMMUNITY, SHARED

from .test_catalog import EXAMPLES, bundle, chan, pkg

GVK = {"type": "olm.gvk", "value": {"group": "g.io", "version": "v1", "kind": "K"}}
NEEDS = {"type": "olm.gvk.required", "value": {"kind": "K", "group": "g.io", "version": "v1"}}


def rows(columns: BundleColumns) -> list[tuple[object, ...]]:
    """Each bundle as (package, name, version, image, [(type, value), ...]) read back from the columns."""
    out = []
    for i in range(len(columns)):
        refs = columns.prop_ref[columns.prop_start[i] : columns.prop_start[i + 1]]
        out.append(
            (
                columns.packages[columns.bundle_package[i]],
                columns.bundle_name[i],
                columns.bundle_version[i],
                columns.bundle_image[i],
                [(columns.dist_type[d], columns.value(d)) for d in refs],
            )
        )
    return out


def test_columns_list_every_bundle_in_catalog_order_with_shared_properties(make_catalog):
    """Bundles package by package in catalog order; equal properties are one distinct property."""
    cat = make_catalog(
        [
            pkg("b"),
            chan("b", [{"name": "b.v1.0.0"}, {"name": "b.v2.0.0", "replaces": "b.v1.0.0"}]),
            bundle("b", "1.0.0", [GVK, NEEDS]),
            bundle("b", "2.0.0", [GVK, NEEDS, GVK]),
            pkg("a"),
            chan("a", [{"name": "a.v1.0.0"}]),
            bundle("a", "1.0.0", [NEEDS]),
        ]
    )

    columns = cat.columns()

    assert columns is not None
    expected = [
        (b.package, b.name, b.version, b.image, [(p.type, p.value) for p in b.properties]) for b in cat.iter_bundles()
    ]
    assert expected == rows(columns)
    assert ["b", "a"] == columns.packages
    # three identities, one gvk, one requirement
    assert 5 == len(columns.dist_type)
    assert [0, 1, 2, 3, 1, 2, 1, 4, 2] == list(columns.prop_ref)
    assert [0, 3, 7, 9] == list(columns.prop_start)
    assert columns is cat.columns()  # built once


def test_distinct_properties_keep_the_key_order_as_read(make_catalog):
    """Two values equal but for key order are two distinct properties, each with its own text."""
    swapped = {"type": "olm.gvk", "value": {"kind": "K", "group": "g.io", "version": "v1"}}
    cat = make_catalog(
        [pkg("a"), chan("a", [{"name": "a.v1.0.0"}]), bundle("a", "1.0.0", [GVK, swapped])],
    )

    columns = cat.columns()

    assert columns is not None
    assert [
        orjson.dumps({"packageName": "a", "version": "1.0.0"}),
        b'{"group":"g.io","version":"v1","kind":"K"}',
        b'{"kind":"K","group":"g.io","version":"v1"}',
    ] == columns.dist_json
    assert ["olm.package", "olm.gvk", "olm.gvk"] == columns.dist_type


def test_a_catalog_from_the_cache_gives_the_columns_of_the_fresh_one(olmkit_pm, tmp_path):
    """Read back from the on-disk cache (bundles built per package on demand): equal columns."""
    blobs = [pkg("a"), chan("a", [{"name": "a.v1.0.0"}]), bundle("a", "1.0.0", [GVK, NEEDS])]
    blobs += [pkg("b"), chan("b", [{"name": "b.v1.0.0"}]), bundle("b", "1.0.0", [NEEDS, GVK])]
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "catalog.json").write_bytes(dump_json_stream(blobs))

    fresh = load_catalog(tmp_path / "c", olmkit_pm.registry).columns()
    from olmkit.catalog import finish_writes

    finish_writes()
    cached = load_catalog(tmp_path / "c", olmkit_pm.registry)

    assert fresh is not None
    assert fresh == cached.columns()


def test_values_that_are_not_plain_json_give_no_columns():
    """A YAML date, a NaN or a tuple does not read back from JSON as itself: no columns."""
    for value in ({"at": datetime.date(2024, 1, 2)}, {"x": math.nan}, [1, (2, 3)], 1 << 70, {1: "a"}):
        b = Bundle("a.v1", "a", "1", None, (Property("x.io/v", {"ok": 1}), Property("x.io/v", value)))
        cat = Catalog("c", {}, {}, {"a": {"a.v1": b}})

        assert None is cat.columns(), value


def test_build_columns_of_no_bundles_is_empty():
    """An empty catalog: no bundles, one start offset."""
    columns = build_columns({})

    assert columns is not None
    assert 0 == len(columns)
    assert [0] == list(columns.prop_start)


# --------------------------------------------------------------------------- the fast loader


def snapshot(cat: Catalog, problems: tuple[object, ...]) -> dict[str, object]:
    """Everything a catalog shows its readers, origins and parsed values included."""

    def where(obj: object) -> str:
        return str(getattr(obj, "origin", None))

    bundles = {
        p: [
            (b, where(b), b.extra, [_parsed(cat, prop) for prop in b.properties], _values(cat, b)) for b in per.values()
        ]
        for p, per in cat.bundles.items()
    }
    index = {}
    for type_name in sorted(cat._refs or cat._index):
        keys = cat.index_keys(type_name)
        index[type_name] = [
            (k, [(b.package, b.name) for b in v], list(cat.lookup_names(type_name, k))) for k, v in keys.items()
        ]
    return {
        "packages": [(p, where(p), p.extra) for p in cat.packages.values()],
        "channels": {p: [(c, where(c), c.extra) for c in per.values()] for p, per in cat.channels.items()},
        "bundles": bundles,
        "others": [(o, where(o)) for o in cat.others],
        "deprecations": [(d, where(d)) for d in cat.deprecations.values()],
        "problems": list(problems),
        "index": index,
        "columns": build_columns(cat.bundles),
    }


def _values(cat: Catalog, bundle: Bundle) -> list[object]:
    """``Catalog.values`` of the bundle for each type it carries."""
    out: list[object] = []
    for type_name in dict.fromkeys(p.type for p in bundle.properties):
        try:
            out.append(cat.values(bundle, type_name))
        except Exception as exc:  # a parser's other errors propagate: compare them too
            out.append(repr(exc))
    return out


def _parsed(cat: Catalog, prop: Property) -> object:
    try:
        return cat.parsed(prop)
    except ValueError as exc:
        return f"error: {exc}"


def assert_fast_load_is_the_object_load(path, registry, monkeypatch) -> Catalog:
    """The fast loader's catalog shows what the object loader's shows; its columns are the general builder's."""
    from olmkit.catalog import _load, load_catalog_result

    monkeypatch.setattr(_load, "FAST", False)
    slow = load_catalog_result(path, registry, cache=False)
    monkeypatch.setattr(_load, "FAST", True)
    fast = load_catalog_result(path, registry, cache=False)
    fresh_columns = fast.catalog.columns()

    assert snapshot(slow.catalog, slow.problems) == snapshot(fast.catalog, fast.problems)
    assert build_columns(slow.catalog.bundles) == fresh_columns
    return fast.catalog


def fast_taken(cat: Catalog) -> bool:
    """Whether the catalog was read by the fast path (bundles built on demand)."""
    from olmkit.catalog._fast import LazyBundles

    return isinstance(cat.bundles, LazyBundles)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """gen_catalog.py's catalog at 100 packages (about 2,000 bundles)."""
    out = tmp_path_factory.mktemp("gen")
    args = ["--packages", "100", "--bundles", "20", "--subscriptions", "5", "--seed", "1", str(out)]
    subprocess.run([sys.executable, str(SHARED / "bench" / "gen_catalog.py"), *args], check=True, capture_output=True)
    return out / "catalog"


def test_fast_load_of_the_generated_catalog(generated, olmkit_pm, monkeypatch):
    """The benchmark's catalog takes the fast path and shows what the object loader's shows."""
    cat = assert_fast_load_is_the_object_load(generated, olmkit_pm.registry, monkeypatch)

    assert fast_taken(cat)
    assert 1900 < len(cat.columns() or ())


@pytest.mark.skipif(not COMMUNITY.is_dir(), reason="the community catalog is not beside the repository")
def test_fast_load_of_the_community_catalog(olmkit_pm, monkeypatch):
    """The real community catalog (6,467 bundles) takes the fast path, with the object loader's result."""
    cat = assert_fast_load_is_the_object_load(COMMUNITY, olmkit_pm.registry, monkeypatch)

    assert fast_taken(cat)


def test_fast_load_of_a_yaml_catalog_is_the_object_load(olmkit_pm, monkeypatch):
    """A catalog with a YAML file is read by the object loader (its columns built from its bundles)."""
    cat = assert_fast_load_is_the_object_load(EXAMPLES, olmkit_pm.registry, monkeypatch)

    assert not fast_taken(cat)


ODD = {"type": "x.io/odd", "value": [1, 2.5, None, True, "é"]}
BLOBS: dict[str, tuple[bool, dict[str, list[Any]]]] = {
    "interleaved packages and extra fields": (
        True,
        {
            "a.json": [pkg("a"), chan("a", [{"name": "a.v1.0.0"}]), bundle("a", "1.0.0", [GVK]), pkg("b")],
            "b.json": [
                chan("b", [{"name": "b.v1.0.0"}]),
                {**bundle("b", "1.0.0", [NEEDS, ODD]), "relatedImages": [{"image": "x"}]},
                bundle("a", "2.0.0", [GVK, {"value": {"packageName": "a", "version": "2.0.0"}, "type": "olm.package"}]),
                {**bundle("b", "2.0.0", [NEEDS]), "image": ""},
                {**bundle("b", "3.0.0"), "properties": None},
            ],
        },
    ),
    "identities that do not parse, two identities, none": (
        True,
        {
            "c.json": [
                pkg("a"),
                chan("a", [{"name": "a.v1.0.0"}, {"name": "a.v2.0.0"}]),
                bundle("a", "1.0.0", [{"type": "olm.package", "value": "x"}]),
                {**bundle("a", "2.0.0"), "properties": [{"type": "olm.package", "value": {"packageName": "a"}}]},
                {**bundle("a", "3.0.0"), "properties": [GVK]},
                bundle("a", "4.0.0", [{"type": "olm.package", "value": {"packageName": "b", "version": "9.0.0"}}]),
                bundle("a", "5.0.0", [{"type": "olm.gvk", "value": {"group": 1}}]),
            ]
        },
    ),
    "a property written two ways": (
        False,
        {
            "d.json": [
                pkg("a"),
                chan("a", [{"name": "a.v1.0.0"}, {"name": "a.v2.0.0"}]),
                bundle("a", "1.0.0", [GVK]),
                bundle("a", "2.0.0", [{"value": GVK["value"], "type": "olm.gvk", "note": 1}]),
            ]
        },
    ),
    "a duplicate bundle": (
        False,
        {"d.json": [pkg("a"), chan("a", [{"name": "a.v1.0.0"}]), bundle("a", "1.0.0"), bundle("a", "1.0.0", [GVK])]},
    ),
    "a property without a value": (
        False,
        {"e.json": [pkg("a"), bundle("a", "1.0.0", [{"type": "olm.gvk"}])]},
    ),
    "properties not a list": (False, {"f.json": [pkg("a"), {**bundle("a", "1.0.0"), "properties": {"a": 1}}]}),
    "a bundle without a name": (False, {"g.json": [pkg("a"), {**bundle("a", "1.0.0"), "name": ""}]}),
    "bad blobs of other schemas": (
        True,
        {
            "h.json": [
                pkg("a"),
                pkg("a"),
                chan("a", [{"name": 3}]),
                {"schema": "olm.nope"},
                {"name": "x"},
                {"schema": "x.io/mine", "v": 1},
                bundle("a", "1.0.0"),
            ]
        },
    ),
}


@pytest.mark.parametrize("name", list(BLOBS))
def test_fast_load_finds_what_the_object_load_finds(name, olmkit_pm, tmp_path, monkeypatch):
    """Odd but valid bundles stay on the fast path; anything it does not take is read the usual way,
    with the same problems, files and lines."""
    fast, files = BLOBS[name]
    for rel, blobs in files.items():
        (tmp_path / rel).write_bytes(dump_json_stream(blobs))

    cat = assert_fast_load_is_the_object_load(tmp_path, olmkit_pm.registry, monkeypatch)

    assert fast == fast_taken(cat)


def test_a_value_spanning_lines_takes_the_object_load(olmkit_pm, tmp_path, monkeypatch):
    """A pretty-printed file is not one blob per line: the object loader reads it (lines as before)."""
    blobs = [pkg("a"), chan("a", [{"name": "a.v1.0.0"}]), bundle("a", "1.0.0", [GVK])]
    (tmp_path / "a.json").write_text("\n".join(json.dumps(b, indent=1) for b in blobs))

    cat = assert_fast_load_is_the_object_load(tmp_path, olmkit_pm.registry, monkeypatch)

    assert not fast_taken(cat)
    assert "a.json:" in str(cat.bundles["a"]["a.v1.0.0"].origin)


def test_the_cache_of_a_fast_load_reads_back_as_the_catalog(generated, olmkit_pm, monkeypatch):
    """The cache written from a fast load (bundles materialised by the writer) gives the same catalog."""
    from olmkit.catalog import finish_writes, load_catalog_result

    fresh = load_catalog_result(generated, olmkit_pm.registry)
    assert fast_taken(fresh.catalog)
    expected = snapshot(fresh.catalog, fresh.problems)
    finish_writes()

    cached = load_catalog_result(generated, olmkit_pm.registry)

    assert cached.cached
    assert expected == snapshot(cached.catalog, cached.problems)


@contextlib.contextmanager
def case_catalogs(case: Any) -> Iterator[tuple[list[Path], pytest.MonkeyPatch]]:
    """A random resolver case written out: its catalog directories, and a monkeypatch for one example."""
    from resolver.casefile import case_manifests

    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        case_manifests(case, Path(tmp))
        yield sorted(p for p in Path(tmp).iterdir() if p.is_dir()), mp


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_fast_load_of_random_catalogs(olmkit_pm, case):
    """The resolver tests' random catalogs: the fast loader's catalogs are the object loader's."""
    with case_catalogs(case) as (directories, mp):
        for directory in directories:
            cat = assert_fast_load_is_the_object_load(directory, olmkit_pm.registry, mp)

            assert fast_taken(cat)


def test_a_large_fast_load_leaves_its_cache_to_a_child(generated, olmkit_pm, monkeypatch):
    """Counted from the columns: a catalog of BACKGROUND_MIN_BUNDLES bundles or more is large."""
    from olmkit.catalog import _load

    monkeypatch.setattr(_load, "BACKGROUND_MIN_BUNDLES", 1900)
    result, pending = _load._load(generated, olmkit_pm.registry, name=None, cache=True)

    assert fast_taken(result.catalog)
    assert pending is not None
    assert pending.big
    monkeypatch.setattr(_load, "BACKGROUND_MIN_BUNDLES", 2100)
    assert not _load._load(generated, olmkit_pm.registry, name=None, cache=True)[1].big


def test_held_columns_and_rows_of_the_index(generated, olmkit_pm, monkeypatch):
    """columns(build=False) gives what the loader filled, or None; lookup_rows names lookup's bundles by row."""
    from olmkit.catalog import _load, load_catalog

    fast = load_catalog(generated, olmkit_pm.registry, cache=False)
    monkeypatch.setattr(_load, "FAST", False)
    slow = load_catalog(generated, olmkit_pm.registry, cache=False)
    columns = fast.columns(build=False)

    assert columns is not None
    assert None is slow.columns(build=False)
    assert None is slow.lookup_rows("olm.package", "pkg-00001")
    checked = 0
    for type_name in ("olm.package", "olm.gvk"):
        for key in slow.index_keys(type_name):
            rows = fast.lookup_rows(type_name, key)
            assert rows is not None
            named = [(columns.packages[columns.bundle_package[r]], columns.bundle_name[r]) for r in rows]
            assert [(b.package, b.name) for b in slow.lookup(type_name, key)] == named
            checked += 1
    assert checked > 100
    assert () == fast.lookup_rows("olm.gvk", ("no", "such", "api"))
    assert slow.columns() is slow.columns(build=False)  # built once, then held


# --------------------------------------------------------------------------- validate on the columns


def break_catalog(src: Path, dst: Path) -> int:
    """Copy a generated catalog with a few bundles, properties, ranges and channels made bad.

    Every 7th bundle gets one fault in turn (bad version, bad range, malformed gvk, unknown
    type, no image, a second or foreign identity, a requirement nothing provides, a bad CEL
    rule); every 11th package's first channel a bad skipRange. Returns the faults made.
    """
    faults = [
        lambda b: b["properties"][0]["value"].update(version="not-a-version"),
        lambda b: b["properties"].append(
            {"type": "olm.package.required", "value": {"packageName": "pkg-00001", "versionRange": ">>1"}}
        ),
        lambda b: b["properties"].append({"type": "olm.gvk", "value": {"group": "g"}}),
        lambda b: b["properties"].append({"type": "example.io/mistyped", "value": 1}),
        lambda b: b.pop("image"),
        lambda b: b["properties"].append(
            {"type": "olm.package", "value": {"packageName": "other", "version": "1.0.0"}}
        ),
        lambda b: b["properties"].append(
            {"type": "olm.gvk.required", "value": {"group": "nowhere.io", "kind": "Nothing", "version": "v1"}}
        ),
        lambda b: b["properties"].append(
            {"type": "olm.constraint", "value": {"failureMessage": "x", "cel": {"rule": "properties.exists("}}}
        ),
        lambda b: b["properties"].__setitem__(0, {"type": "olm.package", "value": "x"}),
    ]
    made = 0
    count = 0
    for n, path in enumerate(sorted(src.rglob("*.json"))):
        out = []
        channel_done = False
        for line in path.read_bytes().splitlines():
            blob = orjson.loads(line)
            if blob.get("schema") == "olm.bundle":
                count += 1
                if count % 7 == 0:
                    faults[made % len(faults)](blob)
                    made += 1
            elif blob.get("schema") == "olm.channel" and n % 11 == 0 and not channel_done:
                blob["entries"][-1]["skipRange"] = "<v1.13.0"
                channel_done = True
            out.append(blob)
        target = dst / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(dump_json_stream(out))
    return made


def assert_validate_is_the_object_validate(path, registry, monkeypatch, *, jobs: int = 1) -> list[Any]:
    """validate on the columns reports what validate on the objects reports, in the same order."""
    from olmkit.catalog import _load, load_catalog_result
    from olmkit.catalog.validate import validate_catalog

    monkeypatch.setattr(_load, "FAST", False)
    slow = load_catalog_result(path, registry, cache=False)
    expected = validate_catalog(slow.catalog, registry, slow.problems, jobs=jobs)
    monkeypatch.setattr(_load, "FAST", True)
    fast = load_catalog_result(path, registry, cache=False)
    assert fast_taken(fast.catalog)
    found = validate_catalog(fast.catalog, registry, fast.problems, jobs=jobs)

    assert [p.to_dict() for p in expected] == [p.to_dict() for p in found]
    assert not isinstance(fast.catalog.bundles, dict)
    return found


def test_validate_on_columns_of_the_generated_catalog(generated, olmkit_pm, monkeypatch):
    """The generated catalog: the same warnings (requirements nothing satisfies, dead ends) from the columns."""
    found = assert_validate_is_the_object_validate(generated, olmkit_pm.registry, monkeypatch)

    assert found


def test_validate_on_columns_of_a_broken_catalog(generated, olmkit_pm, tmp_path, monkeypatch):
    """Bad versions, ranges, values, identities, images, CEL rules and skipRanges: the same problems,
    files and lines; no bundle is built where nothing names it."""
    assert break_catalog(generated, tmp_path) > 200

    found = assert_validate_is_the_object_validate(tmp_path, olmkit_pm.registry, monkeypatch)

    assert len({p.message.split(":")[0] for p in found if p.severity == "error"}) > 6


def test_validate_on_columns_reports_what_the_quiet_bundles_skip(olmkit_pm, tmp_path, monkeypatch):
    """The bundles whose properties report nothing are passed over quickly; what is left is still
    reported once and in place: an unknown type (two values) once per package, a requirement
    nothing satisfies at each package carrying it, a second identity, a duplicate version."""
    mistyped = [{"type": "example.io/mistyped", "value": v} for v in (1, 2)]
    missing = {"type": "olm.package.required", "value": {"packageName": "nowhere", "versionRange": ">=1.0.0"}}
    present = {"type": "olm.package.required", "value": {"packageName": "a", "versionRange": ">=1.0.0"}}
    blobs = [
        pkg("a"),
        chan("a", [{"name": "a.v1.0.0"}, {"name": "a.v1.1.0", "replaces": "a.v1.0.0"}]),
        bundle("a", "1.0.0", [GVK, mistyped[0]]),
        bundle("a", "1.1.0", [GVK, mistyped[1], mistyped[0], present]),
        pkg("b"),
        chan("b", [{"name": f"b.v1.0.{i}"} for i in range(3)]),
        bundle("b", "1.0.0", [mistyped[1], NEEDS, missing]),
        bundle("b", "1.0.1", [NEEDS, missing, {"type": "olm.package", "value": {"packageName": "a", "version": "9"}}]),
        bundle("b", "1.0.2", [present, missing], name="b.v1.0.2"),
        bundle("b", "1.0.2", [mistyped[0]], name="b.v1.0.3"),
    ]
    (tmp_path / "catalog.json").write_bytes(dump_json_stream(blobs))

    found = assert_validate_is_the_object_validate(tmp_path, olmkit_pm.registry, monkeypatch)

    unknown = [(p.package, p.blob, p.field) for p in found if "unknown property type" in p.message]
    assert [("a", "olm.bundle a.v1.0.0", "properties[2].type"), ("b", "olm.bundle b.v1.0.0", "properties[1].type")] == (
        unknown
    )
    unsatisfied = [p for p in found if p.message.startswith("nothing in this catalog satisfies")]
    assert ["b"] == [p.package for p in unsatisfied]
    assert "required by 3 bundles of b" in unsatisfied[0].message
    assert any("names package 'a', but the bundle belongs to 'b'" in p.message for p in found)
    assert any("exactly one olm.package property, found 2" in p.message for p in found)
    assert any("version 1.0.2 is used by both 'b.v1.0.2' and 'b.v1.0.3'" in p.message for p in found)
    assert any("'b.v1.0.3' is not in any channel" in p.message for p in found)


def test_validate_on_columns_runs_the_predicates_programs(olmkit_pm, tmp_path, monkeypatch):
    """Constraints whose predicates have programs (lookups, identities, has-type rules, all/any/not)
    are answered from the columns, as their ``matches`` answers on the bundles: an older bundle
    satisfies what the newest does not."""
    certified = {"type": "certified", "value": True}
    old_api = {"type": "olm.gvk", "value": {"group": "g.io", "version": "v1", "kind": "Old"}}
    new_api = {"type": "olm.gvk", "value": {"group": "g.io", "version": "v1", "kind": "New"}}

    def constraint(tag: str, *children: Any) -> dict[str, Any]:
        return {"type": "olm.constraint", "value": {"failureMessage": tag, tag: {"constraints": list(children)}}}

    def has(type_name: str) -> dict[str, Any]:
        return {"cel": {"rule": f'properties.exists(p, p.type == "{type_name}")'}}

    def package(text: str) -> dict[str, Any]:
        return {"package": {"packageName": "a", "versionRange": text}}

    def api(kind: str) -> dict[str, Any]:
        return {"gvk": {"group": "g.io", "version": "v1", "kind": kind}}

    needs = [
        constraint("all", package(">=1.0.0"), has("certified")),  # a.v1.0.0, not the newest
        constraint("all", package(">=2.0.0"), has("certified")),  # nothing
        constraint("all", api("Old"), has("certified")),  # a.v1.0.0
        constraint("all", api("New"), has("certified")),  # nothing
        constraint("all", api("New"), {"not": {"constraints": [has("certified")]}}),  # a.v2.0.0
        constraint("all", package(">=1.0.0"), {"any": {"constraints": [api("Gone"), has("olm.gvk")]}}),
        constraint("all", package(">=1.0.0"), {"cel": {"rule": "properties.size() > 9"}}),  # no program
    ]
    blobs = [
        pkg("a"),
        chan("a", [{"name": "a.v1.0.0"}, {"name": "a.v2.0.0", "replaces": "a.v1.0.0"}]),
        bundle("a", "1.0.0", [old_api, certified]),
        bundle("a", "2.0.0", [new_api]),
        pkg("b"),
        chan("b", [{"name": "b.v1.0.0"}]),
        bundle("b", "1.0.0", needs),
    ]
    (tmp_path / "catalog.json").write_bytes(dump_json_stream(blobs))

    found = assert_validate_is_the_object_validate(tmp_path, olmkit_pm.registry, monkeypatch)

    unsatisfied = [p.field for p in found if p.message.startswith("nothing in this catalog satisfies")]
    assert ["properties[2]", "properties[4]", "properties[7]"] == unsatisfied


@pytest.mark.parametrize("validated_by", [None, ("ver",), ("name", "ver")])
def test_validate_on_columns_validates_identities_once_per_declared_fields(
    validated_by, olmkit_pm, olmkit_register, tmp_path, monkeypatch
):
    """An identity type whose ValueFields name what decides its ``validate`` (here the version) is
    validated once per version; the report is the objects' (validated per bundle), bad versions
    reported at each bundle carrying them. Undeclared, or naming the package too: once per identity."""
    from olmkit import hookimpl
    from olmkit.types import PackageIdentity, PropertyType, ValueFields

    seen: list[PackageIdentity] = []

    def validate(value: PackageIdentity) -> Any:
        seen.append(value)
        if not value.version or not value.version[0].isdigit():
            yield f"bad version {value.version!r}"

    class Plugin:
        @hookimpl
        def olmkit_property_types(self) -> Any:
            yield PropertyType(
                name="example.io/identity",
                parse=lambda v: PackageIdentity(v["name"], v.get("ver")),
                identity=True,
                index_keys=lambda v: (v.package,),
                validate=validate,
                fields=ValueFields(("name", "ver"), may_be_empty=("ver",), validated_by=validated_by),
            )

    olmkit_register(Plugin())

    def ours(package: str, version: str, **extra: Any) -> dict[str, Any]:
        b = bundle(package, version)
        b["properties"] = [{"type": "example.io/identity", "value": {"name": package, "ver": version, **extra}}]
        return b

    blobs = []
    for p in ("a", "b", "c"):
        versions = ["1.0.0", "2.0.0", "x3", ""]
        blobs += [pkg(p), chan(p, [{"name": f"{p}.v{v}"} for v in versions])]
        blobs += [ours(p, v) for v in versions[:-1]] + [ours(p, "", extra="not plain")]
    (tmp_path / "catalog.json").write_bytes(dump_json_stream(blobs))
    from olmkit.catalog import load_catalog_result
    from olmkit.catalog.validate import validate_catalog

    found = assert_validate_is_the_object_validate(tmp_path, olmkit_pm.registry, monkeypatch)
    seen.clear()
    fast = load_catalog_result(tmp_path, olmkit_pm.registry, cache=False)
    assert fast_taken(fast.catalog)
    assert found == validate_catalog(fast.catalog, olmkit_pm.registry, fast.problems, jobs=1)

    assert [p.blob for p in found if p.message.startswith("invalid example.io/identity value: bad version")] == [
        f"olm.bundle {p}.v{v}" for p in "abc" for v in ("x3", "")
    ]
    assert len(seen) == (4 if validated_by == ("ver",) else 12)


def test_validate_on_columns_in_two_processes(generated, olmkit_pm, tmp_path, monkeypatch):
    """Split between this process and a forked child: the same problems in the same order."""
    break_catalog(generated, tmp_path)

    assert_validate_is_the_object_validate(tmp_path, olmkit_pm.registry, monkeypatch, jobs=2)


@pytest.mark.skipif(not COMMUNITY.is_dir(), reason="the community catalog is not beside the repository")
def test_validate_on_columns_of_the_community_catalog(olmkit_pm, monkeypatch):
    """The real community catalog: the same report from the columns."""
    assert_validate_is_the_object_validate(COMMUNITY, olmkit_pm.registry, monkeypatch)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_validate_on_columns_of_random_catalogs(olmkit_pm, case):
    """The resolver tests' random catalogs (broken and deprecated bundles, bad ranges): the same report."""
    with case_catalogs(case) as (directories, mp):
        for directory in directories:
            assert_validate_is_the_object_validate(directory, olmkit_pm.registry, mp)


def test_parsed_distinct_gives_what_the_loader_parsed(generated, olmkit_pm, monkeypatch):
    """The identity and indexed values the loader parsed, by distinct property, under the same parsers only."""
    from olmkit.catalog import _load, load_catalog

    registry = olmkit_pm.registry
    parse = {n: pt.parse for n, pt in registry.property_types.items()}
    fast = load_catalog(generated, registry, cache=False)
    columns = fast.columns(build=False)
    assert columns is not None

    parsed = fast.parsed_distinct(parse)

    identities = [d for d, t in enumerate(columns.dist_type) if t == "olm.package"]
    assert identities
    assert set(identities) <= set(parsed)
    for d in list(parsed)[:500]:
        assert parse[columns.dist_type[d]](columns.value(d)) == parsed[d]
    assert {} == dict(fast.parsed_distinct({**parse, "olm.package": lambda v: v}))
    monkeypatch.setattr(_load, "FAST", False)
    assert {} == dict(load_catalog(generated, registry, cache=False).parsed_distinct(parse))
