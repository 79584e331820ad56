"""A catalog's bundles as columns (``Catalog.columns()``), the graph compiler's input."""

from __future__ import annotations

import datetime
import math

import orjson

from olmkit.catalog import BundleColumns, Catalog, build_columns, load_catalog
from olmkit.model import Bundle, Property
from olmkit.serde import dump_json_stream

from .test_catalog import bundle, chan, pkg

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
