"""The resolve / assert_installed / assert_unsatisfiable helpers of olmkit.testing."""

from __future__ import annotations

from olmkit.testing import assert_installed, assert_unsatisfiable


def blobs():
    pkg = {"schema": "olm.package", "name": "a", "defaultChannel": "stable"}
    ch = {
        "schema": "olm.channel",
        "package": "a",
        "name": "stable",
        "entries": [{"name": "a.v2.0.0", "replaces": "a.v1.0.0"}, {"name": "a.v1.0.0"}],
    }
    bundles = [
        {
            "schema": "olm.bundle",
            "package": "a",
            "name": f"a.v{v}",
            "image": "x",
            "properties": [{"type": "olm.package", "value": {"packageName": "a", "version": v}}],
        }
        for v in ("1.0.0", "2.0.0")
    ]
    return [pkg, ch, *bundles]


def test_resolve_fixture_installs_channel_head(make_catalog, resolve):
    """resolve() with a subscription string installs the default channel's head."""
    catalog = make_catalog(blobs(), name="cat")

    assert_installed(resolve(["a"], [catalog]), "a.v2.0.0")


def test_resolve_fixture_reports_unknown_channel(make_catalog, resolve):
    """assert_unsatisfiable() matches upstream's "no operators found" text."""
    catalog = make_catalog(blobs(), name="cat")

    assert_unsatisfiable(resolve(["a/fast"], [catalog]), "no operators found in channel fast of package a")
