"""The example catalog and its bundle directories say the same thing about every bundle."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from olmkit.catalog import load_catalog
from olmkit.catalog.bundles import read_bundle
from olmkit.plugins.bundle_content import bundle_dir_of
from tests.lifecycle.harness import EXAMPLES

INLINE = {"olm.bundle.object", "olm.csv.metadata"}


def _props(items: Any) -> set[bytes]:
    return {
        orjson.dumps([p["type"], p["value"]], option=orjson.OPT_SORT_KEYS) for p in items if p["type"] not in INLINE
    }


@pytest.mark.parametrize("root", ["catalog", "catalog-v1"])
def test_every_example_bundle_directory_matches_its_catalog_entry(olmkit_pm: Any, root: str) -> None:
    """Each bundle's image names a bundle directory whose CSV and derived properties match the catalog."""
    catalog = load_catalog(EXAMPLES / root, olmkit_pm.registry, cache=False)
    bundles = catalog.iter_bundles()
    assert bundles

    for bundle in bundles:
        path = bundle_dir_of(bundle)
        assert path is not None
        assert path.is_dir(), bundle.name
        contents = read_bundle(path, olmkit_pm.registry)
        csv = next(m for m in contents.manifests if m["kind"] == "ClusterServiceVersion")

        assert bundle.name == csv["metadata"]["name"]
        assert bundle.version == csv["spec"]["version"]
        expected = _props([{"type": p.type, "value": p.value} for p in bundle.properties])
        assert expected == _props(contents.blob["properties"]), bundle.name
