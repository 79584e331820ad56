"""The store's object semantics (create, get, list, update, status, patch), on both backends."""

from __future__ import annotations

import pytest
from conftest import cm, rv

from olmkit.store import AlreadyExists, Conflict, Invalid, NotFound, StoreError


def test_create_maintains_system_metadata(store):
    """create assigns uid, resourceVersion, generation 1 and creationTimestamp, and drops status."""
    obj = cm("a", data={"k": "v"})
    obj["status"] = {"phase": "Fake"}
    obj["metadata"].update(uid="mine", generation=7, deletionTimestamp="2020-01-01T00:00:00Z")

    created = store.create(obj)

    meta = created["metadata"]
    assert "mine" != meta["uid"]
    assert 36 == len(meta["uid"])
    assert rv(store, 1) == meta["resourceVersion"]
    assert 1 == meta["generation"]
    assert "2024-01-01T00:00:00Z" == meta["creationTimestamp"]
    assert "deletionTimestamp" not in meta
    assert "status" not in created
    assert created == store.get("v1", "ConfigMap", "a", "default")


def test_resource_version_is_one_counter_across_kinds(store):
    """resourceVersion grows by one per write, whatever the kind or namespace."""
    a = store.create(cm("a"))
    b = store.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "b", "namespace": "other"}})
    c = store.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "c"}})

    assert [rv(store, 1), rv(store, 2), rv(store, 3)] == [o["metadata"]["resourceVersion"] for o in (a, b, c)]


def test_create_twice_is_already_exists(store):
    """Creating an existing object fails with AlreadyExists naming it."""
    store.create(cm("a"))

    with pytest.raises(AlreadyExists) as info:
        store.create(cm("a"))

    assert ("ConfigMap", "default", "a") == (info.value.kind, info.value.namespace, info.value.name)
    assert "ConfigMap default/a already exists" == str(info.value)
    assert 409 == info.value.code


def test_generate_name_makes_unique_names(store):
    """metadata.generateName gets a random five-character suffix, different every time."""
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "install-", "namespace": "n"}}

    names = {store.create(obj)["metadata"]["name"] for _ in range(5)}

    assert 5 == len(names)
    assert all(n.startswith("install-") and len(n) == len("install-") + 5 for n in names)


def test_get_missing_is_not_found(store):
    """get of a missing object raises NotFound carrying kind, namespace and name."""
    with pytest.raises(NotFound) as info:
        store.get("v1", "ConfigMap", "nope", "ns")

    assert ("ConfigMap", "ns", "nope") == (info.value.kind, info.value.namespace, info.value.name)
    assert "ConfigMap ns/nope not found" == str(info.value)
    assert isinstance(info.value, StoreError)


def test_namespaced_kind_needs_a_namespace(store):
    """A namespaced object without a namespace is Invalid."""
    with pytest.raises(Invalid) as info:
        store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})

    assert "metadata.namespace" == info.value.field


def test_cluster_scoped_kinds_have_no_namespace(store):
    """A cluster-scoped object loses a namespace it was given, and get ignores one."""
    created = store.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "r", "namespace": "x"},
        }
    )

    assert "namespace" not in created["metadata"]
    assert created == store.get("rbac.authorization.k8s.io/v1", "ClusterRole", "r", "anything")
    assert [created] == store.list("rbac.authorization.k8s.io/v1", "ClusterRole", "anything").items


def test_registered_kind_scope(local_store):
    """register_kind makes a kind cluster-scoped; unknown kinds are namespaced."""
    store = local_store
    assert store.is_namespaced("example.io/v1", "Widget")

    store.register_kind("example.io/v1", "Widget", namespaced=False)

    assert not store.is_namespaced("example.io/v2", "Widget")
    created = store.create({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w"}})
    assert "namespace" not in created["metadata"]


def test_stored_crd_declares_its_kind_scope(store):
    """Storing a CustomResourceDefinition makes its kind's scope known (CRDs add kinds)."""
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.io"},
        "spec": {
            "group": "example.io",
            "scope": "Cluster",
            "names": {"kind": "Gadget", "plural": "gadgets"},
            "versions": [{"name": "v1", "served": True, "storage": True}],
        },
    }

    store.create(crd)

    assert not store.is_namespaced("example.io/v1", "Gadget")


def test_reading_another_version_of_the_group(store):
    """Objects are addressed by group: reading with another version returns it with that apiVersion."""
    store.create({"apiVersion": "example.io/v1alpha1", "kind": "Thing", "metadata": {"name": "t", "namespace": "n"}})

    got = store.get("example.io/v1", "Thing", "t", "n")

    assert "example.io/v1" == got["apiVersion"]
    assert ["example.io/v1"] == [o["apiVersion"] for o in store.list("example.io/v1", "Thing")]


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        ({"kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}}, "apiVersion"),
        ({"apiVersion": "v1", "metadata": {"name": "a", "namespace": "n"}}, "kind"),
        ({"apiVersion": "v1", "kind": "ConfigMap"}, "metadata"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "n"}}, "metadata.name"),
        (
            cm("Bad_Name", "n"),
            "metadata.name",
        ),
        (cm("a", labels={"x": 1}), "metadata.labels"),
        (cm("a", finalizers="f"), "metadata.finalizers"),
        (cm("a", ownerReferences=[{"name": "x"}]), "metadata.ownerReferences[0]"),
        (cm("a", resourceVersion="5"), "metadata.resourceVersion"),
    ],
)
def test_malformed_objects_are_invalid(store, obj, field):
    """A malformed object is refused with Invalid naming the field, and nothing is stored."""
    with pytest.raises(Invalid) as info:
        store.create(obj)

    assert field == info.value.field
    assert [] == store.list("v1", "ConfigMap", None).items


def test_non_json_values_are_invalid(store):
    """An object holding a value JSON cannot carry is refused."""
    with pytest.raises(Invalid) as info:
        store.create(cm("a", data={"k": object()}))

    assert "not JSON-able" in str(info.value)
    assert "a" == info.value.name


def test_returned_objects_are_private_copies(store):
    """Changing a returned object does not change the stored one."""
    created = store.create(cm("a", data={"k": "v"}))
    created["data"]["k"] = "changed"
    got = store.get("v1", "ConfigMap", "a", "default")
    got["data"]["k"] = "changed too"

    assert {"k": "v"} == store.get("v1", "ConfigMap", "a", "default")["data"]


def test_listed_and_watched_objects_are_private_copies(store):
    """Changing an object a list or a watch returned changes neither the store nor later reads
    (on the kube backend they come from its informer's shared cache)."""
    store.create(cm("a", "ns1", data={"k": "x"}))
    start = store.list("v1", "ConfigMap").resource_version
    store.patch("v1", "ConfigMap", "a", {"data": {"k": "v"}}, "ns1")
    store.create(cm("b", "ns2", data={"k": "v"}))
    for _ in range(2):
        with store.watch("v1", "ConfigMap", resource_version=start, timeout=0) as changes:
            seen = [(e.type, e.object["metadata"]["name"], dict(e.object["data"])) for e in changes]
        assert [("MODIFIED", "a", {"k": "v"}), ("ADDED", "b", {"k": "v"})] == seen
        with store.watch("v1", "ConfigMap", resource_version=start, timeout=0) as changes:
            for event in changes:
                event.object["data"]["k"] = "changed"
        for listed in (store.list("v1", "ConfigMap", "ns1"), store.list("v1", "ConfigMap")):
            for obj in listed:
                obj["data"]["k"] = "changed"
                obj["metadata"]["namespace"] = "elsewhere"
        with store.watch("v1", "ConfigMap", resource_version="0", timeout=0) as watch:
            for event in watch:
                event.object["data"]["k"] = "changed"
                event.object["metadata"]["name"] = "renamed"

    assert [("a", "ns1", {"k": "v"})] == [
        (o["metadata"]["name"], o["metadata"]["namespace"], o["data"]) for o in store.list("v1", "ConfigMap", "ns1")
    ]
    assert ["a", "b"] == [o["metadata"]["name"] for o in store.list("v1", "ConfigMap")]
    assert {"k": "v"} == store.get("v1", "ConfigMap", "b", "ns2")["data"]


# -- list and selectors -------------------------------------------------------------------


@pytest.fixture
def labelled(store):
    """Four ConfigMaps in two namespaces with varied labels."""
    store.create(cm("a", "ns1", {"app": "x", "tier": "web"}))
    store.create(cm("b", "ns1", {"app": "y"}))
    store.create(cm("c", "ns2", {"app": "x", "tier": "db"}))
    store.create(cm("d", "ns2"))
    return store


def names(objs):
    return [o["metadata"]["name"] for o in objs]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (None, ["a", "b", "c", "d"]),
        ("", ["a", "b", "c", "d"]),
        ("app=x", ["a", "c"]),
        ("app==x", ["a", "c"]),
        ("app!=x", ["b", "d"]),
        ("tier in (web, db)", ["a", "c"]),
        ("app notin (x)", ["b", "d"]),
        ("tier", ["a", "c"]),
        ("!tier", ["b", "d"]),
        ("app=x,tier!=db", ["a"]),
        ({"matchLabels": {"app": "x"}}, ["a", "c"]),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, ["b", "d"]),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["y", "z"]}]}, ["b"]),
        (
            {"matchLabels": {"app": "x"}, "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]},
            ["a"],
        ),
        ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, ["a", "b", "c"]),
    ],
)
def test_list_with_label_selectors(labelled, selector, expected):
    """list across namespaces honours equality, inequality and set-based selectors in both forms."""
    assert expected == names(labelled.list("v1", "ConfigMap", label_selector=selector))


def test_list_one_namespace_in_name_order(labelled):
    """list in a namespace returns only its objects, ordered by name, with the store's resourceVersion."""
    labelled.create(cm("0", "ns2"))

    listed = labelled.list("v1", "ConfigMap", "ns2")

    assert ["0", "c", "d"] == names(listed)
    assert rv(labelled, 5) == listed.resource_version
    assert 3 == len(listed)


@pytest.mark.parametrize(
    "selector",
    [
        "=x",
        "app in x",
        "app in ()",
        "a,,b",
        "app=x,",
        "a b",
        "bad key!=x",
        "a=(",
        "!",
        "k=v v",
        {"matchExpressions": [{"key": "a", "operator": "Like"}]},
        {"matchExpressions": [{"key": "a", "operator": "In"}]},
        {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
        {"matchLabels": {"a": 1}},
        {"selector": {}},
        42,
    ],
)
def test_malformed_selectors_are_invalid(labelled, selector):
    """A malformed selector is Invalid with field labelSelector."""
    with pytest.raises(Invalid) as info:
        labelled.list("v1", "ConfigMap", label_selector=selector)

    assert info.value.field.startswith("labelSelector")


def test_empty_label_value_selects_empty_labels(labelled):
    """'app=' selects objects whose app label is the empty string, not those without it."""
    labelled.create(cm("e", "ns2", {"app": ""}))

    assert ["e"] == names(labelled.list("v1", "ConfigMap", "ns2", "app="))


# -- update ------------------------------------------------------------------------------


def test_stale_resource_version_conflicts(store):
    """An update carrying a stale resourceVersion fails with Conflict and changes nothing."""
    first = store.create(cm("a", data={"k": "1"}))
    second = dict(first, data={"k": "2"})
    store.update(second)

    with pytest.raises(Conflict) as info:
        store.update(dict(first, data={"k": "3"}))

    assert (rv(store, 1), rv(store, 2)) == (info.value.expected, info.value.actual)
    assert "the object has been modified" in str(info.value)
    assert {"k": "2"} == store.get("v1", "ConfigMap", "a", "default")["data"]


def test_update_without_resource_version_is_unconditional(store):
    """An update without metadata.resourceVersion overwrites whatever is stored."""
    store.create(cm("a", data={"k": "1"}))

    updated = store.update(cm("a", data={"k": "2"}))

    assert ({"k": "2"}, rv(store, 2)) == (updated["data"], updated["metadata"]["resourceVersion"])


def test_update_of_missing_object_is_not_found(store):
    """update never creates."""
    with pytest.raises(NotFound):
        store.update(cm("ghost"))


def test_uid_precondition(store):
    """An update carrying another uid (a deleted and recreated object) conflicts."""
    old = store.create(cm("a"))
    store.delete("v1", "ConfigMap", "a", "default")
    store.create(cm("a"))
    stale = dict(old)
    stale["metadata"] = {k: v for k, v in old["metadata"].items() if k != "resourceVersion"}

    with pytest.raises(Conflict):
        store.update(stale)


def test_generation_bumps_only_on_spec_changes(store):
    """generation grows when anything outside metadata and status changes, not on label changes."""
    obj = store.create(
        {
            "apiVersion": "example.io/v1",
            "kind": "Thing",
            "metadata": {"name": "t", "namespace": "n"},
            "spec": {"size": 1},
        }
    )
    obj["metadata"]["labels"] = {"new": "label"}
    relabelled = store.update(obj)
    relabelled["spec"]["size"] = 2
    resized = store.update(relabelled)

    assert (1, rv(store, 2)) == (relabelled["metadata"]["generation"], relabelled["metadata"]["resourceVersion"])
    assert (2, rv(store, 3)) == (resized["metadata"]["generation"], resized["metadata"]["resourceVersion"])


def test_update_ignores_status_and_system_metadata(store):
    """update keeps the stored status, uid, creationTimestamp and generation whatever it carries."""
    created = store.create(
        {"apiVersion": "example.io/v1", "kind": "Thing", "metadata": {"name": "t", "namespace": "n"}, "spec": {"a": 1}}
    )
    store.update_status(dict(created, status={"phase": "Ready"}))
    fresh = store.get("example.io/v1", "Thing", "t", "n")
    fresh["status"] = {"phase": "Hacked"}
    fresh["metadata"].update(uid=created["metadata"]["uid"], creationTimestamp="1999-01-01T00:00:00Z", generation=9)
    fresh["spec"] = {"a": 2}

    updated = store.update(fresh)

    assert {"phase": "Ready"} == updated["status"]
    assert created["metadata"]["creationTimestamp"] == updated["metadata"]["creationTimestamp"]
    assert 2 == updated["metadata"]["generation"]


def test_update_that_changes_nothing_writes_nothing(store):
    """Writing back an unchanged object keeps its resourceVersion (no event, no churn)."""
    created = store.create(cm("a", data={"k": "v"}))

    again = store.update(created)

    assert rv(store, 1) == again["metadata"]["resourceVersion"]
    assert rv(store, 1) == store.list("v1", "ConfigMap").resource_version


def test_update_status_changes_only_status(store):
    """update_status replaces status, keeps spec and metadata, and does not bump generation."""
    created = store.create(
        {
            "apiVersion": "example.io/v1",
            "kind": "Thing",
            "metadata": {"name": "t", "namespace": "n", "labels": {"a": "b"}},
            "spec": {"x": 1},
        }
    )
    changed = dict(created, spec={"x": 99}, status={"phase": "Ready"})
    changed["metadata"] = dict(created["metadata"], labels={"a": "changed"})

    updated = store.update_status(changed)

    assert {"phase": "Ready"} == updated["status"]
    assert {"x": 1} == updated["spec"]
    assert {"a": "b"} == updated["metadata"]["labels"]
    assert (1, rv(store, 2)) == (updated["metadata"]["generation"], updated["metadata"]["resourceVersion"])
    with pytest.raises(Conflict):
        store.update_status(dict(created, status={"phase": "Stale"}))


# -- patch -------------------------------------------------------------------------------


def test_merge_patch(store):
    """A merge patch merges mappings, replaces lists and scalars, and removes keys set to null."""
    store.create(
        {
            "apiVersion": "example.io/v1",
            "kind": "Thing",
            "metadata": {"name": "t", "namespace": "n"},
            "spec": {"a": {"b": 1, "c": 2}, "list": [1, 2], "gone": True},
        }
    )

    patched = store.patch(
        "example.io/v1",
        "Thing",
        "t",
        {"spec": {"a": {"c": 3, "d": 4}, "list": [9], "gone": None}, "metadata": {"labels": {"l": "v"}}},
        "n",
    )

    assert {"a": {"b": 1, "c": 3, "d": 4}, "list": [9]} == patched["spec"]
    assert {"l": "v"} == patched["metadata"]["labels"]
    assert 2 == patched["metadata"]["generation"]


def test_merge_patch_with_stale_resource_version_conflicts(store):
    """A resourceVersion inside a merge patch is a precondition."""
    store.create(cm("a"))
    store.patch("v1", "ConfigMap", "a", {"data": {"k": "1"}}, "default")

    with pytest.raises(Conflict):
        store.patch("v1", "ConfigMap", "a", {"metadata": {"resourceVersion": "1"}, "data": {"k": "2"}}, "default")

    assert {"k": "1"} == store.get("v1", "ConfigMap", "a", "default")["data"]


def test_status_patch_touches_only_status(store):
    """patch with subresource=status changes status; a plain patch cannot change status."""
    store.create(
        {"apiVersion": "example.io/v1", "kind": "Thing", "metadata": {"name": "t", "namespace": "n"}, "spec": {"x": 1}}
    )

    store.patch("example.io/v1", "Thing", "t", {"status": {"phase": "A"}, "spec": {"x": 2}}, "n", subresource="status")
    after_plain = store.patch("example.io/v1", "Thing", "t", {"status": {"phase": "B"}}, "n")

    assert {"x": 1} == after_plain["spec"]
    assert {"phase": "A"} == after_plain["status"]


def test_json_patch(store):
    """A JSON patch (RFC 6902) applies add, replace, remove, move, copy and test."""
    store.create(cm("a", data={"x": "1", "y": "2"}))
    ops = [
        {"op": "test", "path": "/data/x", "value": "1"},
        {"op": "add", "path": "/data/z", "value": "3"},
        {"op": "replace", "path": "/data/x", "value": "10"},
        {"op": "remove", "path": "/data/y"},
        {"op": "copy", "from": "/data/z", "path": "/data/w"},
        {"op": "move", "from": "/data/z", "path": "/data/v"},
        {"op": "add", "path": "/metadata/finalizers", "value": []},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "f"},
    ]

    patched = store.patch("v1", "ConfigMap", "a", ops, "default", patch_type="json")

    assert {"x": "10", "w": "3", "v": "3"} == patched["data"]
    assert ["f"] == patched["metadata"]["finalizers"]


@pytest.mark.parametrize(
    ("patch", "patch_type"),
    [
        ([{"op": "test", "path": "/data/x", "value": "nope"}, {"op": "add", "path": "/data/y", "value": "1"}], "json"),
        ([{"op": "remove", "path": "/data/missing"}], "json"),
        ([{"op": "frobnicate", "path": "/data"}], "json"),
        ({"op": "add"}, "json"),
        (["not a mapping"], "merge"),
        ({"metadata": {"name": "other"}}, "merge"),
        ({"metadata": {"labels": {"x": 5}}}, "merge"),
        ({}, "strategic"),
    ],
)
def test_bad_patches_change_nothing(store, patch, patch_type):
    """A patch that fails (bad operation, failed test, invalid result, renaming) is Invalid and changes nothing."""
    before = store.create(cm("a", data={"x": "1"}))

    with pytest.raises(Invalid):
        store.patch("v1", "ConfigMap", "a", patch, "default", patch_type=patch_type)

    assert before == store.get("v1", "ConfigMap", "a", "default")


def test_patch_of_missing_object_is_not_found(store):
    """patch never creates."""
    with pytest.raises(NotFound):
        store.patch("v1", "ConfigMap", "ghost", {"data": {}}, "default")


def test_explicit_name_wins_over_generate_name(store):
    """With both metadata.name and generateName, the name is kept as given."""
    obj = cm("install-xxxxx", "n", generateName="install-")

    assert "install-xxxxx" == store.create(obj)["metadata"]["name"]
    with pytest.raises(AlreadyExists):
        store.create(obj)
