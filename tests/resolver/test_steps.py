"""Steps read their bundle from the catalog only when asked, and once."""

from __future__ import annotations

import attrs

from olmkit.model import Property
from olmkit.resolver.request import Deferred, Step


def test_deferred_properties_and_content_are_read_once_on_first_use():
    """A Deferred value is computed on first access, kept, and plays no part in equality."""
    calls = []

    def content():
        calls.append("content")
        return "the bundle"

    step = Step(
        bundle="a.v1",
        package="a",
        version="1.0.0",
        channel="stable",
        catalog="cat",
        catalog_namespace="ns",
        properties=Deferred(lambda: [Property("olm.label", {"label": "x"})]),
        content=Deferred(content),
    )
    plain = attrs.evolve(step, properties=(), content=None)

    assert [] == calls
    assert step == plain
    assert ("the bundle", "the bundle") == (step.content, step.content)
    assert ["content"] == calls
    assert (Property("olm.label", {"label": "x"}),) == step.properties
    assert "b" == attrs.evolve(step, content="b").content


def test_steps_of_a_resolution_carry_the_catalog_bundle(make_catalog, resolve):
    """A resolution's step gives the catalog's bundle and its properties (content left out)."""
    blobs = [
        {"schema": "olm.package", "name": "a", "defaultChannel": "stable"},
        {"schema": "olm.channel", "package": "a", "name": "stable", "entries": [{"name": "a.v1.0.0"}]},
        {
            "schema": "olm.bundle",
            "package": "a",
            "name": "a.v1.0.0",
            "image": "example.invalid/a:1",
            "properties": [
                {"type": "olm.package", "value": {"packageName": "a", "version": "1.0.0"}},
                {"type": "olm.bundle.object", "value": {"data": "e30="}},
                {"type": "olm.label", "value": {"label": "x"}},
            ],
        },
    ]
    catalog = make_catalog(blobs, name="cat")
    resolution = resolve(["a"], [catalog])

    [step] = resolution.steps

    bundle = catalog.bundle("a", "a.v1.0.0")
    assert bundle == step.content
    assert (bundle.properties[0], bundle.properties[2]) == step.properties
    assert "example.invalid/a:1" == step.image
