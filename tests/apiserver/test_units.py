"""Pieces of the API server without a server: tables, discovery ordering, protobuf, apply, the address."""

from __future__ import annotations

import pytest

from olmkit.apiserver.apply import fields_v1, record_update, server_side_apply
from olmkit.apiserver.protobuf import ProtobufError, decode
from olmkit.apiserver.resources import Catalog, builtin_resources
from olmkit.apiserver.status import ApiError
from olmkit.apiserver.table import json_path, table
from olmkit.cli.serve import parse_address
from olmkit.errors import UsageError


def test_json_path() -> None:
    """Printer-column paths: fields, list indexes, braces; missing parts give None."""
    obj = {"spec": {"names": ["a", "b"], "x": {"y": 0}}}

    assert "b" == json_path(obj, ".spec.names[1]")
    assert 0 == json_path(obj, "{.spec.x.y}")
    assert json_path(obj, ".spec.names[5]") is None
    assert json_path(obj, ".status.phase") is None


def test_table_uses_the_resource_columns() -> None:
    """A Table has Name plus the resource's columns; cells come from each object."""
    csv = Catalog.build([]).lookup("operators.coreos.com", "v1alpha1", "clusterserviceversions")
    assert csv is not None
    obj = {
        "metadata": {"name": "x.v1"},
        "spec": {"displayName": "X", "version": "1.0.0"},
        "status": {"phase": "Pending"},
    }

    result = table(csv, [obj])

    assert ["Name", "Display", "Version", "Replaces", "Phase"] == [c["name"] for c in result["columnDefinitions"]]
    assert ["x.v1", "X", "1.0.0", None, "Pending"] == result["rows"][0]["cells"]
    assert "PartialObjectMetadata" == result["rows"][0]["object"]["kind"]


def test_template_columns() -> None:
    """A column of several paths renders each (0 when missing): Deployments' READY 1/2."""
    deployments = Catalog.build([]).lookup("apps", "v1", "deployments")
    assert deployments is not None
    obj = {"metadata": {"name": "web"}, "spec": {"replicas": 2}, "status": {"readyReplicas": 1}}

    assert ["web", "1/2"] == table(deployments, [obj])["rows"][0]["cells"][:2]
    assert "0/2" == table(deployments, [{**obj, "status": {}}])["rows"][0]["cells"][1]
    config_maps = Catalog.build([]).lookup("", "v1", "configmaps")
    assert config_maps is not None
    assert ["c", 2] == table(config_maps, [{"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}}])["rows"][0][
        "cells"
    ][:2]
    assert 0 == table(config_maps, [{"metadata": {"name": "c"}}])["rows"][0]["cells"][1]


def test_event_columns() -> None:
    """Events read as kubectl prints them: type, reason, the object, the message."""
    events = Catalog.build([]).lookup("", "v1", "events")
    assert events is not None
    event = {
        "metadata": {"name": "e1"},
        "type": "Normal",
        "reason": "InstallSucceeded",
        "involvedObject": {"kind": "ClusterServiceVersion", "name": "x.v1"},
        "message": "install strategy completed",
    }

    cells = table(events, [event])["rows"][0]["cells"]

    assert [
        "e1",
        None,
        "Normal",
        "InstallSucceeded",
        "ClusterServiceVersion/x.v1",
        "install strategy completed",
    ] == cells


def test_stored_crds_override_and_add_resources() -> None:
    """A CRD's served versions become resources, preferred version (GA over beta) first in discovery."""
    crd = {
        "spec": {
            "group": "example.io",
            "scope": "Cluster",
            "names": {"plural": "gizmos", "kind": "Gizmo"},
            "versions": [{"name": "v1beta1", "served": True}, {"name": "v1", "served": True, "storage": True}],
        }
    }

    catalog = Catalog.build([crd])

    assert ["v1", "v1beta1"] == catalog.groups()["example.io"]
    gizmo = catalog.lookup("example.io", "v1", "gizmos")
    assert gizmo is not None
    assert (False, True) == (gizmo.namespaced, gizmo.custom)


def _field(number: int, payload: bytes) -> bytes:
    return bytes([number << 3 | 2, len(payload)]) + payload


def test_protobuf_config_map() -> None:
    """A ConfigMap in Kubernetes' protobuf envelope decodes to its JSON shape."""
    meta = _field(1, b"cm") + _field(3, b"ns") + _field(11, _field(1, b"app") + _field(2, b"web"))
    raw = _field(1, meta) + _field(2, _field(1, b"k") + _field(2, b"v"))
    body = b"k8s\x00" + _field(1, _field(1, b"v1") + _field(2, b"ConfigMap")) + _field(2, raw)

    assert {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "ns", "labels": {"app": "web"}},
        "data": {"k": "v"},
    } == decode(body)
    with pytest.raises(ProtobufError):
        decode(b"k8s\x00" + _field(1, _field(1, b"apps/v1") + _field(2, b"Deployment")))
    with pytest.raises(ProtobufError):
        decode(b"k8s\x00\x0a\xff")


def test_server_side_apply_ownership() -> None:
    """Apply records the manager's fields, drops fields it stopped applying, and reports conflicts."""
    cm = Catalog.build([]).lookup("", "v1", "configmaps")
    assert cm is not None
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1", "y": "2"}}
    first = server_side_apply(None, config, "m1", force=False, resource=cm)
    second = server_side_apply(first, {**config, "data": {"x": "1"}}, "m1", force=False, resource=cm)

    assert {"f:data": {"f:x": {}, "f:y": {}}} == first["metadata"]["managedFields"][0]["fieldsV1"]
    assert {"x": "1"} == second["data"]
    with pytest.raises(ApiError) as raised:
        server_side_apply(second, {**config, "data": {"x": "9"}}, "m2", force=False, resource=cm)
    assert (409, "Conflict") == (raised.value.code, raised.value.reason)
    forced = server_side_apply(second, {**config, "data": {"x": "9"}}, "m2", force=True, resource=cm)
    assert ["m2"] == [e["manager"] for e in forced["metadata"]["managedFields"]]
    assert {"f:a": {"f:b": {}}} == fields_v1({("a", "b")})


def test_updates_record_their_fields() -> None:
    """An update moves the fields it changed to its manager; unchanged fields keep their owner."""
    cm = Catalog.build([]).lookup("", "v1", "configmaps")
    assert cm is not None
    created = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1", "y": "2"}}
    record_update(None, created, "creator", resource=cm)
    changed = {**created, "metadata": dict(created["metadata"]), "data": {"x": "1", "y": "3"}}
    record_update(created, changed, "editor", resource=cm)

    owners = {e["manager"]: e["fieldsV1"] for e in changed["metadata"]["managedFields"]}
    assert {"creator": {"f:data": {"f:x": {}}}, "editor": {"f:data": {"f:y": {}}}} == owners


def test_an_update_leaves_the_entries_of_managers_whose_fields_it_does_not_take_as_they_are() -> None:
    """Only the entries that lose fields are rewritten; another manager's entry (here with a list
    item key as a cluster writes them) is kept as it was, the writer's own updated."""
    cm = Catalog.build([]).lookup("", "v1", "configmaps")
    assert cm is not None
    other = {
        "manager": "kubectl",
        "operation": "Apply",
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:finalizers": {".": {}, 'v:"example.com/keep"': {}}}, "f:data": {"f:x": {}}},
    }
    old = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "a", "finalizers": ["example.com/keep"], "managedFields": [other]},
        "data": {"x": "1", "y": "2"},
    }
    new = {**old, "metadata": dict(old["metadata"]), "data": {"x": "1", "y": "3"}}
    record_update(old, new, "editor", resource=cm)

    entries = new["metadata"]["managedFields"]
    assert [other, "editor"] == [entries[0], entries[1]["manager"]]
    assert {"f:data": {"f:y": {}}} == entries[1]["fieldsV1"]
    taken = {**old, "metadata": dict(new["metadata"]), "data": {"x": "2", "y": "3"}}
    record_update(new, taken, "editor", resource=cm)
    assert [{"f:metadata": {"f:finalizers": {}}}] == [
        e["fieldsV1"] for e in taken["metadata"]["managedFields"] if e["manager"] == "kubectl"
    ]


def test_parse_address() -> None:
    """--address is HOST:PORT; anything else is a usage error."""
    assert ("127.0.0.1", 0) == parse_address("127.0.0.1:0")
    assert ("::1", 6443) == parse_address("[::1]:6443")
    for bad in ("6443", "host:", "host:99999", ":80"):
        with pytest.raises(UsageError):
            parse_address(bad)


def test_olm_kinds_have_the_status_subresource_and_rbac_kinds_do_not() -> None:
    """Discovery lists ``clusterserviceversions/status`` (as OLM's CRD has it); RBAC kinds and ConfigMaps have none.

    A client writes status through the subresource when discovery lists it, and otherwise
    through the object itself: without it a CSV's status writes were dropped.
    """
    status = {(r.group, r.kind): r.status for r in builtin_resources()}

    olm = ["ClusterServiceVersion", "Subscription", "InstallPlan", "CatalogSource", "OperatorGroup"]
    assert all(status[("operators.coreos.com", kind)] for kind in olm)
    assert status[("apps", "Deployment")]
    rbac = ["Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"]
    assert not any(status[("rbac.authorization.k8s.io", kind)] for kind in rbac)
    assert not status[("", "ConfigMap")]


def test_every_kind_the_lifecycle_uses_is_accepted_by_apply_and_the_api() -> None:
    """Each kind of the lifecycle's table is served for writes (OLMConfig was refused as unknown)."""
    from olmkit.lifecycle.kinds import KINDS
    from olmkit.lifecycle.schemas import SERVED

    missing = [k.kind for k in KINDS.values() if (k.api_version.rpartition("/")[0], k.kind) not in SERVED]

    assert [] == missing


def test_changed_paths_are_the_leaves_whose_value_changed() -> None:
    """An update's changed fields (skipping equal subtrees) are exactly the leaves of the new
    object whose value differs from the old one's, as a walk of every leaf finds them."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from olmkit.apiserver.apply import _MISSING, _changed_paths, _get, field_paths

    keys = st.sampled_from(["a", "b", "c", "metadata", "name", "uid"])
    leaves = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from(["x", "y"]), st.just({}))
    trees = st.recursive(leaves, lambda inner: st.dictionaries(keys, inner, max_size=3), max_leaves=12)
    objects = st.dictionaries(keys, trees, max_size=4)

    @settings(max_examples=300, deadline=None)
    @given(old=st.one_of(st.none(), objects), new=objects)
    def check(old, new) -> None:
        walked = {p for p in field_paths(new) if old is None or _get(old, p) != _get(new, p)}
        assert walked == set(_changed_paths(_MISSING if old is None else old, new, ()))

    check()


def test_a_kind_followed_after_the_dispatcher_read_past_its_list_gets_its_changes_at_once() -> None:
    """A kind the hub starts following from a list older than what its dispatcher has read
    already gets the changes since that list without waiting for another change."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor
    from typing import Any

    from olmkit.apiserver.watch import WatchHub
    from olmkit.store import MemoryStore, ObjectList

    class Store(MemoryStore):
        stale_list_rv: str | None = None

        def wait_for_change(self, resource_version: str | None, timeout: float) -> None:
            super().wait_for_change(resource_version, 30)  # only a change wakes the dispatcher

        def list(self, api_version: str, kind: str, namespace: Any = None, label_selector: Any = None) -> Any:
            if kind == "ConfigMap" and self.stale_list_rv is not None:  # listed before the write
                return ObjectList(items=[], resource_version=self.stale_list_rv)
            return super().list(api_version, kind, namespace, label_selector)

    store = Store()
    late = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late", "namespace": "ns"}}

    async def follow_late() -> tuple[str, str]:
        hub = WatchHub(store, asyncio.get_running_loop(), ThreadPoolExecutor(2))
        try:
            await hub.ensure("v1", "Secret")
            before = str(store.latest_resource_version())
            store.create(late)
            while hub._kinds[("", "Secret")].rv <= int(before):  # the dispatcher read past the write
                await asyncio.sleep(0.01)
            store.stale_list_rv = before
            await hub.ensure("v1", "ConfigMap")
            sub = await hub.subscribe("v1", "ConfigMap", int(before), lambda obj: True)
            _, (delivered, etype) = await asyncio.wait_for(sub.queue.get(), 10)
            return etype, delivered.event.object["metadata"]["name"]
        finally:
            hub._stop.set()
            store.create({**late, "metadata": {"name": "wake", "namespace": "ns"}})
            hub.stop()

    assert ("ADDED", "late") == asyncio.run(follow_late())
