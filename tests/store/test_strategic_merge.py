"""Strategic merge patch: keyed lists, directives, as kubectl apply sends them for built-in kinds."""

from __future__ import annotations

import pytest

from olmkit.store import Invalid
from olmkit.store.patches import json_patch, strategic_merge_patch

POD = {
    "spec": {
        "containers": [
            {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
            {"name": "b", "image": "b:1"},
        ],
        "tolerations": [{"key": "k1"}],
    },
    "metadata": {"finalizers": ["f1"]},
}


def test_keyed_lists_merge_item_by_item() -> None:
    """containers merge by name, env by name; other fields of the items are kept."""
    patched = strategic_merge_patch(
        POD, {"spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "3"}]}]}}
    )

    assert [{"name": "X", "value": "1"}, {"name": "Y", "value": "3"}] == patched["spec"]["containers"][0]["env"]
    assert "a:1" == patched["spec"]["containers"][0]["image"]
    assert "b" == patched["spec"]["containers"][1]["name"]


def test_lists_without_a_merge_key_are_replaced_and_finalizers_merge_as_a_set() -> None:
    """tolerations have no merge key (replaced); finalizers merge as a set."""
    patched = strategic_merge_patch(
        POD, {"spec": {"tolerations": [{"key": "k2"}]}, "metadata": {"finalizers": ["f2", "f1"]}}
    )

    assert [{"key": "k2"}] == patched["spec"]["tolerations"]
    assert ["f1", "f2"] == patched["metadata"]["finalizers"]


def test_directives() -> None:
    """$patch delete removes a keyed item, $patch replace a whole map, $retainKeys drops others,
    $deleteFromPrimitiveList removes values, $setElementOrder is accepted and not applied."""
    patched = strategic_merge_patch(
        POD,
        {
            "spec": {
                "containers": [{"name": "b", "$patch": "delete"}],
                "$setElementOrder/containers": [{"name": "a"}],
            },
            "metadata": {"$deleteFromPrimitiveList/finalizers": ["f1"]},
        },
    )
    replaced = strategic_merge_patch(POD, {"spec": {"$patch": "replace", "containers": []}})
    retained = strategic_merge_patch({"strategy": {"type": "A", "rollingUpdate": {"x": 1}}},
                                     {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}})  # fmt: skip

    assert ["a"] == [c["name"] for c in patched["spec"]["containers"]]
    assert [] == patched["metadata"]["finalizers"]
    assert {"containers": []} == replaced["spec"]
    assert {"strategy": {"type": "Recreate"}} == retained


def test_unknown_directive_is_invalid_and_inputs_are_not_changed() -> None:
    """An unknown $patch value is refused; the target is never modified in place."""
    with pytest.raises(Invalid):
        strategic_merge_patch(POD, {"spec": {"$patch": "explode"}})
    strategic_merge_patch(POD, {"spec": {"containers": [{"name": "a", "image": "new"}]}})

    assert "a:1" == POD["spec"]["containers"][0]["image"]


def test_json_patch_failures_are_atomic_and_invalid() -> None:
    """A JSON patch (the jsonpatch library) applies all operations or none."""
    doc = {"a": {"b": 1}}
    with pytest.raises(Invalid, match="JSON patch failed"):
        json_patch(doc, [{"op": "replace", "path": "/a/b", "value": 2}, {"op": "test", "path": "/a/b", "value": 5}])
    with pytest.raises(Invalid):
        json_patch(doc, [{"op": "add", "path": 3, "value": 1}])

    assert {"a": {"b": 1}} == doc
    assert {"a": {"b": 2, "c": [1]}} == json_patch(doc, [{"op": "replace", "path": "/a/b", "value": 2},
                                                         {"op": "add", "path": "/a/c", "value": [1]}])  # fmt: skip
